"""Third-party requests the sandbox refuses (a CDN's script) are listed in the report, and the
page errors they cause do not fail a generated page test; the app's own page errors still do,
and so does a redirect to a login page (the test never saw the page it asked for)."""

from __future__ import annotations

import time

import pytest

from agents.offline.code import _stayed_lines
from agents.offline.common import PAGE_ERRORS_CHECK, PAGE_ERRORS_WATCH
from runs.demo.app import serving
from tests.test_browser import chromium_path
from tests.test_verify import HEADER, chromium, make_plan, no_heal, spec  # noqa: F401
from verification import playwright as pw
from verification import verify as v
from verification.service import runner_from_settings

# A server-rendered page as many apps ship it: jQuery from a public CDN, then a script using it.
SHOP = b"""<!doctype html><title>Shop</title><h1>Shop</h1>
<script src="https://cdn.jsdelivr.net/npm/jquery@3.7.1/dist/jquery.min.js"></script>
<script>$('h1').addClass('ready');</script>"""
BROKEN = b"<!doctype html><title>Cart</title><h1>Cart</h1><script>cartTotal();</script>"


SIGN_IN = b"<!doctype html><title>Sign in</title><h1>Sign in</h1><form><input></form>"


def shop_app(environ, start_response):
    if environ["PATH_INFO"] == "/account":  # behind the login, as Flask-Login answers
        start_response("302 Found", [("Location", "/login?next=/account")])
        return [b""]
    body = {"/": SHOP, "/cart": BROKEN, "/login": SIGN_IN}.get(environ["PATH_INFO"])
    status = "200 OK" if body else "404 Not Found"
    start_response(status, [("Content-Type", "text/html; charset=utf-8")])
    return [body or b"not found"]


@pytest.fixture
def shop():
    with serving(shop_app) as url:
        yield url


def page_test(title: str, path: str, heading: str) -> str:
    lines = [
        *PAGE_ERRORS_WATCH,
        f"await page.goto('{path}');",
        *_stayed_lines([("page", path, None, f"Open {path}")], "a 2xx status"),
        f"await expect(page.getByRole('heading', {{ name: '{heading}', exact: true }})).toBeVisible();",
        PAGE_ERRORS_CHECK,
    ]
    body = "\n".join("  " + line for line in lines)
    return f"test('{title}', async ({{ page }}) => {{\n{body}\n}});\n"


def test_a_refused_cdn_script_is_listed_and_its_page_errors_are_not_the_apps(tmp_path, shop):
    source = HEADER + page_test("shop", "/", "Shop") + page_test("cart", "/cart", "Cart")
    source += page_test("account", "/account", "Sign in")
    runner = pw.Runner(**{**runner_from_settings().__dict__, "retries": 0})
    plan = make_plan(tmp_path, shop, [spec("shop", source)], heal_rounds=0, runner=runner)
    report = v.verify(plan, heal=no_heal)
    tests = {t["title"]: t for t in report["tests"]}
    assert tests["shop"]["status"] == "passed", tests["shop"]["error"]
    # the app's own error, with nothing refused on that page, still fails its test
    assert tests["cart"]["status"] == "quarantined"
    assert "uncaught page errors" in tests["cart"]["error"]
    assert "cartTotal is not defined" in tests["cart"]["error"]
    assert "cdn.jsdelivr.net:443" in report["sandbox"]["blocked"]
    # redirected to the login page, which shows its heading: never a pass
    assert tests["account"]["status"] == "quarantined"
    assert "the page it opened, not a redirect" in tests["account"]["error"]


# A client-side router as React Router's auth example runs: every path gets the same page, whose
# layout shows at once; a protected path asks the server for the session (it answers late) and
# then moves the browser to /login without loading a page.
SPA = b"""<!doctype html><title>Auth Example</title><h1>Auth Example</h1><main></main>
<script>
if (location.pathname === "/protected") {
  fetch("/session").then((r) => {
    if (r.ok) return;
    history.replaceState(null, "", "/login");
    document.querySelector("main").textContent = "You must log in";
  });
}
</script>"""


def spa_app(environ, start_response):
    if environ["PATH_INFO"] == "/session":
        time.sleep(0.4)
        start_response("401 Unauthorized", [("Content-Type", "application/json")])
        return [b"{}"]
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
    return [SPA]


def test_a_client_side_redirect_after_the_page_loaded_fails_a_page_test(tmp_path):
    chromium_path()
    with serving(spa_app) as url:
        source = HEADER + page_test("home", "/", "Auth Example")
        source += page_test("protected", "/protected", "Auth Example")
        runner = pw.Runner(**{**runner_from_settings().__dict__, "retries": 0})
        plan = make_plan(tmp_path, url, [spec("spa", source)], heal_rounds=0, runner=runner)
        report = v.verify(plan, heal=no_heal)
    tests = {t["title"]: t for t in report["tests"]}
    assert tests["home"]["status"] == "passed", tests["home"]["error"]
    # Its layout showed the heading at /protected first: only the settled address tells.
    assert tests["protected"]["status"] == "quarantined"
    assert "the page it opened, not a redirect" in tests["protected"]["error"]
    assert '"/login"' in tests["protected"]["error"]
