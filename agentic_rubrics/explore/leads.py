"""Where an issue's leads are in the repository: each lead located at its definitions, and scored.

Leads come from :mod:`~agentic_rubrics.explore.mentions` (pure text); this module confirms them against
the repository's index (:class:`~agentic_rubrics.explore.codeindex.CodeIndex`) and gives each location
points of evidence. Every lead is recorded with its kind and whether it found anything, so a run can say
which kinds of leads come to nothing on real repositories (counts only, never the text).

Kinds: ``frame`` (a traceback frame's file), ``path`` (a file named in the text), ``module`` (a dotted
module path or an import of the issue's code), ``symbol`` (a function or class name, ``Class.method``),
``constant`` (an UPPER_CASE name), ``message`` (an error message found literally in the code), ``option``
(a ``--flag``, a directive, a ``:field:`` or a setting name registered as a string literal).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from agentic_rubrics.explore.codeindex import CodeIndex, Definition, is_low_prior
from agentic_rubrics.explore.common import literal_fragment
from agentic_rubrics.explore.filenames import file_name_matches
from agentic_rubrics.explore.mentions import Mentions
from agentic_rubrics.patch import is_test_path
from agentic_rubrics.rubric.grounding import LEAD_KINDS

MAX_NAMES = 60
MAX_PARSED_FILES = 12
FRAME_WEIGHTS = (5.0, 2.5)
"""Evidence of the deepest repository frame of a traceback, then the one above it; others get 1."""
CALLEE_DECAY = (0.5, 0.25)
"""Share of a function's evidence passed to what it calls, one and two calls away."""
_SNAKE_SETTING = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")

Key = tuple[str, str, str]  # (path, qualname, kind)


@dataclass
class Evidence:
    """Why the explorer believes a location matters."""

    score: float = 0.0
    reasons: list[str] = field(default_factory=list)

    def add(self, points: float, reason: str) -> None:
        self.score += points
        if reason not in self.reasons:
            self.reasons.append(reason)


@dataclass
class Lead:
    """One lead of the issue and whether the repository confirmed it."""

    kind: str
    text: str
    found: bool = False


