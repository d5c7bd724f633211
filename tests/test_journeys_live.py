"""A journey planned from a live app's map runs in the sandbox and passes on its first
attempt, twice in a row: each run signs up its own user and creates, edits and deletes its
own note, so the second run collides with nothing the first left behind. When the app's
delete breaks, the journey fails on its own check and its clean-up still removes the note."""

from agents.offline import generate_cases
from repositories.credentials import Credentials
from repositories.login import Recipe
from runs.demo.app import serving
from tests.exploring import bounds, explore_loopback
from tests.journey_app import JOURNEY_REPO, PASSWORD, USERNAME, JourneyApp
from tests.offline_checks import crawl, playwright_files
from tests.plans import verified
from tests.test_browser import chromium_path
from verification.exploration.service import app_view
from verification.login import Login

# The explorer signs in as the app's test account, so it sees the create and edit forms.
EXPLORER = Login(
    Recipe("/login", "Username", "Password", "Log in", "Log out"), Credentials(USERNAME, PASSWORD)
)


def test_a_journey_passes_first_time_twice_and_cleans_up_after_a_failure(tmp_path):
    chromium_path()
    app = JourneyApp()
    with serving(app) as url:
        app_map = explore_loopback(
            url,
            tmp_path / "shots",
            start_paths=["/notes/new", "/", "/register", "/login"],
            # the create form: tried first
            bounds=bounds(max_pages=20, max_depth=1, max_bytes=1 << 20, form_trials=1),
            login=EXPLORER,
            tag="journeytrial1",
        )
        request = crawl(JOURNEY_REPO) | {"app_map": app_view(app_map)}
        output = generate_cases(request, "smoke")
        journey = output["test_cases"][0]
        assert journey["title"] == (
            "Journey /: sign up, log in, create, see it listed, search it, open it, edit, delete"
        )
        files = playwright_files([journey])
        users = set(app.users)
        for run in (1, 2):
            (test,) = verified(files, url, tmp_path / f"evidence-{run}")["tests"]
            assert (test["status"], test["attempts"]) == ("passed", 1), test
        made = set(app.users) - users
        assert len(made) == 2 and all(name.startswith("amtp_") for name in made)  # one per run
        assert not [n for n in app.notes.values() if n["by"] in made]  # each cleaned up its note

        app.refuse_deletes = 1  # the journey's delete now leaves the note in place
        (test,) = verified(files, url, tmp_path / "evidence-broken")["tests"]
    assert test["status"] != "passed" and "toHaveCount" in test["error"], test  # its own check
    assert not [n for n in app.notes.values() if n["by"] not in users]  # cleaned up all the same
