"""The fake's ``POST /v1/responses`` (OpenAI's Responses API): what it refuses and how it
answers. Reasoning models answer with a reasoning item (encrypted content) before their
message or function calls; a function_call sent back without the reasoning item it came with,
or with that item altered, is refused as OpenAI refuses it. Problems are (message, param).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

REASONING = re.compile(r"o\d|gpt-[5-9]")  # OpenAI's reasoning models (as llm_api.py)
# The SDK's typed parameters of responses.create.
KNOWN_PARAMS = frozenset(
    "access_programs background context_management conversation image include input"
    " instructions max_output_tokens max_tool_calls metadata model moderation"
    " parallel_tool_calls previous_response_id prompt prompt_cache_key prompt_cache_options"
    " prompt_cache_retention reasoning safety_identifier service_tier store stream"
    " stream_options temperature text tool_choice tools top_logprobs top_p truncation"
    " user".split()
)
# cline/cline#12242 (gpt-5.5), 0xPlaygrounds/rig#751.
NO_REASONING_ITEM = "Item '{fc}' of type 'function_call' was provided without its required 'reasoning' item: '{rs}'."
# continuedev/continue#8933, vercel/ai#7099.
# With store: false the server keeps no item, so an input item that only points at one by id
# is a 404 (vercel/ai#7543, can1357/oh-my-pi#41: "Error: 404 Item with id 'rs_...' not found";
# langchain-ai/langchain#38372: the same for prior `msg_*` ids). A reasoning item carrying its
# encrypted_content is the documented stateless way and is read from the item itself.
NOT_PERSISTED = "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
LONE_REASONING = "Item '{rs}' of type 'reasoning' was provided without its required following item."
ALTERED = "The encrypted content for item {rs} could not be verified."
NO_CALL = "No tool call found for function call output with call_id {call_id}."


@dataclass
class Ledger:
    """Reasoning items handed out, and which reasoning item each function call came with."""

    reasoning: dict[str, dict[str, Any]] = field(default_factory=dict)
    call_reasoning: dict[str, str] = field(default_factory=dict)  # fc id → rs id

    def problem(self, body: dict[str, Any]) -> tuple[str, str] | None:
        for key in ("model", "input"):
            if key not in body:
                return f"Missing required parameter: '{key}'.", key
        unknown = next((key for key in body if key not in KNOWN_PARAMS), None)
        if unknown:
            return f"Unknown parameter: '{unknown}'.", unknown
        limit = body.get("max_output_tokens")
        if limit is not None and (not isinstance(limit, int) or limit < 16):
            message = f"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got {limit} instead."
            return message, "max_output_tokens"
        if REASONING.match(str(body["model"])) and "temperature" in body:
            return (
                "Unsupported parameter: 'temperature' is not supported with this model.",
                "temperature",
            )
        effort = (body.get("reasoning") or {}).get("effort")
        model = str(body["model"])
        if effort == "minimal" and re.match(r"gpt-5\.\d", model):  # anomalyco/opencode#4451
            return (
                f"Unsupported value: 'minimal' is not supported with the '{model}' model. "
                "Supported values are: 'none', 'low', 'medium', and 'high'.",
                "reasoning.effort",
            )
        for j, tool in enumerate(body.get("tools") or []):
            if tool.get("type") == "function" and not isinstance(tool.get("parameters"), dict):
                return (
                    f"Missing required parameter: 'tools[{j}].parameters'.",
                    f"tools[{j}].parameters",
                )
        return self._items_problem(body["input"])

    def unstored_reference(self, body: dict[str, Any]) -> str | None:
        """The first input item that only refers to a stored item, under ``store: false``."""
        if body.get("store") is not False or not isinstance(body.get("input"), list):
            return None
        for item in body["input"]:
            kind, item_id = item.get("type"), item.get("id")
            stateless = kind == "reasoning" and item.get("encrypted_content")
            if item_id and kind in ("reasoning", "message") and not stateless:
                return NOT_PERSISTED.format(id=item_id)
        return None

    def _items_problem(self, items: Any) -> tuple[str, str] | None:
        if isinstance(items, str):
            return None
        calls: set[str] = set()
        for n, item in enumerate(items):
            kind = item.get("type")
            if kind == "reasoning":
                issued = self.reasoning.get(str(item.get("id")))
                if issued is not None and issued != item:
                    return ALTERED.format(rs=item.get("id")), "input"
                following = items[n + 1] if n + 1 < len(items) else {}
                if following.get("type") not in ("message", "function_call"):
                    return LONE_REASONING.format(rs=item.get("id")), "input"
            elif kind == "function_call":
                calls.add(item.get("call_id"))
                wanted = self.call_reasoning.get(str(item.get("id")))
                before = [i.get("id") for i in items[:n] if i.get("type") == "reasoning"]
                if wanted and wanted not in before:
                    return NO_REASONING_ITEM.format(fc=item.get("id"), rs=wanted), "input"
            elif kind == "function_call_output" and item.get("call_id") not in calls:
                return NO_CALL.format(call_id=item.get("call_id")), "input"
        return None

    def render(self, reply: Any, body: dict[str, Any], tokens: Any, cached: int = 0) -> dict:
        """``reply`` is llm_api's Text or ToolUse; ``tokens`` its token estimate function;
        ``cached`` the prompt tokens read from the prompt cache."""
        output: list[dict[str, Any]] = []
        reasoning_id = None
        if REASONING.match(str(body.get("model"))):
            reasoning_id = "rs_" + uuid.uuid4().hex
            item = {"id": reasoning_id, "type": "reasoning", "summary": []}
            if "reasoning.encrypted_content" in (body.get("include") or []):
                item["encrypted_content"] = "gAAAA" + uuid.uuid4().hex * 4
            self.reasoning[reasoning_id] = item
            output.append(item)
        status, incomplete = "completed", None
        if hasattr(reply, "calls"):
            if reply.text:
                output.append(_message(reply.text))
            for call in reply.calls:
                fc = {
                    "id": "fc_" + uuid.uuid4().hex,
                    "type": "function_call",
                    "call_id": call.id or "call_" + uuid.uuid4().hex[:24],
                    "name": call.name,
                    "arguments": json.dumps(call.input),
                    "status": "completed",
                }
                if reasoning_id:
                    self.call_reasoning[fc["id"]] = reasoning_id
                output.append(fc)
        else:
            output.append(_message(reply.text, refusal=reply.stop == "refusal"))
            if reply.truncated or reply.stop in ("max_tokens", "length"):
                status, incomplete = "incomplete", {"reason": "max_output_tokens"}
            elif reply.stop == "content_filter":
                status, incomplete = "incomplete", {"reason": "content_filter"}
        prompt = tokens([body.get("instructions"), body.get("input"), body.get("tools")])
        out = tokens(output)
        return {
            "id": "resp_" + uuid.uuid4().hex,
            "object": "response",
            "created_at": time.time(),
            "model": body.get("model"),
            "status": status,
            "incomplete_details": incomplete,
            "error": None,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": body.get("tools") or [],
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": min(cached, prompt)},
                "output_tokens": out,
                "output_tokens_details": {"reasoning_tokens": 8 if reasoning_id else 0},
                "total_tokens": prompt + out,
            },
        }


def _message(text: str, refusal: bool = False) -> dict[str, Any]:
    part = (
        {"type": "refusal", "refusal": text}
        if refusal
        else {"type": "output_text", "text": text, "annotations": []}
    )
    return {
        "id": "msg_" + uuid.uuid4().hex,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }
