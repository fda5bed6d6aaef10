"""``agentic-rubrics env-check``: whether this machine can run each SWE-bench instance's own tests
(see :mod:`agentic_rubrics.pipeline.envcheck`), before a single model call is paid for.

Exits 0 when it checked every instance, whatever they say (an instance that cannot run its tests is
an answer, not a failure); 2 on bad input (a dataset, an option, a spec file); 1 when it could not run
at all (no sandbox, no interpreter).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentic_rubrics.cli.exit import EXIT_FAILED, failed

if TYPE_CHECKING:
    from agentic_rubrics.datasets.swebench_tests import TestedInstance
    from agentic_rubrics.pipeline.envcheck import CheckSite


def _specs(path: Path | None) -> dict[str, Any]:
    from agentic_rubrics.sandbox.testenv import load_specs

    return load_specs(path) if path is not None else {}


def _swerex(text: str | None) -> Any:
    from pydantic import TypeAdapter, ValidationError

    from agentic_rubrics.exceptions import ConfigError
    from agentic_rubrics.runfolder.files import read_json
    from agentic_rubrics.sandbox import SandboxConfig
    from agentic_rubrics.sandbox.swerex import SweRexConfig

    if text is None:
        return None
    raw = read_json(Path(text), ConfigError) if text.endswith(".json") else text
    try:
        config = TypeAdapter(SandboxConfig).validate_python(
            raw if isinstance(raw, dict) else {"type": raw}
        )
    except ValidationError as exc:
        raise ConfigError(f"--swerex {text}: {exc}") from None
    if not isinstance(config, SweRexConfig):
        raise ConfigError(f"--swerex {text}: not a swerex deployment ({config.kind})")
    return config


ApproximateTrees = Annotated[
    str,
    typer.Option(
        "--approximate-trees",
        help="Where a repository too big to mirror (Django) is not to be had: its release sdist"
        " from the index pip uses, as an approximate tree marked so (nearest: the version's first"
        " release with the instance's patches taken out, else the release before it; first; last;"
        " previous; none: off).",
    ),
]
"""``--approximate-trees``: :mod:`agentic_rubrics.datasets.sdist_trees`'s rule, or ``none``."""


def pick_instances(
    all_instances: list[TestedInstance], ids: str | None, limit: int | None
) -> list[Any]:
    from agentic_rubrics.exceptions import ConfigError

    chosen = all_instances
    if ids:
        wanted = [x.strip() for x in ids.split(",") if x.strip()]
        by_id = {i.instance_id: i for i in all_instances}
        unknown = [w for w in wanted if w not in by_id]
        if unknown:
            raise ConfigError(f"--instances: not in the dataset: {', '.join(unknown[:5])}")
        chosen = [by_id[w] for w in wanted]
    return chosen[:limit] if limit is not None else chosen


def env_check(
    dataset: Annotated[
        Path, typer.Argument(help="SWE-bench rows (JSON/JSONL[.gz]) or a candidates file.")
    ],
    out: Annotated[Path, typer.Option("--out", help="The JSON report to write.")],
    instances: Annotated[
        str | None, typer.Option("--instances", help="Comma-separated instance ids.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N.")] = None,
    repo_url: Annotated[
        str,
        typer.Option("--repo-url", help="Clone URL template ({repo}, {owner}, {name}); none: off."),
    ] = "https://github.com/{repo}.git",
    repo_cache: Annotated[
        Path | None, typer.Option("--repo-cache", help="Folder of fetched repositories.")
    ] = None,
    test_python: Annotated[
        str | None,
        typer.Option(
            "--test-python",
            help="The interpreter tests run with (default: /usr/bin/python3; on a SWE-ReX"
            " deployment, python from its PATH: the testbed environment in SWE-bench's images).",
        ),
    ] = None,
    env_spec: Annotated[
        Path | None,
        typer.Option(
            "--env-spec",
            help='JSON: {"owner/name@version" | "owner/name" | "*": {requirements: [...],'
            " install_tree: true}}; a venv built once per (repository, version), cached.",
        ),
    ] = None,
    env_cache: Annotated[
        Path | None, typer.Option("--env-cache", help="Where built venvs are kept.")
    ] = None,
    swerex: Annotated[
        str | None,
        typer.Option(
            "--swerex",
            help="Run on a SWE-ReX deployment: swerex-docker (SWE-bench's instance images),"
            " swerex-local, or a JSON file with any swerex sandbox configuration.",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per run.", min=1)] = 300.0,
    approximate_trees: ApproximateTrees = "nearest",
) -> None:
    """Run each instance's FAIL_TO_PASS with the gold patch and with none: can it run here, why not."""
    from agentic_rubrics.datasets.swebench_tests import load_tested_instances
    from agentic_rubrics.exceptions import AgenticRubricsError

    try:
        chosen = pick_instances(load_tested_instances(dataset), instances, limit)
        deployment = _swerex(swerex)
        site = _site(test_python, _specs(env_spec), env_cache, repo_cache, deployment, timeout)
        trees = _trees(repo_url, repo_cache, deployment, approximate_trees)
    except AgenticRubricsError as exc:
        raise failed(exc) from exc
    _check(chosen, trees, site, out)


def _trees(url: str, cache: Path | None, deployment: Any, approximate: str) -> Any:
    """Each instance's tree (:func:`~agentic_rubrics.datasets.sdist_trees.instance_trees`); none
    fetched for SWE-bench's images, which hold the repository."""
    from agentic_rubrics.datasets.sdist_trees import instance_trees

    fetch = url != "none" and (deployment is None or deployment.needs_repo)
    return instance_trees(url if fetch else None, cache, approximate)


def _site(
    python: str | None,
    specs: dict[str, Any],
    env_cache: Path | None,
    repo_cache: Path | None,
    swerex: Any,
    timeout: float,
) -> CheckSite:
    from agentic_rubrics.datasets.repos_config import default_cache_dir
    from agentic_rubrics.pipeline.envcheck import CheckSite
    from agentic_rubrics.sandbox.testrun import ExecLimits

    if env_cache is None:
        env_cache = (repo_cache or default_cache_dir()).parent / "envs"
    python = python or ("python" if swerex is not None else "/usr/bin/python3")
    limits = ExecLimits(timeout_s=timeout, excerpt_chars=6000)
    return CheckSite(python, specs, env_cache, swerex, limits)


def _check(chosen: list[Any], trees: Any, site: CheckSite, out: Path) -> None:
    from agentic_rubrics.exceptions import SandboxError
    from agentic_rubrics.pipeline.envcheck import check_instances
    from agentic_rubrics.pipeline.envcheck_report import report, table
    from agentic_rubrics.runfolder.files import atomic_write_json

    done: list[Any] = []

    def progress(row: Any) -> None:
        # the report so far, after every instance: a long check stopped midway keeps what it found
        done.append(row)
        atomic_write_json(out, {**report(done, site), "complete": False})
        detail = " ".join(row.detail.split())[:100]
        typer.echo(f"{row.instance_id}: {row.reason} {detail}".rstrip(), err=True)

    try:
        rows = check_instances(chosen, trees, site, progress=progress)
    except SandboxError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_FAILED) from exc
    result = {**report(rows, site), "complete": True}
    atomic_write_json(out, result)
    typer.echo(table(rows))
    counts = ", ".join(f"{k} {v}" for k, v in result["counts"].items())
    typer.echo(f"{result['runnable']} of {len(rows)} instance(s) runnable ({counts}); {out}")
