"""The rules around healing, without a browser: where a test is, what an honest heal is, the
offline provider's heal rule, quarantine edits, target URLs and the PR's verification section."""

from __future__ import annotations

import copy
import re

import pytest

from agents import expectations, spec_blocks
from agents.file_policy import check_generated_files
from agents.offline.heal import heal_files
from agents.test_engineer import (
    HEAL_DELETED,
    HEAL_NEW_TEST,
    HEAL_TOUCHED_PASSING,
    heal_problems,
)
from repositories import targets
from schemas.errors import ContractViolation
from tests.contract_examples import VERIFICATION_REPORT
from verification import summary
from verification.amtp_header import SPEC_HEADER, is_amtp_file, with_amtp_header

SPEC = """import { test, expect } from '@playwright/test';

test.describe('API: login', () => {
  test("tc_api_get_login: GET /login responds", async ({ request }) => {
    // Expected: responds with a 2xx status and a JSON body
    const response = await request.get("/login");
    expect(response.ok()).toBeTruthy();
    const body: unknown = await response.json();
    expect(body).not.toBeUndefined();
  });

  test('tc_api_post_login: POST /login does not crash', async ({ request }) => {
    const response = await request.post("/login", { data: {} });
    expect(response.status()).toBeLessThan(500);
  });
});
"""
GET_LOGIN = "tc_api_get_login: GET /login responds"
POST_LOGIN = "tc_api_post_login: POST /login does not crash"
HTML_FAILURE = {
    "title": GET_LOGIN,
    "line": 4,
    "error": "SyntaxError: Unexpected token '<', \"<!doctype \"... is not valid JSON",
    "snapshot": {
        "method": "GET",
        "url": "http://127.0.0.1:5000/login",
        "status": 200,
        "content_type": "text/html; charset=utf-8",
        "body": "<!doctype html><h1>Sign in</h1>",
        "page": "",
    },
}


def test_blocks_are_found_with_their_titles_lines_and_assertions():
    found = spec_blocks.blocks(SPEC)
    assert [(b.title, b.line, b.modifier) for b in found] == [
        (GET_LOGIN, 4, ""),
        (POST_LOGIN, 12, ""),
    ]
    assert [e.text for e in expectations.read(found[0].text).expectations] == [
        "expect(response.ok()).toBeTruthy()",
        "expect(body).not.toBeUndefined()",
    ]
    assert spec_blocks.find(SPEC, title=POST_LOGIN).line == 12
    assert spec_blocks.find(SPEC, title="no such test") is None


def test_quarantine_marks_fixme_with_the_reason_and_drop_removes_only_that_test():
    block = spec_blocks.find(SPEC, title=POST_LOGIN)
    marked = spec_blocks.mark_fixme(SPEC, block, "failed: Expected: < 500\nReceived: 500 */ x")
    assert "  // AMTP quarantined: failed: Expected: < 500 Received: 500 * / x\n" in marked
    assert "  test.fixme('tc_api_post_login: POST /login does not crash'" in marked
    assert [b.modifier for b in spec_blocks.blocks(marked)] == ["", "fixme"]
    check_generated_files(
        [{"path": "e2e/amtp/a.spec.ts", "contents": marked}],
        framework="playwright",
        test_dir="e2e/amtp",
    )
    dropped = spec_blocks.drop(SPEC, block)
    assert [b.title for b in spec_blocks.blocks(dropped)] == [GET_LOGIN]
    check_generated_files(
        [{"path": "e2e/amtp/a.spec.ts", "contents": dropped}],
        framework="playwright",
        test_dir="e2e/amtp",
    )


def test_the_offline_heal_reaches_an_html_route_as_a_page_keeping_every_expectation():
    payload = {
        "run_id": "3f2b8c1e-9a4d-4e6f-8b21-5c7d9e0f1a2b",
        "framework": "playwright",
        "target_url": "http://127.0.0.1:5000",
        "files": [
            {"path": "e2e/amtp/api-login.spec.ts", "contents": SPEC, "failures": [HTML_FAILURE]}
        ],
    }
    output = heal_files(payload)
    (healed,) = output["files"]
    assert output["changes"] == [
        {
            "file": "e2e/amtp/api-login.spec.ts",
            "title": GET_LOGIN,
            "change": "GET /login answers HTML (text/html), not JSON: reached as a page "
            "(page.goto) with its body read from the page instead of parsed as JSON; every "
            "expectation kept, a visible body and no uncaught page errors added. Offline healing "
            "rule, no LLM.",
        }
    ]
    block = spec_blocks.find(healed["contents"], title=GET_LOGIN)
    assert 'const response = (await page.goto("/login"))!;' in block.text
    # no `request` fixture left (the page's own `requestfailed` listener is not one)
    assert not re.search(r"\brequest\b", block.text) and ".json()" not in block.text
    assert "// AMTP heal: GET /login answers HTML" in block.text
    old = spec_blocks.find(SPEC, title=GET_LOGIN)
    now = [e.text for e in expectations.read(block.text).expectations]
    for kept in expectations.read(old.text).expectations:  # each as it was, word for word
        assert kept.text in now
    assert expectations.weakening(old.text, block.text) == []
    assert heal_problems(SPEC, healed["contents"], {GET_LOGIN}) == []
    check_generated_files([healed], framework="playwright", test_dir="e2e/amtp")


