"""Repositories at a base commit: fetched once into a cache, exported without history, safely shared.

Upstreams are small git repositories made here, served over file:// or a loopback smart-HTTP server
(``tests/git_http.py``), which counts fetches and can refuse commits by hash as v0 servers do.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from agentic_rubrics.datasets.repos import RepoCache, RepoTree, check_checkout, resolve_repo_path
from agentic_rubrics.datasets.repos_config import RepoConfig, default_cache_dir
from agentic_rubrics.datasets.repos_git import FileLock, redact_url
from agentic_rubrics.datasets.repos_store import remove_tree
from agentic_rubrics.exceptions import AgenticRubricsError, ConfigError, DataError, RepoError
from agentic_rubrics.types import Task
from tests.conftest import git
from tests.git_http import GitHttpServer

MISSING = "0123456789abcdef0123456789abcdef01234567"
ROOT = Path(__file__).resolve().parents[1]


def git_in(repo: Path, *args: str, input_text: str) -> str:
    """git with ``input_text`` on stdin (plumbing that reads it: mktree, hash-object)."""
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    out = subprocess.run(
        ["git", *args],
        cwd=repo,
        env=env,
        input=input_text.encode(),
        capture_output=True,
        check=True,
    )
    return out.stdout.decode()


def make_upstream(path: Path, revisions: list[dict[str, str | bytes]]) -> list[str]:
    """A repository at ``path`` with one commit per {file: content} (None-free; later ones add)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    shas = []
    for i, files in enumerate(revisions):
        for rel, content in files.items():
            p = path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content.encode() if isinstance(content, str) else content)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"c{i}")
        shas.append(git(path, "rev-parse", "HEAD").strip())
    return shas


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, list[str]]:
    """acme/widget with three commits, served from ``tmp_path/srv/acme__widget``."""
    repo = tmp_path / "srv" / "acme__widget"
    shas = make_upstream(
        repo,
        [
            {"widget/__init__.py": "VERSION = 1\n", "README.md": "# widget\n"},
            {"widget/core.py": "def f():\n    return 2\n", "data/blob.bin": bytes(range(256))},
            {"widget/__init__.py": "VERSION = 3\n"},
        ],
    )
    return repo, shas


def file_template(tmp_path: Path) -> str:
    return f"file://{tmp_path}/srv/{{owner}}__{{name}}"


