"""The Python environment tests run with, locally: an interpreter the user names, or a virtual
environment built once per (repository, version) from a spec and cached.

A named interpreter (``--test-python PATH``, default ``/usr/bin/python3``) is used as it is: the sandbox
sees the system folders read-only, and the interpreter's own prefix too when it lives elsewhere.

A spec (:class:`EnvSpec`: a requirements list and whether to ``pip install -e .`` the tree) builds a
venv with the spec's interpreter under ``<cache>/envs/<key>/venv``, the key a hash of the spec, the
interpreter's real path and version, the repository and the version (and, for an installed tree, its
packaging files: two commits of one version may depend on other releases). The build:

1. ``python -m venv`` on this machine (the standard library only: no repository code runs here);
2. ``pip install`` inside a bubblewrap sandbox that, unlike every other, keeps this machine's network
   (pip reaches its index with pip's own configuration: ``/etc/pip.conf`` and the ``PIP_*`` variables
   of this process), with only the venv writable at its own path and a copy of the tree at
   ``/workspace``. The tree's ``setup.py`` runs there, confined, never on this machine. ``pip install
   -e /workspace`` makes the editable install point at ``/workspace``: inside a test's sandbox that is
   the candidate's tree, as ``/testbed`` is in the harness's images;
3. what the install wrote into the tree (``_version.py`` of setuptools-scm, ``*.egg-info``, compiled
   extensions built in place: files the tree did not have, outside ``build/`` and caches) kept under
   ``<key>/tree`` and laid over each task's prepared tree (:func:`add_built_files`), as SWE-bench's
   images have them in ``/testbed``: an editable install reads them from the tree, not the venv;
4. ``env.json`` written last: a venv without it is a failed build, removed and built again.

A test's sandbox has no network (candidate code never gets one) and sees the venv read-only. A build
that cannot install (no index reachable, a requirement that does not exist, a tree that does not build)
raises :class:`EnvBuildError` with pip's last lines; nothing is cached then.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentic_rubrics.exceptions import SandboxError

SYSTEM_PREFIXES = ("/usr/", "/bin/", "/lib/", "/lib64/")
_SCHEMA = "agentic-rubrics/env/2"  # 2: what the install wrote in the tree kept
_PROBE = "import sys; print(sys.version.split()[0]); print(sys.prefix); print(sys.base_prefix)"


ARCHIVES: tuple[str, ...] = (".whl", ".zip", ".egg", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz")
ARCHIVES += (".tar.xz", ".txz", ".tlz", ".tar.lz", ".tar.lzma")
"""Suffixes that make pip read a requirement as a file when one of that name exists (pip's archives)."""


def requirement_problem(text: str) -> str | None:
    """Why ``text`` is no plain requirement (``None``: it is one — a PEP 508 name with version,
    extras and markers). pip reads its arguments as options and files too: ``-r FILE`` installs what a
    file lists, ``--index-url`` or ``--find-links`` another index, a path or a URL a package from
    anywhere; a spec file must not reach beyond the index pip is configured with."""
    from packaging.requirements import InvalidRequirement, Requirement

    if text.lstrip().startswith("-"):
        return "a pip option (-r, -e, -c, --index-url, --find-links …), not a requirement"
    try:
        parsed = Requirement(text)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0]
        return f"not a PEP 508 requirement (a path, a file: or VCS URL, an option?): {first}"
    if parsed.url is not None:
        return f"a direct reference to {parsed.url!r}: give a name and a version from the index"
    if parsed.name.lower().endswith(ARCHIVES):
        return "a file name (pip installs an archive of that name from the current folder)"
    return None


class EnvBuildError(SandboxError):
    """A spec's environment could not be built (pip's last lines say why)."""


