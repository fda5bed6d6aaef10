"""The static rubric grounded in the repository next to the issue-only one, on the same instances.

Used by ``swebench_rerank.py --repo-url TEMPLATE``: each instance's repository is fetched at its base
commit through the library's own cache (as from GitHub), the static explorer writes its rubric there, and
the measures below are taken on the instances whose repository and commit were available. The others are
counted by reason, never scored or guessed.

Gold patches serve one measure only, never a score: whether an item of the rubric names a file the gold
patch changes (a non-test file named by a ``touches``/``only_touches`` check or by an ``in`` filter), the
top file (``FC1``) being one, and whether an item naming functions (``touches_symbol``) is met by the gold
patch itself (it changes code inside one of the named functions, in one of the named files; a
``changes_function`` item is read the same way, from the diff).

Self-contained (no import of the library's newer modules) so that the same script can measure an older
version of the explorer: ``PYTHONPATH=<an export of the old package> python benchmarks/swebench_rerank.py``.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.rank import metrics
from agentic_rubrics.rubric.check_verdicts import check_verdicts
from agentic_rubrics.rubric.checks import run_check

try:  # where the diff model keeps it; an older package (measured for comparison) had it here
    from agentic_rubrics.patch import is_test_path
except ImportError:  # pragma: no cover
    from agentic_rubrics.explore.codeindex import is_test_path  # type: ignore[attr-defined,no-redef]
from agentic_rubrics.patch import parse_patch
from agentic_rubrics.report.results import TaskResult
from agentic_rubrics.types import Check, Rubric

_GLOB = re.compile(r"[*?\[]")


def named_files(rubric: Rubric) -> list[str]:
    """Exact repository paths the rubric's checks name (globs and bare file names left out)."""
    out: dict[str, None] = {}
    for _, item in rubric.items():
        check = item.check
        if check is None:
            continue
        if check.name == "changes_function":  # path::Class.method (repository-aware)
            for v in check.arg if isinstance(check.arg, list) else [check.arg]:
                out.setdefault(str(v).partition("::")[0], None)
        for value in (check.arg if check.name in ("touches", "only_touches") else None, check.path):
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str) and "/" in v.strip("/") and not _GLOB.search(v):
                    out.setdefault(v, None)
    return list(out)


def gold_hits(rubric: Rubric | None, gold: str | None) -> dict[str, bool] | None:
    """Whether the rubric names a file, the top file and a function the gold patch changes."""
    if rubric is None or not gold:
        return None
    try:
        gold_files = {f.path for f in parse_patch(gold).files if not is_test_path(f.path)}
    except PatchParseError:
        return None
    top = None
    for _, item in rubric.items():
        if item.id == "FC1" and item.check is not None and item.check.name == "touches":
            top = item.check.arg
    verdicts = check_verdicts(rubric, gold, instance_id="gold", candidate_id="gold")
    symbol_items = [
        i.id for _, i in rubric.items() if i.check is not None and i.check.name == "touches_symbol"
    ]
    # changes_function (decided on the tree) is read here as the diff shows it, like touches_symbol
    targets = [
        str(v).partition("::")
        for _, i in rubric.items()
        if i.check is not None and i.check.name == "changes_function"
        for v in (i.check.arg if isinstance(i.check.arg, list) else [i.check.arg])
    ]
    by_diff = any(
        run_check(Check(name="touches_symbol", arg=qual, path=path), gold).value == 1
        for path, _, qual in targets
    )
    return {
        "file": bool(set(named_files(rubric)) & gold_files),
        "top_file": isinstance(top, str) and top in gold_files,
        "function": by_diff or any(verdicts[i].value == 1 for i in symbol_items),
    }


