"""A webhook receiver on loopback for the notification tests: a real HTTP server that
records every POST (path, headers, JSON body) and answers ``status`` after ``delay`` s."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver(ThreadingHTTPServer):
    """Records every POST; answers ``status`` after ``delay`` seconds."""

    def __init__(self):
        self.posts: list[dict] = []
        self.status, self.delay = 200, 0.0
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/services/T000/B000/SECRETPATH"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.posts.append(
            {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
        )
        time.sleep(self.server.delay)
        self.send_response(self.server.status)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@contextmanager
def local_receiver(settings) -> Iterator[Receiver]:
    """The receiver, running, with the settings that let notifications reach it."""
    settings.AMTP_NOTIFY_ALLOW_HOSTS = ["127.0.0.1"]
    settings.AMTP_NOTIFY_TIMEOUT_S = 1.0
    settings.AMTP_NOTIFY_ATTEMPTS = 2
    settings.AMTP_PUBLIC_URL = "https://amtp.example.com"
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
