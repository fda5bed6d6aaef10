"""The agent's conversation, kept within the model's context window.

A 1.4k-token system prompt plus 30 turns of 10,000-character observations is about 116k tokens: far past
the 32k window of many open models. Before every call the conversation is fitted to a budget in tokens
(the model's window as litellm knows it or as configured, less the reply's own budget and the tools):

1. older tool outputs are replaced by a short note saying what was removed (the two most recent stay
   whole: the last command's output and the validator's report are what the next turn needs);
2. if that is not enough, older assistant messages lose their text (tool calls stay, with long
   arguments emptied);
3. then the most recent outputs are cut, with a marker;
4. what can never go (the instructions and the issue) failing to fit ends the exploration with the
   reason ``context_window``.

Tokens are estimated from UTF-8 bytes (:data:`BYTES_PER_TOKEN`), an overestimate for code and prose in
every tokenizer we know; when a provider still says the prompt is too long, the loop shrinks the budget
and fits again (:meth:`Conversation.shrink`).
"""

from __future__ import annotations

import json
from typing import Any

from agentic_rubrics.prompts import Prompt

BYTES_PER_TOKEN = 3
"""UTF-8 bytes per token assumed by the estimate (tokenizers give 3.5-4.5 on code and English)."""
MESSAGE_OVERHEAD = 8
"""Tokens counted per message for its role and separators."""
KEEP_RECENT = 2
"""Tool outputs (and assistant messages) of the latest turns that are never elided."""
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


class Conversation:
    """The messages of one exploration and how they are fitted to ``budget`` tokens.

    ``messages`` starts with the pinned ones (system prompt, the issue); ``fixed_tokens`` counts what
    every request adds beside them (the tool schemas).
    """

    def __init__(
        self, messages: list[dict[str, Any]], *, budget: int, prompt: Prompt, fixed_tokens: int = 0
    ) -> None:
        self.messages = list(messages)
        self.pinned = len(messages)
        self.budget = budget
        self.prompt = prompt
        self.fixed_tokens = fixed_tokens
        self._turns: dict[int, int] = {}  # message index -> turn
        self._observations: list[int] = []
        self._assistants: list[int] = []
        self._elided: set[int] = set()
        self.elided_outputs = 0
        self.elided_messages = 0
        self.cut_outputs = 0

    def add_assistant(self, message: dict[str, Any], turn: int) -> None:
        """Append the model's reply of ``turn``."""
        self._turns[len(self.messages)] = turn
        self._assistants.append(len(self.messages))
        self.messages.append(message)

    def add_observation(self, message: dict[str, Any], turn: int) -> None:
        """Append what the loop answered in ``turn`` (a tool's output, a format error, validation)."""
        self._turns[len(self.messages)] = turn
        self._observations.append(len(self.messages))
        self.messages.append(message)

    def tokens(self) -> int:
        """The estimated size of the next request's prompt."""
        return self.fixed_tokens + estimate_tokens(self.messages)

    def _limit(self) -> int:
        return int(self.budget * SAFETY)

    def shrink(self, factor: float = 0.75) -> None:
        """The provider found the prompt too long: aim lower from now on."""
        self.budget = max(1, int(min(self.budget, self.tokens()) * factor))

    def fit(self) -> bool:
        """Elide and cut until the conversation fits; ``False`` when even the pinned part does not."""
        if self.tokens() <= self._limit():
            return True
        for index in self._observations[:-KEEP_RECENT]:
            if index not in self._elided:
                self._elide_output(index)
                if self.tokens() <= self._limit():
                    return True
        for index in self._assistants[:-KEEP_RECENT]:
            if index not in self._elided:
                self._elide_message(index)
                if self.tokens() <= self._limit():
                    return True
        for index in reversed(self._observations[-KEEP_RECENT:]):
            self._cut_output(index)
            if self.tokens() <= self._limit():
                return True
        return self.tokens() <= self._limit()

    def _note(self, index: int, what: str, chars: int) -> str:
        return self.prompt.render("elided", what=what, turn=self._turns[index], chars=chars).strip()

    def _elide_output(self, index: int) -> None:
        message = self.messages[index]
        content = str(message.get("content") or "")
        note = self._note(index, "output", len(content))
        self.messages[index] = {**message, "content": note}
        self._elided.add(index)
        self.elided_outputs += 1

    def _elide_message(self, index: int) -> None:
        message = dict(self.messages[index])
        content = str(message.get("content") or "")
        message["content"] = self._note(index, "message", len(content))
        if message.get("tool_calls"):
            message["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": "{}"}}
                if len(c["function"]["arguments"]) > 200
                else c
                for c in message["tool_calls"]
            ]
        message.pop("thinking_blocks", None)  # only the last assistant message needs them
        self.messages[index] = message
        self._elided.add(index)
        self.elided_messages += 1

    def _cut_output(self, index: int) -> None:
        message = self.messages[index]
        content = str(message.get("content") or "")
        data = content.encode("utf-8", "replace")
        spare = self._limit() - (self.tokens() - estimate_tokens(message))
        keep = max(0, (spare - MESSAGE_OVERHEAD - 60) * BYTES_PER_TOKEN)
        if keep >= len(data):
            return
        while True:  # escapes in the request (\n, \u0001 ...) may make the first guess too long
            kept = data[:keep].decode("utf-8", "ignore")
            note = self._note(index, "rest", len(content) - len(kept))
            self.messages[index] = {**message, "content": kept + "\n" + note}
            if keep == 0 or self.tokens() <= self._limit():
                break
            keep //= 2
        self.cut_outputs += 1
