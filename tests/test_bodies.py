"""Bounded bodies on every endpoint, chunked or not: no request body is read past its limit,
whatever Content-Length says or when there is none (Transfer-Encoding: chunked)."""

import asyncio
import http.client
import io
import json
import socket
import uuid
from urllib.parse import urlsplit

import pytest
from django.test import Client

from amtp_site.bodies import BoundedBodies
from tests import api_support
from tests.api_support import assert_problem
from triggers import api as webhooks

make_token = api_support.make_token

SECRET = "webhook-test-secret"
LIMIT = 2000


@pytest.fixture(autouse=True)
def limits(settings):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    settings.AMTP_WEBHOOK_MAX_BYTES = LIMIT
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT


def ping_body() -> bytes:
    return json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()


def webhook_headers(body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": webhooks.signature_for(SECRET, body),
    }


class Endless:
    """A request body that never ends; counts what was read from it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def read(self, size=-1):
        size = 64 * 1024 if size is None or size < 0 else size
        self.read_bytes += size
        return b"x" * size

    def readline(self, size=-1):
        return self.read(size if size and size > 0 else 1024)


# --- a WSGI server that hands the application a de-chunked stream (gunicorn, mod_wsgi) --------


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/webhooks/github", "/api/runs"])
def test_an_endless_chunked_body_is_413_after_at_most_the_limit(path, make_token):
    stream = Endless()
    token = make_token()
    response = Client().generic(
        "POST",
        path,
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}", **webhook_headers(b"")},
        **{
            "wsgi.input": stream,
            "wsgi.input_terminated": True,
            "HTTP_TRANSFER_ENCODING": "chunked",
        },
    )
    assert_problem(response, 413, "payload-too-large")
    assert stream.read_bytes <= LIMIT + 1


@pytest.mark.django_db
def test_a_small_chunked_delivery_is_read_and_answered():
    body = ping_body()
    response = Client().generic(
        "POST",
        "/api/webhooks/github",
        headers=webhook_headers(body),
        content_type="application/json",
        **{
            "wsgi.input": io.BytesIO(body),
            "wsgi.input_terminated": True,
            "HTTP_TRANSFER_ENCODING": "chunked",
        },
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "pong"


# --- a WSGI server that cannot de-chunk (Django's own runserver): refused, not guessed -------


def chunked_post(live_server, path: str, headers: dict, chunks: list[bytes]):
    """POST with Transfer-Encoding: chunked over a raw socket. The server may answer and close
    before the whole body is sent (that is the point), so a broken pipe is not a failure."""
    where = urlsplit(live_server.url)
    head = [f"POST {path} HTTP/1.1", f"Host: {where.netloc}", "Transfer-Encoding: chunked"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            for chunk in chunks:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the body was read
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.getheader("Content-Type"), response.read()


@pytest.mark.django_db(transaction=True)
def test_a_chunked_request_to_a_live_server_is_refused_without_reading_it(live_server):
    chunks = [b"x" * 1000] * 50  # 50 kB, far over the limit
    status, media, body = chunked_post(
        live_server, "/api/webhooks/github", webhook_headers(b""), chunks
    )
    assert (status, media) == (411, "application/problem+json"), body
    assert json.loads(body)["detail"].startswith("send Content-Length")


# --- ASGI: Django itself would read the whole body before any view runs -----------------------


def asgi_post(app, path: str, headers: dict, chunks: list[bytes]):
    """POST ``chunks`` as separate http.request messages (no Content-Length)."""
    sent, answer = [], {}
    messages = [{"type": "http.request", "body": c, "more_body": True} for c in chunks]
    messages.append({"type": "http.request", "body": b"", "more_body": False})

    async def receive():
        if messages:
            sent.append(1)
            return messages.pop(0)
        await asyncio.sleep(3600)

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
        elif message["type"] == "http.response.body":
            answer["body"] = answer.get("body", b"") + message.get("body", b"")

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    asyncio.run(app(scope, receive, send))
    return answer["status"], answer.get("body", b""), len(sent)


def test_asgi_stops_reading_an_endless_chunked_body_at_the_limit():
    reached = []

    async def django(scope, receive, send):
        reached.append(scope)

    chunks = [b"x" * 500] * 1000  # 500 kB
    status, body, received = asgi_post(BoundedBodies(django, LIMIT), "/api/runs", {}, chunks)
    assert status == 413 and json.loads(body)["status"] == 413
    assert received <= LIMIT // 500 + 1 and not reached


@pytest.mark.django_db(transaction=True)
def test_asgi_passes_a_small_chunked_delivery_on_whole():
    from amtp_site.asgi import application

    body = ping_body()
    chunks = [body[:10], body[10:20], body[20:]]
    status, answer, _ = asgi_post(
        application, "/api/webhooks/github", webhook_headers(body), chunks
    )
    assert status == 200, answer
    assert json.loads(answer)["status"] == "pong"
