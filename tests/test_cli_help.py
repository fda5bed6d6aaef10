"""Every command's help, rendered as users see it, says what the options really do."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperOption
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.cli.options import STAGE_OF, option_settings, real_default

ROOT: Any = typer.main.get_command(app)
COMMANDS = sorted(ROOT.commands)


def _help(*command: str) -> str:
    done = CliRunner().invoke(app, [*command, "--help"], terminal_width=100)
    assert done.exit_code == 0, done.output
    return " ".join(done.output.split())


def _words(text: str) -> str:
    return " ".join(text.split())


def _bare(text: str) -> str:
    """Without any white space (help wraps long words at hyphens)."""
    return "".join(text.split())


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_help_renders_as_written(name: str) -> None:
    shown = _help(name)
    for param in ROOT.commands[name].params:
        if isinstance(param, TyperOption) and param.help:
            assert _bare(param.help) in _bare(shown), (name, param.name, param.help)
    assert "<bool>" not in shown  # a flag takes no value, and help says none


def test_bracketed_text_is_kept() -> None:
    assert "ray (needs [ray])" in _help("run")


@pytest.mark.parametrize("name", COMMANDS)
def test_flags_take_no_value_as_shown(name: str, tmp_path: Path) -> None:
    for param in ROOT.commands[name].params:
        if isinstance(param, TyperOption) and param.is_flag and not param.secondary_opts:
            flag = param.opts[0]
            if flag == "--help":
                continue
            assert not re.search(rf"{flag} <", _help(name)), flag
            done = CliRunner().invoke(app, [name, flag, "true"])
            said = done.output.lower()
            assert done.exit_code == 2 and "invalid value" not in said, said


def test_real_defaults_are_shown() -> None:
    shown = _help("run")
    checked = 0
    for name in option_settings():
        default = real_default(name)
        if default is not None:
            assert _bare(f"[default: ({default})]") in _bare(shown), name
            checked += 1
    assert checked >= 5
    assert "[default: (1)]" in shown  # --repeats, from RunConfig's judge.repeats


def test_each_stage_says_which_options_it_does_not_use() -> None:
    run, explore, judge = _help("run"), _help("explore"), _help("judge")
    assert "Not used by" not in run
    for option, stage in STAGE_OF.items():
        flag = "--" + option.replace("_", "-")
        other = judge if stage == "explore" else explore
        note = "Not used by judge" if stage == "explore" else "Not used by explore"
        assert re.search(rf"{flag}\b[^<]{{0,40}}(<\w+>)? {note}", other), (flag, note)


def test_out_says_what_it_is_in_each_command(tmp_path: Path) -> None:
    said = {
        "run": "Run folder (created, or resumed).",
        "explore": "Run folder (created, or resumed).",
        "judge": "Run folder (created, or resumed).",
        "report": "The run folder to report on (it must exist; nothing is written elsewhere).",
        "import-swebench": "The tasks JSONL file to write.",
        "calibrate": "Where calibration.json and reliability.png go.",
        "demo": "Run folder (default: a new one under ./runs).",
        "schema": "Write to this file instead of stdout.",
    }
    for name, text in said.items():
        assert text in _help(name), name
    missing = tmp_path / "no-such-run"
    done = CliRunner().invoke(app, ["report", "--out", str(missing)])
    assert done.exit_code == 2 and "not a run folder" in done.output
    assert not missing.exists()  # report creates nothing
