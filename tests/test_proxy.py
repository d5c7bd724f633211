"""The sandbox's allow-listing proxy over its Unix socket: what it lets through, what it
refuses and says, and that a name is pinned to the address it first resolved to."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from repositories import targets
from verification import proxy


class _App(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        if self.path == "/hop":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = f"app saw {self.path} for {self.headers['Host']}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def app():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _App)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def through(tmp_path, app):
    """Send raw bytes through a proxy for the app's origin (allow-listed on its port)."""
    policy = proxy.Policy(f"http://127.0.0.1:{app}/", [f"127.0.0.1:{app}"])
    path = tmp_path / "proxy.sock"
    with proxy.serving(path, policy):

        def send(raw: bytes) -> bytes:
            with socket.socket(socket.AF_UNIX) as conn:
                conn.connect(str(path))
                conn.sendall(raw)
                chunks = []
                while chunk := conn.recv(65536):
                    chunks.append(chunk)
                return b"".join(chunks)

        yield send, policy


def test_the_target_origin_is_let_through(through, app):
    send, _ = through
    answer = send(
        f"GET http://127.0.0.1:{app}/notes?x=1 HTTP/1.1\r\nHost: 127.0.0.1:{app}\r\n\r\n".encode()
    )
    assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(
        f"app saw /notes?x=1 for 127.0.0.1:{app}".encode()
    )


@pytest.mark.parametrize(
    ("request_line", "blocked"),
    [
        ("GET http://169.254.169.254/latest/meta-data/ HTTP/1.1", "169.254.169.254:80"),
        ("CONNECT 169.254.169.254:443 HTTP/1.1", "169.254.169.254:443"),
        ("GET http://localhost:{app}/ HTTP/1.1", "localhost:{app}"),  # a name for loopback
        ("GET http://127.0.0.1:5432/ HTTP/1.1", "127.0.0.1:5432"),  # another port
        ("CONNECT [::1]:6379 HTTP/1.1", "::1:6379"),
        ("GET http://10.0.0.1/ HTTP/1.1", "10.0.0.1:80"),
    ],
)
def test_everything_else_is_refused_and_recorded(through, app, request_line, blocked):
    send, policy = through
    blocked = blocked.format(app=app)
    answer = send(f"{request_line.format(app=app)}\r\nHost: x\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403 Forbidden")
    assert f"blocked: {blocked}".encode() in answer
    assert policy.blocked == [blocked]


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /relative HTTP/1.1\r\n\r\n",
        b"GET ftp://host/ HTTP/1.1\r\n\r\n",
        b"CONNECT nohost\r\n\r\n",
    ],
)
def test_what_is_not_a_proxy_request_is_refused(through, raw):
    send, policy = through
    assert send(raw).startswith(b"HTTP/1.1 403") and policy.blocked == []


def test_a_redirect_to_another_origin_leads_nowhere(through, app):
    send, policy = through
    hop = send(f"GET http://127.0.0.1:{app}/hop HTTP/1.1\r\nHost: a\r\n\r\n".encode())
    assert b"302" in hop.split(b"\r\n")[0]  # the app's answer is passed on as it is
    follow = send(b"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: a\r\n\r\n")
    assert follow.startswith(b"HTTP/1.1 403") and policy.blocked == ["169.254.169.254:80"]


def test_a_name_is_pinned_to_its_first_address(monkeypatch):
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])  # a rebinding DNS server
    monkeypatch.setattr(targets, "resolve", lambda host, port: next(answers))
    policy = proxy.Policy("http://preview.acme.test/", [])
    assert policy.address("preview.acme.test", 80) == "93.184.216.34"
    assert policy.address("preview.acme.test", 80) == "93.184.216.34"  # not 127.0.0.1


def test_a_name_that_resolves_to_a_private_address_is_refused(monkeypatch):
    monkeypatch.setattr(targets, "resolve", lambda host, port: ["169.254.169.254"])
    policy = proxy.Policy("http://preview.acme.test/", [])
    with pytest.raises(proxy.Blocked, match="link-local address"):
        policy.address("preview.acme.test", 80)
    assert policy.blocked == ["preview.acme.test:80"]


