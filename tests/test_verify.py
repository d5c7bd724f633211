"""VerifyTests' engine against live apps on loopback: Playwright Test (the pinned npm package)
on Debian's Chromium, for real; no Temporal here (tests/test_workflow_verify.py runs the stage
through the worker).

Each test runs at most one small suite; a failing test costs an attempt per retry and one more.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

import schemas
from agents.providers.base import Completion, Provider, ProviderOptions
from agents.runner import AgentContext, run_agent
from agents.service import run_test_healer
from agents.test_engineer import HealingTestEngineer
from runs.demo.app import serving
from tests.plans import make_plan
from tests.test_browser import chromium_path
from tests.verify_apps import FailingApp, NotesApp
from verification import playwright as pw
from verification import verify as v
from verification.errors import (
    TargetAnswersErrors,
    TargetUnreachable,
    VerificationTimedOut,
    VerifierNotInstalled,
)
from verification.service import runner_from_settings

HEADER = "import { test, expect } from '@playwright/test';\n\n"
PASSING = (
    HEADER
    + """test('home page shows the notes heading', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Notes' })).toBeVisible();
});

test('sign-in page answers', async ({ request }) => {
  expect((await request.get('/login')).ok()).toBeTruthy();
});

test('the test process carries no secret of AMTP', async () => {
  expect(process.env.AMTP_SECRET_PROBE).toBeUndefined();
  expect(process.env.DATABASE_URL).toBeUndefined();
  expect(process.env.BASE_URL).toMatch(/^http:\\/\\/127\\.0\\.0\\.1:\\d+$/);
});
"""
)
MISSING_NOTE = (
    HEADER
    + """test('note 999 answers JSON', async ({ request }) => {
  const response = await request.get('/api/notes/999');
  expect(response.ok()).toBeTruthy();
  expect(response.headers()['content-type']).toContain('json');
});

