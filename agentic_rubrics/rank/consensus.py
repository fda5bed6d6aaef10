"""Behaviour consensus: candidates grouped by what their change does, the pick from the largest group.

Self-consistency votes on diff text: two fixes written differently (another local name, another layout,
a docstring) split the vote, and two patches that change nothing look alike. Here each candidate's vote
is what its change does to the program:

1. **Its signature.** Per program file it changes (tests, documentation and scratch scripts — new
   Python files at the repository root that nothing else in the patch names — are not the program:
   :func:`scratch_files`): with
   the task's tree, the hashed lines of the file's *normal form* that the change removes and adds
   (:mod:`agentic_rubrics.rubric.postimage.delta`: local names numbered, layout, comments, docstrings,
   ``pass``, dead branches and stores gone); without a tree, or for a file the analysis could not
   normalise, the diff's changed lines with comments, blank lines, bare ``pass`` and in-line layout
   dropped (token by token). Each line is tagged with its file (and, from the tree, its definition).
2. **Who votes.** A candidate that changes no behaviour — an empty patch, one the post-image analysis
   proves changes nothing (:func:`agentic_rubrics.rubric.behaviour.tree_behaviour`), or, without a
   tree, one whose diff changes nothing (the rule of
   :func:`~agentic_rubrics.rubric.behaviour.diff_behaviour`, on the tokens below), or one whose
   program change beside its scratch scripts is none —
   neither votes nor can be picked (``None``). A candidate that did not apply to the tree votes, but
   ranks below every one that applied (the harness cannot run it either).
3. **Groups and graded similarity.** Candidates with the same multiset of signature lines form one
   group (their changes do the same thing). Two groups are as similar as their multisets:
   ``sim(A, B) = 2 |A ∩ B| / (|A| + |B|)`` (Dice; 0 when both are empty). A group's weight is its size
   plus every other voter's similarity to it: ``W(g) = n_g + Σ_{h ≠ g} n_h · sim(g, h)``.
4. **The ranking.** By tier (applied or unknown, then not applied), then by the group's weight (its
   ``support``: ``(W(g) - 1) / (voters - 1)``, the mean similarity to the other voters, 0 for a lone
   voter), then by text self-consistency (line agreement) inside a group or between groups of equal
   weight. The pick is thus a member of the largest weighted group.

Cost per task: one signature per candidate (the post-image analysis is shared with the other selectors;
its normal forms are written out once more), and one multiset intersection per pair of distinct groups:
``O(G² · L)`` for G groups of at most L signature lines.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.patch import ChangedFile, is_empty_patch, parse_patch
from agentic_rubrics.rank.probes import MISSING, UNSTABLE, informative, output_agreement
from agentic_rubrics.rubric.behaviour import program_file

KEY = "behaviour_consensus"
"""The key of each task's consensus record among its selectors' features."""
_TOKEN = re.compile(r"""[rRbBuUfF]{0,2}(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|#.*|\w+|\S""")
"""A line's tokens: a one-line string literal (with its prefix), a comment, a word or number, any other
character; linear (no nested repetition)."""
MAX_SIGNATURE_LINES = 10_000
"""Signature lines kept per candidate (the first ones), as self-consistency caps changed lines."""


@dataclass(frozen=True)
class Signature:
    """What one candidate's change does, as consensus reads it."""

    tier: int | None
    """1: applied (or no tree to tell); 0: did not apply to the tree; ``None``: changes no behaviour."""
    lines: tuple[str, ...] = ()
    """Its signature lines (see the module's docstring)."""
    basis: str = "diff"
    """``tree`` (every changed program file normalised), ``diff`` (none), ``mixed``."""


def _line_text(line: str) -> str | None:
    """A diff line's tokens, its comment and the layout inside the line dropped (``None``: nothing
    left, or a bare ``pass``), after its indentation (nesting is behaviour). The tokens come from
    one linear regular expression (:data:`_TOKEN`), not ``tokenize``: a diff line is read alone."""
    toks = [t for t in _TOKEN.findall(line) if not t.startswith("#")]
    if not toks or toks == ["pass"]:
        return None
    return f"{len(line) - len(line.lstrip())}|{' '.join(toks)}"


def _file_texts(f: ChangedFile) -> tuple[list[str], list[str]]:
    return (
        [t for t in map(_line_text, f.removed) if t is not None],
        [t for t in map(_line_text, f.added) if t is not None],
    )


def _changes(files: list[ChangedFile], texts: list[tuple[list[str], list[str]]]) -> bool | None:
    """From the diff alone, as :func:`agentic_rubrics.rubric.behaviour.diff_behaviour` decides it (on
    these tokens): ``False`` only when every program file is Python and its removed and added lines
    hold the same tokens, or none."""
    undecided = False
    for f, (removed, added) in zip(files, texts, strict=True):
        if not all(p.endswith(".py") for p in f.paths):
            undecided = True
        elif f.is_rename or removed != added:
            return True
    return None if undecided else False


_SPECIAL = frozenset(
    {
        "__init__",
        "__main__",
        "conftest",
        "manage",
        "noxfile",
        "setup",
        "sitecustomize",
        "usercustomize",
    }
)
"""Root module names Python, pytest or packaging tools load by name: never scratch."""
_WORD = re.compile(r"\w+")


def scratch_files(files: Sequence[ChangedFile]) -> set[str]:
    """The patch's scratch scripts: new Python files at the repository root that no other part of the
    patch names (no other file's added line holds the module's name as a word: an import, a plugin
    list, ``importlib``, an entry point) and that no other section of the patch touches, whose names
    neither shadow the standard library nor are loaded by name (:data:`_SPECIAL`) — an agent's
    reproduction script (``reproduce.py``), which the program never runs. No gold patch of the
    development files adds a file at all, while 13% of Lite's candidates and 7% of Verified's add such
    a script (benchmarks/README.md). Left out of reach: a new root module shadowing an installed
    third-party package."""
    sections = Counter(p for f in files for p in f.paths)
    words: list[set[str] | None] = [None] * len(files)
    out: set[str] = set()
    for n, f in enumerate(files):
        name = f.path[: -len(".py")]
        if not (f.is_new and "/" not in f.path and f.path.endswith(".py")) or sections[f.path] > 1:
            continue
        if name in _SPECIAL or name in sys.stdlib_module_names:
            continue
        for m, g in enumerate(files):
            if m != n and words[m] is None:
                words[m] = {w for line in g.added for w in _WORD.findall(line)}
        if not any(name in (w or ()) for m, w in enumerate(words) if m != n):
            out.add(f.path)
    return out


def signature(patch: str, row: Mapping[str, Any] | None) -> Signature:
    """One candidate's signature from its patch and its post-image row (``None``: no tree, or no
    analysis; the row: :func:`agentic_rubrics.rank.content.post_row`). Scratch scripts
    (:func:`scratch_files`) are not the program: a patch whose program change is nothing else, or
    nothing but them, changes no behaviour."""
    if is_empty_patch(patch):
        return Signature(None)
    try:
        changed = parse_patch(patch).files
    except PatchParseError:
        return Signature(0 if row is not None else None)
    scratch = scratch_files(changed)
    files = [f for f in changed if any(program_file(p) for p in f.paths) and f.path not in scratch]
    if scratch and not files:
        return Signature(None)
    applied = row is not None and bool(row.get("applied"))
    if applied and row is not None and row.get("behaviour") is False:
        return Signature(None)
    delta: Mapping[str, list[str] | None] = (row or {}).get("delta") or {} if applied else {}
    if scratch and applied and all(delta.get(f.path) == [] and _edited(f) for f in files):
        return Signature(None)  # beside its scratch scripts, no normal form changes
    texts = [_file_texts(f) if delta.get(f.path) is None else ([], []) for f in files]
    if row is None and _changes(files, texts) is False:
        return Signature(None)
    lines: list[str] = []
    for f, (removed, added) in zip(files, texts, strict=True):
        found = delta.get(f.path)
        if found is not None:
            lines += [f"{f.path}:{t}" for t in found]
        else:
            lines += [f"{f.path}:-{t}" for t in removed] + [f"{f.path}:+{t}" for t in added]
    normalised = sum(1 for f in files if delta.get(f.path) is not None)
    basis = "tree" if normalised == len(files) and files else "mixed" if normalised else "diff"
    return Signature(1 if row is None or applied else 0, tuple(lines[:MAX_SIGNATURE_LINES]), basis)


def _edited(f: ChangedFile) -> bool:
    """A file edited in place (not added, deleted or renamed)."""
    return not (f.is_new or f.is_deleted or f.is_rename)


def dice(a: Counter[str], b: Counter[str]) -> float:
    """``2 |a ∩ b| / (|a| + |b|)`` over multisets; 0 when both are empty."""
    total = a.total() + b.total()
    return 2 * (a & b).total() / total if total else 0.0


def _similarity(
    a: Counter[str],
    b: Counter[str],
    oa: Sequence[str | None] | None,
    ob: Sequence[str | None] | None,
    base: Sequence[str | None],
    over: Sequence[int],
) -> float:
    """Two groups' similarity: the Dice of their signatures, averaged with the agreement of what
    they change of the issue's examples' outputs where either changes one
    (:func:`~agentic_rubrics.rank.probes.output_agreement`)."""
    d = dice(a, b)
    agree = output_agreement(oa, ob, base, over) if oa is not None and ob is not None else None
    return d if agree is None else (d + agree) / 2


def consensus(
    signatures: Mapping[str, Signature],
    agreement: Mapping[str, float | None],
    probes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The task's consensus record: each candidate's ``rank`` (higher is better; ``None``: changes
    no behaviour) and ``support`` (``2 × tier + support``: what ROC-AUC rests on), the number of
    voters and groups, and how many signatures each basis gave. ``agreement``: the text
    self-consistency values (the tie-break); ``probes``: the outputs on the issue's examples
    (``{"base": hashes, "outputs": {id: hashes}}``, :mod:`agentic_rubrics.rank.probes`), when a
    sandbox ran them."""
    voters = {c: s for c, s in signatures.items() if s.tier is not None}
    outs, over = _voter_outputs(voters, probes)
    base = tuple((probes or {}).get("base") or ())
    keys = {c: (tuple(sorted(s.lines)), outs.get(c)) for c, s in voters.items()}
    groups = list(dict.fromkeys(keys.values()))
    sizes = Counter(keys.values())
    bags = [Counter(g[0]) for g in groups]
    weight = [float(sizes[g]) for g in groups]
    for i in range(len(groups)):
        for j in range(i + 1, len(groups)):
            s = _similarity(bags[i], bags[j], groups[i][1], groups[j][1], base, over)
            weight[i] += sizes[groups[j]] * s
            weight[j] += sizes[groups[i]] * s
    index = {g: n for n, g in enumerate(groups)}
    others = len(voters) - 1
    support = {c: (weight[index[k]] - 1) / others if others else 0.0 for c, k in keys.items()}
    order = {
        c: (voters[c].tier or 0, round(support[c], 12), agreement.get(c) or 0.0) for c in voters
    }
    dense = {key: n for n, key in enumerate(sorted(set(order.values())), start=1)}
    return {
        "rank": {c: float(dense[order[c]]) if c in order else None for c in signatures},
        "support": {
            c: 2 * (voters[c].tier or 0) + support[c] if c in voters else None for c in signatures
        },
        "voters": len(voters),
        "groups": len(groups),
        "largest_group": max(sizes.values(), default=0),
        "basis": dict(sorted(Counter(s.basis for s in voters.values()).items())),
        **({"probed": len(outs), "informative": len(over)} if probes is not None else {}),
        **(
            {"probes_reason": probes["reason"]} if probes is not None and "reason" in probes else {}
        ),
    }


def _voter_outputs(
    voters: Mapping[str, Signature], probes: Mapping[str, Any] | None
) -> tuple[dict[str, tuple[str | None, ...]], list[int]]:
    """The voters' outputs on the examples and the examples that tell them apart; none when the
    base tree gave no output for some example (the examples did not run there at all). Once they
    ran there, a voter's missing output (its run crashed, printed nothing, timed out, or reported a
    snippet twice) is a value of its own, :data:`MISSING`: it disagrees with every other; only a
    sandbox that could not start (``sandbox_error``) leaves a voter without outputs. An example the
    base printed differently on its two runs (``unstable``) tells nobody apart."""
    base = (probes or {}).get("base")
    if not base or any(h is None for h in base):
        return {}, []
    found = (probes or {}).get("outputs") or {}
    reasons = (probes or {}).get("reasons") or {}
    outs: dict[str, tuple[str | None, ...]] = {}
    for c in voters:
        got = found.get(c)
        if got is None or len(got) != len(base):
            if reasons.get(c) == "sandbox_error":
                continue
            got = [None] * len(base)
        outs[c] = tuple(
            UNSTABLE if b == UNSTABLE else MISSING if h is None else h
            for h, b in zip(got, base, strict=True)
        )
    return outs, informative(outs, base)


def consensus_record(
    patches: Mapping[str, str],
    rows: Mapping[str, Mapping[str, Any] | None],
    agreement: Mapping[str, float | None],
    probes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`consensus` of a pool from its patches and their post-image rows (absent: no tree),
    and the outputs on the issue's examples when they ran."""
    signatures = {c: signature(p, rows.get(c)) for c, p in patches.items()}
    return consensus(signatures, agreement, probes)


def probes_summary(stored: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What the report says of ``consensus_probes``: the tasks whose consensus record tried the
    examples, on how many they ran (no ``probes_reason``) and told candidates apart, and the reasons
    they did not run; ``None`` when no task tried them."""
    records = [b[KEY] for b in stored if isinstance(b.get(KEY), dict) and "probed" in b[KEY]]
    if not records:
        return None
    reasons = Counter(str(r["probes_reason"]) for r in records if "probes_reason" in r)
    return {
        "tasks": len(records),
        "ran": sum(1 for r in records if "probes_reason" not in r),
        "informative": sum(1 for r in records if r.get("informative")),
        "reasons": dict(sorted(reasons.items())),
    }
