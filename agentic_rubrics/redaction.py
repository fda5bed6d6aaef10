"""Secrets never reach the disk: what a run writes is redacted, and URLs lose their credentials.

A model, or a command it runs in an unisolated sandbox, can see the user's secrets (the API key, the
environment, credentials in ``--api-base``). Whatever of it comes back — a reply that echoes the key, a
rubric that quotes an environment value — is replaced by a placeholder before anything is written:
response cache, rubrics, trajectories, configuration.

Removed: the given secrets (the API key, the password and user part of an ``--api-base`` URL), the
values of this process's environment variables of 8 characters or more — except a few well-known
variables that never hold secrets and whose values are ordinary paths or words (``PATH``, ``HOME``,
``SHELL`` …: redacting ``/bin/bash`` out of a rubric would damage it for nothing) — and text shaped like
common API keys.

A given secret shorter than 8 characters (a local server's dummy key: ``EMPTY``, ``none``, ``x``) is
replaced only where a whole string equals it: searched for inside text, it would rewrite ordinary words
and rubric checks (``*.py`` for a key ``py``, the keys of a JSON record for ``x``) and change what is
judged.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

KEY_PATTERNS = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{20,}|xox[baprs]-[A-Za-z0-9-]{10,}"
    r"|hf_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_-]{30,})"
)
"""Text shaped like an API key of a common provider."""

MIN_SECRET = 8
"""Environment values shorter than this are not treated as secrets, and given secrets shorter than this
are replaced only as whole strings (too many false matches)."""

_PUBLIC_ENV = re.compile(
    r"PATH|HOME|PWD|OLDPWD|SHELL|TERM|COLORTERM|TERM_PROGRAM(_VERSION)?|LANG|LANGUAGE|LC_[A-Z]+|USER"
    r"|LOGNAME|HOSTNAME|TMPDIR|TZ|SHLVL|_|MAIL|EDITOR|VISUAL|PAGER|DISPLAY|XDG_[A-Z_]+|VIRTUAL_ENV"
    r"|PYTHONPATH|PYTHONHASHSEED|MANPATH|INFOPATH|DEBIAN_FRONTEND"
)


def redact_url(url: str) -> str:
    """``url`` without user, password and query (where tokens live); scp-like and paths unchanged.

    For records and messages: ``https://u:p@host/v1?key=k`` -> ``https://***@host/v1``.
    """
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    userinfo = "***@" if "@" in parts.netloc else ""
    return urlunsplit((parts.scheme, userinfo + host, parts.path, "", ""))


def split_credentials(url: str) -> tuple[str, str | None]:
    """For a call: ``url`` without its user and password, and their HTTP basic ``Authorization`` value.

    HTTP clients refuse credentials in a URL together with an ``Authorization`` header (which every
    OpenAI-compatible client sends), so they travel as this header instead.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None
    if "@" not in parts.netloc:
        return url, None
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    return bare, "Basic " + base64.b64encode(pair.encode()).decode()


def url_secrets(url: str | None) -> list[str]:
    """The credentials inside ``url`` (user info and password), to be redacted wherever they appear."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    found = [parts.query] if parts.query else []
    if "@" not in parts.netloc:
        return found
    userinfo = parts.netloc.rsplit("@", 1)[0]
    found += [userinfo, url]
    if parts.password:
        found += [parts.password, unquote(parts.password)]
    return found


class Redactor:
    """Removes secrets from text and from JSON-like values (see the module's docstring)."""

    def __init__(
        self, secrets: Iterable[str | None] = (), *, environ: dict[str, str] | None = None
    ) -> None:
        env = os.environ if environ is None else environ
        found = {
            value: f"[redacted:{name}]"
            for name, value in env.items()
            if len(value) >= MIN_SECRET and not _PUBLIC_ENV.fullmatch(name)
        }
        given = {s for s in secrets if s}
        found.update({s: "[redacted]" for s in given if len(s) >= MIN_SECRET})
        self._whole = given - found.keys()
        self._secrets = found
        self._ordered = sorted(found, key=len, reverse=True)  # a value may contain another

    def text(self, value: str) -> str:
        """``value`` with every secret replaced by a placeholder."""
        if value in self._whole:
            return "[redacted]"
        for secret in self._ordered:
            if secret in value:
                value = value.replace(secret, self._secrets[secret])
        return KEY_PATTERNS.sub("[redacted:key]", value)

    def __call__(self, value: Any) -> Any:
        """A copy of a JSON-like value with every string redacted (keys of mappings included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self(k): self(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        return value


def redactor(extra_secrets: Iterable[str | None] = ()) -> Redactor:
    """A :class:`Redactor` for this process's environment and ``extra_secrets``."""
    return Redactor(extra_secrets)
