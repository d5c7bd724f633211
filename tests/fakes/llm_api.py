"""Real-HTTP fakes of the Anthropic Messages API and an OpenAI-compatible chat completions API.

Tests drive our code through the official SDKs (request building, response parsing, error
classes, retry headers) with no network and no patching of SDK internals. Replies are consumed
in order, one per request; a reply may be a callable taking the request's JSON body. Requests
are checked like the vendor checks them, so a request the service would refuse fails here with
the service's status, body shape and wording. Each refusal names its public source where it is
made; the installed SDKs are the source for names, codes and body shapes.

Anthropic (``FakeAnthropic``): unknown and retired models (404), sampling parameters on models
that no longer take them, temperature with top_p, more than 4 cache breakpoints, a prompt over
the context window; every stop reason is scriptable (``Text(stop=...)``); ``count_tokens`` is
served with a count of 3 bytes per token (unlike the runner's 4-characters estimate, so a test
can tell which was used) and usage reports prompt-cache reads and writes.

OpenAI-compatible (``FakeOpenAI``): the flavours ``openai``, ``ollama``, ``vllm`` and
``lmstudio`` answer a missing model, tools the server cannot take and an over-long prompt the
way each of them does (Ollama truncates silently); reasoning models refuse sampling parameters;
finish reasons ``length``, ``content_filter`` and refusals are scriptable.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
import typing
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic.types

from agents.providers import models as model_tables
from tests.fakes import claude_rules, openai_responses

NO_REPLY_LEFT = "fake: no scripted reply left"


@dataclass(frozen=True)
class Text:
    """An assistant text reply: any string (valid JSON, fenced JSON, prose, truncated JSON)."""

    text: str
    truncated: bool = False  # stop as if max_tokens was hit: "max_tokens" / "length"
    # Any other way to stop: an Anthropic stop_reason ("refusal", "pause_turn",
    # "model_context_window_exceeded", ...) or an OpenAI finish_reason ("content_filter", ...);
    # "refusal" on OpenAI sends the text as `message.refusal`.
    stop: str | None = None
    refusal_category: str | None = None  # Anthropic `stop_details.category` of a refusal
    # Anthropic, when the request thinks: the thinking blocks before the answer (None: one
    # default block) and a redacted_thinking block after them.
    thinking: tuple[str, ...] | None = None
    redacted: bool = False


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: dict[str, Any]
    id: str | None = None  # generated in the vendor's format when None


@dataclass(frozen=True)
class ToolUse:
    """The model asks for one or more tool calls, optionally after some text."""

    calls: tuple[ToolCall, ...]
    text: str | None = None
    thinking: tuple[str, ...] | None = None  # as Text's
    redacted: bool = False


def tool_use(name: str, input: dict[str, Any], *, id: str | None = None, text: str | None = None):
    """A ToolUse reply with a single call."""
    return ToolUse((ToolCall(name, input, id),), text)


@dataclass(frozen=True)
class HttpError:
    """An HTTP error reply with the vendor's real error body (unless `body` overrides it)."""

    status: int
    message: str | None = None  # default: a vendor-like message for the status
    type: str | None = None  # default: the vendor's error type for the status
    code: str | None = None  # OpenAI `error.code`; Anthropic `error.details.error_code`
    param: str | None = None  # OpenAI `error.param` (the Anthropic fake ignores it)
    retry_after: float | None = None  # seconds; a 429 sends 1 unless given or no_retry_after
    no_retry_after: bool = False
    headers: dict[str, str] = field(default_factory=dict)  # e.g. {"x-should-retry": "false"}
    body: dict[str, Any] | bytes | None = None  # sent as-is when given


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


def openai_quota(code: str = "insufficient_quota") -> HttpError:
    """OpenAI's billing 429: type insufficient_quota and a code naming the cause
    (help.openai.com/en/articles/5955604; the body as quoted in NVIDIA-NeMo/Guardrails#371)."""
    message = (
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors."
    )
    return HttpError(429, message, type="insufficient_quota", code=code, no_retry_after=True)


