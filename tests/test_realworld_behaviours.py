"""The matcher that counts an app's own suite's behaviours among AMTP's passing tests
(scripts/realworld_behaviours.py): a test counts only when it opens the route, acts there and
then asserts the outcome; page loads, generic assertions, assertions before the action and
actions on another page never count. The specs below are shaped like the offline engine's."""

import pytest
import yaml

from tests.realworld_apps import script

rb = script("realworld_behaviours")

ADD_TODO = rb.Behaviour(
    id="new-todo-adds-items",
    description="typing a todo and pressing Enter adds it",
    route="/",
    act=("press",),
    target=("Enter",),
    expect=("getByText", "toHaveCount\\(\\s*[1-9]"),
)
API_401 = rb.Behaviour(
    id="users-invalid-key",
    description="a wrong api-key answers 401",
    route="/api/users",
    act=("request",),
    target=("api-key=(?!(foo|bar|baz)\\b)",),
    expect=("\\b401\\b",),
)

ACTS_THEN_ASSERTS = """test('adds a todo', async ({ page }) => {
    await page.goto('/');
    await page.getByPlaceholder('What needs to be done?').fill('buy milk');
    await page.getByPlaceholder('What needs to be done?').press('Enter');
    await expect(page.getByText('buy milk')).toBeVisible();
  });"""
PAGE_LOAD = """test('home page loads', async ({ page }) => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto('/');
    await expect(page.locator('body')).toBeVisible();
    await expect(page.getByText('todos')).toBeVisible();
    expect(errors, 'uncaught page errors').toEqual([]);
  });"""


def test_a_test_that_acts_then_asserts_exercises_the_behaviour():
    assert rb.exercises(ACTS_THEN_ASSERTS, ADD_TODO)
    assert rb.exercised([ADD_TODO, API_401], [PAGE_LOAD, ACTS_THEN_ASSERTS]) == [ADD_TODO.id]


def test_a_page_load_exercises_nothing():
    assert not rb.exercises(PAGE_LOAD, ADD_TODO)


def test_an_assertion_before_the_action_does_not_count():
    code = """test('t', async ({ page }) => {
    await page.goto('/');
    await expect(page.getByText('todos')).toBeVisible();
    await page.getByPlaceholder('What needs to be done?').press('Enter');
  });"""
    assert not rb.exercises(code, ADD_TODO)


def test_only_generic_assertions_after_the_action_do_not_count():
    code = """test('t', async ({ page }) => {
    await page.goto('/');
    await page.getByPlaceholder('What needs to be done?').press('Enter');
    // Expected: getByText shows the new todo
    await expect(page.locator('body')).toBeVisible();
    expect(errors, 'uncaught page errors').toEqual([]);
  });"""
    assert not rb.exercises(code, ADD_TODO)


def test_an_action_on_another_page_does_not_count():
    code = ACTS_THEN_ASSERTS.replace("page.goto('/')", "page.goto('/about')")
    assert not rb.exercises(code, ADD_TODO)
    back = ACTS_THEN_ASSERTS.replace(
        "await expect(", "await page.goto('/about');\n    await expect("
    )
    assert rb.exercises(back, ADD_TODO)  # the outcome may be seen on the page it leads to


def test_the_action_must_match_its_target():
    code = ACTS_THEN_ASSERTS.replace("press('Enter')", "press('Tab')")
    assert not rb.exercises(code, ADD_TODO)


def test_an_api_request_is_its_own_page_and_action():
    wrong_key = """test('t', async ({ request }) => {
    const res = await request.get('/api/users?api-key=rawr');
    expect(res.status()).toBe(401);
  });"""
    assert rb.exercises(wrong_key, API_401)
    assert not rb.exercises(wrong_key.replace("rawr", "foo"), API_401)
    assert not rb.exercises(wrong_key.replace("toBe(401)", "toBeLessThan(500)"), API_401)
    other_route = wrong_key.replace("/api/users", "/api/repos")
    assert not rb.exercises(other_route, API_401)


