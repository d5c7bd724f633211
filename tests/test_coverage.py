"""The coverage map: routes found in source × reached live × exercised by the generated tests,
its matching rules and bounds, and where it is shown (API, run page, pull request body)."""

import pytest

import schemas
from tests.admin_helpers import VIEW, change_url, client_for, staff
from tests.api_support import client, make_token  # noqa: F401  (fixtures)
from tests.factories import ArtifactFactory, RunFactory
from tests.test_verify_surfaces import APP_MAP
from verification import coverage
from verification.coverage import concrete_path, coverage_map, route_key, source_routes
from verification.summary import pull_request_contents

TARGET = "https://preview.acme.test"
STACK = {
    "routes": [
        {"method": "GET", "path": "/api/notes", "json": True},
        {"method": "POST", "path": "/api/notes", "json": True},
        {"method": "GET", "path": "/api/notes/<int:note_id>"},  # Flask
        {"method": "DELETE", "path": "/admin/export/:id"},  # Express
    ],
    "pages": [
        {"route": "/"},
        {"route": "/notes/[id]"},  # Next.js
        {"route": "/notes/new"},
        {"route": "/files/{name}.txt"},  # FastAPI, inside a segment
        {"route": "/about/"},
    ],
}
SPEC = """import { test, expect } from '@playwright/test';

test.beforeEach(async ({ page }) => { await page.goto('/'); });

test('opens a note', async ({ page }) => {
  await page.goto(`/notes/${note.id}?tab=1#top`);
});

test('lists notes', async ({ request }) => {
  const r = await request.get("/api/notes/");
  expect(r.headers().get('/about')).toBeTruthy();  // not a request: no coverage
});

test('creates a note', async ({ request }) => {
  await request.post('https://preview.acme.test/api/notes', { data: { title: 'x' } });
});

test.fixme('exports', async ({ request }) => {
  await request.delete('/admin/export/1');
});
"""


def _page(path: str, status: int) -> dict:
    """An app map page as ExploreApp stores it."""
    return {
        **{"path": path, "depth": 0, "status": status, "title": "", "snapshot": "- heading"},
        **{"links": [], "forms": [], "console_errors": [], "screenshot": "", "error": ""},
    }


def _code(*files: tuple[str, str]) -> dict:
    return {"files": [{"path": path, "contents": text} for path, text in files]}


def _rows(cov: dict) -> dict:
    return {row["route"] or row["name"]: row for row in cov["rows"]}


@pytest.mark.parametrize(
    "raw,key",
    [
        ("/notes/:id", "/notes/{id}"),
        ("/notes/<int:id>", "/notes/{id}"),
        ("/notes/<id>", "/notes/{id}"),
        ("/notes/[id]", "/notes/{id}"),
        ("/docs/[...slug]", "/docs/{slug}"),
        ("/notes/{id:int}", "/notes/{id}"),
        ("notes/", "/notes"),
        ("/caf%C3%A9", "/café"),
        ("/a/../b", "/b"),
        ("`/x/${id}`", None),
        ("/" + "a" * 300, None),
        (42, None),
    ],
)
def test_routes_of_every_framework_style_become_one_key(raw, key):
    assert route_key(raw) == key


@pytest.mark.parametrize(
    "target,path",
    [
        ("/notes/1?tab=2#x", "/notes/1"),
        ("/notes/1/", "/notes/1"),
        ("/", "/"),
        ("/a//b/./c/..", "/a/b"),
        ("/caf%C3%A9", "/café"),
        ("/カフェ", "/カフェ"),
        (f"{TARGET}/notes", "/notes"),
        ("https://evil.test/notes", None),
        ("//evil.test/notes", None),
        ("/\\evil.test", None),
        ("javascript:alert(1)", None),
        ("/a%0Ab", None),
        ("/a b", None),
        ("/" + "a" * 600, None),
        ("notes", None),
    ],
)
def test_a_navigation_is_a_same_origin_path_or_nothing(target, path):
    assert concrete_path(target, "preview.acme.test") == path


def test_dynamic_routes_match_concrete_paths_static_first():
    routes = source_routes(STACK)
    assert routes.match("/notes/42") == "/notes/{id}"
    assert routes.match("/notes/new") == "/notes/new"  # the static route wins
    assert routes.match("/api/notes/7") == "/api/notes/{note_id}"
    assert routes.match("/files/readme.txt") == "/files/{name}.txt"
    assert routes.match("/files/readme.md") is None
    assert routes.match("/notes/1/edit") is None
    assert routes.match("/about") == "/about"


