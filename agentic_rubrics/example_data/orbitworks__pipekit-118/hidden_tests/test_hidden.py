import os
import subprocess
import sys
import textwrap

import pytest

from pipekit import CycleError, DependencyGraph, Pipeline, UnknownStepError
from pipekit.cli import format_plan


def graph_of(*nodes):
    graph = DependencyGraph()
    for node in nodes:
        node = (node,) if isinstance(node, str) else tuple(node)
        requires = node[1] if len(node) > 1 else ()
        priority = node[2] if len(node) > 2 else 0
        graph.add(node[0], requires, priority)
    return graph


def ci_pipeline(push_priority=0):
    pipe = Pipeline("ci")
    noop = lambda *args: None  # noqa: E731
    pipe.step("checkout")(noop)
    pipe.step("lint", requires=["checkout"])(noop)
    pipe.step("unit_tests", requires=["checkout"])(noop)
    pipe.step("type_check", requires=["checkout"])(noop)
    pipe.step("build_image", requires=["checkout"], priority=10)(noop)
    pipe.step("push_image", requires=["build_image"], priority=push_priority)(noop)
    return pipe


# --- FAIL_TO_PASS ---------------------------------------------------------------------------


def test_issue_example():
    assert ci_pipeline().plan() == [
        "checkout", "build_image", "lint", "unit_tests", "type_check", "push_image",
    ]


def test_fan_out_follows_declaration_order():
    children = ["delta", "alpha", "echo", "charlie", "bravo", "golf", "foxtrot", "hotel"]
    graph = graph_of("root", *[(c, ["root"]) for c in children])
    assert graph.topological_order() == ["root", *children]


def test_step_unlocked_later_with_high_priority_goes_next():
    # 'a' and 'b' are both ready at the start; once 'a' is placed, 'c' (priority 10)
    # is ready too and must win over 'b'.
    graph = graph_of("a", "b", ("c", ["a"], 10))
    assert graph.topological_order() == ["a", "c", "b"]


def test_priority_overtakes_steps_already_waiting():
    graph = graph_of("a", "b", "c", ("d", ["a"], 5), ("e", ["d"], 5))
    assert graph.topological_order() == ["a", "d", "e", "b", "c"]


def test_issue_example_with_prioritised_push():
    assert ci_pipeline(push_priority=10).plan() == [
        "checkout", "build_image", "push_image", "lint", "unit_tests", "type_check",
    ]


def test_ties_use_declaration_order_not_names():
    # 'zz_report' is declared first, so on a tie it goes first, even though it
    # becomes ready at the same time as 'aa_archive'.
    graph = graph_of(("zz_report", ["compile"]), ("aa_archive", ["compile"]), "compile")
    assert graph.topological_order() == ["compile", "zz_report", "aa_archive"]


def test_declared_earlier_wins_even_if_ready_later():
    # 'report' is declared before 'lint' but only becomes ready after 'fetch';
    # both then wait together with the same priority, so declaration order decides.
    graph = graph_of(("report", ["fetch"]), "fetch", "lint")
    assert graph.topological_order() == ["fetch", "report", "lint"]


def test_negative_priority_runs_last_among_ready():
    graph = graph_of("setup", ("cleanup", ["setup"], -1), ("work", ["setup"]), ("more", ["setup"]))
    assert graph.topological_order() == ["setup", "work", "more", "cleanup"]


def test_diamond_with_priorities():
    graph = graph_of(
        "src",
        ("left", ["src"]),
        ("right", ["src"], 3),
        ("join", ["left", "right"], 100),
        ("side", ["src"], 1),
    )
    assert graph.topological_order() == ["src", "right", "side", "left", "join"]


def test_subgraph_plan_honours_priority():
    pipe = ci_pipeline(push_priority=10)
    assert pipe.plan(["push_image", "lint"]) == ["checkout", "build_image", "push_image", "lint"]


