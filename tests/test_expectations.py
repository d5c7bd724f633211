"""The heal rule (agents.expectations) with hostile heals: every way of loosening a test is
refused, with what it tried; the heals a healer should make (a new locator, a wait, another
path) are taken. And the rule applied to a file (verification.heals): a refused heal is
put back, the honest one beside it kept, each shown as a bounded diff."""

from __future__ import annotations

import pytest

from agents import expectations, spec_blocks
from verification import heals

TEST = """test('home shows the notes', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Notes' })).toHaveText('Notes');
  await expect(page).toHaveURL(/\\/notes$/);
  const response = await page.request.get('/api/notes');
  expect(response.status()).not.toBe(500);
  expect(await response.json()).toEqual([{ id: 1, text: 'Buy milk' }]);
});"""

HEADING = "await expect(page.getByRole('heading', { name: 'Notes' })).toHaveText('Notes');"
STATUS = "expect(response.status()).not.toBe(500);"


def healed(old: str, new: str) -> str:
    assert old in TEST, old
    return TEST.replace(old, new, 1)


LOOSENINGS = {
    "removes-an-expect": (healed(f"  {STATUS}\n", ""), "remove `expect(response.status())"),
    "removes-every-expect": (
        "test('home shows the notes', async ({ page }) => {\n  await page.goto('/');\n});",
        expectations.NO_EXPECTATION,
    ),
    "weaker-matcher": (
        healed(HEADING, "await expect(page.getByRole('heading')).toBeVisible();"),
        "loosen `expect(page.getByRole('heading', { name: 'Notes' })).toHaveText('Notes')` to",
    ),
    "truthy-for-url": (
        healed("await expect(page).toHaveURL(/\\/notes$/);", "expect(page.url()).toBeTruthy();"),
        "loosen `expect(page).toHaveURL",
    ),
    "not-added": (
        healed("toHaveText('Notes')", "not.toHaveText('Error')"),
        "change the .not/.resolves/.rejects of `expect(page.getByRole",
    ),
    "not-removed": (
        healed(".not.toBe(500)", ".toBe(500)"),
        "change the .not/.resolves/.rejects of",
    ),
    "expected-text": (healed("toHaveText('Notes')", "toHaveText('Note')"), "expected value"),
    "expected-regex": (healed("/\\/notes$/", "/notes/"), "expected value"),
    "expected-object": (
        healed("[{ id: 1, text: 'Buy milk' }]", "expect.anything()"),
        "expected value",
    ),
    "named-expected-value": (
        healed("toHaveText('Notes')", "toHaveText(heading)").replace(
            "  await page.goto('/');\n", "  const heading = /.*/;\n  await page.goto('/');\n"
        ),
        "expected value",
    ),
    "text-option": (
        healed("toHaveText('Notes')", "toHaveText('notes', { ignoreCase: true })"),
        "expected value",
    ),
    "soft": (healed("expect(response.status())", "expect.soft(response.status())"), "soft"),
    "configured-soft": (
        healed("expect(response.status())", "expect.configure({ soft: true })(response.status())"),
        "soft",
    ),
    "try-catch": (healed(STATUS, f"try {{ {STATUS} }} catch {{}}"), "inside a try/catch"),
    "catch-method": (
        healed("toHaveText('Notes');", "toHaveText('Notes').catch(() => {});"),
        "swallows its failure",
    ),
    "conditional": (
        healed(STATUS, f"if (response.status() !== 500) {{ {STATUS} }}"),
        "under a condition",
    ),
    "short-circuit": (
        healed(STATUS, f"response.ok() && {STATUS}"),
        "under a condition",
    ),
    "callback": (
        healed(STATUS, f"page.on('load', () => {{ {STATUS} }});"),
        "inside a callback",
    ),
    "loop": (
        healed(STATUS, f"for (const _ of []) {{ {STATUS} }}"),
        "inside a loop",
    ),
    "not-awaited": (healed(f"await {HEADING[6:]}", HEADING[6:]), "stop awaiting"),
    "literal-subject": (healed("expect(response.status())", "expect(200)"), "remove"),
    "early-return": (
        healed("  await page.goto('/');\n", "  await page.goto('/');\n  return;\n"),
        "add a return",
    ),
    "skip-modifier": (healed("test('home", "test.skip('home"), "mark the test test.skip"),
    "fixme-modifier": (healed("test('home", "test.fixme('home"), "mark the test test.fixme"),
    "fail-modifier": (healed("test('home", "test.fail('home"), "mark the test test.fail"),
    "skip-call": (
        healed(
            "  await page.goto('/');\n", "  test.skip(true, 'flaky');\n  await page.goto('/');\n"
        ),
        "call test.skip/fixme/fail",
    ),
    "fixme-info": (
        healed("  await page.goto('/');\n", "  test.info().fixme();\n  await page.goto('/');\n"),
        "call test.skip/fixme/fail",
    ),
}


@pytest.mark.parametrize("after,said", LOOSENINGS.values(), ids=LOOSENINGS.keys())
def test_every_loosening_is_refused_with_what_it_tried(after, said):
    found = expectations.weakening(TEST, after)
    assert any(said in phrase for phrase in found), found


