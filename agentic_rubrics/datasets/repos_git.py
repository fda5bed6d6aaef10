"""The mechanics under the repository cache: a clean git, names and URLs checked, and locks.

- ``Git`` runs git with none of the caller's configuration or variables (no system or global config,
  an empty private HOME, no terminal prompts, hooks off, the ``ext::`` transport off), in its own
  process group, and kills that whole group when a call outlives its timeout.
- ``parse_repo`` / ``parse_commit`` accept only ``owner/name`` and a full hexadecimal commit id: both come
  from tasks files, which are untrusted, and end up in paths and on git's command line.
- ``UrlTemplate`` fills ``{repo}``, ``{owner}``, ``{name}``; ``redact_url`` (from ``redaction``, where the
  model URLs use it too) drops credentials before a URL is logged, recorded or put into an error.
- ``FileLock`` is an exclusive ``flock`` on a lock file, also exclusive between threads of one process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Formatter
from types import TracebackType
from urllib.parse import urlsplit

from agentic_rubrics.exceptions import ConfigError, RepoError
from agentic_rubrics.redaction import redact_url as redact_url  # one implementation, re-exported

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_FIELDS = ("repo", "owner", "name")
# Variables passed through to git: reaching a server (proxies, certificate bundles, an ssh agent).
_PASS_ENV = (
    "PATH",
    "TMPDIR",
    "SSH_AUTH_SOCK",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
)
# Given on every call: no hooks, no fsmonitor command, no ext:: transport (it runs commands), no
# background gc or maintenance that would outlive the lock held around a fetch, no credential helper.
_SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "protocol.ext.allow=never",
    "gc.auto=0",
    "maintenance.auto=false",
    "fetch.writeCommitGraph=false",
    "credential.helper=",
    "init.defaultBranch=main",
)


def parse_repo(repo: str) -> tuple[str, str]:
    """``owner/name`` split in two; anything else (``..``, a leading ``-``, slashes, spaces) refused."""
    parts = repo.split("/")
    if len(parts) != 2 or not all(_NAME.fullmatch(p) for p in parts):
        raise RepoError(
            f"repository {repo!r} is not of the form owner/name (letters, digits, '_', '.', '-')",
            reason="invalid_repo",
            repo=repo,
        )
    return parts[0], parts[1]


def parse_commit(commit: str, *, repo: str = "") -> str:
    """A full commit id in lower case; short ids, branch names and revisions are refused."""
    sha = commit.strip().lower()
    if not _COMMIT.fullmatch(sha):
        raise RepoError(
            f"{repo}: base_commit {commit!r} is not a full commit id (40 hexadecimal digits)",
            reason="invalid_commit",
            repo=repo,
            commit=commit,
        )
    return sha


class UrlTemplate:
    """A URL with ``{repo}`` (``owner/name``), ``{owner}`` and ``{name}`` fields, checked up front."""

    def __init__(self, template: str) -> None:
        shown = redact_url(template)  # a template may carry a token: never in a message
        try:
            parsed = list(Formatter().parse(template))
        except ValueError as exc:
            raise ConfigError(f"repository URL template {shown!r}: {exc}") from None
        for _, field, spec, conversion in parsed:
            if field is not None and (field not in _FIELDS or spec or conversion):
                raise ConfigError(
                    f"repository URL template {shown!r}: unknown field {{{field}}}; "
                    f"known fields: {', '.join('{' + f + '}' for f in _FIELDS)}"
                )
        if template.startswith("-") or not template.strip():
            raise ConfigError(f"repository URL template {shown!r} is not a URL")
        self.template = template

    def format(self, owner: str, name: str) -> str:
        return self.template.format(repo=f"{owner}/{name}", owner=owner, name=name)


def scrub(text: str, url: str) -> str:
    """``text`` (git's stderr) with the URL's credentials replaced, ready for an error message."""
    parts = urlsplit(url)
    secrets = [url] if redact_url(url) != url else []
    if "@" in parts.netloc:
        secrets.append(parts.netloc.rpartition("@")[0])
    if parts.query:
        secrets.append(parts.query)
    for secret in secrets:
        text = text.replace(secret, redact_url(url) if secret == url else "***")
    return text


@dataclass(frozen=True)
class GitResult:
    """One finished git call."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def tail(self, limit: int = 600) -> str:
        """The end of stderr, on one line, for an error message."""
        text = " ".join(self.stderr.split())
        return text if len(text) <= limit else "…" + text[-limit:]


class Git:
    """git with a clean environment and a timeout on every call (see the module docstring)."""

    def __init__(self, timeout: float = 300.0) -> None:
        found = shutil.which("git")
        if found is None:
            raise RepoError("git is not installed (needed to fetch repositories)", reason="no_git")
        self.executable = found
        self.timeout = timeout
        self.home = Path(tempfile.mkdtemp(prefix="agentic-rubrics-git-home-"))
        weakref.finalize(self, shutil.rmtree, str(self.home), True)

    def env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in _PASS_ENV if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_TERMINAL_PROMPT="0",
            GIT_SSH_COMMAND="ssh -o BatchMode=yes",
            LC_ALL="C",
            LANG="C",
        )
        return env

    def argv(self, args: Sequence[str], git_dir: Path | None) -> list[str]:
        argv = [self.executable]
        for setting in _SAFE_CONFIG:
            argv += ["-c", setting]
        if git_dir is not None:
            argv.append(f"--git-dir={git_dir}")
        return [*argv, *args]

    def popen(
        self,
        args: Sequence[str],
        *,
        git_dir: Path | None = None,
        cwd: Path | None = None,
        pass_fds: Sequence[int] = (),
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start git in its own process group (so a timeout kills its helpers too), stdin closed.

        ``pass_fds`` lets git inherit a lock's descriptor: the lock then stays held until git and its
        helpers exit, even if this process is killed first.
        """
        return subprocess.Popen(
            self.argv(args, git_dir),
            cwd=cwd,
            env={**self.env(), **(extra_env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )

    def run(
        self,
        args: Sequence[str],
        *,
        git_dir: Path | None = None,
        cwd: Path | None = None,
        timeout: float | None = None,
        pass_fds: Sequence[int] = (),
        extra_env: dict[str, str] | None = None,
    ) -> GitResult:
        proc = self.popen(args, git_dir=git_dir, cwd=cwd, pass_fds=pass_fds, extra_env=extra_env)
        try:
            out, err = proc.communicate(timeout=timeout or self.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(proc)
            out, err = proc.communicate()
            timed_out = True
        return GitResult(
            proc.returncode,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            timed_out,
        )


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s whole process group (git and the helpers it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


class FileLock:
    """An exclusive lock on ``path`` between processes (``flock``) and between threads of this one.

    The kernel releases a ``flock`` when the last descriptor of its open file closes, so a killed
    holder never leaves it taken. The thread lock matters where ``flock`` is emulated with POSIX
    record locks (NFS), which do not exclude two threads of one process from each other.
    """

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self.waited = 0.0
        self.fd: int | None = None
        with _THREAD_LOCKS_GUARD:
            self._thread_lock = _THREAD_LOCKS.setdefault(str(path.absolute()), threading.Lock())

    def __enter__(self) -> FileLock:
        start = time.monotonic()
        deadline = start + self.timeout
        if not self._thread_lock.acquire(timeout=max(self.timeout, 0.0)):
            raise TimeoutError(f"lock {self.path} still held after {self.timeout:.0f}s")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            pause = 0.005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        raise TimeoutError(
                            f"lock {self.path} still held after {self.timeout:.0f}s"
                        ) from None
                    time.sleep(pause)
                    pause = min(pause * 2, 0.5)
        except BaseException:
            self._thread_lock.release()
            raise
        self.fd = fd
        self.waited = time.monotonic() - start
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None
        self._thread_lock.release()