def test_run_executes_in_planned_order():
    pipe = Pipeline()
    seen = []

    def record(name):
        def func(*args):
            seen.append(name)
            return name
        return func

    pipe.step("a")(record("a"))
    pipe.step("b")(record("b"))
    pipe.step("c", requires=["a"], priority=2)(record("c"))
    pipe.step("d", requires=["c", "b"])(record("d"))
    result = pipe.run()
    assert seen == ["a", "c", "b", "d"]
    assert result.order == seen
    assert result.results["d"] == "d"


def test_same_order_under_every_hash_seed():
    script = textwrap.dedent(
        """
        from pipekit import DependencyGraph
        g = DependencyGraph()
        g.add("root")
        for name in ["m", "k", "x", "b", "q", "a", "t"]:
            g.add(name, ["root"])
        g.add("tail", ["x", "a"])
        print(",".join(g.topological_order()))
        """
    )
    outputs = set()
    for seed in ("0", "1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.getcwd()}
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(done.stdout.strip())
    assert outputs == {"root,m,k,x,b,q,a,t,tail"}


# --- PASS_TO_PASS ---------------------------------------------------------------------------


def test_chain_and_roots():
    graph = graph_of(("package", ["build"]), ("build", ["compile"]), "compile", ("docs", (), 2))
    assert graph.topological_order() == ["docs", "compile", "build", "package"]


def test_requirements_always_before_dependents():
    graph = graph_of(
        ("e", ["d", "b"], 9), ("d", ["c"], 1), ("c", ["a"]), ("b", ["a"], 4), "a", ("f", (), -3)
    )
    order = graph.topological_order()
    assert sorted(order) == ["a", "b", "c", "d", "e", "f"]
    for name in order:
        for dep in graph.requirements(name):
            assert order.index(dep) < order.index(name)


def test_cycle_error():
    graph = graph_of(("a", ["b"]), ("b", ["a"]), "c")
    with pytest.raises(CycleError) as info:
        graph.topological_order()
    assert set(info.value.cycle) == {"a", "b"}
    assert info.value.cycle[0] == info.value.cycle[-1]


def test_unknown_requirement_error():
    graph = graph_of(("deploy", ["build"]))
    with pytest.raises(UnknownStepError):
        graph.topological_order()


def test_duplicate_requirements_are_counted_once():
    graph = graph_of("a", ("b", ["a", "a"]))
    assert graph.topological_order() == ["a", "b"]


def test_graph_is_reusable():
    graph = graph_of("a", ("b", ["a"]), ("c", (), 1))
    assert graph.topological_order() == graph.topological_order() == ["c", "a", "b"]


def test_dependents_and_ancestors():
    graph = graph_of("root", ("y", ["root"]), ("x", ["root"]), ("z", ["x"]))
    assert graph.dependents("root") == ["y", "x"]
    assert graph.ancestors("z") == {"x", "root"}
    assert list(graph.subgraph(["z"])) == ["root", "x", "z"]


def test_tags_and_targets():
    pipe = Pipeline()
    noop = lambda *args: None  # noqa: E731
    pipe.step("fetch")(noop)
    pipe.step("clean", requires=["fetch"], tags=["data"])(noop)
    pipe.step("docs", tags=["docs"])(noop)
    assert pipe.plan(tags=["data"]) == ["clean"]
    assert pipe.plan(["clean"]) == ["fetch", "clean"]
    with pytest.raises(UnknownStepError):
        pipe.plan(["missing"])


def test_keep_going_and_results():
    pipe = Pipeline()

    @pipe.step()
    def fetch():
        return 2

    @pipe.step(requires=["fetch"])
    def double(value):
        return value * 2

    @pipe.step()
    def broken():
        raise ValueError("bad")

    @pipe.step(requires=["broken", "double"])
    def report(a, b):
        return a, b

    result = pipe.run(fail_fast=False)
    assert result.results == {"fetch": 2, "double": 4}
    assert list(result.failed) == ["broken"]
    assert result.skipped == ["report"]
    assert not result.ok


def test_format_plan_lines():
    pipe = ci_pipeline()
    lines = format_plan(pipe, ["checkout", "build_image"]).splitlines()
    assert lines[0].split() == ["1.", "checkout"]
    assert lines[1].split() == ["2.", "build_image", "p=10"]
