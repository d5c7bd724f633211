"""An app that crashes is a finding, not the end of VerifyTests: an app AMTP booted (in the
real sandbox) whose process a test's request ends is restarted, that test is quarantined as
"the app crashed on GET /path" with the app's log lines, and the tests that failed because it
was down run again and pass. The apps here are a Node and a Python server whose one route
ends the process (an uncaught TypeError, an ``os._exit``): any process exit, not one
framework's. ExploreApp the same: the crash recorded in the map, the app restarted and the
pages it left unanswered explored again."""

from __future__ import annotations

import dataclasses
import json
import os
import threading

import pytest

import schemas
from repositories.hosts.local import LocalGitHost
from runs.demo.app import serve
from tests.exploring import bounds, explore_loopback
from tests.gitrepo import make_git_repo
from tests.test_browser import chromium_path
from tests.test_explore import CANARY
from tests.test_verify import HEADER, by_title, make_plan, spec
from verification import verify as v
from verification.boot.app import booted
from verification.boot.recipe import AppRecipe
from verification.errors import TargetAnswersErrors
from verification.exploration.explore import crash_record
from verification.exploration.service import exploration_note
from verification.proxy import Policy
from verification.service import runner_from_settings

pytestmark = pytest.mark.skipif(
    not os.path.exists("/usr/bin/bwrap"), reason="bubblewrap is a requirement of the worker"
)

NODE = """const http = require('http');
http.createServer((req, res) => {
  const user = req.url.match(/^\\/user\\/(\\d+)$/);
  if (user) {
    const found = { 1: { name: 'Ada' } }[user[1]];
    // found is undefined for an unknown id: an uncaught TypeError ends the process
    return res.end(`<h1>${found.name}</h1>`);
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<!doctype html><title>Shop</title><h1>Page ${req.url}</h1>`);
}).listen(Number(process.env.PORT));
"""
PYTHON = """import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Pages(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/user/"):
            print("lost the database handle serving", self.path, flush=True)
            os._exit(3)
        body = f"<!doctype html><title>Shop</title><h1>Page {self.path}</h1>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Pages).serve_forever()
"""
APPS = {
    "node": ({"server.js": NODE}, "node server.js", "exit code 1", "TypeError"),
    "python": ({"server.py": PYTHON}, "python3 server.py", "exit code 3", "lost the database"),
}
SPECS = (
    HEADER
    + """test('home page answers', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Page /' })).toBeVisible();
});

test('an unknown user shows a page', async ({ page }) => {
  await page.goto('/user/999999999');
  await expect(page.getByRole('heading')).toBeVisible();
});

test('about page answers', async ({ page }) => {
  await page.goto('/about');
  await expect(page.getByRole('heading', { name: 'Page /about' })).toBeVisible();
});
"""
)


# One attempt per test and a short wait for a heading: a test the crash took down fails fast.
RUNNER = dataclasses.replace(runner_from_settings(), retries=0, expect_timeout_s=3)


@pytest.fixture(autouse=True)
def _boot_settings(settings, tmp_path):
    settings.AMTP_BOOT_CACHE_DIR = tmp_path / "cache"
    settings.AMTP_BOOT_READY_TIMEOUT_S = 60.0
    chromium_path()


def no_heal(payload, seconds):
    raise AssertionError("the tests the crash took down pass once the app is back")


@pytest.mark.parametrize("kind", APPS)
def test_a_test_that_crashes_the_app_is_quarantined_and_the_rest_run_against_a_restart(
    tmp_path, kind
):
    files, start, exit_code, logged = APPS[kind]
    path = make_git_repo(tmp_path / "app", files)
    host = LocalGitHost("acme/app", path)
    recipe = AppRecipe("test", start, 4000)
    with booted(host, host.resolve_ref("main"), recipe, {}) as app:
        first = app.process
        plan = make_plan(
            tmp_path,
            app.url,
            [spec("shop", SPECS)],
            allow_hosts=[app.url.removeprefix("http://")],
            app=app,
            runner=RUNNER,
        )
        report = v.verify(plan, heal=no_heal)
        assert app.restarts == 1 and app.process is not first and app.exited() is None
    tests = by_title(report)
    crashed = tests["an unknown user shows a page"]
    assert crashed["status"] == "quarantined"
    assert crashed["reason"].startswith(f"the app crashed on GET /user/999999999 ({exit_code}")
    assert logged in crashed["reason"]  # the app's own log lines
    assert tests["home page answers"]["status"] == "passed"
    # failed while the app was down, then passed against the restarted app: not "flaky"
    assert tests["about page answers"]["status"] == "passed"
    assert report["status"] == "verified" and report["totals"]["quarantined"] == 1
    source = report["files"][0]["contents"]
    assert "// AMTP quarantined: the app crashed on GET /user/999999999" in source
    assert "test.fixme('an unknown user shows a page'" in source


