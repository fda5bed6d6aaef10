"""Repository-aware checks, decided on small repositories made here: applies, parses, undefined names,
removed names still used, changes_function; no tree means missing, never a guess."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.exceptions import RubricError
from agentic_rubrics.judge.judges import ChecksJudge
from agentic_rubrics.pipeline.verifiers.rubric_judging import judge_task
from agentic_rubrics.rank.scoring import score_candidate
from agentic_rubrics.rubric.check_verdicts import check_verdicts
from agentic_rubrics.rubric.checks import run_check
from agentic_rubrics.rubric.checks_repo import RepoAnalyses, decide
from agentic_rubrics.rubric.file import json_schema, parse_rubric
from agentic_rubrics.rubric.postimage import analyze_patch
from agentic_rubrics.types import Candidate, Check, Task, Verdict

from .conftest import git

MakeRepo = Callable[[dict[str, bytes | str]], tuple[Path, Callable[..., str]]]

MOD = """\
def helper(x):
    return x + 1


class Shape:
    def area(self):
        return 0

    def scaled(self, k):
        def inner(v):
            return v * k

        return inner(self.area())
"""
USER = "from pkg.mod import helper\n\n\ndef use():\n    return helper(1)\n"


def _edit(repo: Path, diff: Callable[..., str], edits: dict[str, str]) -> str:
    for rel, content in edits.items():
        (repo / rel).write_text(content)
    patch = diff()
    git(repo, "reset", "-q", "--hard")
    return patch


def _check(spec: dict[str, Any]) -> Check:
    return Check.model_validate(spec)


def _decide(repo: Path, patch: str, spec: dict[str, Any]) -> tuple[int | None, str, str | None]:
    got = decide(_check(spec), analyze_patch(repo, patch))
    return got.value, got.reason, got.detail


@pytest.fixture
def shapes(git_repo: MakeRepo) -> tuple[Path, Callable[..., str]]:
    return git_repo({"pkg/__init__.py": "", "pkg/mod.py": MOD, "pkg/user.py": USER})


def test_a_patch_that_does_not_apply_fails_applies_and_leaves_the_rest_undecided(
    shapes: tuple[Path, Callable[..., str]],
) -> None:
    repo, diff = shapes
    patch = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return x + 1", "return x + 2")})
    (repo / "pkg/mod.py").write_text(MOD.replace("def helper(x):\n    return x + 1", "X = 1"))
    git(repo, "commit", "-qam", "drift")
    assert _decide(repo, patch, {"applies": True}) == (0, "applies", "failed")
    for spec in ({"parses": True}, {"no_new_undefined_names": True}):
        assert _decide(repo, patch, spec) == (None, "check_error", "not_applied")
    assert _decide(repo, patch, {"changes_function": "pkg/mod.py::helper"})[2] == "not_applied"


def test_a_patch_that_applies_only_with_fuzz_is_recorded_as_such(git_repo: MakeRepo) -> None:
    lines = [f"V{i} = {i}" for i in range(1, 30)]
    repo, diff = git_repo({"consts.py": "\n".join(lines) + "\n"})
    changed = [*lines]
    changed[14] = "V15 = 150"
    patch = _edit(repo, diff, {"consts.py": "\n".join(changed) + "\n"})
    drifted = ["# header", "# more", *lines]
    drifted[13] = "V13 = 1300"  # a context line of the hunk differs: git apply refuses
    (repo / "consts.py").write_text("\n".join(drifted) + "\n")
    git(repo, "commit", "-qam", "drift")
    assert _decide(repo, patch, {"applies": True}) == (1, "applies", "patch_fuzz")
    assert _decide(repo, patch, {"parses": True}) == (1, "parses", None)
    clean = _edit(repo, diff, {"consts.py": "\n".join(drifted).replace("V20 = 20", "V20 = 0")})
    assert _decide(repo, clean, {"applies": True}) == (1, "applies", "git_apply")


def test_a_syntax_error_fails_parses_and_leaves_undefined_names_undecided(
    shapes: tuple[Path, Callable[..., str]],
) -> None:
    repo, diff = shapes
    patch = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return x + 1", "return x +")})
    assert _decide(repo, patch, {"parses": True}) == (0, "parses", None)
    assert _decide(repo, patch, {"no_new_undefined_names": True}) == (
        None,
        "check_error",
        "not_parsed",
    )
    # the file filters: only test files are looked at, and none changed
    assert _decide(repo, patch, {"parses": True, "in": "tests/"}) == (1, "parses", None)


def test_a_new_undefined_name_fails_its_check_but_not_parses(
    shapes: tuple[Path, Callable[..., str]],
) -> None:
    repo, diff = shapes
    patch = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return x + 1", "return x + offset")})
    assert _decide(repo, patch, {"no_new_undefined_names": True}) == (
        0,
        "no_new_undefined_names",
        None,
    )
    assert _decide(repo, patch, {"parses": True}) == (1, "parses", None)
    # an unused import is not an undefined name
    unused = _edit(repo, diff, {"pkg/mod.py": "import os\n" + MOD})
    assert _decide(repo, unused, {"no_new_undefined_names": True})[0] == 1


def test_a_renamed_function_still_called_elsewhere(shapes: tuple[Path, Callable[..., str]]) -> None:
    repo, diff = shapes
    renamed = MOD.replace("def helper(x)", "def assist(x)")
    patch = _edit(repo, diff, {"pkg/mod.py": renamed})
    assert _decide(repo, patch, {"no_removed_name_in_use": True}) == (
        0,
        "no_removed_name_in_use",
        None,
    )
    everywhere = _edit(
        repo, diff, {"pkg/mod.py": renamed, "pkg/user.py": USER.replace("helper", "assist")}
    )
    assert _decide(repo, everywhere, {"no_removed_name_in_use": True})[0] == 1
    # the name's definition left pkg/mod.py: filtering it out leaves nothing to blame
    assert _decide(repo, patch, {"no_removed_name_in_use": True, "not_in": "pkg/mod.py"})[0] == 1


def test_changes_function_maps_hunks_on_the_applied_files(
    shapes: tuple[Path, Callable[..., str]],
) -> None:
    repo, diff = shapes
    area = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return 0", "return 1")})
    inner = _edit(repo, diff, {"pkg/mod.py": MOD.replace("v * k", "v * k * 2")})
    assert _decide(repo, area, {"changes_function": "pkg/mod.py::Shape.area"})[0] == 1
    assert _decide(repo, area, {"changes_function": "pkg/mod.py::Shape"})[0] == 1
    assert _decide(repo, area, {"changes_function": "pkg/mod.py::helper"})[0] == 0
    assert _decide(repo, area, {"changes_function": "pkg/other.py::Shape.area"})[0] == 0
    # a change in a function nested in the method changes the method
    assert _decide(repo, inner, {"changes_function": "pkg/mod.py::Shape.scaled"})[0] == 1
    both = ["pkg/mod.py::helper", "pkg/mod.py::Shape.scaled.inner"]
    assert _decide(repo, inner, {"changes_function": both})[0] == 1


def test_without_a_tree_every_repository_check_is_missing_not_guessed(
    shapes: tuple[Path, Callable[..., str]],
) -> None:
    repo, diff = shapes
    patch = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return 0", "return 1")})
    for spec in ({"applies": True}, {"changes_function": "pkg/mod.py::Shape.area"}):
        got = run_check(_check(spec), patch)
        assert (got.value, got.reason) == (None, "no_repository")
    missing_tree = decide(_check({"applies": True}), analyze_patch(repo / "absent", patch))
    assert (missing_tree.value, missing_tree.reason) == (None, "no_repository")


RUBRIC = """\
metadata: {task_summary: t, underlying_bug: b}
axes:
  file_change_rubrics:
    - {id: FC1, description: Changes Shape.area, weight: 2,
       check: {changes_function: 'pkg/mod.py::Shape.area'}}
    - {id: FC2, description: Touches the module, weight: 1, check: {touches: pkg/mod.py}}
  spec_alignment_rubrics: []
  integrity_rubrics:
    - {id: IN1, description: Applies to the base tree, weight: 3, gate: true, check: {applies: true}}
  runtime_rubrics:
    - {id: RT1, description: Parses, weight: 3, check: {parses: true}}
    - {id: RT2, description: Defines what it uses, weight: 3, check: {no_new_undefined_names: true}}
