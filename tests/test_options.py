"""One declaration per option: RunConfig's fields say what they change and whether an option sets them;
the options say which settings they set; the hash, the resume refusal and the CLI read those
declarations. These tests hold each declaration to the code that uses it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import typer.main

from agentic_rubrics.cli.app import app
from agentic_rubrics.cli.options import RunOptions, option_settings
from agentic_rubrics.pipeline.config import (
    RunConfig,
    config_differences,
    load_config,
    setting_fields,
    setting_kind,
)
from agentic_rubrics.setting_effects import effect_of, kind_at, leaf_paths

# one value per option that sets something, unlike its default
SAMPLES: dict[str, Any] = {
    "rubrics": Path("/rubrics"),
    "verifiers": "rubric,tests",
    "tests": Path("/tests"),
    "test_reruns": 2,
    "test_python": "/opt/python3",
    "test_docker": "local",
    "test_env_spec": Path(__file__).parents[1] / "benchmarks" / "envs" / "swebench_py311.json",
    "test_env_cache": Path("/envs"),
    "proxies": Path("/proxies"),
    "explorer": "issue-only",
    "selectors": "random,rubric",
    "seed": 7,
    "trajectories": False,
    "model": "openai/other",
    "judge_model": "openai/judge",
    "explorer_model": "openai/explorer",
    "api_base": "http://127.0.0.1:9",
    "repeats": 3,
    "items_per_call": 2,
    "max_cost": 1.5,
    "llm_concurrency": 3,
    "llm_processes": 2,
    "timeout": 9.0,
    "sandbox": "local-copy",
    "unsafe_local_sandbox": True,
    "consensus_probes": True,
    "max_turns": 7,
    "executor": "ray",
    "ray_address": "ray://head:10001",
    "workers": 2,
    "repo_url": "file:///mirror/{repo}",
    "repo_cache": Path("/cache"),
}
# a judge and an explorer model with explicit selectors, so every option has a setting to change
BASE = {"model": "openai/m", "explorer": "agent", "selectors": "rubric,random"}


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def _settings(options: RunOptions) -> dict[str, Any]:
    return _flat(load_config(None, options.overrides()).model_dump(mode="json"))


def test_every_runconfig_field_declares_its_effect() -> None:
    unmarked = [name for name, info in setting_fields().items() if effect_of(info) is None]
    assert unmarked == [], (
        f"RunConfig fields without an Effect marker (agentic_rubrics.setting_effects): {unmarked}"
    )


def test_fields_set_from_the_command_line_have_an_option_and_the_others_none() -> None:
    roots = {path.split(".")[0] for sets in option_settings().values() for path in sets.paths}
    for name, info in setting_fields().items():
        effect = effect_of(info)
        assert effect is not None
        if effect.cli:
            assert name in roots, (
                f"RunConfig.{name} says an option sets it; no option in cli_options does"
            )
        else:
            assert name not in roots, (
                f"an option sets RunConfig.{name}, whose marker says cli=False"
            )


def test_every_declared_setting_exists() -> None:
    for name, sets in option_settings().items():
        assert sets.paths, name
        for path in sets.paths:
            assert setting_kind(path.split(".")) is not None, f"--{name}: no setting {path}"


def test_each_option_sets_what_it_declares_and_nothing_else() -> None:
    assert set(SAMPLES) == set(option_settings()), "give the new option a sample value here"
    for name, sets in option_settings().items():
        # without --model the agent explorer has no model: the base explorer is then the static one
        dropped = {name, "explorer"} if name == "model" else {name}
        base = {k: v for k, v in BASE.items() if k not in dropped}
        before = _settings(RunOptions(**base))
        after = _settings(RunOptions(**{**base, name: SAMPLES[name]}))
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        assert changed, f"--{name} changed no setting"
        stray = [k for k in changed if not any(k == p or k.startswith(p + ".") for p in sets.paths)]
        assert stray == [], f"--{name} sets {stray}, which its Sets does not declare"


def test_commands_take_exactly_the_declared_options() -> None:
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    fields = [f.name for f in dataclasses.fields(RunOptions)]
    for name, leading in (
        ("run", ["tasks", "out"]),
        ("explore", ["tasks", "out"]),
        ("demo", ["out"]),
    ):
        command = commands[name]
        assert [p.name for p in command.params] == leading + fields
    flags = {opt for p in commands["run"].params for opt in p.opts}
    assert {"--workers", "--repo-url", "--unsafe-local-sandbox", "--retry-missing", "-q"} <= flags


def _kinds(model: RunConfig) -> dict[str, str]:
    kept = _flat(model.results_settings())
    return {
        path: ("results" if path in kept else "other")
        for path in _flat(model.model_dump(mode="json"))
    }


def test_the_hash_keeps_exactly_the_results_settings() -> None:
    every = RunOptions(**BASE, verifiers="rubric,tests,similarity").overrides()
    cfg = load_config(None, every)
    # the tests verifier leaves out where built venvs are kept (it never changes a result) and specs
    # that are not set (they hash as before they were a setting)
    unhashed = {"tests.env_cache", "tests.env_specs", "tests.docker"}
    for path, kept in _kinds(cfg).items():
        kind = setting_kind(path.split("."))
        assert (kind == "results" and path not in unhashed) == (kept == "results"), path
    assert "judge.model.temperature" in leaf_paths(RunConfig)
    assert kind_at(RunConfig, ["judge", "model", "timeout"]) == "speed"  # LLMConfig marks it
    assert kind_at(RunConfig, ["judge", "model", "temperature"]) == "results"  # judge's own
    assert kind_at(RunConfig, ["judge", "concurrency"]) == "speed"
    assert kind_at(RunConfig, ["policy", "accept"]) == "report"
    assert kind_at(RunConfig, ["judge", "model", "extra_params", "top_p"]) == "results"
    assert kind_at(RunConfig, ["no_such_setting"]) is None


@pytest.mark.parametrize(
    ("change", "hashed"),
    [
        ({"workers": 3}, False),
        ({"task_concurrency": 9}, False),
        ({"judge": {"model": {"timeout": 5.0, "concurrency": 2}}}, False),
        ({"judge": {"concurrency": 2}}, False),
        ({"policy": {"accept": 0.9}, "max_k": 4}, False),
        ({"repos": {"cache_dir": "/elsewhere"}}, False),
        ({"judge": {"model": {"temperature": 0.7}}}, True),
        ({"judge": {"items_per_call": 1}}, True),
        ({"explorer": {"max_turns": 5}}, True),
        ({"repos": {"url_template": "none"}}, True),  # fetching turned off
    ],
)
def test_the_hash_and_the_refusal_follow_the_markers(change: dict[str, Any], hashed: bool) -> None:
    base = RunOptions(**BASE).overrides()
    old, new = load_config(None, base), load_config(None, _merged(base, change))
    assert (old.content_hash() != new.content_hash()) == hashed
    groups = config_differences(old.model_dump(mode="json"), new.model_dump(mode="json"))
    assert bool(groups["results"]) == hashed
    assert groups["report"] or groups["transport"] or hashed


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out
