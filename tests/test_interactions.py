"""Interaction trials on a real single-page app without forms (TodoMVC, tests/fixtures/realworld/todomvc-es5):
exploration acts as a user (types and presses Enter, toggles, filters by hash route, edits by
double-click, deletes what it created), the records are checked as hostile input, and the
offline engine turns them into a journey that passes against the live app."""

import copy
import dataclasses
import json
from urllib.parse import parse_qs

import pytest

import schemas
from agents.offline import generate_cases, generate_files
from agents.offline.interaction_journeys import interaction_candidates
from agents.rendering import render_envelope, text_tokens
from amtp_site.canonical import canonical_text
from runs.demo.app import serve
from tests.contract_examples import ENVELOPE
from tests.offline_checks import TEST_DIR, check_playwright, crawl, engineer_input
from tests.test_browser import chromium_path
from tests.todomvc_app import FIXTURE, todomvc
from verification.exploration.explore import Bounds, explore
from verification.exploration.interactions import interaction
from verification.exploration.service import app_view, exploration_note
from verification.service import runner_from_settings
from verification.verify import Plan, verify

TAG = "todotrial01"
# The app's own suite (tests/fixtures/realworld/todomvc-es5/README.md): the step that exercises each
# behaviour, and the check after it that asserts its outcome.
BEHAVIOURS = {
    "add a todo": ("Type a unique text into the textbox", "Expect the created text to be visible"),
    "mark complete": ("Check the checkbox", "to be checked"),
    "edit, Enter saves": ("type an edited unique text", "edited text to be visible"),
    "Escape cancels": ("press Escape", "discarded text to be gone"),
    "delete": ("Click the button", "to be gone"),
    "show active": ('Click the link "Active"', '"#/active"'),
    "show completed": ('Click the link "Completed"', '"#/completed"'),
    "show all": ('Click the link "All"', "Expect the address to end with"),
    "listed": ("Expect the created text to be visible", ""),
}


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    chromium_path()
    server, url = serve(todomvc)
    bounds = Bounds(
        max_pages=10,
        max_depth=2,
        time_s=90,
        page_timeout_s=10,
        max_bytes=512 << 10,
        interactions=12,
    )
    app_map = explore(
        url,
        allow_hosts=["127.0.0.1"],
        runner=runner_from_settings(),
        bounds=bounds,
        shots_dir=tmp_path_factory.mktemp("shots"),
        start_paths=["/"],
        tag=TAG,
    )
    yield url, schemas.validate("exploration/app_map", app_map)
    server.shutdown()
    server.server_close()


def test_exploration_acts_as_a_user_and_hash_routes_are_routes(explored):
    _url, app_map = explored
    paths = [page["path"] for page in app_map["pages"]]
    assert paths == ["/", "/#/", "/#/active", "/#/completed"]
    assert all(page["status"] == 200 for page in app_map["pages"])
    acted = [
        (i["action"], i["target"]["name"], i["url_after"], i["item"])
        for i in app_map["interactions"]
    ]
    assert acted == [
        ("enter", "What needs to be done?", "/", "shown"),
        ("toggle", "", "/", "shown"),
        ("filter", "All", "/#/", "shown"),
        ("filter", "Active", "/#/active", "gone"),  # the item was completed: hidden here
        ("filter", "Completed", "/#/completed", "shown"),
        ("edit", "", "/#/completed", "edited"),
        ("cancel_edit", "", "/#/completed", "edited"),  # Escape kept the edited text
        ("delete", "×", "/#/completed", "gone"),  # exploration leaves nothing behind
    ]
    enter = app_map["interactions"][0]
    # New controls and the item itself appeared; the run's tag is a placeholder.
    assert {"role": "text", "text": "AMTP {tag}"} in enter["appeared"]
    assert {"role": "link", "text": "Active"} in enter["appeared"]
    assert TAG not in str(app_map["interactions"])
    assert exploration_note(app_map) == "4 page(s), 0 form(s), 8 action(s) outside forms"


# A list app of another shape (no checkbox, no filter, nothing to edit, a "Remove" button per
# item), with an item it already had: exploration removes only the item it created.
LIST_PAGE = b"""<!doctype html><html><head><title>Shopping list</title></head><body>
<h1>Shopping list</h1><label for="new">New item</label> <input id="new">
<ul id="list"><li><span>Keep me</span> <button>Remove</button></li></ul>
<script>
const list = document.getElementById("list");
list.addEventListener("click", (e) => {
  if (e.target.tagName !== "BUTTON") return;
  const li = e.target.closest("li");
  fetch("/removed?text=" + encodeURIComponent(li.querySelector("span").textContent));
  li.remove();
});
document.getElementById("new").addEventListener("keydown", (e) => {
  if (e.key !== "Enter" || !e.target.value.trim()) return;
  const li = document.createElement("li");
  li.innerHTML = "<span></span> <button>Remove</button>";
  li.querySelector("span").textContent = e.target.value.trim();
  list.append(li);
  e.target.value = "";
});
</script></body></html>"""


