"""Test data: a repository's set-up and tear-down, their settings' rules, and their runs in the
sandbox around the generated tests (live app on loopback, the real box and proxy)."""

from __future__ import annotations

import pytest

import schemas
from repositories import test_data as rules
from repositories.errors import RepositoryInvalid
from repositories.forms import RepositoryForm
from repositories.services import repository_validate
from runs.demo.app import serving
from tests.test_repository_rules import GITHUB_FORM
from tests.test_verify import HEADER, by_title, make_plan, no_heal, spec
from tests.verify_apps import SeededApp
from verification import proxy, summary
from verification import test_data as hooks
from verification import verify as v
from verification.errors import TestDataFailed
from verification.service import runner_from_settings

PREVIEW = "https://preview.acme.test"
TOO_MANY_ARGS = ["node", *["x"] * rules.MAX_ARGS]


@pytest.fixture
def seeded():
    app = SeededApp()
    with serving(app) as url:
        yield app, url


# --- the settings ----------------------------------------------------------------------------

HOSTILE = [
    ("test_data_setup_url", "https://evil.example/seed", "not on the preview URL's origin"),
    ("test_data_setup_url", "http://169.254.169.254/latest/meta-data/", "preview URL's origin"),
    ("test_data_teardown_url", "//evil.example/reset", "give a path on the app"),
    ("test_data_setup_url", "/\\evil.example/seed", "no spaces, backslashes"),
    ("test_data_setup_url", "javascript:alert(1)", "give a path on the app"),
    ("test_data_setup_url", "https://user:pw@preview.acme.test/seed", "user names"),
    ("test_data_setup_url", "/" + "x" * 500, "at most 500 characters"),
    ("test_data_setup_command", "node seed.mjs", "as a JSON list of strings"),
    ("test_data_setup_command", ["node", 1], "as a JSON list of strings"),
    ("test_data_setup_command", TOO_MANY_ARGS, f"at most {rules.MAX_ARGS} arguments"),
    ("test_data_setup_command", ["node", "x" * 1001], "argument 2 is over 1000 characters"),
    ("test_data_teardown_command", ["node", "-e", "a\x00b"], "argument 3 holds a control"),
    ("test_data_teardown_command", [" ", "x"], "the first item names the program"),
    ("test_data_timeout_s", 0, "between 1 and 300 seconds"),
    ("test_data_timeout_s", 301, "between 1 and 300 seconds"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("field", "value", "said"), HOSTILE)
def test_hostile_test_data_settings_are_refused_naming_field_and_rule(field, value, said):
    with pytest.raises(RepositoryInvalid) as caught:
        repository_validate(full_name="acme/data", preview_url=PREVIEW, **{field: value})
    assert list(caught.value.errors) == [field]
    assert said in " ".join(caught.value.errors[field])


@pytest.mark.django_db
def test_valid_hooks_are_kept_verbatim_shell_characters_included():
    command = ["sh", "-c", "echo $HOME; rm -rf / && `id`"]
    values = repository_validate(
        full_name="acme/data",
        preview_url=PREVIEW,
        test_data_setup_url=PREVIEW + "/api/seed?token=x",
        test_data_teardown_command=command,
    )
    assert values["test_data_teardown_command"] == command
    with pytest.raises(RepositoryInvalid) as caught:
        repository_validate(
            full_name="acme/data", test_data_setup_url="/seed", test_data_setup_command=["true"]
        )
    assert caught.value.errors == {
        "test_data_setup_command": ["give a URL or a command for the set-up, not both"]
    }


@pytest.mark.django_db
def test_the_admin_form_takes_a_command_as_json_and_shows_errors_on_its_field():
    form = RepositoryForm(
        data={
            **GITHUB_FORM,
            "test_data_setup_command": '["node", "-e", "1"]',
            "test_data_timeout_s": 60,
        }
    )
    assert form.is_valid(), form.errors
    assert form.cleaned_data["test_data_setup_command"] == ["node", "-e", "1"]
    assert form.cleaned_data["test_data_teardown_command"] == []
    form = RepositoryForm(
        data={
            **GITHUB_FORM,
            "test_data_setup_command": '"node seed.mjs"',
            "test_data_timeout_s": 60,
        }
    )
    assert not form.is_valid()
    assert rules.COMMAND_NOT_A_LIST in form.errors["test_data_setup_command"]


def test_a_hook_url_off_the_runs_target_is_refused_at_run_time():
    assert (
        rules.resolve("/seed?x=1", "http://127.0.0.1:8000/app/") == "http://127.0.0.1:8000/seed?x=1"
    )
    with pytest.raises(ValueError, match="not on the target's origin"):
        rules.resolve(PREVIEW + "/seed", "https://other.acme.test")


# --- the hooks in the box ----------------------------------------------------------------------


def run_hook(url, command, timeout_s=20.0, path=""):
    hook = hooks.Hook("setup", path, tuple(command))
    policy = proxy.Policy(url, ["127.0.0.1"])
    entry = hooks.run(
        hook, target_url=url, policy=policy, runner=runner_from_settings(), timeout_s=timeout_s
    )
    return entry, policy


def test_a_command_gets_its_arguments_literally_without_a_shell(seeded):
    entry, _ = run_hook(seeded[1], ["echo", "$(id)", ";", "rm -rf /", "|", "`id`", "&&"])
    assert (entry["status"], entry["code"], entry["detail"]) == ("passed", 0, "exited 0")
    assert entry["output"] == "$(id) ; rm -rf / | `id` &&"
    assert entry["call"] == "echo '$(id)' ';' 'rm -rf /' '|' '`id`' '&&'"


# A command reaching out the documented way: through the proxy the box's HTTP_PROXY names.
FETCH = (
    "const p = new URL(process.env.HTTP_PROXY); require('http').get({host: p.hostname, "
    "port: p.port, path: process.argv[1]}, (r) => { console.log(r.statusCode); "
    "process.exit(r.statusCode === 200 ? 0 : 1); }).on('error', () => process.exit(2));"
)


def test_a_command_cannot_reach_other_hosts_nor_read_outside_the_box(seeded, tmp_path):
    entry, policy = run_hook(seeded[1], ["node", "-e", FETCH, "http://169.254.169.254/latest/"])
    assert (entry["status"], entry["code"], entry["output"]) == ("failed", 1, "403")
    assert policy.blocked == ["169.254.169.254:80"]
    canary = tmp_path / "canary.txt"
    canary.write_text("canary-4f1d")
    entry, _ = run_hook(seeded[1], ["cat", str(canary)])
    assert entry["status"] == "failed" and entry["code"] == 1
    assert "No such file" in entry["output"] and "canary-4f1d" not in entry["output"]


def test_a_hook_that_runs_too_long_is_stopped_at_its_timeout(seeded):
    entry, _ = run_hook(seeded[1], ["sleep", "30"], timeout_s=1)
    assert (entry["status"], entry["code"], entry["detail"]) == (
        "failed",
        None,
        "timed out after 1 s",
    )
    assert entry["duration_ms"] < 10_000


# --- around the tests ------------------------------------------------------------------------

NEEDS_SEED = (
    HEADER
    + """test('home lists the seeded note', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByText('Seeded note')).toBeVisible();
});
"""
)
RESET = [
    "node",
    "-e",
    FETCH.replace("get({", "request({method: 'POST', ")
    .replace("2));", "2)).end();")
    .replace("=== 200", "< 400"),
    "__URL__",
]


def test_the_setup_seeds_what_a_test_needs_and_the_teardown_is_reported(tmp_path, seeded):
    app, url = seeded
    reset = [arg.replace("__URL__", url + "/test-data/reset") for arg in RESET]
    plan = make_plan(
        tmp_path,
        url,
        [spec("seeded", NEEDS_SEED)],
        test_data=hooks.Hooks(
            hooks.Hook("setup", "/test-data/seed"), hooks.Hook("teardown", "", tuple(reset)), 30
        ),
    )
    report = v.verify(plan, heal=no_heal)
    schemas.validate("verification/report", report)
    assert by_title(report)["home lists the seeded note"]["status"] == "passed"
    setup, teardown = report["test_data"]
    assert (setup["phase"], setup["kind"], setup["code"], setup["output"]) == (
        "setup",
        "url",
        201,
        "seeded",
    )
    assert setup["call"] == f"POST {url}/test-data/seed"
    assert (teardown["phase"], teardown["kind"], teardown["status"], teardown["code"]) == (
        "teardown",
        "command",
        "passed",
        0,
    )
    assert app.calls[:3] == ["GET /", "POST /test-data/seed", "GET /"]  # probe, set-up, test
    assert app.calls[-1] == "POST /test-data/reset" and app.notes == []
    section = summary.pr_section(report, "e2e/amtp")
    assert f"Test data: set-up `POST {url}/test-data/seed` answered 201 in " in section
    assert "; tear-down `node -e " in section


def test_a_failing_setup_stops_before_any_test_runs_or_is_quarantined(tmp_path, seeded):
    app, url = seeded
    plan = make_plan(
        tmp_path,
        url,
        [spec("seeded", NEEDS_SEED)],
        test_data=hooks.Hooks(
            hooks.Hook("setup", "/test-data/fail"), hooks.Hook("teardown", "/test-data/reset")
        ),
    )
    with pytest.raises(TestDataFailed) as caught:
        v.verify(plan, heal=no_heal)  # no_heal: nothing may be healed or quarantined
    assert caught.value.message.startswith(
        f"test data setup failed: POST {url}/test-data/fail answered 500: seed failed: the "
        "database is not reachable; no test was run."
    )
    assert app.calls == ["GET /", "POST /test-data/fail", "POST /test-data/reset"]  # the probe
    statuses = [(c["phase"], c["status"]) for c in caught.value.details["test_data"]]
    assert statuses == [("setup", "failed"), ("teardown", "passed")]
    unverified = v.not_run(
        plan, "unverified", caught.value.message, caught.value.details["test_data"]
    )
    schemas.validate("verification/report", unverified)
    assert unverified["test_data"] == caught.value.details["test_data"]
    assert unverified["totals"]["quarantined"] == 0 and unverified["totals"]["skipped"] == 1
