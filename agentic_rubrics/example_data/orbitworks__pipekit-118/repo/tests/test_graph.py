import pytest

from pipekit import CycleError, DependencyGraph, DuplicateStepError, UnknownStepError


def test_chain_runs_in_dependency_order():
    graph = DependencyGraph()
    graph.add("package", ["build"])
    graph.add("build", ["compile"])
    graph.add("compile")
    assert graph.topological_order() == ["compile", "build", "package"]


def test_independent_steps_keep_declaration_order():
    graph = DependencyGraph()
    for name in ["zeta", "alpha", "mid"]:
        graph.add(name)
    assert graph.topological_order() == ["zeta", "alpha", "mid"]


def test_priority_orders_steps_ready_at_start():
    graph = DependencyGraph()
    graph.add("docs")
    graph.add("tests", priority=5)
    graph.add("lint", priority=1)
    assert graph.topological_order() == ["tests", "lint", "docs"]


def test_cycle_is_reported():
    graph = DependencyGraph()
    graph.add("a", ["c"])
    graph.add("b", ["a"])
    graph.add("c", ["b"])
    with pytest.raises(CycleError) as info:
        graph.topological_order()
    assert info.value.cycle[0] == info.value.cycle[-1]
    assert set(info.value.cycle) == {"a", "b", "c"}


def test_unknown_requirement():
    graph = DependencyGraph()
    graph.add("deploy", ["build"])
    with pytest.raises(UnknownStepError) as info:
        graph.topological_order()
    assert info.value.required_by == "deploy"


def test_duplicate_name():
    graph = DependencyGraph()
    graph.add("build")
    with pytest.raises(DuplicateStepError):
        graph.add("build")


def test_dependents_in_declaration_order():
    graph = DependencyGraph()
    graph.add("root")
    for name in ["c", "a", "b"]:
        graph.add(name, ["root"])
    assert graph.dependents("root") == ["c", "a", "b"]