def test_hash_routes_and_parameters_match_their_pages():
    edit = rb.Behaviour("e", "d", "/user/{id}/edit", ("click",), (), ("toHaveText",))
    code = """test('t', async ({ page }) => {
    await page.goto('/user/3/edit?x=1');
    await page.getByRole('button', { name: 'Update' }).click();
    await expect(page.getByRole('heading')).toHaveText('Tobi');
  });"""
    assert rb.exercises(code, edit)
    assert not rb.exercises(code.replace("/user/3/edit", "/user/3/4/edit"), edit)
    active = rb.Behaviour("a", "d", "/#/active", ("click",), (), ("toHaveCount",))
    on_hash = """test('t', async ({ page }) => {
    await page.goto('/#/active');
    await page.getByRole('checkbox').first().click();
    await expect(page.getByRole('listitem')).toHaveCount(0);
  });"""
    assert rb.exercises(on_hash, active)
    assert not rb.exercises(on_hash.replace("/#/active", "/#/completed"), active)


UPDATE_USER = rb.Behaviour(
    id="user-update",
    description="the edit form renames the user",
    route="/user/{id}/edit",
    act=("click",),
    target=("Update",),
    expect=("getByText",),
    echo=True,
)
CLICK_ONLY = """test('t', async ({ page }) => {
    await page.goto('/user/0/edit');
    await page.getByRole('button', { name: "Update", exact: true }).click();
    await expect(page.getByText("TJ edit").first()).toBeVisible();
  });"""


def test_a_change_counts_only_when_the_assertion_names_the_value_typed():
    assert not rb.exercises(CLICK_ONLY, UPDATE_USER)  # nothing typed: a text already shown
    typed = CLICK_ONLY.replace(
        "    await page.getByRole('button'",
        "    await page.getByLabel('Name:').fill(NEW_NAME);\n    await page.getByRole('button'",
    )
    assert not rb.exercises(typed, UPDATE_USER)  # typed, but the old heading asserted
    assert rb.exercises(typed.replace('"TJ edit"', "NEW_NAME"), UPDATE_USER)
    before = typed.replace('"TJ edit"', "NEW_NAME").replace(
        "    await page.getByRole('button', { name: \"Update\", exact: true }).click();\n", ""
    )
    assert not rb.exercises(before, UPDATE_USER)  # typed and asserted, never submitted


def test_a_value_typed_with_spaces_around_it_is_named_without_them():
    typed = CLICK_ONLY.replace(
        "    await page.getByRole('button'",
        "    await page.getByLabel('Name:').fill('  TJ ' + tag + '  ');\n"
        "    await page.getByRole('button'",
    )
    assert rb.exercises(typed.replace('"TJ edit"', "'TJ ' + tag"), UPDATE_USER)
    # Only the padding goes: another value, or the same one cut short, is not named.
    assert not rb.exercises(typed.replace('"TJ edit"', "'TJ' + tag"), UPDATE_USER)
    assert not rb.exercises(typed.replace('"TJ edit"', "'T ' + tag"), UPDATE_USER)


GOOD = {
    "id": "x",
    "description": "does x",
    "route": "/login",
    "act": ["click"],
    "expect": ["failed"],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"act": ["hover"]}, "act must name one or more of"),
        ({"act": []}, "act must name one or more of"),
        ({"expect": []}, "expect must name at least one pattern"),
        ({"route": "login"}, "route must start with '/'"),
        ({"description": ""}, "description must be a non-empty string"),
        ({"target": "Login"}, "target must be a list of non-empty strings"),
        ({"selector": "#x"}, "fields must be among"),
        ({"echo": "yes"}, "echo must be true or false"),
    ],
)
def test_a_bad_behaviour_is_refused_naming_its_field(tmp_path, change, message):
    path = tmp_path / "app" / "behaviours.yaml"
    path.parent.mkdir()
    source = "https://github.com/o/r t.js at commit " + "0" * 40
    path.write_text(yaml.safe_dump({"source": source, "behaviours": [{**GOOD, **change}]}))
    with pytest.raises(ValueError, match=f"app: behaviours\\[0\\]: {message}"):
        rb.load(path)


def test_a_bad_pattern_or_a_repeated_id_is_refused(tmp_path):
    path = tmp_path / "app" / "behaviours.yaml"
    path.parent.mkdir()
    source = "https://github.com/o/r"
    path.write_text(yaml.safe_dump({"source": source, "behaviours": [GOOD, GOOD]}))
    with pytest.raises(ValueError, match="a behaviour id is listed twice"):
        rb.load(path)
    path.write_text(yaml.safe_dump({"source": source, "behaviours": [{**GOOD, "expect": ["("]}]}))
    with pytest.raises(ValueError, match=r"behaviours\[0\]: expect: bad pattern"):
        rb.load(path)
    path.write_text(yaml.safe_dump({"behaviours": [GOOD]}))
    with pytest.raises(ValueError, match="source must name the suite's repository"):
        rb.load(path)
