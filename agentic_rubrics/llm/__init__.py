"""The one door to models (door.py) and what it stands on: how one model is called (config), what
litellm knows of it (params), its replies read defensively (reply), failures classified (errors), the
response cache, the worker processes (pool) and every request recorded (spend).

The door's names are handed on lazily, so ``from agentic_rubrics.llm import LLM`` keeps working and
importing this package (or one of its modules) loads nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "LLM": "agentic_rubrics.llm.door",
    "CallFailed": "agentic_rubrics.llm.errors",
    "LLMConfig": "agentic_rubrics.llm.config",
    "Ledger": "agentic_rubrics.limits",
    "ReasoningEffort": "agentic_rubrics.llm.config",
    "ResponseCache": "agentic_rubrics.llm.cache",
    "classify": "agentic_rubrics.llm.errors",
    "import_litellm": "agentic_rubrics.llm.params",
    "llm_slot_key": "agentic_rubrics.llm.config",
}

__all__ = [
    "LLM",
    "CallFailed",
    "LLMConfig",
    "Ledger",
    "ReasoningEffort",
    "ResponseCache",
    "classify",
    "import_litellm",
    "llm_slot_key",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentic_rubrics.llm' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from agentic_rubrics.limits import Ledger
    from agentic_rubrics.llm.cache import ResponseCache
    from agentic_rubrics.llm.config import LLMConfig, ReasoningEffort, llm_slot_key
    from agentic_rubrics.llm.door import LLM
    from agentic_rubrics.llm.errors import CallFailed, classify
    from agentic_rubrics.llm.params import import_litellm
