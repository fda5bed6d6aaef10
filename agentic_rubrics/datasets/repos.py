"""Real repositories at a task's base commit: fetched once into a cache, exported without history.

A task with ``repo`` and ``base_commit`` and no ``repo_path`` gets its tree from
``RepoCache.checkout(repo, base_commit)``: the commit is fetched (``git fetch --depth 1 URL SHA``, or all
branches and tags when the server refuses fetching by hash), verified to be that commit, and exported
as a plain folder — no ``.git``, so an explorer sees neither history nor the fix. The cache's layout:

    git/<owner>__<name>.git              one bare repository per upstream; refs/base/<sha> keeps a commit
    trees/<owner>__<name>/<sha>/         the commit's tree, read-only, reused by every later task
    trees/<owner>__<name>/.tmp-<sha>-*/  an export under way, or left by a killed process
    locks/<owner>__<name>.lock           held around a fetch into the bare repository
    locks/<owner>__<name>/<sha>.lock     held around the export of one commit (taken first)

Concurrency: an export appears by one ``rename`` of a finished temp folder, so an existing
``trees/…/<sha>`` is always whole and is returned without any lock or git call. Everything else happens
under ``flock`` locks, which exclude other threads, processes and Ray workers sharing the folder. git is
given the fetch lock's descriptor, so a fetch that outlives a killed caller keeps the lock until it
ends. A holder of a lock therefore knows that lock files and temp objects in the bare repository and
``.tmp-<sha>-*`` folders are leftovers of a dead process, and removes them before its own work.

Shared storage: on a local file system and on NFSv4 (or v3 with lockd) the locks hold across machines.
On NFS, Linux emulates ``flock`` with POSIX record locks: these are not inherited by git, so a fetch that
outlives its killed caller no longer holds the lock there. A mount with ``nolock``/``local_lock`` gives
locks that hold on one machine only: give each machine its own cache folder then.

Durability: with ``durable`` (the default) the exported files are flushed to disk before the rename,
so not even a power cut can leave a half export under the final name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentic_rubrics.datasets.repos_bounds import ExportBounds
from agentic_rubrics.datasets.repos_config import (
    DEFAULT_URL_TEMPLATE,
    RepoConfig,
    default_cache_dir,
)
from agentic_rubrics.datasets.repos_git import (
    FileLock,
    Git,
    UrlTemplate,
    parse_commit,
    parse_repo,
    redact_url,
)
from agentic_rubrics.datasets.repos_store import (
    Fetch,
    Job,
    clean_stale,
    create_bare,
    ensure_commit,
    export_tree,
    remove_tree,
)
from agentic_rubrics.exceptions import ConfigError, RepoError
from agentic_rubrics.types import Task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RepoTree:
    """A repository tree at a task's base commit, and how it was obtained (for logs and reports)."""

    path: Path
    """The folder to explore (read-only when it comes from the cache)."""
    source: Literal["cache", "repo_path", "approximate"]
    """``approximate``: a release sdist standing in for the base commit (``sdist_trees``)."""
    repo: str
    commit: str
    url: str | None
    """The URL fetched from, credentials removed; None for a ``repo_path``."""
    cached: bool
    """True when the tree was already exported: no git call at all."""
    fetch: Fetch
    """What reached the server: nothing, the commit by hash at depth 1, or all branches and tags."""
    seconds: float
    """Wall time of the whole call, waits included."""
    lock_wait_seconds: float = 0.0
    """Time spent waiting for other threads or processes working on the same repository or commit."""
    fetch_seconds: float = 0.0
    """Time of the git calls that made the commit available (zero on a cache hit)."""
    export_seconds: float = 0.0
    """Time of writing the tree out (zero on a cache hit)."""
    warning: str | None = None
    """A ``repo_path`` whose HEAD is not ``base_commit``, or that could not be checked."""
    skipped: tuple[str, ...] = field(default=())
    """Tree entries left out of the export: symbolic links leading out of it, ``.git`` paths."""

    def record(self) -> dict[str, Any]:
        """What a run records about it: no local path, no credentials."""
        out = asdict(self)
        out.pop("path")
        out["skipped"] = len(self.skipped)
        for name in ("seconds", "lock_wait_seconds", "fetch_seconds", "export_seconds"):
            out[name] = round(out[name], 3)
        return out