@pytest.mark.parametrize(
    "error,content_type",
    [
        (
            "Error: expect(received).toBeLessThan(expected) Expected: < 500 Received: 500",
            "text/html",
        ),
        ("SyntaxError: Unexpected token '<' is not valid JSON", "application/json"),
    ],
)
def test_the_offline_heal_leaves_a_real_finding_alone(error, content_type):
    failure = copy.deepcopy(HTML_FAILURE)
    failure["error"], failure["snapshot"]["content_type"] = error, content_type
    payload = {
        "run_id": "3f2b8c1e-9a4d-4e6f-8b21-5c7d9e0f1a2b",
        "framework": "playwright",
        "target_url": "http://127.0.0.1:5000",
        "files": [{"path": "e2e/amtp/a.spec.ts", "contents": SPEC, "failures": [failure]}],
    }
    assert heal_files(payload)["files"] == [] and heal_files(payload)["changes"] == []


def _edit(old: str, new: str) -> str:
    assert old in SPEC
    return SPEC.replace(old, new, 1)


@pytest.mark.parametrize(
    "healed,problem",
    [
        (spec_blocks.drop(SPEC, spec_blocks.find(SPEC, title=GET_LOGIN)), HEAL_DELETED),
        (_edit("toBeLessThan(500)", "toBeLessThan(600)"), HEAL_TOUCHED_PASSING),
        (
            _edit(
                "});\n",
                "});\n  test('extra', async ({ page }) => { expect(page).toBeTruthy(); });\n",
            ),
            HEAL_NEW_TEST,
        ),
    ],
    ids=[
        "deletes-the-test",
        "touches-a-passing-test",
        "adds-a-test",
    ],
)
def test_a_heal_out_of_shape_is_refused(healed, problem):
    problems = heal_problems(SPEC, healed, {GET_LOGIN})
    assert any(problem in p for p in problems), problems


def test_leaving_a_failing_test_unchanged_is_allowed():
    assert heal_problems(SPEC, SPEC, {GET_LOGIN}) == []


@pytest.mark.parametrize(
    "value,problem",
    [
        ("", None),
        ("https://preview.acme.test", None),
        ("http://127.0.0.1:8000/app/", None),
        ("ftp://acme.test", targets.TARGET_URL_INVALID),
        ("acme.test", targets.TARGET_URL_INVALID),
        ("https://user:pw@acme.test", targets.TARGET_URL_CREDENTIALS),
        ("https://acme.test/a b", targets.TARGET_URL_INVALID),
        ("https://acme.test:99999999", targets.TARGET_URL_INVALID),
        ("https://acme.test/#x", targets.TARGET_URL_INVALID),
        ("https://acme.test/" + "x" * 500, targets.TARGET_URL_TOO_LONG),
        (None, targets.TARGET_URL_INVALID),
    ],
)
def test_target_url_rule(value, problem):
    assert targets.target_url_problem(value) == problem


CODE = {
    "files": [{"path": "e2e/amtp/a.spec.ts", "contents": SPEC}],
    "pr_title": "Add 2 end-to-end playwright tests",
    "pr_body": "## End-to-end tests generated by AMTP\n",
}


def test_the_pull_request_carries_the_verification_table_and_how_to_run_it():
    report = copy.deepcopy(VERIFICATION_REPORT)
    files, title, body = summary.pull_request_contents(CODE, report, "e2e/amtp")
    assert files == with_amtp_header(report["files"]) and title == CODE["pr_title"]
    first, _, rest = body.partition("\n\n")
    assert first == summary.MODEL_WRITTEN.format(
        verdict=summary.RAN_SANDBOXED.format(target="https://preview.acme.test")
    )
    assert rest.startswith(CODE["pr_body"]) and "## Verification" in body
    assert "Ran 2 test(s) against https://preview.acme.test with Playwright Test 1.65.1" in body
    assert "**1 passed · 1 healed**" in body
    assert "| lists users | `e2e/amtp/users.spec.ts` | 🩹 healed | GET /users answers HTML" in body
    assert "BASE_URL=http://localhost:3000 npx playwright test e2e/amtp" in body


