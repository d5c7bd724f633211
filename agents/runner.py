"""The stateless agent runner: one code path for all three agents, with a repair turn.

One invocation = one fresh provider client, the agent's static system prompt, and ONE first
user message: the canonical-JSON handoff envelope (for the crawler, its validated input). No
other history. The answer goes raw text → ``sanitize_llm_output`` → ``json.loads``
(``MalformedLlmOutput``, retryable) → the agent's assembly → ``schemas.validate`` of its output
contract (``SchemaValidationError``, final) → the agent's own contract rules
(``ContractViolation``). When output parses but breaks its contract, the same session may get
every violation listed and one more chance (``repairs``; 0 disables).

Before each call the next input is measured against its budget: by the vendor's own count
where the provider has one (Anthropic), else estimated at 4 characters per token. Both numbers
are kept in the artifact's meta (``input_tokens``) next to what the vendor billed (``usage``);
``usage.max_call_input_tokens`` is the largest estimate made before one call.

The first message of the downstream agents is a rendering of the envelope within
``Budgets.context_tokens`` (:mod:`agents.rendering`): verbatim while it fits, bounded above.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

import schemas
from agents.errors import BudgetExceeded, MalformedLlmOutput
from agents.providers.base import Completion, Provider, ToolCall, ToolResult, ToolSpec
from agents.rendering import CHARS_PER_TOKEN, render_envelope
from agents.sanitizer import SANITIZER_VERSION, sanitize_llm_output
from agents.turn_log import TurnLog
from amtp_site.canonical import canonical_text
from schemas.errors import ContractViolation, SchemaValidationError

log = logging.getLogger("amtp.agents")
PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
UPSTREAM = {
    "test_case_generator": "repo_crawler",
    "test_engineer": "test_case_generator",
}

TOOL_BUDGET_EXHAUSTED = "Tool-call budget exhausted: answer now with what you have."
REPAIR_MESSAGE = (
    "Your answer broke its contract. Every problem found:\n{problems}\n"
    "Reply with the corrected JSON object only, nothing else."
)


@dataclass(frozen=True)
class Budgets:
    max_input_tokens: int = 150_000
    max_tool_calls: int = 40
    max_bytes_read: int = 2_000_000
    max_seconds: float = 600.0
    # Repository data one call may carry: the rendered handoff, or the crawler's tool results.
    context_tokens: int = 24_000
    max_tree_files: int = 200_000  # files a crawl may map (memory and artifact size)


@dataclass
class AgentContext:
    """What the runner knows about the run that the model must not choose."""

    run_id: str
    prompt_params: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentResult:
    output: dict[str, Any]
    meta: dict[str, Any]


class Agent:
    """One agent's contract. Subclasses set the names and override the hooks they need."""

    name = ""
    tools: list[ToolSpec] = []

    @property
    def input_schema(self) -> str:
        return f"{self.name}/input"

    @property
    def output_schema(self) -> str:
        return f"{self.name}/output"

    def assemble(self, answer: Any, ctx: AgentContext) -> Any:
        """Turn the model's parsed answer into the output object (default: as is)."""
        return answer

    def check(self, output: dict[str, Any], ctx: AgentContext) -> None:
        """The agent's own contract rules beyond the schema; raise ContractViolation."""

    async def call_tool(self, call: ToolCall, ctx: AgentContext) -> ToolResult:
        raise ContractViolation(f"{self.name} has no tools; the model asked for {call.name!r}")

    def budget_state(self) -> dict[str, Any]:
        """What the agent's own tool budgets have used, kept with each completed turn so a
        resumed conversation goes on with the budgets left, not fresh ones."""
        return {}

    def restore_budget_state(self, state: dict[str, Any]) -> None:
        """The counterpart of ``budget_state`` for a resumed conversation."""


def load_prompt(agent: str, params: dict[str, str] | None = None) -> tuple[str, str, str]:
    """(rendered prompt, sha256 of the template file, version)."""
    template = (PROMPT_DIR / f"{agent}.md").read_text()
    version = template.split("version", 1)[1].split("-->", 1)[0].strip()
    rendered = template
    for key, value in (params or {}).items():
        rendered = rendered.replace("{" + key + "}", value)
    return rendered, hashlib.sha256(template.encode()).hexdigest(), version


def first_message(
    agent: Agent,
    payload: dict,
    ctx: AgentContext,
    upstream: dict | None,
    budgets: Budgets = Budgets(),
    app_map: dict | None = None,
) -> str:
    """The one user message: validated input (crawler) or the handoff envelope (others,
    with the run's ``app_map`` beside the payload when it explored its app), rendered within
    the context budget."""
    schemas.validate(agent.input_schema, payload)
    if upstream is None:
        return canonical_text(payload)
    envelope = {"run_id": ctx.run_id, "upstream": upstream, "payload": payload}
    if app_map is not None:
        envelope["app_map"] = app_map
    envelope = schemas.validate("handoff/envelope", envelope)
    return render_envelope(envelope, budget_tokens=budgets.context_tokens)


