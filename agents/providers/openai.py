"""OpenAI and OpenAI-compatible servers through the official ``openai`` SDK.

``base_url`` points it at hosted OpenAI (None) or at a local server speaking the same API
(Ollama ``http://localhost:11434/v1``, vLLM, LM Studio). Chat Completions for those servers and
OpenAI's non-reasoning models; the Responses API (``openai_responses.py``) for OpenAI's own
reasoning models, as ``models.openai_api`` decides. Client setup and error translation are
shared with the Anthropic provider (``vendor.py``).

Malformed tool-call arguments: models (local ones especially) sometimes emit arguments that
are not a JSON object. That is the model's mistake, not the vendor's, so it is not an
``LlmProviderError``: the call comes back with ``{INVALID_ARGUMENTS_KEY: raw}`` as its
arguments, which no tool's input schema accepts, so the tool refuses the call and the model
sees the error and can try again. The raw text is echoed back verbatim on the next request.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

import openai

from agents.errors import LlmProviderError
from agents.providers import openai_responses
from agents.providers.base import (
    INVALID_ARGUMENTS_KEY,
    SEED,
    TOP_P,
    Completion,
    ProviderOptions,
    ToolCall,
    ToolSpec,
    flagged_results,
    mcp_tool_name,
    vendor_tool_name,
)
from agents.providers.models import is_openai_reasoning, openai_api, takes_temperature
from agents.providers.vendor import VendorProvider, body_text
from amtp_site.errors import ConfigurationError

__all__ = ["INVALID_ARGUMENTS_KEY", "OpenAIProvider"]
# reasoning.effort on the Responses API: the values of openai/types/shared/reasoning_effort.py
# ("Not all reasoning models support every value"). `minimal` was gpt-5's alone: from gpt-5.1
# on it is a 400 "Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model.
# Supported values are: 'none', 'low', 'medium', and 'high'." (anomalyco/opencode#4451,
# nextai-translator#1841; the reasoning guide's "latest model" notes).
OPENAI_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
NO_MINIMAL = re.compile(r"gpt-5\.\d")
NO_MINIMAL_EFFORT = (
    "{setting}='minimal': {model} does not take effort minimal (gpt-5.1 and later refuse it); "
    "set {setting} to none or low"
)
BAD_EFFORT = (
    "{setting}={value!r}: OpenAI's reasoning models take effort {levels}; set {setting} to one "
    "of them, or leave it empty for the model's default"
)
# Local servers ignore the key, but the SDK refuses to start without one (and would otherwise
# fall back to OPENAI_API_KEY from the environment).
LOCAL_PLACEHOLDER_KEY = "not-needed"
MISSING_KEY = (
    "OPENAI_API_KEY is not set; set it to use hosted OpenAI, or set OPENAI_BASE_URL to an "
    "OpenAI-compatible server (e.g. http://localhost:11434/v1 for Ollama), "
    "or set AMTP_LLM_PROVIDER to anthropic or offline"
)
# The neutral stop reasons are Anthropic's words; the runner reads one vocabulary.
# content_filter keeps its name (openai/types/chat/chat_completion.py lists the values).
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


class OpenAIProvider(VendorProvider):
    name = "openai"
    sdk = openai
    client_class = openai.OpenAI
    settings_prefix = "OPENAI"
    example_base_url = "http://localhost:11434/v1"
    missing_key = MISSING_KEY

    def __init__(
        self,
        options: ProviderOptions,
        *,
        structured_outputs: bool = True,
        api: str | None = None,
        **vendor: Any,
    ) -> None:
        """``vendor``: VendorProvider's keywords (agent, api_key, base_url, http_client)."""
        super().__init__(options, **vendor)
        self._hosted = self.base_url is None or urlsplit(self.base_url).hostname == "api.openai.com"
        self.structured_outputs = structured_outputs
        # "chat" (Chat Completions) or "responses", from the model table unless given.
        self.api = api or openai_api(options.model, self._hosted)
        if self.api == "responses":
            _check_effort(options)

    def _client_key(self, api_key: str, base_url: str | None) -> str:
        if not api_key and base_url is not None:
            return LOCAL_PLACEHOLDER_KEY
        return super()._client_key(api_key, base_url)

    def _send(self, request: dict[str, Any]) -> Any:
        if self.api == "responses":
            return self._client.responses.create(**request)
        return self._client.chat.completions.create(**request)

    def schema_name(self) -> str:
        return _schema_name(self.options.output_schema or {}, self.agent)

    def build_request(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> dict[str, Any]:
        """The keyword arguments for ``chat.completions.create`` or ``responses.create``
        (public so tests can read them)."""
        if self.api == "responses":
            return openai_responses.request(self, system, messages, tools)
        vendor_messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for message in messages:
            vendor_messages += _to_vendor(message)
        model = self.options.model
        request: dict[str, Any] = {"model": model, "messages": vendor_messages, "seed": SEED}
        if takes_temperature(self.name, model):  # reasoning models refuse both (models.py)
            request |= {"temperature": self.options.temperature, "top_p": TOP_P}
        # Hosted OpenAI deprecated max_tokens (reasoning models refuse it); compatible local
        # servers do not all know its successor, and every one of them takes max_tokens.
        hosted = self._hosted or is_openai_reasoning(model)
        limit_key = "max_completion_tokens" if hosted else "max_tokens"
        request[limit_key] = self.options.max_output_tokens
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": vendor_tool_name(tool.name),
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    },
                }
                for tool in tools
            ]
            # OpenAI's default with tools, said out loud: llama-cpp-python's server takes an
            # absent tool_choice as "none" and answers text (llama_chat_format.py,
            # chatml_function_calling, "Case 1: No tool choice by user").
            request["tool_choice"] = "auto"
        elif self.options.output_schema is not None and self.structured_outputs:
            # strict=False: strict mode demands every property be required and forbids
            # keywords our contracts use; jsonschema remains the judge of the answer anyway.
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": self.schema_name(),
                    "schema": self.options.output_schema,
                    "strict": False,
                },
            }
        return request

    def _completion(self, response: Any, tools: list[ToolSpec]) -> Completion:
        if self.api == "responses":
            return openai_responses.completion(response, tools)
        if not response.choices:
            raise LlmProviderError(
                "openai: the response has no choices", vendor=self.name, model=self.options.model
            )
        choice = response.choices[0]
        message = choice.message
        calls = [
            ToolCall(call.id, mcp_tool_name(call.function.name, tools), _arguments(call))
            for call in message.tool_calls or []
            if call.type == "function"
        ]
        usage = response.usage  # some compatible servers leave it out
        finish = choice.finish_reason or ""
        # A refusal (structured outputs) comes as `message.refusal` with no content.
        refused = getattr(message, "refusal", None)
        return Completion(
            text=message.content or refused or "",
            tool_calls=calls,
            input_tokens=(usage.prompt_tokens or 0) if usage else 0,
            output_tokens=(usage.completion_tokens or 0) if usage else 0,
            stop_reason="refusal" if refused else _STOP_REASONS.get(finish, finish),
            stop_detail=(refused or "")[:200],
            cache_read_tokens=_cached(usage),
        )

    def _status_error(self, exc: openai.APIStatusError) -> tuple[str, str, dict[str, Any]]:
        extra = {"error_code": exc.code} if exc.code else {}
        return exc.type or exc.code or "error", _vendor_message(exc.body), extra


