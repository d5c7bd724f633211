"""``manage.py check_providers``: a few cheap real calls to the configured provider, for every
agent's effective setup, and what is wrong in words a user can act on.

Each distinct setup (model, thinking, effort: ``AMTP_MODEL_<AGENT>``, ``AMTP_THINKING_<AGENT>``,
``AMTP_EFFORT_<AGENT>`` or their ``AMTP_LLM_*`` defaults) is checked once, for the agents that
use it: one tiny answer; for the crawler's setup a two-turn tool call (tool_use, then its
tool_result back with the model's turn exactly as the runner keeps it, thinking blocks
included); for the other agents' setups a structured answer against a real contract (the Test
Case Generator's), parsed and validated as a run would; and, for an OpenAI-compatible server of
one's own (``OPENAI_BASE_URL``), one prompt of known size, because Ollama cuts a prompt longer
than its context window without saying so. The answer budget leaves a thinking model its
thinking room on top (``claude_thinking``). A check cut short is reported as not completed,
never as passed. Each finding is ``ok``, ``warning`` (runs may work, or work worse, or a check
could not be completed) or ``error`` (runs will fail).
"""

from __future__ import annotations

import uuid

from django.conf import settings

from agents.errors import (
    LlmContextOverflow,
    LlmOutputTruncated,
    LlmProviderError,
    LlmProviderRejected,
    LlmQuotaExhausted,
    MalformedLlmOutput,
)
from agents.providers import (
    DEFAULT_MODELS,
    check_model,
    make_provider,
    model_for,
    provider_options,
)
from agents.providers.base import Provider, ToolResult, ToolSpec
from agents.providers.vendor import CONTEXT_HINT
from agents.runner import assistant_turn, parse_answer
from amtp_site.errors import AmtpError, ConfigurationError
from amtp_site.findings import Finding
from schemas import load as load_schema
from schemas import validate
from schemas.errors import SchemaValidationError

AGENT = "repo_crawler"  # the agent with tools and the longest prompts
AGENTS = (AGENT, "test_case_generator", "test_engineer")
ANSWER_TOKENS = 1024  # the answer's budget; a thinking model gets its thinking room on top
CONTRACT = "test_case_generator/output"  # a real contract, small enough for a cheap answer
STRUCTURED_ASK = (
    "Answer with one JSON object for run_id {run_id}: one test case, id tc_home, titled "
    "'Home page loads', no preconditions, one step 'Open /', expected 'The home page is "
    "shown', priority critical, and coverage_notes 'probe'."
)
SYSTEM = "You are a connectivity check. Answer with the single word OK."
PING = [{"role": "user", "content": "Say OK."}]
PROBE_TOOL = ToolSpec(
    "amtp.probe", "Answers OK. Call it once.", {"type": "object", "properties": {}}
)
CALL_TOOL = [{"role": "user", "content": "Call the amtp_probe tool once."}]
PROBE_TOKENS = 8192  # a prompt of about this many tokens (4 characters each)
FILLER = "The quick brown fox jumps over the lazy dog near the river bank today. "
KEPT_ENOUGH = 0.6  # tokenizers differ; under this share of the estimate, the server cut it

ANSWERED = "{vendor} answered with model {model!r}{used_by}"
TOOLS_OK = "{vendor} ran a two-turn tool call (tool_use, then tool_result) on {model!r}{used_by}"
TOOLS_CUT = (
    "{vendor} {model!r}: the two-turn tool call was not completed: its {turn} turn was cut off "
    "at max_tokens={sent}, so the round trip is unchecked; raise the effort budget or check "
    "the model{used_by}"
)
STRUCTURED_OK = (
    "{vendor} {model!r} answered with JSON that the {contract} contract accepts{used_by}"
)
STRUCTURED_BAD = (
    "{vendor} {model!r} could not give a structured answer the {contract} contract accepts: "
    "{message}; runs of {agents} would fail the same way: choose a model that follows a JSON "
    "contract{used_by}"
)
STRUCTURED_CUT = (
    "{vendor} {model!r}: the structured-answer check was not completed: the answer was cut off "
    "at max_tokens={sent}{used_by}"
)
NO_CALL = (
    "{vendor} {model!r} answered without calling the probe tool, so the tool round trip was not "
    "checked; the crawler needs a model that calls tools"
)
SECOND_TURN_REFUSED = (
    "{vendor} refused the second turn of a tool call (the tool_result after the model's "
    "tool_use), which every crawl sends: {message}"
)
CONTEXT_OK = (
    "the server read a prompt of about {tokens} tokens whole ({kept} counted); runs may need "
    "up to AMTP_MAX_INPUT_TOKENS + AMTP_MAX_OUTPUT_TOKENS = {needed}"
)
BAD_KEY = "{vendor} refused the key ({status}): {message}; check {setting}"
MODEL_MISSING = (
    "model {model!r} is not served at {url} ({status}): {message}; for Ollama run "
    "`ollama pull {model}`, for vLLM/LM Studio load it, or set AMTP_LLM_MODEL to a model the "
    "server lists (GET {url}/models)"
)
CLAUDE_MISSING = (
    "model {model!r} is not served ({status}): {message}; set AMTP_LLM_MODEL to a current model, "
    "e.g. {default}"
)
UNREACHABLE = "cannot get an answer from {url}: {message}; is the server running there?"
TOOLS_REFUSED = (
    "the server refused a request with tools, and the crawler needs them: {message}; vLLM: "
    "start it with --enable-auto-tool-choice --tool-call-parser <the parser for your model>; "
    "Ollama: use a model with the tools capability; LM Studio: load a model that supports "
    "tool use"
)
CONTEXT_SMALL = (
    "the server's context window is too small: {what}; runs need AMTP_MAX_INPUT_TOKENS + "
    "AMTP_MAX_OUTPUT_TOKENS = {needed} tokens (or lower AMTP_MAX_INPUT_TOKENS). Ollama: set "
    "OLLAMA_CONTEXT_LENGTH={needed} for the server (or PARAMETER num_ctx {needed} in a "
    "Modelfile); LM Studio: load the model with a larger context length; vLLM: --max-model-len"
)
CUT = "it kept only {kept} of a prompt of about {tokens} tokens and dropped the rest silently"
REFUSED = "it refused a prompt of about {tokens} tokens ({message})"
CONTEXT_UNKNOWN = "the server reports no token usage, so its context window could not be checked"