test('sign-in page answers', async ({ request }) => {
  expect((await request.get('/login')).ok()).toBeTruthy();
});
"""
)


@pytest.fixture
def notes():
    app = NotesApp(slow_seconds=30)
    with serving(app) as url:
        yield app, url


@pytest.fixture(autouse=True)
def chromium():
    chromium_path()  # fails (not skips) when the browser is missing


def spec(name: str, contents: str) -> dict:
    return {"path": f"e2e/amtp/{name}.spec.ts", "contents": contents}


def no_heal(payload, seconds):
    raise AssertionError("nothing failed, so nothing should be healed")


def by_title(report) -> dict[str, dict]:
    return {t["title"]: t for t in report["tests"]}


def test_every_test_passes_and_the_test_process_sees_no_secret(tmp_path, notes, monkeypatch):
    monkeypatch.setenv("AMTP_SECRET_PROBE", "s3cret")
    files = [spec("notes", PASSING)]
    report = v.verify(make_plan(tmp_path, notes[1], files), heal=no_heal)
    schemas.validate("verification/report", report)
    assert report["status"] == "verified" and report["target_url"] == notes[1]
    assert {t["title"]: t["status"] for t in report["tests"]} == {
        "home page shows the notes heading": "passed",
        "sign-in page answers": "passed",
        "the test process carries no secret of AMTP": "passed",
    }
    assert report["totals"] == {
        "tests": 3,
        "passed": 3,
        "failed": 0,
        "flaky": 0,
        "healed": 0,
        "quarantined": 0,
        "skipped": 0,
    }
    assert report["files"] == files
    lock = json.loads((runner_from_settings().runner_dir / "package-lock.json").read_text())
    pinned = lock["packages"]["node_modules/@playwright/test"]["version"]
    assert report["tool_versions"]["@playwright/test"] == pinned
    assert "Chromium" in report["tool_versions"]["chromium"]
    assert [r["phase"] for r in report["timings"]["rounds"]] == ["run"]


class ScriptedHealer(Provider):
    """A model that answers the healing session with a fixed file."""

    name = "scripted"

    def __init__(self, contents: str) -> None:
        super().__init__(ProviderOptions(model="scripted"), agent="test_engineer_heal")
        self.contents = contents

    def complete(self, *, system, messages, tools):
        payload = json.loads(messages[0]["content"])
        path = payload["files"][0]["path"]
        answer = {
            "run_id": payload["run_id"],
            "files": [{"path": path, "contents": self.contents}],
            "changes": [{"file": path, "title": "note 999 answers JSON", "change": "x"}],
        }
        return Completion(text=json.dumps(answer))


LOGIN_AS_JSON = (
    HEADER
    + """test('GET /login answers JSON', async ({ request }) => {
  const response = await request.get('/login');
  expect(response.ok()).toBeTruthy();
  const body: unknown = await response.json();
  expect(body).not.toBeUndefined();
});
"""
)


def test_an_honest_heal_passes_and_carries_its_before_and_after_evidence(tmp_path, notes):
    """The offline healer reaches an HTML route the test took for JSON as a page; the healed
    test passes on its re-run, with the failure's and the pass's evidence beside its diff."""
    plan = make_plan(tmp_path, notes[1], [spec("login", LOGIN_AS_JSON)])
    report = v.verify(plan, heal=lambda p, _s: run_test_healer(p, test_dir="e2e/amtp").output)
    schemas.validate("verification/report", report)
    (healed,) = report["tests"]
    assert (healed["status"], report["totals"]["healed"]) == ("healed", 1)
    assert "-  const response = await request.get('/login');" in healed["diff"]
    assert "page.goto('/login')" in healed["diff"]
    phases = {
        phase: {e["kind"] for e in healed["evidence"] if e.get("heal") == phase}
        for phase in ("before", "after")
    }
    assert {"trace", "error_context"} <= phases["before"]
    assert {"trace", "screenshot"} <= phases["after"]
    for item in healed["evidence"]:
        assert (tmp_path / "evidence" / item["path"]).stat().st_size == item["bytes"]
    (kept,) = report["files"]
    assert (
        "page.goto" in kept["contents"] and "expect(body).not.toBeUndefined()" in kept["contents"]
    )


def test_a_heal_that_deletes_an_assertion_is_refused_and_the_test_dropped(tmp_path, notes):
    weakened = MISSING_NOTE.replace("  expect(response.ok()).toBeTruthy();\n", "", 1)
    assert weakened != MISSING_NOTE

    def heal(payload, seconds):
        ctx = AgentContext(
            run_id=payload["run_id"],
            extra={
                "test_dir": "e2e/amtp",
                "files": {f["path"]: f["contents"] for f in payload["files"]},
                "failing": {
                    f["path"]: {x["title"] for x in f["failures"]} for f in payload["files"]
                },
            },
        )
        agent, provider = HealingTestEngineer(), ScriptedHealer(weakened)
        return asyncio.run(
            run_agent(agent, payload=payload, ctx=ctx, provider=provider, repairs=0)
        ).output

    plan = make_plan(tmp_path, notes[1], [spec("missing", MISSING_NOTE)], failing_tests="drop")
    report = v.verify(plan, heal=heal)
    schemas.validate("verification/report", report)
    tests = by_title(report)
    assert tests["sign-in page answers"]["status"] == "passed"
    missing = tests["note 999 answers JSON"]
    assert missing["status"] == "quarantined"
    assert missing["attempts"] == min(plan.runner.retries, 1) + 1  # the same way twice
    assert missing["reason"].startswith(
        "possible app bug: the expectation still fails; the heal was refused: it tried to "
        "remove `expect(response.ok()).toBeTruthy()`; failed against"
    )
    assert "expect(received).toBeTruthy() · Received: false" in missing["reason"]
    assert missing["heal"] == "" and "-  expect(response.ok()).toBeTruthy();" in missing["diff"]
    assert [r["phase"] for r in report["timings"]["rounds"]] == ["run", "heal"]  # no rerun
    assert report["totals"]["quarantined"] == 1 and report["totals"]["passed"] == 1
    (kept,) = report["files"]  # the failing test is dropped; the passing one stays
    assert "note 999" not in kept["contents"] and "sign-in page answers" in kept["contents"]
    kinds = {e["kind"] for e in missing["evidence"]}
    assert {"trace", "error_context"} <= kinds
    assert {e.get("heal") for e in missing["evidence"]} == {"before"}  # the refused heal never ran
    for item in missing["evidence"]:
        assert (tmp_path / "evidence" / item["path"]).stat().st_size == item["bytes"]


def test_an_unreachable_target_fails_with_what_to_do(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(TargetUnreachable) as caught:
        v.verify(make_plan(tmp_path, url, [spec("notes", PASSING)]), heal=no_heal)
    assert url in caught.value.message
    assert "start the app there or correct the URL" in caught.value.message


@pytest.fixture
def failing_app(request):
    app = FailingApp(healthy=getattr(request, "param", ()))
    with serving(app) as url:
        yield app, url


@pytest.mark.parametrize(
    "failing_app,said",
    [((), "GET / of the target answered a server error (500)"), (("/",), "every response")],
    indirect=["failing_app"],
    ids=["every-page", "all-the-tests-reach"],
)
def test_a_target_answering_only_errors_stops_before_healing(tmp_path, failing_app, said):
    app, url = failing_app
    files = [spec("missing", MISSING_NOTE)]
    with pytest.raises(TargetAnswersErrors) as caught:
        v.verify(make_plan(tmp_path, url, files), heal=no_heal)  # no_heal: not asked to heal
    assert caught.value.message.startswith("target answers errors only: every test failed")
    assert said in caught.value.message and url in caught.value.message
    assert "fix or redeploy it" in caught.value.message
    assert {"/api/notes/999", "/login"} <= set(app.paths)  # the tests did run


def test_tests_failing_against_a_healthy_target_are_quarantined_not_blamed_on_it(tmp_path, notes):
    wrong = HEADER + "test('home answers 201', async ({ request }) => {\n"
    wrong += "  expect((await request.get('/')).status()).toBe(201);\n});\n"
    plan = make_plan(tmp_path, notes[1], [spec("wrong", wrong)], heal_rounds=0)
    report = v.verify(plan, heal=no_heal)
    assert [t["status"] for t in report["tests"]] == ["quarantined"]


RETRIED = (
    HEADER
    + """test('same failure', async ({ request }) => {
  expect((await request.get('/')).status()).toBe(201);
});

