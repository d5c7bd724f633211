"""The agents' use of the app map: its budgeted rendering, and the offline rules grounding the
test cases in what the running app showed (headings, fields, routes the source hid)."""

from __future__ import annotations

import json
import re

import pytest

import schemas
from agents.offline import generate_cases
from agents.providers.base import ProviderOptions
from agents.providers.offline import OfflineProvider
from agents.rendering import render_envelope, text_tokens
from amtp_site.canonical import canonical_text
from tests.offline_checks import RUN_ID, crawl, playwright_code
from tests.samples import SAMPLE_REPOS
from tests.verify_apps import NOTES_REPO
from verification.exploration.service import app_view

STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
UPSTREAM = {
    "agent": "repo_crawler",
    "artifact_id": RUN_ID,
    "schema_id": "https://amtp.zagtrader.internal/schemas/repo_crawler/output.json",
}


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


HOME = '- banner:\n  - heading "My Notes" [level=1]\n- textbox "Search notes"\n- button "Go"'


def test_the_live_heading_and_fields_replace_the_guess_from_source():
    cases = cases_with(NOTES_REPO, app(page("/", HOME), page("/login", '- heading "Sign in"')))
    home = cases["tc_page_home"]
    assert 'the heading "My Notes"' in home["expected"]
    assert 'the textbox "Search notes" is visible' in home["expected"]
    assert 'the button "Go" is visible' in home["expected"]
    text = playwright_code(list(cases.values()))
    assert "getByRole('heading', { name: \"My Notes\", exact: true })" in text
    assert 'getByRole("textbox", { name: "Search notes", exact: true })' in text
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


def test_a_root_that_answered_404_gets_no_page_test():
    # A Django project whose URLconf has only polls/ and admin/: "/" is not a page.
    login = page("/login", '- heading "Sign in"')
    missing = cases_with(NOTES_REPO, app(page("/", status=404), login))
    assert not any(cid.startswith(("tc_page_home", "tc_api_get_root")) for cid in missing)
    assert "tc_page_login" in missing
    assert "tc_page_home" in cases_with(NOTES_REPO, app(page("/", HOME), login))
    # A server error there is a bug to report: the test stays.
    assert "tc_api_get_root" in cases_with(NOTES_REPO, app(page("/", status=500), login))


# The source names a logout page and a logout API route besides the notes app's own.
LOGOUT_REPO = {
    **NOTES_REPO,
    "auth.py": """from flask import redirect

from app import app


@app.route("/auth/logout")
def logout():
    return redirect("/")
""",
    "app.py": NOTES_REPO["app.py"]
    + """

@app.route("/api/session/logout", methods=["POST"])
def api_logout():
    return jsonify({})
""",
}


def test_a_route_that_logs_out_is_opened_signed_out_in_the_tests_own_context():
    cases = cases_with(LOGOUT_REPO, app(page("/", HOME)))
    logout = cases["tc_page_auth_logout"]
    assert logout["steps"] == ["Clear the browser's cookies", "Open /auth/logout"]
    assert "status below 500" in logout["expected"]
    assert not any("logout" in cid for cid in cases if cid != "tc_page_auth_logout")
    text = playwright_code(list(cases.values()))
    cleared = text.index("await page.context().clearCookies();")
    assert cleared < text.index('page.goto("/auth/logout")')
    assert text.count("clearCookies") == 1  # no other test leaves the shared session


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
    text = playwright_code(list(cases.values()))
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
    }
    envelope = {"run_id": RUN_ID, "upstream": UPSTREAM, "payload": payload}
    text = render_envelope({**envelope, "app_map": many_pages(n)}, budget_tokens=24_000)
    assert 20_000 < text_tokens(text) <= 24_000  # flat: the budget, whatever the app's size
    rendered = json.loads(text)
    assert rendered["payload"] == payload  # the contract's part is whole
    view = rendered["app_map"]
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


def test_the_view_goes_beside_the_payload_in_the_handoff_envelope():
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
    for payload in (
        {**crawler, "depth_level": "core"},
        {
            "run_id": RUN_ID,
            "target_framework": "playwright",
            "test_cases": list(cases_with(NOTES_REPO, view).values()),
            "coverage_notes": "",
        },
    ):
        envelope = {"run_id": RUN_ID, "upstream": UPSTREAM, "payload": payload, "app_map": view}
        schemas.validate("handoff/envelope", envelope)
    # The offline provider reads it there: the headings it showed are what the cases expect.
    provider = OfflineProvider(ProviderOptions(model="amtp-rules-v1"), agent="test_case_generator")
    message = canonical_text({**envelope, "payload": {**crawler, "depth_level": "core"}})
    answer = provider.complete(system="", messages=[{"role": "user", "content": message}], tools=[])
    (home,) = [c for c in json.loads(answer.text)["test_cases"] if c["id"] == "tc_page_home"]
    assert 'the heading "My Notes"' in home["expected"]
