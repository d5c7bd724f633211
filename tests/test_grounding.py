"""The agents' use of the app map: its budgeted rendering, and the offline rules grounding the
test cases in what the running app showed (headings, fields, routes the source hid)."""

from __future__ import annotations

import json
import re

import pytest

import schemas
from agents.offline import generate_cases, generate_files
from agents.rendering import render_envelope, text_tokens
from runs.exploration.service import app_view, start_paths
from tests.offline_checks import RUN_ID, TEST_DIR, check_playwright, crawl, engineer_input
from tests.samples import SAMPLE_REPOS
from tests.verify_apps import NOTES_REPO

STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
UPSTREAM = {"agent": "test_case_generator", "artifact_id": RUN_ID, "schema_id": "x"}


def page(path: str, snapshot: str = "", status: int = 200, title: str = "") -> dict:
    return {
        "path": path,
        "status": status,
        "title": title,
        "snapshot": snapshot,
        "links": [],
        "forms": [],
    }


def app(*pages: dict, unknown: int = 404) -> dict:
    return {
        "target_url": "http://127.0.0.1:8000",
        "pages": list(pages),
        "unvisited": 0,
        "unknown_path_status": unknown,
    }


def cases_with(repo: dict, app_map: dict | None, depth: str = "deep") -> dict[str, dict]:
    request = crawl(repo) | ({"app_map": app_map} if app_map else {})
    return {c["id"]: c for c in generate_cases(request, depth)["test_cases"]}


def spec_text(cases: dict[str, dict]) -> str:
    files = generate_files(
        engineer_input({"test_cases": list(cases.values()), "coverage_notes": ""}, "playwright"),
        test_dir=TEST_DIR,
        app_id=None,
    )
    check_playwright(files)  # tree-sitter, the file policy
    return "\n".join(f["contents"] for f in files)


HOME = '- banner:\n  - heading "My Notes" [level=1]\n- textbox "Search notes"\n- button "Go"'


def test_the_live_heading_and_fields_replace_the_guess_from_source():
    cases = cases_with(NOTES_REPO, app(page("/", HOME), page("/login", '- heading "Sign in"')))
    home = cases["tc_page_home"]
    assert 'the heading "My Notes"' in home["expected"]
    assert 'the textbox "Search notes" is visible' in home["expected"]
    assert 'the button "Go" is visible' in home["expected"]
    text = spec_text(cases)
    assert "getByRole('heading', { name: \"My Notes\" })" in text
    assert 'getByRole("textbox", { name: "Search notes" })' in text
    # /login: the source took it for JSON; the browser saw a page with a heading.
    assert "tc_page_login" in cases and "tc_api_get_login" not in cases
    assert "tc_api_get_login" in cases_with(NOTES_REPO, None)  # without the map: a JSON guess


def test_routes_only_the_live_app_reveals_become_cases_and_live_paths_fill_patterns():
    repo = SAMPLE_REPOS["express"]  # has GET /api/users/{id}; no page /pricing
    source = cases_with(repo, None)
    live = app(
        page("/pricing", '- heading "Plans and pricing" [level=1]'),
        page("/broken", '- heading "Oops"', status=500),  # an error page is no route
        page("/search?q=x", '- heading "Search"'),  # queries are not routes
        page("/api/users/7", ""),
    )
    grounded = cases_with(repo, live)
    assert "tc_page_pricing" not in source and "tc_page_pricing" in grounded
    assert 'the heading "Plans and pricing"' in grounded["tc_page_pricing"]["expected"]
    assert not any("broken" in cid or "search" in cid for cid in grounded)
    assert set(source) <= set(grounded)  # nothing the source gave is lost


def test_a_client_side_fallback_drops_the_404_case_and_a_real_404_keeps_it():
    pages = (page("/", HOME),)
    assert "tc_page_not_found" in cases_with(NOTES_REPO, app(*pages, unknown=404))
    assert "tc_page_not_found" not in cases_with(NOTES_REPO, app(*pages, unknown=200))
    assert "tc_page_not_found" in cases_with(NOTES_REPO, app(*pages, unknown=0))  # not probed


@pytest.mark.parametrize(
    "name",
    [
        '"); process.exit(1); ("',
        "${process.env.SECRET}",
        "`whoami`",
        "line\u2028break",
        "<script>alert(1)</script>",
        "x" * 5000,
    ],
)
def test_hostile_names_in_a_snapshot_stay_data(name):
    snapshot = f"- heading {json.dumps(name)} [level=1]\n- button {json.dumps(name)}\n- textbox"
    cases = cases_with(NOTES_REPO, app(page("/", snapshot), page("/" + "a" * 600, snapshot)))
    text = spec_text(cases)
    code = [
        STRINGS.sub('""', line) for line in text.splitlines() if not line.lstrip().startswith("//")
    ]
    assert not any(bad in line for line in code for bad in ("exit(", "whoami", "SECRET", "<script"))
    assert "${process" not in text and "`whoami`" not in text and "\u2028" not in text
    assert not any(len(cid) > 70 for cid in cases)


