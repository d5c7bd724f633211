"""The sandbox's only route out: an allow-listing HTTP forward proxy on a Unix socket.

The worker runs one per execution and binds its socket into the sandbox, whose network
namespace has nothing but loopback. It lets through the target's origin and the hosts the
repository allow-lists, nothing else:

- ``CONNECT host:port`` (HTTPS) and absolute-form requests (``GET http://host/…``) only;
- each name is resolved once per execution and every connection goes to that address, so a
  name cannot be rebound to another address mid-run;
- loopback, link-local, private and unique-local addresses are refused unless the allow-list
  names the host (``repositories.targets``);
- a redirect to another origin is a new request to that origin, refused like any other.

Every refusal answers 403 with the reason and is recorded in ``blocked`` (``host:port``), which
the report lists. Every request to the target's origin is logged (``Policy.requests``: when,
method, path, and whether any answer came back), so an app that stops answering mid-run is named
by the request it stopped at (``Policy.stopped_answering``). The proxy cannot be flooded: one thread and event loop per box, a cap on open
connections per box and in all, short timeouts (``ProxyServer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from repositories import targets
from repositories.secrets import scrub

MAX_HEAD = 64 * 1024
HEAD_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
DNS_THREADS = 2
BUSY = "too many open connections through the proxy (the connection cap)"
NO_HEAD = f"no request within {HEAD_TIMEOUT_S:.0f} s"
NOT_ALLOWED = "{host}:{port} is not the target origin nor an allowed host"
UNRESOLVED = "{host} does not resolve"
BAD_REQUEST = "the proxy takes CONNECT host:port and absolute http:// requests only"
_HOP = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}
MAX_LOGGED = 2000  # requests to the origin kept per session (the latest)
MAX_LOGGED_PATH = 300
STOPPED = (
    "the app stopped answering after {last} (the last request it answered; no answer to the "
    "{count} request(s) after it, the first {first})"
)


@dataclass
class Request:
    """One request to the target's origin through the proxy (plain http: one per connection,
    the proxy closes each after its answer)."""

    at: float  # time.time() when its head arrived
    method: str
    path: str
    answered: bool = False  # the app sent at least one byte back

    @property
    def shown(self) -> str:
        return scrub(f"{self.method} {self.path}")  # a token in a query string stays out


class Blocked(Exception):
    pass


class Policy:
    """Which host:port a test may reach, and the one address each name is pinned to."""

    def __init__(self, target_url: str, allow_hosts: list[str]) -> None:
        _scheme, host, port = targets.origin(target_url)
        self.origin = (host, port)
        self.allow_hosts = list(allow_hosts)
        self._pinned: dict[tuple[str, int], str] = {}
        self._lock = threading.Lock()
        self.blocked: list[str] = []
        self.requests: deque[Request] = deque(maxlen=MAX_LOGGED)

    def log(self, method: str, host: str, port: int, path: str) -> Request | None:
        """The request logged when it goes to the target's origin (None otherwise)."""
        if (host.lower().rstrip(".").strip("[]"), port) != self.origin or method == "CONNECT":
            return None
        request = Request(time.time(), method[:16], path[:MAX_LOGGED_PATH])
        self.requests.append(request)
        return request

    def crash_cause(self, moment: float) -> Request | None:
        """The request the app most likely ended on, when it ended at ``moment`` (a
        time.time()): the first to go unanswered after the last one it answered, since the
        requests after that met an app already dying (its end is noticed late on a busy
        machine); else the last to arrive before ``moment``."""
        requests = [r for r in list(self.requests) if r.at <= moment]  # a copy: see log()
        answered = max((i for i, r in enumerate(requests) if r.answered), default=-1)
        unanswered = requests[answered + 1 :]
        return unanswered[0] if unanswered else (requests[-1] if requests else None)

    def stopped_answering(self) -> str:
        """When the origin answered, then answered nothing from some request on (to the end):
        the last request it answered (a crash's cause, or the one just before it) and the
        first it did not; else ""."""
        requests = list(self.requests)
        answered = [i for i, r in enumerate(requests) if r.answered]
        if not answered or answered[-1] == len(requests) - 1:
            return ""
        last = answered[-1]
        return STOPPED.format(
            last=requests[last].shown,
            count=len(requests) - last - 1,
            first=requests[last + 1].shown,
        )

    def address(self, host: str, port: int) -> str:
        """The address to connect to for ``host:port``; Blocked (recorded) when refused."""
        host = host.lower().rstrip(".").strip("[]")
        try:
            return self._address(host, port)
        except Blocked as exc:
            with self._lock:
                entry = f"{host}:{port}"
                if entry not in self.blocked:
                    self.blocked.append(entry)
            raise Blocked(f"blocked: {host}:{port} ({exc})") from None

    def _address(self, host: str, port: int) -> str:
        if (host, port) != self.origin and not targets.allows(self.allow_hosts, host, port):
            raise Blocked(NOT_ALLOWED.format(host=host, port=port))
        with self._lock:
            pinned = self._pinned.get((host, port))
        if pinned is None:
            try:
                addresses = targets.resolve(host, port)
            except (OSError, UnicodeError):
                raise Blocked(UNRESOLVED.format(host=host)) from None
            if reason := targets.blocked_reason(host, port, addresses, self.allow_hosts):
                raise Blocked(reason)
            with self._lock:
                pinned = self._pinned.setdefault((host, port), addresses[0])
        return pinned


