"""Journeys of the offline engine: what it plans from an app map's forms, trials and
snapshots (sign up → log in → create → see it listed → edit → delete), the unique data and
clean-up of the code it writes, and hostile maps. The end-to-end run against a live app is
in ``test_journeys_live.py``."""

import json
import re
import time
from pathlib import Path

from agents.offline import generate_cases
from agents.offline.journeys import journey_candidates
from tests.offline_checks import playwright_code

RUNNING = "The web app is running"


def page(path: str, snapshot: str = "", forms=(), links=(), status: int = 200) -> dict:
    return {
        "path": path,
        "status": status,
        "title": path,
        "snapshot": snapshot,
        "links": list(links),
        "forms": list(forms),
    }


def form(submit: str, *fields: tuple[str, str], method: str = "post") -> dict:
    return {
        "method": method,
        "submit": submit,
        "fields": [{"label": label, "type": kind, "required": True} for label, kind in fields],
    }


ACCOUNT = (("Username", "text"), ("Password", "password"))
NOTE = (("Title", "text"), ("Body", "textarea"))
CREATE_TRIAL = {
    "path": "/create",
    "form": 0,
    "submit": "Save",
    "filled": [{"label": "Title", "type": "text", "option": ""}],
    "path_after": "/",
    "status": 200,
    "appeared": [{"role": "heading", "text": "AMTP {tag}"}],
    "shows_value": True,
    "error": "",
}
LISTING = '- heading "Posts" [level=1]\n- heading "Hello" [level=2]\n- link "Edit"\n'


def flaskr(**changes) -> dict:
    """The app map flaskr (Flask's tutorial blog) gives a signed-in explorer."""
    pages = [
        page("/", LISTING, links=["/1/update", "/create"]),
        page("/auth/register", forms=[form("Register", *ACCOUNT)]),
        page("/auth/login", forms=[form("Log In", *ACCOUNT)]),
        page("/create", forms=[form("Save", *NOTE)]),
        page("/1/update", forms=[form("Save", *NOTE), form("Delete")]),
    ]
    base = {"target_url": "http://app.test", "pages": pages, "trials": [CREATE_TRIAL]}
    return {**base, **changes}


def cases_for(app_map: dict, depth: str = "standard") -> list[dict]:
    stack = {"runtime": "python", "frameworks": ["flask"], "routes": [], "pages": []}
    request = {"run_id": "r", "detected_stack": stack, "app_map": app_map}
    return generate_cases(request, depth)["test_cases"]


def test_flaskr_gets_the_whole_journey_with_outcomes_first_and_cleanup_last():
    (journey,) = journey_candidates(flaskr(), RUNNING)
    assert journey.priority == "critical"
    assert journey.title == "Journey /: sign up, log in, create, see it listed, edit, delete"
    assert journey.steps == [
        "Clear the browser's cookies",  # a new user's own session
        "Open /auth/register",
        'Fill "Username" with a unique username',
        'Fill "Password" with a unique password',
        'Click the button "Register"',
        "Open /auth/login",
        'Fill "Username" with a unique username',
        'Fill "Password" with a unique password',
        'Click the button "Log In"',
        "Expect the user to be signed in",
        "Open /create",
        'Fill "Title" with a unique text',
        'Click the button "Save"',
        "Open /",
        "Expect the created text to be visible",
        'Click the link "Edit" of the created item',
        'Fill "Title" with an edited unique text',
        'Click the button "Save"',
        "Open /",
        "Expect the edited text to be visible",
        'Click the link "Edit" of the created item',
        'Click the button "Delete", accepting its confirmation',
        "Open /",
        "Expect the created text to be gone",
        "Clean up: Open /",
        'Clean up: Click the link "Edit" of the created item',
        'Clean up: Click the button "Delete", accepting its confirmation',
    ]


def test_the_journey_leads_even_at_smoke_depth_and_its_trial_is_no_second_flow():
    many = [page(f"/area{n}", f'- heading "Area {n}" [level=1]') for n in range(12)]
    app_map = flaskr(pages=flaskr()["pages"] + many)
    for depth in ("smoke", "standard"):
        ids = [c["id"] for c in cases_for(app_map, depth)]
        assert ids[0] == "tc_journey_create_save", (depth, ids)
        assert not [i for i in ids if i.startswith("tc_flow")]  # the journey starts from it
    stack = {"runtime": "python", "routes": [], "pages": []}
    notes = generate_cases({"run_id": "r", "detected_stack": stack, "app_map": app_map}, "smoke")
    assert (
        "Sign up, log in, create, see it listed, edit, delete: one journey"
        in (notes["coverage_notes"])
    )
    assert "Not covered: business rules" in notes["coverage_notes"]  # it signs up and in


