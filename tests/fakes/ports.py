"""Where a fake service listens: on the port the last fake of its kind in this process had.

Tests hand a fake's URL to agent processes through the environment, and a changed environment
restarts the template those processes are forked from (seconds of CPU, runs/temporal/worker.py).
A fake that comes back on the same port keeps the URL, and with it the template, from one test
to the next; when that port is taken (two fakes of a kind at once), it takes another."""

from __future__ import annotations

from http.server import ThreadingHTTPServer

_last: dict[str, int] = {}


def listen(kind: str, handler: type) -> ThreadingHTTPServer:
    """A server on 127.0.0.1 for the fake ``kind`` (HTTPServer sets SO_REUSEADDR, so a port
    whose last connections are in TIME_WAIT is free to listen on again)."""
    try:
        server = ThreadingHTTPServer(("127.0.0.1", _last.get(kind, 0)), handler)
    except OSError:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    _last[kind] = server.server_address[1]
    return server
