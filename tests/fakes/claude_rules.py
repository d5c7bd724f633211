"""What the Anthropic fake refuses and how it thinks: thinking configuration, thinking blocks
and their signatures, prefill, ``max_tokens``, tool schemas, empty content; and the SSE stream
of a reply. Each rule names its public source; the wording is the API's where it was quoted.

Kept apart from ``llm_api.py`` so the fake's per-model knowledge reads in one place, and kept
independent of ``agents/providers/models.py``: the fake must not agree with our code by
construction.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

# Models that think when a request has no `thinking` field: Sonnet 5, Opus 5, Haiku 5.5,
# Sonnet 5.5 (their migration guides: "adaptive thinking is on by default"), Mythos Preview,
# and the always-on ones below. Not Opus 4.7/4.8: "On Claude Opus 4.8, requests without a
# thinking field run without thinking" (the Opus 5 migration guide, "Breaking changes").
THINKS_BY_DEFAULT = re.compile(r"claude-((opus|sonnet|haiku)-5|fable|mythos)")
# "Adaptive (always on)": Fable 5.x, Opus 5.5 (the models overview); Mythos 5 with Fable 5.
ALWAYS_ON = re.compile(r"claude-(opus-5-5|fable|mythos-5)")
# Sonnet 5.5 takes "between_tools" instead of "disabled" (What's new in Claude Sonnet 5.5).
BETWEEN_TOOLS_MODEL = re.compile(r"claude-sonnet-5-5")
# Extended thinking (`enabled` + budget_tokens) is refused from Opus 4.7 on (Troubleshooting
# thinking); adaptive is refused on 4.5 and earlier ("extended thinking is the only mode").
NO_EXTENDED = re.compile(r"claude-(opus-4-[78]|(opus|sonnet|haiku)-5|fable|mythos-5)")
EXTENDED_ONLY = re.compile(
    r"claude-(3|opus-4-[015]|opus-4-2025|sonnet-4-[05]|sonnet-4-2025|haiku)-?"
)
# Thinking text is "omitted" (a signature, empty text) by default from Opus 4.7 on and on 5.x
# (qwen-code#8039 quoting the display docs; Sonnet 5.5's migration table: default "omitted").
OMITTED_BY_DEFAULT = re.compile(r"claude-(opus-4-[78]|(opus|sonnet|haiku)-5|fable|mythos)")
# Prefill (a final assistant message) is refused from the Claude 4.6 models on ("Prefill
# removal", What's new in Claude 4.6; the Sonnet 5.5 migration guide lists it among its 400s).
NO_PREFILL = re.compile(r"claude-(opus-4-[6-9]|sonnet-4-6|(opus|sonnet|haiku)-5|fable|mythos)")
# Effort: none on Sonnet/Haiku 4.5 and earlier; xhigh only from the 4.7 generation on.
# Sonnet 4.6 takes effort (whats-new-claude-4-6: "effort ... on Opus 4.6 and Sonnet 4.6").
NO_EFFORT = re.compile(r"claude-(3|opus-4-[01]|opus-4-2025|sonnet-4-[05]|sonnet-4-2025|haiku-4)")
# `disabled` with effort xhigh or max is a 400 on Opus 5 (its migration guide, "Breaking
# changes") and on Haiku 5.5 ("disabled only at high effort or below": whats-new-haiku-5-5).
DISABLED_UP_TO_HIGH = re.compile(r"claude-(opus-5(?!-5)|haiku-5-5)")
NO_XHIGH = re.compile(r"claude-(opus-4-[56]|sonnet-4-6)")
# `max` came with the 4.6 models; Opus 4.5, the first with effort, takes low, medium and high
# (build-with-claude/effort: "max ... Opus 4.6 and later").
NO_MAX = re.compile(r"claude-opus-4-5")

THINKING_TYPES = ("thinking", "redacted_thinking")
SERVER_TOOL = re.compile(r"(web_search|web_fetch|code_execution)_\d+")
EXPECTED_THINKING = (
    "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`{found}`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
    "recommend you include thinking blocks from previous turns. To avoid this requirement, "
    "disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)  # anthropics/claude-code#20705, deepset-ai/haystack-core-integrations#2146
INVALID_SIGNATURE = "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
PREFILL = (
    "This model does not support assistant message prefill. The conversation must end with a "
    "user message."
)  # smallmain/vscode-unify-chat-provider#249
TRAILING_SPACE = "messages: final assistant content cannot end with trailing whitespace"
EMPTY_CONTENT = (
    "messages.{i}: all messages must have non-empty content except for the optional final "
    "assistant message"
)
EMPTY_TEXT = "messages: text content blocks must be non-empty"  # tghamm/Anthropic.SDK#137
ADAPTIVE_HINT = (
    'Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'
)


def output_limit(model: str) -> int:
    """The model's max output tokens (each model page; "max_tokens: 128001 > 64000, which is
    the maximum allowed number of output tokens for claude-opus-4-5-20251101":
    anthropics/claude-code#24451)."""
    if re.match(r"claude-3", model):
        return 8192
    if re.match(r"claude-opus-4-([01]|2025)", model):
        return 32_000
    if re.match(r"claude-((sonnet|haiku|opus)-4-5|sonnet-4-(0|2025))", model):
        return 64_000
    return 128_000


