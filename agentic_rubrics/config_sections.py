"""Where a change to a sectioned configuration file falls: in pytest's sections or not.

``tox.ini`` and ``setup.cfg`` (INI: ``[pytest]``, ``[tool:pytest]``) and ``pyproject.toml`` (TOML:
``[tool.pytest.ini_options]``, ``[tool.pytest]``, or a dotted ``tool.pytest…`` key) hold pytest's
settings beside others; :mod:`agentic_rubrics.test_infra` asks, hunk by hunk, whether a candidate
changed them (``pytest_config``) or a ``pytest11`` entry point (``plugin``). The base file places a
hunk in its section; without it, a hunk whose section the hunk does not show counts as pytest's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

ConfigKind = Literal["pytest_config", "plugin"]
"""What a change to a config file can be (the two :mod:`agentic_rubrics.test_infra` kinds)."""

_INI_HEADER = re.compile(r"^\[([^\]\n]*)\]")  # iniconfig: a header starts its line with "["
_TOML_HEADER = re.compile(r"^\s*\[\[?([^\[\]]*)\]\]?\s*(?:#.*)?$")
_INI_KEY = re.compile(r"^([^\s=:#;][^=:]*)[=:]")


@dataclass
class Hunk:
    """A hunk as git apply reads it: where it starts in the old file, how many old lines, its lines."""

    old_start: int
    old_count: int
    lines: list[tuple[str, str]] = field(default_factory=list)  # ("+" | "-" | " ", text)


def _section_name(fmt: str, text: str) -> str | None:
    """The section a header line opens (lower case; TOML's dotted parts unquoted), or ``None``."""
    if fmt == "ini":
        match = _INI_HEADER.match(text)
        return match.group(1).strip().lower() if match else None
    match = _TOML_HEADER.match(text)
    if match is None:
        return None
    return ".".join(p.strip().strip("\"'") for p in match.group(1).split(".")).lower()


def _is_pytest_section(fmt: str, section: str) -> bool:
    if fmt == "ini":  # tox.ini reads [pytest], setup.cfg [tool:pytest]; either counts in both
        return section in ("pytest", "tool:pytest")
    return section == "tool.pytest" or section.startswith("tool.pytest.")


def _advance(fmt: str, text: str, state: tuple[str | None, str]) -> tuple[str | None, str]:
    """The (section, key) in force after one line: a header opens a section, ``key =`` a key;
    blank, comment and continuation lines keep both."""
    section = _section_name(fmt, text)
    if section is not None:
        return section, ""
    if fmt == "ini":
        match = _INI_KEY.match(text)
    else:
        match = re.match(r"^\s*([A-Za-z0-9_.\"' -]+?)\s*=(?!=)", text)
    return (state[0], match.group(1).strip().lower()) if match else state


def _state_before(fmt: str, base: str | None, hunk: Hunk) -> tuple[str | None, str]:
    """The (section, key) in force just before a hunk; section ``None`` when it cannot be known."""
    before = hunk.old_start - 1 if hunk.old_count else hunk.old_start
    if before <= 0:
        return "", ""
    if base is None:
        return None, ""
    state: tuple[str | None, str] = ("", "")
    for text in base.splitlines()[:before]:
        state = _advance(fmt, text, state)
    return state


def config_kinds(fmt: str, base: str | None, hunks: list[Hunk]) -> set[ConfigKind]:
    """What the hunks of a sectioned config file change: pytest's section (or a section that cannot
    be placed), and a ``pytest11`` entry point."""
    found: set[ConfigKind] = set()
    for hunk in hunks:
        old = new = _state_before(fmt, base, hunk)
        for tag, text in hunk.lines:
            before = new if tag == "+" else old
            after = _advance(fmt, text, before)
            if tag == " ":
                old = new = after
                continue
            if tag == "+":
                new = after
            else:
                old = after
            for section, key in (before, after):
                if section is None or _is_pytest_section(fmt, section):
                    found.add("pytest_config")
                elif fmt == "toml" and section in ("", "tool") and "pytest" in key:
                    # a dotted key outside the section: tool.pytest.ini_options.addopts = ...
                    found.add("pytest_config")
                if "pytest11" in (section or "") or key == "pytest11" or "pytest11" in text:
                    found.add("plugin")
    return found
