"""Hostile text: how work grows with the size of hostile inputs, before and after bounding it.

Each figure is CPU time (``time.process_time``) in this process, the best of a few rounds. Baselines are
measured in the same run: the previous algorithms are reproduced here (the pairwise lint's regex search
per id, the shipped broad-except pattern as it was), so the ratios compare like with like.

    .venv/bin/python benchmarks/hostile_text.py --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import RubricError
from agentic_rubrics.explore.common import BROAD_EXCEPT
from agentic_rubrics.judge.judges import last_json_object
from agentic_rubrics.rubric.check_regex import RegexTimeout, any_line_matches
from agentic_rubrics.rubric.file import parse_rubric

OLD_BROAD_EXCEPT = r"^\s*except\s*(\(?\s*(BaseException|Exception)\s*\)?\s*(as\s+\w+)?)?\s*:"


def cpu(fn: Callable[[], Any], rounds: int = 3) -> float:
    """The best CPU time of ``rounds`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return round(best, 4)


def rubric_text(n: int) -> str:
    rows = "".join(
        f"    - id: X{i}\n      description: Modifies part {i} in src/m{i}.py, unlike X{i + 1}\n"
        f"      weight: 2\n      check: {{touches: src/m{i}.py}}\n"
        for i in range(n)
    )
    return "metadata: {task_summary: a, underlying_bug: b}\naxes:\n  file_change_rubrics:\n" + rows


def old_references(n: int) -> None:
    """The lint's cross-reference search as it was: one regex search per other id, per item."""
    ids = {f"X{i}" for i in range(n)}
    for i in range(n):
        text = f"Modifies part {i} in src/m{i}.py, unlike X{i + 1}"
        sorted(o for o in ids - {f"X{i}"} if re.search(rf"\b{re.escape(o)}\b", text))


def validation(sizes: list[int], old_sizes: list[int]) -> dict[str, Any]:
    new = {n: cpu(lambda n=n: parse_rubric(rubric_text(n)), 1 if n > 2000 else 3) for n in sizes}
    old = {n: cpu(lambda n=n: old_references(n), 1) for n in old_sizes}
    return {
        "parse_rubric_seconds": new,
        "ratio_largest_to_smallest": round(new[sizes[-1]] / new[sizes[0]], 2),
        "size_ratio": sizes[-1] / sizes[0],
        "old_pairwise_lint_seconds": old,
    }


def broad_except(sizes: list[int], old_sizes: list[int]) -> dict[str, Any]:
    def line(n: int) -> str:
        return "except" + " " * n

    old = {n: cpu(lambda n=n: re.search(OLD_BROAD_EXCEPT, line(n)), 1) for n in old_sizes}
    new = {n: cpu(lambda n=n: any_line_matches([line(n)], BROAD_EXCEPT)) for n in sizes}
    return {"old_pattern_seconds": old, "new_pattern_seconds": new}


def regex_bomb() -> dict[str, Any]:
    def bomb() -> str:
        try:
            any_line_matches(["a" * 60 + "b"], "^(a|aa)+$")
        except RegexTimeout:
            return "timeout"
        return "decided"

    start = time.process_time()
    outcome = bomb()
    return {
        "pattern": "^(a|aa)+$",
        "outcome": outcome,
        "cpu_seconds": round(time.process_time() - start, 3),
    }


def yaml_bombs() -> dict[str, Any]:
    head = "metadata:\n  task_summary: t\n  underlying_bug: b\n"
    laughs = "".join(
        f"    {c}: &{c} [{', '.join([f'*{p}'] * 10) if p else ', '.join(['lol'] * 10)}]\n"
        for p, c in zip(["", "a", "b", "c", "d", "e", "f", "g"], "abcdefgh", strict=True)
    )
    cases = {
        "billion laughs (10^8 values)": head + "  lols:\n" + laughs + "axes: {}\n",
        "recursive anchor": head + "  notes: &a {again: [*a]}\naxes: {}\n",
        "5000-deep flow": head + "  deep: " + "[" * 5000 + "]" * 5000 + "\naxes: {}\n",
        "2000-deep block": head + "".join("  " * (i + 1) + "k:\n" for i in range(2000)),
    }
    out = {}
    for name, text in cases.items():

        def refuse(text: str = text) -> None:
            try:
                parse_rubric(text, "rubrics.yaml")
            except RubricError:
                return
            raise AssertionError("accepted")

        out[name] = cpu(refuse)
    return out


def nested_replies(sizes: list[int]) -> dict[str, float]:
    return {n: cpu(lambda n=n: last_json_object('{"a": ' * n + "1" + "}" * n)) for n in sizes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    results = {
        "rubric_validation": validation([500, 1000, 2000, 5000, 10000], [250, 500]),
        "broad_except_line_of_spaces": broad_except([40_000, 400_000], [1000, 2000, 4000]),
        "regex_bomb": regex_bomb(),
        "yaml_bombs_refused_seconds": yaml_bombs(),
        "nested_reply_seconds": nested_replies([1000, 10_000, 100_000]),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hostile_text.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