def thinks(body: dict[str, Any]) -> bool:
    model, kind = str(body.get("model")), (body.get("thinking") or {}).get("type")
    if ALWAYS_ON.match(model) or kind in ("adaptive", "enabled"):
        return True
    return kind is None and THINKS_BY_DEFAULT.match(model) is not None


def request_problem(body: dict[str, Any]) -> str | None:
    """The first of these rules the request breaks, in the API's words."""
    return (
        _max_tokens_problem(body)
        or _thinking_problem(body)
        or _tools_problem(body)
        or _content_problem(body)
        or _prefill_problem(body)
    )


def _max_tokens_problem(body: dict[str, Any]) -> str | None:
    value, model = body.get("max_tokens"), str(body.get("model"))
    if not isinstance(value, int) or value < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    limit = output_limit(model)
    if value > limit:
        return f"max_tokens: {value} > {limit}, which is the maximum allowed number of output tokens for {model}"
    return None


def _thinking_problem(body: dict[str, Any]) -> str | None:
    model, config = str(body.get("model")), body.get("thinking") or {}
    kind, effort = config.get("type"), (body.get("output_config") or {}).get("effort")
    if effort is not None and (
        NO_EFFORT.match(model)
        or (effort == "xhigh" and NO_XHIGH.match(model))
        or (effort in ("xhigh", "max") and NO_MAX.match(model))
    ):
        return f'output_config.effort: "{effort}" is not supported for this model.'
    if kind == "enabled" and NO_EXTENDED.match(model):
        return f'"thinking.type.enabled" is not supported for this model. {ADAPTIVE_HINT}'
    if kind == "enabled" and not 1024 <= config.get("budget_tokens", 0) < body["max_tokens"]:
        return "thinking.enabled.budget_tokens: must be at least 1024 and less than max_tokens"
    if kind == "adaptive" and EXTENDED_ONLY.match(model):
        return '"thinking.type.adaptive" is not supported for this model.'
    if kind == "disabled" and BETWEEN_TOOLS_MODEL.match(model):
        return '"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" to turn off up-front thinking.'
    if kind == "disabled" and ALWAYS_ON.match(model):  # dev.to "5 settings that return 400"
        return f'"thinking.type.disabled" is not supported for this model. {ADAPTIVE_HINT}'
    if kind == "disabled" and effort in ("xhigh", "max") and DISABLED_UP_TO_HIGH.match(model):
        return f'"thinking.type.disabled" is not supported with effort "{effort}". Use "thinking.type.adaptive" to run at xhigh or max effort.'
    if kind == "between_tools" and not BETWEEN_TOOLS_MODEL.match(model):
        return '"thinking.type.between_tools" is not supported for this model.'
    if kind == "between_tools" and effort in ("xhigh", "max"):
        return f'"thinking.type.between_tools" is not supported with effort "{effort}". Use "thinking.type.adaptive" to run at xhigh or max effort.'
    if thinks(body) and ("temperature" in body or "top_k" in body):  # extended-thinking docs
        return "`temperature` may only be set to 1 when thinking is enabled."
    return None


