"""The canary: a run through the real workflow (worker, Temporal, PostgreSQL, the box, a fake
LLM vendor over HTTP) against a login-gated app, with a distinctive password stored encrypted
for the repository. The login works (exploration maps a page only a session sees, the tests
pass from the setup project's state), and a spec that tries to leak the password (failure
message, attachment, console) leaks it nowhere: not in an artifact, stage, run row, log,
Temporal history, LLM request, evidence file or the pull request."""

import json
import logging

import pytest
from django.conf import settings

from repositories.credentials import encrypt
from repositories.hosts.local import LocalGitHost
from runs.demo.app import serving
from runs.services import run_create
from tests.factories import RepositoryFactory
from tests.gitrepo import git, make_git_repo
from tests.histories import run_history
from tests.login_app import USERNAME, LoginApp
from tests.scripted_model import fake_anthropic, scripted_model
from tests.signup_app import SignupApp
from tests.temporal_worker import wait_terminal
from tests.test_browser import chromium_path
from tests.test_login_browser import REPORT_SPEC
from tests.verify_apps import NOTES_REPO
from verification import login
from verification.login import new_throwaway

pytestmark = pytest.mark.django_db(transaction=True)

CANARY = "amtp-canary-login-9d41c7e25b"
LEAKING_SPEC = """import { test, expect } from '@playwright/test';

test('leaks the password', async ({ page }, testInfo) => {
  const password = process.env.AMTP_E2E_PASSWORD;
  console.log(`password: ${password}`);
  await testInfo.attach('error-context', { body: `password: ${password}` });
  await page.goto('/account');
  expect(`pw=${password}`).toBe('nothing');
});
"""


CANARY_MODEL = scripted_model(
    case={
        "id": "tc_report",
        "title": "The report is shown to a signed-in user",
        "preconditions": ["Signed in"],
        "steps": ["Open /account/report"],
        "expected": "The report heading is shown",
        "priority": "critical",
    },
    files=[
        {"path": "e2e/amtp/report.spec.ts", "contents": REPORT_SPEC},
        {"path": "e2e/amtp/leak.spec.ts", "contents": LEAKING_SPEC},
    ],
    pr_body="Tests for the account pages.",
)


@pytest.fixture
def app():
    app = LoginApp(CANARY, echo_password=True)
    with serving(app) as app.url:
        yield app


def test_the_login_canary_appears_nowhere(tmp_path, worker, monkeypatch, settings, app, caplog):
    chromium_path()
    caplog.set_level(logging.DEBUG)
    settings.AMTP_VERIFY_RETRIES = 0
    repo = RepositoryFactory(
        full_name="acme/notes",
        host="local",
        local_path=str(make_git_repo(tmp_path / "notes", NOTES_REPO)),
        preview_url=app.url,
        allowed_hosts=["127.0.0.1"],
        login_path="/login",
        login_username_label="Email",
        login_password_label="Password",
        login_submit="Sign in",
        login_success="/account",
        login_username_token=encrypt(USERNAME),
        login_password_token=encrypt(CANARY),
    )
    with fake_anthropic(monkeypatch, [CANARY_MODEL] * 8) as fake:
        run = wait_terminal(run_create(repository=repo, depth_level="smoke"), 240)
        bodies = [r.body.decode() for r in fake.requests]
    assert run.status == "passed", (run.error_type, run.error_message)

    # The canary was where it belongs: the box logged in with it, twice.
    pages = {p["path"]: p for p in run.artifacts.get(kind="app_map").content["pages"]}
    assert '- heading "Quarterly report" [level=1]' in pages["/account/report"]["snapshot"]
    assert app.logins == 2  # exploration, then the setup project
    report = run.artifacts.get(kind="verification_report").content
    results = {t["title"]: t for t in report["tests"]}
    assert results["the report is shown"]["status"] == "passed"
    # the specs' box gets the setup's storage state, never the password
    assert "pw=undefined" in results["leaks the password"]["error"]
    assert any("healing session" in b for b in bodies)  # the failure went to the vendor

    (pull,) = LocalGitHost(repo.full_name, repo.local_path).pull_requests()
    setup = git(repo.local_path, "show", f"{run.head_branch}:e2e/amtp/auth.setup.ts")
    assert "process.env.AMTP_E2E_PASSWORD" in setup and "AMTP_E2E_USERNAME" in pull["body"]
    specs = ("e2e/amtp/report.spec.ts", "e2e/amtp/leak.spec.ts")
    assert_found_nowhere((CANARY, USERNAME), run, repo, pull, specs, caplog, bodies)


