"""Approximate trees: a repository too big to mirror, taken from its release sdist on PyPI.

Django's sdists ship the whole ``tests/`` tree with ``runtests.py`` and ``test_sqlite.py``; where an
instance's repository or base commit is not to be had, the sdist of the release nearest the instance's
``version`` stands in for it, **marked as such**: ``approximate.json`` beside the tree (never inside:
the tests and patches see the tree only) names the sdist, its version and sha256, the rule that chose
it and the patches taken back out. Every result on such a tree carries ``approximate_tree: true``
(:func:`approximate_source` reads the mark back); it is never presented as the base commit.

"Nearest" (:data:`RULES`): an instance's ``version`` is the version string of the development branch
at its base commit (``X.Y`` while ``X.Y`` is being developed), and the fix is released in ``X.Y``.

- ``first``: ``X.Y``'s first final release, with the instance's gold and test patches taken back
  out where they are already in it (``git apply --reverse``, whole patches only, recorded in
  ``reversed``): the tree before the fix, as near the base commit as a release gets;
- ``last``: the same with ``X.Y``'s last final release;
- ``previous``: the last final release before ``X.Y`` (no patch to take out, an older tree);
- ``nearest`` (the default): ``first`` where the whole gold patch is in that release and comes out,
  else ``previous`` (the release then differs from the base commit where the fix goes: the one before
  it is nearer). Decided from the patches alone, never from a test's outcome; ``release`` in the mark
  says which. On the 68 Django instances of SWE-bench Lite it gives the most runnable instances
  (benchmarks/README.md).

The index is the one pip uses (``PIP_INDEX_URL``, else pip's ``global.index-url``, else PyPI), read
through its JSON simple API (PEP 691): nothing is built and no setup code runs to fetch (``pip
download`` of an sdist would run its ``setup.py`` here). Each sdist is checked against the index's
sha256, unpacked with tarfile's ``data`` filter (no links out, no devices), git-initialised and
committed once (the test script applies patches with ``git apply``); every write is atomic (a folder
renamed into place).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentic_rubrics.datasets.repos_git import Git
from agentic_rubrics.exceptions import RepoError

SDIST_PACKAGES = {"django/django": "Django"}
"""Repositories an approximate tree may stand in for, and their PyPI project."""
Rule = Literal["nearest", "first", "last", "previous"]
RULES: tuple[Rule, ...] = ("nearest", "first", "last", "previous")
MARK = "approximate.json"
"""The file beside an approximate tree that says what it is."""
SCHEMA = "agentic-rubrics/approximate-tree/1"
_SDIST = re.compile(r"^[A-Za-z0-9_.-]+-(\d+(?:\.\d+)*)\.tar\.gz$")
_TIMEOUT = 120.0


@dataclass(frozen=True)
class Sdist:
    """One final release's sdist on the index."""

    filename: str
    url: str
    sha256: str
    version: tuple[int, ...]

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version))


def approximate_source(tree: Path) -> dict[str, Any] | None:
    """What ``approximate.json`` beside ``tree`` says (``None``: ``tree`` is no approximate tree)."""
    mark = Path(tree).parent / MARK
    try:
        data = json.loads(mark.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None


def _pip_setting(name: str) -> str | None:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", name],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def index_url() -> str:
    """The index pip installs from on this machine."""
    url = os.environ.get("PIP_INDEX_URL") or _pip_setting("global.index-url")
    return (url or "https://pypi.org/simple").rstrip("/")


def _context() -> ssl.SSLContext:
    cert = os.environ.get("PIP_CERT") or _pip_setting("global.cert")
    return ssl.create_default_context(cafile=cert if cert and Path(cert).is_file() else None)


def sdists(project: str, index: str | None = None) -> list[Sdist]:
    """Every final release's ``.tar.gz`` of ``project`` on the index, oldest first."""
    url = f"{index or index_url()}/{project.lower()}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT, context=_context()) as reply:
            page = json.loads(reply.read(64 << 20))
    except (OSError, ValueError) as exc:
        raise RepoError(f"{url}: {exc}", reason="sdist_unavailable", url=url) from None
    out = []
    for entry in page.get("files", []) if isinstance(page, dict) else []:
        match = _SDIST.match(str(entry.get("filename", "")))
        digest = (entry.get("hashes") or {}).get("sha256")
        if match and digest and not entry.get("yanked"):
            version = tuple(int(p) for p in match.group(1).split("."))
            out.append(Sdist(entry["filename"], entry["url"], digest, version))
    return sorted(out, key=lambda s: s.version)


def pick(version: str, available: list[Sdist], rule: Rule) -> Sdist | None:
    """The sdist ``rule`` names for an instance of ``version`` (``X.Y``), or ``None``."""
    try:
        series = tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
        return None
    if rule == "previous":
        older = [s for s in available if s.version[:2] < series]
        return older[-1] if older else None
    same = [s for s in available if s.version[:2] == series]
    if not same:
        return None
    return same[0] if rule == "first" else same[-1]


def _download(sdist: Sdist, folder: Path) -> Path:
    target = folder / sdist.filename
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:
        try:
            with urllib.request.urlopen(sdist.url, timeout=_TIMEOUT, context=_context()) as reply:
                while chunk := reply.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
        except OSError as exc:
            Path(out.name).unlink()
            raise RepoError(f"{sdist.url}: {exc}", reason="sdist_unavailable") from None
    if digest.hexdigest() != sdist.sha256:
        Path(out.name).unlink()
        raise RepoError(
            f"{sdist.filename}: sha256 differs from the index's", reason="sdist_unavailable"
        )
    Path(out.name).replace(target)
    return target


def _commit(git: Git, tree: Path, message: str) -> None:
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=agentic-rubrics", "-c", "user.email=none@localhost", "commit", "-q"],
    ):
        done = git.run(
            [*args, "--no-verify", "-m", message] if "commit" in args else args, cwd=tree
        )
        if not done.ok:
            raise RepoError(f"git {args[0]} in {tree}: {done.tail()}", reason="export_failed")


