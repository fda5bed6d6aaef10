"""The agent's conversation, kept within the model's context window.

A 1.4k-token system prompt plus 30 turns of 10,000-character observations is about 116k tokens: far past
the 32k window of many open models. Before every call the conversation is fitted to a budget in tokens
(the model's window as litellm knows it or as configured, less the reply's own budget and the tools):

1. older tool outputs are replaced by a short note saying what was removed (the outputs of the two
   latest turns stay whole: the last command's output and the validator's report are what the next turn
   needs);
2. then older assistant messages are shortened (tool calls stay, long arguments emptied);
3. then the oldest turns are dropped whole (a call and its answers go together), one note saying which;
4. then the latest outputs are cut, with a marker;
5. what can never go (the instructions and the issue) failing to fit ends the exploration with the
   reason ``context_window``.

A note replaces a message only where it is shorter. Tokens are estimated from UTF-8 bytes
(:data:`BYTES_PER_TOKEN`), an overestimate for code and prose in the tokenizers we know; when a provider
still finds the prompt too long, the loop lowers the budget and fits again (:meth:`Conversation.shrink`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentic_rubrics.prompts import Prompt

BYTES_PER_TOKEN = 3
"""UTF-8 bytes per token assumed by the estimate (tokenizers give 3.5-4.5 on code and English)."""
MESSAGE_OVERHEAD = 8
"""Tokens counted per message for its role and separators."""
KEEP_RECENT = 2
"""Turns whose outputs and messages are never elided or dropped (they may still be cut)."""
SAFETY = 0.95
"""Share of the budget the estimate may fill."""


def estimate_tokens(value: Any) -> int:
    """A conservative token count of a message, a list of them, or any JSON-like value."""
    if isinstance(value, list):
        return sum(estimate_tokens(v) for v in value)
    if isinstance(value, dict) and "role" in value:
        text = json.dumps({k: v for k, v in value.items() if k != "role"}, ensure_ascii=False)
        return MESSAGE_OVERHEAD + -(-len(text.encode("utf-8", "replace")) // BYTES_PER_TOKEN)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return -(-len(text.encode("utf-8", "replace")) // BYTES_PER_TOKEN)


@dataclass
class _Entry:
    message: dict[str, Any]
    turn: int
    output: bool  # the loop's answer (tool output, format error, validation), not the model's
    elided: bool = False


class Conversation:
    """The messages of one exploration and how they are fitted to ``budget`` tokens.

    It starts with the pinned messages (system prompt, the issue); ``fixed_tokens`` counts what every
    request adds beside them (the tool schemas).
    """

    def __init__(
        self, pinned: list[dict[str, Any]], *, budget: int, prompt: Prompt, fixed_tokens: int = 0
    ) -> None:
        self.pinned = list(pinned)
        self.budget = budget
        self.prompt = prompt
        self.fixed_tokens = fixed_tokens
        self._entries: list[_Entry] = []
        self._dropped_to = 0  # turns 1 .. this one were dropped whole
        self.elided_outputs = 0
        self.elided_messages = 0
        self.dropped_turns = 0
        self.cut_outputs = 0

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation as the next request sends it."""
        out = list(self.pinned)
        if self._dropped_to:
            note = self.prompt.render("elided", what="turns", turn=self._dropped_to, chars=0)
            out.append({"role": "user", "content": note.strip()})
        return out + [e.message for e in self._entries]

    def add_assistant(self, message: dict[str, Any], turn: int) -> None:
        """Append the model's reply of ``turn``."""
        self._entries.append(_Entry(message, turn, output=False))

    def add_observation(self, message: dict[str, Any], turn: int) -> None:
        """Append what the loop answered in ``turn`` (a tool's output, a format error, validation)."""
        self._entries.append(_Entry(message, turn, output=True))

    def tokens(self) -> int:
        """The estimated size of the next request's prompt."""
        return self.fixed_tokens + estimate_tokens(self.messages)

    def _fits(self) -> bool:
        return self.tokens() <= int(self.budget * SAFETY)

    def shrink(self, factor: float = 0.75) -> None:
        """The provider found the prompt too long: aim lower from now on."""
        self.budget = max(1, int(min(self.budget, self.tokens()) * factor))

    def _old(self) -> list[_Entry]:
        turns = sorted({e.turn for e in self._entries})
        recent = set(turns[-KEEP_RECENT:])
        return [e for e in self._entries if e.turn not in recent]

    def fit(self) -> bool:
        """Elide, drop and cut until the conversation fits; ``False`` when the pinned part does not."""
        if self._fits():
            return True
        for output in (True, False):  # older outputs first, then older assistant messages
            for entry in self._old():
                if entry.output == output and not entry.elided:
                    self._elide(entry)
                    if self._fits():
                        return True
        while self._old():  # the oldest turn, whole
            oldest = self._entries[0].turn
            self._entries = [e for e in self._entries if e.turn != oldest]
            self._dropped_to = oldest
            self.dropped_turns += 1
            if self._fits():
                return True
        for entry in reversed([e for e in self._entries if e.output]):
            self._cut(entry)
            if self._fits():
                return True
        return self._fits()

    def _note(self, what: str, turn: int, chars: int) -> str:
        return self.prompt.render("elided", what=what, turn=turn, chars=chars).strip()

    def _elide(self, entry: _Entry) -> None:
        entry.elided = True
        message = dict(entry.message)
        content = str(message.get("content") or "")
        note = self._note("output" if entry.output else "message", entry.turn, len(content))
        if len(note) < len(content):
            message["content"] = note
        if message.get("tool_calls"):
            message["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": "{}"}}
                if len(c["function"]["arguments"]) > 200
                else c
                for c in message["tool_calls"]
            ]
        message.pop("thinking_blocks", None)  # only the latest assistant message needs them
        if message != entry.message:
            entry.message = message
            if entry.output:
                self.elided_outputs += 1
            else:
                self.elided_messages += 1

    def _cut(self, entry: _Entry) -> None:
        content = str(entry.message.get("content") or "")
        data = content.encode("utf-8", "replace")
        spare = int(self.budget * SAFETY) - (self.tokens() - estimate_tokens(entry.message))
        keep = max(0, (spare - MESSAGE_OVERHEAD - 60) * BYTES_PER_TOKEN)
        if keep >= len(data):
            return
        while True:  # escapes in the request (\n, \u0001 ...) may make the first guess too long
            kept = data[:keep].decode("utf-8", "ignore")
            note = self._note("rest", entry.turn, len(content) - len(kept))
            entry.message = {**entry.message, "content": kept + "\n" + note}
            if keep == 0 or self._fits():
                break
            keep //= 2
        self.cut_outputs += 1
