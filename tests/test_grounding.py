"""Grounding records: items naming the repository's files, the static explorer's leads, the report."""

from __future__ import annotations

from pathlib import Path

from agentic_rubrics.rubric.grounding import (
    grounding_markdown,
    grounding_record,
    grounding_report,
    named_paths,
)
from agentic_rubrics.runfolder.rows import Grounding, RubricSummary
from agentic_rubrics.types import Rubric


def rubric(meta: dict[str, object] | None = None) -> Rubric:
    return Rubric.model_validate(
        {
            "metadata": {"task_summary": "t", "underlying_bug": "b", **(meta or {})},
            "axes": {
                "file_change_rubrics": [
                    {"id": "FC1", "description": "Modifies a", "weight": 3,
                     "check": {"touches": "pkg/a.py"}},
                    {"id": "FC2", "description": "Modifies one", "weight": 2,
                     "check": {"touches": ["pkg/missing.py", "../../etc/passwd", "pkg/*.py"]}},
                    {"id": "FC3", "description": "Changes f", "weight": 2,
                     "check": {"touches_symbol": "f", "in": ["pkg/a.py", "pkg/"]}},
                    {"id": "FC4", "description": "Keeps it small", "weight": 1,
                     "check": {"max_files": 2, "not_in": "tests/"}},
                ],
            },
        }
    )  # fmt: skip


LEADS = {"leads": {"symbol": 3, "module": 1}, "unmatched": {"symbol": 2}}


def test_items_naming_files_of_the_tree_are_grounded(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("def f(): pass\n")
    (tmp_path.parent / "passwd").write_text("outside")
    assert named_paths(rubric()) == {
        "FC1": ["pkg/a.py"],
        "FC2": ["pkg/missing.py", "../../etc/passwd"],
        "FC3": ["pkg/a.py"],
    }
    record = grounding_record(rubric({"grounding": LEADS}), tmp_path, static_leads=True)
    assert record == {
        "grounded_items": 2,
        "named_paths": 3,
        "named_paths_missing": 2,  # a path outside the tree is never looked at
        **LEADS,
    }


def test_leads_come_only_from_the_static_explorer_and_in_its_shape(tmp_path: Path) -> None:
    # another explorer's metadata is a model's text
    assert "leads" not in grounding_record(rubric({"grounding": LEADS}), None, static_leads=False)
    for bad in (
        {"leads": {"symbol": "3"}, "unmatched": {}},
        {"leads": {"secret": 1}, "unmatched": {}},
        {"leads": {"symbol": -1}, "unmatched": {}},
        {"leads": {"symbol": True}, "unmatched": {}},
        "symbol: 3",
    ):
        assert grounding_record(rubric({"grounding": bad}), None, static_leads=True) == {}


def test_the_report_counts_rubrics_with_grounded_items_and_leads_that_found_nothing() -> None:
    rows = [
        {"status": "ok", "grounding": {"grounded_items": 3, **LEADS}},
        {"status": "ok", "grounding": {"grounded_items": 0, "leads": {"symbol": 1}, "unmatched": {}}},
        {"status": "ok", "grounding": {}},  # no repository
        {"status": "failed", "grounding": {"grounded_items": 9}},
        {"status": "ok"},  # an earlier run's row
    ]  # fmt: skip
    g = grounding_report(RubricSummary.model_validate(r) for r in rows)
    assert g.model_dump() == {
        "rubrics_in_repository": 2,
        "rubrics_with_grounded_items": 1,
        "grounded_items": 3,
        "rubrics_with_leads": 2,
        "rubrics_with_unmatched_leads": 1,
        "leads": {"module": 1, "symbol": 4},
        "leads_unmatched": {"symbol": 2},
    }
    line = grounding_markdown(g)
    assert "1 of 2 rubrics" in line and "found nothing: 2 of 5 (module 0/1, symbol 2/4)" in line
    assert "no rubric" in grounding_markdown(grounding_report([]))
    assert grounding_report(
        [RubricSummary(status="ok", grounding=Grounding(leads={"x": 1}))]
    ).leads == {
        "x": 1
    }  # leads without their unmatched counts (a hand-edited row) count as none unmatched
