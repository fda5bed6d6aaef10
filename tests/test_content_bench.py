"""The content study's pieces that could quietly cheat: the source prior must leave the instance out,
and a pool's features must be recomputed on that pool alone."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from content_features import pool_features  # noqa: E402
from content_rerank import Inst, family, source_prior  # noqa: E402

from agentic_rubrics.rank.content import diff_functions  # noqa: E402


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
