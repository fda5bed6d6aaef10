"""The view's HTML: every untrusted text escaped, one page shell under a Content-Security-Policy.

Every text that came from a patch, an issue, a repository or a model goes through :func:`esc` (or a
helper that calls it); JSON embedded in a page is a ``<script type="application/json">`` data block
whose ``<``, ``>``, ``&`` and line separators are escaped (:func:`json_block`), so no ``</script>`` in a
patch can close it. The stylesheet and the index's script are package files (``view_assets/``) inlined
into each page and allowed by their sha256 in the policy: hashes hold from ``file://`` and from a
server alike, where ``'self'`` does not (a ``file://`` page has no origin of its own in some browsers).
No inline event handler, no ``style`` attribute, nothing loaded from anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from agentic_rubrics.surrogates import clean_value, replace_lone_surrogates

ASSETS = Path(__file__).with_name("view_assets")
"""The stylesheet and the index's script."""
MAX_TEXT_CHARS = 200_000
"""An issue text, a step or a patch shown is cut here (the run folder keeps the whole of it)."""
MAX_DIFF_LINES = 4_000
"""Lines of one patch shown."""


def esc(text: object) -> str:
    """Any value as HTML text (quotes escaped too: safe in an attribute), never markup."""
    return html.escape(replace_lone_surrogates(str(text)), quote=True)


def cut(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text``, cut at ``limit`` characters with a note saying how much is left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit:,} more characters not shown)"


def pre(text: str, cls: str = "") -> str:
    """Preformatted text, escaped and cut."""
    klass = f' class="{esc(cls)}"' if cls else ""
    return f"<pre{klass}>{esc(cut(text))}</pre>"


def details(summary: str, body: str, *, open_: bool = False, cls: str = "") -> str:
    """A collapsed block; ``summary`` is text (escaped), ``body`` is markup."""
    attrs = (f' class="{esc(cls)}"' if cls else "") + (" open" if open_ else "")
    return f"<details{attrs}><summary>{esc(summary)}</summary>{body}</details>"


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """A table; ``headers`` are text (escaped), each cell of ``rows`` is markup (escape text with
    :func:`esc`)."""
    klass = f' class="{esc(cls)}"' if cls else ""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def diff_html(patch: str) -> str:
    """A unified diff, each line classed (file header, hunk, added, removed, context), escaped."""
    lines = patch.splitlines()
    shown = [_cut_line(line) for line in lines[:MAX_DIFF_LINES]]
    # one escape for the whole patch: no line holds "\n" (an empty patch has no line at all)
    escaped = esc("\n".join(shown)).split("\n") if shown else []
    out = []
    for line, text in zip(shown, escaped, strict=True):
        if line.startswith(("diff --git", "--- ", "+++ ", "index ", "new file", "deleted file")):
            cls = "dh"
        elif line.startswith("@@"):
            cls = "dk"
        elif line.startswith("+"):
            cls = "da"
        elif line.startswith("-"):
            cls = "dd"
        else:
            cls = "dc"
        out.append(f'<span class="{cls}">{text}</span>')
    if len(lines) > len(shown):
        out.append(f'<span class="dn">… {len(lines) - len(shown):,} more lines not shown</span>')
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


def _cut_line(line: str, limit: int = 2_000) -> str:
    """One line of a patch, cut at ``limit`` characters (on the same line)."""
    return (
        line if len(line) <= limit else f"{line[:limit]} … ({len(line) - limit:,} more characters)"
    )


def json_block(element_id: str, data: Any) -> str:
    """``data`` as a JSON data block that no text inside it can close or turn into markup."""
    text = json.dumps(clean_value(data), ensure_ascii=True, sort_keys=True)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return f'<script type="application/json" id="{esc(element_id)}">{text}</script>'


@cache
def asset(name: str) -> str:
    """A file of ``view_assets/`` (the stylesheet, the index's script)."""
    return (ASSETS / name).read_text(encoding="utf-8")


def csp_hash(text: str) -> str:
    """The policy's source for an inline script or style with exactly this text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def policy(script: str | None) -> str:
    """The page's Content-Security-Policy: nothing from anywhere, but its own style (and script)."""
    scripts = csp_hash(script) if script is not None else "'none'"
    return (
        f"default-src 'none'; script-src {scripts}; style-src {csp_hash(asset('view.css'))};"
        " img-src 'self' data:; base-uri 'none'; form-action 'none'"
    )


def page(title: str, body: str, *, script: str | None = None, home: str = "") -> str:
    """A whole page: its policy, the stylesheet, ``body`` (markup) and the inline ``script``, if any."""
    nav = f'<nav><a href="{esc(home)}index.html">← all tasks</a></nav>' if home else ""
    tail = f"<script>{script}</script>" if script is not None else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(policy(script))}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{asset('view.css')}</style></head>"
        f"<body>{nav}{body}{tail}</body></html>\n"
    )


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for a cell (``–``: none)."""
    return "–" if x is None else f"{x:.{digits}f}"


def pct(x: float | None) -> str:
    """A share as a percentage (``–``: none)."""
    return "–" if x is None else f"{100 * x:.1f}%"


def label_mark(label: bool | None) -> str:
    """A label as a short classed mark: resolved, unresolved or unlabelled."""
    if label is None:
        return '<span class="lab lu" title="unlabelled">?</span>'
    if label:
        return '<span class="lab ly" title="resolved">✓</span>'
    return '<span class="lab ln" title="not resolved">✗</span>'


def png_data_uri(data: bytes) -> str:
    """A PNG as a ``data:`` URI (the policy allows images from ``data:``)."""
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")
