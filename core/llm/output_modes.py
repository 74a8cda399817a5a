"""How a model is asked for actions: native tools, a structured ``response_format``, or the schema
in the prompt only; split from ``rsigym.llm`` (the client), which re-exports these names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["structured_output_supported", "planned_tool_mode"]

# (model, api_base) -> whether to send a structured response_format; False once a server refused
# one. Cached: LiteLLM's answer costs milliseconds and does not change within a process.
_STRUCTURED: dict[tuple[str, str | None], bool] = {}


def structured_output_supported(model: str, api_base: str | None = None) -> bool:
    """Whether LiteLLM says ``model`` takes a JSON-schema ``response_format``.

    A model in LiteLLM's map answers for itself. A model it does not know, served at an
    ``api_base`` (vLLM, llama.cpp, Ollama, LM Studio), counts as supporting it when its provider
    takes ``response_format``: such servers decode against the schema. A server that refuses it
    is remembered and asked prompt-only from then on (see ``complete``).
    """
    key = (model, api_base)
    if key not in _STRUCTURED:
        _STRUCTURED[key] = _litellm_says_structured(_load_litellm(), model, api_base)
    return _STRUCTURED[key]


def planned_tool_mode(model: str, tool_mode: str = "auto", api_base: str | None = None) -> str:
    """How an agent will ask ``model`` for actions: ``tools`` (native function calling),
    ``json_schema`` (a structured ``response_format``) or ``json_text`` (the schema in the prompt).

    ``auto`` takes tools where LiteLLM's map says the model calls functions. A server that refuses
    the schema at run time is asked prompt-only from then on, which each record then says.
    """
    if tool_mode == "auto":
        try:
            tool_mode = "tools" if _load_litellm().supports_function_calling(model=model) else "json"
        except Exception:  # unknown to LiteLLM's model map: a plain chat model
            tool_mode = "json"
    if tool_mode == "tools":
        return "tools"
    return "json_schema" if structured_output_supported(model, api_base) else "json_text"


def _litellm_says_structured(litellm: Any, model: str, api_base: str | None) -> bool:
    try:
        if litellm.supports_response_schema(model=model):
            return True
    except Exception:  # a provider LiteLLM does not know: prompt-only
        return False
    if not api_base:
        return False
    try:
        litellm.get_model_info(model=model)
        return False  # LiteLLM knows this model, and says no
    except Exception:  # not in the map: a model of the server's own
        pass
    try:
        return "response_format" in (litellm.get_supported_openai_params(model=model) or [])
    except Exception:
        return False


def _load_litellm() -> Any:
    from .litellm_setup import load_litellm  # configured once (local price map, hooks)

    return load_litellm()