def _plain(value: Any) -> Any:
    return asdict(value) if is_dataclass(value) else str(value)


def estimate_tokens(system: str, messages: list[dict[str, Any]]) -> int:
    size = len(system) + len(json.dumps(messages, default=_plain))
    return size // CHARS_PER_TOKEN + 1


def parse_answer(raw: str) -> Any:
    cleaned = sanitize_llm_output(raw)
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError as exc:
        preview = cleaned[:200] + ("…" if len(cleaned) > 200 else "")
        raise MalformedLlmOutput(
            f"model output is not JSON after sanitising ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}): {preview!r}"
        ) from exc


def _problems(exc: SchemaValidationError | ContractViolation) -> list[str]:
    if isinstance(exc, SchemaValidationError):
        return [f"{v['path']}: {v['message']} (rule: {v['rule']})" for v in exc.violations]
    return exc.problems


@dataclass
class Tally:
    """What one invocation has spent so far; reported in the artifact's meta."""

    usage: dict[str, int] = field(
        default_factory=lambda: {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "max_call_input_tokens": 0,  # the largest estimate made before one call
        }
    )
    llm_calls: int = 0
    resumed_turns: int = 0  # completed turns a failed attempt left, not asked for again
    tool_calls: int = 0
    attempts: int = 0  # answers given (tool-call turns are not answers)
    # The budget checks' view of the input: our estimate, and the vendor's count if it has one.
    input_tokens: dict[str, int | None] = field(
        default_factory=lambda: {"estimated": 0, "counted": None}
    )


async def run_agent(
    agent: Agent,
    *,
    payload: dict[str, Any],
    ctx: AgentContext,
    provider: Provider,
    upstream: dict[str, str] | None = None,
    budgets: Budgets = Budgets(),
    repairs: int = 1,
    app_map: dict | None = None,
) -> AgentResult:
    system, prompt_hash, prompt_version = load_prompt(agent.name, ctx.prompt_params)
    first = first_message(agent, payload, ctx, upstream, budgets, app_map)
    messages: list[dict[str, Any]] = [{"role": "user", "content": first}]
    deadline = time.monotonic() + budgets.max_seconds
    tally = Tally()
    turns = None
    if agent.tools:  # a tool loop: a retry resumes after the last completed turn
        turns = TurnLog(
            agent=agent.name,
            provider=provider.name,
            model=provider.model,
            system=system,
            first=first,
        )
        resumed = turns.load()
        if resumed is not None:
            messages, tally.tool_calls = resumed.messages, resumed.tool_calls
            agent.restore_budget_state(resumed.state)
            tally.resumed_turns = sum(m["role"] == "tool" for m in messages)
            log.info("%s resumes after %d completed turn(s)", agent.name, tally.resumed_turns)
    try:
        while True:
            await check_budgets(agent, provider, system, messages, budgets, deadline, tally)
            completion = await call_model(agent, ctx, provider, system, messages, tally)
            if completion.tool_calls:
                messages += await answer_tool_calls(agent, ctx, completion, budgets, tally)
                if turns is not None:
                    turns.save(messages, tally.tool_calls, agent.budget_state())
                continue
            tally.attempts += 1
            try:
                output = accept(agent, ctx, completion.text)
            except (SchemaValidationError, ContractViolation) as exc:
                if tally.attempts > repairs:
                    raise
                messages += repair_turn(completion, exc)
                continue
            meta = {
                **spent(agent, provider, tally),
                "sanitizer": SANITIZER_VERSION,
                "rule_generated": provider.rule_generated,
                "prompt_sha256": prompt_hash,
                "prompt_version": prompt_version,
                "input_tokens": tally.input_tokens,
                "tool_calls": tally.tool_calls,
                "attempts": tally.attempts,
                "resumed_turns": tally.resumed_turns,
                "pid": os.getpid(),
            }
            if turns is not None:
                turns.clear()
            return AgentResult(output=output, meta=meta)
    except Exception as exc:
        # What this failed attempt spent goes with its error (it pickles with it out of the
        # agent process): the worker records it as the run's cost (runs.artifacts).
        if tally.llm_calls:
            exc.spent = spent(agent, provider, tally)
        raise


def spent(agent: Agent, provider: Provider, tally: Tally) -> dict:
    """What an invocation spent, as ``runs.costs`` reads it from an artifact's meta."""
    return {
        "agent": agent.name,
        "provider": provider.name,
        "model": provider.model,
        "usage": tally.usage,
        "llm_calls": tally.llm_calls,
    }


