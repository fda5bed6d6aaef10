"""Compound items: a description that checks two things ("Raises ValueError and keeps the message").

A compound item can be half satisfied, and a binary verdict cannot say which half: a judge that sees
one part gives 1, and a candidate meeting one requirement scores as if it met both (rubrics get
reward-hacked this way). :func:`compound_reason` says whether a description joins two requirements,
from its grammar alone, and how. Flagged:

- two predicates: ``and``, ``but``, ``then``, ``while`` or a comma followed by a verb phrase — a
  verb that is rarely a noun (``and keeps``, ``, raises``), a third-person verb or a gerund followed by
  its object (``and returns None``, ``and updates the docs``, ``while keeping the API``), a negated
  verb (``and does not``, ``and never``, ``and no longer``), or ``also`` (``and also``);
- two clauses joined by a semicolon (``X; Y``);
- an additive connective, whatever follows it: ``as well as``, ``in addition to``, ``along with``,
  ``together with``, ``plus`` (the words say that a second requirement is added; "not only X but
  also Y" is caught by ``but also``);
- a list of requirements: enumeration markers ``(1) … (2)``, ``a) … b)``, ``(i) … (ii)``.

Not flagged (one criterion): one predicate over a coordinated object — "Handles both None and empty
strings in parse()", "Keeps public names and signatures", "Leaves packaging and dependency files
unchanged": one requirement over one domain, which a candidate meets or not as a whole (the judge gives
1 only when the patch clearly satisfies it), and split in two would give items that test the same code
path; a disjunction ("Raises ValueError or returns None", "Removes or renames no function"): either
part satisfies it, so nothing is half satisfied; a comparison or constraint on the one change ("without
an exception", "not only comments"); text in backticks or quotes (code, messages) and in parentheses
(annotations). The rules read words, not meaning: a verb the lists below do not know, followed by no
object, passes (a miss, not a false alarm). Time is linear in the text.
"""

from __future__ import annotations

import re

from agentic_rubrics.types import Rubric

_CODE = re.compile(r"`[^`]*`|\"[^\"]*\"|“[^”]*”|(?<!\w)'[^'\n]*'(?!\w)")
_PARENS = re.compile(r"\([^()]*\)")
_TOKEN = re.compile(r"[A-Za-z_][\w'’./:-]*\w|[A-Za-z_]|\d[\w.]*|[;,]")
_MARKER = re.compile(r"(?:^|[\s:;,])\(?([1-9]|[a-h]|i{1,3}|iv)\)(?=\s)")
_PLACEHOLDER = "CODE_"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


VERBS = _words(
    """keeps raises preserves leaves modifies adds removes deletes handles emits rejects accepts
    ignores avoids introduces validates converts propagates restores retains ensures respects produces
    yields throws prints renames replaces extends invalidates reverts applies adjusts clamps strips
    trims normalises normalizes computes treats honours honors includes excludes falls stays remains
    makes creates closes opens releases wraps catches writes parses defines declares registers exposes
    resolves detects warns refuses allows permits prevents requires reuses resets reloads recomputes
    reraises re-raises mutates sanitises sanitizes sends receives frees unlocks waits saves
    deduplicates initialises initializes leaks copies"""
)
"""Third-person verbs that are rarely plural nouns in a rubric: after a coordinator they start a
second predicate whatever follows."""

OBJECT_STARTS = _words(
    """the a an its their his her it them no none every each all any both this that these those one
    nothing either neither some more fewer less at exactly only whatever true false"""
)
"""Words that start an object: a word that may be a verb or a plural noun ("returns", "tests") is
read as a verb when one follows it ("and returns the value", not "names and signatures")."""

NOT_GERUNDS = _words(
    """string strings thing nothing something everything anything during morning spring ring bring
    king including excluding following regarding concerning according using depending containing
    matching starting ending assuming given pending remaining existing trailing leading missing
    padding encoding"""
)
"""Words in -ing that are nouns, adjectives or prepositions in rubric prose."""

_COORDINATORS = frozenset({"and", "but", "then", "while", "whilst", ","})
_ADDITIVE = (
    ("as", "well", "as"),
    ("in", "addition", "to"),
    ("along", "with"),
    ("together", "with"),
    ("plus",),
)
_NOT_THIRD_PERSON = frozenset({"this", "its", "his", "us", "yes", "as", "is", "was", "has", "does"})


