"""The README's Python example runs as written, and its commands exist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentic_rubrics.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))


def _all_docs() -> str:
    """The README and its docs/ pages: what a user reads."""
    return "\n".join(p.read_text() for p in [README, *DOCS])


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 1
    return str(blocks[0])


def test_python_example_runs_as_a_script(tmp_path: Path) -> None:
    """Saved as a file and run as users run it (``-c`` would hide what spawned workers do with a
    script: they import it again)."""
    script = tmp_path / "example.py"
    script.write_text(_example())
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "runs" / "example"
    assert (folder / "report.md").exists()
    rows = [json.loads(x) for x in (folder / "verdicts.jsonl").read_text().splitlines()]
    assert not [r for r in rows if r.get("detail") == "analysis_crashed"]
    report = json.loads((folder / "report.json").read_text())
    assert report["coverage"]["items_with_verdict"]["value"] > 0.9


def test_the_example_without_its_main_guard_stops_and_says_why(tmp_path: Path) -> None:
    """Without the guard every analysis worker imports the script again, which calls ``ar.run``: the
    worker stops there, and the run stops with the cause and the fix instead of losing verdicts."""
    code = _example()
    guard = 'if __name__ == "__main__":\n    main()\n'
    assert guard in code
    script = tmp_path / "unguarded.py"
    script.write_text(code.replace(guard, "main()\n"))
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0, done.stdout
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("agentic_rubrics.exceptions.WorkerStartError: ")
    # the cause named as it is (not guessed from a pool that broke): the worker's exit code said so
    assert f"imports the script {script} again" in error and "calls agentic_rubrics" in error
    assert 'if __name__ == "__main__":' in error and "exit code 86" in error
    # each worker stopped before it reached the run folder: none ran the job again, none waited
    # for the parent's lock, and none took it once the parent had let go of it
    assert "RunFolderBusy" not in done.stderr
    assert re.search(
        r"worker process \d+ stopped: while starting, it imported the script", done.stderr
    )
    from agentic_rubrics.runfolder.lock import folder_lock

    time.sleep(2)  # a worker left running would be writing by now
    with folder_lock(tmp_path / "runs" / "example"):
        pass
    verdicts = tmp_path / "runs" / "example" / "verdicts.jsonl"
    assert not verdicts.exists() or "analysis_crashed" not in verdicts.read_text()


def test_every_cli_command_in_the_readme_exists() -> None:
    text = _all_docs()
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
    text = _all_docs()
    helps = ""
    for command in (
        "run",
        "demo",
        "report",
        "calibrate",
        "fit",
        "env-check",
        "import-swebench",
        "validate",
        "export-sft",
        "schema",
        "serve-reward",
        "sanity",
        "view",
        "audit-items",
        "compare",
        "build-env",
        "clean-containers",
    ):
        result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400"})
        helps += result.output
    documented = set(re.findall(r"`(--[a-z][a-z-]+)", text))
    missing = sorted(o for o in documented if o not in helps)
    assert not missing, missing


def test_the_readme_model_settings_are_valid_and_do_what_they_say(tmp_path: Path) -> None:
    """The "With a model" settings load, and shape their calls as the text around them says."""
    from agentic_rubrics.llm.door import LLM
    from agentic_rubrics.pipeline.config import load_config

    blocks = re.findall(r"```yaml\n(# --config (\w+)\.yaml.*?)```", _all_docs(), re.S)
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


def test_every_docs_page_is_linked_and_every_link_resolves() -> None:
    text = README.read_text()
    for page in DOCS:
        assert f"(docs/{page.name})" in text, page.name
    for page in [README, *DOCS, ROOT / "DESIGN.md"]:
        for target in re.findall(r"\]\(([^)#:]+\.md)\)", page.read_text()):
            assert (page.parent / target).resolve().exists(), (page.name, target)


def test_the_swebench_quick_start_works_as_written(tmp_path: Path, monkeypatch: Any) -> None:
    """The README's ten lines, run literally on the shared SWE-bench data (the combined file in the
    current directory, as the README names it), reach a report; skipped where the data is absent."""
    import shlex

    import pytest

    data = ROOT.parent / "shared" / "data" / "swebench" / "lite_candidates.jsonl.gz"
    if not data.exists():
        pytest.skip(f"the shared SWE-bench data is not here ({data})")
    block = re.search(r"## SWE-bench in ten lines\n\n```bash\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.startswith("agentic-rubrics ")]
    assert [c.split()[1] for c in commands] == ["import-swebench", "run", "report"]
    (tmp_path / "lite_candidates.jsonl.gz").symlink_to(data)
    monkeypatch.chdir(tmp_path)
    for command in commands:
        done = CliRunner().invoke(
            app,
            [*shlex.split(command)[1:], "-q"]
            if "import" not in command
            else shlex.split(command)[1:],
        )
        assert done.exit_code == 0, (command, done.output)
    report = json.loads((tmp_path / "runs" / "lite" / "report.json").read_text())
    assert report["counts"]["tasks"] == 202 and report["primary_selector"] == "self_consistency"
    assert (tmp_path / "runs" / "lite" / "selections" / "offline.jsonl").exists()