def check_providers() -> list[Finding]:
    """Probe each agent setup; an error stops the probing of that setup (its later calls
    would fail the same way)."""
    name = settings.AMTP_LLM_PROVIDER
    if name == "offline":
        return [Finding("ok", "offline provider: rule-based, nothing to call")]
    try:
        setups = agent_setups(name)
        notices = {check_model(agent, name) for agent in AGENTS} - {None}
    except ConfigurationError as exc:
        return [Finding("error", exc.message)]
    findings = [Finding("warning", notice) for notice in sorted(notices)]
    several = len(setups) > 1
    for agents in setups:
        findings += _check_setup(agents, used_by(agents) if several else "")
    return findings


def agent_setups(name: str) -> list[tuple[str, ...]]:
    """The agents grouped by their effective (model, thinking, effort), in ``AGENTS`` order."""
    groups: dict[tuple, list[str]] = {}
    for agent in AGENTS:
        options = provider_options(agent, name, None, ANSWER_TOKENS)
        groups.setdefault((options.model, options.thinking, options.effort), []).append(agent)
    return [tuple(agents) for agents in groups.values()]


def used_by(agents: tuple[str, ...]) -> str:
    return f" (used by {', '.join(agents)})"


def _check_setup(agents: tuple[str, ...], label: str) -> list[Finding]:
    try:
        providers = {
            agent: make_provider(agent, max_output_tokens=ANSWER_TOKENS) for agent in agents
        }
    except ConfigurationError as exc:
        return [Finding("error", exc.message)]
    first = providers[agents[0]]
    probes = [lambda: _plain(first, label)]
    if AGENT in agents:
        probes.append(lambda: _tools(providers[AGENT], label))
    others = [agent for agent in agents if agent != AGENT]
    if others:
        probes.append(lambda: _structured(others, label))
    probes.append(lambda: _context(first))
    findings: list[Finding] = []
    for probe in probes:
        finding = probe()
        if finding is None:
            continue
        findings.append(finding)
        if finding.level == "error":
            break
    return findings


def _plain(provider: Provider, label: str) -> Finding:
    try:
        provider.complete(system=SYSTEM, messages=PING, tools=[])
    except LlmOutputTruncated:
        pass  # it answered, at length: the vendor, the key and the model work
    except AmtpError as exc:
        return Finding("error", explain(exc, provider))
    return Finding("ok", ANSWERED.format(vendor=provider.name, model=provider.model, used_by=label))


