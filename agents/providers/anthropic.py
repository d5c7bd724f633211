"""Claude through the official ``anthropic`` SDK (Messages API).

Client setup and error translation are shared with the OpenAI provider (``vendor.py``).

Prompt caching: the system prompt (with the tool list before it) is the same for every call of
an agent, and the crawler re-sends its whole growing conversation each turn. Both are marked
``cache_control`` (the system block always; the newest message when the agent has tools), so
each turn reads the previous turn's prefix from the cache instead of paying for it again.
Budgets use the vendor's own count (``messages.count_tokens``, free of charge).

Assistant turns go back as they came: each answer's content blocks (thinking, redacted
thinking, text, tool_use, in order, signatures untouched) are kept as ``vendor_turn`` and sent
back verbatim. In a tool loop the API refuses a turn whose thinking blocks are dropped, edited
or reordered ("Expected `thinking` or `redacted_thinking`...", "Invalid `signature` in
`thinking` block"; the SDK's ``ThinkingBlockParam``: "passed back unmodified and in their
original order"). Thinking, effort and ``max_tokens`` come from ``claude_thinking.py``; an
answer of more than ``NONSTREAMING_MAX`` tokens is streamed, as the SDK demands of requests
that may take over 10 minutes (``_calculate_nonstreaming_timeout``).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import anthropic

from agents.errors import LlmOutputTruncated, LlmProviderError
from agents.providers import claude_thinking
from agents.providers.base import (
    Completion,
    ProviderOptions,
    ToolCall,
    ToolSpec,
    mcp_tool_name,
    vendor_tool_name,
)
from agents.providers.models import takes_temperature
from agents.providers.vendor import VendorProvider, body_text, call_timeout, check_stop

log = logging.getLogger("amtp.agents")
EPHEMERAL = {"type": "ephemeral"}  # the default 5-minute cache
COUNT_FAILED = "anthropic: token counting failed ({error}); estimating 4 characters per token"
MAX_CONTINUATIONS = 3
KEPT_PAUSING = "anthropic: the model paused its turn {n} times in a row; trying again"

# The SDK refuses a non-streaming request whose answer may take over 10 minutes, at an hour
# per 128,000 output tokens (anthropic/_base_client.py): above this, we stream.
NONSTREAMING_MAX = 128_000 * 10 // 60
THINKING_BLOCKS = ("thinking", "redacted_thinking")
STARVED = (
    "anthropic {model}: the model spent all max_tokens={sent} output tokens thinking (effort "
    "{effort}) and wrote no answer; lower {effort_setting}, set {thinking_setting}=off where "
    "the model allows it, or raise AMTP_MAX_OUTPUT_TOKENS (now {answer})"
)
CUT_AFTER_THINKING = (
    "anthropic {model}: the answer was cut off at max_tokens={sent} output tokens "
    "(AMTP_MAX_OUTPUT_TOKENS={answer} for the answer + room for thinking at effort {effort}); "
    "raise AMTP_MAX_OUTPUT_TOKENS, lower {effort_setting} or use a shallower depth level"
)

MISSING_KEY = (
    "ANTHROPIC_API_KEY is not set; set it to use AMTP_LLM_PROVIDER=anthropic, "
    "or set AMTP_LLM_PROVIDER to openai or offline"
)


class AnthropicProvider(VendorProvider):
    name = "anthropic"
    sdk = anthropic
    client_class = anthropic.Anthropic
    settings_prefix = "ANTHROPIC"
    example_base_url = "https://api.anthropic.com"
    missing_key = MISSING_KEY

    _counting = True  # off after the first failed count (e.g. a gateway without the endpoint)

    def __init__(self, options: ProviderOptions, **kwargs: Any) -> None:
        self.plan = claude_thinking.plan(options)  # a setting the model refuses fails here
        super().__init__(options, **kwargs)

    def _timeout(self, options: ProviderOptions) -> float:
        if self.plan.max_tokens > NONSTREAMING_MAX:  # streamed: the wait for each event
            return options.timeout_seconds
        return call_timeout(options, self.plan.max_tokens)

    def _send(self, request: dict[str, Any]) -> Any:
        if request["max_tokens"] > NONSTREAMING_MAX:
            with self._client.messages.stream(**request) as stream:
                return stream.get_final_message()
        return self._client.messages.create(**request)

    def complete(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> Completion:
        """One answer. A turn the API paused (stop reason ``pause_turn``, server tools only) is
        sent back unchanged as the last message, and the model carries on from it; no prefill
        is added (Anthropic's "Server tools" page: "pause_turn continuation")."""
        completion = super().complete(system=system, messages=messages, tools=tools)
        for _ in range(MAX_CONTINUATIONS):
            if completion.stop_reason != "pause_turn":
                return completion
            paused = {"role": "assistant", "content": completion.text, "tool_calls": []}
            paused["vendor_turn"] = completion.vendor_turn
            more = super().complete(system=system, messages=[*messages, paused], tools=tools)
            completion = _joined(completion, more)
        if completion.stop_reason == "pause_turn":
            message = KEPT_PAUSING.format(n=MAX_CONTINUATIONS + 1)
            raise LlmProviderError(message, vendor=self.name, model=self.options.model)
        return completion

    def _check_stop(self, completion: Completion) -> None:
        """A cut-off answer of a thinking request says how much of it went to thinking."""
        if completion.stop_reason != "max_tokens" or not self.plan.thinks:
            check_stop(completion, vendor=self.name, options=self.options)
            return
        template = CUT_AFTER_THINKING if completion.text.strip() else STARVED
        options = self.options
        message = template.format(
            model=options.model,
            sent=self.plan.max_tokens,
            answer=options.max_output_tokens,
            effort=self.plan.effort or "default",
            effort_setting=options.effort_setting,
            thinking_setting=options.thinking_setting,
        )
        raise LlmOutputTruncated(
            message, vendor=self.name, model=options.model, stop_reason="max_tokens"
        )

    def count_tokens(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> int | None:
        if not self._counting:
            return None
        request = self.build_request(system=system, messages=messages, tools=tools)
        counted = ("model", "system", "messages", "tools", "output_config", "thinking")
        try:
            answer = self._client.messages.count_tokens(
                **{key: request[key] for key in counted if key in request}
            )
        except anthropic.APIError as exc:
            self._counting = False
            log.warning(COUNT_FAILED.format(error=self._translate(exc).message))
            return None
        return answer.input_tokens

    def build_request(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> dict[str, Any]:
        """The keyword arguments for ``messages.create`` (public so tests can read them)."""
        vendor_messages = [_to_vendor(m) for m in messages]
        if tools:  # a growing conversation: cache it up to the newest message
            _mark_for_cache(vendor_messages[-1])
        request: dict[str, Any] = {
            "model": self.options.model,
            "max_tokens": self.plan.max_tokens,
            "system": [{"type": "text", "text": system, "cache_control": EPHEMERAL}],
            "messages": vendor_messages,
            **copy.deepcopy(self.plan.params),
        }
        if takes_temperature(self.name, self.options.model) and not self.plan.thinks:
            # The SDK has no typed `temperature`; models that still take it read it from the
            # body (not with thinking, which refuses it). top_p is left out: its default is 1
            # (the value agents use), and these models refuse a request that sets both.
            request["extra_body"] = {"temperature": self.options.temperature}
        if tools:
            request["tools"] = [
                {
                    "name": vendor_tool_name(tool.name),
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                }
                for tool in tools
            ]
        elif self.options.output_schema is not None:
            output_format = _output_format(self.options.output_schema)
            if output_format is not None:
                request["output_config"] = {**request.get("output_config", {})}
                request["output_config"]["format"] = output_format
        return request

    def _status_error(self, exc: anthropic.APIStatusError) -> tuple[str, str, dict[str, Any]]:
        extra = {"error_code": exc.error_code} if exc.error_code else {}
        return exc.type or "error", exc.api_message or body_text(exc.body), extra

    def _completion(self, message: Any, tools: list[ToolSpec]) -> Completion:
        texts, calls = [], []
        # exclude_unset: the fields the API sent, as it sent them (nothing the SDK defaults).
        vendor_turn = [block.to_dict(mode="json") for block in message.content]
        for block in message.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                arguments = block.input if isinstance(block.input, dict) else {}
                calls.append(ToolCall(block.id, mcp_tool_name(block.name, tools), arguments))
        usage = message.usage
        # Budgets count every prompt token, cached or not.
        input_tokens = (
            (usage.input_tokens or 0)
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        details = message.stop_details  # a refusal's policy category, when there is one
        return Completion(
            text="".join(texts),
            tool_calls=calls,
            input_tokens=input_tokens,
            output_tokens=usage.output_tokens or 0,
            stop_reason=message.stop_reason or "",
            stop_detail=(details.category or details.explanation or "") if details else "",
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
            vendor_turn=vendor_turn,
        )


def _to_vendor(message: dict[str, Any]) -> dict[str, Any]:
    """One neutral message (see base.py) as a Messages API message."""
    role = message["role"]
    if role == "user":
        return {"role": "user", "content": message["content"]}
    if role == "assistant" and message.get("vendor_turn") is not None:
        # Verbatim; a copy, since the cache breakpoint is set on the request's blocks.
        return {"role": "assistant", "content": copy.deepcopy(message["vendor_turn"])}
    if role == "assistant":
        calls: list[ToolCall] = message.get("tool_calls") or []
        if not calls:
            return {"role": "assistant", "content": message.get("content") or ""}
        # The API refuses empty text blocks, so a tool-only turn has tool_use blocks alone.
        blocks: list[dict[str, Any]] = []
        if message.get("content"):
            blocks.append({"type": "text", "text": message["content"]})
        blocks += [
            {
                "type": "tool_use",
                "id": call.id,
                "name": vendor_tool_name(call.name),
                "input": call.arguments,
            }
            for call in calls
        ]
        return {"role": "assistant", "content": blocks}
    if role == "tool":
        # Tool results go back as one user turn of tool_result blocks, linked by id.
        return {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": result.call_id,
                    "content": result.content,
                    "is_error": result.is_error,
                }
                for result in message["results"]
            ],
        }
    raise ValueError(f"unknown message role {role!r}")


def _joined(paused: Completion, more: Completion) -> Completion:
    """A paused turn and its continuation: one assistant turn, blocks in the order given."""
    more.text = paused.text + more.text
    more.tool_calls = [*paused.tool_calls, *more.tool_calls]
    more.vendor_turn = [*(paused.vendor_turn or []), *(more.vendor_turn or [])]
    more.input_tokens += paused.input_tokens
    more.output_tokens += paused.output_tokens
    more.cache_read_tokens += paused.cache_read_tokens
    return more


def _mark_for_cache(message: dict[str, Any]) -> None:
    """Put a cache breakpoint on the message's last block (a string becomes one text block)."""
    content = message["content"]
    if isinstance(content, str):
        if content:  # the API refuses empty text blocks
            message["content"] = [{"type": "text", "text": content, "cache_control": EPHEMERAL}]
    elif content and content[-1].get("type") not in THINKING_BLOCKS:  # refused on those
        content[-1] = {**content[-1], "cache_control": EPHEMERAL}


def _output_format(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Structured outputs accept a subset of JSON Schema; the SDK's own transform moves what
    the API does not support (patterns, lengths, ...) into descriptions. jsonschema stays the
    judge of the answer, so a schema the transform cannot handle just goes unconstrained."""
    try:
        return {"type": "json_schema", "schema": anthropic.transform_schema(schema)}
    except (ValueError, TypeError):
        return None