def _cached(usage: Any) -> int:
    """Of ``prompt_tokens``, those served from OpenAI's automatic prompt cache
    (``prompt_tokens_details.cached_tokens``; servers of one's own often leave it out)."""
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return (getattr(details, "cached_tokens", 0) or 0) if details else 0


def _to_vendor(message: dict[str, Any]) -> list[dict[str, Any]]:
    """One neutral message (see base.py) as chat messages: tool results become one
    ``role: tool`` message per result."""
    role = message["role"]
    if role == "user":
        return [{"role": "user", "content": message["content"]}]
    if role == "assistant":
        calls: list[ToolCall] = message.get("tool_calls") or []
        if not calls:
            return [{"role": "assistant", "content": message.get("content") or ""}]
        # "" when the turn only called tools, not null: OpenAI takes either, but
        # llama-cpp-python's server types content as a string (llama_cpp/llama_types.py,
        # ChatCompletionRequestAssistantMessage) and answers null with a 500; its ChatML
        # template reads message.content, so a turn without the key is a 500 too.
        return [
            {
                "role": "assistant",
                "content": message.get("content") or "",
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": vendor_tool_name(call.name),
                            "arguments": _raw_arguments(call.arguments),
                        },
                    }
                    for call in calls
                ],
            }
        ]
    if role == "tool":
        return flagged_results(message, {"role": "tool"}, "tool_call_id", "content")
    raise ValueError(f"unknown message role {role!r}")


def _arguments(call: Any) -> dict[str, Any]:
    raw = call.function.arguments or "{}"  # some servers send "" for a call without arguments
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {INVALID_ARGUMENTS_KEY: raw}


def _raw_arguments(arguments: dict[str, Any]) -> str:
    # Echo malformed arguments as the model wrote them, so the history stays truthful.
    raw = arguments.get(INVALID_ARGUMENTS_KEY)
    if len(arguments) == 1 and isinstance(raw, str):
        return raw
    return json.dumps(arguments)


def _schema_name(schema: dict[str, Any], agent: str) -> str:
    # The API wants ^[a-zA-Z0-9_-]{1,64}$.
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(schema.get("title") or f"{agent}_output"))
    return name[:64] or "output"


def _vendor_message(body: object) -> str:
    # The SDK hands over the `error` object of the body; a non-JSON body is kept short.
    if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"]:
        return body["message"]
    return body_text(body)


def _check_effort(options: ProviderOptions) -> None:
    """An effort OpenAI's reasoning models would refuse, as a setting to fix."""
    setting, effort = options.effort_setting, options.effort
    if effort not in (None, *OPENAI_EFFORTS):
        levels = ", ".join(OPENAI_EFFORTS)
        raise ConfigurationError(BAD_EFFORT.format(setting=setting, value=effort, levels=levels))
    if effort == "minimal" and NO_MINIMAL.match(options.model):
        raise ConfigurationError(NO_MINIMAL_EFFORT.format(setting=setting, model=options.model))
