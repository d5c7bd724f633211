"""The server of the single-page app in tests/fixtures/spa (Acme Planner), as a WSGI app.

It plays the app's backend and its static host in one: the files of the fixture (``index.html``
and ``src/``), the JSON API the front end calls, a cookie session, and the history-API
fallback (every other path that is not under ``/api/`` answers ``index.html``, status 200, and
the client router decides what to show, its "Not found" page included). ``SECTIONS`` is the
route table's source of truth: the front end builds its routes from ``GET /api/sections``.

Sign in with ``TEST_EMAIL`` / ``TEST_PASSWORD``: fixed test values, documented in the fixture's
README, not a secret. The private sections' pages and ``PUT /api/account`` answer 401 without
the session cookie.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from http.cookies import CookieError, SimpleCookie
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "spa"
TEST_EMAIL = "demo@acme.test"
TEST_PASSWORD = "planner-demo-password"
COOKIE = "planner_session"
MAX_BODY = 64 << 10
_STATIC = re.compile(r"^/src/[a-z][\w-]{0,40}\.(js|css)$")
_PAGE = re.compile(r"^/api/pages/([a-z][a-z0-9-]{0,40})$")
TYPES = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"}

SECTIONS = [
    {"slug": "features", "title": "Features", "private": False},
    {"slug": "pricing", "title": "Pricing", "private": False},
    {"slug": "changelog", "title": "Changelog", "private": False},
    {"slug": "contact", "title": "Contact", "private": False},
    {"slug": "account", "title": "Account", "private": True},
    {"slug": "billing", "title": "Billing", "private": True},
]
CONTACT_FORM = {
    "id": "contact",
    "action": "/api/messages",
    "method": "POST",
    "fields": [
        {"name": "name", "label": "Name", "required": True},
        {"name": "email", "label": "Email", "type": "email", "required": True},
        {"name": "message", "label": "Message", "type": "textarea", "required": True},
    ],
    "submit": "Send message",
    "success": "Thanks, we will answer within a working day.",
}
PAGES = {  # name → the page's content; "account" is built per user (account_page)
    "home": {
        "heading": "Plan the week with your team",
        "paragraphs": ["Acme Planner keeps your team's week on one page."],
        "items": ["Shared weekly boards", "Reminders that respect time zones"],
    },
    "login": {
        "heading": "Sign in to Acme Planner",
        "paragraphs": ["Use the email address your team invited."],
    },
    "features": {
        "heading": "Everything your team needs to plan",
        "items": ["Weekly boards", "Recurring tasks", "Calendar sync"],
    },
    "pricing": {
        "heading": "Simple pricing for every team",
        "items": ["Free: up to 3 people", "Team: 6 EUR a person a month"],
    },
    "changelog": {
        "heading": "What is new in Acme Planner",
        "items": ["2.3: calendar sync", "2.2: recurring tasks"],
    },
    "contact": {
        "heading": "Talk to our team",
        "paragraphs": ["Questions about plans or invoices? Write to us."],
        "form": CONTACT_FORM,
    },
    "billing": {
        "heading": "Billing and invoices",
        "items": ["Invoice 2024-031: 18 EUR, paid", "Invoice 2024-030: 18 EUR, paid"],
    },
}


def spa_repository() -> dict[str, str]:
    """The fixture's repository content (path → text), as a crawler reads it: every file but
    ``routes.json``, the route list the figures are measured against."""
    return {
        path.relative_to(FIXTURE).as_posix(): path.read_text()
        for path in sorted(FIXTURE.rglob("*"))
        if path.is_file() and path.name != "routes.json"
    }


def account_page(user: dict) -> dict:
    name = {"name": "display_name", "label": "Display name", "required": True}
    return {
        "heading": "Your account",
        "paragraphs": [f"Signed in as {user['email']}."],
        "form": {
            "id": "account",
            "action": "/api/account",
            "method": "PUT",
            "fields": [{**name, "value": user["name"]}],
            "submit": "Save changes",
            "success": "Your changes are saved.",
        },
    }


class Response(Exception):
    """An answer decided deep in a handler (a 4xx), raised to end the request."""

    def __init__(self, status: str, body: object, headers: list | None = None) -> None:
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or []


class SpaApp:
    """Acme Planner's backend and static host (see the module docstring)."""

    def __init__(self) -> None:
        self.sessions: dict[str, dict] = {}  # token → user
        self.messages: list[dict] = []
        self.name = "Dana Demo"
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/")
        if path.startswith("/api/"):
            try:
                status, body, headers = self.api(method, path, environ)
            except Response as answer:
                status, body, headers = answer.status, answer.body, answer.headers
            data = b"" if body is None else json.dumps(body).encode()
            start_response(status, [("Content-Type", "application/json"), *headers])
            return [data]
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD")])
            return [b""]
        return self.static(path, start_response)

    def static(self, path, start_response):
        if match := _STATIC.match(path):
            file = FIXTURE / path.lstrip("/")
            if file.is_file():
                start_response("200 OK", [("Content-Type", TYPES[match.group(1)])])
                return [file.read_bytes()]
        if path.startswith("/src/"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found"]
        # The history-API fallback: the client router owns every other path.
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [(FIXTURE / "index.html").read_bytes()]

    def api(self, method: str, path: str, environ: dict) -> tuple[str, object, list]:
        user = self.user(environ)
        if path == "/api/sections" and method == "GET":
            return "200 OK", SECTIONS, []
        if path == "/api/session":
            return self.session(method, environ, user)
        if match := _PAGE.match(path):
            if method != "GET":
                raise Response("405 Method Not Allowed", {"error": "GET only"})
            return "200 OK", self.page(match.group(1), user), []
        if path == "/api/messages" and method == "POST":
            data = _fields(environ, ("name", "email", "message"))
            with self.lock:
                self.messages.append(data)
                return "201 Created", {"id": len(self.messages)}, []
        if path == "/api/account" and method == "PUT":
            _signed_in(user)
            with self.lock:
                self.name = _fields(environ, ("display_name",))["display_name"]
            return "200 OK", {"email": TEST_EMAIL, "name": self.name}, []
        raise Response("404 Not Found", {"error": f"no API at {method} {path}"})

    def page(self, name: str, user: dict | None) -> dict:
        section = next((s for s in SECTIONS if s["slug"] == name), None)
        if section and section["private"]:
            _signed_in(user)
        if name == "account":
            return account_page(user)
        if name not in PAGES:
            raise Response("404 Not Found", {"error": f"no page named {name}"})
        return PAGES[name]

    def session(self, method: str, environ: dict, user: dict | None) -> tuple[str, object, list]:
        if method == "GET":  # nobody signed in is an answer too, not an error
            return "200 OK", {"user": user}, []
        if method == "DELETE":
            with self.lock:
                self.sessions.pop(_token(environ), None)
            return "204 No Content", None, [("Set-Cookie", f"{COOKIE}=; Path=/; Max-Age=0")]
        if method != "POST":
            raise Response("405 Method Not Allowed", {"error": "GET, POST or DELETE"})
        data = _fields(environ, ("email", "password"))
        good_email = secrets.compare_digest(data["email"].encode(), TEST_EMAIL.encode())
        good = secrets.compare_digest(data["password"].encode(), TEST_PASSWORD.encode())
        if not (good_email and good):
            raise Response("401 Unauthorized", {"error": "Wrong email or password."})
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.sessions[token] = {"email": TEST_EMAIL}
        cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax"
        return "200 OK", {"user": self.profile()}, [("Set-Cookie", cookie)]

    def user(self, environ: dict) -> dict | None:
        with self.lock:
            return self.profile() if _token(environ) in self.sessions else None

    def profile(self) -> dict:
        return {"email": TEST_EMAIL, "name": self.name}


def _signed_in(user: dict | None) -> dict:
    if user is None:
        raise Response("401 Unauthorized", {"error": "Sign in to see this."})
    return user


def _token(environ: dict) -> str:
    try:
        morsel = SimpleCookie(environ.get("HTTP_COOKIE", "")).get(COOKIE)
    except CookieError:
        return ""
    return morsel.value if morsel else ""


def _fields(environ: dict, names: tuple[str, ...]) -> dict[str, str]:
    """The JSON object body's string fields ``names``, each non-empty; else a 400 naming
    the field and the rule."""
    try:
        size = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        size = -1
    if not 0 <= size <= MAX_BODY:
        raise Response("400 Bad Request", {"error": f"the body must be at most {MAX_BODY} bytes"})
    try:
        data = json.loads(environ["wsgi.input"].read(size) or b"null")
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise Response("400 Bad Request", {"error": "the body must be a JSON object"})
    for name in names:
        value = data.get(name)
        if not isinstance(value, str) or not value.strip() or len(value) > 2000:
            rule = "a non-empty string of at most 2000 characters"
            raise Response("400 Bad Request", {"error": f"{name}: must be {rule}"})
    return {name: data[name].strip() for name in names}
