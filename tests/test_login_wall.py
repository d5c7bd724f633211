"""A page that sent the browser to a login when the app was explored is tested as exactly
that: it asks for a login (the address ends on the login page, a password field shows), never
as the page asked for (Django's admin: /admin/ → /admin/login/?next=/admin/)."""

import pytest

from agents.offline.candidates import web_candidates
from agents.offline.live import login_page
from tests.offline_checks import cases_of, playwright_code
from tests.realworld_apps import script
from verification.exploration.service import app_view

LOGIN = {"path": "/admin/login/?next=/admin/", "status": 200, "title": "Log in | Django"}
LOGIN |= {"snapshot": '- heading "Log in" [level=1]', "links": [], "forms": [], "depth": 1}
WALLED = {**LOGIN, "path": "/admin/", "login_redirect": "/admin/login/?next=/admin/"}
HOME = {**LOGIN, "path": "/polls/", "title": "Polls", "snapshot": '- heading "Polls"'}


def view(*pages: dict) -> dict:
    content = {"target_url": "http://x", "unvisited": 0, "stopped": "", "trials": []}
    return app_view({**content, "pages": list(pages)})


def code_of(app_map: dict) -> str:
    return playwright_code(cases_of(web_candidates({"pages": [], "routes": []}, app_map)))


def test_a_page_behind_a_login_is_tested_as_asking_for_it():
    app_map = view(HOME, WALLED, LOGIN)
    assert app_map["behind_login"] == ["/admin/"]
    assert app_map["login_page"] == "/admin/login/"  # the path, without its query
    (case,) = [c for c in web_candidates({"pages": [], "routes": []}, app_map) if "admin" in c.key]
    assert case.title == "Page /admin/ asks for a login"
    assert case.steps == ["Open /admin/"]
    assert "Log in" not in case.title + case.expected  # never titled by the login's heading
    code = code_of(app_map)
    # Polled: a client-side router sends the browser there after the page loaded.
    assert (
        "await expect.poll(() => new URL(page.url()).pathname, 'sent to the login')"
        '.toBe("/admin/login/");' in code
    )
    assert "await expect(page.locator('input[type=\"password\"]').first()).toBeVisible();" in code
    assert 'the page it opened, not a redirect\').toBe("/admin")' not in code


def test_a_map_without_a_login_wall_has_no_such_case():
    app_map = view(HOME, LOGIN)
    assert "login_page" not in app_map and "behind_login" not in app_map
    assert not any("login" in c.title for c in web_candidates({"pages": []}, app_map))


@pytest.mark.parametrize(
    "value",
    ["//evil.example/login", "/login?next=/x", "/users/{id}", "https://x/login", 7, None, ""],
)
def test_a_hostile_login_page_is_no_login_page(value):
    app_map = {"behind_login": ["/admin/"], "login_page": value}
    assert login_page(app_map) is None
    assert not any("asks for a login" in c.title for c in web_candidates({"pages": []}, app_map))


def test_a_login_path_quote_stays_a_string():
    app_map = {"behind_login": ["/admin/"], "login_page": '/login"),process.exit(1),("'}
    code = code_of(app_map)
    assert "process.exit(1)," not in code.replace('\\"', "")  # JSON-quoted, or dropped


def test_a_passing_login_wall_test_is_not_counted_as_on_a_login_page():
    bench = script("bench_grounding")
    app_map = {"pages": [{**WALLED, "status": 200}], "behind_login": ["/admin/"]}
    expects = code_of(view(HOME, WALLED, LOGIN))
    assert bench.on_wrong_page([expects], app_map) == 0
    plain = """test('t', async ({ page }) => {
    await page.goto("/admin/");
    await expect(page.locator('body')).toBeVisible();
  });"""
    assert bench.on_wrong_page([plain], app_map) == 1
