"""The hostile corpus, continued: specs that go after the verdict, the worker's file reads and
the login's password, each through the real box (bubblewrap, the proxy, Playwright Test on
Debian's Chromium) against a live app on loopback. A forged or inconsistent verdict ends as
"report not trustworthy", never as passed; a path out of the box's results folder is never
read; a password in any written form reaches no report, pull request body, heal request or
evidence file. Where bubblewrap cannot start, these tests fail; they are never skipped."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import zipfile
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

import pytest

from repositories.credentials import Credentials, in_use
from repositories.login import Recipe
from runs.demo.app import serving
from tests.login_app import USERNAME, LoginApp
from tests.test_verify import HEADER, make_plan, spec
from tests.verify_apps import NotesApp
from verification import playwright, verdict
from verification import verify as v
from verification.errors import ReportNotTrustworthy
from verification.login import Login
from verification.sandbox import Outcome
from verification.service import runner_from_settings
from verification.summary import pr_section

ONCE = runner_from_settings()


@pytest.fixture
def notes():
    with serving(NotesApp(slow_seconds=0)) as url:
        yield url


def run(tmp_path, url, files, seen: list, **overrides) -> dict:
    plan = make_plan(tmp_path, url, files, runner=dataclasses.replace(ONCE, retries=0), **overrides)

    def heal(payload, seconds):
        seen.append(json.dumps(payload))
        raise v.AmtpError("no healing in the hostile corpus")

    return v.verify(plan, heal=heal)


def kept_files(tmp_path: Path) -> list[bytes]:
    return [p.read_bytes() for p in (tmp_path / "evidence").rglob("*") if p.is_file()]


REWRITES_THE_REPORT = """import fs from 'node:fs';
test('fails for real', async () => {
  expect(1).toBe(2);
});
test('rewrites the report', async () => {
  const forged = { suites: [{ specs: [{ file: 'e2e/amtp/hostile.spec.ts', title: 'invented',
    line: 1, tests: [{ status: 'expected', results: [{ status: 'passed', duration: 1 }] }] }] }],
    tests: [], errors: [] };
  for (const name of ['report.json', 'verdict.json', 'results.json']) {
    fs.writeFileSync(name, JSON.stringify(forged));
    fs.chmodSync(name, 0o444);
  }
});
"""


def test_a_rewritten_report_file_changes_nothing(tmp_path, notes):
    seen: list = []
    report = run(tmp_path, notes, [spec("hostile", HEADER + REWRITES_THE_REPORT)], seen)
    statuses = {t["title"]: t["status"] for t in report["tests"]}
    assert statuses == {"fails for real": "quarantined", "rewrites the report": "passed"}


# A spec that goes after the verdict from wherever its code runs: at its top level (Playwright's
# command line ran that in its runner, beside the reporter: now a loader process of its own) and
# in a test body (a worker). It writes a forged verdict, naming every listed test as passed, to
# any pipe it holds as fd 3 (the verdict's descriptor in the old runner) and closes it; it
# rewires JSON.stringify and fs.writeSync as the reporter would call them; it opens the
# runner's descriptors and memory through /proc (the runner is the parent of the loader and of
# the workers); it prints the forged verdict.
GOES_AFTER_THE_VERDICT = """import fs from 'node:fs';
const FORGED = {forged};
const tryWrite = (fd) => {{
  try {{
    if (!fs.readlinkSync(`/proc/self/fd/${{fd}}`).startsWith('pipe:')) return 'not a pipe';
    fs.writeSync(fd, FORGED);
    fs.closeSync(fd);
    return 'wrote';
  }} catch (e) {{ return e.code; }}
}};
const reach = (what) => {{
  try {{ fs.closeSync(fs.openSync(what, 'r+')); return 'opened'; }} catch (e) {{ return e.code; }}
}};
const runner = process.ppid;
const tried = {{
  fd3: tryWrite(3),
  fds: (() => {{ try {{ return fs.readdirSync(`/proc/${{runner}}/fd`).length; }} catch (e) {{ return e.code; }} }})(),
  verdictFd: reach(`/proc/${{runner}}/fd/3`),
  mem: reach(`/proc/${{runner}}/mem`),
}};
const stringify = JSON.stringify;
JSON.stringify = (value, ...rest) =>
  value && value.tests && value.errors ? FORGED : stringify(value, ...rest);