def _status(folder: Path, instance_id: str) -> dict[str, Any]:
    from agentic_rubrics.runfolder.folder import safe_name

    path = folder / "rubrics" / safe_name(instance_id) / "status.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def compare(
    grounded_folder: Path,
    grounded: list[TaskResult],
    issue_only: list[TaskResult],
    gold: dict[str, str],
    method_metrics: Callable[..., dict[str, Any]],
    resamples: int,
) -> dict[str, Any]:
    """Grounded vs issue-only static rubrics on the instances whose repository was available."""
    statuses = {t.instance_id: _status(grounded_folder, t.instance_id) for t in grounded}
    available = {
        i for i, st in statuses.items() if st.get("status") == "ok" and st.get("repository")
    }
    unavailable = Counter(
        str(st.get("reason") or "no_status") for i, st in statuses.items() if i not in available
    )
    same_g = [t for t in grounded if t.instance_id in available]
    same_i = [t for t in issue_only if t.instance_id in available]

    def s_values(t: TaskResult) -> dict[str, float | None]:
        return {c: s.score for c, s in t.scores.items()}

    out: dict[str, Any] = {
        "instances": len(grounded),
        "available": len(same_g),
        "unavailable": dict(sorted(unavailable.items())),
        "unavailable_ids": sorted(i for i in statuses if i not in available),
        "candidates": sum(len(t.labels) for t in same_g),
        "methods": {
            "static_grounded": method_metrics(
                same_g, lambda t: t.rankings["rubric"], resamples, auc_values=s_values
            ),
            "static_issue_only": method_metrics(
                same_i, lambda t: t.rankings["rubric"], resamples, auc_values=s_values
            ),
        },
    }
    for name, tasks in (("static_grounded", same_g), ("static_issue_only", same_i)):
        hits = [h for t in tasks if (h := gold_hits(t.rubric, gold.get(t.instance_id)))]
        out.setdefault("gold_hits", {})[name] = {
            "instances": len(hits),
            **{
                k: metrics.mean([float(h[k]) for h in hits])
                for k in ("file", "top_file", "function")
            },
        }
    repo = [statuses[t.instance_id]["repository"] for t in same_g]
    # a cache hit is a checkout that found the export already there (no git call, no lock); a
    # checkout that waited for another task's export of the same commit counts with the fetched ones
    hits = [r for r in repo if r.get("cached") and not r.get("lock_wait_seconds")]
    fetched = [r for r in repo if r not in hits]

    def med(rows: list[dict[str, Any]], key: str) -> float | None:
        return _median([float(r.get(key) or 0.0) for r in rows])

    out["provisioning"] = {
        "fetched": len(fetched),
        "cached": len(hits),
        "fetched_median_seconds": med(fetched, "seconds"),
        "fetched_median_fetch_seconds": med(fetched, "fetch_seconds"),
        "fetched_median_export_seconds": med(fetched, "export_seconds"),
        "fetched_median_lock_wait_seconds": med(fetched, "lock_wait_seconds"),
        "cached_median_seconds": med(hits, "seconds"),
        "total_seconds": round(sum(float(r.get("seconds") or 0.0) for r in repo), 1),
    }
    # the rubric's time without the checkout: the sandbox's start and the explorer's commands
    explore = [
        float(statuses[t.instance_id].get("seconds", 0.0)) - float(r.get("seconds") or 0.0)
        for t, r in zip(same_g, repo, strict=True)
    ]
    out["explore_seconds"] = {"median": _median(explore), "total": round(sum(explore), 1)}
    grounding = [statuses[t.instance_id].get("grounding") or {} for t in same_g]
    out["grounding"] = {
        "rubrics_with_grounded_items": sum(1 for g in grounding if g.get("grounded_items", 0) > 0),
        "leads": dict(sum((Counter(g.get("leads", {})) for g in grounding), Counter())),
        "leads_unmatched": dict(
            sum((Counter(g.get("unmatched", {})) for g in grounding), Counter())
        ),
    }
    return out


def print_comparison(c: dict[str, Any]) -> None:
    """The comparison's lines in the benchmark's summary."""
    print(
        f"grounded in the repository: {c['available']} of {c['instances']} instances available"
        f" ({c['candidates']} candidates); unavailable: {c['unavailable'] or 'none'}"
    )
    for name, m in c["methods"].items():
        auc = "n/a" if m["roc_auc"] is None else f"{m['roc_auc']:.3f}"
        hits = c["gold_hits"][name]
        rate = {k: "n/a" if v is None else f"{100 * v:.0f}%" for k, v in hits.items()}
        print(
            f"  {name:<18} Best@16 {100 * m['best_at_k']['16']:5.1f}  ROC-AUC {auc}  gold file named"
            f" {rate['file']} (top file {rate['top_file']}), gold function {rate['function']}"
        )
    p = c["provisioning"]
    print(
        f"  provisioning: {p['fetched']} fetched (median {p['fetched_median_seconds']} s, of which"
        f" git fetch {p['fetched_median_fetch_seconds']} s, export {p['fetched_median_export_seconds']}"
        f" s), {p['cached']} from the cache (median {p['cached_median_seconds']} s); exploring with"
        f" the sandbox's start: median {c['explore_seconds']['median']} s per instance"
    )
