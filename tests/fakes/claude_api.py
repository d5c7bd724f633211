"""The fake Anthropic Messages API (``FakeAnthropic``): see ``llm_api.py`` for what it checks.
The thinking, prefill and request rules it applies live in ``claude_rules.py``."""

from __future__ import annotations

import hashlib
import json
import math
import re
import typing
from collections.abc import Iterable
from typing import Any

import anthropic.types

from agents.providers import models as model_tables
from tests.fakes import claude_rules
from tests.fakes.llm_base import (
    _TOOL_NAME,
    HttpError,
    RecordedRequest,
    StreamFault,
    Text,
    ToolUse,
    _blocks,
    _clip,
    _FakeServer,
    _in_range,
    _new_id,
    _tokens,
)

# Anthropic's spend-limit answers: (status, error type) by `error.details.error_code`, as
# anthropic/_error_classes.py maps them to the SDK's exception classes.
SPEND_LIMITS = {
    "enforced_spend_limit_reached": (429, "rate_limit_error"),
    "contract_spend_limit_reached": (429, "rate_limit_error"),
    "linked_organization_spend_limit_reached": (402, "billing_error"),
}


def anthropic_spend_limit(code: str = "enforced_spend_limit_reached") -> HttpError:
    """A spend limit reached: the code in `error.details.error_code` and no retry-after, since
    access resumes only when the limit does (anthropic/types/shared/*spend_limit_reached_error.py;
    developersdigest.tech/errors/api/anthropic-api/429-enforced-spend-limit-reached)."""
    status, type_ = SPEND_LIMITS[code]
    message = "Your organization has reached its API spend limit."
    return HttpError(status, message, type=type_, code=code, no_retry_after=True)


# -- Anthropic ---------------------------------------------------------------------------------
# The models the API serves: the SDK's ModelParam names and its deprecation tables' names.
CLAUDE_MODELS = frozenset(typing.get_args(typing.get_args(anthropic.types.ModelParam)[0]))
STOP_REASONS = frozenset(typing.get_args(anthropic.types.StopReason))
# Models that answer 400 "`temperature` is deprecated for this model." (and the same for top_p
# and top_k): Opus 4.7 (BitterSecurity/Decepticon#107), Opus 4.8 and Fable (HKUDS/nanobot#4333,
# Metaculus/forecasting-tools#308), Opus 5 and Sonnet 5 (github/app#2574), every adaptive-
# thinking model from Opus 4.7 on (mario-andreschak/FLUJO#229). Haiku 5 and Mythos are taken to
# be in that generation.
NO_SAMPLING = re.compile(r"claude-(opus-4-[7-9]|(opus|sonnet|haiku)-[5-9]|fable|mythos)")
# Older models took temperature and top_p together (the 400 below starts with Sonnet/Haiku 4.5
# and Opus 4.1: cloud-apim/otoroshi-llm-extension#140).
BOTH_SAMPLING_OK = re.compile(r"claude-(2|instant|3|opus-4-0|opus-4-2025|sonnet-4-0|sonnet-4-2025)")
COUNT_PARAMS = frozenset(
    "messages model cache_control output_config speed system thinking tool_choice tools".split()
)