class EnvSpec(BaseModel):
    """An environment built once per (repository, version) and cached."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    python: str = "/usr/bin/python3"
    """The interpreter the venv is made with."""
    requirements: list[str] = Field(default_factory=list)
    """Requirements installed first: PEP 508 names with versions, extras and markers (``numpy<2``,
    ``pytest==7.4.4``, ``requests[socks]; python_version < "3.12"``); pip options, paths, files and
    URLs are refused (:func:`requirement_problem`)."""
    install_tree: bool = True
    """Then ``pip install -e .`` of the task's tree (its dependencies, its metadata)."""
    build_env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of the build only (e.g. ``SETUPTOOLS_SCM_PRETEND_VERSION``: a tree
    exported without ``.git`` has no version for setuptools-scm)."""
    timeout_s: float = Field(default=900.0, gt=0)
    """Seconds the whole ``pip install`` may take."""
    debian: Literal["bookworm", "bullseye"] = "bookworm"
    """The Debian suite of the docker image built from this spec (``agentic-rubrics build-env``):
    ``bookworm`` gives Python 3.11, ``bullseye`` Python 3.9. Not read by local venvs (``python``)."""

    @field_validator("requirements")
    @classmethod
    def _plain(cls, value: list[str]) -> list[str]:
        for n, text in enumerate(value):
            problem = requirement_problem(text)
            if problem is not None:
                raise ValueError(f"requirements[{n}] {text!r}: {problem}")
        return value


def load_specs(path: Path) -> dict[str, EnvSpec]:
    """The specs a JSON file holds by ``owner/name[@version]`` or ``*`` (ConfigError naming the file
    and the key when it is not that)."""
    from pydantic import ValidationError

    from agentic_rubrics.exceptions import ConfigError
    from agentic_rubrics.runfolder.files import read_json

    raw = read_json(path, ConfigError)  # a located error, also for 100,000 nested lists
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected an object of specs by owner/name[@version] or *")
    out = {}
    for key, value in raw.items():
        try:
            out[key] = EnvSpec.model_validate(value)
        except ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ConfigError(f"{path}: {key}: {message}") from None
    return out


@dataclass(frozen=True)
class Interpreter:
    """What a test's sandbox needs to run a Python: its path and the host folders it reads."""

    python: str
    """The interpreter's path (the same inside the sandbox)."""
    read_only: dict[str, Path] = field(default_factory=dict)
    """Host folders the sandbox sees read-only, at the same path."""
    version: str = ""
    """``3.11.2``."""
    built: bool = False
    """This call built the environment (``False``: it was cached, or none is built)."""
    tree_files: Path | None = None
    """What the install wrote into the tree, by relative path (:func:`add_built_files`)."""


