"""A reward that does not know says so: a judge call that fails, stalls past the configured timeout or
answers nothing usable leaves the reward absent with its reason — ``None`` for TRL, a flagged default
for verl, ``"S": null`` over HTTP — never 0 and never the checks' value in disguise; the checks judge
is unchanged."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.reward import RewardScorer, RewardServer, close_scorers, compute_score
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.testing import LoopbackServer, Reply, requested_ids

from .test_llm_pipeline import GOOD, cfg, make_inputs
from .test_reward import _post, _score_body

FAST = {"max_retries": 0, "backoff_initial": 0.01}


@pytest.fixture(autouse=True)
def _fresh_scorers() -> Any:
    yield
    close_scorers()


def _scorer(tmp_path: Path, server: LoopbackServer, **judge: Any) -> RewardScorer:
    tasks_file, rubrics = make_inputs(tmp_path)
    config = cfg(server, rubrics, model=FAST, judge=judge)
    return RewardScorer(config, rubrics_dir=rubrics, tasks=load_tasks(tasks_file))


def _answer(values: dict[str, Any]) -> Any:
    """A judge that answers ``values[id]`` for each requested id it knows (others left out)."""

    def script(body: dict[str, Any], _: int) -> Reply:
        asked = requested_ids(body)
        return Reply(content=json.dumps({i: values[i] for i in asked if i in values}))

    return script


def test_a_failing_judge_gives_an_absent_reward_not_the_checks_value(tmp_path: Path) -> None:
    with LoopbackServer(lambda b, n: Reply(status=500)) as model, _scorer(tmp_path, model) as s:
        reward = s.score("demo__task-0", GOOD)
    # FC1's check decided (1, weight 3): S over the checked items alone would be 1.0
    by_id = {v.item_id: v for v in reward.verdicts}
    assert by_id["FC1"].status == "checked" and by_id["FC1"].value == 1
    assert reward.score is None and reward.abstained == "judge_failed:provider_error"
    assert reward.missing == {"provider_error": 3}


def test_one_failed_call_of_several_leaves_the_reward_absent(tmp_path: Path) -> None:
    """One item per call; only SA2's call fails: S over the others would rest on a part."""

    def script(body: dict[str, Any], n: int) -> Reply:
        if requested_ids(body) == ["SA2"]:
            return Reply(status=503)
        return _answer({"SA1": 1, "RT1": 1})(body, n)

    with LoopbackServer(script) as model, _scorer(tmp_path, model, items_per_call=1) as s:
        reward = s.score("demo__task-0", GOOD)
    assert [v.status for v in reward.verdicts] == ["checked", "judged", "missing", "judged"]
    assert reward.score is None and reward.abstained == "judge_failed:provider_error"


def _score_with(tmp_path: Path, values: dict[str, Any]) -> Any:
    with LoopbackServer(_answer(values)) as model, _scorer(tmp_path, model) as scorer:
        return scorer.score("demo__task-0", GOOD)


def test_answers_without_a_usable_verdict_or_with_low_coverage_are_absent(tmp_path: Path) -> None:
    # every model-decided item unusable: the checks' value would pose as the reward
    reward = _score_with(tmp_path / "a", dict.fromkeys(("SA1", "SA2", "RT1"), "maybe"))
    assert reward.score is None and reward.abstained == "judge_failed:invalid_value"
    # RT1 judged (weight 1), SA1 and SA2 not (5 of 9): 4/9 known, under the policy's 0.5
    low = _score_with(tmp_path / "b", {"SA1": "maybe", "SA2": "?", "RT1": 1})
    assert low.score is None and low.abstained == "low_coverage" and low.decision == "inconclusive"
    # SA2 judged too: 6/9 known, a reward over the items with a verdict
    ok = _score_with(tmp_path / "c", {"SA1": "maybe", "SA2": 0, "RT1": 1})
    assert ok.abstained is None and ok.score == pytest.approx((3 * 1 + 2 * 0 + 1 * 1) / 6)


def test_an_empty_patch_keeps_its_reward(tmp_path: Path) -> None:
    """Its model items are missing by design (never sent): scored as the run scores it."""
    with LoopbackServer(lambda b, n: Reply(status=500)) as model, _scorer(tmp_path, model) as s:
        reward = s.score("demo__task-0", "")
    assert len(model.requests) == 0
    assert reward.abstained is None and reward.score == 0.0 and reward.decision == "reject"


def _settings(tmp_path: Path, server: LoopbackServer) -> dict[str, Any]:
    tasks_file, rubrics = make_inputs(tmp_path)
    return {
        "rubrics_dir": str(rubrics),
        "tasks_file": str(tasks_file),
        "model": "openai/judge-under-test",
        "api_base": server.url,
        "instance_id": "demo__task-0",
        "state_dir": str(tmp_path / "state"),
    }


def _within(seconds: float, call: Any) -> tuple[Any, float]:
    """``call()``'s value and its wall time; fails (instead of hanging) past ``seconds``."""
    got: list[Any] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: got.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"no answer within {seconds} s"
    return got[0], time.monotonic() - started


def _stalls_after_the_first(body: dict[str, Any], n: int) -> Reply:
    """Answers the first request (the scorer is built and the model library loaded: no call's time),
    then never answers."""
    return _answer({"SA1": 1, "SA2": 1, "RT1": 1})(body, n) if n == 0 else Reply(action="hang")