class FakeAnthropic(_FakeServer):
    """`POST /v1/messages` and `POST /v1/messages/count_tokens`.
    Client: `anthropic.Anthropic(base_url=fake.url, api_key=...)`.

    `extra_models` serves names the SDK does not list; `count_tokens=False` answers the count
    endpoint 404 as a gateway without it would; `context_window` is the prompt size the model
    takes; prompts below `min_cacheable_tokens` are not cached (the documented minimum is 1,024
    to 4,096 tokens by model: docs.orq.ai/docs/proxy/prompt-caching quotes the table)."""

    vendor, endpoint, request_id_header = "anthropic", "/v1/messages", "request-id"
    streams = True
    # The SDK's typed parameters, plus the sampling ones the SDK only sends via extra_body.
    known_params = frozenset(
        "max_tokens messages model cache_control container diagnostics inference_geo metadata"
        " output_config service_tier speed stop_sequences stream system thinking tool_choice"
        " tools temperature top_p top_k".split()
    )
    ERROR_TYPES = {
        400: "invalid_request_error",
        401: "authentication_error",
        402: "billing_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        504: "timeout_error",
        529: "overloaded_error",
    }
    MESSAGES = {
        401: "invalid x-api-key",
        404: "Not found",
        529: "Overloaded",
        429: "Number of request tokens has exceeded your per-minute rate limit.",
    }

    def __init__(
        self,
        *,
        extra_params: Iterable[str] = (),
        extra_models: Iterable[str] = (),
        count_tokens: bool = True,
        context_window: int = 200_000,
        min_cacheable_tokens: int = 1024,
    ) -> None:
        super().__init__(extra_params=extra_params)
        self.models = CLAUDE_MODELS | frozenset(extra_models)
        self.count_tokens = count_tokens
        self.context_window = context_window
        self.min_cacheable_tokens = min_cacheable_tokens
        self.token_counts: list[RecordedRequest] = []  # requests to count_tokens
        self._cache: set[str] = set()  # prompt prefixes cached so far
        self.ledger = claude_rules.Ledger()  # thinking blocks and turns handed out

    def error_body(self, err: HttpError, request_id: str) -> dict[str, Any]:
        default = "api_error" if err.status >= 500 else "invalid_request_error"
        error: dict[str, Any] = {
            "type": err.type or self.ERROR_TYPES.get(err.status, default),
            "message": err.message or self.MESSAGES.get(err.status, "Internal server error"),
        }
        if err.code:  # the stable cause, in `error.details` (anthropic/_exceptions.py)
            error["details"] = {"error_code": err.code}
        return {"type": "error", "error": error, "request_id": request_id}

    def stream_error(self, fault: StreamFault) -> bytes:
        # The streaming page's "Error events" example, verbatim in shape.
        error = {"type": fault.error_type, "message": fault.message}
        return f"event: error\ndata: {json.dumps({'type': 'error', 'error': error})}\n\n".encode()

    def validate(self, record: RecordedRequest) -> HttpError | None:
        problem = self._check(record, self.allowed_params, ("model", "max_tokens", "messages"))
        if problem is not None:
            return problem
        body = record.json or {}
        text = claude_rules.request_problem(body) or self.ledger.problem(body)
        if text is None and self.ledger.prefill_refused(body):
            text = claude_rules.PREFILL
        return HttpError(400, text) if text else None

    def encode(self, body: dict[str, Any], request: dict[str, Any]) -> tuple[dict, bytes]:
        if request.get("stream"):
            return {"content-type": "text/event-stream"}, claude_rules.sse(body)
        return {}, json.dumps(body).encode()

    def _check(self, record: RecordedRequest, allowed, required) -> HttpError | None:
        # The SDK sends the key as `Authorization: Bearer`, the API also takes `x-api-key`.
        if "x-api-key" not in record.headers and "authorization" not in record.headers:
            return HttpError(401, "x-api-key header is required")
        if "anthropic-version" not in record.headers:
            return HttpError(400, "anthropic-version: header is required")
        body = record.json or {}
        problem = _anthropic_problem(body, allowed, required)
        if problem:
            return HttpError(400, problem)
        return (
            self._model_problem(str(body["model"]))
            or _sampling_problem(body)
            or _cache_problem(body)
            or self._window_problem(body)
        )

    def _model_problem(self, model: str) -> HttpError | None:
        # An unknown or retired model: 404 not_found_error "model: <id>" (spring-projects/
        # spring-ai#2387, nbramia/LifeOS#470, weval-org/app#24); retired = its end-of-life date
        # in the SDK's DEPRECATED_MODELS has passed.
        eol = model_tables.end_of_life("anthropic", model)
        if model not in self.models or (eol is not None and eol <= model_tables.today()):
            return HttpError(404, f"model: {model}")
        return None

    def _window_problem(self, body: dict[str, Any]) -> HttpError | None:
        # "prompt is too long: 208310 tokens > 200000 maximum" (anthropics/claude-code#12186).
        tokens = sum(_claude_tokens(block) for block, _ in _prompt_blocks(body))
        if tokens > self.context_window:
            return HttpError(
                400, f"prompt is too long: {tokens} tokens > {self.context_window} maximum"
            )
        return None

    def side_endpoint(self, record: RecordedRequest) -> tuple[int, dict, bytes] | None:
        if record.path.split("?")[0] != "/v1/messages/count_tokens":
            return None
        with self._lock:
            self.token_counts.append(record)
        if not self.count_tokens:
            return self._error(HttpError(404, "Not found"), {})
        problem = None
        if not isinstance(record.json, dict):
            problem = HttpError(400, "fake: the request body is not a JSON object")
        problem = problem or self._check(record, COUNT_PARAMS, ("model", "messages"))
        if problem is not None:
            return self._error(problem, {"x-should-retry": "false"})
        tokens = sum(_claude_tokens(block) for block, _ in _prompt_blocks(record.json or {}))
        body = json.dumps({"input_tokens": tokens}).encode()
        return 200, {self.request_id_header: _new_id("req_", 24)}, body

    def render(self, reply: Text | ToolUse, request: dict[str, Any]) -> dict[str, Any]:
        stop_details = None
        if isinstance(reply, Text):
            reply = _clip(reply, request.get("max_tokens"))
            stop_reason = reply.stop or ("max_tokens" if reply.truncated else "end_turn")
            if stop_reason not in STOP_REASONS:
                raise ValueError(f"{stop_reason!r} is not an Anthropic stop reason")
            text = [{"type": "text", "text": reply.text}]
            content: list[dict[str, Any]] = text if reply.text or not reply.stop else []
            if stop_reason == "refusal":  # anthropic/types/refusal_stop_details.py
                category = reply.refusal_category
                stop_details = {"type": "refusal", "category": category, "explanation": None}
        else:
            content = [{"type": "text", "text": reply.text}] if reply.text else []
            content += [
                {
                    "type": "tool_use",
                    "id": c.id or _new_id("toolu_01", 22),
                    "name": c.name,
                    "input": c.input,
                }
                for c in reply.calls
            ]
            stop_reason = "tool_use"
        if stop_reason == "pause_turn" and not claude_rules.has_server_tools(request):
            # "the API may pause [its server-side loop] and return pause_turn" (Server tools):
            # a request without server tools never gets it.
            raise ValueError("pause_turn comes only with server tools (web_search, ...)")
        if claude_rules.thinks(request) and reply.thinking != ():
            texts = reply.thinking or ("Let me look at what the repository holds first.",)
            content = self.ledger.thinking_blocks(request, texts, reply.redacted) + content
        self.ledger.record(request, content, stop_reason)
        usage = self._usage(request) | {"output_tokens": _tokens(content)}
        return {
            "id": _new_id("msg_01", 22),
            "type": "message",
            "role": "assistant",
            "model": request.get("model"),
            "content": content,
            "stop_reason": stop_reason,
            "stop_details": stop_details,
            "stop_sequence": None,
            "usage": usage | {"service_tier": "standard"},
        }

    def _usage(self, request: dict[str, Any]) -> dict[str, int]:
        """Input tokens split as the API bills them. A prefix is cached at each block marked
        `cache_control` (when long enough), and a later request reads the longest cached prefix
        ending at or up to 20 blocks before one of its own marks (the documented lookback)."""
        blocks = _prompt_blocks(request)
        sizes, keys, digest = [], [], hashlib.sha256()
        for block, _ in blocks:
            digest.update(block.encode() + b"\0")
            keys.append(digest.hexdigest())
            sizes.append((sizes[-1] if sizes else 0) + _claude_tokens(block))
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        with self._lock:
            read = max(
                (
                    sizes[j]
                    for m in marks
                    for j in range(m, max(m - 20, -1), -1)
                    if keys[j] in self._cache
                ),
                default=0,
            )
            cached = [m for m in marks if sizes[m] >= self.min_cacheable_tokens]
            self._cache.update(keys[m] for m in cached)
        written = max(0, sizes[cached[-1]] - read) if cached else 0
        total = sizes[-1] if sizes else 0
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }


def _anthropic_problem(body: dict[str, Any], allowed, required) -> str | None:
    """The first thing the real API would reject, worded like its 400 messages."""
    missing = [key for key in required if key not in body]
    unknown = [key for key in body if key not in allowed]
    if missing:
        return f"{missing[0]}: Field required"
    if unknown:
        return f"{unknown[0]}: Extra inputs are not permitted"
    for key in ("temperature", "top_p"):
        if not _in_range(body.get(key), 0, 1):
            return f"{key}: Input should be a number between 0 and 1"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    asked: set[str] = set()  # tool_use ids of the previous assistant turn
    for i, message in enumerate(messages + [{"role": "user", "content": ""}]):
        role, blocks = message.get("role"), _blocks(message.get("content"))
        if role == "system":
            return f'messages.{i}.role: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.'
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if not isinstance(message.get("content"), (str, list)):
            return f"messages.{i}.content: Input should be a valid string or list"
        untyped = [j for j, b in enumerate(blocks) if not isinstance(b.get("type"), str)]
        if untyped:
            return f"messages.{i}.content.{untyped[0]}.type: Field required"
        answered = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
        if asked - answered:  # also catches a conversation ending on an unanswered tool_use
            ids = ", ".join(sorted(asked - answered))
            return f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
        if answered - asked:
            ids = ", ".join(sorted(answered - asked))
            return f"messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks: {ids}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
        uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        asked = set(uses) if role == "assistant" else set()
    names = [tool.get("name") for tool in body.get("tools") or []]
    for j, tool in enumerate(body.get("tools") or []):
        if tool.get("type") in (None, "custom"):  # server tools have other shapes
            if not _TOOL_NAME.fullmatch(str(tool.get("name"))):
                pattern = f"^{_TOOL_NAME.pattern}$"
                return f"tools.{j}.custom.name: String should match pattern '{pattern}'"
            if "input_schema" not in tool:
                return f"tools.{j}.custom.input_schema: Field required"
    return "tools: Tool names must be unique." if len(names) != len(set(names)) else None