class RepoCache:
    """Bare repositories and exported trees in one folder, safe to share between processes."""

    def __init__(
        self,
        root: Path | None = None,
        url_template: str = DEFAULT_URL_TEMPLATE,
        *,
        fetch_timeout: float = 900.0,
        git_timeout: float = 300.0,
        lock_timeout: float = 3600.0,
        full_fetch_fallback: bool = True,
        durable: bool = True,
        max_file_mib: int = 100,
        max_tree_mib: int = 2048,
        max_files: int = 200_000,
    ) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()
        self.template = UrlTemplate(url_template)
        self.fetch_timeout = fetch_timeout
        self.git_timeout = git_timeout
        self.lock_timeout = lock_timeout
        self.full_fetch_fallback = full_fetch_fallback
        self.durable = durable
        self.bounds = ExportBounds(max_file_mib << 20, max_tree_mib << 20, max_files)
        self.git = Git(timeout=git_timeout)

    @classmethod
    def from_config(cls, config: RepoConfig) -> RepoCache:
        """The cache a configuration names (it must have a ``url_template``).

        Raises:
            RepoError: git is not installed.
        """
        if config.url_template is None:
            raise ConfigError("repository fetching is off (repos.url_template is none)")
        return cls(
            config.cache_dir,
            config.url_template,
            fetch_timeout=config.fetch_timeout,
            git_timeout=config.git_timeout,
            lock_timeout=config.lock_timeout,
            full_fetch_fallback=config.full_fetch_fallback,
            durable=config.durable,
            max_file_mib=config.max_file_mib,
            max_tree_mib=config.max_tree_mib,
            max_files=config.max_files,
        )

    def url(self, repo: str) -> str:
        """The URL ``repo`` is fetched from, credentials removed."""
        return redact_url(self.template.format(*parse_repo(repo)))

    def provision(self, repo: str, base_commit: str) -> Path:
        """The folder holding ``repo``'s tree at ``base_commit`` (see ``checkout``)."""
        return self.checkout(repo, base_commit).path

    async def acheckout(self, repo: str, base_commit: str) -> RepoTree:
        """``checkout`` in a worker thread: it blocks on git, locks and the disk."""
        return await asyncio.to_thread(self.checkout, repo, base_commit)

    def checkout(self, repo: str, base_commit: str) -> RepoTree:
        """``repo`` at ``base_commit``: exported once, then returned from the cache. Raises RepoError."""
        start = time.monotonic()
        owner, name = parse_repo(repo)
        sha = parse_commit(base_commit, repo=repo)
        job = Job(repo, sha, self.template.format(owner, name))
        key = f"{owner}__{name}"
        final = self.root / "trees" / key / sha

        def tree(cached: bool, fetch: Fetch, waited: float, **more: Any) -> RepoTree:
            return RepoTree(
                path=final,
                source="cache",
                repo=repo,
                commit=sha,
                url=redact_url(job.raw_url),
                cached=cached,
                fetch=fetch,
                seconds=time.monotonic() - start,
                lock_wait_seconds=waited,
                **more,
            )

        if final.is_dir():
            return tree(True, "none", 0.0)
        try:
            return self._provide(job, key, final, tree)
        except OSError as exc:  # the cache folder itself: permissions, a full disk
            raise job.error(f"cache folder {self.root}: {exc}", "cache_unusable") from exc

    def _provide(self, job: Job, key: str, final: Path, tree: Callable[..., RepoTree]) -> RepoTree:
        """Fetch and export under the commit's lock, then the repository's (always in that order)."""
        repo, sha = job.repo, job.commit
        with self._lock(self.root / "locks" / key / f"{sha}.lock", job) as export_lock:
            if final.is_dir():  # another process exported it while this one waited
                return tree(True, "none", export_lock.waited)
            for leftover in final.parent.glob(f".tmp-{sha}-*"):
                remove_tree(leftover)
            with self._lock(self.root / "locks" / f"{key}.lock", job) as repo_lock:
                fetch_start = time.monotonic()
                bare = create_bare(self.git, self.root / "git" / f"{key}.git", job)
                assert repo_lock.fd is not None
                fetch = ensure_commit(
                    self.git,
                    bare,
                    job,
                    lock_fd=repo_lock.fd,
                    timeout=self.fetch_timeout,
                    full_fallback=self.full_fetch_fallback,
                )
            export_start = time.monotonic()
            skipped = export_tree(
                self.git,
                bare,
                job,
                final,
                timeout=self.git_timeout,
                durable=self.durable,
                bounds=self.bounds,
            )
        log.info(
            "%s at %s: exported (fetch: %s) from %s", repo, sha, fetch, redact_url(job.raw_url)
        )
        return tree(
            False,
            fetch,
            export_lock.waited + repo_lock.waited,
            fetch_seconds=export_start - fetch_start,
            export_seconds=time.monotonic() - export_start,
            skipped=skipped,
        )

    def sweep(self) -> int:
        """Remove what killed processes left (temp exports and repositories, git lock files).

        Only what no live process is working on: each leftover is removed under its lock, taken
        without waiting. Returns the number of temp folders removed.
        """
        removed = 0
        for key_dir in sorted((self.root / "trees").glob("*")):
            for tmp in sorted(key_dir.glob(".tmp-*")):
                sha = tmp.name.split("-")[1]
                with (
                    contextlib.suppress(TimeoutError),
                    FileLock(self.root / "locks" / key_dir.name / f"{sha}.lock", 0.0),
                ):
                    remove_tree(tmp)
                    removed += 1
        for path in sorted((self.root / "git").glob("*")):
            key = path.name.removeprefix(".tmp-").rsplit(".git", 1)[0]
            with (
                contextlib.suppress(TimeoutError),
                FileLock(self.root / "locks" / f"{key}.lock", 0.0),
            ):
                if path.name.startswith(".tmp-"):
                    remove_tree(path)
                    removed += 1
                else:
                    clean_stale(path)
        return removed

    @contextlib.contextmanager
    def _lock(self, path: Path, job: Job) -> Iterator[FileLock]:
        lock = FileLock(path, self.lock_timeout)
        try:
            lock.__enter__()
        except TimeoutError as exc:
            raise job.error(
                f"{exc} (another process is fetching or exporting)", "lock_timeout"
            ) from None
        try:
            yield lock
        finally:
            lock.__exit__(None, None, None)