@dataclass
class Located:
    """The outcome of locating: scored definitions and files, and every lead with its outcome."""

    definitions: dict[Key, Evidence] = field(default_factory=lambda: defaultdict(Evidence))
    where: dict[Key, Definition] = field(default_factory=dict)
    direct: dict[str, Evidence] = field(default_factory=lambda: defaultdict(Evidence))
    """Evidence about files themselves (a named path, a frame or literal outside any definition)."""
    line_hits: list[tuple[str, int, float, str]] = field(default_factory=list)
    """(file, line, points, reason): given to the enclosing definition once the file is parsed."""
    leads: list[Lead] = field(default_factory=list)
    files: dict[str, Evidence] = field(default_factory=dict)

    def add(self, d: Definition, points: float, reason: str) -> None:
        key = (d.path, d.qualname, d.kind)
        self.where.setdefault(key, d)
        self.definitions[key].add(points, reason)

    def lead(self, kind: str, text: str, found: bool) -> None:
        self.leads.append(Lead(kind, text, found))

    def top_files(self, n: int) -> list[str]:
        ranked = sorted(self.files.items(), key=lambda kv: (-kv[1].score, kv[0]))
        return [f for f, ev in ranked[:n] if ev.score > 0]

    def ranked_definitions(self, paths: list[str]) -> list[tuple[Definition, Evidence]]:
        """Definitions in these files, best first."""
        ranked = [
            (self.where[k], ev)
            for k, ev in self.definitions.items()
            if k[0] in paths and ev.score > 0
        ]
        return sorted(ranked, key=lambda x: (-x[1].score, x[0].path, x[0].lineno))

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts of leads per kind, and of those that found nothing (no lead text)."""
        leads: dict[str, int] = {}
        unmatched: dict[str, int] = {}
        for lead in self.leads:
            leads[lead.kind] = leads.get(lead.kind, 0) + 1
            if not lead.found:
                unmatched[lead.kind] = unmatched.get(lead.kind, 0) + 1
        order = {k: n for n, k in enumerate(LEAD_KINDS)}
        return {
            "leads": dict(sorted(leads.items(), key=lambda kv: order.get(kv[0], 99))),
            "unmatched": dict(sorted(unmatched.items(), key=lambda kv: order.get(kv[0], 99))),
        }


def _prior(d: Definition) -> float:
    """How plausible a location is before any lead: tests, docs, vendored code count little."""
    if is_test_path(d.path):
        return 0.3
    if is_low_prior(d.path):
        return 0.1
    return 1.0


def _emphasis(mentions: Mentions, name: str) -> float:
    """Names repeated in the text, or in its title, weigh a little more (at most twice)."""
    return min(2.0, 1.0 + 0.25 * max(0, mentions.counts.get(name, 1) - 1))


def _spread(found: list[Definition], *, prefer_class: bool, prefer_method: bool) -> list[float]:
    """Each definition's share of a name's evidence: the plausible ones share it, others get little."""
    priors = [_prior(d) for d in found]
    kinds = [d.kind for d in found]
    shares = []
    for d, prior, kind in zip(found, priors, kinds, strict=True):
        share = prior
        if prefer_class and "class" in kinds and kind != "class":
            share *= 0.3
        is_method = "." in d.qualname
        if any(("." in x.qualname) != is_method for x in found) and is_method != prefer_method:
            share *= 0.5
        shares.append(share)
    best = [s for s in shares if s >= 0.99 * max(shares)] if shares else []
    ambiguity = max(1, len(best))
    return [s / ambiguity**0.5 for s in shares]


async def locate(index: CodeIndex, mentions: Mentions) -> Located:
    """Find and score the definitions and files the issue points at."""
    out = Located()
    await index.list_files()
    parsed_first = await _frames(index, mentions, out)
    _named_paths(index, mentions, out)
    module_parts, inside = _modules(index, mentions, out)
    settings = _names(index, mentions, out, module_parts, inside)
    _constants(index, mentions, out)
    for path, points in file_name_matches(index.files, mentions.words).items():
        out.direct[path].add(points, "file name in issue")
    await _literals(index, mentions, settings, out)
    await _parse_top(index, out, parsed_first)
    await _propagate_to_callees(index, out)
    _score_files(out)
    return out


async def _frames(index: CodeIndex, mentions: Mentions, out: Located) -> list[str]:
    """Traceback frames: the deepest frame inside the repository is where the failure surfaced. The
    files of the five deepest are parsed first (returned)."""
    parsed_first: list[str] = []
    frames = [(f, index.match_path(f.path)) for f in mentions.frames]
    for printed in dict.fromkeys(f.path for f in mentions.frames):
        out.lead("frame", printed, any(p is not None for f, p in frames if f.path == printed))
    repo_frames = [(f, p) for f, p in frames if p is not None]
    for rank, (frame, path) in enumerate(reversed(repo_frames)):
        assert path is not None
        weight = FRAME_WEIGHTS[rank] if rank < len(FRAME_WEIGHTS) else 1.0
        if is_test_path(path):
            weight *= 0.25
        if rank < 5:
            parsed_first.append(path)
            await index.parse(path)
        d = index.enclosing(path, frame.line)
        if d is None or d.name != frame.func:
            d = next((x for x in index.definitions.get(path, []) if x.name == frame.func), None)
        if d is not None:
            out.add(d, weight, "traceback frame")
        else:
            out.direct[path].add(weight, "traceback frame")
    return parsed_first


def _named_paths(index: CodeIndex, mentions: Mentions, out: Located) -> None:
    """Files named in the text."""
    for printed in mentions.paths:
        named = index.match_path(printed)
        out.lead("path", printed, named is not None)
        if named is not None:
            out.direct[named].add(0.5 if is_test_path(named) else 2.0, "path in issue")


def _modules(
    index: CodeIndex, mentions: Mentions, out: Located
) -> tuple[set[str], dict[str, list[str]]]:
    """Module paths and the imports of the issue's code: the module's file, and names inside it.
    Returns the parts of the modules found, and each imported name's module files."""
    module_parts: set[str] = set()
    inside: dict[str, list[str]] = defaultdict(list)  # name -> module files it was imported from
    modules: list[tuple[str, tuple[str, ...]]] = [
        *((m, ()) for m in mentions.dotted),
        *mentions.imports,
    ]
    seen_modules: set[str] = set()
    for dotted, imported in modules:
        resolved = index.module_file(dotted)
        if resolved is None:  # a dotted name that is no module path is a symbol (see below)
            if dotted in dict(mentions.imports) and dotted not in seen_modules:
                seen_modules.add(dotted)
                out.lead("module", dotted, False)
            continue
        path, rest = resolved
        module = dotted[: len(dotted) - sum(len(r) + 1 for r in rest)] if rest else dotted
        module_parts.update(module.split("."))
        if module not in seen_modules:
            seen_modules.add(module)
            out.lead("module", module, True)
            out.direct[path].add(0.5 if path.endswith("__init__.py") else 1.5, "module in issue")
        for attrs in ([rest] if rest else []) + [[n] for n in imported]:
            inside[attrs[-1]].append(path)
    return module_parts, inside


