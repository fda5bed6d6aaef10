"""The pieces of the env-file syntax: assignments, values, quotes, escapes and comments.

A line is ``KEY=VALUE``, optionally prefixed with ``export``. A value is either

- unquoted: surrounding whitespace is stripped and a ``#`` that starts the value or follows
  whitespace begins a comment (``URL=http://host/#frag`` keeps its ``#``);
- single-quoted: taken literally, no escapes, no interpolation;
- double-quoted: backslash escapes (``\\n``, ``\\t``, ``\\r``, ``\\"``, ``\\\\``) are resolved.

A quoted value may be followed by whitespace and a comment.
"""

from __future__ import annotations

import re

from envfile.errors import ParseError

KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
QUOTES = ("'", '"')
EXPORT_PREFIX = "export "

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def is_blank_or_comment(line: str) -> bool:
    """True for lines that hold no assignment: empty, whitespace or a ``#`` comment."""
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def split_assignment(line: str, lineno: int = 0) -> tuple[str, str]:
    """Split ``[export] KEY=value`` into the key and the raw text after ``=``.

    Raises:
        ParseError: there is no ``=`` or the key is not a valid name.
    """
    text = line.strip()
    if text.startswith(EXPORT_PREFIX):
        text = text[len(EXPORT_PREFIX) :].lstrip()
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep:
        raise ParseError("expected KEY=VALUE", lineno, line)
    if not KEY_RE.match(key):
        raise ParseError(f"invalid key {key!r}", lineno, line)
    return key, raw


def strip_inline_comment(raw: str) -> str:
    """Drop a trailing comment: a ``#`` at the start or after whitespace, and what follows."""
    for index, char in enumerate(raw):
        if char == "#" and (index == 0 or raw[index - 1] in " \t"):
            return raw[:index]
    return raw


def unescape(text: str) -> str:
    """Resolve the backslash escapes of a double-quoted value; unknown escapes are kept."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            nxt = text[index + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def read_value(raw: str, lineno: int = 0, line: str = "") -> tuple[str, str]:
    """Turn the raw text after ``=`` into ``(value, quote)``.

    ``quote`` is the quote character the value was written with, or ``""`` if unquoted.

    Raises:
        ParseError: a quoted value is not closed.
    """
    text = strip_inline_comment(raw).strip()
    if text[:1] in QUOTES:
        quote = text[0]
        if len(text) < 2 or text[-1] != quote:
            raise ParseError("unterminated quoted value", lineno, line)
        body = text[1:-1]
        return (unescape(body) if quote == '"' else body), quote
    return text, ""
