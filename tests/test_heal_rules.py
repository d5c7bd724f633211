"""The rules around healing, without a browser: where a test is, what an honest heal is, the
offline provider's heal rule, quarantine edits, target URLs and the PR's verification section."""

from __future__ import annotations

import copy

import pytest

from agents import spec_blocks
from agents.file_policy import check_generated_files
from agents.offline.heal import heal_files
from agents.test_engineer import (
    HEAL_DELETED,
    HEAL_NEW_TEST,
    HEAL_NO_ASSERTION,
    HEAL_ONLY_DELETES,
    HEAL_SKIPPED,
    HEAL_TOUCHED_PASSING,
    heal_problems,
)
from repositories import targets
from runs.verification import summary
from schemas.errors import ContractViolation
from tests.contract_examples import VERIFICATION_REPORT

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
    assert found[0].expects == (
        "expect(response.ok()).toBeTruthy()",
        "expect(body).not.toBeUndefined()",
    )
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


def test_the_offline_heal_tests_an_html_route_as_a_page_and_says_so():
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
            "change": "GET /login answers HTML (text/html), not JSON: tested as a page (2xx, "
            "visible body, no uncaught page errors) instead of as a JSON API. Offline healing "
            "rule, no LLM.",
        }
    ]
    block = spec_blocks.find(healed["contents"], title=GET_LOGIN)
    assert 'await page.goto("/login")' in block.text and "request" not in block.text
    assert "// AMTP heal: GET /login answers HTML" in block.text
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
        (_edit("    expect(body).not.toBeUndefined();\n", ""), HEAL_ONLY_DELETES),
        (
            _edit(
                "    expect(response.ok()).toBeTruthy();\n    const body: unknown = await response.json();\n    expect(body).not.toBeUndefined();\n",
                "    expect(true).toBeTruthy();\n",
            ),
            HEAL_NO_ASSERTION,
        ),
        (_edit('test("tc_api_get_login', 'test.skip("tc_api_get_login'), HEAL_SKIPPED),
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
        "deletes-an-assertion",
        "asserts-a-literal",
        "skips",
        "deletes-the-test",
        "touches-a-passing-test",
        "adds-a-test",
    ],
)
def test_a_dishonest_heal_is_refused(healed, problem):
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
    assert files == report["files"] and title == CODE["pr_title"]
    first, _, rest = body.partition("\n\n")
    assert first == summary.MODEL_WRITTEN.format(
        verdict=summary.RAN_SANDBOXED.format(target="https://preview.acme.test")
    )
    assert rest.startswith(CODE["pr_body"]) and "## Verification" in body
    assert "Ran 2 test(s) against https://preview.acme.test with Playwright Test 1.65.1" in body
    assert "**1 passed · 1 healed**" in body
    assert "| lists users | `e2e/amtp/users.spec.ts` | 🩹 healed | GET /users answers HTML" in body
    assert "BASE_URL=http://localhost:3000 npx playwright test e2e/amtp" in body


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
    assert (files, title) == (CODE["files"], CODE["pr_title"])
    verdict = summary.NOT_VERIFIED.format(reason=summary.NO_REPORT)
    assert body == summary.MODEL_WRITTEN.format(verdict=verdict) + "\n\n" + CODE["pr_body"]


def test_nothing_left_after_dropping_every_test_is_said_plainly():
    report = {**copy.deepcopy(VERIFICATION_REPORT), "files": []}
    with pytest.raises(ContractViolation, match="every generated test failed"):
        summary.pull_request_contents(CODE, report, "e2e/amtp")
