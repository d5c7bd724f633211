"""``manage.py verify_tests``: a repository's own Playwright files at a ref, run against a live
app in the same sandbox as VerifyTests; one line per test, exit 1 when any fails."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.demo.app import serving
from tests.factories import RepositoryFactory
from tests.gitrepo import make_git_repo
from tests.test_browser import chromium_path
from tests.verify_apps import NOTES_REPO, NotesApp

pytestmark = pytest.mark.django_db

PASSING = """import { test, expect } from '@playwright/test';

test('home page shows the notes heading', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Notes' })).toBeVisible();
});
"""
FAILING = """import { test, expect } from '@playwright/test';

test('an empty note is refused politely', async ({ request }) => {
  const response = await request.post('/api/notes', { data: {} });
  expect(response.status()).toBe(400);
});
"""


@pytest.fixture
def notes_app(tmp_path, settings):
    chromium_path()
    settings.AMTP_VERIFY_EVIDENCE_DIR = tmp_path / "evidence"
    with serving(NotesApp(slow_seconds=0)) as url:
        yield url


def notes_repository(tmp_path, files: dict[str, str]):
    path = make_git_repo(tmp_path / "notes", {**NOTES_REPO, **files})
    return RepositoryFactory(full_name="acme/notes", host="local", local_path=str(path))


def verify_tests(*args) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("verify_tests", *args, stdout=out)
    except SystemExit as exc:
        return exc.code, out.getvalue()
    return 0, out.getvalue()


def test_passing_and_failing_tests_one_line_each_and_exit_1(tmp_path, notes_app):
    notes_repository(
        tmp_path, {"e2e/amtp/home.spec.ts": PASSING, "e2e/amtp/notes.spec.ts": FAILING}
    )
    port = notes_app.rsplit(":", 1)[1]
    code, out = verify_tests(
        "acme/notes", "--target-url", notes_app, "--allow-host", f"127.0.0.1:{port}"
    )
    lines = out.splitlines()
    assert code == 1, out
    assert any(line.startswith("ok   e2e/amtp/home.spec.ts:3") for line in lines), out
    failed = [line for line in lines if line.startswith("FAIL e2e/amtp/notes.spec.ts:3")]
    assert failed and "toBe" in failed[0], out
    assert lines[-1] == "2 test(s): 1 passed, 0 flaky, 1 failed, 0 skipped"


def test_all_passing_exits_0(tmp_path, notes_app):
    notes_repository(tmp_path, {"e2e/amtp/home.spec.ts": PASSING})
    port = notes_app.rsplit(":", 1)[1]
    code, out = verify_tests(
        "acme/notes", "--target-url", notes_app, "--allow-host", f"127.0.0.1:{port}"
    )
    assert code == 0 and out.splitlines()[-1].startswith("1 test(s): 1 passed"), out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--target-url", "http://169.254.169.254/"], "link-local address"),
        (["--target-url", "http://127.0.0.1:9/"], "loopback address"),
        (["--target-url", "ftp://example.com/"], "http:// or https://"),
        (["--target-url", "http://u:p@example.com/"], "user names and passwords"),
        (["--target-url", "http://example.com/", "--allow-host", "http://x"], "HOST:PORT"),
    ],
)
def test_hostile_arguments_are_refused_naming_the_rule(tmp_path, args, said):
    notes_repository(tmp_path, {"e2e/amtp/home.spec.ts": PASSING})
    with pytest.raises(CommandError, match=said):
        call_command("verify_tests", "acme/notes", *args, stdout=StringIO())


def test_a_repository_without_specs_says_so(tmp_path, notes_app):
    notes_repository(tmp_path, {})
    port = notes_app.rsplit(":", 1)[1]
    with pytest.raises(
        CommandError, match=r"holds no Playwright spec \(\*\.spec\.ts\) under e2e/amtp/"
    ):
        call_command(
            "verify_tests",
            "acme/notes",
            "--target-url",
            notes_app,
            "--allow-host",
            f"127.0.0.1:{port}",
            stdout=StringIO(),
        )