Reply = str | Text | ToolUse | HttpError | Callable[[dict[str, Any]], Any]


@dataclass
class RecordedRequest:
    """One request as received. `json` is None when the body was not JSON."""

    vendor: str  # "anthropic" or "openai"
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    json: dict[str, Any] | None
    status: int = 0  # what the fake answered

    @property
    def messages(self) -> list[dict[str, Any]]:
        return (self.json or {}).get("messages") or []

    @property
    def system(self) -> str | None:
        """System prompt text: Anthropic's top-level `system`, or OpenAI system/developer turns."""
        if self.vendor == "anthropic":
            parts = [(self.json or {}).get("system")]
        else:
            parts = [m.get("content") for m in self.messages if m.get("role") in _SYSTEM_ROLES]
        parts = [p for p in parts if p is not None]
        return "\n".join(_as_text(p) for p in parts) if parts else None

    @property
    def tool_names(self) -> list[str]:
        tools = (self.json or {}).get("tools") or []
        if self.vendor == "anthropic":
            return [t.get("name") for t in tools]
        return [t.get("function", {}).get("name") for t in tools]


def tool_results(request_json: dict[str, Any]) -> dict[str, str]:
    """The tool results a request ends with, as {tool call id: text}, for either vendor."""
    messages = request_json.get("messages") or []
    if messages and messages[-1].get("role") == "user":  # Anthropic: blocks of the last turn
        blocks = [b for b in _blocks(messages[-1].get("content")) if b.get("type") == "tool_result"]
        return {b.get("tool_use_id"): _as_text(b.get("content", "")) for b in blocks}
    trailing: list[dict[str, Any]] = []  # OpenAI: the role=tool messages at the end
    while len(trailing) < len(messages) and messages[-1 - len(trailing)].get("role") == "tool":
        trailing.insert(0, messages[-1 - len(trailing)])
    return {m.get("tool_call_id"): _as_text(m.get("content", "")) for m in trailing}


