"""Logging in through the real box: ExploreApp logs into a login-gated app (JSON login by
fetch, client-side navigation) and maps the pages only a session sees; VerifyTests' tests run
from the storage state of the AMTP-written setup project; a wrong password is a clear error.
Nothing read back from the box holds the credentials."""

import json

import pytest

from agents.offline import generate_cases, generate_files
from repositories.credentials import Credentials, in_use
from repositories.login import Recipe
from runs.demo.app import serving
from tests.exploring import bounds, explore_loopback
from tests.login_app import USERNAME, LoginApp
from tests.plans import verified
from tests.test_browser import chromium_path
from verification.errors import LoginFailed
from verification.login import Login

PASSWORD = "canary-login-7f3Kq9"
BY_PATH = Recipe("/login", "Email", "Password", "Sign in", "/account")
BY_TEXT = Recipe("/login", "Email", "Password", "Sign in", "Your account")


@pytest.fixture
def app():
    chromium_path()
    app = LoginApp(PASSWORD, echo_password=True)
    with serving(app) as app.url:
        yield app


def explore_logged_in(
    app, tmp_path, password: str, max_pages: int = 10, max_depth: int = 3, **options
) -> dict:
    """The map of ``app`` explored logged in by the recipe; ``options`` go to ``explore``."""
    credentials = Credentials(USERNAME, password)
    limits = bounds(max_pages=max_pages, max_depth=max_depth, page_timeout_s=10, max_bytes=1 << 20)
    with in_use(credentials):
        return explore_loopback(
            app.url, tmp_path, bounds=limits, login=Login(BY_PATH, credentials), **options
        )


def test_exploration_logs_in_and_maps_what_only_a_session_sees(app, tmp_path):
    # The source's routes are start paths: its logout route must not end the session.
    app_map = explore_logged_in(app, tmp_path, PASSWORD, start_paths=("/", "/logout"))
    pages = {page["path"]: page for page in app_map["pages"]}
    assert app.logins == 1
    assert '- heading "Quarterly report" [level=1]' in pages["/account/report"]["snapshot"]
    assert "/logout" in pages["/account"]["links"]  # listed, never followed
    assert "/logout" not in pages and ("/logout", True) not in app.gated
    assert all(valid for _path, valid in app.gated)
    # the app shows the user name and (a careless debug line) the password: both scrubbed
    shown = json.dumps(app_map)
    assert PASSWORD not in shown and USERNAME not in shown
    assert "[REDACTED:held-secret]" in pages["/account"]["snapshot"]


def test_a_wrong_password_fails_with_what_the_page_showed(app, tmp_path):
    with pytest.raises(LoginFailed) as failed:
        explore_logged_in(app, tmp_path, "not-the-password")
    message = failed.value.message
    assert message.startswith("login failed at /login: "), message
    assert 'it shows "Invalid email or password"' in message and "the page is /login" in message
    assert app.logins == 0 and "not-the-password" not in message


REPORT_SPEC = """import { test, expect } from '@playwright/test';

test('the report is shown', async ({ page }) => {
  await page.goto('/account/report');
  await expect(page.getByRole('heading', { name: 'Quarterly report' })).toBeVisible();
});
"""
LEAKING_SPEC = """import { test, expect } from '@playwright/test';

test('leaks the password', async ({ page }) => {
  await page.goto('/account');
  expect(`pw=${process.env.AMTP_E2E_PASSWORD}`).toBe('nothing');
});
"""


def test_the_tests_start_from_the_setup_projects_storage_state(app, tmp_path):
    credentials = Credentials(USERNAME, PASSWORD)
    files = [
        {"path": "e2e/amtp/report.spec.ts", "contents": REPORT_SPEC},
        {"path": "e2e/amtp/leak.spec.ts", "contents": LEAKING_SPEC},
    ]
    with in_use(credentials):
        report = verified(files, app.url, tmp_path / "evidence", login=Login(BY_TEXT, credentials))
    tests = {t["title"]: t for t in report["tests"]}
    assert tests["the report is shown"]["status"] == "passed"  # /account/report needs a session
    assert report["totals"]["tests"] == 2  # the setup project's test is not one of them
    assert app.logins == 1 and ("/account/report", True) in app.gated
    leak = tests["leaks the password"]
    # the specs' box holds the setup's storage state, never the password
    assert leak["status"] == "quarantined" and "pw=undefined" in leak["error"]
    # its trace and error context hold the password as the test saw it: not kept
    assert {e["kind"] for e in leak["evidence"]} <= {"screenshot"}
    assert PASSWORD not in json.dumps(report)
    kept = [p.read_bytes() for p in (tmp_path / "evidence").rglob("*") if p.is_file()]
    assert not any(PASSWORD.encode() in data for data in kept)


def test_a_write_is_also_sent_signed_out_and_kept_where_it_ends_elsewhere(app, tmp_path):
    """Logged in by the recipe, a write the tests send is probed in the session and, in a
    request context of its own, without it: signed out it ends on the login page."""
    app_map = explore_logged_in(
        app,
        tmp_path,
        PASSWORD,
        max_pages=3,
        max_depth=1,
        writes=[["POST", "/account/report"], ["POST", "/login"]],
    )
    answered = {(w["path"], w["payload"]): w["path_after"] for w in app_map["writes"]}
    assert answered == {
        ("/account/report", "empty"): "/account/report",  # signed in: the page itself
        ("/account/report", "signed_out"): "/login",  # signed out: the login
        ("/login", "empty"): "/login",  # the same either way: no signed-out record
    }
    assert app.logins == 1  # the probes never logged in again
    # Its test, in the suite's signed-in project, sends it without the session all the same.
    stack = {"runtime": "python", "routes": [{"method": "POST", "path": "/account/report"}]}
    request = {"run_id": "r", "detected_stack": stack | {"pages": []}, "app_map": app_map}
    cases = generate_cases(request, "standard")["test_cases"]
    (case,) = [c for c in cases if c["id"].endswith("_signed_out")]
    files = generate_files(
        {"target_framework": "playwright", "test_cases": [case]}, test_dir="e2e/amtp", app_id=None
    )
    credentials = Credentials(USERNAME, PASSWORD)
    with in_use(credentials):
        report = verified(files, app.url, tmp_path / "evidence", login=Login(BY_TEXT, credentials))
    assert [(t["status"], t["attempts"]) for t in report["tests"]] == [("passed", 1)], report
