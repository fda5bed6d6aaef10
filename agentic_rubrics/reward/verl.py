"""The reward as RL frameworks call it: verl's custom reward function and its batched form.

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info=None)`` per response
(``custom_reward_function.path``/``name``), with ``custom_reward_function.reward_kwargs`` merged in as
keyword arguments; its batch reward manager calls ``compute_score(data_sources=, solution_strs=,
ground_truths=, extra_infos=)`` and takes a list back. Both read a float, or a dict whose ``"score"``
is the reward (its other keys are logged). TRL's reward functions return a list of floats where
``None`` means "no reward for this completion".

Settings come from the keyword arguments (the same for every row) and from ``extra_info`` (per row;
the keyword arguments win): ``instance_id`` (required), and where the rubric and the task are —
``run_folder`` (a finished run: its judge, policy, rubrics and tasks file) or ``rubrics_dir`` (with
``tasks_file`` and ``config``, a run's YAML settings file, or ``model``/``api_base`` for the LLM judge)
—, ``judge`` (``checks``: the deterministic checks alone, zero cost), ``timeout`` and ``max_retries``
(of each judge call), ``state_dir`` (the judge's response cache), ``abstain`` (the score verl trains on
where the reward is absent: every row is then a dict flagging it) and ``details`` (a dict instead of a
float). ``ground_truth`` and ``data_source`` are not read. The API key comes from
``AGENTIC_RUBRICS_API_KEY`` (never from a dataset row).
"""

from __future__ import annotations

import atexit
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.reward.result import Reward
from agentic_rubrics.reward.scorer import RewardScorer

SETTINGS = (
    "run_folder",
    "rubrics_dir",
    "tasks_file",
    "config",
    "judge",
    "model",
    "api_base",
    "state_dir",
    "timeout",
    "max_retries",
)
"""The settings that choose a scorer (one scorer, kept for the process, per distinct combination)."""

NUMBERS = ("timeout", "max_retries")
"""The settings that are numbers (the others are strings or paths)."""

_scorers: dict[tuple[Any, ...], RewardScorer] = {}
_lock = threading.Lock()
_registered: list[bool] = []


def extract_patch(solution_str: str) -> str:
    """The candidate patch in a response.

    A response that is a diff (starts with ``diff --git`` or ``--- ``, after white space) is the patch;
    otherwise the last fenced block (```diff, ```patch or bare ```) holding a diff; otherwise the text
    from the first line starting with ``diff --git``. A response without a diff is the empty patch
    (scored as the run scores an empty candidate: decision ``reject``). One pass over the lines.
    """
    head = solution_str.lstrip()
    if head.startswith(("diff --git ", "--- ")):
        return head
    lines = solution_str.splitlines(keepends=True)
    last: str | None = None
    block: list[str] | None = None
    first_diff: int | None = None
    for n, line in enumerate(lines):
        if line.startswith("```"):
            if block is None:
                block = []
            else:
                text = "".join(block)
                if _is_diff(block):
                    last = text
                block = None
            continue
        if block is not None:
            block.append(line)
        elif first_diff is None and line.startswith("diff --git "):
            first_diff = n
    if last is not None:
        return last
    if first_diff is not None:
        return "".join(lines[first_diff:])
    return ""


def _is_diff(lines: list[str]) -> bool:
    minus = False
    for line in lines:
        if line.startswith("diff --git "):
            return True
        if line.startswith("--- "):
            minus = True
        elif minus and line.startswith("+++ "):
            return True
    return False


def _setting(name: str, kwargs: dict[str, Any], extra: dict[str, Any]) -> Any:
    return kwargs[name] if name in kwargs else extra.get(name)