def _target(method: str, uri: str) -> tuple[str, int, str]:
    """(host, port, origin-form path) of a proxy request; Blocked when not a proxy request."""
    if method == "CONNECT":
        host, _, port = uri.rpartition(":")
        if not host or not port.isdigit():
            raise Blocked(BAD_REQUEST)
        return host.strip("[]"), int(port), ""
    parts = urlsplit(uri)
    if parts.scheme != "http" or not parts.hostname:
        raise Blocked(BAD_REQUEST)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, path


class ProxyServer:
    """One box's proxy: an asyncio server on ``path`` in a thread of its own. Connections are
    bounded per box and across every proxy of this worker (over either cap, 503 at once); each
    must send its request head within HEAD_TIMEOUT_S and ends after ``idle_timeout_s`` of silence
    both ways; name resolution runs in a pool of DNS_THREADS threads."""

    def __init__(self, path: Path, policy: Policy) -> None:
        self.path = path
        self.policy = policy
        self.max_connections = settings.AMTP_PROXY_MAX_CONNECTIONS
        self.idle_timeout_s = settings.AMTP_PROXY_IDLE_TIMEOUT_S
        self.open = 0
        self.peak_open = 0
        self.refused_busy = 0  # connections turned away at a cap
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(ThreadPoolExecutor(DNS_THREADS, "amtp-proxy-dns"))
        self._server = self.loop.run_until_complete(
            asyncio.start_unix_server(self._serve, path=str(path), limit=MAX_HEAD)
        )
        path.chmod(0o600)  # connect() needs write access: its owner only (Box.hand_over)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self._admit():
            self.refused_busy += 1
            await _refuse(writer, BUSY, status=b"503 Service Unavailable")
            return
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:  # the box ended (close): end quietly, not as an error
            pass
        finally:
            self._release()
            writer.close()

    def _admit(self) -> bool:
        global _open_in_all
        with _open_lock:
            limit = settings.AMTP_PROXY_MAX_CONNECTIONS_TOTAL
            if self.open >= self.max_connections or _open_in_all >= limit:
                return False
            self.open += 1
            self.peak_open = max(self.peak_open, self.open)
            _open_in_all += 1
            return True

    def _release(self) -> None:
        global _open_in_all
        with _open_lock:
            self.open -= 1
            _open_in_all -= 1

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
            except (asyncio.LimitOverrunError, asyncio.IncompleteReadError):
                raise Blocked(BAD_REQUEST) from None
            except TimeoutError:
                await _refuse(writer, NO_HEAD, status=b"408 Request Timeout")
                return
            lines = head[:-4].decode("latin-1").split("\r\n")
            method, uri, version = (lines[0].split(" ") + ["", ""])[:3]
            host, port, path = _target(method, uri)
            address = await self.loop.run_in_executor(None, self.policy.address, host, port)
            request = self.policy.log(method, host, port, path)
            connecting = asyncio.open_connection(address, port)
            up_reader, up_writer = await asyncio.wait_for(connecting, CONNECT_TIMEOUT_S)
        except Blocked as exc:
            await _refuse(writer, str(exc))
            return
        except OSError as exc:
            await _refuse(writer, f"{exc.strerror or exc}", status=b"502 Bad Gateway")
            return
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                kept = [h for h in lines[1:] if h.split(":", 1)[0].strip().lower() not in _HOP]
                out = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close"])
                up_writer.write(out.encode("latin-1") + b"\r\n\r\n")
            await self._pipe((reader, up_writer), (up_reader, writer), answered=request)
        finally:
            up_writer.close()

    async def _pipe(self, *directions, answered: Request | None = None) -> None:
        """Copy both ways until either side closes or both stay silent past the idle timeout."""
        heard = [time.monotonic()]

        async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while True:
                try:
                    data = await asyncio.wait_for(source.read(65536), self.idle_timeout_s)
                except TimeoutError:
                    if time.monotonic() - heard[0] >= self.idle_timeout_s:
                        return
                    continue
                if not data:
                    return
                if answered is not None and source is directions[1][0]:
                    answered.answered = True
                heard[0] = time.monotonic()
                sink.write(data)
                await asyncio.wait_for(sink.drain(), self.idle_timeout_s)

        tasks = [asyncio.ensure_future(copy(*pair)) for pair in directions]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def close(self) -> None:
        """Stop listening and end every connection (from another thread)."""

        async def stop() -> None:
            self._server.close()
            current = asyncio.current_task()
            pending = [t for t in asyncio.all_tasks() if t is not current]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            self.loop.stop()

        asyncio.run_coroutine_threadsafe(stop(), self.loop)


_open_lock = threading.Lock()
_open_in_all = 0  # open connections across every proxy of this worker


async def _refuse(writer: asyncio.StreamWriter, reason: str, status: bytes = b"403 Forbidden"):
    body = reason.encode("utf-8", "replace")
    head = b"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n" % (
        status,
        len(body),
    )
    with contextlib.suppress(OSError, asyncio.TimeoutError):
        writer.write(head + b"Connection: close\r\n\r\n" + body)
        await asyncio.wait_for(writer.drain(), HEAD_TIMEOUT_S)
    writer.close()


@contextlib.contextmanager
def serving(path: Path, policy: Policy):
    """A proxy for ``policy`` listening on the Unix socket ``path`` while the block runs."""
    server = ProxyServer(path, policy)
    thread = threading.Thread(target=server.serve, name="amtp-verify-proxy", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.close()
        thread.join(timeout=5)
        if not server.loop.is_running():
            server.loop.close()  # and its DNS pool
