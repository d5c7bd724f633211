"""Forms as Express's MVC example writes them: a <label for="user[name]"> whose "for" names the
field's name, not an id, so the field inside it has no accessible name (getByLabel finds
none), and edit forms that rename a record the app already had. Exploration fills the field
through the label a user sees and puts the record's value back; the flow a test runs does the
same, in its clean-up, so the pages explored before still show what their tests expect."""

import html
from urllib.parse import parse_qs

import pytest

from agents.offline.flows import flow_candidates, trial_steps
from runs.demo.app import serving
from tests.exploring import bounds, explore_loopback
from tests.offline_checks import cases_of, joined, playwright_files
from tests.plans import verified
from tests.test_browser import chromium_path
from verification.exploration.trials import trial

TAG = "editform01"


class Users:
    """/user/0 shows the user's name and pets and links to /user/1; /user/<id>/edit renames
    the user (Update) and adds a pet (Add), both fields inside labels whose "for" names no
    id. User 1's forms are user 0's forms on another record: one trial each is enough."""

    def __init__(self) -> None:
        self.name, self.pets = "TJ", ["Tobi"]
        self.other = "Guillermo"
        self.posts: list[str] = []

    def __call__(self, environ, start_response):
        path = environ["PATH_INFO"]
        if environ["REQUEST_METHOD"] == "POST":
            self.posts.append(path)
            size = int(environ.get("CONTENT_LENGTH") or 0)
            form = parse_qs(environ["wsgi.input"].read(size).decode())
            if path == "/user/0":
                self.name = form.get("user[name]", [self.name])[0]
            elif path == "/user/1":
                self.other = form.get("user[name]", [self.other])[0]
            elif path == "/user/0/pet":
                self.pets.append(form.get("pet[name]", [""])[0])
            start_response("302 Found", [("Location", path.removesuffix("/pet"))])
            return [b""]
        user = path.split("/")[2] if path.startswith("/user/") else ""
        name = html.escape(self.name if user == "0" else self.other)
        if path in ("/user/0", "/user/1"):
            pets = "".join(f"<li>{html.escape(p)}</li>" for p in self.pets if user == "0")
            body = f'<h1>{name}</h1><ul>{pets}</ul><a href="/user/1/edit">Guillermo</a>'
        elif path in ("/user/0/edit", "/user/1/edit"):
            body = (
                f'<h1>{name}</h1><form action="/user/{user}" method="post">'
                f'<label for="user[name]">Name: <input type="text" name="user[name]" value="{name}">'
                '</label><input type="submit" value="Update"></form>'
                f'<form action="/user/{user}/pet" method="post"><label for="pet[name]">Pet: '
                '<input type="text" name="pet[name]" placeholder="Pet Name"></label>'
                '<input type="submit" value="Add"></form>'
            )
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found"]
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [f"<!doctype html><title>{name}</title>{body}".encode()]


@pytest.fixture
def users():
    app = Users()
    with serving(app) as url:
        yield app, url


def test_a_field_in_a_label_that_names_none_is_filled_and_the_record_put_back(users, tmp_path):
    chromium_path()
    app, url = users
    app_map = explore_loopback(
        url,
        tmp_path / "shots",
        start_paths=["/user/0/edit", "/user/0"],
        bounds=bounds(max_pages=5, max_depth=1, page_timeout_s=10, form_trials=5),
        tag=TAG,
    )
    # One trial per form of a route: /user/1/edit's forms are /user/0/edit's.
    assert sorted((t["path"], t["submit"]) for t in app_map["trials"]) == [
        ("/user/0/edit", "Add"),
        ("/user/0/edit", "Update"),
    ]
    assert "/user/1/edit" in [page["path"] for page in app_map["pages"]]
    assert app.other == "Guillermo" and "/user/1" not in app.posts
    tried = {t["submit"]: t for t in app_map["trials"]}
    assert tried["Update"]["filled"] == [
        {"label": "Name:", "type": "text", "option": "", "within_label": True, "edits": True}
    ]
    assert tried["Update"]["shows_value"] is True
    assert tried["Add"]["filled"] == [
        {"label": "Pet:", "type": "text", "option": "", "within_label": True}
    ]
    assert app.name == "TJ"  # the trial renamed the user, then put the name back
    flows = {c.title: c for c in flow_candidates(app_map, "the app is running")}
    update = flows['Flow /user/0/edit: fill the form and click "Update"; the user sees the outcome']
    files = playwright_files(cases_of(flows.values()))
    code = joined(files)
    field = (
        "page.locator('label').filter({ hasText: \"Name:\" }).locator('input, textarea, select')"
    )
    assert f'was["Name:"] = await {field}.inputValue();' in code
    assert f"await {field}.fill('AMTP ' + tag);" in code
    assert 'if (was["Name:"] === undefined) return;' in code
    assert any("with the value it had" in step for step in update.steps)
    report = verified(files, url, tmp_path / "evidence", run_id="edit-forms")
    assert [(t["status"], t["attempts"]) for t in report["tests"]] == [("passed", 1)] * 2, report
    assert app.name == "TJ"  # the flow put it back too
    assert app.pets[0] == "Tobi" and len(app.pets) == 3  # the trial's pet, then the flow's


FORM = {"action": "/user/0", "method": "post", "submit": "Update", "fields": []}
FORM["fields"] = [{"label": "Name:", "name": "user[name]", "type": "text", "required": False}]
PAGES = {"/user/0/edit": {"forms": [FORM]}}


@pytest.mark.parametrize("value", ["yes", 1, None, [], {"x": True}])
def test_what_the_box_says_of_a_filled_field_is_kept_only_when_true(value):
    raw = {"path": "/user/0/edit", "form": 0, "before": "", "after": ""}
    raw["filled"] = [{"label": "Name:", "type": "text", "within_label": value, "edits": value}]
    (filled,) = trial(raw, TAG, PAGES)["filled"]
    assert filled == {"label": "Name:", "type": "text", "option": ""}


def test_a_flow_finds_the_field_through_its_label_and_puts_the_value_back():
    item = {"label": "Name:", "type": "text", "within_label": True, "edits": True}
    steps = trial_steps({"filled": [item]}, "/user/0/edit", "Update")
    assert steps == [
        "Open /user/0/edit",
        'Remember the value of the field in the label "Name:"',
        'Fill the field in the label "Name:" with a unique text',
        'Click the button "Update"',
        "Clean up: Open /user/0/edit",
        'Clean up: Fill the field in the label "Name:" with the value it had',
        'Clean up: Click the button "Update"',
    ]
    # Only text fields: a checkbox or a select inside such a label makes no flow.
    for kind in ("check", "select"):
        assert trial_steps({"filled": [{**item, "type": kind}]}, "/x", "Save") is None
    plain = trial_steps({"filled": [{"label": "Title", "type": "text"}]}, "/new", "Add")
    assert plain == ["Open /new", 'Fill "Title" with a unique text', 'Click the button "Add"']


def test_a_label_text_reaches_the_test_quoted():
    label = 'Name"), process.exit(1), ("'
    item = {"label": label, "type": "text", "within_label": True, "edits": True}
    case = {
        "id": "tc_flow_x",
        "title": "Flow",
        "steps": trial_steps({"filled": [item]}, "/user/0/edit", "Update"),
        "expected": "the page responds with a 2xx status",
        "priority": "high",
        "preconditions": [],
    }
    code = playwright_files([case])[0]["contents"]
    assert 'hasText: "Name\\"), process.exit(1), (\\""' in code
    assert 'was["Name\\"), process.exit(1), (\\""]' in code