def test_malformed_app_maps_are_ignored_not_fatal():
    for bad in (
        "not a map",
        {"pages": "nope"},
        {"pages": [None, 3, {"path": 5}, {"path": "/x", "status": "200"}]},
        app(page("/", '- heading [level=1\n- heading "unterminated')),
    ):
        assert cases_with(NOTES_REPO, bad) == cases_with(NOTES_REPO, None)


def many_pages(n: int) -> dict:
    snapshot = "\n".join(f'- link "Item {j} of a long list"' for j in range(400))[:20_000]
    pages = [
        page(f"/section/{i}", f'- heading "Section {i}" [level=1]\n{snapshot}') for i in range(n)
    ]
    for p in pages:
        p["links"] = [f"/section/{k}" for k in range(100)]
    return app(*pages)


@pytest.mark.parametrize("n", [50, 500])
def test_the_app_map_reaches_a_model_within_the_context_budget(n):
    payload = {
        "run_id": RUN_ID,
        "target_framework": "playwright",
        "test_cases": [],
        "coverage_notes": "",
        "app_map": many_pages(n),
    }
    text = render_envelope(
        {"run_id": RUN_ID, "upstream": UPSTREAM, "payload": payload}, budget_tokens=24_000
    )
    assert 20_000 < text_tokens(text) <= 24_000  # flat: the budget, whatever the app's size
    rendered = json.loads(text)
    view = rendered["payload"]["app_map"]
    shown = [p["path"] for p in view["pages"]]
    assert shown == [f"/section/{i}" for i in range(len(shown))]  # in the order visited
    assert all(p["snapshot"].startswith('- heading "Section') for p in view["pages"])
    assert all(len(p["links"]) <= 10 for p in view["pages"])
    omitted = rendered["rendering"]["omitted"]
    if n == 500:
        assert omitted["app_map.pages"] == 500 - len(shown)
        assert len(view["pages_not_shown"]) + view["pages_not_listed"] == 500 - len(shown)
        # The offline rules still write a case for pages named only in the list.
        request = {"detected_stack": {}, "app_map": view, "run_id": RUN_ID}
        ids = {c["id"] for c in generate_cases(request, "deep")["test_cases"]}
        assert f"tc_page_section_{len(shown)}" in ids


def test_the_view_the_agents_get_passes_their_input_contracts():
    content = {
        **app(page("/", HOME)),
        "settings": {},
        "tool_versions": {},
        "stopped": "",
        "truncated": False,
        "sandbox": {"isolated": True, "blocked": []},
    }
    content["pages"][0] |= {
        "depth": 0,
        "console_errors": [],
        "screenshot": "explore/0.jpeg",
        "error": "",
        "forms": [
            {
                "action": "/s",
                "method": "get",
                "submit": "Go",
                "fields": [{"label": "Q", "name": "q", "type": "text", "required": False}],
            }
        ],
    }
    view = app_view(content)
    assert "screenshot" not in view["pages"][0] and "sandbox" not in view
    # The pages the source does not name come first: a rendering cut short keeps them.
    content["pages"] += [
        {**content["pages"][0], "path": path} for path in ("/login", "/pricing", "/notes/4")
    ]
    stack = {"routes": [{"method": "GET", "path": "/notes/<int:id>"}], "pages": [{"route": "/"}]}
    ordered = app_view(content, {"detected_stack": stack})
    assert [p["path"] for p in ordered["pages"]] == ["/login", "/pricing", "/", "/notes/4"]
    crawler = crawl(NOTES_REPO)
    schemas.validate(
        "test_case_generator/input", {**crawler, "depth_level": "core", "app_map": view}
    )
    engineer = {
        "run_id": RUN_ID,
        "target_framework": "playwright",
        "test_cases": list(cases_with(NOTES_REPO, view).values()),
        "coverage_notes": "",
        "app_map": view,
    }
    schemas.validate("test_engineer/input", engineer)


def test_exploration_starts_from_the_static_routes_the_source_names():
    stack = {
        "pages": [{"route": "/about"}, {"route": "/tasks/:id"}, {"route": "javascript:alert(1)"}],
        "routes": [
            {"method": "GET", "path": "/api/health", "json": True},
            {"method": "GET", "path": "/tasks"},
            {"method": "POST", "path": "/tasks"},
            {"method": "GET", "path": "/about"},
        ],
    }
    assert start_paths({"detected_stack": stack}, "/app", 10) == [
        "/app",
        "/about",
        "/tasks",
        "/api/health",  # the source says JSON: last, the browser tells
    ]
    assert start_paths({"detected_stack": stack}, "/", 2) == ["/", "/about"]
    assert start_paths({"detected_stack": "hostile"}, "/", 5) == ["/"]