"""


def test_the_rubric_format_accepts_them_and_names_bad_arguments() -> None:
    rubric, _ = parse_rubric(RUBRIC, "rubrics.yaml")
    assert rubric.item("IN1").check == Check(name="applies", arg=True)
    bad = RUBRIC.replace("{applies: true}", "{applies: yes please}").replace(
        "'pkg/mod.py::Shape.area'", "Shape.area"
    )
    with pytest.raises(RubricError) as err:
        parse_rubric(bad, "rubrics.yaml")
    text = str(err.value)
    assert "rubrics.yaml:9" in text and "expected true" in text
    assert "rubrics.yaml:5" in text and "path::Class.method" in text
    variants = json_schema()["$defs"]["Check"]["oneOf"]
    names = {n for v in variants for n in v["required"]}
    assert {"applies", "parses", "no_new_undefined_names", "changes_function"} <= names


def test_judging_decides_them_once_per_distinct_patch_and_a_failed_apply_fails_the_gate(
    shapes: tuple[Path, Callable[..., str]],
) -> None:
    repo, diff = shapes
    good = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return 0", "return 1")})
    broken = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return x + 1", "return x + 2")})
    broken = broken.replace("-    return x + 1", "-    return x + 99")  # a line that is not there
    rubric, _ = parse_rubric(RUBRIC, "rubrics.yaml")
    task = Task(
        instance_id="t-1",
        problem_statement="area is wrong",
        candidates=[
            Candidate(id="a", patch=good),
            Candidate(id="b", patch=good + "\n"),  # the same patch once normalised
            Candidate(id="c", patch=broken),
        ],
    )
    analyses = RepoAnalyses(repo)
    rows = [
        v.to_row()
        for v in asyncio.run(
            judge_task(task, rubric, ChecksJudge(), repeats=1, concurrency=4, repository=analyses)
        )
    ]
    assert analyses.analysed == 2
    by = {(r["candidate_id"], r["item_id"]): r for r in rows}
    assert by[("a", "IN1")]["origin"] == "checked" and by[("a", "IN1")]["detail"] == "git_apply"
    assert by[("a", "FC1")]["value"] == 1 and by[("a", "RT2")]["value"] == 1
    assert (by[("c", "IN1")]["value"], by[("c", "IN1")]["detail"]) == (0, "failed")
    assert by[("c", "RT1")]["detail"] == "not_applied"
    scores = {
        cid: score_candidate(
            rubric,
            [Verdict.model_validate(r) for r in rows if r["candidate_id"] == cid],
            instance_id="t-1",
            candidate_id=cid,
            empty_patch=False,
        )
        for cid in ("a", "c")
    }
    assert scores["a"].decision == "accept"
    assert scores["c"].decision == "reject"
    # with no tree: missing with a reason, in the verdicts file's own words
    none = judge_task(
        task, rubric, ChecksJudge(), repeats=1, concurrency=4, repository=RepoAnalyses(None)
    )
    none_rows = [v.to_row() for v in asyncio.run(none)]
    reasons = {r["reason"] for r in none_rows if r["item_id"] != "FC2"}
    assert reasons == {"no_repository"}
    assert all(r["value"] is None for r in none_rows if r["item_id"] != "FC2")
    plain = check_verdicts(rubric, good, instance_id="t-1", candidate_id="a")
    assert plain["IN1"].origin == "missing" and plain["IN1"].reason == "no_repository"
    json.dumps(rows)  # rows are plain JSON
