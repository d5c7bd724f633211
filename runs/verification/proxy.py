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
the report lists.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import socketserver
import threading
from pathlib import Path
from urllib.parse import urlsplit

from repositories import targets

MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 120.0
NOT_ALLOWED = "{host}:{port} is not the target origin nor an allowed host"
UNRESOLVED = "{host} does not resolve"
BAD_REQUEST = "the proxy takes CONNECT host:port and absolute http:// requests only"
_HOP = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}


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


def _read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    """(request head up to the blank line, bytes after it); Blocked when malformed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(8192)
        if not chunk or len(data) > MAX_HEAD:
            raise Blocked(BAD_REQUEST)
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


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


class _Handler(socketserver.BaseRequestHandler):
    server: ProxyServer

    def handle(self) -> None:
        conn = self.request
        conn.settimeout(IDLE_TIMEOUT_S)
        try:
            head, rest = _read_head(conn)
            lines = head.decode("latin-1").split("\r\n")
            method, uri, version = (lines[0].split(" ") + ["", ""])[:3]
            host, port, path = _target(method, uri)
            address = self.server.policy.address(host, port)
            upstream = socket.create_connection((address, port), timeout=CONNECT_TIMEOUT_S)
        except Blocked as exc:
            _refuse(conn, str(exc))
            return
        except OSError as exc:
            _refuse(conn, f"{exc.strerror or exc}", status=b"502 Bad Gateway")
            return
        with upstream:
            upstream.settimeout(IDLE_TIMEOUT_S)
            if method == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                kept = [h for h in lines[1:] if h.split(":", 1)[0].strip().lower() not in _HOP]
                head = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close"])
                upstream.sendall(head.encode("latin-1") + b"\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            _pipe(conn, upstream)


def _refuse(conn: socket.socket, reason: str, status: bytes = b"403 Forbidden") -> None:
    body = reason.encode("utf-8", "replace")
    head = b"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n" % (
        status,
        len(body),
    )
    with contextlib.suppress(OSError):
        conn.sendall(head + b"Connection: close\r\n\r\n" + body)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until either side closes or stays idle past IDLE_TIMEOUT_S."""
    with selectors.DefaultSelector() as sel:
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        while True:
            ready = sel.select(IDLE_TIMEOUT_S)
            if not ready:
                return
            for key, _ in ready:
                try:
                    data = key.fileobj.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)
                except OSError:
                    return


class ProxyServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, policy: Policy) -> None:
        self.policy = policy
        super().__init__(str(path), _Handler)


@contextlib.contextmanager
def serving(path: Path, policy: Policy):
    """A proxy for ``policy`` listening on the Unix socket ``path`` while the block runs."""
    server = ProxyServer(path, policy)
    thread = threading.Thread(target=server.serve_forever, name="amtp-verify-proxy", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