async def check_budgets(
    agent: Agent,
    provider: Provider,
    system: str,
    messages: list[dict[str, Any]],
    budgets: Budgets,
    deadline: float,
    tally: Tally,
) -> None:
    """Before each call: wall time left, and the next call's input under its token budget
    (the vendor's count where it has one, else the estimate)."""
    if time.monotonic() > deadline:
        raise BudgetExceeded(f"{agent.name} ran past its {budgets.max_seconds:.0f} s budget")
    estimate = estimate_tokens(system, messages)
    tally.usage["max_call_input_tokens"] = max(tally.usage["max_call_input_tokens"], estimate)
    counted = await asyncio.to_thread(
        provider.count_tokens, system=system, messages=messages, tools=agent.tools
    )
    tally.input_tokens["estimated"] = (tally.input_tokens["estimated"] or 0) + estimate
    if counted is not None:
        tally.input_tokens["counted"] = (tally.input_tokens["counted"] or 0) + counted
    tokens, how = (estimate, "estimated") if counted is None else (counted, "counted by the vendor")
    if tokens > budgets.max_input_tokens:
        raise BudgetExceeded(
            f"{agent.name}: the next call needs about {tokens} input tokens ({how}), over the "
            f"budget of {budgets.max_input_tokens}; use a shallower depth level or raise "
            "AMTP_MAX_INPUT_TOKENS",
            estimated_tokens=estimate,
            counted_tokens=counted,
            budget=budgets.max_input_tokens,
        )


async def call_model(
    agent: Agent,
    ctx: AgentContext,
    provider: Provider,
    system: str,
    messages: list[dict[str, Any]],
    tally: Tally,
) -> Completion:
    log.info(
        "LLM call %d for %s (run %s, provider %s)",
        tally.llm_calls + 1,
        agent.name,
        ctx.run_id,
        provider.name,
    )
    # The SDKs are synchronous; a thread keeps the event loop (the MCP session) alive.
    completion: Completion = await asyncio.to_thread(
        provider.complete, system=system, messages=messages, tools=agent.tools
    )
    tally.llm_calls += 1
    tally.usage["input_tokens"] += completion.input_tokens
    tally.usage["output_tokens"] += completion.output_tokens
    tally.usage["cache_read_tokens"] += completion.cache_read_tokens
    tally.usage["cache_write_tokens"] += completion.cache_write_tokens
    return completion


async def answer_tool_calls(
    agent: Agent, ctx: AgentContext, completion: Completion, budgets: Budgets, tally: Tally
) -> list[dict[str, Any]]:
    """The assistant's tool-call turn and the tool turn answering it. Past the budget every
    call is answered "answer now"; a model that keeps calling after that fails the agent."""
    tally.tool_calls += len(completion.tool_calls)
    if tally.tool_calls > budgets.max_tool_calls + len(agent.tools):
        raise BudgetExceeded(
            f"{agent.name} made {tally.tool_calls} tool calls, over the budget of "
            f"{budgets.max_tool_calls} (and kept calling after being told to answer)"
        )
    results = []
    for call in completion.tool_calls:
        if tally.tool_calls > budgets.max_tool_calls:
            results.append(ToolResult(call.id, TOOL_BUDGET_EXHAUSTED, is_error=True))
        else:
            results.append(await agent.call_tool(call, ctx))
    return [assistant_turn(completion), {"role": "tool", "results": results}]


def assistant_turn(completion: Completion) -> dict[str, Any]:
    """The model's turn as the conversation keeps it: its text and calls for the runner, and
    the vendor's own blocks, which the provider sends back verbatim (thinking blocks and their
    signatures must come back unchanged, in the same turn as the tool calls)."""
    return {
        "role": "assistant",
        "content": completion.text,
        "tool_calls": completion.tool_calls,
        "vendor_turn": completion.vendor_turn,
    }


def accept(agent: Agent, ctx: AgentContext, text: str) -> dict[str, Any]:
    """The answer as the agent's output, or the error saying why not."""
    answer = parse_answer(text)
    output = agent.assemble(answer, ctx)
    schemas.validate(agent.output_schema, output)
    agent.check(output, ctx)
    return output


def repair_turn(
    completion: Completion, exc: SchemaValidationError | ContractViolation
) -> list[dict[str, Any]]:
    """The rejected answer, as it came, and a user turn listing every problem with it."""
    problems = "\n".join(f"- {p}" for p in _problems(exc))
    return [
        assistant_turn(completion),
        {"role": "user", "content": REPAIR_MESSAGE.format(problems=problems)},
    ]
