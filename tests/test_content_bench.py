"""The content study's pieces that could quietly cheat: the source prior must leave the instance out,
and a pool's features must be recomputed on that pool alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from content_features import pool_features  # noqa: E402
from content_rerank import Inst, family, source_prior  # noqa: E402

from agentic_rubrics.rank.content import diff_functions  # noqa: E402
from tests.conftest import git  # noqa: E402


def _inst(iid: str, labels: dict[str, bool], sources: dict[str, str]) -> Inst:
    return Inst(iid, "o/r", labels, sources, dict.fromkeys(labels, ""), {}, {}, False)


def test_the_source_prior_never_reads_the_instance_it_scores() -> None:
    insts = [
        _inst("a", {"x": True, "y": False}, {"x": "strong/run-1", "y": "weak"}),
        _inst("b", {"x": True, "y": False}, {"x": "strong/run-1", "y": "weak"}),
        _inst("c", {"x": False, "y": True}, {"x": "strong/run-1", "y": "weak"}),
    ]
    prior = source_prior(insts)
    # on "c", strong resolved 2 of the other 2 instances, weak 0 of 2: c's own labels are not read
    assert prior("c", "strong/run-1") == 1.0 and prior("c", "weak") == 0.0
    assert prior("a", "strong/run-1") == 0.5  # b yes, c no
    assert prior("a", "never-seen") is None
    assert family("autocoderover-2024/acr-run-1") == "autocoderover-2024" and family(None) == "?"


ONE = """--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -2 +2 @@ def f(x):
-    return x
+    return x + 1
"""
TWO = ONE.replace("x + 1", "x + 2")
OTHER = ONE.replace("def f(x):", "def g(x):")


def test_function_agreement_is_recomputed_on_the_pool_it_is_given() -> None:
    assert diff_functions(ONE) == ["pkg/mod.py::f"]
    full = pool_features({"a": ONE, "b": TWO, "c": OTHER}, {}, {})
    assert full["a"]["func_agreement"] == 0.5 and full["c"]["func_agreement"] == 0.0
    alone = pool_features({"a": ONE, "c": OTHER}, {}, {})
    assert alone["a"]["func_agreement"] == 0.0  # b is not in this pool
    assert full["c"]["func_agreement_rel_max"] == -0.5
    # a post-image row decides the findings; without one they count as none
    post = {"a": {"applied": False, "new_error": False, "removes_used": False, "functions": []}}
    rows = pool_features({"a": ONE, "b": TWO}, {}, post)
    assert rows["a"]["not_applied"] == 1.0 and rows["b"]["not_applied"] == 0.0


def _pool(n: int, families: str = "as") -> Inst:
    """An instance of two families' candidates (two each), labels and S in no simple relation."""
    patches = {
        f"{fam}{k}": ONE.replace("x + 1", f"x + {n + k + (3 if fam == 's' else 0)}")
        for fam in families
        for k in range(2)
    }
    names = {
        "a": "autocoderover-2024/acr-run-",
        "s": "swe-agent-gpt4-2024/cost_2_",
        "x": "rare/run-",
    }
    sources = {c: names[c[0]] + c[1] for c in patches}
    labels = {c: (n + k) % 3 == 0 for k, c in enumerate(patches)}
    s = {c: 0.2 + 0.1 * ((n * 7 + k * 3) % 5) for k, c in enumerate(patches)}
    inst = Inst(f"i{n}", f"o/r{n % 3}", labels, sources, patches, s, dict.fromkeys(patches), False)
    inst.rank = dict(s)
    return inst.compute()


def test_the_study_reports_the_shipped_default_on_full_pools_and_every_slice() -> None:
    from content_rerank import MIN_SLICE_POOLS, slice_families
    from content_study import study
    from default_ranking import DEFAULT

    # two families with enough single-generator pools for a slice, a third with too few
    insts = [_pool(n, "asx" if n < 3 else "as") for n in range(MIN_SLICE_POOLS)]
    assert slice_families(insts) == {"autocoderover-2024": 15, "swe-agent-gpt4-2024": 15}
    assert slice_families(insts, 3)["rare"] == 3
    problems = {i.instance_id: "f(x) returns x; it should return x + 1" for i in insts}
    offline_cv = {i.instance_id: dict.fromkeys(i.labels, 0.0) for i in insts}
    out = study(insts, problems, offline_cv, 0, lambda slices: {"pools": len(slices)})
    full = out["full_pools"]["all"]
    assert DEFAULT == "self_consistency" and full["default"] == full["self_consistency"]
    assert (
        "behaviour_consensus" in full
        and "behaviour_consensus - self_consistency" in out["full_pools_paired"]
    )
    for fam, entry in out["single_generator"].items():
        assert entry["all"]["default"] == entry["all"]["self_consistency"], fam
        assert entry["paired"]["default - self_consistency"]["mean"] == 0.0
        assert "behaviour_consensus - self_consistency" in entry["paired"]
    assert set(out["single_generator"]) == {"autocoderover-2024", "swe-agent-gpt4-2024"}


