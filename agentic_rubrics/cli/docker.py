"""``agentic-rubrics clean-containers`` and ``agentic-rubrics build-env``: the docker side of the
command line (:mod:`agentic_rubrics.sandbox.docker_cli`, :mod:`agentic_rubrics.sandbox.docker_images`).

``build-env`` exits 0 when it went through every instance, whatever each gave (an instance whose image
could not be built is a row with ``env_build_failed``, not a failure); 2 on bad input; 1 when docker is
not there at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agentic_rubrics.cli.exit import EXIT_FAILED, failed

SCHEMA = "agentic-rubrics/build-env/1"


def clean_containers(
    everything: Annotated[
        bool,
        typer.Option(
            "--all", help="Remove every labelled container, also those of processes still running."
        ),
    ] = False,
) -> None:
    """Remove the containers, networks and prepared images (label agentic_rubrics) that runs which
    ended without removing them left behind (their process is gone: killed with SIGKILL, or the
    machine restarted)."""
    from agentic_rubrics.sandbox.docker_cli import DockerError, clean

    try:
        containers, networks, problems = clean(everything=everything)
    except DockerError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_FAILED) from exc
    for problem in problems:
        typer.echo(f"warning: {problem}", err=True)
    typer.echo(f"removed {len(containers)} container(s), {len(networks)} network(s)")
    if problems:
        raise typer.Exit(EXIT_FAILED)


def build_env(
    dataset: Annotated[
        Path, typer.Argument(help="SWE-bench rows (JSON/JSONL[.gz]) or a candidates file.")
    ],
    env_spec: Annotated[
        Path,
        typer.Option(
            "--env-spec",
            help='JSON: {"owner/name@version" | "owner/name" | "*": {requirements: [...],'
            ' install_tree: true, debian: "bookworm" | "bullseye"}}.',
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="The JSON report to write.")],
    instances: Annotated[
        str | None, typer.Option("--instances", help="Comma-separated instance ids.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N.")] = None,
    repo_url: Annotated[
        str, typer.Option("--repo-url", help="Clone URL template ({repo}, {owner}, {name}).")
    ] = "https://github.com/{repo}.git",
    repo_cache: Annotated[
        Path | None, typer.Option("--repo-cache", help="Folder of fetched repositories.")
    ] = None,
    mirror: Annotated[
        str | None,
        typer.Option("--mirror", help="Debian mirror for the base images (default: apt's)."),
    ] = None,
) -> None:
    """Build one docker image per instance in SWE-bench's layout (the repository at its base commit
    in /testbed, the spec's requirements installed), from base images made from the Debian archive;
    cached by a hash of (base, spec, commit). Writes the swerex-docker configuration that runs them
    beside the report (<out>.swerex.json, for env-check --swerex)."""
    from agentic_rubrics.cli.envcheck import pick_instances
    from agentic_rubrics.datasets.repos import RepoCache
    from agentic_rubrics.datasets.swebench_tests import load_tested_instances
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.sandbox.testenv import load_specs

    try:
        chosen = pick_instances(load_tested_instances(dataset), instances, limit)
        specs = load_specs(env_spec)
    except AgenticRubricsError as exc:
        raise failed(exc) from exc
    repos = RepoCache(repo_cache, repo_url)
    rows = [_build_one(instance, specs, repos, mirror) for instance in chosen]
    _write(rows, out)


def _build_one(
    instance: Any, specs: dict[str, Any], repos: Any, mirror: str | None
) -> dict[str, Any]:
    import time

    from agentic_rubrics.exceptions import RepoError
    from agentic_rubrics.sandbox.docker_cli import DockerError
    from agentic_rubrics.sandbox.docker_images import ensure_env_image
    from agentic_rubrics.sandbox.swerex import swebench_image_id
    from agentic_rubrics.sandbox.swerex_docker import LOCAL_IMAGE

    start = time.perf_counter()
    row: dict[str, Any] = {"instance_id": instance.instance_id, "repo": instance.repo}
    row |= {"version": instance.version, "image": None, "built": False, "reason": "ok"}
    spec = next(
        (
            specs[k]
            for k in (f"{instance.repo}@{instance.version}", instance.repo, "*")
            if k in specs
        ),
        None,
    )
    if spec is None:
        row["reason"], row["detail"] = "no_spec", "the spec file has no entry for it"
        return row
    name = LOCAL_IMAGE.format(swebench_id=swebench_image_id(instance.instance_id))
    try:
        tree = repos.checkout(instance.repo, instance.base_commit).path
        row["image"], row["built"] = ensure_env_image(
            name,
            spec,
            tree,
            repo=instance.repo,
            version=instance.version,
            commit=instance.base_commit,
            mirror=mirror,
        )
    except RepoError as exc:
        row["reason"], row["detail"] = "no_repository", str(exc)[:300]
    except DockerError as exc:
        row["reason"], row["detail"] = exc.reason, str(exc)[-600:]
    row["seconds"] = round(time.perf_counter() - start, 2)
    detail = " ".join(str(row.get("detail", "")).split())[:100]
    typer.echo(
        f"{instance.instance_id}: {row['reason']} {row['image'] or ''} {detail}".rstrip(), err=True
    )
    return row


def _write(rows: list[dict[str, Any]], out: Path) -> None:
    from collections import Counter

    from agentic_rubrics.runfolder.files import atomic_write_json
    from agentic_rubrics.sandbox.swerex_docker import LOCAL_IMAGE

    counts = Counter(r["reason"] for r in rows)
    if counts.get("docker_unavailable") == len(rows) and rows:
        typer.echo(f"error: {rows[0].get('detail', 'docker is not available')}", err=True)
        raise typer.Exit(EXIT_FAILED)
    report = {"schema": SCHEMA, "instances": len(rows), "counts": dict(sorted(counts.items()))}
    atomic_write_json(out, {**report, "rows": rows})
    sandbox = {"type": "swerex-docker", "image": LOCAL_IMAGE, "conda_env": None, "pull": "never"}
    config = out.with_name(out.name.removesuffix(".json") + ".swerex.json")
    config.write_text(json.dumps(sandbox, indent=2) + "\n", encoding="utf-8")
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    typer.echo(f"{counts.get('ok', 0)} of {len(rows)} image(s) ready ({summary}); {out}; {config}")