const writeSync = fs.writeSync;
fs.writeSync = (fd, data, ...rest) => writeSync(fd, fd === 3 ? FORGED : data, ...rest);
console.log(FORGED);
test('fails for real', async () => {{
  expect(1).toBe(2);
}});
test('the runner is out of reach', async () => {{
  expect(tried).toEqual({{ fd3: 'not a pipe', fds: 'EACCES', verdictFd: 'EACCES', mem: 'EACCES' }});
}});
"""


def forged_verdict(body: str) -> str:
    """A verdict as the reporter sends it, naming every test of ``body`` (a spec of
    e2e/amtp/hostile.spec.ts) as passed."""
    lines = (HEADER + body).splitlines()
    tests = [
        {
            "file": "e2e/amtp/hostile.spec.ts",
            "title": title,
            "line": next(n for n, text in enumerate(lines, 1) if f"test('{title}'" in text),
            "status": "expected",
            "expectedStatus": "passed",
            "results": [{"status": "passed", "duration": 5, "attachments": []}],
        }
        for title in ("fails for real", "the runner is out of reach")
    ]
    return json.dumps({"tests": tests, "errors": []})


def test_spec_code_cannot_reach_the_verdict(tmp_path, notes):
    body = GOES_AFTER_THE_VERDICT.format(forged=json.dumps(forged_verdict(GOES_AFTER_THE_VERDICT)))
    seen: list = []
    report = run(tmp_path, notes, [spec("hostile", HEADER + body)], seen)
    statuses = {t["title"]: (t["status"], t["error"][:300]) for t in report["tests"]}
    assert statuses["the runner is out of reach"][0] == "passed", statuses
    assert statuses["fails for real"][0] == "quarantined", statuses  # its real outcome


FAILS = """test('fails for real', async () => {
  expect(1).toBe(2);
});
"""


def _forged(title: str, duration: str = "5", started: str = "") -> str:
    """A verdict as the reporter would send it, with ``duration`` (and ``started``, its
    startTime) as raw JSON text."""
    entry = {
        "file": "e2e/amtp/hostile.spec.ts",
        "title": title,
        "line": 3,
        "status": "expected",
        "expectedStatus": "passed",
        "results": [{"status": "passed", "duration": 0, "attachments": []}],
    }
    text = json.dumps({"tests": [entry], "errors": []})
    start = f', "startTime": {started}' if started else ""
    return text.replace('"duration": 0', f'"duration": {duration}{start}')


@pytest.mark.parametrize(
    "sent, why",
    [
        (
            _forged("invented"),
            "a test not in the listed specs (e2e/amtp/hostile.spec.ts › invented)",
        ),
        ('{"tests": [], "errors": []}', "a listed test is missing from it"),
        (_forged("fails for real", '"NaN"'), "the field duration of 'fails for real'"),
        (_forged("fails for real", "NaN"), "the field duration of 'fails for real'"),
        (_forged("fails for real", "-Infinity"), "the field duration of 'fails for real'"),
        (_forged("fails for real")[:-9], "not a JSON object"),
    ],
    ids=["invented-test", "missing-test", "nan-string", "nan", "infinity", "cut-short"],
)
def test_an_inconsistent_verdict_is_not_trustworthy(tmp_path, sent, why):
    """What arrives down the verdict's pipe is checked as hostile (whoever sent it)."""
    channel = verdict.Channel()
    os.write(channel.write_fd, sent.encode())
    os.close(channel.write_fd)
    box = SimpleNamespace(output_tail=lambda limit: "")
    files = [spec("hostile", HEADER + FAILS)]
    with pytest.raises(ReportNotTrustworthy) as caught:
        data = playwright._verdict(box, Outcome(1, ""), channel)
        verdict.results(data, files, Path, tmp_path)
    assert caught.value.message.startswith("report not trustworthy: ")
    assert why in caught.value.message
    assert "no test is reported as passed" in caught.value.message
    # the genuine verdict of the same spec passes the check
    channel = verdict.Channel()
    os.write(channel.write_fd, _forged("fails for real").encode())
    os.close(channel.write_fd)
    data = playwright._verdict(box, Outcome(1, ""), channel)
    assert [r.title for r in verdict.results(data, files, Path, tmp_path)] == ["fails for real"]


@pytest.mark.parametrize("started", ['"now"', "-1", "1e300", "true"])
def test_a_start_time_that_is_not_one_is_not_trustworthy(tmp_path, started):
    """The start of each attempt (which test ran when the app crashed) is checked like the
    rest; checked here without a box (the forged reports above show the way in)."""
    files = [spec("hostile", HEADER + "test('fails for real', async () => {});\n")]
    data = json.loads(_forged("fails for real", started=started))
    data["tests"][0]["line"] = 3
    with pytest.raises(ReportNotTrustworthy, match="the field startTime of 'fails for real'"):
        verdict.results(data, files, Path, tmp_path)
    data["tests"][0]["results"][0]["startTime"] = 1_700_000_000_000
    (found,) = verdict.results(data, files, Path, tmp_path)
    assert found.attempts[0].ran_at(1_700_000_000.004)
    assert not found.attempts[0].ran_at(1_700_000_000.006)  # its 5 ms had ended


HOST_SECRET = "host-file-secret-5c1e0b7d"


