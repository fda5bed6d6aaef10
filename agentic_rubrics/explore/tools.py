"""The rubric agent's repository tools: ``bash``, ``view`` and ``search``, paged and capped.

A real repository has files of 5,000 lines and searches with thousands of matches; an observation is
capped (``max_chars``) and the tools page instead of cutting blindly:

- ``view PATH [FIRST [LAST]]`` shows at most ``VIEW_PAGE_LINES`` numbered lines (and fewer when they would
  pass the cap), each line cut at ``MAX_LINE_CHARS``; the note names the lines shown, the file's length
  and the ``view`` arguments of the next page. Files are read up to ``MAX_VIEW_BYTES``.
- ``search`` (a regular expression on the first line, an optional path on the second, an optional
  ``page: N`` line) lists ``SEARCH_PAGE`` matches per page, each cut at ``MAX_LINE_CHARS``, with the total
  count: grep runs over the whole tree once per call, awk keeps only the page (bounded output whatever
  the number of matches).
- ``bash`` runs the command; its output is cut at the cap (the sandbox marks the cut).

Each returns the output (repository text: the caller fences it) and a note (the loop's own words, from
the prompt file, shown outside the fence), plus the command's status where there is one.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from agentic_rubrics.prompts import Prompt
from agentic_rubrics.protocols import Sandbox

VIEW_PAGE_LINES = 200
SEARCH_PAGE = 50
MAX_LINE_CHARS = 400
MAX_VIEW_BYTES = 16 << 20
_PLAIN_PATH = re.compile(r"^[\w./+-]{1,300}$")  # echoed in the loop's own words only when plain
_PAGE = re.compile(r"^\s*page\s*[:=]?\s*(\d{1,6})\s*$", re.I)


@dataclass
class ToolResult:
    """One tool call's outcome."""

    output: str
    note: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f" [... {len(line) - MAX_LINE_CHARS} more characters]"


async def view(sandbox: Sandbox, argument: str, *, max_chars: int, prompt: Prompt) -> ToolResult:
    """A page of a file with line numbers (see the module doc)."""
    parts = argument.split()
    path = parts[0] if parts else ""
    data = await sandbox.read_file(path, max_bytes=MAX_VIEW_BYTES)
    lines = data.splitlines()
    total = len(lines)
    first = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 1
    last = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else total
    first, last = max(first, 1), min(last, total)
    shown: list[str] = []
    size = 0
    n = first
    while n <= last and len(shown) < VIEW_PAGE_LINES:
        row = f"{n:6d}  {_cut(lines[n - 1])}"
        if shown and size + len(row) + 1 > max_chars:
            break
        shown.append(row)
        size += len(row) + 1
        n += 1
    end = first + len(shown) - 1
    file_cut = len(data.encode("utf-8", "replace")) >= MAX_VIEW_BYTES
    note = ""
    if end < last or file_cut or (first > total and total > 0):
        note = prompt.render(
            "view_page",
            path=path if _PLAIN_PATH.match(path) else "",
            first=first,
            last=end,
            total=total,
            next_first=end + 1,
            next_last=min(end + VIEW_PAGE_LINES, total),
            more=end < last,
            beyond=first > total,
            cut_at=MAX_VIEW_BYTES if file_cut else None,
        ).strip()
    return ToolResult("\n".join(shown), note, truncated=bool(note))


def search_command(pattern: str, where: str, page: int) -> str:
    """grep over the tree once; awk keeps one page of matches, each cut, then prints the count."""
    start = (page - 1) * SEARCH_PAGE + 1
    end = start + SEARCH_PAGE - 1
    awk = f"NR>={start} && NR<={end} {{ print substr($0, 1, {MAX_LINE_CHARS}) }} END {{ print NR }}"
    pipeline = (
        "set -o pipefail; LC_ALL=C grep -rnE --binary-files=without-match -- "
        f"{shlex.quote(pattern)} {shlex.quote(where)} 2>&1 | awk {shlex.quote(awk)}"
    )
    return f"bash -c {shlex.quote(pipeline)}"  # grep's status through the pipe, whatever sh is


async def search(
    sandbox: Sandbox, argument: str, *, max_chars: int, timeout: float, prompt: Prompt
) -> ToolResult:
    """One page of the matches of a regular expression (see the module doc)."""
    lines = argument.split("\n")
    pattern = lines[0].strip()
    page = 1
    rest = []
    for line in lines[1:]:
        m = _PAGE.match(line)
        if m:
            page = max(1, int(m.group(1)))
        elif line.strip():
            rest.append(line.strip())
    where = rest[0] if rest else "."
    result = await sandbox.run(
        search_command(pattern, where, page), timeout=timeout, max_output=max_chars * 4
    )
    out = result.output.rstrip("\n").split("\n")
    total = int(out[-1]) if out and out[-1].strip().isdigit() and not result.truncated else None
    body = "\n".join(out[:-1] if total is not None else out)
    if len(body) > max_chars:
        body = body[:max_chars]
    first = (page - 1) * SEARCH_PAGE + 1
    shown = body.count("\n") + 1 if body else 0
    note = ""
    if total is not None and (first > 1 or total > first + shown - 1):
        note = prompt.render(
            "search_page",
            first=first,
            last=first + shown - 1,
            total=total,
            next_page=page + 1 if total > first + shown - 1 else None,
        ).strip()
    return ToolResult(
        body,
        note,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        truncated=result.truncated or bool(note),
    )


async def bash(sandbox: Sandbox, command: str, *, max_chars: int, timeout: float) -> ToolResult:
    """Run a command; its output is cut at the cap."""
    result = await sandbox.run(command, timeout=timeout, max_output=max_chars)
    return ToolResult(
        result.output,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        truncated=result.truncated,
    )