class _FakeServer:
    """HTTP server thread, reply script and request log. A vendor subclass sets the class
    attributes and implements `validate(record)`, `render(reply, json)`, `error_body(err, id)`;
    `side_endpoint(record)` may answer paths other than `endpoint` (they take no reply)."""

    vendor = endpoint = request_id_header = ""
    other_endpoints: tuple[str, ...] = ()  # further paths that take scripted replies
    known_params: frozenset[str] = frozenset()
    streams = False  # serves `stream: true` (as server-sent events, see `encode`)

    def __init__(self, *, extra_params: Iterable[str] = ()) -> None:
        # Vendors reject unknown top-level fields; extra_params allows more (e.g. a
        # compatible server taking `top_k`).
        self.allowed_params = self.known_params | frozenset(extra_params)
        self.requests: list[RecordedRequest] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self):
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        # A short poll interval keeps stop(), so each test's teardown, fast.
        serve, poll = self._server.serve_forever, {"poll_interval": 0.02}
        threading.Thread(target=serve, kwargs=poll, daemon=True).start()
        return self

    def stop(self, *_exc_info: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    __enter__, __exit__ = start, stop

    @property
    def url(self) -> str:
        assert self._server is not None, "fake server is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def script(self, replies: Iterable[Reply]):
        """Queue replies; each request consumes the next one."""
        with self._lock:
            self._script.extend(replies)
        return self

    @property
    def pending(self) -> list[Reply]:
        """Replies not consumed yet; assert it is empty to catch calls that never happened."""
        with self._lock:
            return list(self._script)

    def side_endpoint(self, record: RecordedRequest) -> tuple[int, dict, bytes] | None:
        return None

    def handle(self, record: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        side = self.side_endpoint(record)
        if side is not None:
            return side
        with self._lock:  # one lock so concurrent requests take replies in arrival order
            self.requests.append(record)
            try:
                problem = self._check_basics(record) or self.validate(record)
            except Exception as exc:  # noqa: BLE001 -- a shape our checks did not foresee
                problem = HttpError(400, f"fake: malformed request ({exc!r})")
            reply = self._script.popleft() if problem is None and self._script else None
        if problem is None and reply is None:
            problem = HttpError(500, f"{NO_REPLY_LEFT} (request #{len(self.requests)})")
        try:
            while callable(reply):
                reply = reply(record.json or {})
            if problem is None and not isinstance(reply, HttpError):
                text = Text(reply) if isinstance(reply, str) else reply
                body = self.render(text, record.json or {})
        except Exception as exc:  # noqa: BLE001 -- surface the test's bug through the SDK
            problem = HttpError(500, f"fake: reply callable raised {exc!r}")
        if problem is not None:  # final: x-should-retry stops SDK retries from hiding it
            return self._error(problem, {"x-should-retry": "false"})
        if isinstance(reply, HttpError):
            return self._error(reply, {})
        headers, raw = self.encode(body, record.json or {})
        return 200, {self.request_id_header: _new_id("req_", 24), **headers}, raw

    def encode(self, body: dict[str, Any], request: dict[str, Any]) -> tuple[dict, bytes]:
        return {}, json.dumps(body).encode()

    def _check_basics(self, record: RecordedRequest) -> HttpError | None:
        path = record.path.split("?")[0]
        if record.method != "POST" or path not in (self.endpoint, *self.other_endpoints):
            return HttpError(404, f"Not found: {record.method} {record.path}")
        if not isinstance(record.json, dict):
            return HttpError(400, "fake: the request body is not a JSON object")
        if record.json.get("stream") and not self.streams:
            return HttpError(400, "fake: streaming is not supported", param="stream")
        return None

    def _error(self, err: HttpError, headers: dict[str, str]):
        request_id = headers[self.request_id_header] = _new_id("req_", 24)
        retry_after = 1 if err.retry_after is None and err.status == 429 else err.retry_after
        if retry_after is not None and not err.no_retry_after:
            headers["retry-after"] = f"{retry_after:g}"
        headers.update(err.headers)
        if isinstance(err.body, bytes):
            return err.status, headers, err.body
        body = err.body if err.body is not None else self.error_body(err, request_id)
        return err.status, headers, json.dumps(body).encode()


class _Handler(BaseHTTPRequestHandler):
    fake: _FakeServer

    def _serve(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = RecordedRequest(self.fake.vendor, self.command, self.path, headers, raw, parsed)
        status, reply_headers, body = self.fake.handle(record)
        record.status = status
        self.send_response(status)
        content_type = reply_headers.pop("content-type", "application/json")
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in reply_headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (the timeout tests): nothing left to answer

    do_POST = do_GET = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean


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


# -- OpenAI-compatible -------------------------------------------------------------------------
OPENAI_REASONING = re.compile(r"o\d|gpt-[5-9]")
RESPONSES = "/v1/responses"
FLAVOURS = ("openai", "ollama", "vllm", "lmstudio")


class FakeOpenAI(_FakeServer):
    """`POST /v1/chat/completions`. Client: `openai.OpenAI(base_url=fake.url + "/v1", ...)`.
    Answers a single choice whatever `n` asks for.

    `flavour` picks whose wording errors use; `models` (None: any name) are the models served;
    `tools=False` is a server that cannot take tools (vLLM without a tool-call parser, an Ollama
    model without the tools capability); `context_window` is the prompt size in tokens the
    loaded model takes."""

    vendor, endpoint, request_id_header = "openai", "/v1/chat/completions", "x-request-id"
    other_endpoints = (RESPONSES,)  # OpenAI's Responses API (tests/fakes/openai_responses.py)
    known_params = frozenset(
        "audio frequency_penalty function_call functions logit_bias logprobs max_completion_tokens"
        " max_tokens messages metadata modalities model moderation n parallel_tool_calls"
        " prediction presence_penalty prompt_cache_key prompt_cache_options"
        " prompt_cache_retention reasoning_effort response_format safety_identifier seed"
        " service_tier stop store stream stream_options temperature tool_choice tools"
        " top_logprobs top_p user verbosity web_search_options".split()
    )
    ERRORS = {  # status: (type, code, message)
        401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
        429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
        500: ("server_error", None, "The server had an error while processing your request."),
        503: ("server_error", None, "The server is overloaded or not ready yet."),
    }

    def __init__(
        self,
        *,
        extra_params: Iterable[str] = (),
        flavour: str = "openai",
        models: Iterable[str] | None = None,
        tools: bool = True,
        context_window: int | None = None,
    ) -> None:
        super().__init__(extra_params=extra_params)
        if flavour not in FLAVOURS or (not tools and flavour not in ("vllm", "ollama")):
            raise ValueError(f"unsupported fake setup: flavour={flavour!r}, tools={tools}")
        self.flavour = flavour
        self.models = None if models is None else frozenset(models)
        self.responses = openai_responses.Ledger()  # reasoning items handed out
        self.tools = tools
        self.context_window = context_window

    def error_body(self, err: HttpError, request_id: str) -> dict[str, Any]:
        fallback = self.ERRORS[500] if err.status >= 500 else ("invalid_request_error", None, "")
        type_, code, message = self.ERRORS.get(err.status, fallback)
        error = {"message": err.message or message, "type": err.type or type_}
        return {"error": error | {"param": err.param, "code": err.code or code}}

    def validate(self, record: RecordedRequest) -> HttpError | None:
        if not record.headers.get("authorization", "").startswith("Bearer "):
            error = {"message": "You didn't provide an API key.", "type": "invalid_request_error"}
            return HttpError(401, body={"error": error | {"param": None, "code": None}})
        body = record.json or {}
        if record.path.split("?")[0] == RESPONSES:
            found = self.responses.problem(body)
            return (
                HttpError(400, found[0], param=found[1])
                if found
                else self._model_problem(str(body["model"]))
            )
        return (
            _openai_problem(body, self.allowed_params)
            or self._model_problem(str(body["model"]))
            or (_reasoning_problem(body) if self.flavour == "openai" else None)
            or self._tools_problem(body)
            or self._window_problem(body)
        )

    def _model_problem(self, model: str) -> HttpError | None:
        if self.models is None or model in self.models:
            return None
        if self.flavour == "ollama":  # netease-youdao/QAnything#555
            message = f'model "{model}" not found, try pulling it first'
            return HttpError(404, message, type="api_error")
        if self.flavour == "vllm":  # vLLM's flat error body, as in FoundationAgents/OpenManus#331
            message = f"The model `{model}` does not exist."
            return HttpError(404, body=_vllm_error(message, "NotFoundError", 404))
        message = f"The model `{model}` does not exist or you do not have access to it."
        return HttpError(404, message, code="model_not_found")

    def _tools_problem(self, body: dict[str, Any]) -> HttpError | None:
        if self.tools or not body.get("tools"):
            return None
        if self.flavour == "vllm":  # vllm-project/vllm#9986, FoundationAgents/OpenManus#331
            message = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
            return HttpError(400, body=_vllm_error(message, "BadRequestError", 400))
        # ollama/ollama#14795, louisho5/picobot#6
        message = f"registry.ollama.ai/library/{body['model']} does not support tools"
        return HttpError(400, message, type="api_error")

    def _window_problem(self, body: dict[str, Any]) -> HttpError | None:
        prompt = _tokens([body.get("messages"), body.get("tools")])
        window = self.context_window
        if window is None or prompt <= window or self.flavour == "ollama":
            return None  # Ollama truncates the prompt silently instead (see render)
        if self.flavour == "lmstudio":  # Gitlawb/openclaude#353
            text = f"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: {prompt}>= n_ctx: {window}). Try to load the model with a larger context length, or provide a shorter input."
            return HttpError(400, body={"error": text})
        if self.flavour == "vllm":  # ruipeterpan/specreason#4
            wanted = body.get("max_tokens") or 0
            text = f"This model's maximum context length is {window} tokens. However, you requested {prompt + wanted} tokens ({prompt} in the messages, {wanted} in the completion). Please reduce the length of the messages or completion."
            return HttpError(400, body=_vllm_error(text, "BadRequestError", 400))
        # crewAIInc/crewAI-examples#121
        text = f"This model's maximum context length is {window} tokens. However, your messages resulted in {prompt} tokens. Please reduce the length of the messages."
        return HttpError(400, text, param="messages", code="context_length_exceeded")

    def render(self, reply: Text | ToolUse, request: dict[str, Any]) -> dict[str, Any]:
        if "input" in request and "messages" not in request:  # a Responses API request
            return self.responses.render(reply, request, _tokens)
        message: dict[str, Any] = {"role": "assistant", "refusal": None, "annotations": []}
        if isinstance(reply, Text):
            reply = _clip(reply, request.get("max_completion_tokens", request.get("max_tokens")))
            finish_reason = reply.stop or ("length" if reply.truncated else "stop")
            message["content"], output = reply.text, reply.text
            if finish_reason == "refusal":  # structured outputs: the refusal, no content
                message["content"], message["refusal"], finish_reason = None, reply.text, "stop"
            if finish_reason not in ("stop", "length", "content_filter"):
                raise ValueError(f"{finish_reason!r} is not a finish reason for a text reply")
        else:
            message["content"] = reply.text  # null when the model only calls tools
            message["tool_calls"] = [
                {
                    "id": c.id or _new_id("call_", 24),
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.input)},
                }
                for c in reply.calls
            ]
            finish_reason, output = "tool_calls", message
        prompt = _tokens([request.get("messages"), request.get("tools")])
        if self.flavour == "ollama" and self.context_window:
            # "truncating input prompt" limit=2048 prompt=17624 (ollama/ollama#7907): the
            # server keeps the window's worth and says nothing to the client.
            prompt = min(prompt, self.context_window)
        usage = {"prompt_tokens": prompt, "completion_tokens": _tokens(output)}
        usage["total_tokens"] = prompt + usage["completion_tokens"]
        usage["prompt_tokens_details"] = {"cached_tokens": 0, "audio_tokens": 0}
        usage["completion_tokens_details"] = {"reasoning_tokens": 0, "audio_tokens": 0}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        return {
            "id": _new_id("chatcmpl-", 29),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model"),
            "choices": [choice],
            "usage": usage,
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }


def _vllm_error(message: str, type_: str, code: int) -> dict[str, Any]:
    return {"object": "error", "message": message, "type": type_, "param": None, "code": code}


# Function tools on Chat Completions: the gpt-5.6 family and later refuse them with any
# reasoning effort but "none", their default included (laurent22/joplin#16451: "Joplin never
# sends reasoning_effort"; GEMISIS/leviath#333, GoogleChromeLabs/webmcp-tools#417); gpt-5.2 and
# 5.4 refuse them with an explicit reasoning_effort (pipecat-ai/pipecat#4043, livekit/agents#5088).
TOOLS_NEED_RESPONSES = re.compile(r"gpt-(5\.([6-9]|\d\d)|[6-9])")
TOOLS_WITHOUT_EFFORT = re.compile(r"gpt-5\.[2-5]")


def _chat_tools_problem(body: dict[str, Any]) -> HttpError | None:
    model, effort = str(body.get("model")), body.get("reasoning_effort")
    if not body.get("tools") or effort == "none":
        return None
    if TOOLS_NEED_RESPONSES.match(model):
        message = f"Function tools with reasoning_effort are not supported for {model} in /v1/chat/completions. To use function tools, use /v1/responses or set reasoning_effort to 'none'."
        return HttpError(400, message, param="reasoning_effort")
    if TOOLS_WITHOUT_EFFORT.match(model) and effort is not None:
        message = f"Function tools with reasoning_effort are not supported for {model} in /v1/chat/completions. Please use /v1/responses instead."
        return HttpError(400, message, param="reasoning_effort")
    return None


def _reasoning_problem(body: dict[str, Any]) -> HttpError | None:
    """OpenAI's reasoning models refuse sampling parameters and `max_tokens`
    (BeehiveInnovations/pal-mcp-server#78, npiv/chatblade#100, griptape-ai/ComfyUI-Griptape#312)
    and, the newer ones, function tools on this endpoint (`_chat_tools_problem`)."""
    if not OPENAI_REASONING.match(str(body.get("model"))):
        return None
    tools = _chat_tools_problem(body)
    if tools is not None:
        return tools
    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        message = f"Unsupported value: 'temperature' does not support {temperature} with this model. Only the default (1) value is supported."
        return HttpError(400, message, param="temperature", code="unsupported_value")
    for key, hint in (("top_p", ""), ("max_tokens", " Use 'max_completion_tokens' instead.")):
        if key in body:
            message = f"Unsupported parameter: '{key}' is not supported with this model.{hint}"
            return HttpError(400, message, param=key, code="unsupported_parameter")
    return None


def _openai_problem(body: dict[str, Any], allowed: frozenset[str]) -> HttpError | None:
    """The first thing the real API would reject, worded like its 400 errors."""
    if "model" not in body:
        return HttpError(400, "you must provide a model parameter")
    if "messages" not in body:
        message, code = "Missing required parameter: 'messages'.", "missing_required_parameter"
        return HttpError(400, message, param="messages", code=code)
    unknown = next((key for key in body if key not in allowed), None)
    if unknown:
        return HttpError(400, f"Unrecognized request argument supplied: {unknown}")
    for key, high in (("temperature", 2), ("top_p", 1)):
        if not _in_range(body.get(key), 0, high):
            message = f"Invalid '{key}': expected a number between 0 and {high}."
            return HttpError(400, message, param=key, code="invalid_value")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        message = "Invalid 'messages': empty array. Expected an array with minimum length 1."
        return HttpError(400, message, param="messages", code="empty_array")
    asked: dict[str, int] = {}  # unanswered tool_call id -> index of its assistant message
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in (*_SYSTEM_ROLES, "user", "assistant", "tool", "function"):
            param = f"messages[{i}].role"
            return HttpError(400, f"Invalid value: '{role}'.", param=param, code="invalid_value")
        if role == "tool":
            if asked.pop(message.get("tool_call_id"), None) is None:  # [sic] "preceeding"
                text = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
                return HttpError(400, text, param=f"messages.[{i}].role")
            continue
        if asked:
            break
        tool_calls = (message.get("tool_calls") or []) if role == "assistant" else []
        asked = {call.get("id"): i for call in tool_calls}
    if asked:  # also catches a conversation ending on unanswered tool calls
        text = f"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(asked)}"
        return HttpError(400, text, param=f"messages.[{min(asked.values())}].role")
    return None


_SYSTEM_ROLES = ("system", "developer")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")


def _new_id(prefix: str, length: int) -> str:
    return prefix + (uuid.uuid4().hex + uuid.uuid4().hex)[:length]


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _as_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in _blocks(content))


def _tokens(data: Any) -> int:
    """A plausible token count: about four bytes per token, never zero."""
    raw = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return max(1, math.ceil(len(raw.encode()) / 4))


def _clip(reply: Text, max_tokens: Any) -> Text:
    # A real model stops at max_tokens, so a scripted text longer than that is cut short.
    if isinstance(max_tokens, int) and _tokens(reply.text) > max_tokens:
        return Text(reply.text[: max_tokens * 4], truncated=True)
    return reply


def _in_range(value: Any, low: float, high: float) -> bool:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return value is None or (number and low <= value <= high)
