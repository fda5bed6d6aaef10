"""The configuration of a run: every component's config in one object, hashed to guard resuming."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentic_rubrics.exceptions import ConfigError
from agentic_rubrics.explore import ExplorerConfig
from agentic_rubrics.judge import JudgeConfig
from agentic_rubrics.repos import RepoConfig
from agentic_rubrics.rerank import SELECTORS
from agentic_rubrics.scoring import DecisionPolicy

BASE_SELECTORS = ["offline", "rubric", "self_consistency", "random"]
MODEL_SELECTORS = ["rubric", "offline", "self_consistency", "random", "patch_classifier"]

# settings that change how fast or how far a run goes, never what a finished task's result is
_NOT_HASHED = {
    "task_concurrency", "trajectories", "max_cost_usd", "max_sandboxes", "executor", "ray_address",
    "workers",
}  # fmt: skip
_LLM_NOT_HASHED = {
    "timeout",
    "max_retries",
    "backoff_initial",
    "backoff_max",
    "concurrency",
    "processes",
}


class RunConfig(BaseModel):
    """The whole configuration of a run; its hash guards resuming."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    explorer: ExplorerConfig = Field(default_factory=ExplorerConfig)
    """How rubrics are written."""
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    """How candidates are judged."""
    policy: DecisionPolicy = Field(default_factory=DecisionPolicy)
    """Thresholds for decisions."""
    selectors: list[str] = Field(default_factory=lambda: list(BASE_SELECTORS))
    """Selectors compared in the report; the first one writes selections.jsonl. Without a model
    ``offline`` leads; with a judge model, ``rubric`` leads and ``patch_classifier`` joins."""
    rubrics_dir: str | None = None
    """Reuse ``DIR/<instance_id>/rubrics.yaml`` instead of exploring."""
    repos: RepoConfig = Field(default_factory=RepoConfig)
    """Where a task without ``repo_path`` gets its repository at ``base_commit`` (fetched, cached)."""
    seed: int = 0
    """Seed of the tie-break, of the item shuffles between repeats, and of the bootstrap."""
    max_k: int = Field(default=16, ge=1)
    """Largest K reported for Best@K."""
    bootstrap_resamples: int = Field(default=1000, ge=0)
    """Resamples of the 95% intervals (0 turns them off)."""
    max_cost_usd: float | None = Field(default=None, ge=0)
    """Stop starting model calls once this much is spent; what is left is ``missing: budget``."""
    task_concurrency: int = Field(default=4, ge=1)
    """Tasks explored and judged at the same time (does not change results)."""
    trajectories: bool = True
    """Write exploration trajectories to trajectories/ (does not change results)."""
    max_sandboxes: int = Field(default=4, ge=1)
    """Sandboxes open at the same time across the whole run (does not change results)."""
    executor: Literal["local", "ray"] = "local"
    """``local``: tasks run in this process; ``ray``: each task is a Ray task (``agentic-rubrics[ray]``)."""
    ray_address: str | None = None
    """The Ray cluster to join (``None``: start a local one)."""
    workers: int | None = Field(default=None, ge=1)
    """Ray tasks in flight at once (``None``: the cluster's CPUs)."""

    @model_validator(mode="before")
    @classmethod
    def _default_selectors(cls, data: Any) -> Any:
        if isinstance(data, dict) and "selectors" not in data:
            judge = data.get("judge") or {}
            kind = judge.get("kind") if isinstance(judge, dict) else getattr(judge, "kind", None)
            if kind == "llm":
                return {**data, "selectors": list(MODEL_SELECTORS)}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        unknown = [s for s in self.selectors if s not in SELECTORS]
        if unknown or not self.selectors or len(set(self.selectors)) != len(self.selectors):
            raise ValueError(
                f"selectors must be distinct names among {', '.join(SELECTORS)}; got {self.selectors}"
            )
        if self.judge.kind == "llm" and self.judge.model is None:
            raise ValueError("judge.kind 'llm' needs judge.model (or --judge-model / --model)")
        if "patch_classifier" in self.selectors and self.judge.model is None:
            raise ValueError("the patch_classifier selector needs a judge model")
        return self

    def content_hash(self) -> str:
        """Hash of every setting that can change a finished task's result."""
        data = self.model_dump(mode="json", exclude=_NOT_HASHED)
        # where a repository comes from does not change a result (its commit is verified); whether
        # repositories are fetched at all does
        data["repos"] = {"fetch": self.repos.url_template is not None}
        for section in ("judge", "explorer"):
            part = data.get(section) or {}
            part.pop("concurrency", None)
            if isinstance(part.get("model"), dict):
                for key in _LLM_NOT_HASHED:
                    part["model"].pop(key, None)
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        elif isinstance(value, dict):
            out[key] = _merge({}, value)
        else:
            out[key] = value
    return out


def load_config(path: Path | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """A RunConfig from a YAML file (optional) with overrides (nested dicts; ``None`` = unset) on top.

    Raises:
        ConfigError: the file is unreadable or a field is unknown or invalid (named with the file).
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping of settings")
        data = loaded
    data = _merge(data, overrides or {})
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "configuration"
        raise ConfigError(f"{path or 'configuration'}: {where}: {err['msg']}") from exc