def test_generated_journey_uses_data_unique_to_run_worker_and_retry_and_cleans_up_safely():
    code = playwright_code([c for c in cases_for(flaskr()) if c["id"].startswith("tc_journey")])
    assert "const RUN = process.env.AMTP_RUN_TOKEN ?? Date.now().toString(36)" in code
    assert (
        "const tag = `${RUN}${test.info().testId.slice(-4)}"
        "p${test.info().parallelIndex}r${test.info().retry}`;" in code
    )
    fills = re.findall(r"\.fill\(([^)]*)\)", code)
    assert fills and all("tag" in value for value in fills), fills  # no fixed string
    body, cleanup = code.split("} finally {")
    assert "toHaveCount(0)" in body  # the deletion is asserted, not assumed
    assert "if ((await page.getByText('AMTP ' + tag).count()) === 0) return;" in cleanup
    assert cleanup.count("{ timeout: 5000 }") == 3
    assert "})().catch(() => {});" in cleanup  # a failing clean-up never hides the real error
    # The created item's own control, never the first "Edit" of the page.
    assert "filter({ hasText: 'AMTP ' + tag }).filter({ has: page.getByRole(\"link\"" in body
    assert "page.once('dialog', (dialog) => dialog.accept()" in body


def test_a_search_form_finds_the_created_item_and_opens_it_when_it_is_a_link():
    search = form("Search", ("Search", "search"), method="get")
    pages = [{**p, "forms": [search]} if p["path"] == "/" else p for p in flaskr()["pages"]]
    linked = {**CREATE_TRIAL, "appeared": [{"role": "link", "text": "AMTP {tag}"}]}
    (journey,) = journey_candidates(flaskr(pages=pages, trials=[linked]), RUNNING)
    assert "search it, open it, edit" in journey.title
    at = journey.steps.index('Fill "Search" with a unique text')
    assert journey.steps[at - 2 : at + 5] == [
        "Open /",
        "Expect the created text to be visible",  # listed; the search form is on that page
        'Fill "Search" with a unique text',
        'Click the button "Search"',
        "Expect the created text to be visible",
        "Click the link of the created item",
        "Expect the created text to be visible",
    ]
    assert journey.steps[at + 5] == "Open /"  # back to the listing to edit it
    (plain,) = journey_candidates(flaskr(pages=pages), RUNNING)  # shown, but not as a link
    assert (
        "search it, edit" in plain.title and "Click the link of the created item" not in plain.steps
    )
    code = playwright_code(
        [
            c
            for c in cases_for(flaskr(pages=pages, trials=[linked]))
            if c["id"].startswith("tc_journey")
        ]
    )
    assert "await page.getByRole('link', { name: 'AMTP ' + tag }).first().click();" in code


def test_sign_up_by_email_and_an_optional_remember_me_box_still_give_the_account_steps():
    remember = {"label": "Remember me", "type": "checkbox", "required": False}
    by_email = (("Email", "text"), ("Password", "password"), ("Confirm password", "password"))
    log_in = form("Sign in", ("Email", "email"), ("Password", "password"))
    log_in["fields"].append(remember)
    pages = [page("/signup", forms=[form("Create account", *by_email)])]
    pages.append(page("/signin", forms=[log_in]))
    (journey,) = journey_candidates({"pages": pages, "trials": []}, RUNNING)
    assert journey.steps == [
        "Clear the browser's cookies",
        "Open /signup",
        'Fill "Email" with a unique email',
        'Fill "Password" with a unique password',
        'Fill "Confirm password" with a unique password',
        'Click the button "Create account"',
        "Open /signin",
        'Fill "Email" with a unique email',
        'Fill "Password" with a unique password',
        'Click the button "Sign in"',
        "Expect the user to be signed in",
    ]
    log_in["fields"][-1] = {**remember, "required": True}  # a box that must be ticked: unknown
    assert journey_candidates({"pages": pages, "trials": []}, RUNNING) == []


def test_only_an_account_journey_when_no_form_creates_anything():
    app_map = flaskr(trials=[])
    (journey,) = journey_candidates(app_map, RUNNING)
    assert journey.key == "journey_account"
    assert journey.steps[-1] == "Expect the user to be signed in"
    code = playwright_code([c for c in cases_for(app_map) if c["id"] == "tc_journey_account"])
    assert "finally" not in code  # nothing created, nothing to clean up
    assert "getByRole('link', { name: /log ?out|sign ?out/i })" in code


