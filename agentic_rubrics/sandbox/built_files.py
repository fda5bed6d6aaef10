"""What an editable install writes into the tree it installs — setuptools-scm's ``_version.py``,
``*.egg-info``, extensions built in place — kept with the environment
(:mod:`~agentic_rubrics.sandbox.testenv`) and laid over each task's tree before any candidate runs, as
SWE-bench's images have them in ``/testbed``: an editable install reads them from the tree, not the venv.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agentic_rubrics.exceptions import SandboxError

_NOT_BUILT = frozenset({"__pycache__", "build", ".eggs", ".git", ".tox", ".pytest_cache"})
MAX_BUILT_BYTES = 512 << 20
"""What an install may write into the tree and have kept (compiled extensions included)."""


def keep_built_files(tree: Path, work: Path, dest: Path) -> int:
    """Copy to ``dest`` the files of ``work`` (the tree after the install) that ``tree`` does not
    have; the number kept. SandboxError when they exceed :data:`MAX_BUILT_BYTES`."""
    total = kept = 0
    for folder, dirs, files in os.walk(work):
        dirs[:] = [d for d in dirs if d not in _NOT_BUILT]
        rel = Path(folder).relative_to(work)
        for name in files:
            source = Path(folder, name)
            if source.is_symlink() or (tree / rel / name).exists() or not source.is_file():
                continue
            total += source.stat().st_size
            if total > MAX_BUILT_BYTES:
                raise SandboxError(
                    f"the install wrote over {MAX_BUILT_BYTES >> 20} MiB in the tree"
                )
            (dest / rel).mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel / name)
            kept += 1
    dest.mkdir(parents=True, exist_ok=True)
    return kept


def add_built_files(source: Path | None, tree: Path) -> int:
    """Lay what an environment's install wrote into its tree (``source``: the interpreter's
    ``tree_files``) over ``tree`` (a task's prepared tree,
    before any candidate runs), handed to the sandbox's user; the number of files added (a file the
    tree has is left as it is)."""
    from agentic_rubrics.sandbox.holder import give_away

    if source is None or not source.is_dir():
        return 0
    added = 0
    for folder, _, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        for name in files:
            target = tree / rel / name
            if target.exists() or target.is_symlink():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(folder, name), target)
            added += 1
    if added:
        give_away(tree)
    return added
