"""behaviour_consensus: candidates grouped by what their change does, not how it reads.

Two fixes written differently (renamed locals, another layout, a docstring) fall in one group and beat a
textual majority of changes that each do something else; candidates that change nothing never vote and
are never picked; similarity between groups is graded; without a tree the diff stands in."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentic_rubrics.rank.agreement import line_agreement
from agentic_rubrics.rank.consensus import Signature, consensus, consensus_record, signature
from agentic_rubrics.rank.content import post_row
from agentic_rubrics.rank.rerank import select
from agentic_rubrics.rank.selectors import FeatureInput, get_selector
from agentic_rubrics.rubric.checks_repo import RepoAnalyses
from agentic_rubrics.rubric.postimage import analyze_patch
from agentic_rubrics.rubric.postimage.behaviour import compare
from agentic_rubrics.types import Candidate, Task

from .conftest import git

MakeRepo = Callable[[dict[str, bytes | str]], tuple[Path, Callable[..., str]]]

MOD = '''\
def total_of(a, b):
    """Sum a and the numbers below b."""
    total = a
    for i in range(b):
        total += i
    return total


def other(x):
    return x
'''

FIX = MOD.replace("    return total\n", "    if total < 0:\n        return 0\n    return total\n")
"""The fix, written one way."""
FIX_REWRITTEN = '''\
def total_of(a, b):
    """Sum a and the numbers below b; never negative."""
    acc = a  # the running sum
    for n in range(b):
        acc += n
    if (acc < 0):
        return 0
    pass
    return acc


def other(x):
    return x
'''
"""The same fix in other words: locals renamed, another docstring, a comment, parentheses, a pass."""
NOTE = '''    """Sum a and the numbers below b.

    The numbers are added one by one, starting from a, in increasing order; the result is the
    running sum after the last one. This note is long so that patches carrying it share many lines.
    """
'''
NOISY = MOD.replace('    """Sum a and the numbers below b."""\n', NOTE)
"""Three candidates share this long docstring (text alike), each with another change (behaviour not)."""
OTHERS = {
    "b1": NOISY.replace("total = a\n", "total = a + 1\n"),
    "b2": NOISY.replace("range(b)", "range(b + 1)"),
    "b3": NOISY.replace("    return total\n", "    return -total\n"),
}


def _diffs(repo: Path, diff: Callable[..., str], images: dict[str, str]) -> dict[str, str]:
    out = {}
    for cid, text in images.items():
        (repo / "pkg/mod.py").write_text(text)
        out[cid] = diff()
        git(repo, "reset", "-q", "--hard")
    return out


def _top(ranking: dict[str, float | None]) -> str:
    return select("t", ranking, "x").candidate_id or ""


def test_equivalent_normal_forms_give_one_delta_and_a_no_op_none() -> None:
    one, other = compare(MOD, FIX), compare(MOD, FIX_REWRITTEN)
    assert one.changed and other.changed and one.delta and one.delta == other.delta
    noop = compare(MOD, MOD.replace('b."""', 'b, say."""\n    pass'))
    assert noop.changed is False and noop.delta == ()
    assert compare(MOD, OTHERS["b1"]).delta != one.delta


def test_two_fixes_written_differently_group_together_and_beat_a_textual_majority(
    git_repo: MakeRepo,
) -> None:
    repo, diff = git_repo({"pkg/__init__.py": "", "pkg/mod.py": MOD})
    patches = _diffs(repo, diff, {"a1": FIX, "a2": FIX_REWRITTEN, **OTHERS})
    rows = {c: post_row(analyze_patch(repo, p)) for c, p in patches.items()}
    agreement, _ = line_agreement(patches)
    # voting on diff text picks one of the three that share the long docstring
    assert _top(agreement) in OTHERS
    record = consensus_record(patches, rows, agreement)
    assert _top(record["rank"]) in ("a1", "a2")
    assert record["groups"] == 4 and record["largest_group"] == 2
    assert record["basis"] == {"tree": 5}
    assert record["support"]["a1"] == record["support"]["a2"] > record["support"]["b1"]
    # without the tree, the diffs alone do not see that a1 and a2 do the same thing
    plain = consensus_record(patches, {}, agreement)
    assert plain["groups"] == 5 and plain["basis"] == {"diff": 5}


def test_candidates_that_change_no_behaviour_never_vote_and_are_never_picked(
    git_repo: MakeRepo,
) -> None:
    repo, diff = git_repo({"pkg/__init__.py": "", "pkg/mod.py": MOD})
    noop = MOD.replace('b."""', 'b (documented)."""\n    pass')
    images = {"n1": noop, "n2": noop, "n3": noop, "x": FIX, "y": OTHERS["b2"]}
    patches = {**_diffs(repo, diff, images), "empty": ""}
    rows = {c: post_row(analyze_patch(repo, p)) for c, p in patches.items()}
    assert rows["n1"] is not None and rows["n1"]["behaviour"] is False
    agreement, _ = line_agreement(patches)
    assert _top(agreement) in ("n1", "n2", "n3")  # the no-ops agree with each other fully
    record = consensus_record(patches, rows, agreement)
    assert {c for c, v in record["rank"].items() if v is None} == {"n1", "n2", "n3", "empty"}
    assert record["voters"] == 2 and record["support"]["x"] == 2.0  # tier 1, no support from no-ops
    assert _top(record["rank"]) in ("x", "y")
    # with no tree, the diff alone proves a comment-and-pass change does nothing (a docstring it
    # cannot tell from an argument: that one votes)
    head = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1,3 @@\n def f(x):\n"
    assert signature(head + "+    # f of x\n+    pass\n", None).tier is None
    assert signature(patches["n1"], None).tier == 1
    assert signature(patches["x"], None).tier == 1


def test_similarity_between_groups_is_graded() -> None:
    same = Signature(1, ("p",))
    near = {f"s{k}": Signature(1, ("q", f"r{k}")) for k in range(4)}  # half of each in common
    found = consensus({"g1": same, "g2": same, **near}, {})
    # equality alone would pick the pair; four changes sharing half their lines weigh more
    assert found["groups"] == 5 and found["largest_group"] == 2
    assert _top(found["rank"]) in near
    assert found["support"]["s0"] == pytest.approx(2 + (3 * 0.5) / 5)
    assert found["support"]["g1"] == pytest.approx(2 + 1 / 5)
    # a group that shares nothing gets nothing from the others; a lone voter has no support
    alone = consensus({"a": Signature(1, ("x", "y")), "b": Signature(1, ("x", "y", "z")),
                       "c": Signature(1, ("w",))}, {})  # fmt: skip
    assert alone["support"] == pytest.approx({"a": 2.4, "b": 2.4, "c": 2.0})
    assert consensus({"a": Signature(1, ("x",))}, {})["support"] == {"a": 2.0}


def test_ties_fall_to_text_agreement_and_a_candidate_that_did_not_apply_ranks_below() -> None:
    sigs = {"a": Signature(1, ("x",)), "b": Signature(1, ("x",)), "c": Signature(0, ("x",))}
    found = consensus(sigs, {"a": 0.2, "b": 0.9, "c": 1.0})
    assert _top(found["rank"]) == "b"
    assert found["rank"]["c"] < found["rank"]["a"] < found["rank"]["b"]
    assert found["support"]["c"] == pytest.approx(1.0)  # tier 0: 2 × 0 + its support


def test_without_a_tree_comments_and_layout_inside_a_line_do_not_split_a_group() -> None:
    head = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n"
    one = head + "-    return x\n+    return x+1\n"
    two = head + "-    return x\n+    return  x + 1  # off by one\n"
    tests = "diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/"
    tests += "test_m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    found = consensus_record({"one": one, "two": two + tests}, {}, {})
    assert found["groups"] == 1 and found["basis"] == {"diff": 2}  # tests are not the program
    # a '#' inside a string is not a comment: that change is a change
    hashed = head + "-    return x\n+    return x  # '#'\n"
    assert signature(hashed, None).tier is None
    quoted = head + "-    return 'a'\n+    return 'a#b'  # comment\n"
    assert signature(quoted, None).lines == ("m.py:-4|return 'a'", "m.py:+4|return 'a#b'")


def test_the_selector_reads_the_judge_s_analyses_and_stores_no_code(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"pkg/__init__.py": "", "pkg/mod.py": MOD})
    patches = _diffs(repo, diff, {"a1": FIX, "a2": FIX_REWRITTEN, **OTHERS})
    task = Task(instance_id="t-1", problem_statement="total_of goes negative",
                candidates=[Candidate(id=c, patch=p) for c, p in patches.items()])  # fmt: skip
    analyses = RepoAnalyses(repo)
    selector = get_selector("behaviour_consensus")
    found = asyncio.run(selector.features(FeatureInput(task, None, analyses)))
    assert analyses.analysed == 5  # shared with every other selector of the task
    text = json.dumps(found)
    assert "total" not in text and "mod.py" not in text  # ranks and counts, no code, no names

    class Stored:
        instance_id = "t-1"
        scores = dict.fromkeys(patches)
        baselines = found

    ranking = selector.ranking(Stored())  # type: ignore[arg-type]
    assert _top(ranking) in ("a1", "a2")
    values = selector.values(Stored(), ranking)  # type: ignore[arg-type]
    assert values["a1"] == values["a2"] > values["b1"]


def test_a_patch_made_not_to_apply_ranks_below_and_turns_no_one_else_s_reading(
    git_repo: MakeRepo,
) -> None:
    """The fix with a section on a file no tree has: it does not apply, so it ranks below every
    candidate that does (on an approximate tree too: a candidate that cannot be checked on the tree
    at hand never outranks one that can), and the others are still read from the tree (a no-op stays
    out of the vote)."""
    repo, diff = git_repo({"pkg/__init__.py": "", "pkg/mod.py": MOD})
    patches = _diffs(repo, diff, {"a1": FIX, "a2": FIX_REWRITTEN, "doc": NOISY})
    nowhere = "diff --git a/nowhere.py b/nowhere.py\n--- a/nowhere.py\n+++ b/nowhere.py\n"
    patches["bogus"] = patches["a1"] + nowhere + "@@ -1 +1 @@\n-X = 1\n+X = 2\n"
    failed = analyze_patch(repo, patches["bogus"])
    assert not failed.applied and post_row(failed) is not None
    task = Task(instance_id="t-1", problem_statement="total_of goes negative",
                candidates=[Candidate(id=c, patch=p) for c, p in patches.items()])  # fmt: skip
    given = FeatureInput(task, None, RepoAnalyses(repo))
    record = asyncio.run(get_selector("behaviour_consensus").features(given))["behaviour_consensus"]
    ranks = record["rank"]
    assert ranks["doc"] is None and ranks["bogus"] < min(ranks["a1"], ranks["a2"])
    content = asyncio.run(get_selector("offline_content").features(given))["content_features"]
    assert content["bogus"]["not_applied"] == 1.0 and content["a1"]["not_applied"] == 0.0


def test_a_reproduction_script_at_the_root_is_not_the_program(git_repo: MakeRepo) -> None:
    """An agent's ``reproduce.py`` (a new Python file at the repository root that nothing imports) is
    not the program: it splits no group, and a patch that adds nothing else changes no behaviour —
    with the tree or without; a new root module the fix imports stays the program."""
    repo, diff = git_repo({"pkg/__init__.py": "", "pkg/mod.py": MOD})
    script = "from pkg.mod import total_of\nprint(total_of(-5, 2))\n"
    images = {"a1": FIX, "a2": FIX}
    patches = {}
    for cid, text in images.items():
        (repo / "pkg/mod.py").write_text(text)
        (repo / f"reproduce_{cid}.py").write_text(script + f"# {cid}: {'x' * len(cid) * 9}\n")
        patches[cid] = diff()
        git(repo, "reset", "-q", "--hard")
        git(repo, "clean", "-qfd")
    (repo / "reproduce.py").write_text(script)
    patches["only"] = diff()
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    (repo / "reproduce.py").write_text(script)
    (repo / "pkg/mod.py").write_text(MOD.replace("    total = a\n", "    total = a  # the start\n"))
    patches["commented"] = diff()  # a comment beside the script: still nothing of the program
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    (repo / "reproduce.py").write_text(script)
    git(repo, "mv", "pkg/mod.py", "pkg/moved.py")
    patches["renamed"] = diff()  # a module renamed beside the script: a change of the program
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    (repo / "helper.py").write_text("LIMIT = 0\n")
    (repo / "pkg/mod.py").write_text(
        FIX.replace("< 0", "< LIMIT").replace(
            "def total_of", "from helper import LIMIT\n\n\ndef total_of"
        )
    )
    patches["module"] = diff()
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    for tree in (False, True):
        rows = {c: post_row(analyze_patch(repo, p)) if tree else None for c, p in patches.items()}
        sigs = {c: signature(p, rows[c]) for c, p in patches.items()}
        assert sigs["a1"].lines == sigs["a2"].lines and sigs["a1"].tier == 1  # one group
        assert sigs["only"].tier is None  # a script alone changes nothing of the program
        assert sigs["commented"].tier is None and sigs["renamed"].tier == 1
        assert any(line.startswith("helper.py:") for line in sigs["module"].lines)
        found = consensus_record(patches, rows, {})
        assert found["rank"]["only"] is None and found["groups"] == 3


def _new(path: str, *lines: str) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def test_only_a_new_root_script_nothing_names_is_scratch() -> None:
    """What the patch names, what shadows the standard library or is loaded by name, a file the patch
    also deletes (git's shape for a type change), and a new file in a package stay the program."""
    edit = "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n"

    def kept(patch: str, path: str) -> bool:
        sig = signature(patch, None)
        return sig.tier is not None and any(line.startswith(f"{path}:") for line in sig.lines)

    script = _new("helper.py", "LIMIT = 0")
    assert not kept(script + edit + "-x = 1\n+x = 2\n", "helper.py")  # nothing names it
    for uses in (
        "import os, helper",
        "m = importlib.import_module('helper')",
        "pytest_plugins = ['helper']",
    ):
        assert kept(script + edit + f"-x = 1\n+{uses}\n", "helper.py"), uses
    for name in (
        "typing.py",
        "setup.py",
        "sitecustomize.py",
        "__main__.py",
        "manage.py",
        "pkg/x.py",
    ):
        assert kept(_new(name, "X = 1"), name), name
    gone = (
        "diff --git a/calc.py b/calc.py\ndeleted file mode 100644\n--- a/calc.py\n+++ /dev/null\n"
    )
    assert kept(gone + "@@ -1 +0,0 @@\n-X = 1\n" + _new("calc.py", "X = 2"), "calc.py")
    # a rename beside a script is a change of the program (the diff alone says so)
    moved = "diff --git a/pkg/m.py b/pkg/n.py\nsimilarity index 100%\nrename from pkg/m.py\nrename to pkg/n.py\n"
    assert signature(moved + _new("reproduce.py", "print(1)"), None).tier == 1