def _tools_problem(body: dict[str, Any]) -> str | None:
    # A custom tool's input_schema is a JSON Schema object: `type` must be "object" (the
    # SDK's ToolParam.InputSchema: `type: Required[Literal["object"]]`).
    for j, tool in enumerate(body.get("tools") or []):
        schema = tool.get("input_schema")
        if tool.get("type") in (None, "custom") and isinstance(schema, dict):
            if schema.get("type") != "object":
                return f"tools.{j}.custom.input_schema.type: Input should be 'object'"
    return None


def _content_problem(body: dict[str, Any]) -> str | None:
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        content = message.get("content")
        final_assistant = i == len(messages) - 1 and message.get("role") == "assistant"
        if content in ("", []) and not final_assistant:
            return EMPTY_CONTENT.format(i=i)
        if isinstance(content, list) and any(
            b.get("type") == "text" and b.get("text") == "" for b in content if isinstance(b, dict)
        ):
            return EMPTY_TEXT
    return None


def _prefill_problem(body: dict[str, Any]) -> str | None:
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") != "assistant":
        return None
    content = last.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    tail = blocks[-1] if blocks else {}
    if tail.get("type") == "text" and tail.get("text", "") != tail.get("text", "").rstrip():
        return TRAILING_SPACE  # every model (tailcallhq/forgecode#1872, anomalyco/opencode#1295)
    return None


def has_server_tools(body: dict[str, Any]) -> bool:
    return any(SERVER_TOOL.fullmatch(str(t.get("type"))) for t in body.get("tools") or [])


