"""The in-process fake: a litellm ``CustomLLM`` registered as the ``local`` provider.

``model="local/<name>"`` is answered by a Python script, in process, through the same door as real
models (the parameters litellm builds for it included).
"""

from __future__ import annotations

import threading
from typing import Any

from agentic_rubrics.testing.replies import Script, completion_body

_PROVIDER_LOCK = threading.Lock()
_SCRIPTS: dict[str, Script] = {}
_CALLS: dict[str, list[dict[str, Any]]] = {}


def register_script(
    model: str,
    script: Script,
    *,
    function_calling: bool = False,
    reasoning: bool = False,
    max_input_tokens: int | None = None,
) -> str:
    """Answer ``model`` (e.g. ``"local/judge-all-ones"``) with ``script``; returns the model string.

    The ``local`` provider is registered with litellm on first use, and the model is registered with
    a zero price so that cost lookup works (it is a fake: it costs nothing), and with what litellm
    should know of it: native tool calls, reasoning, its context window.
    """
    if not model.startswith("local/"):
        raise ValueError("scripted models are named local/<name>")
    with _PROVIDER_LOCK:
        _SCRIPTS[model.removeprefix("local/")] = script
        _CALLS[model.removeprefix("local/")] = []
    entry: dict[str, Any] = {
        "supports_function_calling": function_calling,
        "supports_reasoning": reasoning,
    }
    if max_input_tokens is not None:
        entry["max_input_tokens"] = max_input_tokens
    _install_provider(model, entry)
    from agentic_rubrics.llm.params import model_traits

    model_traits.cache_clear()  # what litellm knows of this name may have changed
    return model


def scripted_calls(model: str) -> list[dict[str, Any]]:
    """Request bodies the scripted ``model`` has received."""
    return _CALLS.get(model.removeprefix("local/"), [])


def _install_provider(model: str, entry: dict[str, Any]) -> None:
    from agentic_rubrics.llm.door import import_litellm

    litellm = import_litellm()
    from litellm import CustomLLM, ModelResponse

    class ScriptedProvider(CustomLLM):  # type: ignore[misc]  # litellm is untyped here
        """Routes ``local/<name>`` to the registered script."""

        def _answer(self, model: str, messages: list[Any], optional_params: dict[str, Any]) -> Any:
            name = model.removeprefix("local/")
            script = _SCRIPTS.get(name)
            if script is None:
                raise ValueError(f"no script registered for local/{name}")
            body = {"model": model, "messages": messages, **optional_params}
            with _PROVIDER_LOCK:
                number = len(_CALLS.setdefault(name, []))
                _CALLS[name].append(body)
            reply = script(body, number)
            if reply.status != 200:
                from litellm.llms.custom_llm import CustomLLMError

                raise CustomLLMError(status_code=reply.status, message=reply.error)
            return ModelResponse(**completion_body(reply, model))

        def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            return self._answer(model, messages, kwargs.get("optional_params") or {})

        async def acompletion(
            self, model: str, messages: list[Any], *args: Any, **kwargs: Any
        ) -> Any:
            return self._answer(model, messages, kwargs.get("optional_params") or {})

    with _PROVIDER_LOCK:
        if not any(p.get("provider") == "local" for p in litellm.custom_provider_map):
            litellm.custom_provider_map = [
                *litellm.custom_provider_map,
                {"provider": "local", "custom_handler": ScriptedProvider()},
            ]
            from litellm.utils import custom_llm_setup

            custom_llm_setup()
        litellm.register_model(
            {
                model: {
                    "litellm_provider": "local",
                    "mode": "chat",
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "max_tokens": 1_000_000,
                    **entry,
                }
            }
        )
