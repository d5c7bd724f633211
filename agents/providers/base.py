"""The small provider interface every LLM vendor (and the offline rule engine) sits behind.

Conversations are kept in a neutral shape so the runner has one code path:

* ``{"role": "user", "content": str}``
* ``{"role": "assistant", "content": str, "tool_calls": [ToolCall, ...], "vendor_turn": ...}``
  (``vendor_turn``: ``Completion.vendor_turn``, the answer as the vendor gave it; a provider
  sends it back verbatim and never rebuilds such a turn from its text)
* ``{"role": "tool", "results": [ToolResult, ...]}`` — answers to the previous tool calls

A provider turns that into its vendor's request, sends it with sampling pinned where the
model accepts it (temperature ≤ 0.2, top-p 1, seed; ``models.py`` says which models refuse
sampling parameters), no SDK retries (Temporal owns retries), and maps vendor errors onto
``LlmProviderError`` (retryable: 429, 5xx, timeouts) or ``LlmProviderRejected`` and its kin (not
retryable: 400/401/403/404, spend limits, answers cut short, refused or filtered).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

TEMPERATURE = 0.1
# A tool call whose arguments are not a JSON object reaches the runner as {this key: raw text}
# (no tool's input schema accepts it, so the tool refuses the call and the model sees why).
INVALID_ARGUMENTS_KEY = "__invalid_json__"
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

    @property
    def flagged(self) -> str:
        """The content, saying it is an error in the text: for the APIs whose tool results
        have no error flag (OpenAI's)."""
        return f"Error: {self.content}" if self.is_error else self.content


def flagged_results(
    message: dict[str, Any], kind: dict[str, str], call_id: str, output: str
) -> list[dict[str, Any]]:
    """A tool turn as one item per result for an API whose tool results have no error flag
    (OpenAI's): ``kind``'s keys, then the result's call id and flagged content under the API's
    own key names ``call_id`` and ``output``."""
    return [
        {**kind, call_id: result.call_id, output: result.flagged} for result in message["results"]
    ]


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    # The neutral stop reasons are Anthropic's words (end_turn, tool_use, max_tokens, refusal,
    # pause_turn, model_context_window_exceeded, ...) plus OpenAI's content_filter.
    stop_reason: str = ""
    stop_detail: str = ""  # e.g. a refusal's category, when the vendor gives one
    # Of input_tokens: those read from the vendor's prompt cache, and those written to it
    # (Anthropic bills writes above the base input price; OpenAI has no writes).
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # The vendor's own rendering of this assistant turn (Anthropic: its content blocks,
    # thinking and signatures included), opaque to the runner, which keeps it in the
    # conversation so the provider can send the turn back exactly as it came.
    vendor_turn: Any = None


@dataclass(frozen=True)
class ProviderOptions:
    model: str
    max_output_tokens: int = 8192
    timeout_seconds: float = 120.0
    temperature: float = TEMPERATURE
    # The JSON Schema the final answer must meet; providers with structured outputs use it.
    output_schema: dict[str, Any] | None = None
    # Thinking (auto | on | off) and effort (None: the model's default), with the settings
    # they came from for error messages (claude_thinking.py).
    thinking: str = "auto"
    effort: str | None = None
    thinking_setting: str = "AMTP_LLM_THINKING"
    effort_setting: str = "AMTP_LLM_EFFORT"


class Provider(ABC):
    name: str = ""
    rule_generated: bool = False  # True only for the offline rule engine

    def __init__(self, options: ProviderOptions, *, agent: str) -> None:
        if options.temperature > 0.2:
            raise ValueError("temperature must be at most 0.2")
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

    def count_tokens(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[ToolSpec]
    ) -> int | None:
        """The vendor's count of the input tokens of that call; None where the vendor has no
        counting (the runner then estimates)."""
        return None


def vendor_tool_name(name: str) -> str:
    """Anthropic (and OpenAI) refuse dots in tool names: repo.tree ↔ repo_tree."""
    return name.replace(".", "_")


def mcp_tool_name(vendor_name: str, tools: list[ToolSpec]) -> str:
    for tool in tools:
        if vendor_tool_name(tool.name) == vendor_name:
            return tool.name
    return vendor_name  # unknown: the runner refuses it