def _sampling_problem(body: dict[str, Any]) -> HttpError | None:
    model = str(body.get("model"))
    if NO_SAMPLING.match(model):
        for key in ("temperature", "top_p", "top_k"):
            if key in body:
                return HttpError(400, f"`{key}` is deprecated for this model.")
    elif "temperature" in body and "top_p" in body and not BOTH_SAMPLING_OK.match(model):
        return HttpError(
            400,
            "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
        )
    return None


def _cache_problem(body: dict[str, Any]) -> HttpError | None:
    # At most 4 cache breakpoints per request (prompt-caching docs; the limit is quoted in
    # skills.sh/softspark/ai-toolkit/prompt-caching-patterns).
    marks = sum(marked for _, marked in _prompt_blocks(body))
    if marks > 4:
        return HttpError(
            400, f"A maximum of 4 blocks with cache_control may be provided. Found {marks}."
        )
    return None


def _prompt_blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The prompt in cache order (tools, system, messages) as (block text, marked for cache)."""
    found: list[dict[str, Any]] = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    system = body.get("system")
    found += [{"type": "text", "text": system}] if isinstance(system, str) else _blocks(system)
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = (
            [{"type": "text", "text": content}] if isinstance(content, str) else _blocks(content)
        )
        found += [{"role": message.get("role"), **block} for block in blocks]
    return [
        (
            json.dumps({k: v for k, v in b.items() if k != "cache_control"}, sort_keys=True),
            "cache_control" in b,
        )
        for b in found
    ]


def _claude_tokens(text: str) -> int:
    """Input tokens at 3 bytes per token: code and JSON come out denser than the runner's
    4-characters estimate, and a test can tell the two apart."""
    return max(1, math.ceil(len(text.encode()) / 3))