def listing(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every file and link under ``root`` (no folders): kind and content or target."""
    out: dict[str, tuple[str, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = ("link", str(p.readlink()).encode())
            else:
                kind = "exec" if p.stat().st_mode & stat.S_IXUSR else "file"
                out[rel] = (kind, p.read_bytes())
    return out


def commit_listing(repo: Path, sha: str) -> dict[str, tuple[str, bytes]]:
    """The commit's tree as git stores it: every blob's bytes, mode as kind."""
    kinds = {"100644": "file", "100755": "exec", "120000": "link"}
    entries = []
    for line in git(repo, "ls-tree", "-r", "-z", sha).split("\0"):
        if line:
            meta, rel = line.split("\t", 1)
            mode, _, blob = meta.split()
            entries.append((rel, kinds[mode], blob))
    batch = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=repo,
        input="".join(f"{blob}\n" for _, _, blob in entries).encode(),
        capture_output=True,
        check=True,
    ).stdout
    out: dict[str, tuple[str, bytes]] = {}
    at = 0
    for rel, kind, _ in entries:  # each answer: "<sha> blob <size>\n<bytes>\n"
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        out[rel] = (kind, batch[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1
    return out


# --------------------------------------------------------------------------- the export


def test_export_holds_exactly_the_commits_tree_and_no_history(tmp_path: Path) -> None:
    repo = tmp_path / "srv" / "acme__widget"
    (sha,) = make_upstream(
        repo,
        [
            {
                ".gitattributes": "skip.txt export-ignore\nv.py export-subst\n"
                "id.txt ident\ncrlf.txt text eol=crlf\n",
                "skip.txt": "kept: export-ignore must not drop files\n",
                "v.py": 'V = "$Format:%H$"\n',
                "id.txt": "$Id$\n",
                "crlf.txt": "a\nb\n",
                "bin/run": "#!/bin/sh\necho hi\n",
                "pkg/mod.py": "X = 1\n",
            }
        ],
    )
    (repo / "bin" / "run").chmod(0o755)
    (repo / "inside").symlink_to("pkg/mod.py")
    (repo / "outside").symlink_to("../../../etc/passwd")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "modes and links")
    sha = git(repo, "rev-parse", "HEAD").strip()

    cache = RepoCache(tmp_path / "cache", file_template(tmp_path))
    tree = cache.checkout("acme/widget", sha)

    assert tree.path == tmp_path / "cache" / "trees" / "acme__widget" / sha
    assert not (tree.path / ".git").exists()
    expected = commit_listing(repo, sha)
    del expected["outside"]  # a link leading out of the tree is left out, and said so
    assert listing(tree.path) == expected
    assert tree.skipped == ("outside",)
    assert (tree.path / "v.py").read_text() == 'V = "$Format:%H$"\n'
    assert (tree.path / "crlf.txt").read_bytes() == b"a\nb\n"
    # read-only for consumers: no write bit anywhere
    for dirpath, _, filenames in os.walk(tree.path):
        assert not Path(dirpath).stat().st_mode & 0o222
        for name in filenames:
            p = Path(dirpath) / name
            assert p.is_symlink() or not p.stat().st_mode & 0o222
    assert (tree.cached, tree.fetch, tree.source) == (False, "by_hash", "cache")
    assert tree.fetch_seconds > 0 and tree.export_seconds > 0
    assert tree.seconds >= tree.fetch_seconds + tree.export_seconds
    assert tree.record()["url"] == f"file://{tmp_path}/srv/acme__widget"
    assert "path" not in tree.record() and tree.record()["skipped"] == 1


def test_a_git_path_inside_a_tree_is_never_exported(tmp_path: Path) -> None:
    """A hostile commit can carry a ``.git`` folder in its tree; the explorer must never see one."""
    repo = tmp_path / "srv" / "acme__widget"
    make_upstream(repo, [{"a.py": "A = 1\n"}])
    blob = git_in(repo, "hash-object", "-w", "--stdin", input_text="[core]\n").strip()
    inner = git_in(repo, "mktree", input_text=f"100644 blob {blob}\tconfig\n").strip()
    head_tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    listing_text = git(repo, "ls-tree", head_tree) + f"040000 tree {inner}\t.git\n"
    tree_sha = git_in(repo, "mktree", input_text=listing_text).strip()
    sha = git_in(repo, "commit-tree", tree_sha, "-m", "hostile", input_text="").strip()
    git(repo, "update-ref", "refs/heads/main", sha)

    with pytest.raises(RepoError) as err:
        RepoCache(tmp_path / "cache", file_template(tmp_path)).checkout("acme/widget", sha)
    assert err.value.reason == "export_failed" and ".git/config" in str(err.value)
    assert not list((tmp_path / "cache" / "trees" / "acme__widget").iterdir())


# --------------------------------------------------------------------------- the cache


def test_second_checkout_is_served_from_the_cache_without_the_upstream(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    repo, shas = upstream
    with GitHttpServer(tmp_path / "srv") as server:
        cache = RepoCache(tmp_path / "cache", server.url() + "/{owner}__{name}")
        first = cache.checkout("acme/widget", shas[1])
        assert (first.cached, first.fetch) == (False, "by_hash")
        assert server.fetches() == 1
        again = cache.checkout("acme/widget", shas[1])
        other_instance = RepoCache(tmp_path / "cache", server.url() + "/{owner}__{name}")
        third = other_instance.checkout("acme/widget", shas[1])
        assert server.fetches() == 1  # neither reached the server
    assert (again.cached, again.fetch) == (True, "none")
    assert again.fetch_seconds == again.export_seconds == again.lock_wait_seconds == 0
    assert (third.cached, third.path) == (True, first.path)
    assert listing(first.path) == commit_listing(repo, shas[1])

    # the server is gone now: a cached commit still works, a new one fails naming everything
    assert cache.provision("acme/widget", shas[1]) == first.path
    with pytest.raises(RepoError) as err:
        cache.checkout("acme/widget", shas[0])
    assert err.value.reason == "fetch_failed"
    for part in ("acme/widget", shas[0], f"127.0.0.1:{server.port}/acme__widget"):
        assert part in str(err.value)


def test_a_commit_already_fetched_is_exported_again_without_fetching(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    _, shas = upstream
    cache = RepoCache(tmp_path / "cache", file_template(tmp_path))
    first = cache.checkout("acme/widget", shas[2])
    remove_tree(first.path)  # an export deleted by hand (or by a cleanup of exports)
    (tmp_path / "srv" / "acme__widget").rename(tmp_path / "gone")
    again = cache.checkout("acme/widget", shas[2])
    assert (again.cached, again.fetch) == (False, "none")
    assert listing(again.path) == commit_listing(tmp_path / "gone", shas[2])


def test_wrong_commit_fails_naming_repository_commit_and_url(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    cache = RepoCache(tmp_path / "cache", file_template(tmp_path))
    with pytest.raises(RepoError) as err:
        cache.checkout("acme/widget", MISSING)
    assert err.value.reason == "commit_not_found"
    assert (err.value.repo, err.value.commit) == ("acme/widget", MISSING)
    assert err.value.url == f"file://{tmp_path}/srv/acme__widget"
    for part in ("acme/widget", MISSING, err.value.url, "no such commit"):
        assert part in str(err.value)
    assert isinstance(err.value, DataError) and isinstance(err.value, AgenticRubricsError)
    assert not (tmp_path / "cache" / "trees" / "acme__widget" / MISSING).exists()

    strict = RepoCache(tmp_path / "cache", file_template(tmp_path), full_fetch_fallback=False)
    with pytest.raises(RepoError, match="refused the commit by hash") as err:
        strict.checkout("acme/widget", MISSING)
    assert err.value.reason == "commit_not_found"


def test_a_tag_object_is_not_taken_for_a_commit(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    repo, shas = upstream
    git(repo, "tag", "-a", "v1", "-m", "release", shas[2])
    tag = git(repo, "rev-parse", "v1").strip()
    assert tag != shas[2]
    with pytest.raises(RepoError, match="does not hold that commit"):
        RepoCache(tmp_path / "cache", file_template(tmp_path)).checkout("acme/widget", tag)


@pytest.mark.parametrize(
    ("repo", "commit", "reason"),
    [
        ("../etc", MISSING, "invalid_repo"),
        ("acme/widget/extra", MISSING, "invalid_repo"),
        ("-upload-pack=x/y", MISSING, "invalid_repo"),
        ("acme/..", MISSING, "invalid_repo"),
        ("acme", MISSING, "invalid_repo"),
        ("acme/widget", "HEAD", "invalid_commit"),
        ("acme/widget", MISSING[:12], "invalid_commit"),
        ("acme/widget", "--upload-pack=touch", "invalid_commit"),
    ],
)
def test_hostile_repository_names_and_commits_are_refused(
    tmp_path: Path, repo: str, commit: str, reason: str
) -> None:
    cache = RepoCache(tmp_path / "cache", file_template(tmp_path))
    with pytest.raises(RepoError) as err:
        cache.checkout(repo, commit)
    assert err.value.reason == reason
    assert not (tmp_path / "cache").exists()  # nothing was created for it


def test_url_template_fields_and_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = RepoCache(tmp_path, "https://example.org/{owner}/{name}.git")
    assert cache.url("a/b") == "https://example.org/a/b.git"
    assert RepoCache(tmp_path).url("sympy/sympy") == "https://github.com/sympy/sympy.git"
    for bad in ("https://x/{repo}/{branch}", "https://x/{0}", "https://x/{repo!r}", "https://x/{"):
        with pytest.raises(ConfigError):
            RepoCache(tmp_path, bad)
        with pytest.raises(ValueError, match=r"unknown field|template"):
            RepoConfig(url_template=bad)
    with pytest.raises(ConfigError) as err:
        RepoCache(tmp_path, "https://bob:s3cret@example.org/{repo}/{branch}")
    assert "s3cret" not in str(err.value) and "{branch}" in str(err.value)
    with pytest.raises(ValueError, match=r"(?i)extra"):
        RepoConfig.model_validate({"url": "x"})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "agentic-rubrics" / "repos"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    home = Path("/var/cache") if os.geteuid() == 0 else Path.home() / ".cache"
    assert default_cache_dir() == home / "agentic-rubrics" / "repos"
    cfg = RepoConfig(url_template="file:///m/{owner}__{name}.git", cache_dir=tmp_path / "c")
    assert RepoCache.from_config(cfg).root == tmp_path / "c"


def test_credentials_never_reach_errors_or_records(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    _, shas = upstream
    assert redact_url("https://u:tok@h/x.git?t=1") == "https://***@h/x.git"
    assert redact_url("git@github.com:a/b.git") == "git@github.com:a/b.git"
    with GitHttpServer(tmp_path / "srv") as server:
        cache = RepoCache(tmp_path / "cache", server.url("bob:s3cret@") + "/{owner}__{name}")
        tree = cache.checkout("acme/widget", shas[0])
        assert tree.url == server.url("***@") + "/acme__widget"
        assert "s3cret" not in json.dumps(tree.record())
        with pytest.raises(RepoError) as err:
            cache.checkout("acme/nothing", shas[0])
    assert "s3cret" not in str(err.value) and "s3cret" not in err.value.url
    assert "acme/nothing" in str(err.value)


def test_the_callers_git_configuration_and_variables_are_ignored(
    tmp_path: Path, upstream: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's ~/.gitconfig rewriting URLs, or GIT_DIR left by a hook, must not change a fetch."""
    _, shas = upstream
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f'[url "file:///nowhere/"]\n\tinsteadOf = file://{tmp_path}/\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "not-a-repo"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'protocol.file.allow'='never'")
    tree = RepoCache(tmp_path / "cache", file_template(tmp_path)).checkout("acme/widget", shas[0])
    assert (tree.path / "widget" / "__init__.py").read_text() == "VERSION = 1\n"


# --------------------------------------------------------------------------- refused by hash


@pytest.mark.parametrize("allow_reachable", [False, True])
def test_a_server_refusing_commits_by_hash_gets_a_full_fetch(
    tmp_path: Path, upstream: tuple[Path, list[str]], allow_reachable: bool
) -> None:
    """A v0 server with uploadpack.allowReachableSHA1InWant off refuses a commit that is no tip."""
    repo, shas = upstream
    # (in this order: allowAnySHA1InWant=false also clears the "reachable" permission)
    git(repo, "config", "uploadpack.allowAnySHA1InWant", "false")
    git(repo, "config", "uploadpack.allowReachableSHA1InWant", str(allow_reachable).lower())
    with GitHttpServer(tmp_path / "srv", protocol_v2=False) as server:
        cache = RepoCache(tmp_path / "cache", server.url() + "/{owner}__{name}")
        tip = cache.checkout("acme/widget", shas[2])  # a branch tip: allowed by hash
        old = cache.checkout("acme/widget", shas[0])  # no tip: refused unless allowed
        middle = cache.checkout("acme/widget", shas[1])
    assert tip.fetch == "by_hash"
    if allow_reachable:
        assert (old.fetch, middle.fetch) == ("by_hash", "by_hash")
        assert server.fetches() == 3
    else:
        # the cache was shallow (tip at depth 1): the full fetch unshallows it, and then holds
        # every commit of the history, so the next one needs no fetch at all
        assert (old.fetch, middle.fetch) == ("full", "none")
        assert server.fetches() == 3  # tip, refused by hash, full
    for sha, tree in zip(shas, (old, middle, tip), strict=True):
        assert listing(tree.path) == commit_listing(repo, sha)


# --------------------------------------------------------------------------- concurrency

_CHILD = """
import json, sys
from pathlib import Path
from agentic_rubrics.datasets.repos import RepoCache
cache = RepoCache(Path(sys.argv[1]), sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
print(json.dumps(cache.checkout("acme/widget", sys.argv[3]).record()), flush=True)
"""


def _child(cache: Path, template: str, sha: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(cache), template, sha],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_two_processes_at_once_fetch_once_and_share_one_export(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    repo, shas = upstream
    with GitHttpServer(tmp_path / "srv") as server:
        template = server.url() + "/{owner}__{name}"
        procs = [_child(tmp_path / "cache", template, shas[1]) for _ in range(2)]
        server.release.clear()  # hold the first fetch so that the other process must wait
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        assert server.held.wait(30)
        time.sleep(2.0)  # time for the other process to reach the lock
        server.release.set()
        records = [json.loads(proc.communicate(timeout=60)[0]) for proc in procs]
        assert server.fetches() == 1
    assert all(p.returncode == 0 for p in procs)
    assert sorted(r["fetch"] for r in records) == ["by_hash", "none"]
    waiter = next(r for r in records if r["fetch"] == "none")
    assert waiter["cached"] is True and waiter["lock_wait_seconds"] >= 0.2
    export = tmp_path / "cache" / "trees" / "acme__widget" / shas[1]
    assert listing(export) == commit_listing(repo, shas[1])
    assert [p.name for p in export.parent.iterdir()] == [shas[1]]  # no temp left behind


def test_threads_at_once_share_fetches_and_exports(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    repo, shas = upstream

    async def many(cache: RepoCache) -> list[RepoTree]:
        jobs = [cache.acheckout("acme/widget", shas[i % 2]) for i in range(6)]
        return list(await asyncio.gather(*jobs))

    with GitHttpServer(tmp_path / "srv") as server:
        cache = RepoCache(tmp_path / "cache", server.url() + "/{owner}__{name}")
        trees = asyncio.run(many(cache))
        assert server.fetches() == 2
    assert sum(not t.cached for t in trees) == 2
    for i, tree in enumerate(trees):
        assert listing(tree.path) == commit_listing(repo, shas[i % 2])


# --------------------------------------------------------------------------- interrupted work


def test_leftovers_of_killed_processes_are_cleaned_and_never_taken_for_a_tree(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    repo, shas = upstream
    cache = RepoCache(tmp_path / "cache", file_template(tmp_path))
    cache.checkout("acme/widget", shas[0])
    bare = tmp_path / "cache" / "git" / "acme__widget.git"
    trees = tmp_path / "cache" / "trees" / "acme__widget"
    # what a kill in the middle of a fetch leaves: git's lock files and temp objects
    (bare / "shallow.lock").write_text("")
    (bare / "refs" / "base").mkdir(parents=True, exist_ok=True)
    (bare / "refs" / "base" / f"{shas[1]}.lock").write_text("")
    (bare / "objects" / "pack").mkdir(parents=True, exist_ok=True)
    (bare / "objects" / "pack" / "tmp_pack_x1").write_bytes(b"PACK\0\0")
    # ... and in the middle of an export: a half temp folder (sealed read-only, as after seal())
    half = trees / f".tmp-{shas[1]}-killed"
    (half / "widget").mkdir(parents=True)
    (half / "widget" / "__init__.py").write_text("VERSION = 1\n")
    for p in (half / "widget", half):
        p.chmod(0o555)
    other = trees / f".tmp-{shas[2]}-killed"
    other.mkdir()
    half_bare = tmp_path / "cache" / "git" / ".tmp-acme__widget.git-killed"
    half_bare.mkdir()

    tree = cache.checkout("acme/widget", shas[1])
    assert (tree.cached, tree.fetch) == (False, "by_hash")
    assert listing(tree.path) == commit_listing(repo, shas[1])
    assert not half.exists() and not (bare / "shallow.lock").exists()
    assert not list(bare.rglob("*.lock")) and not list(bare.glob("objects/pack/tmp_*"))
    live = trees / f".tmp-{MISSING}-live"  # an export under way in another process: kept
    live.mkdir()
    with FileLock(tmp_path / "cache" / "locks" / "acme__widget" / f"{MISSING}.lock", 5.0):
        assert cache.sweep() == 2  # the other commit's temp export and the half bare repository
    assert live.is_dir()
    assert cache.sweep() == 1 and not live.exists()
    assert sorted(p.name for p in trees.iterdir()) == sorted(shas[:2])
    assert not half_bare.exists()


def test_a_process_killed_in_the_middle_of_an_export_leaves_no_tree(tmp_path: Path) -> None:
    repo = tmp_path / "srv" / "acme__widget"
    files: dict[str, str | bytes] = {f"pkg{i // 100}/m{i}.py": f"X = {i}\n" for i in range(1500)}
    (sha,) = make_upstream(repo, [files])
    trees = tmp_path / "cache" / "trees" / "acme__widget"
    proc = _child(tmp_path / "cache", file_template(tmp_path), sha)
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not list(trees.glob(f".tmp-{sha}-*/pkg0")):  # files are being written
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert not (trees / sha).exists() and list(trees.glob(f".tmp-{sha}-*"))

    tree = RepoCache(tmp_path / "cache", file_template(tmp_path)).checkout("acme/widget", sha)
    assert (tree.cached, tree.fetch) == (False, "none")  # the fetch had finished
    assert listing(tree.path) == commit_listing(repo, sha)
    assert [p.name for p in trees.iterdir()] == [sha]


def test_a_fetch_outliving_its_killed_caller_keeps_the_lock_until_it_ends(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    """git runs in its own process group and holds the fetch lock's descriptor: a caller killed
    mid-fetch leaves a live git, whose lock files the next caller must not take for leftovers."""
    repo, shas = upstream
    with GitHttpServer(tmp_path / "srv") as server:
        template = server.url() + "/{owner}__{name}"
        proc = _child(tmp_path / "cache", template, shas[0])
        server.release.clear()
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert server.held.wait(30)  # the child's git is in the middle of its fetch
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        threading.Timer(1.0, server.release.set).start()
        tree = RepoCache(tmp_path / "cache", template).checkout("acme/widget", shas[0])
        assert server.fetches() == 1  # the orphaned git finished the fetch; no second one
    assert tree.lock_wait_seconds >= 0.3
    assert (tree.cached, tree.fetch) == (False, "none")
    assert listing(tree.path) == commit_listing(repo, shas[0])


def test_a_fetch_past_its_timeout_is_killed_and_the_cache_stays_usable(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    repo, shas = upstream
    with GitHttpServer(tmp_path / "srv") as server:
        template = server.url() + "/{owner}__{name}"
        server.release.clear()  # the server never answers the fetch
        impatient = RepoCache(tmp_path / "cache", template, fetch_timeout=1.0)
        start = time.monotonic()
        with pytest.raises(RepoError) as err:
            impatient.checkout("acme/widget", shas[1])
        assert time.monotonic() - start < 30
        assert err.value.reason == "timeout" and "timed out" in str(err.value)
        assert shas[1] in str(err.value) and "acme/widget" in str(err.value)
        server.release.set()
        tree = RepoCache(tmp_path / "cache", template).checkout("acme/widget", shas[1])
    assert tree.fetch == "by_hash"
    assert listing(tree.path) == commit_listing(repo, shas[1])


def test_an_unusable_cache_folder_is_a_repo_error(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    _, shas = upstream
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(RepoError) as err:
        RepoCache(tmp_path / "file", file_template(tmp_path)).checkout("acme/widget", shas[0])
    assert err.value.reason == "cache_unusable" and str(tmp_path / "file") in str(err.value)


# --------------------------------------------------------------------------- repo_path


def test_repo_path_head_is_checked_against_base_commit(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    repo, shas = upstream
    assert check_checkout(repo, shas[2]) is None
    assert check_checkout(repo, shas[2][:10]) is None
    warning = check_checkout(repo, shas[0])
    assert warning is not None and shas[2] in warning and shas[0] in warning
    # a plain folder, even one inside a git checkout, has no HEAD of its own to check
    assert check_checkout(repo / "widget", shas[0]) is None
    assert check_checkout(repo, "") is None
    with pytest.raises(RepoError) as err:
        check_checkout(tmp_path / "nowhere", shas[0])
    assert err.value.reason == "no_such_folder"
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert "cannot read the checkout's HEAD" in (check_checkout(empty, shas[0]) or "")


def test_resolve_repo_path_prefers_a_local_checkout_then_the_cache(
    tmp_path: Path, upstream: tuple[Path, list[str]]
) -> None:
    repo, shas = upstream
    cache = RepoCache(tmp_path / "cache", file_template(tmp_path))

    def task(**kw: str) -> Task:
        return Task(instance_id="acme__widget-1", problem_statement="p", **kw)

    local = resolve_repo_path(
        task(repo="acme/widget", base_commit=shas[0], repo_path=str(repo)), cache
    )
    assert local is not None and (local.path, local.source) == (repo, "repo_path")
    assert local.warning is not None and shas[0] in local.warning
    assert local.record()["url"] is None and not (tmp_path / "cache" / "trees").exists()
    fetched = resolve_repo_path(task(repo="acme/widget", base_commit=shas[0]), cache)
    assert fetched is not None and fetched.source == "cache" and fetched.fetch == "by_hash"
    assert resolve_repo_path(task(repo="acme/widget"), cache) is None
    assert resolve_repo_path(task(repo="acme/widget", base_commit=shas[0]), None) is None


# --------------------------------------------------------------------------- real repositories


def _real_repos() -> Path:
    return Path(os.environ.get("AGENTIC_RUBRICS_REPOS_DATA") or ROOT.parent / "shared/data/repos")


@pytest.mark.skipif(
    not (_real_repos() / "pallets__flask.git.tar").is_file(),
    reason="real repositories (../shared/data/repos or $AGENTIC_RUBRICS_REPOS_DATA) are absent",
)
def test_a_real_repository_at_a_swebench_base_commit(tmp_path: Path) -> None:
    mirrors = tmp_path / "mirrors"
    mirrors.mkdir()
    with tarfile.open(_real_repos() / "pallets__flask.git.tar") as tar:
        tar.extractall(mirrors, filter="data")
    mirror = mirrors / "pallets__flask.git"
    refs = git(mirror, "for-each-ref", "--format=%(objectname)", "refs/base/").split()
    assert refs
    sha = sorted(refs)[0]
    cache = RepoCache(tmp_path / "cache", f"file://{mirrors}/{{owner}}__{{name}}.git")
    tree = cache.checkout("pallets/flask", sha)
    assert (tree.cached, tree.fetch) == (False, "by_hash")
    assert not (tree.path / ".git").exists()
    assert listing(tree.path) == commit_listing(mirror, sha)
    assert any(tree.path.glob("*/flask/app.py")) or (tree.path / "flask" / "app.py").is_file()
    assert cache.checkout("pallets/flask", sha).cached


@pytest.mark.parametrize(
    ("files", "bounds", "named"),
    [
        ({"zeros.bin": bytes(3 << 20)}, {"max_file_mib": 2}, "'zeros.bin' is 3,145,728 bytes"),
        (
            {f"part{i}.bin": bytes(700 << 10) for i in range(4)},
            {"max_tree_mib": 2},
            "the tree is over",
        ),
    ],
    ids=["one-file", "whole-tree"],
)
def test_an_export_over_its_size_bound_is_refused_before_anything_is_written(
    tmp_path: Path, files: dict[str, str | bytes], bounds: dict[str, int], named: str
) -> None:
    """Zeros compress to almost nothing: a small upstream can hold a tree that fills a disk. The
    bound is read from git's object sizes, so nothing is written before the refusal."""
    repo = tmp_path / "srv" / "acme__widget"
    (sha,) = make_upstream(repo, [{"README.md": "# w\n", **files}])
    cache = RepoCache(tmp_path / "cache", file_template(tmp_path), durable=False, **bounds)
    with pytest.raises(RepoError) as err:
        cache.checkout("acme/widget", sha)
    assert err.value.reason == "export_too_large"
    assert named in str(err.value) and "repos.max_" in str(err.value)
    trees = tmp_path / "cache" / "trees"
    assert not trees.exists() or not any(p.is_file() for p in trees.rglob("*"))
    roomy = RepoCache(tmp_path / "cache", file_template(tmp_path), durable=False)
    assert (roomy.checkout("acme/widget", sha).path / "README.md").read_text() == "# w\n"


def make_tree_bomb(path: Path, fanout: int, depth: int) -> str:
    """A repository whose one commit holds ``fanout ** (depth + 1)`` empty files in ``depth`` levels
    of folders: git stores each level's tree once, so the objects take a few kilobytes."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    empty = git_in(path, "hash-object", "-w", "--stdin", input_text="").strip()
    tree = git_in(
        path, "mktree", input_text="".join(f"100644 blob {empty}\tf{i}\n" for i in range(fanout))
    ).strip()
    for _ in range(depth):
        rows = "".join(f"040000 tree {tree}\td{i}\n" for i in range(fanout))
        tree = git_in(path, "mktree", input_text=rows).strip()
    sha = git_in(path, "commit-tree", "-m", "bomb", tree, input_text="").strip()
    git(path, "update-ref", "refs/heads/main", sha)
    return sha


def test_an_export_with_too_many_entries_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    """Empty files weigh nothing in bytes but an inode each: 16 x 16 x 16 of them, 1,000 allowed."""
    sha = make_tree_bomb(tmp_path / "srv" / "acme__widget", fanout=16, depth=2)
    cache = RepoCache(tmp_path / "cache", file_template(tmp_path), durable=False, max_files=1000)
    with pytest.raises(RepoError) as err:
        cache.checkout("acme/widget", sha)
    assert err.value.reason == "export_too_large"
    assert "over 1,000 entries" in str(err.value) and "repos.max_files" in str(err.value)
    trees = tmp_path / "cache" / "trees"
    assert not trees.exists() or not any(trees.rglob("*/*"))
    roomy = RepoCache(tmp_path / "cache", file_template(tmp_path), durable=False)
    assert len(list(roomy.checkout("acme/widget", sha).path.rglob("f*"))) == 16**3


def test_a_tree_bomb_is_refused_at_once_with_the_default_bounds(tmp_path: Path) -> None:
    """16.7 million empty files in 7 objects: the listing is read as it streams and stopped at the
    first entry past the bound, never listed whole (nor exported until the disk runs out of inodes)."""
    sha = make_tree_bomb(tmp_path / "srv" / "acme__widget", fanout=16, depth=5)
    cache = RepoCache(tmp_path / "cache", file_template(tmp_path), durable=False, git_timeout=30)
    start = time.monotonic()
    with pytest.raises(RepoError) as err:
        cache.checkout("acme/widget", sha)
    assert err.value.reason == "export_too_large", err.value
    assert "over 200,000 entries" in str(err.value)
    assert time.monotonic() - start < 20
    trees = tmp_path / "cache" / "trees"
    assert not trees.exists() or not any(trees.rglob("*/*"))
