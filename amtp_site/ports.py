"""Whether a TCP port on loopback is free to listen on: asked before anything starts, so a
busy port is one clear message and a non-zero exit, not a half-started system. No Django here:
``scripts/port_free.py`` asks before the services are up."""

from __future__ import annotations

import errno
import socket

PORT_IN_USE = (
    "port {port} on {host} is already in use by another program; stop it, or choose another "
    "port: PORT={other} make run (manage.py run_system --port {other})"
)
PORT_REFUSED = "cannot listen on {host}:{port} ({error}); choose another port: PORT=... make run"
PORT_INVALID = "port {port!r} is not a TCP port (1-65535); e.g. PORT=8000 make run"


def port_problem(port: object, host: str = "127.0.0.1") -> str | None:
    """None when ``host:port`` can be listened on now, else what to do about it."""
    if not isinstance(port, int) or not 0 < port < 65536:
        return PORT_INVALID.format(port=port)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # The web server sets SO_REUSEADDR too: a port in TIME_WAIT is not "in use" for it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return PORT_IN_USE.format(port=port, host=host, other=port + 1)
            return PORT_REFUSED.format(host=host, port=port, error=exc.strerror or exc)
    return None
