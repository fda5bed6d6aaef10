"""The ``agentic-rubrics`` command. Each command builds its configuration and calls one library function.

Heavy modules (litellm, swe-rex, matplotlib, scikit-learn) are imported inside the commands that
need them, so ``agentic-rubrics --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="agentic-rubrics",
    help="Pick the right patch out of K candidates without running them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="rubrics.yaml files to check.")],
    strict: Annotated[bool, typer.Option(help="Treat lint warnings as errors.")] = False,
) -> None:
    """Check rubrics.yaml files: YAML, schema, checks (errors) and lint (warnings). Exit 1 on errors."""
    from agentic_rubrics.exceptions import RubricError
    from agentic_rubrics.rubric import load_rubric

    errors = warnings = 0
    for path in files:
        try:
            rubric, lint_problems = load_rubric(path)
        except RubricError as exc:
            for p in exc.problems:
                typer.echo(str(p))
            errors += len(exc.problems)
            continue
        for p in lint_problems:
            typer.echo(str(p))
        warnings += len(lint_problems)
        n = sum(1 for _ in rubric.items())
        typer.echo(f"{path}: ok ({n} items, {len(lint_problems)} warnings)")
    typer.echo(f"{len(files)} file(s): {errors} error(s), {warnings} warning(s)")
    if errors or (strict and warnings):
        raise typer.Exit(1)


@app.command()
def schema(
    out: Annotated[Path | None, typer.Option(help="Write to this file instead of stdout.")] = None,
) -> None:
    """Print the JSON Schema of rubrics.yaml (for editors' YAML language servers)."""
    from agentic_rubrics.data import atomic_write_text
    from agentic_rubrics.rubric import json_schema

    text = json.dumps(json_schema(), indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        atomic_write_text(out, text)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
