"""Post-image analysis: what a candidate patch does to the real code at the task's base commit.

``analyze_patch(repo_dir, patch)`` applies the patch like the SWE-bench harness (``git apply``, then
``patch --batch --fuzz=5 -p1``) to copies of the touched files, then for each changed Python file keeps
the pyflakes messages (and syntax errors) the patch introduces, maps its changed lines to the functions
and classes they belong to, and searches the repository for uses of names it removes or renames. The
result (``PostimageResult``) holds names, counts, lines and reason codes, never file contents.

Modules: ``model`` (the result types and limits), ``apply`` (the harness's commands on a partial copy),
``flakes`` (parsing and pyflakes, pre vs post), ``symbols`` (ast definitions and changed lines),
``usage`` (removed names and the repository search), ``analyze`` (the one entry point).
"""

from agentic_rubrics.rubric.postimage.analyze import analyze_patch
from agentic_rubrics.rubric.postimage.model import (
    REASONS,
    ApplyInfo,
    ChangedSymbol,
    FileFinding,
    IntroducedMessage,
    Location,
    PostimageConfig,
    PostimageResult,
    RemovedName,
    Timings,
)

__all__ = [
    "REASONS",
    "ApplyInfo",
    "ChangedSymbol",
    "FileFinding",
    "IntroducedMessage",
    "Location",
    "PostimageConfig",
    "PostimageResult",
    "RemovedName",
    "Timings",
    "analyze_patch",
]