SIGNED_IN_SPEC = """import { test, expect } from '@playwright/test';

test('a signed-in user opens the post form', async ({ page }) => {
  await page.goto('/create');
  await expect(page.getByRole('heading', { name: 'New Post', exact: true })).toBeVisible();
});
"""
SIGNUP_LEAKING_SPEC = """import { test, expect } from '@playwright/test';

test('leaks what it can', async ({ page }) => {
  const env = JSON.stringify(process.env);
  console.log(env);
  await page.goto('/account');
  expect(env).toBe('nothing');
});
"""
SIGNUP_MODEL = scripted_model(
    case={
        "id": "tc_create",
        "title": "A signed-in user opens the post form",
        "preconditions": ["Signed in"],
        "steps": ["Open /create"],
        "expected": "The New Post heading is shown",
        "priority": "critical",
    },
    files=[
        {"path": "e2e/amtp/create.spec.ts", "contents": SIGNED_IN_SPEC},
        {"path": "e2e/amtp/leak.spec.ts", "contents": SIGNUP_LEAKING_SPEC},
    ],
    pr_body="Tests for the blog.",
)


def test_the_signup_canary_appears_nowhere(tmp_path, worker, monkeypatch, settings, caplog):
    """No recipe: exploration signs up with a throwaway account (the first refused, the second
    taken) and explores signed in; the tests sign up through their own setup project. The
    throwaway's values reach the box's environment only: nowhere else."""
    chromium_path()
    caplog.set_level(logging.DEBUG)
    settings.AMTP_VERIFY_RETRIES = 0
    made = []

    def recorded():
        made.append(new_throwaway())
        return made[-1]

    monkeypatch.setattr(login, "new_throwaway", recorded)
    app = SignupApp(strict=True)
    with serving(app) as app.url:
        repo = RepositoryFactory(
            full_name="acme/blog",
            host="local",
            local_path=str(make_git_repo(tmp_path / "blog", NOTES_REPO)),
            preview_url=app.url,
            allowed_hosts=["127.0.0.1"],
        )
        with fake_anthropic(monkeypatch, [SIGNUP_MODEL] * 8) as fake:
            run = wait_terminal(run_create(repository=repo, depth_level="smoke"), 240)
            bodies = [r.body.decode() for r in fake.requests]
    assert run.status == "passed", (run.error_type, run.error_message)
    (account,) = made
    secrets = [value for values in account.accounts for value in values]
    app_map = run.artifacts.get(kind="app_map").content
    assert app_map["signup"]["signed_in"] and app_map["signup"]["retried"]
    pages = {p["path"]: p for p in app_map["pages"]}
    assert '- heading "New Post" [level=1]' in pages["/create"]["snapshot"]
    assert account.accounts[1][0] in app.users  # the exploration's own, signed up
    report = run.artifacts.get(kind="verification_report").content
    results = {t["title"]: t for t in report["tests"]}
    assert results["a signed-in user opens the post form"]["status"] == "passed"
    assert len(app.users) >= 2  # the setup project signed up an account of its own

    (pull,) = LocalGitHost(repo.full_name, repo.local_path).pull_requests()
    setup = git(repo.local_path, "show", f"{run.head_branch}:e2e/amtp/auth.setup.ts")
    assert "randomBytes" in setup and "process.env" not in setup
    assert "### Signing up" in pull["body"]
    specs = ("e2e/amtp/create.spec.ts", "e2e/amtp/leak.spec.ts")
    assert_found_nowhere(secrets, run, repo, pull, specs, caplog, bodies)


def assert_found_nowhere(secrets, run, repo, pull, specs, caplog, bodies) -> None:
    """None of ``secrets`` in the run's artifacts, stages, error, the logs, its Temporal
    history, what the vendor was sent, the pull request with its setup and ``specs`` files,
    or the evidence kept."""
    files = [
        git(repo.local_path, "show", f"{run.head_branch}:{path}")
        for path in ("e2e/amtp/auth.setup.ts", *specs)
    ]
    evidence = settings.AMTP_VERIFY_EVIDENCE_DIR / str(run.run_id)
    kept = [p.read_bytes().decode("latin-1") for p in evidence.rglob("*") if p.is_file()]
    run.refresh_from_db()
    texts = {
        "artifacts": json.dumps([[a.content, a.meta] for a in run.artifacts.all()]),
        "stages": json.dumps(list(run.stages.values()), default=str),
        "run": json.dumps([run.error_message, run.error_type]),
        "logs": caplog.text,
        "history": run_history(run.run_id).to_json(),
        "vendor requests": json.dumps(bodies),
        "pull request": json.dumps(pull) + "".join(files),
        "evidence": "".join(kept),
    }
    for secret in secrets:
        found = {where: secret in text for where, text in texts.items()}
        assert found == dict.fromkeys(texts, False), secret
