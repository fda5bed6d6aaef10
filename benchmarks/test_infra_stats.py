"""How many real SWE-bench candidates change test infrastructure (``agentic_rubrics/test_infra.py``), by
kind, among all candidates and among the resolved ones; the resolved ones flagged, each listed.

Read from the shared development files (``lite_candidates.jsonl.gz``, ``verified_candidates.jsonl.gz``:
every candidate, full-run and resolved-only). A config file's hunks are placed in their sections by
reading the base file from the bare mirrors of ``../shared/data/repos`` when given (``--mirrors DIR``:
the tars extracted there); a candidate whose repository or base commit is not among them is decided
without the base file (a hunk whose section it does not show counts as pytest's), and counted as such.

    .venv/bin/python benchmarks/test_infra_stats.py --data ../shared/data/swebench \\
        --mirrors /tmp/mirrors --out benchmarks/results/test_infra_stats.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.swebench import read_records
from agentic_rubrics.test_infra import INFRA_KINDS, infra_changes, kinds_of, neutralised_paths

FILES = ("lite_candidates.jsonl.gz", "verified_candidates.jsonl.gz")


def base_reader(mirrors: Path | None, repo: str, commit: str) -> Callable[[str], str | None] | None:
    """A reader of ``repo``'s files at ``commit`` from its bare mirror (``None``: no mirror)."""
    if mirrors is None:
        return None
    git_dir = mirrors / f"{repo.replace('/', '__')}.git"
    if not git_dir.is_dir():
        return None
    probe = ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"]
    if subprocess.run(probe, capture_output=True, check=False).returncode != 0:
        return None

    def read(path: str) -> str | None:
        done = subprocess.run(
            ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
            capture_output=True,
            check=False,
        )
        return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None

    return read


def count(path: Path, mirrors: Path | None) -> dict[str, Any]:
    """One file's figures."""
    totals: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = {k: Counter() for k in (*INFRA_KINDS, "any", "reverted")}
    resolved_flagged: list[dict[str, Any]] = []
    gold: Counter[str] = Counter()
    for _, r in read_records(path):
        read = base_reader(mirrors, r["repo"], r["base_commit"])
        for c in r["candidates"]:
            changes = infra_changes(c["patch"] or "", read)
            kinds = kinds_of(changes)
            resolved = bool(c.get("resolved"))
            totals["candidates"] += 1
            totals["resolved"] += resolved
            totals["decided_without_base"] += read is None
            flags = [*kinds, *(["any"] if kinds else [])]
            flags += ["reverted"] if neutralised_paths(changes) else []
            for kind in flags:
                by_kind[kind]["candidates"] += 1
                by_kind[kind]["resolved"] += resolved
            if kinds and resolved:
                resolved_flagged.append(
                    {
                        "instance_id": r["instance_id"],
                        "source": c.get("source"),
                        "changes": [[ch.path, ch.kind] for ch in changes],
                        "reverted": neutralised_paths(changes),
                        "base_read": read is not None,
                    }
                )
        for kind in kinds_of(infra_changes(r.get("gold_patch") or "", read)):
            gold[kind] += 1
    return {
        **dict(totals),
        "by_kind": {k: dict(v) for k, v in by_kind.items()},
        "gold_patches_flagged": dict(gold),
        "resolved_flagged": resolved_flagged,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the folder holding the two files")
    ap.add_argument("--mirrors", type=Path, default=None, help="the extracted bare mirrors")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    out: dict[str, Any] = {
        "command": "benchmarks/test_infra_stats.py --data ../shared/data/swebench"
        + (" --mirrors /tmp/mirrors" if args.mirrors else ""),
        "files": {name: count(args.data / name, args.mirrors) for name in FILES},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    for name, figures in out["files"].items():
        print(name, figures["candidates"], figures["resolved"], json.dumps(figures["by_kind"]))


if __name__ == "__main__":
    main()