def _names(
    index: CodeIndex,
    mentions: Mentions,
    out: Located,
    module_parts: set[str],
    inside: dict[str, list[str]],
) -> list[str]:
    """Names: functions, classes, methods; the issue's own code's names are the reporter's. Returns
    the snake_case names found nowhere (maybe settings registered by their names)."""
    dotted_syms = [s for s in mentions.symbols if "." in s]
    method_like = {s.rsplit(".", 1)[-1] for s in dotted_syms if s.split(".")[0][:1].islower()}
    names = [
        n
        for n in mentions.names
        if n not in mentions.user_defined and n not in module_parts and n.isidentifier()
    ]
    names = list(dict.fromkeys([*inside, *names]))[:MAX_NAMES]
    settings: list[str] = []
    for name in names:
        found = [d for d in index.lookup(name) if d.kind != "constant"]
        if not found:
            if _SNAKE_SETTING.match(name):
                settings.append(name)  # maybe a setting registered by its name: tried as an option
            else:
                out.lead("symbol", name, False)
            continue
        out.lead("symbol", name, True)
        from_module = inside.get(name, [])
        shares = _spread(found, prefer_class=True, prefer_method=name in method_like)
        for d, share in zip(found, shares, strict=True):
            qualified = any(d.qualname.endswith(s) or s.endswith(d.qualname) for s in dotted_syms)
            points = (2.5 if qualified else 1.5) * share * _emphasis(mentions, name)
            if any(d.path == p or _under_package(d.path, p) for p in from_module):
                points = max(points, 3.0 * _prior(d))
            out.add(d, points, "symbol in issue")
    return settings


def _constants(index: CodeIndex, mentions: Mentions, out: Located) -> None:
    """UPPER_CASE constants, located by their assignments."""
    for const in mentions.constants[:20]:
        found = [d for d in index.lookup(const) if d.kind == "constant" or d.kind == "class"]
        out.lead("constant", const, bool(found))
        shares = _spread(found, prefer_class=False, prefer_method=False)
        for d, share in zip(found, shares, strict=True):
            out.add(d, 2.5 * share * _emphasis(mentions, const), "constant in issue")


def _under_package(path: str, init: str) -> bool:
    return init.endswith("/__init__.py") and path.startswith(init.removesuffix("__init__.py"))


async def _literals(
    index: CodeIndex, mentions: Mentions, settings: list[str], out: Located
) -> None:
    """Error messages found literally, and options or settings registered as string literals."""
    messages = list(dict.fromkeys([*mentions.messages, *mentions.error_lines]))[:8]
    fragments = {m: literal_fragment(m) for m in messages}
    options = mentions.options[:12]
    quoted = {o: [f"'{o}'", f'"{o}"'] for o in [*options, *settings[:8]]}
    texts = [f for f in fragments.values() if f] + [q for qs in quoted.values() for q in qs]
    hits = await index.grep_literals(texts) if texts else {}
    for message, fragment in fragments.items():
        found = (
            [(p, ln) for p, ln in hits.get(fragment, []) if not is_test_path(p)] if fragment else []
        )
        out.lead("message", message, bool(found))
        first = _first_per_file(found)
        for path, line in first[:20]:
            out.line_hits.append((path, line, 2.0 / len(first) ** 0.5, "raises the quoted message"))
    for option, forms in quoted.items():
        found = [(p, ln) for q in forms for p, ln in hits.get(q, []) if not is_test_path(p)]
        found = [(p, ln) for p, ln in found if not is_low_prior(p)] or found
        kind = "symbol" if option in settings else "option"
        out.lead(kind, option, bool(found))
        first = _first_per_file(found)
        for path, line in first[:10]:
            points = 1.5 / len(first) ** 0.5
            out.line_hits.append((path, line, points, "registers the named option"))


