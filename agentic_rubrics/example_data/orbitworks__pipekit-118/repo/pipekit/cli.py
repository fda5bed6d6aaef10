"""Command line: ``pipekit plan|run module:pipeline``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pipekit.errors import PipekitError
from pipekit.pipeline import Pipeline
from pipekit.utils import format_table, load_object


def format_plan(pipeline: Pipeline, order: Sequence[str]) -> str:
    """One numbered line per step: position, name, priority (when not 0) and description."""
    rows = []
    for position, name in enumerate(order, start=1):
        step = pipeline[name]
        prio = f"p={step.priority}" if step.priority else ""
        rows.append([f"{position}.", name, prio, step.description])
    return format_table(rows)


def _load(spec: str) -> Pipeline:
    obj = load_object(spec)
    if not isinstance(obj, Pipeline):
        raise PipekitError(f"{spec} is a {type(obj).__name__}, not a Pipeline")
    return obj


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pipekit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("plan", "run"):
        cmd = sub.add_parser(command)
        cmd.add_argument("pipeline", help="module:attribute of a Pipeline")
        cmd.add_argument("targets", nargs="*", help="only these steps and their requirements")
        if command == "plan":
            cmd.add_argument("--tag", action="append", dest="tags", help="list only tagged steps")
        else:
            cmd.add_argument("--keep-going", action="store_true", help="do not stop at a failure")
    args = parser.parse_args(argv)
    try:
        pipeline = _load(args.pipeline)
        targets = args.targets or None
        if args.command == "plan":
            print(format_plan(pipeline, pipeline.plan(targets, tags=args.tags)))
            return 0
        outcome = pipeline.run(targets, fail_fast=not args.keep_going)
    except PipekitError as exc:
        print(f"pipekit: {exc}", file=sys.stderr)
        return 1
    for name in outcome.order:
        status = "FAILED" if name in outcome.failed else "ok"
        print(f"{status:6} {name}")
    for name in outcome.skipped:
        print(f"{'skip':6} {name}")
    return 0 if outcome.ok else 1
