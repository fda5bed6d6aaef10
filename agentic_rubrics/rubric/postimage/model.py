"""What post-image analysis returns: names, counts, line numbers and reason codes, never file contents.

Every value is a frozen pydantic model, JSON-serialisable with ``model_dump(mode="json")``. A failure is
never raised to the caller: it is a reason code (keys of ``REASONS``) on the result or on one file, and the
analysis it prevented is absent (``None``), not guessed.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

ApplyMethod = Literal["git_apply", "patch_fuzz", "failed", "empty", "not_attempted"]
"""How the candidate applied: by the harness's first command, only by its fallback, by neither; an
empty patch (nothing to apply: the harness's ``--allow-empty`` accepts it); never tried (see reasons)."""

RemovedKind = Literal["function", "class", "method", "variable"]
"""What a removed definition was."""

Category = Literal["syntax_error", "undefined_name", "redefinition", "unused_import", "other"]
"""Groups of introduced messages: the first four are the ones the issue names; the rest is ``other``."""

REASONS: Final[dict[str, str]] = {
    "no_repository": "the repository folder does not exist",
    "patch_not_utf8": "the patch text cannot be written as UTF-8 (lone surrogates): the harness fails too",
    "apply_timeout": "git apply or patch did not finish in time",
    "apply_tool_missing": "git or patch is not installed",
    "unsafe_path": "a header names a path outside the repository (absolute or with ..): not applied",
    "patch_too_large": "the patch, or a binary hunk's declared size, is over its bound: not analysed",
    "corrupt_binary": "a binary hunk declares more than its data can inflate to: git refuses it too",
    "copy_too_large": "a touched repository file, or all of them, is over the copy bound: not analysed",
    "apply_output_too_large": "git apply or patch wrote a file over its bound: not analysed",
    "not_confined": "isolation: bubblewrap was asked for and bubblewrap cannot run here: not applied",
    "apply_unconfined": "bubblewrap cannot run here: the patch was applied without isolation",
    "memory_limit": "the analysis ran out of its memory bound; the result is incomplete",
    "patch_assumed_reversed": "patch --batch found a hunk that looked reversed and reverted it",
    "not_decodable": "the file is not valid text in its declared encoding (UTF-8 by default)",
    "file_too_large": "the file is larger than the configured limit; not analysed",
    "pre_syntax_error": "the pre-image does not parse: introduced messages cannot be told apart",
    "pyflakes_error": "pyflakes or the parser crashed on this file",
    "symbols_error": "the changed symbols could not be computed for this file",
    "usage_scan_timeout": "the repository scan for removed names ran out of time",
    "usage_scan_error": "the repository scan for removed names failed",
    "too_many_removed_names": "more removed names than the configured limit; the rest were not scanned",
    "internal_error": "an unexpected error in the analysis (a bug): the result is incomplete",
    "analysis_timeout": "the analysis ran past its time limit; its worker process was stopped",
    "analysis_crashed": "the worker process running the analysis died (out of memory, a crash)",
}


class PostimageConfig(BaseModel):
    """Limits of one analysis; the defaults fit SWE-bench repositories (sympy included)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    apply_timeout_s: float = 30.0
    """Seconds each apply command (git apply, patch) may run."""
    scan_timeout_s: float = 30.0
    """Seconds the repository scan for removed names may take in total."""
    max_file_bytes: int = 2_000_000
    """Changed files larger than this are not parsed (reason ``file_too_large``)."""
    max_removed_names: int = 200
    """At most this many removed names are searched for in the repository."""
    max_confirm_files: int = 25
    """Per removed name, at most this many matching files are tokenised to confirm a real use."""
    max_patch_bytes: int = 5_000_000
    """A larger candidate is not analysed (``patch_too_large``); SWE-bench's largest are under 1 MB."""
    max_copy_bytes: int = 64 << 20
    """A touched repository file larger than this is not copied, and the candidate not analysed
    (``copy_too_large``)."""
    max_copy_total_bytes: int = 256 << 20
    """All touched files together: the same bound on their sum."""
    max_output_file_bytes: int = 64 << 20
    """The largest file the apply commands may write (``ulimit -f``), and the largest size a binary
    hunk may declare (``apply_output_too_large``, ``patch_too_large``)."""
    max_memory_bytes: int = 2 << 30
    """Address space of each apply command (``ulimit -v``) and of each analysis worker process
    (``RLIMIT_AS``; ``memory_limit`` when the analysis exceeds it)."""
    isolation: Literal["auto", "bubblewrap", "none"] = "auto"
    """Where the apply commands run: ``bubblewrap`` (confined: nothing outside the copy readable, no
    network; refused, ``not_confined``, where bubblewrap cannot run), ``auto`` (bubblewrap where it
    runs, else unconfined with a warning and ``apply_unconfined`` on each result), ``none``."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ApplyInfo(_Frozen):
    """How the patch applied to the base tree, with what GNU patch / git said about each hunk."""

    method: ApplyMethod
    """``git_apply`` (``git apply --verbose`` succeeded), ``patch_fuzz`` (only ``patch --batch
    --fuzz=5 -p1 -i`` did), ``failed`` (neither), ``empty`` (white space only: nothing to apply) or
    ``not_attempted`` (see the result's reasons)."""
    git_apply_error: str | None = None
    """Why ``git apply`` refused, as a code (``does_not_apply``, ``already_exists``, ``missing_file``,
    ``corrupt_patch``, ``no_patch``, ``other``); ``None`` when it applied or never ran."""
    patch_error: str | None = None
    """Why ``patch`` refused, as a code (``hunk_failed``, ``missing_file``, ``garbage``, ``other``)."""
    hunks_offset: int = 0
    """Hunks that applied at another line than the patch says (by the command that succeeded)."""
    max_offset: int = 0
    """The largest absolute offset, in lines."""
    hunks_fuzz: int = 0
    """Hunks that needed fuzz (context lines ignored) to apply."""
    max_fuzz: int = 0
    """The largest fuzz factor used."""
    hunks_failed: int = 0
    """Hunks the last command tried could not place."""


class Location(_Frozen):
    """A place in the repository: a repository-relative path and a 1-based line."""

    path: str
    """Repository-relative path."""
    line: int
    """1-based line number."""


class IntroducedMessage(_Frozen):
    """One pyflakes message (or syntax error) of the post-image that the pre-image does not have."""

    kind: str
    """The pyflakes message class (``UndefinedName``, ``UnusedImport``, …) or ``SyntaxError``."""
    category: Category
    """Its group (see ``Category``)."""
    name: str | None
    """The identifier it is about, when it is one (never a literal's text)."""
    line: int | None
    """Its line in the post-image."""


class ChangedSymbol(_Frozen):
    """A function, class or the module body whose own lines the patch changes (innermost definition)."""

    qualname: str
    """Dotted name (``Class.method``, ``outer.inner``) or ``<module>`` for module-level code."""
    kind: Literal["function", "class", "module"]
    """What it is."""
    change: Literal["modified", "added", "removed"]
    """``added``: defined only after the patch; ``removed``: only before; else ``modified``."""
    lines_added: int
    """Post-image lines of this symbol (not of a nested one) that the patch adds."""
    lines_removed: int
    """Pre-image lines of this symbol that the patch removes."""


class FileFinding(_Frozen):
    """What the patch did to one file."""

    path: str
    """The path after the patch (before it, for a deleted file)."""
    old_path: str | None
    """The path before the patch when it differs (rename), else ``None``."""
    status: Literal["modified", "added", "deleted", "renamed"]
    """What happened to the file."""
    python: bool
    """A ``.py`` file: parsed and checked; other files are only listed."""
    introduced: tuple[IntroducedMessage, ...] = ()
    """Messages the post-image has and the pre-image has not (multiset of kind and name)."""
    symbols: tuple[ChangedSymbol, ...] = ()
    """Definitions whose lines changed, in source order."""
    post_parses: bool | None = None
    """The post-image parses as Python; ``None``: no post-image (deleted) or it was not analysed
    (see ``reasons``)."""
    behaviour: Literal["changed", "unchanged"] | None = None
    """Whether the change can alter what the file's code does (:mod:`.behaviour`: the normal forms of
    its images differ; a rename always does); ``None``: not a Python file, or not decided (an image
    that does not parse or was not read)."""
    behaviour_symbols: tuple[str, ...] = ()
    """The definitions whose normal form differs (``<module>`` for the module's own statements)."""
    behaviour_delta: tuple[str, ...] | None = None
    """What the change does to the file's normal form: a short hash per normal-form line it removes
    or adds, in order (:mod:`.delta`; ``()``: behaves alike); ``None``: not decided or not written out."""
    reasons: tuple[str, ...] = ()
    """Why some analysis of this file is missing (keys of ``REASONS``)."""


class RemovedName(_Frozen):
    """A definition the pre-image has and no post-image has, and whether the repository still uses it."""

    path: str
    """The file that defined it."""
    qualname: str
    """Its qualified name in that file (``Class.method`` or a module-level name)."""
    kind: RemovedKind
    """What it was."""
    still_used: bool | None
    """A use (a name token, not a definition, comment or string) was found elsewhere; ``None``: not
    decided (the scan was cut short, see the result's reasons)."""
    example: Location | None = None
    """One such use."""
    files_matching: int | None = None
    """Files (besides the changed ones) where the word occurs at all: an upper bound on users."""


class Timings(_Frozen):
    """Wall time of each phase, in milliseconds."""

    apply_ms: float = 0.0
    """Copying the touched files and applying the patch."""
    python_ms: float = 0.0
    """Decoding, parsing and pyflakes on pre- and post-images."""
    symbols_ms: float = 0.0
    """Mapping changed lines to definitions."""
    behaviour_ms: float = 0.0
    """Comparing the images' normal forms (:mod:`.behaviour`)."""
    usage_ms: float = 0.0
    """Searching the repository for removed names."""
    total_ms: float = 0.0
    """The whole analysis."""


class PostimageResult(_Frozen):
    """Post-image analysis of one candidate patch on the real base tree."""

    apply: ApplyInfo
    """How the patch applied."""
    files: tuple[FileFinding, ...] = ()
    """The files it changed (empty when it did not apply)."""
    removed_names: tuple[RemovedName, ...] = ()
    """Definitions it removes or renames (after moves within the patch are discounted)."""
    timings: Timings = Timings()
    """Where the time went."""
    reasons: tuple[str, ...] = ()
    """Why some analysis is missing or may differ from the harness (keys of ``REASONS``)."""

    @property
    def applied(self) -> bool:
        """The patch applied, cleanly or with fuzz."""
        return self.apply.method in ("git_apply", "patch_fuzz")

    @property
    def introduced(self) -> tuple[IntroducedMessage, ...]:
        """Every introduced message over all files."""
        return tuple(m for f in self.files for m in f.introduced)

    def introduced_by_category(self) -> dict[str, int]:
        """Introduced messages counted per category."""
        counts: dict[str, int] = {}
        for m in self.introduced:
            counts[m.category] = counts.get(m.category, 0) + 1
        return counts

    @property
    def changed_symbols(self) -> tuple[str, ...]:
        """``path::qualname`` of every changed symbol, in file order."""
        return tuple(f"{f.path}::{s.qualname}" for f in self.files for s in f.symbols)

    @property
    def removed_still_used(self) -> tuple[RemovedName, ...]:
        """Removed names the repository still uses."""
        return tuple(r for r in self.removed_names if r.still_used)
