"""Where repositories come from and where they are kept: the run's ``repos`` settings."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    field_serializer,
    field_validator,
)

from agentic_rubrics.datasets.repos_git import UrlTemplate, redact_url
from agentic_rubrics.exceptions import ConfigError

__all__ = ["DEFAULT_URL_TEMPLATE", "RepoConfig", "default_cache_dir"]

DEFAULT_URL_TEMPLATE = "https://github.com/{repo}.git"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/agentic-rubrics/repos``, else ``~/.cache/agentic-rubrics/repos`` — for
    root ``/var/cache/agentic-rubrics/repos``: root's home is closed to the unprivileged user the
    sandbox runs as, which must read the cached trees it lays its writable layer over."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "agentic-rubrics" / "repos"
    if os.geteuid() == 0:
        return Path("/var/cache/agentic-rubrics/repos")
    return Path.home() / ".cache" / "agentic-rubrics" / "repos"


class RepoConfig(BaseModel):
    """Where repositories come from and where they are kept."""

    model_config = ConfigDict(extra="forbid")

    url_template: str | None = DEFAULT_URL_TEMPLATE
    """Clone URL of a task's ``repo``, with ``{repo}`` (owner/name), ``{owner}``, ``{name}`` fields;
    ``None`` (``--repo-url none``): nothing is fetched, and a task without ``repo_path`` is explored
    without its repository (the static explorer then writes the issue-only rubric)."""
    cache_dir: Path | None = None
    """The cache folder (bare repositories and exported trees); None: the user's cache folder."""
    fetch_timeout: float = Field(900.0, gt=0)
    """Seconds one ``git fetch`` may take before its process group is killed."""
    git_timeout: float = Field(300.0, gt=0)
    """Seconds any other git call (including the export of a tree) may take."""
    lock_timeout: float = Field(3600.0, gt=0)
    """Seconds to wait for another process's fetch or export of the same repository or commit."""
    full_fetch_fallback: bool = True
    """Fetch all branches and tags when a server refuses a commit by hash (costly on big upstreams)."""
    durable: bool = True
    """Flush exported files to disk before they are published (safe against power cuts)."""
    max_file_mib: int = Field(100, ge=1)
    """An exported tree with a larger file is refused (``export_too_large``), before anything is
    written: a small upstream can hold a huge blob of zeros (it compresses to nothing)."""
    max_tree_mib: int = Field(2048, ge=1)
    """An exported tree larger than this in all is refused the same way (SWE-bench's trees: under
    50 MiB; sympy's largest 40)."""
    approximate_trees: Path | None = None
    """An ``env-check`` report (JSON): an instance whose row there is ``runnable`` on an approximate
    tree (a release sdist standing in for a repository too big to mirror,
    :mod:`agentic_rubrics.datasets.sdist_trees`) takes that same tree — from the cache env-check made
    it in, its mark checked against the row — when its repository is not to be had; every result on
    it is marked ``approximate_tree``. ``None``: never."""
    max_files: int = Field(200_000, ge=1)
    """An exported tree with more entries (files, links and folders) is refused the same way: git
    stores a folder once however often it recurs, so a few kilobytes can hold millions of empty
    files (SWE-bench's trees: at most 4,071 entries, pylint's)."""

    @field_serializer("url_template")
    def _public_template(self, value: str | None, info: SerializationInfo) -> str | None:
        # config.json and reports never hold a token; a worker process gets it (context secrets)
        if value is None or (info.context or {}).get("secrets"):
            return value
        return redact_url(value)

    @field_validator("url_template")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is None or value.strip().lower() in ("", "none"):
            return None
        try:
            UrlTemplate(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value