def host_trace(path: Path) -> Path:
    """A file of the worker's (as .devstack/postgres.password is) that reads as a trace whose
    last response carries HOST_SECRET: what the heal request's snapshot would quote."""
    snapshot = {
        "request": {"method": "GET", "url": "http://app.test/"},
        "response": {"status": 200, "content": {"mimeType": "text/plain", "_file": "body"}},
    }
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            "0-trace.network", json.dumps({"type": "resource-snapshot", "snapshot": snapshot})
        )
        archive.writestr("body", HOST_SECRET)
    return path


def test_attachment_paths_outside_the_results_folder_are_never_read(tmp_path, notes):
    outside = host_trace(tmp_path / "outside.zip")
    body = f"""import fs from 'node:fs';
test('points the worker at its own files', async ({{}}, testInfo) => {{
  const link = testInfo.outputPath('trace.zip');
  fs.mkdirSync(testInfo.outputDir, {{ recursive: true }});
  fs.symlinkSync({json.dumps(str(outside))}, link);
  testInfo.attachments.push(
    {{ name: 'trace', contentType: 'application/zip', path: {json.dumps(str(outside))} }},
    {{ name: 'trace', contentType: 'application/zip', path: link }},
    {{ name: 'trace', contentType: 'application/zip', path: '/sandbox/playwright.config.mjs' }},
    {{ name: 'trace', contentType: 'application/zip', path: '/sandbox/results/../../etc/passwd' }},
  );
  expect(1).toBe(2);
}});
"""
    seen: list = []
    report = run(tmp_path, notes, [spec("hostile", HEADER + body)], seen)
    row = report["tests"][0]
    assert row["status"] == "quarantined" and seen  # failed, so a heal request was made
    failure = json.loads(seen[0])["files"][0]["failures"][0]
    assert failure["snapshot"]["body"] == ""  # no response read from outside the results
    assert all(HOST_SECRET not in text for text in (seen[0], json.dumps(report)))
    assert not any(HOST_SECRET.encode() in data for data in kept_files(tmp_path))
    # what is kept is Playwright's own (its trace and error context, in the results folder)
    assert not any(b"root:x:0:0" in data or b"baseURL" in data for data in kept_files(tmp_path))
    assert len([e for e in row["evidence"] if e["kind"] == "error_context"]) == 1


PASSWORD = "Canary-Pass-8e2f1d"
BY_TEXT = Recipe("/login", "Email", "Password", "Sign in", "Your account")


@pytest.fixture
def echoing():
    """A login-gated app that shows its password to a signed-in user (a debug line)."""
    app = LoginApp(PASSWORD, echo_password=True)
    with serving(app) as app.url:
        yield app


ENCODES = """test('encodes the password\\nok 1 - forged line', async ({ page }) => {
  const env = process.env.AMTP_E2E_PASSWORD ?? 'none in env';
  await page.goto('/account');
  const shown = (await page.getByText('debug:').textContent()).replace('debug: ', '').trim();
  const hex = Buffer.from(shown).toString('hex');
  const b64 = Buffer.from(`user:${shown}`).toString('base64');
  console.log(`console: ${shown.toLowerCase()} ${encodeURIComponent(shown)}`);
  await page.goto(`http://x${shown.toLowerCase()}\\`.example/`).catch(() => {});
  expect(`env=${env} hex=${hex} b64=${b64} upper=${shown.toUpperCase()}`).toBe('nothing');
});
"""


def test_an_encoded_password_leaves_no_trace(tmp_path, echoing):
    credentials = Credentials(USERNAME, PASSWORD)
    seen: list = []
    with in_use(credentials):
        report = run(
            tmp_path,
            echoing.url,
            [spec("hostile", HEADER + ENCODES)],
            seen,
            login=Login(BY_TEXT, credentials),
        )
    body = pr_section(report, "e2e/amtp")
    row = report["tests"][0]
    assert row["status"] == "quarantined" and "env=none in env" in row["error"]
    assert "[REDACTED:held-secret]" in row["error"]
    forms = [
        PASSWORD,
        PASSWORD.lower(),
        PASSWORD.upper(),
        PASSWORD.encode().hex(),
        quote(PASSWORD),
        base64.b64encode(f"user:{PASSWORD}".encode()).decode()[8:20],
    ]
    texts = [json.dumps(report), body, *seen]
    texts += [data.decode("utf-8", "replace") for data in kept_files(tmp_path)]
    for form in forms:
        assert all(form not in text for text in texts), form
    # one line each: a title's newline forges no `ok …` line; a backtick opens no code span
    assert "\n" not in row["title"] and "\n" not in row["id"]
    assert not any(line.startswith("ok 1") for line in body.splitlines())
    assert report["sandbox"]["blocked"], "the host named after the password was refused"
    refused = next(line for line in body.splitlines() if line.startswith("Connections"))
    assert "``" in refused  # the backtick is inside a longer fence, not closing the span
