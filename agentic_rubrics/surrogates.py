"""Untrusted text that is not valid Unicode: lone surrogates, found and replaced.

Python represents bytes that are not UTF-8 as lone surrogates (``errors="surrogateescape"`` gives
``\\udc80``-``\\udcff``), and JSON may spell any lone surrogate (``"\\ud800"``). Such a string cannot be
encoded as UTF-8, so writing it to a file, hashing it or sending it in a request raises. The library
decides once what each kind of text becomes:

- a candidate patch that holds one is not text: its items are ``missing: check_error`` (detail
  ``invalid_text``) and it is never sent to a model;
- prose (the issue, a model's reply, a message to a model) has each one replaced by U+FFFD, the
  replacement character, exactly what decoding with ``errors="replace"`` would have produced;
- identifiers (instance and candidate ids) must be valid text: a tasks file holding one there is refused
  with its line.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def has_lone_surrogates(text: str) -> bool:
    """Whether ``text`` cannot be encoded as UTF-8 (it holds a surrogate code point)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def replace_lone_surrogates(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD (unchanged when there is none)."""
    if not has_lone_surrogates(text):
        return text
    # a high and low surrogate side by side spell one character: keep it, replace only lone ones
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return _SURROGATE.sub(REPLACEMENT, joined)


def clean_value(value: Any) -> Any:
    """A JSON-like value with lone surrogates replaced in every string (keys included)."""
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    if isinstance(value, dict):
        return {clean_value(k): clean_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_value(v) for v in value]
    return value


def utf8_bytes(text: str) -> bytes:
    """``text`` as bytes for hashing, never raising: a lone surrogate is kept as its own code point,
    so two texts differing only there still hash differently."""
    return text.encode("utf-8", "surrogatepass")