def test_a_listing_without_edit_or_delete_gives_create_and_list_only():
    pages = [page("/", '- heading "Posts" [level=1]'), page("/create", forms=[form("Save", *NOTE)])]
    (journey,) = journey_candidates(flaskr(pages=pages), RUNNING)
    assert journey.title == "Journey /: create, see it listed"
    assert not [s for s in journey.steps if s.startswith("Clean up")]
    assert journey.steps[-2:] == ["Open /", "Expect the created text to be visible"]


def test_a_settings_form_that_saves_is_not_taken_for_a_create_form():
    trial = {**CREATE_TRIAL, "path": "/account", "path_after": "/account"}
    pages = [page("/account", forms=[form("Save", ("Display name", "text"))])]
    assert journey_candidates(flaskr(pages=pages, trials=[trial]), RUNNING) == []


def test_a_page_that_only_renders_says_smoke_in_its_title_and_ranks_last():
    # "/" shows a text but no heading, nothing to name in a title.
    pages = [page("/", "- paragraph: Welcome"), page("/about", '- heading "About us" [level=1]')]
    cases = cases_for({"target_url": "http://app.test", "pages": pages, "trials": []})
    titles = [c["title"] for c in cases]
    assert titles[0] == 'Page /about shows its heading "About us"'
    assert titles[-1] == "Home page renders (smoke)"
    assert not [t for t in titles[:-1] if "smoke" in t]


def test_a_page_that_rendered_nothing_is_held_to_its_status_and_title():
    # FastAPI's /docs in the sandbox: Swagger UI's scripts come from a CDN it refuses, so the
    # body stays empty; a visible-body check would fail on a page that works in production.
    pages = [page("/", '- heading "API" [level=1]'), page("/docs")]
    pages[1]["title"] = "FastAPI - Swagger UI"
    (docs,) = [
        c
        for c in cases_for({"target_url": "http://app.test", "pages": pages})
        if "/docs" in c["steps"][0]
    ]
    assert docs["title"].startswith(
        'Page /docs answers, titled "FastAPI - Swagger UI" (nothing rendered'
    )
    code = playwright_code([docs])
    assert 'await expect(page).toHaveTitle("FastAPI - Swagger UI");' in code
    assert "page.locator('body')).toBeVisible()" not in code


# --- hostile maps ----------------------------------------------------------------------------


def test_script_labels_stay_quoted_text_and_huge_labels_are_refused():
    script = '</script><script>alert("x")</script>`${process.exit(1)}`'
    hostile = [("Username", "text"), (script, "password")]
    pages = [
        page("/", LISTING),
        page("/register", forms=[form("Register", *hostile)]),
        page("/login", forms=[form("Log in", *hostile)]),
        page("/create", forms=[form("Save", *NOTE)]),
    ]
    (journey,) = journey_candidates(flaskr(pages=pages), RUNNING)
    code = playwright_code(
        [c for c in cases_for(flaskr(pages=pages)) if c["id"].startswith("tc_journey")]
    )
    assert "sign up" in journey.title
    # The label reaches the code only as one JSON string literal (tree-sitter parsed it).
    statements = "\n".join(x for x in code.splitlines() if not x.strip().startswith("//"))
    literal = f"getByLabel({json.dumps(script)}"
    assert statements.count("process.exit") == statements.count(literal) == 2
    huge = [("U" * 5000, "text"), ("Password", "password")]
    pages[1] = page("/register", forms=[form("Register", *huge)])
    (journey,) = journey_candidates(flaskr(pages=pages), RUNNING)
    assert "sign up" not in journey.title  # a shortened label would match nothing: not planned
    assert all(len(step) < 400 for step in journey.steps)


def test_a_delete_button_on_every_page_is_only_ever_used_on_the_created_item():
    deleting = '- button "Delete"\n- button "Delete everything"\n'
    pages = [
        page(p["path"], p["snapshot"] + deleting, forms=p["forms"] + [form("Delete")])
        for p in flaskr()["pages"]
    ]
    (journey,) = journey_candidates(flaskr(pages=pages), RUNNING)
    deletes = [s for s in journey.steps if "Delete" in s and not s.startswith("Clean up")]
    assert deletes == ['Click the button "Delete" of the created item, accepting its confirmation']
    code = playwright_code(
        [c for c in cases_for(flaskr(pages=pages)) if c["id"].startswith("tc_journey")]
    )
    unscoped = "await page.getByRole('button', { name: \"Delete\""
    assert unscoped not in code


