"""Real-HTTP fakes of the Anthropic Messages API and an OpenAI-compatible chat completions API.

Tests drive our code through the official SDKs (request building, response parsing, error
classes, retry headers) with no network and no patching of SDK internals. Replies are consumed
in order, one per request; a reply may be a callable taking the request's JSON body. Requests
are checked like the vendor checks the basics, so a malformed request fails with its 400.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NO_REPLY_LEFT = "fake: no scripted reply left"


@dataclass(frozen=True)
class Text:
    """An assistant text reply: any string (valid JSON, fenced JSON, prose, truncated JSON)."""

    text: str
    truncated: bool = False  # stop as if max_tokens was hit: "max_tokens" / "length"


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


def tool_use(name: str, input: dict[str, Any], *, id: str | None = None, text: str | None = None):
    """A ToolUse reply with a single call."""
    return ToolUse((ToolCall(name, input, id),), text)


@dataclass(frozen=True)
class HttpError:
    """An HTTP error reply with the vendor's real error body (unless `body` overrides it)."""

    status: int
    message: str | None = None  # default: a vendor-like message for the status
    type: str | None = None  # default: the vendor's error type for the status
    code: str | None = None  # OpenAI `error.code` (the Anthropic fake ignores it)
    param: str | None = None  # OpenAI `error.param` (the Anthropic fake ignores it)
    retry_after: float | None = None  # seconds; a 429 sends 1 unless given
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | bytes | None = None  # sent as-is when given


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
    attributes and implements `validate(record)`, `render(reply, json)`, `error_body(err, id)`."""

    vendor = endpoint = request_id_header = ""
    known_params: frozenset[str] = frozenset()

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

    def handle(self, record: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
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
        except Exception as exc:  # noqa: BLE001 -- surface the test's bug through the SDK
            problem = HttpError(500, f"fake: reply callable raised {exc!r}")
        if problem is not None:  # final: x-should-retry stops SDK retries from hiding it
            return self._error(problem, {"x-should-retry": "false"})
        if isinstance(reply, HttpError):
            return self._error(reply, {})
        body = self.render(Text(reply) if isinstance(reply, str) else reply, record.json or {})
        return 200, {self.request_id_header: _new_id("req_", 24)}, json.dumps(body).encode()

    def _check_basics(self, record: RecordedRequest) -> HttpError | None:
        if record.method != "POST" or record.path.split("?")[0] != self.endpoint:
            return HttpError(404, f"Not found: {record.method} {record.path}")
        if not isinstance(record.json, dict):
            return HttpError(400, "fake: the request body is not a JSON object")
        if record.json.get("stream"):
            return HttpError(400, "fake: streaming is not supported", param="stream")
        return None

    def _error(self, err: HttpError, headers: dict[str, str]):
        request_id = headers[self.request_id_header] = _new_id("req_", 24)
        retry_after = 1 if err.retry_after is None and err.status == 429 else err.retry_after
        if retry_after is not None:
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
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for name, value in reply_headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean


class FakeAnthropic(_FakeServer):
    """`POST /v1/messages`. Client: `anthropic.Anthropic(base_url=fake.url, api_key=...)`."""

    vendor, endpoint, request_id_header = "anthropic", "/v1/messages", "request-id"
    # The SDK's typed parameters, plus the sampling ones SDK 1.x+ only sends via extra_body.
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

    def error_body(self, err: HttpError, request_id: str) -> dict[str, Any]:
        default = "api_error" if err.status >= 500 else "invalid_request_error"
        error = {
            "type": err.type or self.ERROR_TYPES.get(err.status, default),
            "message": err.message or self.MESSAGES.get(err.status, "Internal server error"),
        }
        return {"type": "error", "error": error, "request_id": request_id}

    def validate(self, record: RecordedRequest) -> HttpError | None:
        # The SDK sends the key as `Authorization: Bearer`, the API also takes `x-api-key`.
        if "x-api-key" not in record.headers and "authorization" not in record.headers:
            return HttpError(401, "x-api-key header is required")
        if "anthropic-version" not in record.headers:
            return HttpError(400, "anthropic-version: header is required")
        problem = _anthropic_problem(record.json or {}, self.allowed_params)
        return HttpError(400, problem) if problem else None

    def render(self, reply: Text | ToolUse, request: dict[str, Any]) -> dict[str, Any]:
        if isinstance(reply, Text):
            reply = _clip(reply, request.get("max_tokens"))
            content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}]
            stop_reason = "max_tokens" if reply.truncated else "end_turn"
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
        prompt = [request.get(key) for key in ("system", "messages", "tools")]
        usage = {"input_tokens": _tokens(prompt), "output_tokens": _tokens(content)}
        usage |= {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        return {
            "id": _new_id("msg_01", 22),
            "type": "message",
            "role": "assistant",
            "model": request.get("model"),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage | {"service_tier": "standard"},
        }


def _anthropic_problem(body: dict[str, Any], allowed: frozenset[str]) -> str | None:
    """The first thing the real API would reject, worded like its 400 messages."""
    missing = [key for key in ("model", "max_tokens", "messages") if key not in body]
    unknown = [key for key in body if key not in allowed]
    if missing:
        return f"{missing[0]}: Field required"
    if unknown:
        return f"{unknown[0]}: Extra inputs are not permitted"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 0:
        return "max_tokens: Input should be a valid integer greater than or equal to 0"
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


class FakeOpenAI(_FakeServer):
    """`POST /v1/chat/completions`. Client: `openai.OpenAI(base_url=fake.url + "/v1", ...)`.
    Answers a single choice whatever `n` asks for."""

    vendor, endpoint, request_id_header = "openai", "/v1/chat/completions", "x-request-id"
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

    def error_body(self, err: HttpError, request_id: str) -> dict[str, Any]:
        fallback = self.ERRORS[500] if err.status >= 500 else ("invalid_request_error", None, "")
        type_, code, message = self.ERRORS.get(err.status, fallback)
        error = {"message": err.message or message, "type": err.type or type_}
        return {"error": error | {"param": err.param, "code": err.code or code}}

    def validate(self, record: RecordedRequest) -> HttpError | None:
        if not record.headers.get("authorization", "").startswith("Bearer "):
            error = {"message": "You didn't provide an API key.", "type": "invalid_request_error"}
            return HttpError(401, body={"error": error | {"param": None, "code": None}})
        return _openai_problem(record.json or {}, self.allowed_params)

    def render(self, reply: Text | ToolUse, request: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "refusal": None, "annotations": []}
        if isinstance(reply, Text):
            reply = _clip(reply, request.get("max_completion_tokens", request.get("max_tokens")))
            message["content"] = reply.text
            finish_reason, output = ("length" if reply.truncated else "stop"), reply.text
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