HONEST = {
    "new-locator": healed(
        "page.getByRole('heading', { name: 'Notes' })", "page.locator('main h1').first()"
    ),
    "locator-arguments": healed("{ name: 'Notes' }", "{ name: 'My notes', exact: true }"),
    "added-wait": healed(
        "  await page.goto('/');\n",
        "  await page.goto('/');\n  await page.getByRole('main').waitFor();\n",
    ),
    "changed-goto": healed("page.goto('/')", "page.goto('/notes', { waitUntil: 'networkidle' })"),
    "longer-timeout": healed("toHaveText('Notes')", "toHaveText('Notes', { timeout: 15000 })"),
    "quotes-and-spacing": healed("toHaveText('Notes')", 'toHaveText(  "Notes"  )'),
    "retried-with-toPass": healed(
        STATUS, f"await expect(async () => {{ {STATUS} }}).toPass({{ timeout: 10000 }});"
    ),
    "inside-a-step": healed(STATUS, f"await test.step('status', async () => {{ {STATUS} }});"),
    "extra-expectation": healed(STATUS, f"{STATUS}\n  expect(response.ok()).toBeTruthy();"),
    "polled": healed(
        "expect(response.status()).not.toBe(500)",
        "await expect.poll(() => response.status()).not.toBe(500)",
    ),
    "reordered": healed(f"  {STATUS}\n", "").replace("]);\n});", f"]);\n  {STATUS}\n}});"),
}


@pytest.mark.parametrize("after", HONEST.values(), ids=HONEST.keys())
def test_a_heal_of_locators_waits_and_navigation_is_taken(after):
    assert after != TEST
    assert expectations.weakening(TEST, after) == []


def test_what_a_test_expects_is_read_canonically():
    (heading, url, status, body) = expectations.read(TEST).expectations
    assert (heading.matcher, heading.expected) == ("toHaveText", '"Notes"')
    assert (status.matcher, status.expected, status.awaited) == ("not.toBe", "500", False)
    assert url.awaited and not url.soft and url.guard == ""
    assert (body.matcher, body.expected) == ("toEqual", '[ { id : 1 , text : "Buy milk" } ]')
    assert expectations.read("const x = 1;") is None
    named = "test('home shows the notes', checkHome);"
    assert expectations.weakening(TEST, named) == [expectations.NOT_A_TEST]
    assert expectations.weakening(named, TEST) == [expectations.NOT_A_TEST]


def test_deep_nesting_does_not_exhaust_the_stack():
    deep = "test('deep', async () => { const x = " + "[" * 3000 + "]" * 3000 + "; });"
    assert expectations.weakening(deep, deep) == []


FILE = f"""import {{ test, expect }} from '@playwright/test';

{TEST}

test('sign-in page answers', async ({{ page }}) => {{
  await page.goto('/login');
  await expect(page.getByRole('heading', {{ name: 'Log in' }})).toBeVisible();
}});
"""


def test_a_refused_heal_is_put_back_and_the_honest_one_beside_it_kept():
    after = FILE.replace("toHaveText('Notes')", "toBeVisible()").replace(
        "name: 'Log in'", "name: 'Sign in'"
    )
    failing = [(b.title, b.line) for b in spec_blocks.blocks(FILE)]
    source, verdicts = heals.apply("e2e/amtp/notes.spec.ts", FILE, after, failing)
    assert "toHaveText('Notes')" in source and "name: 'Sign in'" in source
    notes, login = verdicts["home shows the notes"], verdicts["sign-in page answers"]
    assert notes.refused.startswith(heals.REFUSED_LEAD + "; the heal was refused: it tried to")
    assert "loosen `expect(page.getByRole(" in notes.refused
    assert login.refused == ""
    assert login.diff.startswith("--- a/e2e/amtp/notes.spec.ts\n+++ b/e2e/amtp/notes.spec.ts\n")
    assert "-  await expect(page.getByRole('heading', { name: 'Log in' }))" in login.diff
    assert "+  await expect(page.getByRole('heading', { name: 'Sign in' }))" in login.diff
    assert "+  await expect(page.getByRole('heading', { name: 'Notes' })).toBeVisible();" in (
        notes.diff
    )


def test_changes_outside_the_failing_tests_are_not_taken():
    after = FILE.replace("import {", "test.describe.configure({ mode: 'serial' });\nimport {")
    after = after.replace("page.goto('/')", "page.goto('/notes')")
    source, verdicts = heals.apply("a.spec.ts", FILE, after, [("home shows the notes", 3)])
    assert "describe.configure" not in source and "page.goto('/notes')" in source
    assert list(verdicts) == ["home shows the notes"]


def test_a_heal_diff_is_bounded():
    after = FILE.replace(
        "  await page.goto('/');\n", "  await page.goto('/');\n" + "  // x\n" * 500
    )
    _, verdicts = heals.apply("a.spec.ts", FILE, after, [("home shows the notes", 3)])
    diff = verdicts["home shows the notes"].diff
    assert len(diff.splitlines()) == heals.MAX_DIFF_LINES + 1
    assert diff.endswith("more diff line(s) not shown") and len(diff) <= heals.MAX_DIFF_CHARS


def test_an_expected_value_changed_through_its_variable_is_refused():
    named = TEST.replace("toHaveText('Notes')", "toHaveText(title)").replace(
        "  await page.goto('/');\n", "  const title = 'Notes';\n  await page.goto('/');\n"
    )
    loosened = named.replace("const title = 'Notes';", "const title = /.*/;")
    found = expectations.weakening(named, loosened)
    assert found and "change the expected value of" in found[0]
    assert expectations.weakening(named, named.replace("'Notes';", '"Notes";')) == []