def test_a_loop_of_links_and_a_flood_of_pages_plan_in_bounded_time():
    pages = [
        page(f"/p{n}", LISTING, links=[f"/p{(n + 1) % 2000}"], forms=[form("Save", *NOTE)])
        for n in range(2000)
    ]
    trials = [{**CREATE_TRIAL, "path": f"/p{n}/create"} for n in range(50)]
    began = time.process_time()  # CPU seconds: the machine's load does not fail a bound plan
    found = journey_candidates(flaskr(pages=pages, trials=trials), RUNNING)
    assert time.process_time() - began < 2
    assert len(found) == 1 and len(found[0].steps) < 40


def test_malformed_maps_plan_nothing_and_never_raise():
    for app_map in (None, [], {"pages": "x"}, {"pages": [None, 1, {"path": 5}]}, {"trials": [7]}):
        assert journey_candidates(app_map, RUNNING) == []
    broken = flaskr(trials=[{**CREATE_TRIAL, "path": "//evil.test/create"}])
    assert journey_candidates(broken, RUNNING)[0].key == "journey_account"


def test_the_llm_prompts_ask_for_the_same_journeys_data_and_clean_up():
    prompts = Path(__file__).resolve().parent.parent / "agents" / "prompts"
    planner = " ".join((prompts / "test_case_generator.md").read_text().split())
    engineer = " ".join((prompts / "test_engineer.md").read_text().split())
    assert "sign up → log in → create → see it listed → edit → delete" in planner
    assert "Rank journeys that create and verify data first" in planner
    for text in (planner, engineer):
        assert "renders (smoke)" in text and "never a fixed name" in text.lower()
    assert "test.info().parallelIndex" in engineer and "test.info().retry" in engineer
    assert "`finally` block, best effort" in engineer


def test_a_record_page_whose_form_a_trial_sent_expects_no_heading_the_trial_changed():
    edit = page("/notes/1/edit", '- heading "Edit Welcome" [level=1]\n- textbox "Title"\n')
    new = page("/notes/new", '- heading "New note" [level=1]\n- textbox "Title"\n')
    saved = {**CREATE_TRIAL, "path": "/notes/1/edit", "submit": "Save"}
    created = {**CREATE_TRIAL, "path": "/notes/new", "submit": "Create"}
    app_map = {"target_url": "http://app.test", "pages": [edit, new], "trials": [saved, created]}
    by_title = {c["title"]: c for c in cases_for(app_map)}
    assert 'Page /notes/new shows its heading "New note"' in by_title
    assert "Page /notes/1/edit shows its textbox" in by_title  # "Edit Welcome" is gone
    assert not [c for c in by_title.values() if "Edit Welcome" in c["expected"]]
    app_map["trials"] = [created]  # not sent: its heading stands
    assert 'Page /notes/1/edit shows its heading "Edit Welcome"' in {
        c["title"] for c in cases_for(app_map)
    }


def test_a_journey_finds_its_item_through_the_collection_never_the_explorers_record():
    # A Flask books app: the create form redirects to the new record's page, /books/3, the id
    # exploration's item happened to get; the test's own book gets another id.
    books = LISTING.replace("Posts", "Books")
    trial = {**CREATE_TRIAL, "path": "/books/new", "submit": "Add book", "path_after": "/books/3"}
    pages = [
        page("/books", books, links=["/books/new"]),
        page("/books/new", forms=[form("Add book", *NOTE)]),
        page("/books/3", '- heading "AMTP {tag}" [level=1]'),
    ]
    app_map = {"target_url": "http://app.test", "pages": pages, "trials": [trial]}
    (journey,) = [c for c in cases_for(app_map) if c["id"].startswith("tc_journey")]
    assert journey["steps"][-2:] == ["Open /books", "Expect the created text to be visible"]
    assert journey["title"].startswith("Journey /books: create, see it listed")
    assert not any("/books/3" in step for step in journey["steps"])
    # Without the collection in the map: only the page the form leads to, right after sending.
    app_map["pages"] = pages[1:]
    (journey,) = [c for c in cases_for(app_map) if c["id"].startswith("tc_journey")]
    assert journey["steps"][-2:] == [
        'Click the button "Add book"',
        "Expect the created text to be visible",
    ]
    assert journey["title"] == "Journey /books/new: create, see it"
    assert not any("/books/3" in step for step in journey["steps"])
