"""The small provider interface every LLM vendor (and the offline rule engine) sits behind.

Conversations are kept in a neutral shape so the runner has one code path:

* ``{"role": "user", "content": str}``
* ``{"role": "assistant", "content": str, "tool_calls": [ToolCall, ...]}``
* ``{"role": "tool", "results": [ToolResult, ...]}`` — answers to the previous tool calls

A provider turns that into its vendor's request, sends it with sampling pinned
(temperature ≤ 0.2, top-p 1, seed where supported), no SDK retries (Temporal owns retries),
and maps vendor errors onto ``LlmProviderError`` (retryable: 429, 5xx, timeouts) or
``LlmProviderRejected`` (not retryable: 400/401/403/404).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

TEMPERATURE = 0.1
TOP_P = 1.0
SEED = 20250101


@dataclass(frozen=True)
class ToolSpec:
    name: str  # the MCP name, e.g. "repo.tree"; providers map it to a vendor-legal name
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str  # the MCP name, already mapped back from the vendor name
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    content: str
    is_error: bool = False


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str = ""


@dataclass(frozen=True)
class ProviderOptions:
    model: str
    max_output_tokens: int = 8192
    timeout_seconds: float = 120.0
    temperature: float = TEMPERATURE
    # The JSON Schema the final answer must meet; providers with structured outputs use it.
    output_schema: dict[str, Any] | None = None


class Provider(ABC):
    name: str = ""
    rule_generated: bool = False  # True only for the offline rule engine

    def __init__(self, options: ProviderOptions, *, agent: str) -> None:
        if options.temperature > 0.2:
            raise ValueError("temperature must be at most 0.2 (spec 001)")
        self.options = options
        self.agent = agent

    @property
    def model(self) -> str:
        return self.options.model

    @abstractmethod
    def complete(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> Completion:
        """One model call. ``tools`` is empty for agents that have none."""


def vendor_tool_name(name: str) -> str:
    """Anthropic (and OpenAI) refuse dots in tool names: repo.tree ↔ repo_tree."""
    return name.replace(".", "_")


def mcp_tool_name(vendor_name: str, tools: list[ToolSpec]) -> str:
    for tool in tools:
        if vendor_tool_name(tool.name) == vendor_name:
            return tool.name
    return vendor_name  # unknown: the runner refuses it