def tried(path: str, submit: str, filled: list, appeared: list, **more) -> dict:
    return {
        "path": path,
        "form": 0,
        "submit": submit,
        "filled": [{"label": label, "type": kind, "option": opt} for label, kind, opt in filled],
        "path_after": path,
        "status": 0,
        "appeared": [{"role": role, "text": text} for role, text in appeared],
        "shows_value": False,
        "error": "",
        **more,
    }


CONTACT = tried(
    "/contact",
    "Send message",
    [("Name", "text", ""), ("Email", "email", ""), ("Country", "select", "Chile")],
    [("paragraph", "3 messages today"), ("status", "Thanks, we got your message")],
)
NEW_NOTE = tried(
    "/notes",
    "Add note",
    [("Title", "text", ""), ("I agree", "check", "")],
    [("listitem", "AMTP {tag}"), ("heading", 'Note "AMTP {tag}" saved')],
    shows_value=True,
    status=200,
)


def test_tried_forms_become_flows_that_expect_what_the_user_saw():
    trials = [
        CONTACT,
        NEW_NOTE,
        tried(
            "/signup", "Create account", [("Name", "text", "")], [("alert", "Email is required")]
        ),
        tried("/search", "Go", [("Query", "search", "")], [], error="no single button"),
        tried("/broken", "Save", [("Name", "text", "")], [("heading", "Oops")], status=500),
        tried("//evil.example", "Save", [], [("status", "Saved")]),
        tried("/quiet", "Save", [("Name", "text", "")], [("status", "${process.exit(1)}")]),
    ]
    live = app(page("/contact", '- heading "Talk to us" [level=1]'), page("/notes"))
    cases = cases_with(NOTES_REPO, live | {"trials": trials}, "core")
    flows = {cid: c for cid, c in cases.items() if cid.startswith("tc_flow_")}
    # An error, a failed trial, a 5xx, another origin and no usable outcome: no flow.
    # The main create form first (its created item was listed), then the rest.
    assert list(flows) == ["tc_flow_notes_add_note", "tc_flow_contact_send_message"]
    note, contact = flows.values()
    assert contact["priority"] == "high" and note["priority"] == "critical"  # creates, listed
    assert contact["steps"] == [
        "Open /contact",
        'Fill "Name" with a unique text',
        'Fill "Email" with a unique email',
        'Select "Chile" in "Country"',
        'Click the button "Send message"',
    ]
    # The counted text changes from run to run: the status message is the outcome.
    assert contact["expected"].startswith('the text "Thanks, we got your message" is visible')
    assert note["expected"].startswith(
        'the submitted "Title" is visible; the text "Note \\"AMTP {tag}\\" saved" is visible'
    )
    text = spec_text(flows)
    assert "const tag = `${Date.now().toString(36)}" in text and "test.info().retry" in text
    assert "page.getByLabel(\"Name\", { exact: true }).fill('AMTP ' + tag);" in text
    assert (
        "page.getByLabel(\"Email\", { exact: true }).fill('amtp+' + tag + '@example.test');" in text
    )
    assert (
        'selectOption({ label: "Chile" })' in text
        and 'getByLabel("I agree", { exact: true }).check()' in text
    )
    assert "page.getByRole('button', { name: \"Add note\", exact: true }).click();" in text
    assert 'page.getByText("Note \\"AMTP " + tag + "\\" saved").first()' in text
    assert "expect(errors, 'uncaught page errors').toEqual([]);" in text
    # Ids are stable: the flows come after every page and route case, which keep theirs.
    without = cases_with(NOTES_REPO, live, "core")
    assert {cid: c for cid, c in cases.items() if cid in without} == without


@pytest.mark.parametrize(
    "label",
    ['Name"); process.exit(1); ("', "${process.exit(1)}", "a\u2028b`</script>", "x" * 500],
)
def test_hostile_labels_and_buttons_in_trials_stay_data(label):
    hostile = tried("/contact", label, [(label, "text", "")], [("status", "Thanks " + label)])
    cases = cases_with(NOTES_REPO, app(page("/contact")) | {"trials": [hostile]})
    text = spec_text(cases)  # parses, passes the file policy
    assert "process.exit(1); (" not in text.replace('\\"', "'")
    assert "\u2028" not in text and "`</script>" not in text


def test_a_page_with_nothing_else_to_check_says_so_in_its_title():
    cases = cases_with(NOTES_REPO, app(page("/", HOME), page("/pricing")))
    assert cases["tc_page_home"]["title"] == "Home page renders"
    assert cases["tc_page_pricing"]["title"] == "Page /pricing renders (no other check known)"