def test_the_map_joins_source_live_and_tests_and_quarantine_does_not_count():
    app_map = {
        "target_url": TARGET,
        "pages": [
            {"path": "/", "status": 200},
            {"path": "/notes/3", "status": 200},
            {"path": "/help?from=nav", "status": 200},  # only the live app shows it
            {"path": "/broken", "status": 404},  # a dead link is no route
            {"path": "/about", "status": 500},
        ],
    }
    code = _code(("e2e/notes.spec.ts", SPEC))
    cov = coverage_map({"detected_stack": STACK}, app_map, code, None)
    rows = _rows(cov)
    assert rows["/help"]["kind"] == "live" and not rows["/help"]["in_source"]
    assert "/broken" not in rows
    assert rows["/notes/{id}"]["live_path"] == "/notes/3"
    assert rows["/about"]["live_status"] == 500
    assert rows["/notes/{id}"]["tests"] == ["opens a note"]
    assert rows["/"]["tests"] == ["opens a note", "lists notes", "creates a note"]  # the hook
    assert rows["/api/notes"]["methods"] == ["GET", "POST"]
    assert rows["/api/notes"]["tests"] == ["lists notes", "creates a note"]
    assert rows["/admin/export/{id}"]["tests"] == []  # test.fixme does not count
    assert rows["/about"]["tests"] == []  # headers().get('/about') is no request
    assert cov["totals"] == {
        "routes": 9,
        "in_source": 8,
        "reached": 3,  # /about answered 500: an error, not the page
        "live_only": 1,
        "covered": 3,
        "not_covered": 6,
        "login_redirect": 0,
        "not_found": 0,
        "uncounted_writes": 0,
        "source_left_off": 0,
    }
    assert rows["/about"]["live_state"] == "error" and rows["/about"]["state"] == "not_covered"
    assert cov["headline"] == (
        "3 of 9 routes covered; not covered: /about, /admin/export/{id}, /api/notes/{note_id}, "
        "/files/{name}.txt, /help, /notes/new"  # /notes/1 went to /notes/{id}
    )
    assert [r["covered"] for r in cov["rows"]] == [False] * 6 + [True] * 3

    # Verified: only tests that passed count; a quarantined one and a dropped one do not.
    report = {
        "status": "verified",
        "target_url": TARGET,
        "files": code["files"],
        "tests": [
            {"file": "e2e/notes.spec.ts", "title": "opens a note", "status": "quarantined"},
            {"file": "e2e/notes.spec.ts", "title": "lists notes", "status": "healed"},
        ],  # "creates a note" was dropped
    }
    verified = _rows(coverage_map({"detected_stack": STACK}, app_map, code, report))
    assert verified["/notes/{id}"]["tests"] == []
    assert verified["/api/notes"]["tests"] == ["lists notes"]
    assert verified["/"]["tests"] == ["lists notes"]


# Shaped like a Flask app behind a login (the microblog layout: auth blueprint, pages that
# redirect to /auth/login, a JSON API under /api).
LOGIN_STACK = {
    "routes": [
        {"method": "GET", "path": "/", "json": False},
        {"method": "GET", "path": "/explore"},
        {"method": "POST", "path": "/follow/<username>"},
        {"method": "POST", "path": "/api/tokens", "json": True},
        {"method": "DELETE", "path": "/api/posts/<int:id>", "json": True},
        {"method": "GET", "path": "/user/<username>", "json": True},
    ],
    "pages": [{"route": "/auth/login"}, {"route": "/gone"}],
}
LOGIN_MAP = {
    "target_url": TARGET,
    "pages": [
        {"path": "/auth/login", "status": 200, "title": "Sign in", "forms": [{}]},
        {"path": "/", "status": 200, "title": "Sign in", "login_redirect": "/auth/login?next=/"},
        {"path": "/explore", "status": 200, "login_redirect": "/auth/login?next=/explore"},
        {"path": "/user/susan", "status": 200, "title": "Susan", "links": ["/"]},
        {"path": "/gone", "status": 404},
    ],
}
LOGIN_SPEC = """import { test, expect } from '@playwright/test';
test('home', async ({ page }) => { await page.goto('/'); });
test('follows', async ({ request }) => { await request.post('/follow/susan'); });
test('gets a token', async ({ request }) => {
  await request.post('/api/tokens', { data: {} , headers: {} });
});
test('deletes a post', async ({ request }) => { await request.delete('/api/posts/1'); });
test('the gone page', async ({ page }) => { await page.goto('/gone'); });
test('a profile', async ({ page }) => { await page.goto('/user/susan'); });
"""