def test_the_default_s_provenance_names_the_evidence_file_its_date_and_data() -> None:
    from default_ranking import DEFAULT, default_provenance

    found = default_provenance()
    assert found["selector"] == DEFAULT and found["agrees"] is True
    assert found["evidence_file"] == "agentic_rubrics/rank/selection_evidence.json"
    assert len(found["evidence_sha256"]) == 64 and found["chosen_on"]
    assert set(found["data"]) == {"lite", "verified"} and "choose_default.py" in found["command"]


def _row(mean: float, low: float) -> dict[str, Any]:
    return {"minus_self_consistency": {"mean": mean, "ci_familywise": [low, low + 0.1]}}


def test_the_default_changes_only_above_zero_on_both_files_and_below_on_no_slice() -> None:
    from choose_default import decide

    table = {
        "wins_lite_only": {"lite/full": _row(0.1, 0.02), "verified/full": _row(0.05, -0.01)},
        "below_on_a_slice": {
            "lite/full": _row(0.1, 0.03),
            "verified/full": _row(0.1, 0.03),
            "verified/tdad": _row(-0.01, -0.05),
        },
        "passes": {
            "lite/full": _row(0.04, 0.01),
            "verified/full": _row(0.04, 0.01),
            "lite/acr": _row(0.0, 0.0),
        },
        "passes_better": {"lite/full": _row(0.1, 0.02), "verified/full": _row(0.1, 0.03)},
    }
    files = ["lite", "verified"]
    found = decide(table, ["wins_lite_only", "below_on_a_slice"], files)
    assert found["default"] == "self_consistency"
    assert found["methods"]["below_on_a_slice"]["below_self_consistency_on_slices"] == [
        "verified/tdad"
    ]
    assert not found["methods"]["wins_lite_only"]["interval_above_zero_on_both_files"]
    # among those that pass, the one whose smaller lower bound is highest
    assert decide(table, list(table), files)["default"] == "passes_better"


def test_post_rows_on_an_approximate_tree_are_cached_apart_and_read_as_a_run_reads_them(
    tmp_path: Path, git_repo: Any
) -> None:
    """The content study's rows on a release standing in for the base commit (``--approximate-
    trees``): a patch that does not apply there does not apply (as a run reads it), cached apart from
    the base commit's rows and from another release's; an instance without any tree is named."""
    from types import SimpleNamespace

    from content_features import patch_key, post_rows

    from agentic_rubrics.exceptions import RepoError

    repo, diff = git_repo({"m.py": "def f(x):\n    return x\n"})
    (repo / "m.py").write_text("def f(x):\n    return x + 1\n")
    fits = diff()
    git(repo, "reset", "-q", "--hard")
    stale = fits.replace("-    return x\n", "-    return the_sum_of_everything\n")

    def task(iid: str) -> Any:
        cands = [SimpleNamespace(id=c, patch=p) for c, p in (("fits", fits), ("stale", stale))]
        return SimpleNamespace(instance_id=iid, candidates=cands)

    tags = {"base": None, "release": "r1", "fits": "r1"}

    def trees(t: Any) -> tuple[Path, str | None]:
        if t.instance_id == "gone":
            raise RepoError("no such repository", reason="fetch_failed")
        return repo, tags[t.instance_id]

    fitting = SimpleNamespace(instance_id="fits", candidates=task("fits").candidates[:1])
    tasks = [task("base"), task("release"), task("gone"), fitting]
    rows_file = tmp_path / "rows.jsonl"
    rows, missing, approximate, timings = post_rows(tasks, trees, rows_file)
    assert missing == {"gone": "fetch_failed"} and approximate == {"release", "fits"}
    assert timings["analysed_now"] == 5
    assert rows[patch_key("base", stale)]["applied"] is False  # ranks below on the base commit
    assert rows[patch_key("fits", fits)]["applied"] is True
    assert rows[patch_key("release", stale)]["applied"] is False  # as on any tree
    stored = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert {r["key"] for r in stored if r["key"].endswith("@r1")} == {
        patch_key("release", p) + "@r1" for p in (fits, stale)
    } | {patch_key("fits", fits) + "@r1"}
    again = post_rows(tasks, trees, rows_file)
    assert again[0] == rows and again[3]["analysed_now"] == 0
    tags["release"] = "r2"  # another release: analysed anew
    assert post_rows(tasks, trees, rows_file)[3]["analysed_now"] == 2
    # a run killed while writing a row: the partial line is skipped and its row analysed again
    text = rows_file.read_text()
    last = text.splitlines()[-1]
    rows_file.write_text(text[: -len(last) - 1] + last[: len(last) // 2])
    resumed = post_rows(tasks, trees, rows_file)
    assert (
        resumed[3]["analysed_now"] == 1
        and post_rows(tasks, trees, rows_file)[3]["analysed_now"] == 0
    )
