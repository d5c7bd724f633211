"""OpenAI's Responses API (``client.responses.create``) for the hosted reasoning models that
``models.openai_api`` routes to it: the newest refuse function tools on Chat Completions, and
their reasoning items must come back between turns, which Chat Completions cannot carry.

Each answer's output items (reasoning with its encrypted content, message, function_call, in
order) are kept as ``vendor_turn`` and sent back as input items, verbatim but for the ids that
``store: false`` makes meaningless (``stateless``); a function_call sent
back without the reasoning item it came with is refused ("Item 'fc_...' of type
'function_call' was provided without its required 'reasoning' item"). ``store=False``: nothing
is kept on OpenAI's side between calls, so the encrypted reasoning is asked for
(``include=["reasoning.encrypted_content"]``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from agents.providers.base import (
    INVALID_ARGUMENTS_KEY,
    Completion,
    ToolCall,
    ToolSpec,
    flagged_results,
    mcp_tool_name,
    vendor_tool_name,
)


def request(provider: Any, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]):
    """The keyword arguments of ``responses.create``."""
    options = provider.options
    body: dict[str, Any] = {
        "model": options.model,
        "instructions": system,
        "input": [item for message in messages for item in _items(message)],
        "max_output_tokens": options.max_output_tokens,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    if options.effort:
        body["reasoning"] = {"effort": options.effort}
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "name": vendor_tool_name(tool.name),
                "description": tool.description,
                "parameters": tool.input_schema,
                "strict": False,
            }
            for tool in tools
        ]
    elif options.output_schema is not None and provider.structured_outputs:
        schema = {"type": "json_schema", "schema": options.output_schema, "strict": False}
        schema["name"] = provider.schema_name()
        body["text"] = {"format": schema}
    return body


def _items(message: dict[str, Any]) -> list[dict[str, Any]]:
    role = message["role"]
    if role == "user":
        return [{"role": "user", "content": message["content"]}]
    if role == "assistant" and message.get("vendor_turn") is not None:
        return [stateless(item) for item in message["vendor_turn"] if _replayable(item)]
    if role == "assistant":
        items: list[dict[str, Any]] = []
        if message.get("content"):
            items.append({"role": "assistant", "content": message["content"]})
        for call in message.get("tool_calls") or []:
            arguments = json.dumps(call.arguments)
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": vendor_tool_name(call.name),
                    "arguments": arguments,
                }
            )
        return items
    if role == "tool":
        return flagged_results(message, {"type": "function_call_output"}, "call_id", "output")
    raise ValueError(f"unknown message role {role!r}")


def _replayable(item: dict[str, Any]) -> bool:
    """A reasoning item without its encrypted content would only point at a stored item,
    which ``store: false`` never keeps; it is left out rather than answered 404."""
    return item.get("type") != "reasoning" or bool(item.get("encrypted_content"))


def stateless(item: dict[str, Any]) -> dict[str, Any]:
    """An output item sent back under ``store: false``: as it came (a reasoning item with its
    encrypted content and id; a function_call with its id, which pairs it with that reasoning
    item), except an assistant message's ``msg_*`` id, which names nothing on the server
    (langchain-ai/langchain#38372; vercel/ai#7543 for the 404 it causes)."""
    item = copy.deepcopy(item)
    if item.get("type") == "message":
        item.pop("id", None)
    return item


def completion(response: Any, tools: list[ToolSpec]) -> Completion:
    texts, refusals, calls = [], [], []
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    texts.append(part.text)
                elif part.type == "refusal":
                    refusals.append(part.refusal)
        elif item.type == "function_call":
            calls.append(ToolCall(item.call_id, mcp_tool_name(item.name, tools), _args(item)))
    usage = response.usage
    details = getattr(usage, "input_tokens_details", None) if usage else None
    return Completion(
        text="".join(texts) or "".join(refusals),
        tool_calls=calls,
        input_tokens=(usage.input_tokens or 0) if usage else 0,
        output_tokens=(usage.output_tokens or 0) if usage else 0,
        stop_reason=_stop(response, calls, refusals),
        stop_detail="".join(refusals)[:200],
        cache_read_tokens=(getattr(details, "cached_tokens", 0) or 0) if details else 0,
        vendor_turn=[item.to_dict(mode="json") for item in response.output],
    )


def _stop(response: Any, calls: list[ToolCall], refusals: list[str]) -> str:
    if response.status == "incomplete":
        reason = getattr(response.incomplete_details, "reason", None)
        return {"max_output_tokens": "max_tokens"}.get(reason or "", reason or "max_tokens")
    if refusals:
        return "refusal"
    return "tool_use" if calls else "end_turn"


def _args(item: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(item.arguments or "{}")
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {INVALID_ARGUMENTS_KEY: item.arguments}
