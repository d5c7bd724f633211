"""The worker's way into a booted app: a TCP listener on the worker's loopback whose every
connection is piped to the Unix socket the app's box exposes (its entry forwards that to the
app's port on the box's own loopback). The box keeps its network namespace; only this socket
crosses it, and only inwards.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

CHUNK = 64 * 1024
IDLE_TIMEOUT_S = 300.0


def _copy(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while chunk := source.recv(CHUNK):
            sink.sendall(chunk)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


class _Handler(socketserver.BaseRequestHandler):
    server: _Forwarder

    def handle(self) -> None:
        client = self.request
        client.settimeout(IDLE_TIMEOUT_S)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as app:
            app.settimeout(IDLE_TIMEOUT_S)
            try:
                app.connect(str(self.server.app_socket))
            except OSError:
                return  # the box is not (or no longer) listening: the client sees a close
            inwards = threading.Thread(target=_copy, args=(client, app), daemon=True)
            inwards.start()
            _copy(app, client)
            inwards.join(IDLE_TIMEOUT_S)


class _Forwarder(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, app_socket: Path) -> None:
        self.app_socket = app_socket
        super().__init__(("127.0.0.1", 0), _Handler)


@contextlib.contextmanager
def forwarding(app_socket: Path) -> Iterator[int]:
    """The loopback port that reaches ``app_socket`` while the block runs."""
    server = _Forwarder(app_socket)
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
