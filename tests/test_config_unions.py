"""Explorer, sandbox and executor configurations are tagged unions that carry their own behaviour:
each kind says what it needs and opens its explorer, sandbox or executor, so adding one is a class, not
an edit of the code that uses them; configurations users already write read (and hash) as before."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import TypeAdapter

import agentic_rubrics as ar
from agentic_rubrics import Sandbox
from agentic_rubrics.exceptions import ConfigError, SandboxError
from agentic_rubrics.explore import (
    AgentExplorerConfig,
    ExplorerConfig,
    IssueOnlyExplorerConfig,
    StaticExplorerConfig,
)
from agentic_rubrics.explore.agent import AgentExplorer, IssueOnlyExplorer
from agentic_rubrics.explore.static import StaticExplorer
from agentic_rubrics.llm import LLM, LLMConfig
from agentic_rubrics.pipeline.config import RunConfig, load_config
from agentic_rubrics.pipeline.driver import LocalExecutor, open_executor
from agentic_rubrics.pipeline.executors import LocalExecutorConfig, RayExecutorConfig
from agentic_rubrics.protocols import CommandResult
from agentic_rubrics.sandbox import (
    AutoConfig,
    BubblewrapConfig,
    LocalCopyConfig,
    SandboxSpec,
    Where,
    open_sandbox,
)
from agentic_rubrics.sandbox.swerex import SweRexLocalConfig, SweRexModalConfig, SweRexRemoteConfig
from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig

M = {"model": "openai/x", "api_base": "http://127.0.0.1:1"}

# hashed() without its prompt hashes (prompts change on their own), recorded by the code before the
# configurations became tagged unions (main 0785336): an unchanged configuration resumes its folder
RECORDED = {
    "agent_local_copy": (
        {"explorer": {"kind": "agent", "model": M, "max_turns": 7, "allow_unisolated": True,
                      "sandbox": {"type": "local-copy"}},
         "judge": {"kind": "llm", "model": M}},
        ["judge", "patch_classifier", "rubric_agent"],
        "ecb48ef06372c876ab84176d697ddb322ec51c28d3d57ca58cc89d50f10d5022",
    ),
    "issue_only_docker": (
        {"explorer": {"kind": "issue-only", "model": M,
                      "sandbox": {"type": "swerex-docker", "docker_args": ["--memory=1g"]}},
         "executor": "ray", "workers": 3},
        ["rubric_agent"],
        "3cc4e52505f3a1f804f507b2e8b354ca4b1f3b5bb2c72ea8922d992605f53d63",
    ),
    "static_bubblewrap_ray": (
        {"explorer": {"sandbox": {"type": "bubblewrap", "max_tmp_mib": 64}},
         "executor": "ray", "ray_address": "ray://h:1", "seed": 5},
        [],
        "5350549cd740c8acc1c19ca20328b90a32edba9fc19d98109d002516233a8f9d",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_an_unchanged_configuration_hashes_as_before(name: str) -> None:
    settings, prompts, digest = RECORDED[name]
    hashed = load_config(None, settings).hashed()
    assert sorted(hashed.pop("prompts")) == prompts
    assert hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest() == digest


def test_every_explorer_kind_dumps_the_same_settings() -> None:
    """The kinds hold the same fields, so a configuration's file and hash do not depend on the class."""
    fields = [list(c.model_fields) for c in (StaticExplorerConfig, AgentExplorerConfig,
                                             IssueOnlyExplorerConfig)]  # fmt: skip
    assert fields[0] == fields[1] == fields[2] and fields[0][0] == "kind"
    assert list(LocalExecutorConfig.model_fields) == list(RayExecutorConfig.model_fields)


def test_an_explorer_configuration_opens_its_explorer() -> None:
    pick = TypeAdapter(ExplorerConfig).validate_python
    assert isinstance(pick({}), StaticExplorerConfig)  # kind unset: static
    assert isinstance(pick({}).open(), StaticExplorer)
    llm = LLM(LLMConfig(model="openai/x", api_base="http://127.0.0.1:1"))
    agent = pick({"kind": "agent", "model": M, "max_turns": 3})
    opened = agent.open(llm)
    assert isinstance(opened, AgentExplorer) and opened.max_turns == 3
    assert isinstance(pick({"kind": "issue-only", "model": M}).open(llm), IssueOnlyExplorer)
    # what each kind needs, read by the stages, the hash and the run instead of its name
    table = {c.__name__: (c.uses_sandbox, c.model_commands, c.static_leads, c.prompts)
             for c in (StaticExplorerConfig, AgentExplorerConfig, IssueOnlyExplorerConfig)}  # fmt: skip
    assert table == {
        "StaticExplorerConfig": (True, False, True, ()),
        "AgentExplorerConfig": (True, True, False, ("rubric_agent",)),
        "IssueOnlyExplorerConfig": (False, False, False, ("rubric_agent",)),
    }
    assert ar.ExplorerConfig is ExplorerConfig


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"explorer": {"kind": "agent"}},
            "explorer: Value error, the agent explorer needs a model",
        ),
        (
            {"explorer": {"kind": "nope"}},
            "explorer: kind should be 'static', 'agent' or 'issue-only'",
        ),
        ({"explorer": {"kind": "static", "bogus": 1}}, "explorer.bogus: Extra inputs"),
        (
            {"explorer": {"sandbox": {"type": "swerex-remote"}}},
            "explorer.sandbox.port: Field required",
        ),
        ({"executor": {"kind": "slurm"}}, "executor: kind should be 'local' or 'ray'"),
    ],
)
def test_an_error_names_the_setting_as_written(settings: dict[str, Any], message: str) -> None:
    """The member a tagged union picked is not a setting: it is left out of the error's location."""
    with pytest.raises(ConfigError) as caught:
        load_config(None, settings)
    assert f"configuration: {message}" in str(caught.value)