def _tools(provider: Provider, label: str) -> Finding:
    """tool_use → tool_result → answer, the conversation kept as the runner keeps it."""
    fields = {"vendor": provider.name, "model": provider.model, "used_by": label}
    try:
        first = provider.complete(system=SYSTEM, messages=CALL_TOOL, tools=[PROBE_TOOL])
    except LlmOutputTruncated:
        return Finding("warning", TOOLS_CUT.format(turn="first", sent=_sent(provider), **fields))
    except LlmProviderRejected as exc:
        if exc.details.get("status") == 400:
            return Finding("error", TOOLS_REFUSED.format(message=exc.message))
        return Finding("error", explain(exc, provider))
    except AmtpError as exc:
        return Finding("error", explain(exc, provider))
    if not first.tool_calls:
        return Finding("warning", NO_CALL.format(vendor=provider.name, model=provider.model))
    results = [ToolResult(call.id, "OK") for call in first.tool_calls]
    messages = [*CALL_TOOL, assistant_turn(first), {"role": "tool", "results": results}]
    try:
        provider.complete(system=SYSTEM, messages=messages, tools=[PROBE_TOOL])
    except LlmOutputTruncated:
        return Finding("warning", TOOLS_CUT.format(turn="second", sent=_sent(provider), **fields))
    except LlmProviderRejected as exc:
        if exc.details.get("status") == 400:
            return Finding(
                "error", SECOND_TURN_REFUSED.format(vendor=provider.name, message=exc.message)
            )
        return Finding("error", explain(exc, provider))
    except AmtpError as exc:
        return Finding("error", explain(exc, provider))
    return Finding("ok", TOOLS_OK.format(**fields))


def _structured(agents: list[str], label: str) -> Finding:
    """One answer under a real contract, through the provider's structured outputs where it
    has them, then sanitised, parsed and validated as the runner does."""
    schema = load_schema(CONTRACT)
    provider = make_provider(agents[0], output_schema=schema, max_output_tokens=ANSWER_TOKENS)
    fields = {"vendor": provider.name, "model": provider.model, "used_by": label}
    ask = [{"role": "user", "content": STRUCTURED_ASK.format(run_id=uuid.uuid4())}]
    system = "You write test cases. Answer with one JSON object and nothing else."
    try:
        answer = provider.complete(system=system, messages=ask, tools=[])
        validate(CONTRACT, parse_answer(answer.text))
    except LlmOutputTruncated:
        return Finding("warning", STRUCTURED_CUT.format(sent=_sent(provider), **fields))
    except (SchemaValidationError, MalformedLlmOutput) as exc:
        message = exc.message[:300]
        agents_text = ", ".join(agents)
        return Finding(
            "error",
            STRUCTURED_BAD.format(contract=CONTRACT, message=message, agents=agents_text, **fields),
        )
    except AmtpError as exc:
        return Finding("error", explain(exc, provider))
    return Finding("ok", STRUCTURED_OK.format(contract=CONTRACT, **fields))


def _sent(provider: Provider) -> int:
    plan = getattr(provider, "plan", None)  # Claude: the answer's budget + thinking room
    return plan.max_tokens if plan is not None else provider.options.max_output_tokens


def _context(provider: Provider) -> Finding | None:
    if provider.name != "openai" or not settings.OPENAI_BASE_URL:
        return None  # hosted APIs have large, documented windows
    needed = settings.AMTP_MAX_INPUT_TOKENS + settings.AMTP_MAX_OUTPUT_TOKENS
    text = FILLER * (PROBE_TOKENS * 4 // len(FILLER))
    tokens = len(text) // 4
    prompt = [{"role": "user", "content": f"{text}\nIgnore the text above. Say OK."}]
    try:
        kept = provider.complete(system=SYSTEM, messages=prompt, tools=[]).input_tokens
    except LlmOutputTruncated:
        return None
    except LlmContextOverflow as exc:
        what = REFUSED.format(tokens=tokens, message=exc.message.removesuffix(CONTEXT_HINT))
        return Finding("error", CONTEXT_SMALL.format(what=what, needed=needed))
    except AmtpError as exc:
        return Finding("error", explain(exc, provider))
    if kept == 0:
        return Finding("warning", CONTEXT_UNKNOWN)
    if kept < tokens * KEPT_ENOUGH:
        what = CUT.format(kept=kept, tokens=tokens)
        return Finding("error", CONTEXT_SMALL.format(what=what, needed=needed))
    return Finding("ok", CONTEXT_OK.format(tokens=tokens, kept=kept, needed=needed))


def explain(exc: AmtpError, provider: Provider) -> str:
    """What a failed probe call means and what to change."""
    url = getattr(provider, "base_url", None) or f"the {provider.name} API"
    status = exc.details.get("status")
    if isinstance(exc, (ConfigurationError, LlmQuotaExhausted, LlmContextOverflow)):
        return exc.message  # these already say what to change
    if status in (401, 403):
        setting = f"{provider.name.upper()}_API_KEY"
        return BAD_KEY.format(
            vendor=provider.name, status=status, message=exc.message, setting=setting
        )
    if status == 404:
        model, fields = model_for(AGENT), {"status": status, "message": exc.message}
        if provider.name == "anthropic":
            return CLAUDE_MISSING.format(model=model, default=DEFAULT_MODELS["anthropic"], **fields)
        return MODEL_MISSING.format(model=model, url=url, **fields)
    if isinstance(exc, LlmProviderError) and status is None:
        return UNREACHABLE.format(url=url, message=exc.message)
    return exc.message