def _threads() -> int:
    return threading.active_count()


def test_connections_over_the_box_cap_are_refused_at_once_without_a_thread(tmp_path, settings):
    settings.AMTP_PROXY_MAX_CONNECTIONS = 8
    path = tmp_path / "proxy.sock"
    with proxy.serving(path, proxy.Policy("http://127.0.0.1:9/", [])) as server:
        before = _threads()
        held = []
        for _ in range(200):  # idle: they never send a request
            conn = socket.socket(socket.AF_UNIX)
            conn.connect(str(path))
            held.append(conn)
        held[-1].settimeout(5)
        answer = held[-1].recv(4096)
        during = _threads()
        for conn in held:
            conn.close()
    assert answer.startswith(b"HTTP/1.1 503") and proxy.BUSY.encode() in answer
    assert server.peak_open == 8 and server.refused_busy == 192
    assert during <= before  # one loop thread whatever the connections


def test_an_idle_connection_is_closed(tmp_path, settings, monkeypatch, app):
    settings.AMTP_PROXY_IDLE_TIMEOUT_S = 0.3
    monkeypatch.setattr(proxy, "HEAD_TIMEOUT_S", 0.3)
    path = tmp_path / "proxy.sock"
    policy = proxy.Policy(f"http://127.0.0.1:{app}/", [f"127.0.0.1:{app}"])
    with proxy.serving(path, policy) as server:
        silent = socket.socket(socket.AF_UNIX)  # never sends its request head
        silent.connect(str(path))
        silent.settimeout(5)
        tunnel = socket.socket(socket.AF_UNIX)  # a tunnel that then stays silent
        tunnel.connect(str(path))
        tunnel.settimeout(5)
        tunnel.sendall(f"CONNECT 127.0.0.1:{app} HTTP/1.1\r\n\r\n".encode())
        assert tunnel.recv(4096).startswith(b"HTTP/1.1 200")
        assert silent.recv(4096).startswith(b"HTTP/1.1 408")  # and closed:
        assert silent.recv(4096) == b"" and tunnel.recv(4096) == b""
        silent.close()
        tunnel.close()
    assert server.open == 0


def test_the_request_the_app_stopped_answering_at_is_named(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _App)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    policy = proxy.Policy(f"http://127.0.0.1:{port}/", [f"127.0.0.1:{port}"])
    path = tmp_path / "proxy.sock"

    def get(target: str) -> bytes:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(str(path))
            conn.sendall(
                f"GET http://127.0.0.1:{port}{target} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            )
            return b"".join(iter(lambda: conn.recv(65536), b""))

    with proxy.serving(path, policy):
        assert get("/users").startswith(b"HTTP/1.0 200")
        assert policy.stopped_answering() == ""  # it answers
        assert get("/user/7?token=ghp_" + "a1B2c3D4" * 5).startswith(b"HTTP/1.0 200")
        server.shutdown()
        server.server_close()  # the app is gone: the proxy answers 502 for it
        assert get("/about").startswith(b"HTTP/1.1 502")
        assert get("/").startswith(b"HTTP/1.1 502")
    assert [(r.shown, r.answered) for r in policy.requests][:1] == [("GET /users", True)]
    stopped = policy.stopped_answering()
    assert stopped.startswith("the app stopped answering after GET /user/7?token=")
    assert stopped.endswith(
        "(the last request it answered; no answer to the 2 request(s) after it, the first "
        "GET /about)"
    )
    assert "a1B2c3D4" not in stopped  # a credential in a query string is scrubbed
    assert policy.crash_cause(policy.requests[1].at).shown.startswith("GET /user/7")
    # The app ended on the first request it did not answer, however late its end was seen.
    assert policy.crash_cause(policy.requests[-1].at + 1).shown == "GET /about"