def test_the_flat_executor_settings_still_read(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("executor: ray\nray_address: ray://head:10001\nworkers: 3\n")
    assert load_config(path).executor == RayExecutorConfig(address="ray://head:10001", workers=3)
    # an option on top of the file keeps the file's kind (--workers 5)
    merged = load_config(path, {"executor": {"workers": 5}}).executor
    assert merged == RayExecutorConfig(address="ray://head:10001", workers=5)
    # a folder's config.json written before the section existed
    old = {"executor": "local", "ray_address": None, "workers": None}
    assert RunConfig.model_validate(old).executor == LocalExecutorConfig()


def test_an_executor_configuration_opens_its_executor(tmp_path: Path) -> None:
    config = RunConfig()

    async def go() -> Any:
        executor = open_executor(config, tmp_path, None, 0.0)
        try:
            return type(executor), executor.capacity
        finally:
            await executor.close()

    assert asyncio.run(go()) == (LocalExecutor, config.task_concurrency)
    module, _, name = RayExecutorConfig.runs_on.partition(":")
    assert module == "agentic_rubrics.pipeline.executor_ray" and name == "RayExecutor"


def test_each_sandbox_says_whether_it_needs_the_repository_and_isolates() -> None:
    classes = [AutoConfig, BubblewrapConfig, LocalCopyConfig, SweRexLocalConfig, SweRexDockerConfig,
               SweRexModalConfig, SweRexRemoteConfig]  # fmt: skip
    table = {c.model_fields["type"].default: (c.needs_repo, c.isolated) for c in classes}
    assert table == {
        "auto": (True, True),
        "bubblewrap": (True, True),
        "local-copy": (True, False),
        "swerex-local": (True, False),
        "swerex-docker": (False, True),
        "swerex-modal": (False, True),
        "swerex-remote": (False, True),
    }


class EchoSandbox:
    """A sandbox that answers every command with its own text (the protocol, nothing else)."""

    kind = "echo"
    workdir = "/"

    def __init__(self, where: Where) -> None:
        self.where = where
        self.closed = False

    async def run(
        self, command: str, *, timeout: float = 30.0, max_output: int = 20_000
    ) -> CommandResult:
        return CommandResult(exit_code=0, output=command[:max_output])

    async def read_file(self, path: str, *, max_bytes: int = 200_000) -> str:
        return path

    async def close(self) -> None:
        self.closed = True


class EchoConfig(SandboxSpec):
    """A new backend: one class, nothing else edited."""

    needs_repo: ClassVar[bool] = False
    isolated: ClassVar[bool] = False
    type: Literal["echo"] = "echo"
    """Discriminator."""

    async def start(self, where: Where) -> Sandbox:
        return EchoSandbox(where)


def test_a_new_sandbox_backend_is_one_class() -> None:
    async def go(**policy: bool) -> Any:
        sb = await open_sandbox(EchoConfig(), instance_id="t", repo_path=None, **policy)
        assert isinstance(sb, Sandbox)
        return (await sb.run("echo hi")).output

    assert asyncio.run(go(model_commands=False)) == "echo hi"
    with pytest.raises(SandboxError, match="echo sandbox is not isolated"):
        asyncio.run(go(model_commands=True))  # the policy holds for every backend
    assert asyncio.run(go(model_commands=True, allow_unisolated=True)) == "echo hi"


def test_a_sandbox_that_needs_the_repository_refuses_to_open_without_it() -> None:
    for config in (LocalCopyConfig(), SweRexLocalConfig(), BubblewrapConfig(), AutoConfig()):
        with pytest.raises(SandboxError, match="needs the task's repo_path"):
            asyncio.run(open_sandbox(config, instance_id="t", repo_path=None, model_commands=False))