def test_exploration_removes_only_the_item_it_created(tmp_path):
    chromium_path()
    removed = []

    def shopping(environ, start_response):
        if environ["PATH_INFO"] == "/removed":
            removed.append(parse_qs(environ["QUERY_STRING"])["text"][0])
        start_response("200 OK", [("Content-Type", "text/html")])
        return [LIST_PAGE]

    server, url = serve(shopping)
    try:
        bounds = Bounds(
            max_pages=2,
            max_depth=0,
            time_s=60,
            page_timeout_s=10,
            max_bytes=512 << 10,
            interactions=12,
        )
        app_map = explore(
            url,
            allow_hosts=["127.0.0.1"],
            runner=runner_from_settings(),
            bounds=bounds,
            shots_dir=tmp_path,
            start_paths=["/"],
            tag=TAG,
        )
    finally:
        server.shutdown()
        server.server_close()
    acted = [(i["action"], i["target"]["name"], i["item"]) for i in app_map["interactions"]]
    assert acted == [("enter", "New item", "shown"), ("delete", "Remove", "gone")]
    assert removed == [f"AMTP {TAG}"]  # never "Keep me"
    (journey,) = interaction_candidates(app_map, "the app is running")
    assert journey.title == "Journey /: create, see it, delete"
    assert (
        'Click the button "Remove" of the created item, accepting its confirmation' in journey.steps
    )


def hostile(**overrides) -> dict:
    raw = {
        "path": "/",
        "action": "enter",
        "target": {"role": "textbox", "name": "New todo"},
        "before": '- textbox "New todo"',
        "after": f'- textbox "New todo"\n- text: AMTP {TAG}',
        "url_after": "/#/",
        "error": "",
    }
    return raw | overrides


@pytest.mark.parametrize(
    "overrides",
    [
        {"path": "/elsewhere"},  # not a live page of the map
        {"path": ["/"]},
        {"action": "click_everything"},  # not a known action
        {"action": "delete", "target": {"role": "link", "name": "x"}},  # wrong role
        {"target": {"role": "textbox", "name": ""}},  # a typed field needs a name
        {"target": {"role": "textbox", "name": "n" * 121}},
        {"target": "textbox"},
    ],
)
def test_hostile_interaction_records_are_refused(overrides):
    assert interaction(hostile(**overrides), TAG, {"/"}, lambda p: True) is None


def test_an_interaction_record_is_reduced_to_what_changed_and_bounded():
    found = interaction(
        hostile(url_after="//evil.example/"),
        TAG,
        {"/"},
        lambda p: p.startswith("/") and not p.startswith("//"),
    )
    assert found == {
        "path": "/",
        "action": "enter",
        "target": {"role": "textbox", "name": "New todo"},
        "url_after": "",  # another origin's address is dropped
        "item": "shown",
        "appeared": [{"role": "text", "text": "AMTP {tag}"}],
        "removed": [],
        "error": "",
    }
    failed = interaction(hostile(error="x" * 900), TAG, {"/"}, lambda p: True)
    assert failed["item"] == "" and failed["appeared"] == [] and len(failed["error"]) == 500


def test_a_failed_action_ends_the_journey_where_it_failed():
    app_map = {
        "interactions": [
            interaction(hostile(), TAG, {"/"}, lambda p: True),
            {
                **interaction(hostile(), TAG, {"/"}, lambda p: True),
                "action": "toggle",
                "target": {"role": "checkbox", "name": ""},
            },
            {
                "path": "/",
                "action": "edit",
                "target": {"role": "textbox", "name": ""},
                "url_after": "",
                "item": "",
                "appeared": [],
                "removed": [],
                "error": "a double-click opened no field to edit",
            },
            {
                "path": "/",
                "action": "delete",
                "target": {"role": "button", "name": "Delete"},
                "url_after": "/",
                "item": "gone",
                "appeared": [],
                "removed": [],
                "error": "",
            },
        ]
    }
    (journey,) = interaction_candidates(app_map, "the app is running")
    assert journey.title == "Journey /: create, see it, mark it"
    assert not any("Double-click" in s or "Delete" in s for s in journey.steps)
    # A name that would break out of its quotes stays quoted text.
    app_map["interactions"][0]["target"]["name"] = 'New"); process.exit(1); ("'
    code = code_for(interaction_candidates(app_map, "the app is running"))
    assert '{ name: "New\\"); process.exit(1); (\\"", exact: true }' in code


