"""The options that say what a run measures candidates with (``--verifiers``) and give a verifier's
artifacts or settings: part of :class:`~agentic_rubrics.cli.options.RunOptions`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from agentic_rubrics.cli.option_sets import Sets, as_text, env_specs, names, test_docker


@dataclass
class VerifierOptions:
    """The verifiers' options (see the module's docstring)."""

    rubrics: Annotated[
        Path | None,
        typer.Option("--rubrics", help="Reuse DIR/<instance_id>/rubrics.yaml."),
        Sets("rubrics_dir", convert=as_text),
    ] = None
    verifiers: Annotated[
        str | None,
        typer.Option(
            "--verifiers",
            help="Comma-separated verifiers, each an artifact written once per task and graded per"
            " candidate: rubric (judged), tests (a test script, executed), similarity (an agent's"
            " proxy patch; a judge rates each candidate's closeness to it, 1-5).",
        ),
        Sets("verifiers", convert=names),
    ] = None
    tests: Annotated[
        Path | None,
        typer.Option(
            "--tests", help="Reuse DIR/<instance_id>/ (its test files) as the test script."
        ),
        Sets("tests_dir", convert=as_text),
    ] = None
    test_reruns: Annotated[
        int | None,
        typer.Option(
            "--test-reruns",
            min=0,
            max=10,
            help="Extra runs of each candidate's tests; a test whose outcome flips is excluded.",
        ),
        Sets("tests.reruns"),
    ] = None
    test_python: Annotated[
        str | None,
        typer.Option(
            "--test-python",
            help="The Python (with pytest) the tests verifier runs the tests with; default"
            " /usr/bin/python3.",
        ),
        Sets("tests.python"),
    ] = None
    test_env_spec: Annotated[
        Path | None,
        typer.Option(
            "--test-env-spec",
            help="JSON specs by owner/name[@version] or * (env-check's --env-spec): the tests run"
            " in a venv built once per (repository, version), cached, read-only in the sandbox.",
        ),
        Sets("tests.env_specs", convert=env_specs),
    ] = None
    test_docker: Annotated[
        str | None,
        typer.Option(
            "--test-docker",
            help="Run the tests verifier in docker, a container per run from the task's image:"
            " swebench (SWE-bench's instance images), local (those build-env made here) or a JSON"
            " file of swerex-docker settings.",
        ),
        Sets("tests.docker", convert=test_docker),
    ] = None
    test_env_cache: Annotated[
        Path | None,
        typer.Option("--test-env-cache", help="Where built venvs are kept."),
        Sets("tests.env_cache", convert=as_text),
    ] = None
    proxies: Annotated[
        Path | None,
        typer.Option("--proxies", help="Reuse DIR/<instance_id>/proxy.diff as the proxy patch."),
        Sets("proxies_dir", convert=as_text),
    ] = None