def test_a_stalled_model_gives_an_absent_reward_within_the_timeout(tmp_path: Path) -> None:
    with LoopbackServer(_stalls_after_the_first) as model:
        info = _settings(tmp_path, model)
        one = {"timeout": 1.5, "max_retries": 0}
        assert compute_score("swe", GOOD, None, info, **one) == 1.0
        stalled = GOOD.replace("x = 2", "x = 3")
        got, took = _within(60, lambda: compute_score("swe", stalled, None, info, **one))
        assert got is None
        # retries off: one attempt, cut at the timeout
        assert 1.5 <= took < 10, took
        flagged, took = _within(
            60,
            lambda: compute_score(
                "swe", GOOD.replace("x = 2", "x = 4"), None, info, **one, abstain=-1.0, details=True
            ),
        )
    assert 1.5 <= took < 10, took
    assert flagged == {
        "score": -1.0,
        "reward_absent": True,
        "absent_reason": "judge_failed:provider_error",
        "coverage": pytest.approx(3 / 9),
    }


def test_a_failing_model_gives_a_flagged_default_for_verl(tmp_path: Path) -> None:
    with LoopbackServer(lambda b, n: Reply(status=500, error="overloaded")) as model:
        info = {**_settings(tmp_path, model), "max_retries": 0}
        assert compute_score("swe", GOOD, None, info) is None  # TRL: no reward
        flagged = compute_score("swe", GOOD, None, info, abstain=0.0)
        present = compute_score("swe", "", None, info, abstain=0.0)
    assert flagged["reward_absent"] is True and flagged["score"] == 0.0
    assert flagged["absent_reason"] == "judge_failed:provider_error"
    # every row has the same keys (verl stacks each key over the batch), none of them None
    assert present == {"score": 0.0, "reward_absent": False, "absent_reason": "", "coverage": 1 / 3}
    unknown = compute_score("swe", GOOD, None, {**info, "instance_id": "nobody"}, abstain=0.5)
    assert unknown["absent_reason"] == "unknown_instance" and math.isnan(unknown["coverage"])


def test_bad_reward_settings_are_named(tmp_path: Path) -> None:
    with LoopbackServer() as model:
        info = _settings(tmp_path, model)
        for key, value, words in [
            ("timeout", "3", "extra_info.timeout: expected a number, got str"),
            ("timeout", 0, "timeout: expected a positive number of seconds, got 0"),
            ("timeout", math.inf, "timeout: expected a positive number of seconds"),
            ("max_retries", 1.5, "max_retries: expected a whole number from 0 to 20, got 1.5"),
            ("abstain", "0", "abstain: expected the score of an absent reward (a number)"),
            ("abstain", math.nan, "abstain: expected the score of an absent reward"),
        ]:
            with pytest.raises(DataError, match=words.replace("(", r"\(").replace(")", r"\)")):
                compute_score("swe", GOOD, None, {**info, key: value})


def test_the_checks_judge_is_unchanged(tmp_path: Path) -> None:
    """Items without a check are missing by design there: S over the checks, whatever coverage."""
    tasks_file, rubrics = make_inputs(tmp_path)
    config = load_config(None, {"rubrics_dir": str(rubrics)})
    with RewardScorer(config, rubrics_dir=rubrics, tasks=load_tasks(tasks_file)) as scorer:
        reward = scorer.score("demo__task-0", GOOD)
        other = scorer.score("demo__task-0", GOOD.replace("core.py", "util.py"))
    assert reward.score == 1.0 and reward.coverage == pytest.approx(3 / 9)
    assert reward.abstained is None and reward.missing == {"not_configured": 3}
    assert other.score == 0.0 and other.abstained is None


def test_the_server_answers_an_absent_reward_as_null_with_its_reason(tmp_path: Path) -> None:
    with LoopbackServer(_stalls_after_the_first) as model:
        tasks_file, rubrics = make_inputs(tmp_path)
        config = cfg(model, rubrics, model=FAST)
        scorer = RewardScorer(
            config, rubrics_dir=rubrics, tasks=load_tasks(tasks_file), timeout=1.0
        )
        with scorer, RewardServer(scorer) as server:
            assert _post(server.url, _score_body())[1]["S"] == 1.0
            stalled = _score_body(patch=GOOD.replace("x = 2", "x = 3"))
            (status, body, _), took = _within(60, lambda: _post(server.url, stalled))
    assert 1.0 <= took < 10, took
    assert status == 200 and body["S"] is None
    assert body["abstained"] == "judge_failed:provider_error"
    assert body["verdicts"][0]["status"] == "checked" and body["verdicts"][0]["value"] == 1


def test_serve_reward_hands_its_timeout_to_the_judge_of_a_finished_run(tmp_path: Path) -> None:
    from agentic_rubrics.cli.options import RunOptions
    from agentic_rubrics.cli.reward import _open_scorer
    from agentic_rubrics.pipeline.runner import run

    with LoopbackServer(_answer({"SA1": 1, "SA2": 1, "RT1": 1})) as model:
        tasks_file, rubrics = make_inputs(tmp_path)
        run(tasks_file, tmp_path / "out", cfg(model, rubrics, model=FAST))
        for given, expected in ((None, 30.0), (2.5, 2.5)):
            scorer = _open_scorer(RunOptions(timeout=given), None, tmp_path / "out", False, None)
            with scorer:
                judge = scorer.config.judge.model
                assert judge is not None and judge.timeout == expected
                assert scorer.score("demo__task-0", GOOD).score == 1.0
