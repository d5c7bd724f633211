"""A small notes app with accounts, as Flask's tutorial app (flaskr) has them, for journey
tests on loopback: ``/register`` and ``/login`` forms (Username, Password), ``/`` lists every
note (its title, and for its author an "Edit" link), ``/notes/new`` (signed in) creates one
(Title, Body; button "Create") and lands on ``/``, whose "Search" form (a GET) filters the
list by title; a note's title links to its page ``/notes/<id>``; ``/notes/<id>/edit`` (its author) has a
"Save" form and a "Delete" form whose button asks for confirmation. A username already taken
is refused ("User … is already registered."), as flaskr does, so two runs that chose the
same name would collide. ``refuse_deletes`` makes that many deletes answer as if done and
keep the note (a broken delete, for clean-up tests)."""

from __future__ import annotations

import html
import itertools
import secrets
import threading
from urllib.parse import parse_qs

USERNAME, PASSWORD = "qa", "correct horse"


def _page(title: str, body: str, user: str | None) -> bytes:
    nav = (
        f'<span>{html.escape(user)}</span> <a href="/notes/new">New note</a>'
        ' <a href="/logout">Log out</a>'
        if user
        else '<a href="/register">Register</a> <a href="/login">Log in</a>'
    )
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body><nav>{nav}</nav>"
        f"<main>{body}</main></body></html>"
    ).encode()


ACCOUNT_FORM = (
    '<h1>{title}</h1>{flash}<form method="post"><label for="u">Username</label>'
    '<input id="u" name="username" required><label for="p">Password</label>'
    '<input id="p" name="password" type="password" required>'
    '<button type="submit">{button}</button></form>'
)
NOTE_FORM = (
    '<form method="post"><label for="t">Title</label>'
    '<input id="t" name="title" value="{title}" required><label for="b">Body</label>'
    '<textarea id="b" name="body">{body}</textarea><button type="submit">{button}</button></form>'
)
DELETE_FORM = (
    '<form method="post" action="/notes/{id}/delete">'
    '<button type="submit" onclick="return confirm(\'Delete this note?\');">Delete</button>'
    "</form>"
)


