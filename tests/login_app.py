"""A login-gated app for the login tests, on loopback: it logs in the way the SPA fixture
does (labelled "Email" and "Password" fields, a "Sign in" button whose handler posts JSON with
``fetch`` and then navigates client-side), and shows ``/account`` and ``/account/report`` only
to a session cookie it issued. ``/logout`` ends the session (a logged-in explorer must not
follow it). It echoes nothing secret, except where a test asks it to (``echo_password``)."""

from __future__ import annotations

import json
import secrets
import threading

USERNAME = "qa@example.com"

LOGIN_PAGE = """<!doctype html><html><head><title>Sign in</title></head><body>
<h1>Sign in</h1>
<form id="login"><label for="email">Email</label><input id="email" type="email">
<label for="password">Password</label><input id="password" type="password">
<button type="submit">Sign in</button></form><p id="error" role="alert"></p>
<script>
document.getElementById("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = JSON.stringify({
    email: document.getElementById("email").value,
    password: document.getElementById("password").value,
  });
  const answer = await fetch("/api/session", { method: "POST", body });
  if (!answer.ok) {
    document.getElementById("error").textContent = "Invalid email or password";
    return;
  }
  history.pushState({}, "", "/account");
  document.title = "Your account";
  document.body.innerHTML = '<h1>Your account</h1><a href="/account/report">Report</a>';
});
</script></body></html>"""


def _page(title: str, body: str) -> bytes:
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>".encode()


class LoginApp:
    def __init__(self, password: str, echo_password: bool = False) -> None:
        self.password = password
        self.echo_password = echo_password
        self.sessions: set[str] = set()
        self.logins = 0  # successful ones
        self.gated: list[tuple[str, bool]] = []  # (path, whether the session was valid)
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "/")
        cookie = environ.get("HTTP_COOKIE", "")
        session = next(
            (c.split("=", 1)[1] for c in cookie.split("; ") if c.startswith("session=")), ""
        )
        valid = session in self.sessions
        if path == "/api/session" and environ["REQUEST_METHOD"] == "POST":
            return self.log_in(environ, start_response)
        if path == "/login":
            return self._html(start_response, LOGIN_PAGE.encode())
        if path.startswith("/account") or path == "/logout":
            with self.lock:
                self.gated.append((path, valid))
            if not valid:
                start_response("302 Found", [("Location", "/login")])
                return [b""]
        if path == "/logout":
            self.sessions.discard(session)
            start_response("302 Found", [("Location", "/login")])
            return [b""]
        if path == "/account":
            echo = f"<p>debug: {self.password}</p>" if self.echo_password else ""
            links = '<a href="/logout">Sign out</a> <a href="/account/report">Report</a>'
            body = f"<h1>Your account</h1><p>Signed in as {USERNAME}</p>{echo}{links}"
            return self._html(start_response, _page("Your account", body))
        if path == "/account/report":
            body = "<h1>Quarterly report</h1><p>Revenue is up.</p>"
            return self._html(start_response, _page("Report", body))
        if path == "/":
            body = '<h1>Home</h1><a href="/account">Account</a> <a href="/login">Sign in</a>'
            return self._html(start_response, _page("Home", body))
        start_response("404 Not Found", [("Content-Type", "text/html")])
        return [_page("Not found", "<h1>Not found</h1>")]

    def log_in(self, environ, start_response):
        size = int(environ.get("CONTENT_LENGTH") or 0)
        data = json.loads(environ["wsgi.input"].read(size) or b"{}")
        if data.get("email") != USERNAME or data.get("password") != self.password:
            start_response("401 Unauthorized", [("Content-Type", "application/json")])
            return [b'{"error": "invalid"}']
        session = secrets.token_hex(16)
        with self.lock:
            self.sessions.add(session)
            self.logins += 1
        cookie = f"session={session}; Path=/; HttpOnly; SameSite=Lax"
        start_response("200 OK", [("Content-Type", "application/json"), ("Set-Cookie", cookie)])
        return [b"{}"]

    @staticmethod
    def _html(start_response, body: bytes):
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [body]
