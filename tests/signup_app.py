"""A server-rendered app with a sign-up form and pages behind a login, on loopback, modelled
on Flask's tutorial "flaskr" (tests/fixtures/realworld/flaskr: the ``auth`` blueprint under
``/auth``, ``login_required`` redirecting to ``/auth/login``, errors shown as flashed text,
``/create`` writing a post whose title WTForms-style ``Length(20, 80)`` checks), with the e-mail field and password rule many sign-up forms add:
the address is checked as python-email-validator checks it (a special-use domain such as
``.test`` is refused), and the password may hold letters and digits only (``strict``), so a
first account with a symbol is refused and the sign-up must adapt. The account page shows
the user name (as flaskr's nav does) and, carelessly, the password: both must be scrubbed."""

from __future__ import annotations

import html
import secrets
import threading
from urllib.parse import parse_qs

# email_validator.SPECIAL_USE_DOMAIN_NAMES (python-email-validator 2.x).
SPECIAL_USE = ("arpa", "invalid", "local", "localhost", "onion", "test")

REGISTER = """<h1>Register</h1>{flash}<form method="post">
<label for="username">Username</label><input name="username" id="username" required>
<label for="email">Email</label><input type="email" name="email" id="email" required>
<label for="password">Password</label><input type="password" name="password" id="password"
 required minlength="8"><input type="submit" value="Register"></form>"""
LOGIN = """<h1>Log In</h1>{flash}<form method="post">
<label for="username">Username</label><input name="username" id="username" required>
<label for="password">Password</label><input type="password" name="password" id="password"
 required><input type="submit" value="Log In"></form>"""
CREATE = """<h1>New Post</h1><form method="post">
<label for="title">Title</label><input name="title" id="title" required>
<label for="body">Body</label><textarea name="body" id="body"></textarea>
<input type="submit" value="Save"></form>"""


class SignupApp:
    def __init__(self, strict: bool = True) -> None:
        self.strict = strict
        self.users: dict[str, tuple[str, str]] = {}  # username → (email, password)
        self.sessions: dict[str, str] = {}  # session → username
        self.refused: list[str] = []  # what the sign-up form said
        self.posts: list[tuple[str, str]] = []  # (title, author)
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        path, method = environ.get("PATH_INFO", "/"), environ["REQUEST_METHOD"]
        cookie = environ.get("HTTP_COOKIE", "")
        sid = next((c.split("=", 1)[1] for c in cookie.split("; ") if c.startswith("s=")), "")
        user = self.sessions.get(sid)
        form = {}
        if method == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(size).decode()
            form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
        if path == "/auth/register":
            return self.register(start_response, method, form)
        if path == "/auth/login":
            return self.log_in(start_response, method, form)
        if path == "/auth/logout":
            self.sessions.pop(sid, None)
            return _redirect(start_response, "/")
        if path in ("/create", "/account", "/welcome"):
            if user is None:  # flaskr's login_required
                return _redirect(start_response, "/auth/login")
            if path == "/welcome":  # microblog's index greets the signed-in user by name
                body = f"<h1>Hi, {html.escape(user)}!</h1>"
                return _html(start_response, "Welcome", body, user)
            if path == "/account":
                # A careless debug line, as in tests/login_app.py: the password on the page.
                body = f"<h1>Your account</h1><p>{user}: {self.users[user][1]}</p>"
                return _html(start_response, "Account", body, user)
            if method == "POST" and 20 <= len(form.get("title", "")) <= 80:
                with self.lock:
                    self.posts.append((form["title"], user))
                return _redirect(start_response, "/")
            # WTForms' Length(min=20, max=80) message, flashed as flaskr flashes errors.
            said = "Field must be between 20 and 80 characters long." if method == "POST" else ""
            flash = f'<div class="flash">{said}</div>' if said else ""
            return _html(start_response, "New Post", flash + CREATE, user)
        if path == "/":
            items = "".join(f"<article><h2>{html.escape(t)}</h2></article>" for t, _ in self.posts)
            links = '<a href="/create">New</a> <a href="/account">Account</a>'
            links += ' <a href="/welcome">Welcome</a>'
            return _html(start_response, "Posts", f"<h1>Posts</h1>{links}{items}", user)
        start_response("404 Not Found", [("Content-Type", "text/html")])
        return [b"<h1>Not found</h1>"]

    def register(self, start_response, method, form):
        error = ""
        if method == "POST":
            name, email, password = (form.get(k, "") for k in ("username", "email", "password"))
            domain = email.rpartition("@")[2].lower()
            if "." not in domain or domain.rsplit(".", 1)[-1] in SPECIAL_USE:
                error = f"The domain name {domain} is a special-use or reserved name."
            elif self.strict and not password.isalnum():
                error = "Password must contain only letters and digits."
            elif name in self.users:
                error = f"User {name} is already registered."
            else:
                with self.lock:
                    self.users[name] = (email, password)
                return _redirect(start_response, "/auth/login")  # flaskr: go and log in
            with self.lock:
                self.refused.append(error)
        flash = f'<div class="flash">{html.escape(error)}</div>' if error else ""
        return _html(start_response, "Register", REGISTER.format(flash=flash), None)

    def log_in(self, start_response, method, form):
        error = ""
        if method == "POST":
            name = form.get("username", "")
            if name not in self.users or self.users[name][1] != form.get("password"):
                error = "Incorrect username or password."
            else:
                sid = secrets.token_hex(16)
                with self.lock:
                    self.sessions[sid] = name
                cookie = ("Set-Cookie", f"s={sid}; Path=/; HttpOnly; SameSite=Lax")
                start_response("302 Found", [("Location", "/"), cookie])
                return [b""]
        flash = f'<div class="flash">{html.escape(error)}</div>' if error else ""
        return _html(start_response, "Log In", LOGIN.format(flash=flash), None)


def _redirect(start_response, where: str):
    start_response("302 Found", [("Location", where)])
    return [b""]


def _html(start_response, title: str, body: str, user: str | None):
    if user:
        nav = f'<nav><span>{html.escape(user)}</span> <a href="/auth/logout">Log Out</a></nav>'
    else:
        nav = '<nav><a href="/auth/register">Register</a> <a href="/auth/login">Log In</a></nav>'
    page = f"<!doctype html><title>{title} - Flaskr</title>{nav}<section>{body}</section>"
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
    return [page.encode()]
