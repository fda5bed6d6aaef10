"""Secrets found by their shape or by the name they are assigned to — GitHub, AWS, Stripe and JWT tokens,
URL credentials, PEM private keys, ``*_PASSWORD``/``*_SECRET``/``*_TOKEN`` values in env files, shell,
YAML and JSON — are redacted from what an agent's tools return before the model or a trajectory sees
them; ordinary code survives; and every pattern runs in linear time on 1 MB hostile lines."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.redaction import PLACEHOLDER, Redactor
from agentic_rubrics.testing import LoopbackServer, Reply, judge_answer, requested_ids

from .test_secrets import EXAMPLE, _explorer_reply

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----"
)
SECRETS: dict[str, tuple[str, str]] = {
    # kind: (the text as a tool prints it, the secret inside it)
    "github_pat": (
        "token github_pat_11ABCDEFG0aBcDeFgHiJkLmN_OpQrStUvWxYz0123456789",
        "11ABCDEFG0aBcDeF",
    ),
    "gho": ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E771"),
    "ghu": ("ghu_16C7e42F292c6912E7710c838347Ae178B4a", "ghu_16C7e42F292c6912"),
    "ghs": ("x-access-token ghs_16C7e42F292c6912E7710c838347Ae178B4a", "ghs_16C7e42F292c691"),
    "ghp": ("ghp_16C7e42F292c6912E7710c838347Ae178B4a", "ghp_16C7e42F292c691"),
    "ghr": ("ghr_16C7e42F292c6912E7710c838347Ae178B4a", "ghr_16C7e42F292c691"),
    # built from parts: no key-shaped literal in the repository for a secret scanner to flag
    "aws_id": (
        "AKIA" + "IOSFODNN7EXAMPLE " + "ASIA" + "Y34FZKBOKMUTVV7A",
        "ASIA" + "Y34FZKBOKMUTVV7A",
    ),
    "aws_ini": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI",
    ),
    "aws_env": ('AWS_SECRET_ACCESS_KEY="Je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"', "Je7MtGbClwBF"),
    "aws_json": ('"SecretAccessKey": "9drTJvcXLB89EXAMPLELB8923FB892xMFI/Abc+Z"', "9drTJvcXLB89"),
    "url": ("remote: https://alice:s3cr3t-pw@git.example.com/x.git", "s3cr3t-pw"),
    "jwt": (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N",
    ),
    "pem": (PEM, "MIIEpAIBAAKCAQEAu1SU1"),
    "pem_cut_short": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
        "b3BlbnNzaC1",
    ),
    "pem_plain": (PEM.replace("RSA ", ""), "VTLw7onLRnrq0"),
    "pem_encrypted": (PEM.replace("RSA", "ENCRYPTED"), "MIIEpAIBAAKCAQEAu1SU1"),
    "pem_ec": (PEM.replace("RSA", "EC"), "MIIEpAIBAAKCAQEAu1SU1"),
    "env_file": ("DB_PASSWORD=hunter2-db\nAPP_SECRET=s0mething", "hunter2-db"),
    "env_second": ("DB_PASSWORD=hunter2-db\nAPP_SECRET=s0mething", "s0mething"),
    "shell": ("export GITHUB_TOKEN='tok en with spaces'", "tok en with spaces"),
    "code_constant": ('API_TOKEN = "abcdefgh12345678"', "abcdefgh12345678"),
    "yaml": ("database:\n  password: yaml-pw-8d1f3\n  user: bob", "yaml-pw-8d1f3"),
    "yaml_quoted": ("- client_secret: 'plain words too'", "plain words too"),
    "json": ('{"user": "bob", "password": "hunter2-json", "n": 1}', "hunter2-json"),
    "json_camel": ('{"refreshToken": "r3fr3sh-t0k3n"}', "r3fr3sh-t0k3n"),
    "stripe": ("sk_live_4eC39HqLyjWDarjtT1zdp7dc rk_live_51H8abcDEFghiJKL", "4eC39HqLyjWDar"),
    "stripe_rk": ("rk_live_51H8abcDEFghiJKL", "51H8abcDEFghiJKL"),
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_of_secret_is_redacted(kind: str) -> None:
    text, secret = SECRETS[kind]
    assert secret in text
    redacted = Redactor(environ={}).text(text)
    assert secret not in redacted and PLACEHOLDER in redacted, redacted


def test_names_hosts_and_structure_are_kept() -> None:
    redact = Redactor(environ={}).text
    assert (
        redact("https://alice:pw@git.example.com/x") == f"https://{PLACEHOLDER}@git.example.com/x"
    )
    assert redact("DB_PASSWORD=hunter2 next") == f"DB_PASSWORD={PLACEHOLDER} next"
    assert redact(f"a\n{PEM}\nb") == f"a\n{PLACEHOLDER}\nb"
    # a placeholder is plain text: JSON and YAML still parse, the other values untouched
    doc = json.loads(redact(SECRETS["json"][0]))
    assert doc == {"user": "bob", "password": PLACEHOLDER, "n": 1}
    assert redact("password: hunter2") == f'password: "{PLACEHOLDER}"'  # [..] would be a list
    assert yaml.safe_load(redact(SECRETS["yaml"][0])) == {
        "database": {"password": PLACEHOLDER, "user": "bob"}
    }
    assert redact(redact(SECRETS["yaml"][0])) == redact(SECRETS["yaml"][0])  # stable


ORDINARY = [
    "commit 3f5e2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f (a git sha) in 0123456789abcdef0123456789abcdef01234567",
    "password = getpass()",
    "PASSWORD = getpass()",
    "    token: str",
    "    secret: Optional[str] = None",
    "def login(self, password: str) -> None:",
    "conn = connect(password=password, token=token)",
    'url = f"http://{user}:{password}@{host}/db"',
    "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}",
    "API_TOKEN=$(cat token.txt)",
    'DB_PASSWORD="$PASSWORD"',
    "MAX_TOKENS=4096 TOKENIZERS_PARALLELISM=false",
    'LPAREN_TOKEN = "("',
    '{"token": "", "tokens": 5, "password": null}',
    "ssh://git@github.com/owner/repo.git and git@github.com:owner/repo.git",
    "http://[::1]:8080/v1 and https://example.com/a:b@c",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "eyJ is how a base64 JSON object starts",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc is a documented test key",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_survives(text: str) -> None:
    assert Redactor(environ={}).text(text) == text


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def _then(prefix: str, char: str) -> Callable[[int], str]:
    return lambda n: prefix + char * n


HOSTILE: dict[str, Callable[[int], str]] = {
    "letters": _repeat("a"),
    "capitals": _repeat("A"),
    "eyJ runs": _repeat("eyJ"),
    "JWT-like parts": _repeat("eyJaaaaaaaa."),
    "URL without @": _then("x://a:", "b"),
    "URLs without @": _repeat("://a:b"),
    "BEGIN without END": _repeat("-----BEGIN PRIVATE KEY-----"),
    "BEGIN and a word": _then("-----BEGIN ", "A"),
    "names without =": _repeat("PASSWORD"),
    "unclosed quotes": _repeat('A_TOKEN="'),
    "unclosed members": _repeat('"token": "'),
    "YAML lines": _repeat("token: a\n"),
    "AWS names": _repeat("aws_secret_access_key="),
    "ghp_ runs": _repeat("ghp_"),
}
"""Lines built to make a backtracking pattern quadratic: a start inside every run, a prefix without
its end."""


def test_every_pattern_takes_linear_time_on_hostile_lines() -> None:
    """Every line at 100 kB first (a quadratic pattern takes seconds there: the test fails rather
    than hangs), then at 1 MB: each in a small fraction of a second of CPU, where one quadratic
    pattern would take minutes (benchmarks/hostile_text.py: the figures, the naive patterns' growth)."""
    redact = Redactor(environ={})
    for size, bound in ((100_000, 0.5), (1_000_000, 2.0)):
        for name, line in HOSTILE.items():
            text = line(size)
            started = time.process_time()
            redact.text(text)
            took = time.process_time() - started
            assert took < bound, (name, size, took)


def test_an_agents_tool_output_is_redacted_before_the_model_or_a_trajectory_sees_it(
    tmp_path: Path,
) -> None:
    printed = "\n".join(text for text, _ in SECRETS.values())
    # the command decodes them: its own text (the model's reply, redacted too) holds none
    command = f"printf %s {base64.b64encode(printed.encode()).decode()} | base64 -d"

    def script(body: dict[str, Any], n: int) -> Reply:
        if requested_ids(body):
            return judge_answer(1)(body, n)
        return _explorer_reply(body, "k", "e", "p", command=command)

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(EXAMPLE.task.model_dump(mode="json")) + "\n")
    with LoopbackServer(script) as server:
        model = {"model": "openai/echo", "api_base": server.url}
        config = load_config(None, {
            "explorer": {"kind": "agent", "model": model, "sandbox": {"type": "local-copy"},
                         "allow_unisolated": True, "max_turns": 5},
            "judge": {"kind": "llm", "model": model}, "selectors": ["rubric", "random"],
            "bootstrap_resamples": 10, "plots": False,
        })  # fmt: skip
        report = run(tasks, tmp_path / "out", config)
        assert report is not None and report["rubrics"]["ok"] == 1
        second_turn = json.dumps(server.requests[1]["messages"])
    assert PLACEHOLDER in second_turn
    trajectories = list((tmp_path / "out" / "trajectories").rglob("*.json"))
    assert trajectories and PLACEHOLDER in trajectories[0].read_text()
    for kind, (_, secret) in SECRETS.items():
        assert secret not in second_turn, kind
        for path in (tmp_path / "out").rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), (kind, path)