@dataclass
class Ledger:
    """Every thinking block the fake handed out, and every reply: a signature is valid only
    for the exact block, model and turn it came with ("signatures don't expire; the check fails
    when a block ... differs in any way from what was originally returned (edited or
    re-serialized, reordered or merged, or generated by a different model)":
    anthropics/anthropic-sdk-python#1598)."""

    secret: bytes = field(default_factory=lambda: uuid.uuid4().bytes)
    blocks: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    turns: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # tool_use id → turn
    paused: list[list[dict[str, Any]]] = field(default_factory=list)

    def thinking_blocks(
        self, body: dict[str, Any], texts: tuple[str, ...], redacted: bool
    ) -> list[dict[str, Any]]:
        model = str(body.get("model"))
        display = (body.get("thinking") or {}).get("display")
        omitted = display == "omitted" or (display is None and OMITTED_BY_DEFAULT.match(model))
        found: list[dict[str, Any]] = []
        for text in texts:
            shown = "" if omitted else text
            mac = hmac.new(
                self.secret, f"{model}\0{uuid.uuid4()}\0{shown}".encode(), hashlib.sha256
            )
            block = {"type": "thinking", "thinking": shown, "signature": _b64(mac.digest() * 4)}
            found.append(block)
        if redacted:
            found.append({"type": "redacted_thinking", "data": _b64(uuid.uuid4().bytes * 8)})
        return found

    def record(self, body: dict[str, Any], content: list[dict[str, Any]], stop: str) -> None:
        model = str(body.get("model"))
        for block in content:
            key = _key(block)
            if key:
                self.blocks[key] = (model, json.loads(json.dumps(block)))
            if block.get("type") == "tool_use":
                self.turns[block["id"]] = json.loads(json.dumps(content))
        if stop == "pause_turn":
            self.paused.append(json.loads(json.dumps(content)))

    def is_continuation(self, body: dict[str, Any]) -> bool:
        """A final assistant message that is a paused turn sent back as it came."""
        last = (body.get("messages") or [{}])[-1]
        blocks = _plain(last.get("content"))
        return any(blocks[-len(p) :] == p for p in self.paused if p and len(blocks) >= len(p))

    def problem(self, body: dict[str, Any]) -> str | None:
        model, messages = str(body.get("model")), body.get("messages") or []
        current = _current_turn_start(messages)
        for i, message in enumerate(messages):
            if message.get("role") != "assistant":
                continue
            blocks = _plain(message.get("content"))
            for j, block in enumerate(blocks):
                key = _key(block)
                if key and self.blocks.get(key) != (model, block):
                    return INVALID_SIGNATURE.format(i=i, j=j)
            if i >= current and thinks(body):
                found = self._dropped_or_moved(i, blocks)
                if found:
                    return found
        return None

    def _dropped_or_moved(self, i: int, blocks: list[dict[str, Any]]) -> str | None:
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use" and b.get("id")]
        turn = next((self.turns[u] for u in uses if u in self.turns), None)
        if turn is None or not any(b.get("type") in THINKING_TYPES for b in turn):
            return None
        if blocks and blocks[0].get("type") not in THINKING_TYPES:
            return EXPECTED_THINKING.format(i=i, found=blocks[0].get("type"))
        kept = [b for b in blocks if b in turn]
        if kept != turn:
            j = next((n for n, b in enumerate(blocks) if b.get("type") in THINKING_TYPES), 0)
            return INVALID_SIGNATURE.format(i=i, j=j)
        return None

    def prefill_refused(self, body: dict[str, Any]) -> bool:
        last = (body.get("messages") or [{}])[-1]
        model = str(body.get("model"))
        return (
            last.get("role") == "assistant"
            and NO_PREFILL.match(model) is not None
            and not self.is_continuation(body)
        )


def _current_turn_start(messages: list[dict[str, Any]]) -> int:
    """The index after the last user message that is not only tool results."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        content = message.get("content")
        results_only = (
            isinstance(content, list)
            and content
            and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        )
        if message.get("role") == "user" and not results_only:
            return i + 1
    return 0


def _plain(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [
        {k: v for k, v in b.items() if k != "cache_control"}
        for b in content or []
        if isinstance(b, dict)
    ]


def _key(block: dict[str, Any]) -> str | None:
    if block.get("type") == "thinking":
        return "s:" + str(block.get("signature"))
    if block.get("type") == "redacted_thinking":
        return "d:" + str(block.get("data"))
    return None


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def sse(message: dict[str, Any]) -> bytes:
    """The reply as the Messages API streams it (message_start, a start/delta/stop per block,
    message_delta with the stop reason and output tokens, message_stop: the streaming docs)."""
    events: list[tuple[str, dict[str, Any]]] = []
    start = {**message, "content": [], "stop_reason": None, "stop_details": None}
    start["usage"] = {**message["usage"], "output_tokens": 1}
    events.append(("message_start", {"type": "message_start", "message": start}))
    for index, block in enumerate(message["content"]):
        first, deltas = _block_events(block)
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": first},
            )
        )
        for delta in deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {
        "stop_reason": message["stop_reason"],
        "stop_sequence": None,
        "stop_details": message["stop_details"],
    }
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def _block_events(block: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
    if kind == "thinking":
        deltas = (
            [{"type": "thinking_delta", "thinking": block["thinking"]}] if block["thinking"] else []
        )
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
        return {"type": "thinking", "thinking": "", "signature": ""}, deltas
    if kind == "tool_use":
        partial = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        return {**block, "input": {}}, partial
    return block, []