class _Dies:
    """A target URL's app (not AMTP's to restart) that a request for a user ends: it answers
    that one with a 500, then stops listening."""

    server = None

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()  # refused from now on, as a dead process' port is

    def __call__(self, environ, start_response):
        if environ["PATH_INFO"].startswith("/user/"):
            threading.Thread(target=self.stop).start()
            start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
            return [b"TypeError: Cannot read properties of undefined"]
        start_response("200 OK", [("Content-Type", "text/html")])
        return [f"<h1>Page {environ['PATH_INFO']}</h1>".encode()]


def test_against_a_target_url_the_verdict_names_where_the_app_stopped_answering(tmp_path):
    app = _Dies()
    app.server, url = serve(app)
    crashing = SPECS.replace("test('home page answers'", "test.skip('home page answers'")
    with pytest.raises(TargetAnswersErrors) as caught:
        plan = make_plan(tmp_path, url, [spec("shop", crashing)], runner=RUNNER)
        v.verify(plan, heal=no_heal)
    assert caught.value.message.startswith("target answers errors only: ")
    message = caught.value.message
    assert "(the app stopped answering after GET /user/999999999 (the last request it " in message


EXPLORED = """import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LINKS = {"/": ["/crash-a", "/a", "/b"], "/a": ["/crash-b", "/c"]}


class Pages(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/crash-"):
            print("lost the database handle serving", self.path, flush=True)
            os._exit(3)
        links = "".join(f'<a href="{p}">{p}</a> ' for p in LINKS.get(self.path, []))
        body = f"<!doctype html><title>Shop</title><h1>Page {self.path}</h1>{links}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Pages).serve_forever()
"""


def test_exploration_restarts_a_crashed_app_records_the_crash_and_explores_the_rest(tmp_path):
    """The app AMTP booted dies on /crash-a: the pages the browser met while it was down
    (/a, /b) are explored after a restart, the crash recorded with its path and log; it dies
    again on /crash-b, beyond the restart cap: exploration stops there, naming it, and the app
    is left running."""
    path = make_git_repo(tmp_path / "app", {"server.py": EXPLORED})
    host = LocalGitHost("acme/app", path)
    with booted(
        host, host.resolve_ref("main"), AppRecipe("test", "python3 server.py", 4000), {}
    ) as app:
        found = explore_loopback(
            app.url,
            tmp_path / "shots",
            bounds=bounds(max_pages=20, time_s=30, page_timeout_s=10, max_bytes=256 << 10),
            allow_hosts=[app.url.removeprefix("http://")],
            app=app,
        )
        assert app.restarts == 2 and app.exited() is None  # alive when ExploreApp returns
    found = schemas.validate("exploration/app_map", found)
    answered = {page["path"] for page in found["pages"] if page["status"] == 200}
    assert {"/", "/a", "/b"} <= answered  # /a and /b were met while the app was down
    assert "/c" not in answered  # met after the second crash: beyond the cap
    shots = [page["screenshot"] for page in found["pages"] if page["screenshot"]]
    assert len(shots) >= 3 and len(set(shots)) == len(shots)  # the second crawl's are its own
    first, second = found["crashes"]
    assert (first["request"], first["path"], first["exit"]) == (
        "GET /crash-a",
        "/crash-a",
        "exit code 3",
    )
    assert "lost the database handle serving /crash-a" in first["log"]
    assert second["path"] == "/crash-b"
    assert found["stopped"] == "the app crashed on GET /crash-b (exit code 3)"
    assert "the app crashed on GET /crash-a, GET /crash-b and was restarted" in exploration_note(
        found
    )


class _Crashed:
    """A LiveApp that ended with a hostile log: a token, control characters, and no end."""

    def ended(self) -> float:
        return 2_000_000_000.0

    def exit_note(self) -> str:
        junk = "\x1b[31mTypeError\x00 " + "x" * 50_000
        return f"exit code 1; the last lines of its log:\ntoken {CANARY}\n{junk}"

    def restart(self) -> None:
        raise AssertionError("a record restarts nothing")


def test_a_crash_record_is_bounded_and_scrubbed():
    policy = Policy("http://127.0.0.1:4000", [])
    policy.log("GET", "127.0.0.1", 4000, f"/user?token={CANARY}&" + "q" * 3000)
    record = crash_record(_Crashed(), policy)
    assert CANARY not in json.dumps(record) and "\x00" not in record["log"]
    assert record["path"] == ""  # it carried a token
    assert record["exit"] == "exit code 1" and record["log"].startswith("token ")
    assert len(record["request"]) <= 300 and len(record["log"]) <= 2000
    policy.log("GET", "127.0.0.1", 4000, "//evil.example/x")  # not a path of the app's origin
    assert crash_record(_Crashed(), policy)["path"] == ""
    assert crash_record(_Crashed(), Policy("http://127.0.0.1:4000", []))["request"] == (
        "an unknown request"
    )