def _key(kwargs: dict[str, Any], extra: dict[str, Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for name in SETTINGS:
        value = _setting(name, kwargs, extra)
        if name in NUMBERS:
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise DataError(f"extra_info.{name}: expected a number, got {type(value).__name__}")
            out.append(value)
        elif value is not None and not isinstance(value, str | os.PathLike):
            raise DataError(f"extra_info.{name}: expected a string, got {type(value).__name__}")
        else:
            out.append(None if value is None else str(value))
    return tuple(out)


def _build(key: tuple[Any, ...]) -> RewardScorer:
    from agentic_rubrics.pipeline.config import load_config
    from agentic_rubrics.runfolder.tasks import load_tasks

    s = dict(zip(SETTINGS, key, strict=True))
    api_key = os.environ.get("AGENTIC_RUBRICS_API_KEY") or None
    state = Path(s["state_dir"]) if s["state_dir"] else None
    judge = s["judge"]
    if judge not in (None, "run", "checks"):
        raise DataError(f"judge: expected 'checks' or 'run', got {judge!r}")
    limits = {"timeout": s["timeout"], "max_retries": s["max_retries"]}
    if s["run_folder"]:
        return RewardScorer.from_run(
            Path(s["run_folder"]),
            judge="checks" if judge == "checks" else "run",
            state_dir=state,
            api_key=api_key,
            **limits,
        )
    if not s["rubrics_dir"]:
        raise DataError("extra_info: give run_folder, or rubrics_dir (with tasks_file)")
    overrides: dict[str, Any] = {}
    if s["model"] and judge != "checks":
        model = {"model": s["model"], "api_base": s["api_base"]}
        overrides["judge"] = {"kind": "llm", "model": {k: v for k, v in model.items() if v}}
    config = load_config(Path(s["config"]) if s["config"] else None, overrides)
    if judge == "checks":
        from agentic_rubrics.judge.judges import JudgeConfig

        config = config.model_copy(update={"judge": JudgeConfig()})
    tasks = load_tasks(Path(s["tasks_file"])) if s["tasks_file"] else None
    return RewardScorer(
        config,
        rubrics_dir=Path(s["rubrics_dir"]),
        tasks=tasks,
        state_dir=state,
        api_key=api_key,
        **limits,
    )


def scorer_for(kwargs: dict[str, Any], extra_info: Any) -> RewardScorer:
    """The process's scorer for these settings (made on first use, closed at exit)."""
    extra = _extra(extra_info)
    key = _key(kwargs, extra)
    with _lock:
        found = _scorers.get(key)
        if found is None:
            if not _scorers and not _registered:
                atexit.register(close_scorers)  # registered on first use: importing does nothing
                _registered.append(True)
            found = _scorers[key] = _build(key)
    return found


def _extra(extra_info: Any) -> dict[str, Any]:
    if extra_info is None:
        return {}
    if not isinstance(extra_info, dict):
        raise DataError(f"extra_info: expected a mapping, got {type(extra_info).__name__}")
    return extra_info


def _instance(kwargs: dict[str, Any], extra: dict[str, Any]) -> str:
    iid = _setting("instance_id", kwargs, extra)
    if not isinstance(iid, str) or not iid:
        raise DataError("extra_info.instance_id: expected the task's instance id (a string)")
    return iid


def _value(reward: Reward, kwargs: dict[str, Any], extra: dict[str, Any]) -> Any:
    default = _setting("abstain", kwargs, extra)
    if default is not None and (
        isinstance(default, bool)
        or not isinstance(default, int | float)
        or not math.isfinite(default)
    ):
        raise DataError(
            f"abstain: expected the score of an absent reward (a number), got {default!r}"
        )
    if default is None and not _setting("details", kwargs, extra):
        return reward.score  # S, or None: TRL takes None as "no reward" for the completion
    # verl reads a dict this way (volcengine/verl at b178a3c, verl/workers/reward_manager/naive.py
    # and batch.py): `if isinstance(score, dict): reward = score["score"]` goes into the reward
    # tensor, and every key is appended to reward_extra_info[key], which is logged and set on the
    # batch as np.array(values) — so every row carries the same keys; and no value is None, since
    # validation takes np.mean of every key whose first value is not a string
    # (verl/trainer/ppo/metric_utils.py, process_validation_metrics)
    absent = reward.score is None
    return {
        "score": default if absent else reward.score,
        "reward_absent": absent,
        "absent_reason": reward.abstained or "",
        "coverage": math.nan if reward.coverage is None else reward.coverage,
    }


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """verl's custom reward: S of the patch in ``solution_str`` for ``extra_info["instance_id"]``.

    Returns S (a float in [0, 1]), or ``None`` where the reward is absent (TRL's reward functions take
    ``None``): a judge call failed or did not answer within ``timeout``, no model-decided item has a
    verdict, the coverage is under the policy's minimum, no item has a verdict, unknown instance, no
    rubric (the reasons: :mod:`agentic_rubrics.reward.result`). With ``abstain`` (a number: verl puts
    every score in a tensor) or ``details``, a dict for every row: ``{"score", "reward_absent",
    "absent_reason", "coverage"}`` — ``score`` is ``abstain`` (``None`` without it) where
    ``reward_absent`` is true, and ``absent_reason`` the code (``""`` where the reward is present).

    Raises:
        DataError: no instance id, no rubric source, or a setting of the wrong type.
    """
    extra = _extra(extra_info)
    scorer = scorer_for(kwargs, extra)
    reward = scorer.score(_instance(kwargs, extra), extract_patch(str(solution_str)))
    return _value(reward, kwargs, extra)


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[Any]:
    """verl's batched reward (``reward_manager=batch``): :func:`compute_score` of every row, the rows
    of one scorer judged in one batch (one instance's patches together, instances at once)."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    if len(infos) != len(solution_strs):
        raise DataError(f"extra_infos: {len(infos)} rows for {len(solution_strs)} solution strings")
    extras = [_extra(e) for e in infos]
    groups: dict[int, tuple[RewardScorer, list[int]]] = {}
    for n, extra in enumerate(extras):
        scorer = scorer_for(kwargs, extra)
        groups.setdefault(id(scorer), (scorer, []))[1].append(n)
    out: list[Any] = [None] * len(extras)
    for scorer, rows in groups.values():
        pairs = [(_instance(kwargs, extras[n]), extract_patch(str(solution_strs[n]))) for n in rows]
        for n, reward in zip(rows, scorer.score_many(pairs), strict=True):
            out[n] = _value(reward, kwargs, extras[n])
    return out


def close_scorers() -> None:
    """Close every scorer this module made (at exit, or between tests)."""
    with _lock:
        scorers = list(_scorers.values())
        _scorers.clear()
    for scorer in scorers:
        scorer.close()