test('changing failure', async () => {
  throw new Error('attempt ' + 'abc'[test.info().retry]);
});
"""
)


def test_a_test_failing_the_same_way_twice_is_not_run_a_third_time(tmp_path, notes):
    runner = pw.Runner(**{**runner_from_settings().__dict__, "retries": 2})
    plan = make_plan(tmp_path, notes[1], [spec("retried", RETRIED)], heal_rounds=0, runner=runner)
    report = v.verify(plan, heal=no_heal)
    schemas.validate("verification/report", report)
    tests = {t["title"]: (t["status"], t["attempts"]) for t in report["tests"]}
    assert tests == {
        "same failure": ("quarantined", 2),
        "changing failure": ("quarantined", 3),
    }
    assert [r["phase"] for r in report["timings"]["rounds"]] == ["run", "retry"]
    # the third attempt runs in a process of its own, where Playwright counts retries anew
    changing = next(t for t in report["tests"] if t["title"] == "changing failure")
    assert "Error: attempt a" in changing["error"]


EXPECTS_404 = (
    HEADER
    + """test('a missing page answers 404', async ({ page }) => {
  const navigation = await page.goto('/no-such-page');
  expect(navigation?.status()).toBe(404);
  await expect(page.getByRole('heading', { name: 'Gone' })).toBeVisible({ timeout: 300 });
});
"""
)


def test_a_test_expecting_the_404_is_quarantined_for_what_failed_not_a_removed_page(
    tmp_path, notes
):
    runner = pw.Runner(**{**runner_from_settings().__dict__, "retries": 0})
    files = [spec("missing", EXPECTS_404)]
    report = v.verify(
        make_plan(tmp_path, notes[1], files, heal_rounds=0, runner=runner), heal=no_heal
    )
    (test,) = report["tests"]
    assert test["status"] == "quarantined"
    assert test["reason"].startswith(f"failed against {notes[1]} after 0 healing round(s)")
    assert "getByRole('heading', { name: 'Gone' })" in test["reason"]
    assert "page removed" not in test["reason"]


def test_the_time_budget_stops_a_hanging_suite(tmp_path, notes):
    hanging = HEADER + "test('slow page', async ({ request }) => {\n"
    hanging += (
        "  expect((await request.get('/slow', { timeout: 60000 })).ok()).toBeTruthy();\n});\n"
    )
    runner = pw.Runner(**{**runner_from_settings().__dict__, "test_timeout_s": 90})
    plan = make_plan(tmp_path, notes[1], [spec("slow", hanging)], budget_s=5, runner=runner)
    began = time.monotonic()
    with pytest.raises(VerificationTimedOut) as caught:
        v.verify(plan, heal=no_heal)
    assert time.monotonic() - began < 25
    assert "budget of 5 s" in caught.value.message
    assert "AMTP_VERIFY_TIMEOUT_S" in caught.value.message


def test_a_missing_runner_or_browser_says_what_to_install(tmp_path, notes):
    settings_runner = runner_from_settings()
    no_runner = pw.Runner(**{**settings_runner.__dict__, "runner_dir": tmp_path})
    with pytest.raises(VerifierNotInstalled, match="npm ci --prefix"):
        v.verify(
            make_plan(tmp_path, notes[1], [spec("x", PASSING)], runner=no_runner), heal=no_heal
        )
    no_browser = pw.Runner(**{**settings_runner.__dict__, "chromium": str(tmp_path / "chromium")})
    with pytest.raises(VerifierNotInstalled, match="ensure_packages.sh"):
        v.verify(
            make_plan(tmp_path, notes[1], [spec("x", PASSING)], runner=no_browser), heal=no_heal
        )


def test_without_a_target_url_nothing_runs_and_the_report_says_why(tmp_path):
    report = v.verify(make_plan(tmp_path, "", [spec("notes", PASSING)]), heal=no_heal)
    schemas.validate("verification/report", report)
    assert (report["status"], report["reason"]) == ("skipped", v.NO_TARGET)
    assert [t["status"] for t in report["tests"]] == ["skipped"] * 3
    assert report["totals"]["skipped"] == 3 and report["totals"]["passed"] == 0


MAESTRO_FLOW = "appId: com.acme.habits\n---\n- launchApp\n- assertVisible: Today\n"


def test_maestro_flows_are_validated_and_never_reported_passed(tmp_path):
    files = [{"path": "e2e/amtp/today.yaml", "contents": MAESTRO_FLOW}]
    plan = make_plan(tmp_path, "https://preview.acme.test", files, framework="maestro")
    report = v.verify(plan, heal=no_heal)
    schemas.validate("verification/report", report)
    assert (report["status"], report["reason"]) == ("not_executed", v.NO_DEVICE)
    assert "no device" in report["reason"]
    assert [t["status"] for t in report["tests"]] == ["skipped"]
    bad = [{"path": "e2e/amtp/today.yaml", "contents": "appId: x\n---\n- flyAway\n"}]
    with pytest.raises(Exception, match="unknown Maestro command"):
        v.verify(make_plan(tmp_path, "", bad, framework="maestro"), heal=no_heal)


LATE_TEXT = (
    HEADER
    + """for (const [title, ms] of [['soon', 300], ['late', 2500]]) {
  test(`text shown after ${ms} ms: ${title}`, async ({ page }) => {
    await page.setContent('<p id="p"></p>');
    await page.evaluate((ms) => {
      setTimeout(() => { document.getElementById('p').textContent = 'here'; }, ms);
    }, ms);
    await expect(page.getByText('here')).toBeVisible();
  });
}
"""
)


def test_an_assertion_waits_as_long_as_the_expect_timeout_says(tmp_path, notes):
    runner = pw.Runner(**{**runner_from_settings().__dict__, "expect_timeout_s": 1, "retries": 0})
    plan = make_plan(tmp_path, notes[1], [spec("late", LATE_TEXT)], runner=runner, heal_rounds=0)
    report = v.verify(plan, heal=no_heal)
    tests = by_title(report)
    assert tests["text shown after 300 ms: soon"]["status"] == "passed"
    late = tests["text shown after 2500 ms: late"]
    assert late["status"] == "failed", late  # Playwright's default 5 s would have waited
    assert "1000ms" in late["error"], late["error"]