def _unpack(archive: Path, final: Path) -> None:
    """``archive``'s single top folder as ``final`` (atomic: unpacked beside it, then renamed)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".unpack-", dir=final.parent))
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(scratch, filter="data")
        tops = list(scratch.iterdir())
        if len(tops) != 1 or not tops[0].is_dir():
            raise RepoError(f"{archive.name}: not one top folder", reason="export_failed")
        _commit(Git(), tops[0], f"{archive.name} as released")
        tops[0].replace(final)
    except (OSError, tarfile.TarError) as exc:
        raise RepoError(f"{archive.name}: {exc}", reason="export_failed") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _reverse(git: Git, tree: Path, name: str, patch: str) -> bool:
    """Take ``patch`` back out of ``tree`` when the whole of it is there (``True``: it was)."""
    if not patch.strip():
        return False
    with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as out:
        out.write(patch)
    try:
        check = git.run(["apply", "--reverse", "--check", out.name], cwd=tree)
        return check.ok and git.run(["apply", "--reverse", out.name], cwd=tree).ok
    finally:
        Path(out.name).unlink()


class SdistTrees:
    """Approximate trees under ``cache`` (``sdists/``: the archives; ``releases/``: each unpacked
    once; ``instances/``: one instance's tree and its ``approximate.json``)."""

    def __init__(self, cache: Path, rule: Rule = "first", index: str | None = None) -> None:
        self.cache = cache
        self.rule = rule
        self.index = index
        self._listed: dict[str, list[Sdist]] = {}

    def covers(self, repo: str) -> bool:
        return repo in SDIST_PACKAGES

    def tree(self, instance_id: str, repo: str, version: str, patches: dict[str, str]) -> Path:
        """The instance's approximate tree (``patches``: ``gold_patch`` and ``test_patch``, taken
        back out where the release holds them and the rule is not ``previous``)."""
        project = SDIST_PACKAGES.get(repo)
        if project is None:
            raise RepoError(f"{repo}: no sdist stands in for it", reason="sdist_unavailable")
        folder = self.cache / "instances" / f"{instance_id}.{self.rule}"
        if approximate_source(folder / "tree") is not None:
            return folder / "tree"
        if project not in self._listed:
            self._listed[project] = sdists(project, self.index)
        if self.rule == "nearest":  # the first release before its fix, else the release before
            built = self._build(project, version, "first", folder, patches, need_gold=True)
            return built or self._build(project, version, "previous", folder, {})  # type: ignore[return-value]
        taken_out = patches if self.rule != "previous" else {}
        return self._build(project, version, self.rule, folder, taken_out)  # type: ignore[return-value]

    def _build(
        self,
        project: str,
        version: str,
        rule: Rule,
        folder: Path,
        patches: dict[str, str],
        *,
        need_gold: bool = False,
    ) -> Path | None:
        """The tree from ``rule``'s release with ``patches`` taken out where they are in it;
        ``None`` when ``need_gold`` and the gold patch is not (or there is no such release)."""
        sdist = pick(version, self._listed[project], rule)
        if sdist is None:
            if need_gold:
                return None
            raise RepoError(
                f"{project}: no release for version {version!r} ({rule})",
                reason="sdist_unavailable",
            )
        release = self.cache / "releases" / sdist.filename.removesuffix(".tar.gz")
        if not release.is_dir():
            _unpack(_download(sdist, self.cache / "sdists"), release)
        git = Git()
        folder.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".tree-", dir=folder.parent))
        try:
            tree = _linked_copy(release, scratch / "tree")
            taken_out = [n for n, p in patches.items() if _reverse(git, tree, n, p)]
            if need_gold and "gold_patch" not in taken_out:
                return None
            mark = {
                "schema": SCHEMA,
                "approximate_tree": True,
                "source": {
                    "sdist": sdist.filename,
                    "version": sdist.version_text,
                    "sha256": sdist.sha256,
                },
                "rule": self.rule,
                "release": rule,
                "instance_version": version,
                "reversed": taken_out,
            }
            (scratch / MARK).write_text(json.dumps(mark, indent=1, sort_keys=True) + "\n")
            shutil.rmtree(folder, ignore_errors=True)
            scratch.replace(folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return folder / "tree"


def _linked_copy(release: Path, target: Path) -> Path:
    """The release's files hard-linked at ``target`` (one instance's tree costs no copy) in a git
    repository of its own (``git apply`` reads paths from its root). ``git apply`` writes a patched
    file anew (unlink, create), never through the link: the release is not changed."""
    shutil.copytree(
        release, target, symlinks=True, copy_function=os.link, ignore=shutil.ignore_patterns(".git")
    )
    done = Git().run(["init", "-q"], cwd=target)
    if not done.ok:
        raise RepoError(f"git init in {target}: {done.tail()}", reason="export_failed")
    return target


def approximate_cache(repo_cache: Path | None) -> Path:
    """Where approximate trees are kept: beside the repository cache (``env-check``'s
    ``--repo-cache``, a run's ``repos.cache_dir``), so a run finds the trees env-check checked."""
    from agentic_rubrics.datasets.repos_config import default_cache_dir

    return (repo_cache or default_cache_dir()).parent / "approximate"


def approved_tree(report: Path, instance_id: str, cache: Path) -> Path:
    """The approximate tree ``report`` (an ``env-check`` JSON) shows ``instance_id`` runnable on:
    its FAIL_TO_PASS fail without the gold patch and pass with it on that very tree (its mark in
    ``cache`` the same as the row's ``tree_source``).

    Raises:
        RepoError: ``approximate_not_runnable`` (no such row), ``approximate_tree_missing`` (the
            tree is not in ``cache``, or is another one).
    """
    from agentic_rubrics.exceptions import DataError
    from agentic_rubrics.runfolder.files import read_json

    data = read_json(report, DataError)
    rows = data.get("rows") if isinstance(data, dict) else None
    found = [r for r in rows or [] if isinstance(r, dict) and r.get("instance_id") == instance_id]
    row = found[0] if found else {}
    if not (row.get("runnable") and row.get("approximate_tree")):
        raise RepoError(
            f"{instance_id}: {report} shows no approximate tree it is runnable on",
            reason="approximate_not_runnable",
        )
    source = row.get("tree_source") or {}
    tree = cache / "instances" / f"{instance_id}.{source.get('rule')}" / "tree"
    if approximate_source(tree) != source:
        raise RepoError(
            f"{instance_id}: the approximate tree env-check ran is not in {cache}",
            reason="approximate_tree_missing",
        )
    return tree


def instance_trees(url_template: str | None, cache: Path | None, approximate: str = "none") -> Any:
    """An instance's tree: its repository at its base commit (``url_template``, ``cache``: a
    :class:`~agentic_rubrics.datasets.repos.RepoCache`'s), else, where there is none and a release
    sdist stands in for that repository, its approximate tree by ``approximate``'s rule (``none``:
    never). ``None`` for every instance without ``url_template``. Used by ``env-check`` and
    ``benchmarks/execution_coverage.py`` alike.

    Raises:
        ConfigError: an unknown rule.
    """
    from agentic_rubrics.datasets.repos import RepoCache
    from agentic_rubrics.exceptions import ConfigError

    if approximate != "none" and approximate not in RULES:
        raise ConfigError(f"--approximate-trees {approximate}: one of {', '.join(RULES)}, none")
    if url_template is None:
        return lambda instance: None
    repos = RepoCache(cache, url_template)
    folder = approximate_cache(cache)
    sdist_trees = SdistTrees(folder, approximate) if approximate != "none" else None  # type: ignore[arg-type]

    def tree(instance: Any) -> Path:
        try:
            return repos.checkout(instance.repo, instance.base_commit).path
        except RepoError:
            if sdist_trees is None or not sdist_trees.covers(instance.repo):
                raise
        patches = {"gold_patch": instance.gold_patch, "test_patch": instance.test_patch}
        return sdist_trees.tree(instance.instance_id, instance.repo, instance.version, patches)

    return tree