def test_what_did_not_reach_its_route_is_its_own_state_not_covered():
    code = _code(("e2e/app.spec.ts", LOGIN_SPEC))
    cov = coverage_map({"detected_stack": LOGIN_STACK}, LOGIN_MAP, code, None)
    rows = _rows(cov)
    states = {route: row["state"] for route, row in rows.items()}
    assert states == {
        "/": "login_redirect",  # the test only saw the login
        "/explore": "login_redirect",  # no test went there; exploration saw the login
        "/follow/{username}": "empty_write",
        "/api/tokens": "empty_write",  # data: {} is no body
        "/api/posts/{id}": "anonymous_write",  # a DELETE needs no body, but a session
        "/gone": "not_found",
        "/user/{username}": "covered",
        "/auth/login": "not_covered",
    }
    assert rows["/"]["live_state"] == "login_redirect" and not rows["/"]["covered"]
    assert rows["/auth/login"]["live_state"] == "answered"
    assert rows["/user/{username}"]["kind"] == "page"  # the browser showed a page there
    assert cov["totals"]["reached"] == 2  # the login page and the profile, not the redirects
    assert cov["totals"]["login_redirect"] == 2 and cov["totals"]["not_found"] == 1
    assert cov["totals"]["uncounted_writes"] == 3 and cov["totals"]["covered"] == 1
    assert cov["basis"] == "No tests have run against the app yet: a written test counts."

    # Signed in (a login recipe or the sign-up): the page and the DELETE reach their routes.
    signed = _rows(
        coverage_map({"detected_stack": LOGIN_STACK}, LOGIN_MAP, code, None, session=True)
    )
    assert signed["/"]["state"] == signed["/api/posts/{id}"]["state"] == "covered"
    assert signed["/follow/{username}"]["state"] == "empty_write"  # still no body

    # Credentials in the call, or for the whole file, count as a session for its writes.
    for spec in (
        "test('d', async ({ request }) => { await request.delete('/api/posts/1', "
        "{ headers: { Authorization: `Bearer ${t}` } }); });",
        "test.use({ storageState: 'auth.json' });\n"
        "test('d', async ({ request }) => { await request.delete('/api/posts/1'); });",
    ):
        cov = coverage_map(
            {"detected_stack": LOGIN_STACK}, LOGIN_MAP, _code(("e.spec.ts", spec)), None
        )
        assert _rows(cov)["/api/posts/{id}"]["state"] == "covered"


@pytest.mark.parametrize(
    "report,basis",
    [
        ({"status": "verified"}, "Only tests that passed against the app count"),
        (
            {"status": "not_executed", "reason": "the target answers errors only."},
            "The tests did not run against the app (the target answers errors only): a written",
        ),
        ({"status": "skipped", "reason": ""}, "The tests did not run against the app: a written"),
    ],
)
def test_the_note_says_what_counted(report, basis):
    cov = coverage_map({"detected_stack": STACK}, None, None, {"target_url": TARGET, **report})
    assert cov["basis"].startswith(basis)


def test_maestro_flows_cover_screens_by_deep_link_launch_and_tap():
    stack = {
        "screens": [
            {"name": "Home", "route": "/", "root": True},
            {"name": "Habit", "route": "/habit/[id]", "deep_link": "habits://habit/{id}"},
            {"name": "Settings", "tab_label": "Settings"},  # no route: found by its label
            {"name": "Stats", "tab_label": "Stats"},
        ]
    }
    flow = "appId: com.acme\nname: habit\n---\n- launchApp\n- openLink: habits://habit/1\n"
    tap = "appId: com.acme\n---\n- launchApp\n- tapOn:\n    text: Settings\n"
    broken = "appId: [\n"
    cov = coverage_map(
        {"detected_stack": stack},
        None,
        _code(("e2e/a.yaml", flow), ("e2e/b.yaml", tap), ("e2e/c.yaml", broken)),
        None,
    )
    rows = _rows(cov)
    assert rows["/habit/{id}"]["tests"] == ["habit"]
    assert rows["/"]["tests"] == ["habit", "b.yaml"]
    assert rows["Settings"]["tests"] == ["b.yaml"]
    assert cov["not_covered"] == ["Stats (screen)"]