def _first_per_file(hits: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """One hit per file (the first): a literal repeated in a file is no stronger a lead."""
    first: dict[str, int] = {}
    for path, line in hits:
        first.setdefault(path, line)
    return list(first.items())


async def _parse_top(index: CodeIndex, out: Located, first: list[str]) -> None:
    """Parse the most promising files: line hits go to their enclosing definitions, and listed
    definitions get their real line ranges."""
    rough: dict[str, float] = defaultdict(float)
    for path, ev in out.direct.items():
        rough[path] += ev.score
    for key, ev in out.definitions.items():
        rough[key[0]] = max(rough[key[0]], ev.score)
    for path, _, points, _ in out.line_hits:
        rough[path] += points
    ranked = sorted(rough, key=lambda p: (-rough[p], p))
    for path in list(dict.fromkeys([*first, *ranked]))[:MAX_PARSED_FILES]:
        await index.parse(path)
    for path, line, points, reason in out.line_hits:
        d = index.enclosing(path, line) if path in index.definitions else None
        if d is not None:
            out.add(d, points, reason)
        else:
            out.direct[path].add(points, reason)
    # listed definitions of parsed files take their parsed form (real line ranges)
    for key in list(out.definitions):
        listed = out.where[key]
        if listed.path in index.definitions:
            parsed = index.resolve(listed)
            if parsed is not None:
                out.where[key] = parsed


async def _propagate_to_callees(index: CodeIndex, out: Located) -> None:
    """A symptom in a public function is often rooted in a helper it calls (or its decorators)."""
    frontier = sorted(
        (
            (d, out.definitions[k].score)
            for k, d in out.where.items()
            if d.kind == "function" and not is_test_path(d.path) and d.path in index.definitions
        ),
        key=lambda x: -x[1],
    )[:6]
    for decay in CALLEE_DECAY:
        next_frontier = []
        for parent, score in frontier:
            for name in index.callees(parent):
                targets = [
                    x
                    for x in index.lookup(name)
                    if x.kind == "function" and not is_test_path(x.path)
                ]
                # a helper of the same package; a call into a far part of the repository (a
                # utility everything uses) says little about this issue
                targets = [x for x in targets if _package(x.path) == _package(parent.path)]
                if not 0 < len(targets) <= 3:  # a name defined everywhere says nothing
                    continue
                for target in targets:
                    gain = score * decay / len(targets)
                    out.add(target, gain, f"called by {parent.qualname}")
                    next_frontier.append((target, gain / decay))
        frontier = next_frontier[:12]
        for path in dict.fromkeys(t.path for t, _ in frontier):
            await index.parse(path)
            for key in [k for k in out.where if k[0] == path]:
                out.where[key] = index.resolve(out.where[key]) or out.where[key]


def _package(path: str) -> str:
    return "/".join(path.split("/")[:-1][:2])


def _score_files(out: Located) -> None:
    """A file's evidence: what points at the file itself, its strongest definition, and a little of
    the others (many frames in one file must not outweigh the frame where the failure surfaced)."""
    files: dict[str, Evidence] = defaultdict(Evidence)
    for path, ev in out.direct.items():
        files[path].add(ev.score, ", ".join(ev.reasons))
    by_file: dict[str, list[Evidence]] = defaultdict(list)
    for key, ev in out.definitions.items():
        by_file[key[0]].append(ev)
    for path, evs in by_file.items():
        ranked = sorted(evs, key=lambda e: -e.score)
        files[path].add(
            ranked[0].score + 0.3 * sum(e.score for e in ranked[1:]), "holds located code"
        )
        for reason in ranked[0].reasons:
            files[path].add(0.0, reason)
    for path, ev in files.items():
        if is_low_prior(path) and not is_test_path(path):
            ev.score *= 0.1
    out.files = dict(files)