def probe(python: str) -> tuple[str, str, str]:
    """The interpreter's version, prefix and base prefix; SandboxError when it does not run."""
    try:
        done = subprocess.run(
            [python, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"test interpreter {python!r} does not run: {exc}") from None
    lines = done.stdout.split("\n")
    if done.returncode != 0 or len(lines) < 3:
        raise SandboxError(
            f"test interpreter {python!r} does not run: {done.stderr.strip()[-300:]}"
        )
    return lines[0], lines[1], lines[2]


def _binds(*prefixes: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for prefix in prefixes:
        real = os.path.realpath(prefix)
        if not (real + "/").startswith(SYSTEM_PREFIXES) and real != "/usr":
            out[real] = Path(real)
    return out


def named_interpreter(python: str) -> Interpreter:
    """A Python the user names, used as it is (its prefix bound read-only when not a system one)."""
    version, prefix, base = probe(python)
    if Path(python).is_absolute():  # its folder as the sandbox binds it (a venv's bin/), resolved
        python = str(Path(python).parent.resolve() / Path(python).name)
    return Interpreter(python=python, read_only=_binds(prefix, base), version=version)


PACKAGING_FILES = ("setup.py", "setup.cfg", "pyproject.toml", "requirements.txt")
"""What a tree declares its dependencies in: an installed tree's venv is keyed by them too."""


def packaging_hash(tree: Path) -> str:
    """A hash of the tree's packaging files at its root (two commits of one version may ask for
    other dependencies: pylint 2.15's pin astroid differently)."""
    digest = hashlib.sha256()
    for name in PACKAGING_FILES:
        path = tree / name
        digest.update(name.encode() + b"\0")
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def env_key(
    spec: EnvSpec,
    *,
    real_python: str,
    version: str,
    repo: str,
    repo_version: str,
    packaging: str = "",
) -> str:
    """The cache key of a spec's environment for one (repository, version), and for an installed
    tree its packaging files' hash (:func:`packaging_hash`)."""
    record = {
        "schema": _SCHEMA,
        "python": real_python,
        "python_version": version,
        "requirements": list(spec.requirements),
        "install_tree": spec.install_tree,
        "build_env": dict(sorted(spec.build_env.items())),
        "repo": repo,
        "version": repo_version,
    }
    if packaging:
        record["packaging"] = packaging
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:24]


def build_env(
    spec: EnvSpec, tree: Path, *, cache_dir: Path, repo: str, repo_version: str
) -> Interpreter:
    """The spec's environment for ``repo`` at ``repo_version`` (``tree``: one of its trees), built
    once and cached under ``cache_dir``.

    Raises:
        EnvBuildError: pip could not install (the message ends with pip's last lines).
        SandboxError: the interpreter does not run, or bubblewrap cannot start.
    """
    from filelock import FileLock

    version, _, base = probe(spec.python)
    real = os.path.realpath(spec.python)
    packaging = packaging_hash(tree) if spec.install_tree else ""
    key = env_key(
        spec,
        real_python=real,
        version=version,
        repo=repo,
        repo_version=repo_version,
        packaging=packaging,
    )
    cache_dir.mkdir(parents=True, exist_ok=True)
    home = cache_dir / key
    python = home / "venv" / "bin" / "python"
    built_files = home / "tree" if spec.install_tree else None
    interpreter = Interpreter(
        python=str(python),
        read_only={str(home): home, **_binds(base)},
        version=version,
        tree_files=built_files,
    )
    with FileLock(str(cache_dir / f"{key}.lock")):
        if (home / "env.json").is_file():
            return interpreter
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(mode=0o755)
        try:
            _build(spec, tree, home, real)
        except BaseException:
            shutil.rmtree(home, ignore_errors=True)
            raise
        record: dict[str, object] = {"schema": _SCHEMA, "key": key, "repo": repo}
        record["version"] = repo_version
        record |= {"python_version": version, "spec": spec.model_dump()}
        marker = home / "env.json.tmp"
        marker.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        marker.replace(home / "env.json")
    return Interpreter(
        python=interpreter.python,
        read_only=interpreter.read_only,
        version=version,
        built=True,
        tree_files=built_files,
    )


def _build(spec: EnvSpec, tree: Path, home: Path, python: str) -> None:
    from agentic_rubrics.sandbox.holder import give_away, host_user, reachable
    from agentic_rubrics.sandbox.local import copy_tree

    made = subprocess.run(
        [python, "-m", "venv", str(home / "venv")], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        raise EnvBuildError(f"{python} -m venv failed: {made.stderr.strip()[-500:]}")
    give_away(home)
    if not reachable(home):
        raise EnvBuildError(
            f"the sandbox's user cannot reach {home}: keep the cache in a folder every user may walk"
            " through (--repo-cache)"
        )
    with tempfile.TemporaryDirectory(prefix="agentic-rubrics-envbuild-") as tmp:
        Path(tmp).chmod(0o755)
        work, scratch = Path(tmp) / "tree", Path(tmp) / "home"
        if spec.install_tree:
            copy_tree(tree, work)
        else:
            work.mkdir()
        scratch.mkdir()
        give_away(Path(tmp))
        pip = f"{shlex.quote(str(home / 'venv/bin/python'))} -m pip install -q --no-input"
        steps = []
        if spec.requirements:
            steps.append(f"{pip} {' '.join(shlex.quote(r) for r in spec.requirements)}")
        if spec.install_tree:
            steps.append(f"{pip} -e /workspace")
        command = " && ".join(steps) or "true"
        argv = networked_argv(work, scratch, home, command, spec.build_env)
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=spec.timeout_s,
                cwd="/",
                check=False,
                **host_user(),
            )
        except subprocess.TimeoutExpired:
            raise EnvBuildError(f"pip install took over {spec.timeout_s:g} s") from None
        if done.returncode != 0:
            said = (done.stderr + done.stdout).strip()[-800:]
            raise EnvBuildError(f"pip install failed (exit {done.returncode}): {said}")
        if spec.install_tree:
            from agentic_rubrics.sandbox.built_files import keep_built_files

            try:
                keep_built_files(tree, work, home / "tree")
            except SandboxError as exc:
                raise EnvBuildError(str(exc)) from None


def networked_argv(
    workspace: Path,
    home: Path,
    env_home: Path,
    command: str,
    variables: dict[str, str] | None = None,
) -> list[str]:
    """The bubblewrap command line of an environment's build: the test sandbox's, with this
    machine's network kept, the venv's folder writable at its own path, pip's configuration (the
    ``PIP_*`` variables) and the spec's ``variables``."""
    from agentic_rubrics.sandbox.bwrap import bwrap_argv

    argv = bwrap_argv(workspace, home, max_tmp_bytes=2048 << 20)
    argv.insert(argv.index("--unshare-all") + 1, "--share-net")
    at = argv.index("--remount-ro", argv.index("--bind"))
    argv[at:at] = ["--bind", str(env_home), str(env_home)]
    pip = [("--setenv", k, v) for k, v in os.environ.items() if k.startswith("PIP_")]
    pip += [("--setenv", k, v) for k, v in (variables or {}).items()]
    at = argv.index("--clearenv") + 1
    argv[at:at] = [part for triple in pip for part in triple]
    return [*argv, "512", str(4096 << 10), command]