class JourneyApp:
    def __init__(self) -> None:
        self.users = {USERNAME: PASSWORD}
        self.sessions: dict[str, str] = {}
        self.notes = {1: {"id": 1, "title": "Welcome", "body": "First note.", "by": USERNAME}}
        self.ids = itertools.count(2)
        self.refuse_deletes = 0
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/")
        cookie = environ.get("HTTP_COOKIE", "")
        sid = next((c[4:] for c in cookie.split("; ") if c.startswith("sid=")), "")
        user = self.sessions.get(sid)
        form = {}
        if method == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            form = {k: v[0] for k, v in parse_qs(environ["wsgi.input"].read(size).decode()).items()}
        with self.lock:
            query = parse_qs(environ.get("QUERY_STRING", "")).get("q", [""])[0]
            return self.route(method, path, user, sid, form, query, start_response)

    def route(self, method, path, user, sid, form, query, start_response):
        if path == "/":
            return self._ok(start_response, "Notes", self._list(user, query), user)
        if path in ("/register", "/login"):
            return self.account(method, path, form, start_response)
        if path == "/logout":
            self.sessions.pop(sid, None)
            return self._go(start_response, "/")
        if not path.startswith("/notes/"):
            start_response("404 Not Found", [("Content-Type", "text/html")])
            return [_page("Not found", "<h1>Not found</h1>", user)]
        if user is None:
            return self._go(start_response, "/login")
        if path == "/notes/new":
            return self.create(method, user, form, start_response)
        parts = path.split("/")  # /notes/<id>[/<edit|delete>]
        if len(parts) == 3 and parts[2].isdigit() and int(parts[2]) in self.notes:
            shown = self.notes[int(parts[2])]
            body = f"<h1>{html.escape(shown['title'])}</h1><p>{html.escape(shown['body'])}</p>"
            return self._ok(start_response, shown["title"], body, user)
        note = self.notes.get(int(parts[2])) if len(parts) == 4 and parts[2].isdigit() else None
        if note is None or note["by"] != user:
            start_response("404 Not Found", [("Content-Type", "text/html")])
            return [_page("Not found", "<h1>Not found</h1>", user)]
        if parts[3] == "delete" and method == "POST":
            if self.refuse_deletes:
                self.refuse_deletes -= 1
            else:
                del self.notes[note["id"]]
            return self._go(start_response, "/")
        if parts[3] == "edit" and method == "POST" and form.get("title"):
            note.update(title=form["title"], body=form.get("body", ""))
            return self._go(start_response, "/")
        fields = {k: html.escape(note[k]) for k in ("title", "body")}
        body = f"<h1>Edit {fields['title']}</h1>" + NOTE_FORM.format(**fields, button="Save")
        return self._ok(start_response, "Edit", body + DELETE_FORM.format(id=note["id"]), user)

    def account(self, method, path, form, start_response):
        register = path == "/register"
        title, button = ("Register", "Register") if register else ("Log in", "Log in")
        flash = ""
        name, password = form.get("username", ""), form.get("password", "")
        if method == "POST" and register:
            if name in self.users:
                flash = f'<p role="alert">User {html.escape(name)} is already registered.</p>'
            elif name and password:
                self.users[name] = password
                return self._go(start_response, "/login")
        elif method == "POST":
            if name and self.users.get(name) == password:
                sid = secrets.token_urlsafe(16)
                self.sessions[sid] = name
                return self._go(start_response, "/", f"sid={sid}; Path=/; HttpOnly")
            flash = '<p role="alert">Incorrect username or password.</p>'
        body = ACCOUNT_FORM.format(title=title, flash=flash, button=button)
        return self._ok(start_response, title, body, None)

    def create(self, method, user, form, start_response):
        if method == "POST" and form.get("title"):
            note_id = next(self.ids)
            self.notes[note_id] = {
                "id": note_id,
                "title": form["title"],
                "body": form.get("body", ""),
                "by": user,
            }
            return self._go(start_response, "/")
        body = "<h1>New note</h1>" + NOTE_FORM.format(title="", body="", button="Create")
        return self._ok(start_response, "New note", body, user)

    def _list(self, user: str | None, query: str = "") -> str:
        items = []
        for note in self.notes.values():
            if query.lower() not in note["title"].lower():
                continue
            edit = f' <a href="/notes/{note["id"]}/edit">Edit</a>' if note["by"] == user else ""
            title = f'<a href="/notes/{note["id"]}">{html.escape(note["title"])}</a>'
            items.append(
                f"<li><article><h2>{title}</h2>"
                f"<p>{html.escape(note['body'])}</p>{edit}</article></li>"
            )
        search = (
            '<form method="get" action="/"><label for="q">Search</label>'
            '<input id="q" name="q" type="search"><button type="submit">Search</button></form>'
        )
        found = "<ul>" + "".join(items) + "</ul>" if items else "<p>No notes match.</p>"
        return "<h1>Notes</h1>" + search + found

    @staticmethod
    def _ok(start_response, title, body, user):
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [_page(title, body, user)]

    @staticmethod
    def _go(start_response, where, cookie=""):
        headers = [("Location", where)] + ([("Set-Cookie", cookie)] if cookie else [])
        start_response("303 See Other", headers)
        return [b""]


# The app's source as a repository holds it (the offline crawl reads its routes).
JOURNEY_REPO = {
    "requirements.txt": "flask\n",
    "app.py": """from flask import Flask

app = Flask(__name__)


@app.route("/")
def index():
    return render_template("index.html")


@app.route("/register", methods=["GET", "POST"])
def register():
    return render_template("register.html")


@app.route("/login", methods=["GET", "POST"])
def login():
    return render_template("login.html")


@app.route("/notes/new", methods=["GET", "POST"])
def create():
    return render_template("create.html")


@app.route("/notes/<int:id>")
def show(id):
    return render_template("show.html")


@app.route("/notes/<int:id>/edit", methods=["GET", "POST"])
def update(id):
    return render_template("update.html")


@app.route("/notes/<int:id>/delete", methods=["POST"])
def delete(id):
    return redirect("/")
""",
}
