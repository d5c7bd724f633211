"""Live apps the VerifyTests tests run the generated tests against, on loopback.

``NOTES_REPO`` is the issue's Flask notes service: HTML pages ``/`` and ``/login`` and a JSON
API ``/api/notes`` in one module that both renders templates and jsonifies, so the offline
crawl takes every route for JSON. ``NotesApp`` answers those routes as that Flask app does,
with two behaviours of a real service: its notes API is warming up (503) on the very first
request, and a POST without ``text`` crashes it (500, the KeyError Flask would turn into one).
"""

from __future__ import annotations

import json
import threading
import time

NOTES_REPO = {
    "README.md": "# Notes\n\nA Flask notes service: `flask --app app run` (port 5000).\n",
    "requirements.txt": "Flask==3.0.3\n",
    "app.py": """from flask import Flask, jsonify, render_template, request

app = Flask(__name__)
NOTES = [{"id": 1, "text": "Buy milk"}]


@app.route("/")
def index():
    return render_template("index.html", notes=NOTES)


@app.route("/login", methods=["GET", "POST"])
def login():
    return render_template("login.html")


@app.route("/api/notes")
def list_notes():
    return jsonify(NOTES)


@app.route("/api/notes", methods=["POST"])
def add_note():
    NOTES.append({"id": len(NOTES) + 1, "text": request.json["text"]})
    return jsonify(NOTES[-1]), 201
""",
    "templates/index.html": "<!doctype html><title>Notes</title><h1>Notes</h1>\n",
    "templates/login.html": "<!doctype html><title>Sign in</title><h1>Sign in</h1>\n",
}


def _html(title: str) -> bytes:
    return f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1></body></html>".encode()


class NotesApp:
    """The notes service of NOTES_REPO as a WSGI app (see the module docstring)."""

    def __init__(self, slow_seconds: float = 30.0) -> None:
        self.notes = [{"id": 1, "text": "Buy milk"}]
        self.api_requests = 0
        self.slow_seconds = slow_seconds
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/")
        if path == "/slow":
            time.sleep(self.slow_seconds)
        if path in ("/", "/login", "/slow"):
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
            return [_html("Notes" if path == "/" else "Sign in")]
        if path == "/api/notes":
            return self.api(method, environ, start_response)
        start_response("404 Not Found", [("Content-Type", "text/html; charset=utf-8")])
        return [_html("Not Found")]

    def api(self, method, environ, start_response):
        with self.lock:
            self.api_requests += 1
            first = self.api_requests == 1
        if first:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"warming up"]
        if method == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            data = json.loads(environ["wsgi.input"].read(size) or b"{}")
            if "text" not in data:
                start_response("500 Internal Server Error", [("Content-Type", "text/html")])
                return [_html("Internal Server Error")]
            self.notes.append({"id": len(self.notes) + 1, "text": data["text"]})
            start_response("201 Created", [("Content-Type", "application/json")])
            return [json.dumps(self.notes[-1]).encode()]
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(self.notes).encode()]


class FailingApp:
    """An app that is up but broken: every path answers 500, except those in ``healthy``
    (a load balancer's page at ``/`` that still answers while the app behind it fails)."""

    def __init__(self, healthy: tuple[str, ...] = ()) -> None:
        self.healthy = healthy
        self.paths: list[str] = []

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "/")
        self.paths.append(path)
        if path in self.healthy:
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
            return [_html("Notes")]
        start_response("500 Internal Server Error", [("Content-Type", "text/html")])
        return [_html("Internal Server Error")]


class SeededApp:
    """An app whose home page lists the notes its test data hooks made: ``POST /test-data/seed``
    adds one, ``POST /test-data/reset`` removes them all, ``POST /test-data/fail`` fails as a
    seed whose database is down would. ``calls`` lists every request, in order."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.calls: list[str] = []

    def __call__(self, environ, start_response):
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/")
        self.calls.append(f"{method} {path}")
        if (method, path) == ("POST", "/test-data/seed"):
            self.notes.append("Seeded note")
            start_response("201 Created", [("Content-Type", "text/plain")])
            return [b"seeded"]
        if (method, path) == ("POST", "/test-data/reset"):
            self.notes.clear()
            start_response("204 No Content", [])
            return []
        if (method, path) == ("POST", "/test-data/fail"):
            start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
            return [b"seed failed: the database is not reachable"]
        items = "".join(f"<li>{note}</li>" for note in self.notes)
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [f"<!doctype html><title>Notes</title><h1>Notes</h1><ul>{items}</ul>".encode()]
