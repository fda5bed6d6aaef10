"""Secrets never reach the disk, nor a child process's command line.

A loopback model whose replies echo the API key, an environment value and the password of ``--api-base``,
an agent in the unisolated sandbox that prints the parent's environment and command line: afterwards no
byte of the run folder holds any of them, and a resumed run replays the same (redacted) replies.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR, load_example
from agentic_rubrics.llm.door import LLMConfig
from agentic_rubrics.pipeline.config import RunConfig, load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.redaction import Redactor, split_credentials
from agentic_rubrics.testing import LoopbackServer, Reply, judge_answer, requested_ids

from .test_agent import VALID, write
from .test_sandbox_bwrap import require_bwrap

EXAMPLE = load_example(EXAMPLES_DIR / "harbourline__pagewise-214")


def _secrets() -> tuple[str, str, str]:
    token = os.urandom(8).hex()
    return f"provider-key-{token}", f"env-value-{token[::-1]}", f"pw-{token[:6]}-{token[6:]}"


PARENT = "tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' ' ' < /proc/$PPID/cmdline"


def _explorer_reply(
    body: dict[str, Any], key: str, env: str, password: str, command: str = PARENT
) -> Reply:
    turn = 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")
    echo = f"I saw the key {key}, the value {env}, the password {password} and sk-{'A' * 24}."
    if turn == 1:
        return Reply(
            content=f"THOUGHT: Reading what the parent holds. {echo}\n\n```bash\n{command}\n```"
        )
    if turn == 2:
        quoted = VALID.replace(
            "Keeps partial trailing windows excluded",
            f"Keeps partial windows excluded ({key} {env} {password})",
        ).replace("The root cause", env)
        return Reply(content=f"THOUGHT: Writing it. {echo}\n\n```bash\n{write(quoted)}\n```")
    return Reply(content=f"THOUGHT: Submitting. {echo}\n\n```submit\n```")


@pytest.mark.parametrize("credentials", [True, False], ids=["api-base-credentials", "bearer-key"])
def test_no_secret_reaches_the_run_folder_or_a_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, credentials: bool
) -> None:
    key, env, password = _secrets()
    monkeypatch.setenv("AGENTIC_TEST_PRIVATE_VALUE", env)

    def script(body: dict[str, Any], n: int) -> Reply:
        if requested_ids(body):
            answer = judge_answer(1)(body, n)
            return Reply(content=f"The key is {key} and {env}; {password}.\n{answer.content}")
        return _explorer_reply(body, key, env, password)

    seen: list[str] = []
    children: list[str] = []
    stop = threading.Event()

    def watch() -> None:  # every process's command line, while the run goes on
        me = os.getpid()
        while not stop.is_set():
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit() or int(proc.name) == me:
                    continue
                try:
                    cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
                except OSError:
                    continue
                if key in cmdline or (credentials and password in cmdline):
                    seen.append(cmdline)
                if "multiprocessing" in cmdline or "/proc/$PPID" in cmdline:
                    children.append(cmdline)
            stop.wait(0.01)

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(EXAMPLE.task.model_dump(mode="json")) + "\n")
    with LoopbackServer(script) as server:
        base = (
            server.url.replace("http://", f"http://alice:{password}@")
            if credentials
            else server.url
        )
        model = {"model": "openai/echo", "api_base": base, "processes": 1}
        config = load_config(None, {
            "explorer": {"kind": "agent", "model": model, "sandbox": {"type": "local-copy"},
                         "allow_unisolated": True, "max_turns": 5},
            "judge": {"kind": "llm", "model": model}, "selectors": ["rubric", "random"],
            "bootstrap_resamples": 10, "plots": False,
        })  # fmt: skip
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            report = run(tasks, tmp_path / "out", config, api_key=key)
        finally:
            stop.set()
            watcher.join()
        assert report is not None and report["rubrics"]["ok"] == 1
        assert report["verdicts"]["rows"] > 0
        # the URL's credentials were used for the calls (as basic authentication); the explorer's
        # model never got the environment value back
        basic = "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()
        expected = basic if credentials else f"Bearer {key}"
        assert server.headers and all(h.get("authorization") == expected for h in server.headers)
        second_turn = json.dumps(server.requests[1]["messages"])
    folder = tmp_path / "out"
    rubric = (folder / "rubrics" / EXAMPLE.task.instance_id / "rubrics.yaml").read_bytes()
    assert seen == [] and children, (seen, children)
    assert b"[redacted]" in rubric and b"[redacted:AGENTIC_TEST_PRIVATE_VALUE]" in rubric
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in (
                key,
                env,
                "sk-" + "A" * 24,
                *((password, "alice:") if credentials else ()),
            ):
                assert secret.encode() not in data, (path, secret)
    assert env not in second_turn and "[redacted:AGENTIC_TEST_PRIVATE_VALUE]" in second_turn
    recorded = json.loads((folder / "config.json").read_text())
    expected_base = server.url.replace("http://", "http://***@") if credentials else server.url
    assert recorded["config"]["judge"]["model"]["api_base"] == expected_base


@require_bwrap  # its workspace is always /workspace: the explorer's prompts repeat exactly
def test_resume_replays_the_same_redacted_replies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, env, password = _secrets()
    monkeypatch.setenv("AGENTIC_TEST_PRIVATE_VALUE", env)

    def script(body: dict[str, Any], n: int) -> Reply:
        if requested_ids(body):
            answer = judge_answer(1)(body, n)
            return Reply(content=f"Noted {key}.\n{answer.content}")
        return _explorer_reply(body, key, env, password, command="ls")

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(EXAMPLE.task.model_dump(mode="json")) + "\n")
    with LoopbackServer(script) as server:
        model = {"model": "openai/echo", "api_base": server.url}
        config = load_config(None, {
            "explorer": {"kind": "agent", "model": model, "sandbox": {"type": "bubblewrap"},
                         "max_turns": 5},
            "judge": {"kind": "llm", "model": model}, "selectors": ["rubric", "random"],
            "bootstrap_resamples": 10, "plots": False,
        })  # fmt: skip
        first = run(tasks, tmp_path / "out", config, api_key=key)
        sent = len(server.requests)
        assert all(h.get("authorization") == f"Bearer {key}" for h in server.headers)
        rubric = (tmp_path / "out" / "rubrics").rglob("rubrics.yaml").__next__().read_bytes()
        verdicts = (tmp_path / "out" / "verdicts.jsonl").read_bytes()
        # a second run folder on the same cache: every reply comes from the cache, redacted as stored
        cache = tmp_path / "out" / "cache"
        (tmp_path / "again").mkdir()
        (tmp_path / "again" / "cache").symlink_to(cache, target_is_directory=True)
        second = run(tasks, tmp_path / "again", config, api_key=key)
        assert len(server.requests) == sent
    assert first is not None and second is not None
    assert first["rubrics"]["ok"] == second["rubrics"]["ok"] == 1
    again = (tmp_path / "again" / "rubrics").rglob("rubrics.yaml").__next__().read_bytes()
    assert again == rubric
    assert (tmp_path / "again" / "verdicts.jsonl").read_bytes() == verdicts


def test_credentials_in_api_base_are_used_but_never_serialized() -> None:
    def judged_by(base: str) -> RunConfig:
        return load_config(
            None, {"judge": {"kind": "llm", "model": {"model": "openai/m", "api_base": base}}}
        )

    base = "https://bob:hunter2-secret@proxy.example:8443/v1?key=k3y-in-query"
    config = LLMConfig(model="openai/m", api_base=base)
    assert config.model_dump()["api_base"] == "https://***@proxy.example:8443/v1"
    assert "hunter2" not in config.model_dump_json() and "k3y" not in config.model_dump_json()
    assert "hunter2" in config.model_dump_json(context={"secrets": True})  # to a worker, in memory
    assert config.api_base == base  # what the calls use
    assert split_credentials(base) == (
        "https://proxy.example:8443/v1?key=k3y-in-query",
        "Basic " + base64.b64encode(b"bob:hunter2-secret").decode(),
    )
    assert split_credentials("http://127.0.0.1:8000/v1") == ("http://127.0.0.1:8000/v1", None)
    assert "hunter2" not in json.dumps(judged_by(base).model_dump(mode="json"))
    # the hash guarding a resume does not change when only the password does
    assert (
        judged_by(base).content_hash()
        == judged_by(base.replace("hunter2", "rotated")).content_hash()
    )


def test_the_redactor_keeps_ordinary_values() -> None:
    redact = Redactor(["k3y-given-on-the-command-line"], environ={
        "PATH": "/usr/local/bin:/usr/bin", "SHELL": "/bin/bash", "MY_TOKEN": "t0ken-value-123", "SHORT": "abc",
    })  # fmt: skip
    text = "run /bin/bash with /usr/local/bin:/usr/bin, t0ken-value-123, abc, k3y-given-on-the-command-line"
    assert redact.text(text) == (
        "run /bin/bash with /usr/local/bin:/usr/bin, [redacted:MY_TOKEN], abc, [redacted]"
    )
    assert redact({"a": ["t0ken-value-123", 1, None]}) == {"a": ["[redacted:MY_TOKEN]", 1, None]}


def test_a_short_given_key_is_replaced_only_as_a_whole_value() -> None:
    """A local server's dummy key (``x``, ``py``, ``EMPTY``) must not rewrite words, record keys, checks."""
    redact = Redactor(["x", "py", "EMPTY", "a-long-provider-key"], environ={})
    record = {"explorer": "static", "sandbox": "x", "check": {"touches": "*.py"}, "k": "py"}
    assert redact(record) == {
        "explorer": "static", "sandbox": "[redacted]", "check": {"touches": "*.py"}, "k": "[redacted]",
    }  # fmt: skip
    assert redact.text("EMPTY") == "[redacted]"
    assert redact.text("not EMPTY, but a-long-provider-key") == "not EMPTY, but [redacted]"


def test_a_short_api_key_changes_no_rubric_and_no_score(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(EXAMPLE.task.model_dump(mode="json")) + "\n")
    config = load_config(None, {"plots": False, "bootstrap_resamples": 10})
    written = {}
    for key in (None, "py"):
        out = tmp_path / f"with-{key}"
        assert run(tasks, out, config, api_key=key) is not None
        rubric = next((out / "rubrics").rglob("rubrics.yaml")).read_text()
        written[key] = (rubric, (out / "scores.jsonl").read_text())
    assert "[redacted" not in written["py"][0]
    assert written["py"] == written[None]
