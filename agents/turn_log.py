"""The completed turns of an agent's tool loop, kept in Valkey so that a retried attempt
resumes where the failed one stopped instead of paying for every earlier turn again.

A turn is written once the model's tool calls are answered: the conversation so far, the tool
calls counted against the budget, and the agent's own budget state (what the crawler has read
and how much context is left). The key hashes everything that decides the conversation (agent,
provider, model, system prompt, first message: the run id and its pinned commit are in it), so
an attempt only ever resumes its own conversation, and a changed prompt or model starts afresh.

Resending the stored turns is what each vendor's API expects of a stateless client anyway:
Claude's thinking blocks go back verbatim with their signatures, which the API checks, not a
session; OpenAI's reasoning items carry their encrypted content (``store: false``). Valkey holds
only this cache: a lost entry costs the earlier turns again, nothing else.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from agents.providers.base import ToolCall, ToolResult
from amtp_site import valkey

log = logging.getLogger("amtp.agents")
TTL_S = 24 * 3600  # long enough for Temporal's retries of one attempt, then gone
KEY = "amtp:agent:turns:{digest}"
UNREADABLE = "turn log {key}: unreadable ({error}); starting the conversation afresh"


@dataclass
class Resumed:
    messages: list[dict[str, Any]]
    tool_calls: int
    state: dict[str, Any] = field(default_factory=dict)


class TurnLog:
    def __init__(self, *, agent: str, provider: str, model: str, system: str, first: str):
        parts = json.dumps([agent, provider, model, system, first], separators=(",", ":"))
        self.key = KEY.format(digest=hashlib.sha256(parts.encode()).hexdigest())

    def load(self) -> Resumed | None:
        raw = valkey.client().get(self.key)
        if raw is None:
            return None
        try:
            stored = json.loads(raw)
            messages = [_message_in(m) for m in stored["messages"]]
            return Resumed(messages, int(stored["tool_calls"]), dict(stored.get("state") or {}))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning(UNREADABLE.format(key=self.key, error=exc))
            return None

    def save(self, messages: list[dict[str, Any]], tool_calls: int, state: dict) -> None:
        value = {
            "messages": [_message_out(m) for m in messages],
            "tool_calls": tool_calls,
            "state": state,
        }
        valkey.client().set(self.key, json.dumps(value, separators=(",", ":")), ex=TTL_S)

    def clear(self) -> None:
        valkey.client().delete(self.key)


def _message_out(message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    if "tool_calls" in out:
        out["tool_calls"] = [asdict(call) for call in out["tool_calls"] or []]
    if "results" in out:
        out["results"] = [asdict(result) for result in out["results"]]
    return out


def _message_in(message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    if "tool_calls" in out:
        out["tool_calls"] = [ToolCall(**call) for call in out["tool_calls"] or []]
    if "results" in out:
        out["results"] = [ToolResult(**result) for result in out["results"]]
    return out
