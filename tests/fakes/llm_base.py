"""The shared half of the LLM API fakes: the HTTP server, reply script and request log, the
reply types tests script (``Text``, ``ToolUse``, ``HttpError``) and small helpers. The vendors'
servers are ``claude_api.FakeAnthropic`` and ``openai_api.FakeOpenAI``; tests import all of it
from ``tests.fakes.llm_api``.
"""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes import ports

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
    # A refusal by the fake's checks goes out with x-should-retry: false, so no retry hides it;
    # True: sent as the real server sends it (llama-cpp-python's 500 for a request it refuses).
    as_real: bool = False


@dataclass(frozen=True)
class StreamFault:
    """A streamed reply that starts with HTTP 200 and goes wrong after ``after`` of its events.

    Sources: Anthropic's streaming page ("Error events": "we may occasionally send errors in
    the event stream. For example, during periods of high usage, you may receive an
    ``overloaded_error``, which would normally correspond to an HTTP 529 in a non-streaming
    context"; "Ping events": "Event streams may also include any number of ping events") and
    its errors page ("When receiving a streaming response via SSE, it's possible that an error
    can occur after returning a 200 response"). ``fault``:

    * ``"error"``: an ``event: error`` with ``error_type``/``message``, then the stream ends;
    * ``"drop"``: the connection is closed in the middle of the chunked body (a proxy or load
      balancer cutting a long stream), so the client reads an incomplete body;
    * ``"stall"``: nothing more is sent, no ping either, until the client gives up (or
      ``stall_s`` passes).

    ``pings`` ping events, ``ping_every`` seconds apart, come before the reply's events: a slow
    stream that is alive."""

    reply: str | Text | ToolUse
    fault: str | None = None  # None: the whole stream, after its pings
    after: int = 3
    error_type: str = "overloaded_error"
    message: str = "Overloaded"
    pings: int = 0
    ping_every: float = 0.0
    stall_s: float = 30.0


@dataclass
class Streamed:
    """What the handler writes for a StreamFault: SSE events as chunks, then the fault."""

    events: list[bytes]
    fault: StreamFault


Reply = str | Text | ToolUse | HttpError | StreamFault | Callable[[dict[str, Any]], Any]


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
    usage: dict[str, Any] | None = None  # the usage its answer reported, when it answered

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
        self.stopping = threading.Event()  # ends a stalled stream at teardown

    def start(self):
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ports.listen(type(self).__name__, handler)
        # A short poll interval keeps stop(), so each test's teardown, fast.
        serve, poll = self._server.serve_forever, {"poll_interval": 0.02}
        threading.Thread(target=serve, kwargs=poll, daemon=True).start()
        return self

    def stop(self, *_exc_info: object) -> None:
        self.stopping.set()
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

    def stream_error(self, fault: StreamFault) -> bytes:
        """The SSE event of an error inside a stream (vendors that stream define it)."""
        raise NotImplementedError(f"{self.vendor}: no error events in streams")

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
        fault = reply if isinstance(reply, StreamFault) else None
        if fault is not None:
            reply = fault.reply
            if not (record.json or {}).get("stream"):
                problem = HttpError(
                    500, "fake: a StreamFault was scripted for a request that does not stream"
                )
        try:
            while callable(reply):
                reply = reply(record.json or {})
            if problem is None and not isinstance(reply, HttpError):
                text = Text(reply) if isinstance(reply, str) else reply
                body = self.render(text, record.json or {})
                record.usage = body.get("usage")
        except Exception as exc:  # noqa: BLE001 -- surface the test's bug through the SDK
            problem = HttpError(500, f"fake: reply callable raised {exc!r}")
        if problem is not None:  # final: x-should-retry stops SDK retries from hiding it
            return self._error(problem, {} if problem.as_real else {"x-should-retry": "false"})
        if isinstance(reply, HttpError):
            return self._error(reply, {})
        headers, raw = self.encode(body, record.json or {})
        headers = {self.request_id_header: _new_id("req_", 24), **headers}
        if fault is not None:
            return 200, headers, Streamed(self.sse_events(raw, fault), fault)
        return 200, headers, raw

    def sse_events(self, raw: bytes, fault: StreamFault) -> list[bytes]:
        """The stream's events, cut at the fault (the vendor subclass adds the error event)."""
        events = [event + b"\n\n" for event in raw.split(b"\n\n") if event]
        return events if fault.fault is None else events[: fault.after]

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
        if isinstance(body, Streamed):
            self._stream(reply_headers, body)
            return
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

    def _stream(self, headers: dict[str, str], streamed: Streamed) -> None:
        """Server-sent events in HTTP/1.1 chunks, so a cut stream is an incomplete body."""
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        fault = streamed.fault
        ping = b'event: ping\ndata: {"type": "ping"}\n\n'
        try:
            for _ in range(fault.pings):
                self._chunk(ping)
                if self.fake.stopping.wait(fault.ping_every):
                    return
            for event in streamed.events:
                self._chunk(event)
            if fault.fault == "error":
                self._chunk(self.fake.stream_error(fault))
            elif fault.fault == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            elif fault.fault == "stall":
                self.fake.stopping.wait(fault.stall_s)
                return
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up on the stream

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    do_POST = do_GET = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean


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
