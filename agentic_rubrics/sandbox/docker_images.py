"""Images made on this machine, with no registry but Debian's archive and PyPI: a base image per Debian
suite, and an environment image per SWE-bench instance in SWE-bench's layout (the repository at
``/testbed``), both cached by a hash of what they are made of.

**Base** (:func:`ensure_base_image`): ``debootstrap --variant=minbase`` of the suite (``bookworm``:
Python 3.11, ``bullseye``: Python 3.9) from the mirror of this machine's apt sources (or the spec's),
``docker import``, then a ``docker build --network host`` from it that installs SWE-ReX's runtime
(``swe-rex`` at the version installed here, so that client and server speak alike) in a venv of its
own. swe-rex needs Python 3.10, so a bullseye image gets the bookworm image's interpreter beside its own
(``/opt/agentic-rubrics/runtime``, run through its own dynamic loader: nothing of it is on the image's
PATH or library path). The certificates pip trusts here are copied in (a TLS-inspecting proxy's
included); no index URL or credential is. Named ``agentic-rubrics/base:<suite>-<hash>``.

**Environment** (:func:`ensure_env_image`): ``FROM`` the base of the spec's suite, a venv at
``/opt/agentic-rubrics/testbed`` first on PATH (``python`` and ``pytest`` there), the spec's
requirements installed (one layer per (repository, version): docker reuses it for every commit), the
tree at the base commit copied to ``/testbed`` (a RepoCache export: no ``.git``), then ``pip install -e
/testbed`` when the spec says so. Named :data:`~agentic_rubrics.sandbox.swerex_docker.LOCAL_IMAGE`
(SWE-bench's name under ``agentic-rubrics/``) and labelled with the hash of (base, spec, commit): an
image whose label matches is reused, any other is built again. A failed build raises
:class:`ImageBuildError` (reason ``env_build_failed``) with the build's last lines.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentic_rubrics.sandbox.docker_cli import DockerError, docker
from agentic_rubrics.sandbox.docker_container import PYTHON_LABEL, RUNTIME_LABEL, image_labels
from agentic_rubrics.sandbox.testenv import EnvSpec

log = logging.getLogger(__name__)

Suite = Literal["bookworm", "bullseye"]
SUITE_PYTHON: dict[str, str] = {"bookworm": "3.11", "bullseye": "3.9"}
"""The Python each Debian suite gives."""
PACKAGES = ("python3", "python3-venv", "git", "patch")
HASH_LABEL = "agentic_rubrics.hash"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
REX = "/opt/agentic-rubrics/swerex"
"""The runtime's venv in every base image."""
FOREIGN = "/opt/agentic-rubrics/runtime"
"""Where a bullseye image keeps the bookworm image's interpreter and runtime."""
TESTBED_ENV = "/opt/agentic-rubrics/testbed"
"""The tests' venv in every environment image."""
_RECIPE = "agentic-rubrics/docker-images/1"
VENV_PIP = "pip==24.0"
"""The pip of the tests' venv, installed first: bullseye's own (20.3) cannot install a tree that has only
a pyproject.toml in editable mode (PEP 660: pylint 2.15's)."""
_CA_FILES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
_SUITES_LINE = re.compile(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", re.M)


class ImageBuildError(DockerError):
    """An image could not be built; the message ends with the build's last lines."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="env_build_failed")


def apt_mirror(root: Path = Path("/etc/apt")) -> str:
    """The Debian mirror this machine's apt sources name (one-line and deb822 files); the default
    mirror when none names one."""
    texts = []
    for path in [root / "sources.list", *sorted((root / "sources.list.d").glob("*"))]:
        if path.is_file() and path.suffix in (".list", ".sources", ""):
            try:
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
    for text in texts:
        for uri, suite in _SUITES_LINE.findall(text):
            if _debian(uri, suite):
                return str(uri).rstrip("/")
        for stanza in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.+)$", stanza, re.M))
            uris, suites = fields.get("URIs", "").split(), fields.get("Suites", "").split()
            for uri in uris:
                if any(_debian(uri, suite) for suite in suites):
                    return str(uri).rstrip("/")
    return DEFAULT_MIRROR


def _debian(uri: str, suite: str) -> bool:
    return "security" not in uri and uri.rstrip("/").endswith("/debian") and "-" not in suite


def swerex_version() -> str:
    """The swe-rex installed here (the runtime in every image is the same version)."""
    from importlib.metadata import version

    return version("swe-rex")


@dataclass(frozen=True)
class BaseSpec:
    """What a base image is made of."""

    suite: Suite = "bookworm"
    mirror: str | None = None
    """``None``: :func:`apt_mirror`. Not hashed: every mirror serves the same archive."""

    def key(self) -> str:
        record: dict[str, object] = {"recipe": _RECIPE, "suite": self.suite}
        record |= {"packages": PACKAGES, "swerex": swerex_version()}
        record["dockerfile"] = _base_dockerfile("ROOTFS", self.suite)
        return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:16]

    def name(self) -> str:
        return f"agentic-rubrics/base:{self.suite}-{self.key()}"


def _base_dockerfile(rootfs: str, suite: str, runtime_from: str = "RUNTIME") -> str:
    python = "/usr/bin/python3"
    lines = [f"FROM {rootfs}", "COPY pip-ca.crt /etc/agentic-rubrics/pip-ca.crt"]
    lines.append("ENV PIP_CERT=/etc/agentic-rubrics/pip-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1")
    if suite == "bookworm":
        lines.append(
            f"RUN python3 -m venv {REX} && {REX}/bin/pip install -q --no-cache-dir"
            f" swe-rex=={swerex_version()} && {REX}/bin/swerex-remote --version"
        )
        runtime = f"{REX}/bin/swerex-remote"
    else:  # the bookworm image's Python and runtime, with their own loader and libraries
        lines.append(f"COPY --from={runtime_from} /usr {FOREIGN}/usr")
        lines.append(f"COPY --from={runtime_from} {REX} {FOREIGN}{REX}")
        lines.append("COPY swerex-remote /usr/local/lib/agentic-rubrics/swerex-remote")
        runtime = "/usr/local/lib/agentic-rubrics/swerex-remote"
        lines.append(f"RUN {runtime} --version")
    lines.append(f"LABEL {RUNTIME_LABEL}={runtime} {PYTHON_LABEL}={python}")
    lines.append("RUN mkdir -p /testbed")
    lines.append("WORKDIR /testbed")
    return "\n".join(lines) + "\n"


# the bookworm runtime run from a bullseye root: its own loader and libraries named explicitly (the
# loader's real file: /lib64's is a link that would resolve to the image's own), so that nothing of it
# leaks into the commands it runs (no LD_LIBRARY_PATH, no PYTHONHOME, not on PATH)
_FOREIGN_RUNTIME = f"""#!/bin/sh
r={FOREIGN}
exec "$r/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$r/usr/lib/x86_64-linux-gnu" \\
  "$r/usr/bin/python3.11" -I -c 'import sys
sys.path[:0] = ["{FOREIGN}{REX}/lib/python3.11/site-packages"]
from swerex.server import main
sys.argv[0] = "swerex-remote"
main()' "$@"
"""


def _ca_bundle() -> Path | None:
    for candidate in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"), *_CA_FILES):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _run(argv: list[str], what: str, *, timeout: float, stdin: bytes | None = None) -> str:
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise ImageBuildError(f"{what}: {argv[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise ImageBuildError(f"{what}: took over {timeout:g} s") from None
    said = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
    if done.returncode != 0:
        raise ImageBuildError(f"{what} failed (exit {done.returncode}): {said[-800:]}")
    return said


def _build(context: Path, tag: str, what: str, dockerfile: str, timeout: float) -> None:
    (context / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    # --force-rm: a step that fails leaves no container behind (docker keeps it by default)
    argv = [
        "build",
        "-q",
        "--force-rm",
        "--network",
        "host",
        "--label",
        "agentic_rubrics=1",
        "-t",
        tag,
    ]
    try:
        docker([*argv, str(context)], timeout=timeout, what=what)
    except DockerError as exc:
        if exc.reason == "docker_unavailable":
            raise
        raise ImageBuildError(str(exc)) from None


def _lock(name: str) -> object:
    from filelock import FileLock

    folder = Path(tempfile.gettempdir()) / "agentic-rubrics-images"
    folder.mkdir(mode=0o700, exist_ok=True)
    return FileLock(str(folder / f"{name}.lock"))


def ensure_base_image(spec: BaseSpec, *, timeout: float = 1800.0) -> str:
    """The base image of ``spec``, built when absent (under a lock: one build per machine at once).

    Raises:
        ImageBuildError: debootstrap, the import or the build failed.
        DockerError: ``docker_unavailable``.
    """
    name = spec.name()
    if image_labels(name) is not None:
        return name
    with _lock(name.replace("/", "_").replace(":", "_")):  # type: ignore[attr-defined]
        if image_labels(name) is not None:
            return name
        runtime = (
            ensure_base_image(BaseSpec("bookworm", spec.mirror)) if spec.suite != "bookworm" else ""
        )
        with tempfile.TemporaryDirectory(prefix="agentic-rubrics-base-") as tmp:
            root, context = Path(tmp) / "root", Path(tmp) / "context"
            context.mkdir()
            mirror = spec.mirror or apt_mirror()
            argv = ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}"]
            _run(
                [*argv, spec.suite, str(root), mirror], f"debootstrap {spec.suite}", timeout=timeout
            )
            rootfs = f"agentic-rubrics/rootfs:{spec.suite}-{spec.key()}"
            tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
            try:
                _run(
                    ["docker", "import", "-", rootfs],
                    "docker import",
                    timeout=timeout,
                    stdin=_read(tar),
                )
            finally:
                tar.wait()
            shutil.rmtree(root, ignore_errors=True)
            ca = _ca_bundle()
            (context / "pip-ca.crt").write_bytes(ca.read_bytes() if ca else b"")
            if runtime:
                (context / "swerex-remote").write_text(_FOREIGN_RUNTIME, encoding="utf-8")
                (context / "swerex-remote").chmod(0o755)
            dockerfile = _base_dockerfile(rootfs, spec.suite, runtime or "RUNTIME")
            _build(context, name, f"building {name}", dockerfile, timeout)
    return name


def _read(proc: subprocess.Popen[bytes]) -> bytes:
    assert proc.stdout is not None
    return proc.stdout.read()


def env_image_key(base: str, spec: EnvSpec, repo: str, version: str, commit: str) -> str:
    """The hash an environment image is labelled with: its base, spec and commit."""
    record: dict[str, object] = {"recipe": _RECIPE, "base": base, "repo": repo}
    record |= {"version": version, "commit": commit}
    record["spec"] = spec.model_dump(exclude={"timeout_s", "python"})
    record["pip"] = VENV_PIP
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:16]


def env_dockerfile(base: str, spec: EnvSpec, key: str) -> str:
    """The environment image's Dockerfile (the tree is the context's ``testbed/``)."""
    pip = f"{TESTBED_ENV}/bin/python -m pip install -q --no-cache-dir --no-input"
    lines = [f"FROM {base}", f"RUN python3 -m venv {TESTBED_ENV} && {pip} {VENV_PIP}"]
    lines.append(
        f"ENV PATH={TESTBED_ENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    )
    if spec.requirements:
        lines.append(f"RUN {pip} {' '.join(shlex.quote(r) for r in spec.requirements)}")
    lines.append("COPY testbed/ /testbed/")
    if spec.install_tree:
        variables = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(spec.build_env.items()))
        lines.append(f"RUN cd /testbed && {variables + ' ' if variables else ''}{pip} -e .")
    lines.append(f"LABEL {HASH_LABEL}={key}")
    return "\n".join(lines) + "\n"


def ensure_env_image(
    name: str,
    spec: EnvSpec,
    tree: Path,
    *,
    repo: str,
    version: str,
    commit: str,
    mirror: str | None = None,
) -> tuple[str, bool]:
    """The environment image ``name`` for one instance, and whether this call built it.

    Raises:
        ImageBuildError: the base or this image could not be built.
        DockerError: ``docker_unavailable``.
    """
    base = ensure_base_image(BaseSpec(spec.debian, mirror))
    key = env_image_key(base, spec, repo, version, commit)
    if (image_labels(name) or {}).get(HASH_LABEL) == key:
        return name, False
    with tempfile.TemporaryDirectory(prefix="agentic-rubrics-env-") as tmp:
        from agentic_rubrics.sandbox.local import copy_tree

        context = Path(tmp)
        copy_tree(tree, context / "testbed")
        _build(context, name, f"building {name}", env_dockerfile(base, spec, key), spec.timeout_s)
    return name, True
