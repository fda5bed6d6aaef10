"""The README's Python example runs as written, and its commands exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from agentic_rubrics.cli.app import app

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks
    for code in blocks:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "example" / "report.md").exists()


def test_every_cli_command_in_the_readme_exists() -> None:
    text = README.read_text()
    commands = set(re.findall(r"^agentic-rubrics ([\w-]+)", text, re.M))
    assert {
        "run",
        "explore",
        "judge",
        "report",
        "demo",
        "validate",
        "schema",
        "import-swebench",
    } <= commands
    for command in commands:
        result = CliRunner().invoke(app, [command, "--help"])
        assert result.exit_code == 0, command
    assert "make demo" in text and "make test" in text


def test_every_option_in_the_readme_exists() -> None:
    text = README.read_text()
    helps = ""
    for command in ("run", "demo", "report", "calibrate", "import-swebench", "validate", "schema"):
        result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400"})
        helps += result.output
    documented = set(re.findall(r"`(--[a-z][a-z-]+)", text))
    missing = sorted(o for o in documented if o not in helps)
    assert not missing, missing


def test_the_readme_model_settings_are_valid_and_do_what_they_say(tmp_path: Path) -> None:
    """The "With a model" settings load, and shape their calls as the text around them says."""
    from agentic_rubrics.llm.door import LLM
    from agentic_rubrics.pipeline.config import load_config

    blocks = re.findall(r"```yaml\n(# --config (\w+)\.yaml.*?)```", README.read_text(), re.S)
    assert [name for _, name in blocks] == ["o3", "claude", "local"]
    params = {}
    for text, name in blocks:
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        config = load_config(path)
        assert config.judge.kind == "llm" and config.judge.model is not None
        params[name] = LLM(config.judge.model).params()
    assert "temperature" not in params["o3"] and params["o3"]["max_tokens"] == 4096 + 4096
    assert params["claude"]["reasoning_effort"] == "low" and "temperature" not in params["claude"]
    assert params["local"]["max_tokens"] == 4096 + 8192 and "temperature" not in params["local"]
