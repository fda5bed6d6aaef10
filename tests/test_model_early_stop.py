"""A model that cannot be used as configured stops the run early, quoting the provider and naming the
setting to change, before the rest of the phase is spent; the command exits non-zero.

Before: every call was refused in turn, every verdict ended ``missing: provider_error``, every
candidate ``inconclusive``, and the run exited 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.exceptions import ModelError
from agentic_rubrics.llm.errors import EARLY_STOP_AFTER
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.testing import LoopbackServer, Reply, requested_ids

from .test_llm_pipeline import by_candidate, cfg, make_inputs

# what OpenAI answers a reasoning model sent a temperature (here behind a proxy litellm cannot place)
UNSUPPORTED = (
    "Unsupported value: 'temperature' does not support 0.0 with this model. Only the default (1)"
    " value is supported."
)


def refuse_temperature(body: dict[str, Any], n: int) -> Reply:
    if "temperature" in body:
        return Reply(status=400, error=UNSUPPORTED)
    return Reply(content=json.dumps(dict.fromkeys(requested_ids(body), 1)))


def test_refused_parameters_stop_the_run_before_the_rest(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=6)  # 6 tasks x 3 distinct patches = 18 calls
    with LoopbackServer(refuse_temperature) as srv:
        config = cfg(srv, rubrics, model={"concurrency": 2})
        with pytest.raises(ModelError) as raised:
            run(tasks, tmp_path / "out", config)
        # the calls already in flight when the first refusal came back, and no other
        assert 1 <= len(srv.requests) <= 2
    message = str(raised.value)
    assert UNSUPPORTED in message  # the provider's own words
    assert "judge.model.temperature" in message  # the setting to change
    assert "judge" in message and "openai/judge-under-test" in message


def test_without_a_temperature_the_same_model_judges(tmp_path: Path) -> None:
    """The setting the message names is the fix."""
    tasks, rubrics = make_inputs(tmp_path, n_tasks=1)
    settings = tmp_path / "settings.yaml"
    settings.write_text("judge:\n  model:\n    temperature: null\n")
    with LoopbackServer(refuse_temperature) as srv:
        model = {"model": "openai/judge-under-test", "api_base": srv.url, "timeout": 5.0}
        overrides = {"judge": {"kind": "llm", "model": model}, "rubrics_dir": str(rubrics)}
        fixed = load_config(settings, {**overrides, "selectors": ["rubric"]})
        assert fixed.judge.model is not None and fixed.judge.model.temperature is None
        report = run(tasks, tmp_path / "out", fixed)
    assert report is not None
    got = by_candidate(tmp_path / "out")
    assert got[("demo__task-0", "c3")]["SA1"] == ("judged", 1, None)


def test_the_command_exits_non_zero_with_the_message(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=3)
    with LoopbackServer(refuse_temperature) as srv:
        result = CliRunner().invoke(
            app,
            ["judge", "--tasks", str(tasks), "--out", str(tmp_path / "out"),
             "--rubrics", str(rubrics), "--judge-model", "openai/proxy-reasoner",
             "--api-base", srv.url, "--llm-concurrency", "1", "--quiet"],
        )  # fmt: skip
        assert len(srv.requests) == 1
    assert result.exit_code != 0
    assert UNSUPPORTED in result.output and "judge.model.temperature" in result.output


def test_requests_refused_for_any_reason_stop_after_a_few(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=6)
    with LoopbackServer(lambda b, n: Reply(status=400, error="Invalid request.")) as srv:
        with pytest.raises(ModelError, match=f"{EARLY_STOP_AFTER} requests in a row"):
            run(tasks, tmp_path / "out", cfg(srv, rubrics, model={"concurrency": 1}))
        assert len(srv.requests) == EARLY_STOP_AFTER


def test_after_an_answer_a_refusal_is_one_calls_failure(tmp_path: Path) -> None:
    """Once the model has answered in a phase, its parameters are known to work: a later refusal is
    about that one request (its content), the verdicts missing and the run going on."""

    def script(body: dict[str, Any], n: int) -> Reply:
        if n == 0:
            return Reply(content=json.dumps(dict.fromkeys(requested_ids(body), 1)))
        return Reply(status=400, error="Unsupported parameter in this request.")

    tasks, rubrics = make_inputs(tmp_path, n_tasks=2)
    with LoopbackServer(script) as srv:
        report = run(
            tasks, tmp_path / "out", cfg(srv, rubrics, model={"concurrency": 1}, task_concurrency=1)
        )
    assert report is not None
    reasons = {r for v in by_candidate(tmp_path / "out").values() for _, _, r in v.values()}
    assert "provider_error" in reasons and len(srv.requests) > EARLY_STOP_AFTER
