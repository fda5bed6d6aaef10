"""Secrets never reach the disk: what a run writes is redacted, and URLs lose their credentials.

A model, or a command it runs in an unisolated sandbox, can see the user's secrets (the API key, the
environment, credentials in ``--api-base``). Whatever of it comes back — a reply that echoes the key, a
rubric that quotes an environment value — is replaced by a placeholder before anything is written:
response cache, rubrics, trajectories, configuration.

Removed: the given secrets (the API key, the password and user part of an ``--api-base`` URL), the
values of this process's environment variables of 8 characters or more — except a few well-known
variables that never hold secrets and whose values are ordinary paths or words (``PATH``, ``HOME``,
``SHELL`` …: redacting ``/bin/bash`` out of a rubric would damage it for nothing) — and secrets known by
their shape or by the name they are assigned to, wherever they come from (a repository's files, a
command's output): common API keys and tokens (:data:`KEY_PATTERNS`), AWS secret access keys beside their
name, ``user:password@`` in URLs (the host kept), JSON Web Tokens, PEM private key blocks, and the values
of ``*_PASSWORD``, ``*_SECRET`` and ``*_TOKEN`` in env files, shell, YAML and JSON (the name kept). Code
is not a secret: ``password = getpass()``, ``token: str``, ``f"http://{user}:{password}@{host}"``, a
``$VARIABLE`` and a git sha stay as they are.

A given secret shorter than 8 characters (a local server's dummy key: ``EMPTY``, ``none``, ``x``) is
replaced only where a whole string equals it: searched for inside text, it would rewrite ordinary words
and rubric checks (``*.py`` for a key ``py``, the keys of a JSON record for ``x``) and change what is
judged.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

KEY_PATTERNS = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}+|(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}+"
    r"|github_pat_[A-Za-z0-9_]{20,}+|xox[baprs]-[A-Za-z0-9-]{10,}+|hf_[A-Za-z0-9]{20,}+"
    r"|AIza[0-9A-Za-z_-]{30,}+|[rs]k_live_[A-Za-z0-9]{10,}+)"
)
"""Text shaped like an API key of a common provider: OpenAI ``sk-``, AWS access key ids (``AKIA``,
``ASIA``), GitHub (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack, Hugging
Face, Google, Stripe live keys (``sk_live_``, ``rk_live_``)."""

PLACEHOLDER = "[redacted:key]"
"""What a secret found by its shape (or by the name it is assigned to) becomes."""

# Every pattern below runs in time linear in the text, whatever the text (tests/test_redaction.py and
# benchmarks/hostile_text.py hold them to it on 1 MB hostile lines). How: a token is looked for only
# where it starts (a lookbehind refuses a start inside a run of its characters, so each run is scanned
# from its first character only, not once per character), runs are consumed possessively (``++``: no
# backtracking into them), and a name's ending is checked by fixed-width lookbehinds after it, never by
# backtracking over it.

_NAME_END = r"(?:(?<=PASSWORD)|(?<=PASSWD)|(?<=SECRET)|(?<=TOKEN))"
"""After a name: it ends in PASSWORD, PASSWD, SECRET or TOKEN (fixed-width lookbehinds)."""

_ENV_ASSIGNMENT = re.compile(
    r"(?P<keep>(?<![A-Za-z0-9_])[A-Z0-9_]++" + _NAME_END + r"=[\"']?)(?!\$)"
    r"(?:(?<=\")[^\"\n]++(?=\")|(?<=')[^'\n]++(?=')|(?<==)[^\s\"'$;&|)`][^\s;&|)`]*+)"
)
"""``NAME=value`` (env files, shell, CI, docker) with NAME ending in ``PASSWORD``, ``PASSWD``,
``SECRET`` or ``TOKEN``: any value but a reference (``$X``, ``${X}``, ``$(cmd)``)."""

_CODE_ASSIGNMENT = re.compile(
    r"(?P<keep>(?<![A-Za-z0-9_])[A-Z0-9_]++" + _NAME_END + r"[ \t]++=[ \t]*+[\"'])(?![${])"
    r"(?:(?<=\")[^\"\n]{8,}+(?=\")|(?<=')[^'\n]{8,}+(?='))"
)
"""``NAME = "value"`` (a constant in code): a quoted literal of 8 characters or more (``MIN_SECRET``;
``password = getpass()`` assigns no secret, and a lowercase name is a variable)."""

_JSON_MEMBER = re.compile(
    r"(?P<keep>\"(?i:[a-z0-9_.-]*+" + _NAME_END + r")\"[ \t]*+:[ \t]*+\")(?!\$|\{\{)"
    r"(?:[^\"\\\n]++|\\.)++(?=\")"
)
"""``"name": "value"`` with the name ending in password, passwd, secret or token (any case)."""

_YAML_KEY = re.compile(
    r"(?m)(?P<keep>^[ \t]*+(?:-[ \t]++)?+['\"]?(?i:[a-z0-9_.-]*+" + _NAME_END + r")['\"]?"
    r"[ \t]*+:[ \t]++['\"]?)(?!\$|\{\{)"
    r"(?:(?<=\")[^\"\n]++(?=\")|(?<=')[^'\n]++(?=')"
    r"|(?<=[ \t])(?![&*|>!{\[#])(?=[A-Za-z_.]*+[^A-Za-z_.\s])\S++"
    r"(?=(?:[ \t]++#[^\n]*+|[ \t]*+)\r?$))"
)
"""``name: value`` at a line's start (YAML) with the same names: a quoted value, or one word holding
something besides letters, ``_`` and ``.`` — a bare word (``token: str``, ``password: Optional[str] =
None``) is code, an annotation."""

_AWS_SECRET = re.compile(
    r"(?P<keep>(?i:(?:aws_)?secret_?access_?key)['\"]?[ \t]*+[:=][ \t]*+['\"]?)"
    r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
"""An AWS secret access key: 40 base64 characters assigned to its name (a bare 40-character string —
a git commit's sha — is no secret)."""

_URL_CREDENTIALS = re.compile(r"(?P<keep>(?<=://))[^\s/@:{}$<>]*+:[^\s/@{}$<>]++(?=@)")
"""``user:password`` before a URL's host (templates such as ``{user}:{password}`` are code)."""

_JWT = re.compile(
    r"(?P<keep>)(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{7,}+\.[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]{4,}+"
)
"""A JSON Web Token: three base64url parts, the first a JSON object's (``eyJ`` is ``{"``)."""

_PRIVATE_KEY = re.compile(
    r"(?P<keep>)-----BEGIN (?:[A-Z0-9]++ ){0,3}?PRIVATE KEY(?: BLOCK)?-----(?:[^-]++|-(?!----))*+"
    r"(?:-----END[A-Z0-9 ]{0,60}+-----)?"
)
"""A PEM private key block (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP, plain), BEGIN to END; one cut short
(no END line: an excerpt) up to where the next marker starts, or the text ends."""


def _keep(match: re.Match[str]) -> str:
    return match.group("keep") + PLACEHOLDER


def _keep_quoted(match: re.Match[str]) -> str:
    """A YAML value: an unquoted one becomes a quoted placeholder (``[...]`` would read as a list)."""
    keep = match.group("keep")
    return keep + PLACEHOLDER if keep.endswith(("'", '"')) else f'{keep}"{PLACEHOLDER}"'


_SHAPES: tuple[
    tuple[re.Pattern[str], Callable[[re.Match[str]], str], tuple[str, ...], bool], ...
] = (
    (_PRIVATE_KEY, _keep, ("PRIVATE KEY",), False),
    (_URL_CREDENTIALS, _keep, ("://",), False),
    (_JWT, _keep, ("eyJ",), False),
    (_ENV_ASSIGNMENT, _keep, ("PASSWORD", "PASSWD", "SECRET", "TOKEN"), False),
    (_CODE_ASSIGNMENT, _keep, ("PASSWORD", "PASSWD", "SECRET", "TOKEN"), False),
    (_JSON_MEMBER, _keep, ("password", "passwd", "secret", "token"), True),
    (_YAML_KEY, _keep_quoted, ("password", "passwd", "secret", "token"), True),
    (_AWS_SECRET, _keep, ("access",), True),
)
"""Each pattern, what its match becomes, the substrings without one of which it cannot match (most
text has none: the pattern is not run), and whether they are looked for in the lowercased text."""


def redact_shapes(value: str) -> str:
    """``value`` with every secret found by its shape, or by the name it is assigned to, replaced by
    :data:`PLACEHOLDER` (names, quotes and hosts kept)."""
    folded: str | None = None
    for pattern, replace, needs, lowered in _SHAPES:
        if lowered and folded is None:
            folded = value.lower()
        haystack = folded if lowered and folded is not None else value
        if any(n in haystack for n in needs):
            value = pattern.sub(replace, value)
            folded = None
    return KEY_PATTERNS.sub(PLACEHOLDER, value)


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
        return redact_shapes(value)

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