def third_person(word: str) -> bool:
    """Whether ``word`` has the shape of a third-person verb ("Modifies", "Raises"): ends in s, not ss."""
    w = word.lower()
    return (
        len(w) >= 3
        and w.endswith("s")
        and not w.endswith(("ss", "us", "'s", "’s"))
        and w not in _NOT_THIRD_PERSON
    )


def _is_code(token: str) -> bool:
    """An identifier, a dotted or slashed path, a number or a placeholder for quoted text: never a
    verb."""
    return (
        token.startswith(_PLACEHOLDER)
        or any(c in token for c in "_./:")
        or token[0].isdigit()
        or any(c.isupper() for c in token[1:])
    )


def _object_follows(tokens: list[str], at: int) -> bool:
    if at >= len(tokens):
        return False
    nxt = tokens[at]
    return nxt.lower() in OBJECT_STARTS or _is_code(nxt) or nxt in ("None", "True", "False")


def _second_predicate(tokens: list[str], i: int) -> str | None:
    """The verb phrase after the coordinator ``tokens[i]``, as the lint names it, or ``None``."""
    coordinator, at = tokens[i].lower(), i + 1
    if at >= len(tokens):
        return None
    word = tokens[at].lower()
    if word == "also":
        return "also"
    if word in ("then", "still", "always") and at + 1 < len(tokens):
        at, word = at + 1, tokens[at + 1].lower()
    if _is_code(tokens[at]) or word in (",", ";"):
        return None
    nxt = tokens[at + 1].lower() if at + 1 < len(tokens) else ""
    if word in ("does", "doesn't", "doesn’t", "never") or (word == "no" and nxt == "longer"):
        return f"{word} {nxt}".strip()
    if word in VERBS or (third_person(word) and _object_follows(tokens, at + 1)):
        return word
    # "reading and writing the config" is the object of one verb; "raising X and logging Y" two
    if _gerund(word) and coordinator != "," and not _gerund(tokens[i - 1].lower()):
        return word if _object_follows(tokens, at + 1) else None
    return None


def _gerund(word: str) -> bool:
    return len(word) >= 5 and word.endswith("ing") and word not in NOT_GERUNDS


def _plain(description: str) -> str:
    """The prose of a description: code, quotes and parenthesised annotations replaced."""
    text = _CODE.sub(f" {_PLACEHOLDER} ", description)
    return _PARENS.sub(" ", text)


def compound_reason(description: str) -> str | None:
    """How ``description`` joins two requirements (a short phrase for a lint message), or ``None``."""
    markers = {m.group(1) for m in _MARKER.finditer(_CODE.sub(" ", description))}
    for first, second in (("1", "2"), ("a", "b"), ("i", "ii")):
        if first in markers and second in markers:
            return f"lists requirements ({first}), ({second})"
    tokens = _TOKEN.findall(_plain(description))
    lowered = [t.lower() for t in tokens]
    last_words = [i for i, t in enumerate(lowered) if t not in ",;"][-2:]
    for i, word in enumerate(lowered):
        if word == ";":
            # two words at least on each side: "X; Y", not a stray semicolon at an end
            if i >= 2 and len(last_words) == 2 and last_words[0] > i:
                return "joins two clauses with ';'"
            continue
        for phrase in _ADDITIVE:
            if tuple(lowered[i : i + len(phrase)]) == phrase and i > 0:
                return f"adds a requirement with '{' '.join(phrase)}'"
        if word in _COORDINATORS and i > 0:
            if word == "but" and i + 1 < len(lowered) and lowered[i + 1] == "not":
                continue
            verb = _second_predicate(tokens, i)
            if verb is not None:
                joined = f"{word} {verb}" if word != "," else f", {verb}"
                return f"joins two requirements with '{joined}'"
    return None


def compound_items(rubric: Rubric) -> dict[str, str]:
    """The rubric's compound items: item id -> how its description joins two requirements."""
    found = ((item.id, compound_reason(item.description)) for _, item in rubric.items())
    return {item_id: reason for item_id, reason in found if reason is not None}
