"""One rooted tree of exceptions: catch ``AgenticRubricsError`` to catch everything the library raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


class AgenticRubricsError(Exception):
    """Root of every error this library raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One finding about an input file: where it is and what was expected there."""

    file: str
    line: int | None
    column: int | None
    field: str
    message: str
    severity: str = "error"  # "error" or "warning"

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        field = f" [{self.field}]" if self.field else ""
        return f"{where}: {self.severity}{field}: {self.message}"


class RubricError(AgenticRubricsError):
    """A rubrics.yaml that cannot be read or does not follow the schema. ``problems`` lists each error."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems) or "invalid rubric")


class CheckError(AgenticRubricsError):
    """A ``check`` specification that names an unknown predicate or carries a bad argument."""


class PatchParseError(AgenticRubricsError):
    """A candidate patch that is not a unified diff."""


class DataError(AgenticRubricsError):
    """A task, prediction or report file that is malformed; the message names file, line and field."""


class RepoError(DataError):
    """A task's repository could not be provided at its commit; the message names repo, commit, URL.

    ``reason`` is a short code for reports: ``invalid_repo``, ``invalid_commit``, ``fetch_failed``,
    ``commit_not_found``, ``timeout``, ``lock_timeout``, ``export_failed``, ``export_too_large``, ``cache_unusable``,
    ``no_such_folder``, ``no_git``.
    """

    def __init__(
        self, message: str, *, reason: str, repo: str = "", commit: str = "", url: str = ""
    ) -> None:
        self.reason = reason
        self.repo = repo
        self.commit = commit
        self.url = url
        super().__init__(message)


class ConfigError(AgenticRubricsError):
    """A configuration that is invalid or does not match the one a run folder was started with."""


class JudgeError(AgenticRubricsError):
    """The judge cannot run at all (as opposed to one verdict going missing, which is not an error)."""


class ModelError(AgenticRubricsError):
    """A model call failed in a way that retrying cannot fix (authentication, unknown model, context)."""


class SandboxError(AgenticRubricsError):
    """A sandbox could not be created, or a command could not be started in it."""


class BudgetExceeded(AgenticRubricsError):
    """The run's cost limit was reached; no new model call is started."""


class InputsChanged(DataError):
    """A tasks file no longer matches what a run folder scored (patches, candidates, issue text)."""


class RunFolderBusy(AgenticRubricsError):
    """Another process is writing to the run folder."""


FailureKind = Literal[
    "transient",
    "auth",
    "unknown_model",
    "context_window",
    "refusal",
    "bad_params",
    "bad_request",
    "budget",
    "empty_reply",
]
"""How a model call failed: ``transient`` is retried, the others fail the call or the run."""


class CallFailed(AgenticRubricsError):
    """A model call that did not produce a completion, classified once, for retry and reporting; the
    door (:mod:`agentic_rubrics.llm.door`) raises it, and its callers turn it into a ``missing`` verdict or a
    failed rubric."""

    def __init__(
        self, kind: FailureKind, message: str, *, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


class ExplorationFailed(AgenticRubricsError):
    """An explorer wrote no valid rubric; ``reason`` is a short code, ``steps`` the trajectory so far."""

    def __init__(self, reason: str, steps: list[dict[str, Any]]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.steps = steps


class WorkerStartError(AgenticRubricsError):
    """The package's worker processes die before running anything (a script without a ``__main__``
    guard, a broken interpreter): the run stops instead of recording every analysis as crashed."""