def test_a_huge_crawl_is_bounded_in_rows():
    routes = [{"method": "GET", "path": f"/r{i}/:id/x{i % 7}"} for i in range(100_000)]
    pages = [{"path": f"/r{i}/5/x{i % 7}", "status": 200} for i in range(1_000)]
    spec = "import { test } from '@playwright/test';\n" + "\n".join(
        f"test('t{i}', async ({{ page }}) => {{ await page.goto('/r{i}/1/x{i % 7}'); }});"
        for i in range(300)
    )
    cov = coverage_map(
        {"detected_stack": {"routes": routes}},
        {"target_url": TARGET, "pages": pages},
        _code(("e2e/big.spec.ts", spec)),
        None,
    )
    assert cov["totals"]["routes"] == coverage.MAX_SOURCE_ITEMS
    assert cov["totals"]["source_left_off"] == 100_000 - coverage.MAX_SOURCE_ITEMS
    assert cov["totals"]["reached"] == 1_000 and cov["totals"]["covered"] == 300
    assert len(cov["rows"]) == coverage.MAX_ROWS
    assert cov["rows_left_off"] == coverage.MAX_SOURCE_ITEMS - coverage.MAX_ROWS
    assert len(cov["headline"]) <= coverage.HEADLINE_CHARS
    assert cov["headline"].startswith("300 of 5000 routes covered (95000 more found")


def test_the_pull_request_body_has_the_line_and_a_folded_table():
    stack = {"pages": [{"route": "/"}, {"route": "/admin/export"}]}
    app_map = {"target_url": TARGET, "pages": [{"path": "/x`|<b>", "status": 200}]}
    spec = "test('home <b>', async ({ page }) => { await page.goto('/'); });\n"
    cov = coverage_map({"detected_stack": stack}, app_map, _code(("e2e/a.spec.ts", spec)), None)
    code = {"files": [], "pr_title": "Add tests", "pr_body": "Tests."}
    _, _, body = pull_request_contents(code, None, "e2e", cov)
    assert "**1 of 3 routes covered**; not covered: `/admin/export`, `/x'\\|<b>`." in body
    assert "<details><summary>Routes:" in body and "home &lt;b&gt;" in body
    assert "| `/` | page | — | home &lt;b&gt; |" in body
    assert pull_request_contents(code, None, "e2e")[2].count("Coverage") == 0

    many = {"pages": [{"route": f"/p{i}"} for i in range(400)]}
    cov = coverage_map({"detected_stack": many}, None, None, None)
    _, _, body = pull_request_contents(code, None, "e2e", cov)
    line = next(line for line in body.splitlines() if "routes covered" in line)
    assert len(line) < 1_300 and line.endswith("… (390 more).")
    assert "<details>" not in body  # too many rows for the body: the run page has them


@pytest.mark.django_db
def test_the_api_and_the_run_page_show_the_coverage(client):  # noqa: F811
    run = RunFactory(status="passed")
    body = client.get(f"/api/runs/{run.run_id}").json()
    assert body["coverage"] is None  # no crawl yet
    crawl = {"detected_stack": STACK, "file_tree": [{"path": "x", "size": 1, "sha": "0" * 40}]}
    ArtifactFactory(run=run, kind="repo_crawler_output", content=crawl)
    app_map = {**APP_MAP, "pages": [_page("/notes/9", 200)]}
    ArtifactFactory(
        run=run, kind="app_map", content=schemas.validate("exploration/app_map", app_map)
    )
    ArtifactFactory(run=run, kind="test_engineer_output", content=_code(("e2e/n.spec.ts", SPEC)))
    got = client.get(f"/api/runs/{run.run_id}").json()["coverage"]
    assert got == coverage_map(
        {"detected_stack": STACK}, app_map, _code(("e2e/n.spec.ts", SPEC)), None
    )
    assert got["headline"].startswith("3 of 8 routes covered; not covered: /about,")
    row = next(r for r in got["rows"] if r["route"] == "/notes/{id}")
    assert row["live_path"] == "/notes/9" and row["tests"] == ["opens a note"]

    page = client_for(staff(*VIEW)).get(change_url(run)).content.decode()
    assert 'id="amtp-coverage"' in page and "<strong>3 of 8 routes covered" in page
    assert "<code>/notes/{id}</code>" in page and "<code>/notes/9</code>" in page
    assert "<div>opens a note</div>" in page and "not covered</span>" in page
    assert "<th>found by</th>" in page and "<td>source (page)</td>" in page
    assert "No tests have run against the app yet: a written test counts." in page
