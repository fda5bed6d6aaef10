"""Hostile text: how work grows with the size of hostile inputs, before and after bounding it.

Each figure is CPU time (``time.process_time``) in this process, the best of a few rounds. Baselines are
measured in the same run: the previous algorithms are reproduced here (the pairwise lint's regex search
per id, the shipped broad-except pattern as it was), so the ratios compare like with like.

    .venv/bin/python benchmarks/hostile_text.py --out benchmarks/results
    .venv/bin/python benchmarks/hostile_text.py --only redaction   # one section
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
from agentic_rubrics.redaction import Redactor
from agentic_rubrics.rubric.check_regex import RegexTimeout, any_line_matches
from agentic_rubrics.rubric.file import parse_rubric

OLD_BROAD_EXCEPT = r"^\s*except\s*(\(?\s*(BaseException|Exception)\s*\)?\s*(as\s+\w+)?)?\s*:"

OLD_KEY_PATTERNS = (
    r"(sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{20,}|xox[baprs]-[A-Za-z0-9-]{10,}"
    r"|hf_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_-]{30,})"
)
"""The redactor's shapes before the names and the new kinds: its whole pattern work, for the ratio."""

NAIVE_SHAPES = {
    "jwt": (r"eyJ[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}", "eyJ"),
    "url_credentials": (r"[a-z][a-z0-9+.-]*://[^\s/@:]*:[^\s/@]+@", "a"),
    "pem": (r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----"),
}  # fmt: skip
"""The same secrets as the obvious patterns would find them (no start guard, no possessive runs), and
the line that makes each quadratic."""

HOSTILE_LINES = {
    "letters": "a",
    "eyJ runs": "eyJ",
    "JWT-like parts": "eyJaaaaaaaa.",
    "URLs without @": "://a:b",
    "BEGIN without END": "-----BEGIN PRIVATE KEY-----",
    "names without =": "PASSWORD",
    "unclosed quotes": 'A_TOKEN="',
    "unclosed members": '"token": "',
    "YAML lines": "token: a\n",
    "AWS names": "aws_secret_access_key=",
}


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


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def redaction(sizes: list[int], naive_sizes: list[int]) -> dict[str, Any]:
    """The redactor on hostile lines: before (the old shapes only) and after (every shape and name),
    at two sizes (linear: the time doubles with the size); the naive patterns' growth (quadratic:
    twice the line, four times the time)."""
    redact = Redactor(environ={})
    old = re.compile(OLD_KEY_PATTERNS)
    lines: dict[str, Any] = {}
    for name, unit in HOSTILE_LINES.items():
        row: dict[str, Any] = {}
        for n in sizes:
            line = _repeat(unit, n)
            row[f"before_{n}"] = cpu(lambda line=line: old.sub("[redacted:key]", line))
            row[f"after_{n}"] = cpu(lambda line=line: redact.text(line))
        lines[name] = row
    naive: dict[str, Any] = {}
    for name, (pattern, unit) in NAIVE_SHAPES.items():
        compiled = re.compile(pattern)
        naive[name] = {
            n: cpu(lambda n=n, c=compiled, u=unit: c.sub("x", _repeat(u, n)), 1)
            for n in naive_sizes
        }
    worst = max(row[f"after_{sizes[-1]}"] for row in lines.values())
    return {"cpu_seconds": lines, "worst_after_largest": worst, "naive_cpu_seconds": naive}


def nested_replies(sizes: list[int]) -> dict[str, float]:
    return {n: cpu(lambda n=n: last_json_object('{"a": ' * n + "1" + "}" * n)) for n in sizes}


SECTIONS: dict[str, Callable[[], Any]] = {
    "rubric_validation": lambda: validation([500, 1000, 2000, 5000, 10000], [250, 500]),
    "broad_except_line_of_spaces": lambda: broad_except([40_000, 400_000], [1000, 2000, 4000]),
    "regex_bomb": regex_bomb,
    "yaml_bombs_refused_seconds": yaml_bombs,
    "nested_reply_seconds": lambda: nested_replies([1000, 10_000, 100_000]),
    "redaction": lambda: redaction([1_000_000, 2_000_000], [20_000, 40_000]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(SECTIONS),
        help="Measure this section only (repeatable); the others keep their figures in the file.",
    )
    args = parser.parse_args()
    path = args.out / "hostile_text.json"
    results = json.loads(path.read_text()) if args.only and path.is_file() else {}
    for name in args.only or SECTIONS:
        results[name] = SECTIONS[name]()
    args.out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: results[k] for k in args.only or SECTIONS}, indent=2))


if __name__ == "__main__":
    main()