def test_every_spec_a_pull_request_carries_opens_with_the_amtp_header():
    """A model may leave the header out; maintenance would then not know the spec as AMTP's."""
    marked = "/* Generated by AMTP with care */\n" + SPEC
    code = {
        **CODE,
        "files": [
            {"path": "e2e/amtp/a.spec.ts", "contents": SPEC},
            {"path": "e2e/amtp/b.spec.ts", "contents": marked},
        ],
    }
    files, _, _ = summary.pull_request_contents(code, None, "e2e/amtp")
    assert [f["contents"] for f in files] == [SPEC_HEADER + SPEC, marked]  # added once only
    assert all(is_amtp_file(f["contents"]) for f in files)
    assert not is_amtp_file(SPEC) and code["files"][0]["contents"] == SPEC  # input untouched
    assert check_generated_files(files, framework="playwright", test_dir="e2e/amtp") == files


def test_an_unverified_pull_request_says_so_in_its_title_and_body():
    report = {**copy.deepcopy(VERIFICATION_REPORT), "status": "unverified", "tests": []}
    report["reason"] = "TargetUnreachable: the target https://preview.acme.test did not answer"
    _, title, body = summary.pull_request_contents(CODE, report, "e2e/amtp")
    assert title == "[unverified] " + CODE["pr_title"]
    assert "**⚠️ Unverified** — the tests could not be run: TargetUnreachable" in body
    assert body.startswith(
        summary.MODEL_WRITTEN.format(
            verdict="They were **not verified**: TargetUnreachable: the target "
            "https://preview.acme.test did not answer."
        )
    )


def test_specs_run_without_the_sandbox_are_not_called_sandboxed():
    report = copy.deepcopy(VERIFICATION_REPORT)
    report["sandbox"] = {**report["sandbox"], "isolated": False}
    _, _, body = summary.pull_request_contents(CODE, report, "e2e/amtp")
    assert "**without a sandbox**" in body.partition("\n")[0]
    assert "ran in a sandbox" not in body


def test_a_run_from_before_the_stage_gets_the_engineers_pull_request():
    files, title, body = summary.pull_request_contents(CODE, None, "e2e/amtp")
    assert (files, title) == (with_amtp_header(CODE["files"]), CODE["pr_title"])
    verdict = summary.NOT_VERIFIED.format(reason=summary.NO_REPORT)
    assert body == summary.MODEL_WRITTEN.format(verdict=verdict) + "\n\n" + CODE["pr_body"]


def test_nothing_left_after_dropping_every_test_is_said_plainly():
    report = {**copy.deepcopy(VERIFICATION_REPORT), "files": []}
    with pytest.raises(ContractViolation, match="every generated test failed"):
        summary.pull_request_contents(CODE, report, "e2e/amtp")


def test_each_heal_shows_in_the_pull_request_as_a_folded_bounded_diff():
    report = copy.deepcopy(VERIFICATION_REPORT)
    healed = report["tests"][0]
    refused = {
        **healed,
        "title": "home <shows> notes",
        "status": "quarantined",
        "heal": "",
        "reason": "possible app bug: the expectation still fails; the heal was refused: it "
        "tried to loosen `expect(h1).toHaveText('Notes')` to `expect(h1).toBeVisible()`",
        "diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-  ```\n+  ````",
        "evidence": [],
    }
    report["tests"].append(refused)
    _, _, body = summary.pull_request_contents(CODE, report, "e2e/amtp")
    assert "### Heals" in body
    assert "<details><summary>🩹 healed: lists users</summary>" in body
    assert f"```diff\n{healed['diff']}\n```\n" in body
    assert (
        "Evidence (files on this run's page in AMTP, under Verification): before: trace "
        "`run-1/users-lists/trace.zip`; after: trace `rerun-2/users-lists/trace.zip`." in body
    )
    assert "before: none kept; after: not run (the heal was refused)." in body
    assert (
        "Test data: set-up `POST https://preview.acme.test/api/test-data/seed` answered 201 in "
        "0.4 s; tear-down `node -e 'process.exit(1)'` exited 1 in 0.3 s ⚠️ (the data it should "
        "remove may remain)." in body
    )
    assert "<summary>🛑 heal refused: home &lt;shows&gt; notes</summary>" in body
    assert f"`````diff\n{refused['diff']}\n`````" in body  # a fence its diff cannot close
    report["tests"] = [{**refused, "diff": "+ x\n" * 900} for _ in range(12)]
    section = "\n".join(summary.heals_section(report["tests"]))
    assert len(section) < summary.HEALS_CHARS + 600 and section.count("<details>") == 2
    assert section.rstrip().endswith("… 10 more heal(s) in the verification report.")
