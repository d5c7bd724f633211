"""A stand-in for the demo web app, served on loopback for tests and benchmarks that need the
demo's routes without installing and building it (``make run``'s demo boots the real app).

The demo repository (``demo/web``, runs/demo/content.py) is an Express API plus a React front
end; building and serving it needs npm packages from npm's registry. This WSGI app
answers the same routes the same way: the pages as HTML with the headings the React pages
render, its navigation and the task list's links to each task (so exploring it finds the pages), and
``/api/health`` and ``/api/tasks`` as the Express routes do, and (like Express'
``app.get('*')``) every other path with the front end's index page, status 200.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import threading
from collections.abc import Callable, Iterator
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

PAGES = {
    "/": "Acme Tasks",
    "/tasks": "All tasks",
    "/about": "About Acme Tasks",
}
_TASK = re.compile(r"^/api/tasks/([^/]+)$")
_TASK_PAGE = re.compile(r"^/tasks/[^/]+$")


NAV = '<nav><a href="/">Home</a> <a href="/tasks">Tasks</a> <a href="/about">About</a></nav>'


def _page(heading: str, body: str = "") -> bytes:
    return (
        "<!doctype html><html><head><title>Acme Tasks</title></head>"
        f'<body><div id="root">{NAV}<h1>{heading}</h1>{body}</div></body></html>'
    ).encode()


class DemoTasks:
    """The Express routes of server/index.js and server/routes/tasks.js, in memory."""

    def __init__(self) -> None:
        self.tasks = [{"id": 1, "title": "Write tests", "done": False}]
        self.lock = threading.Lock()

    def __call__(self, environ: dict, start_response: Callable) -> list[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/")
        if path.startswith("/api/"):
            status, body = self.api(method, path, environ)
            start_response(status, [("Content-Type", "application/json; charset=utf-8")])
            return [json.dumps(body).encode() if body is not None else b""]
        heading = PAGES.get(path) or ("Task" if _TASK_PAGE.match(path) else None)
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [_page(heading or "Acme Tasks", self.task_links() if path == "/tasks" else "")]

    def task_links(self) -> str:
        with self.lock:
            items = [(t["id"], t["title"]) for t in self.tasks]
        links = "".join(
            f'<li><a href="/tasks/{int(i)}">{html.escape(str(title))}</a></li>'
            for i, title in items
        )
        return f"<ul>{links}</ul>"

    def api(self, method: str, path: str, environ: dict) -> tuple[str, object]:
        if path == "/api/health" and method == "GET":
            return "200 OK", {"ok": True}
        with self.lock:
            if path in ("/api/tasks", "/api/tasks/"):
                if method == "GET":
                    return "200 OK", self.tasks
                if method == "POST":
                    data = _json_body(environ)
                    if not isinstance(data.get("title"), str):
                        return "400 Bad Request", {"error": "title required"}
                    task = {"id": len(self.tasks) + 1, "title": data["title"], "done": False}
                    self.tasks.append(task)
                    return "201 Created", task
            elif match := _TASK.match(path):
                task = next((t for t in self.tasks if str(t["id"]) == match.group(1)), None)
                if method == "DELETE":
                    self.tasks = [t for t in self.tasks if t is not task]
                    return "204 No Content", None
                if task is None:
                    return "404 Not Found", {"error": "task not found"}
                if method == "PATCH":
                    task.update(_json_body(environ))
                if method in ("GET", "PATCH"):
                    return "200 OK", task
        return "404 Not Found", {"error": "not found"}


def _json_body(environ: dict) -> dict:
    try:
        size = int(environ.get("CONTENT_LENGTH") or 0)
        data = json.loads(environ["wsgi.input"].read(min(size, 65536)) or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # the access log is noise here
        pass


class ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def serve(app: Callable, host: str = "127.0.0.1", port: int = 0) -> tuple[WSGIServer, str]:
    """Serve ``app`` from a daemon thread; (server, base URL). ``server.shutdown()`` stops it."""
    server = make_server(host, port, app, server_class=ThreadingServer, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, daemon=True, name="demo-app").start()
    return server, f"http://{host}:{server.server_port}"


@contextlib.contextmanager
def serving(app: Callable, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """``app`` served (``serve``) for a ``with`` block: its base URL; stopped and closed when
    the block ends, however it ends."""
    server, url = serve(app, host, port)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