def check_checkout(path: Path, base_commit: str, git: Git | None = None) -> str | None:
    """A warning when ``path`` is a git checkout whose HEAD is not ``base_commit``, else None.

    A folder without its own ``.git`` (a plain tree) has nothing to check. The folder's own git
    configuration is read by git, as when its owner runs git there; the caller's is not.
    """
    if not path.is_dir():
        raise RepoError(f"repo_path {path} is not a folder", reason="no_such_folder")
    if not base_commit or not (path / ".git").exists():
        return None
    try:
        git = git or Git()
    except RepoError as exc:
        return f"repo_path {path}: HEAD not checked against base_commit ({exc})"
    head = git.run(
        ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
        cwd=path,
        extra_env={"GIT_CEILING_DIRECTORIES": str(path.resolve().parent)},
    )
    if not head.ok:
        return (
            f"repo_path {path}: cannot read the checkout's HEAD ({head.tail(200) or 'no commit'})"
        )
    sha, wanted = head.stdout.strip(), base_commit.strip().lower()
    if sha == wanted or (len(wanted) >= 7 and sha.startswith(wanted)):
        return None
    return f"repo_path {path} is at {sha}, not at base_commit {base_commit}"


def resolve_repo_path(task: Task, cache: RepoCache | None) -> RepoTree | None:
    """The tree a task is explored in: its ``repo_path`` (HEAD checked), else the cache's checkout
    of ``repo`` at ``base_commit``; None when the task has neither (or there is no cache).

    Blocks (git, locks, disk): call it through ``asyncio.to_thread`` or ``aresolve_repo_path``.
    """
    if task.repo_path:
        start = time.monotonic()
        path = Path(task.repo_path)
        warning = check_checkout(path, task.base_commit, cache.git if cache else None)
        if warning:
            log.warning("%s: %s", task.instance_id, warning)
        return RepoTree(
            path=path,
            source="repo_path",
            repo=task.repo,
            commit=task.base_commit,
            url=None,
            cached=True,
            fetch="none",
            seconds=time.monotonic() - start,
            warning=warning,
        )
    if cache is None or not task.repo or not task.base_commit:
        return None
    return cache.checkout(task.repo, task.base_commit)


async def aresolve_repo_path(task: Task, cache: RepoCache | None) -> RepoTree | None:
    """``resolve_repo_path`` in a worker thread."""
    return await asyncio.to_thread(resolve_repo_path, task, cache)