def code_for(candidates) -> str:
    cases = [
        {
            "id": f"tc_{c.key}",
            "title": c.title,
            "steps": c.steps,
            "expected": c.expected,
            "priority": c.priority,
            "preconditions": c.preconditions,
        }
        for c in candidates
    ]
    files = generate_files(
        engineer_input({"test_cases": cases, "coverage_notes": ""}, "playwright"),
        test_dir=TEST_DIR,
        app_id=None,
    )
    return "\n".join(f["contents"] for f in files)


def repository() -> dict[str, str]:
    return {
        p.name: p.read_text()
        for p in sorted(FIXTURE.iterdir())
        if p.suffix in (".html", ".js", ".md")
    }


def test_the_journey_exercises_the_apps_own_behaviours_and_passes_first_time(explored, tmp_path):
    url, app_map = explored
    request = crawl(repository()) | {"app_map": app_view(app_map)}
    cases = generate_cases(request, "core")["test_cases"]
    (journey,) = [c for c in cases if c["id"].startswith("tc_journey")]
    assert cases[0] is journey  # the journey leads
    assert journey["title"] == (
        "Journey /: create, see it, mark it, filter, edit, cancel an edit, delete"
    )
    steps = "\n".join(journey["steps"])
    exercised = [b for b, (act, check) in BEHAVIOURS.items() if act in steps and check in steps]
    assert len(exercised) == len(BEHAVIOURS) == 9, exercised
    files = generate_files(
        engineer_input({"test_cases": [journey], "coverage_notes": ""}, "playwright"),
        test_dir=TEST_DIR,
        app_id=None,
    )
    check_playwright(files)
    plan = Plan(
        run_id="interaction-check",
        framework="playwright",
        files=files,
        target_url=url,
        test_dir=TEST_DIR,
        failing_tests="fixme",
        heal_rounds=0,
        budget_s=120,
        runner=dataclasses.replace(runner_from_settings(), retries=0),
        evidence_dir=tmp_path / "evidence",
        allow_hosts=["127.0.0.1"],
    )
    report = verify(plan, heal=lambda payload, seconds: {})
    (test,) = report["tests"]
    assert (test["status"], test["attempts"]) == ("passed", 1), test


def test_an_edit_field_is_the_focused_one_or_the_named_one_that_opened():
    # Lit's TodoMVC (shadow DOM) opens a field named "Edit todo" without focusing it; the ES5
    # one focuses an unnamed field. A shadow root's host matches ":focus" too: never "*:focus".
    records = [
        interaction(hostile(), TAG, {"/"}, lambda p: True),
        {
            "path": "/",
            "action": "edit",
            "target": {"role": "textbox", "name": "Edit todo"},
            "url_after": "/",
            "item": "edited",
            "appeared": [],
            "removed": [],
            "error": "",
        },
        {
            "path": "/",
            "action": "cancel_edit",
            "target": {"role": "textbox", "name": ""},
            "url_after": "/",
            "item": "edited",
            "appeared": [],
            "removed": [],
            "error": "",
        },
    ]
    code = code_for(interaction_candidates({"interactions": records}, "the app is running"))
    named = 'page.getByRole("textbox", { name: "Edit todo", exact: true })'
    assert f"await {named}.fill('AMTP ' + tag + ' edited');" in code
    assert f'await {named}.press("Enter");' in code
    focused = 'page.locator("input:focus, textarea:focus, [contenteditable]:focus").last()'
    assert f"await {focused}.fill('AMTP ' + tag + ' dropped');" in code
    assert f'await {focused}.press("Escape");' in code
    assert "*:focus" not in code


def test_a_rendering_cut_to_the_budget_keeps_the_first_actions_whole_enough_to_replay():
    changed = [{"role": "text", "text": f"AMTP {{tag}} {'w' * 180} {i}"} for i in range(10)]
    record = {
        "path": "/",
        "action": "filter",
        "target": {"role": "link", "name": "Active"},
        "url_after": "/#/active",
        "item": "gone",
        "appeared": changed,
        "removed": changed,
        "error": "",
    }
    envelope = copy.deepcopy(ENVELOPE)
    envelope["app_map"]["interactions"] = [record] * 30
    schemas.validate("handoff/envelope", envelope)
    rendered = json.loads(render_envelope(envelope, budget_tokens=1500))
    shown = rendered["app_map"]["interactions"]
    assert 0 < len(shown) < 30  # the first actions, in order, without what they changed
    assert shown == [{**record, "appeared": [], "removed": []}] * len(shown)
    omitted = rendered["rendering"]["omitted"]
    assert omitted["app_map.interactions"] == 30 - len(shown)
    assert omitted["app_map.interaction_changes"] == 30
    assert text_tokens(canonical_text(rendered)) <= 1500
    assert rendered["app_map"]["pages"]  # the pages keep the larger share
