"""Claude through the official ``anthropic`` SDK (Messages API).

Client setup and error translation are shared with the OpenAI provider (``vendor.py``).
"""

from __future__ import annotations

from typing import Any

import anthropic

from agents.providers.base import Completion, ToolCall, ToolSpec, mcp_tool_name, vendor_tool_name
from agents.providers.vendor import VendorProvider, body_text

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

    def _send(self, request: dict[str, Any]) -> Any:
        return self._client.messages.create(**request)

    def build_request(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> dict[str, Any]:
        """The keyword arguments for ``messages.create`` (public so tests can read them)."""
        request: dict[str, Any] = {
            "model": self.options.model,
            "max_tokens": self.options.max_output_tokens,
            "system": system,
            "messages": [_to_vendor(m) for m in messages],
            # SDK 1.x+ has no typed `temperature`; the API still takes it in the body. top_p is
            # left out on purpose: its default is 1 (the spec's value), and newer Claude models
            # refuse a request that sets both temperature and top_p.
            "extra_body": {"temperature": self.options.temperature},
        }
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
                request["output_config"] = {"format": output_format}
        return request

    def _status_error(self, exc: anthropic.APIStatusError) -> tuple[str, str, dict[str, Any]]:
        return exc.type or "error", exc.api_message or body_text(exc.body), {}

    def _completion(self, message: Any, tools: list[ToolSpec]) -> Completion:
        texts, calls = [], []
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
        return Completion(
            text="".join(texts),
            tool_calls=calls,
            input_tokens=input_tokens,
            output_tokens=usage.output_tokens or 0,
            stop_reason=message.stop_reason or "",
        )


def _to_vendor(message: dict[str, Any]) -> dict[str, Any]:
    """One neutral message (see base.py) as a Messages API message."""
    role = message["role"]
    if role == "user":
        return {"role": "user", "content": message["content"]}
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


def _output_format(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Structured outputs accept a subset of JSON Schema; the SDK's own transform moves what
    the API does not support (patterns, lengths, ...) into descriptions. jsonschema stays the
    judge of the answer, so a schema the transform cannot handle just goes unconstrained."""
    try:
        return {"type": "json_schema", "schema": anthropic.transform_schema(schema)}
    except (ValueError, TypeError):
        return None
