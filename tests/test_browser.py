"""The operator's path in a real browser: Debian's Chromium, driven by Playwright, against the
live server and a real worker. Launch a run from the form, watch its tests get verified against
the demo app and the run pass, read the verification report and an artifact; then approve a
held run from the admin.

Chromium comes from apt (``scripts/ensure_packages.sh``), never from ``playwright install``,
which downloads a browser build this project's machines cannot fetch.
"""

import os
from contextlib import contextmanager

import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import Page, expect, sync_playwright

from approvals.models import Approval
from runs.demo.app import DemoTasks, serving
from runs.models import Run
from tests.factories import RepositoryFactory
from tests.gitrepo import make_git_repo
from tests.samples import DEMO_WEB
from tests.test_dashboard import ended_run

# Without the background-networking flags Chromium keeps calling Google's services, which on
# this closed network only floods it with failed connections.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RUN_TIMEOUT_MS = 120_000  # the whole pipeline through the worker, offline provider
PAGE_TIMEOUT_MS = 15_000


def chromium_path() -> str:
    # A missing browser fails rather than skips: a skipped browser test hides a broken admin.
    path = settings.AMTP_VERIFY_CHROMIUM
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"Chromium is not installed at {path}: run scripts/ensure_packages.sh (as root)."
        )
    return path


@pytest.fixture
def operator(django_user_model):
    django_user_model.objects.create_superuser("olga", "olga@example.test", "pw")
    return "olga"


def local_repo(tmp_path, name: str, **settings):
    path = make_git_repo(tmp_path / name, DEMO_WEB)
    return RepositoryFactory(
        full_name=f"acme/{name}",
        host="local",
        local_path=path,
        default_depth_level="smoke",
        **settings,
    )


@pytest.fixture
def demo_app():
    """The demo web app's stand-in on loopback."""
    with serving(DemoTasks()) as url:
        yield url


@contextmanager
def admin_page(live_server, username: str):
    """A logged-in page. Open it only after the test's ORM work: the sync API keeps an event
    loop on this thread, and Django refuses ORM calls from a thread with a running loop."""
    with sync_playwright() as playwright:
        with playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        ) as browser:
            with browser.new_context(base_url=live_server.url) as context:
                context.set_default_timeout(PAGE_TIMEOUT_MS)
                page = context.new_page()
                script_errors = []  # an uncaught error in a page's script fails the test
                page.on("pageerror", lambda error: script_errors.append(error))
                page.goto("/admin/login/")
                page.fill("#id_username", username)
                page.fill("#id_password", "pw")
                page.click("input[type=submit]")
                expect(page.locator("#user-tools")).to_contain_text(username)
                yield page
                assert not script_errors, script_errors


def wait_until_passed(page: Page) -> None:
    # The run page reloads itself while the run is open; the locator is re-queried each time.
    badge = page.locator("#amtp-outcome .amtp-badge")
    expect(badge).to_have_text("passed", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("[data-amtp-autorefresh]")).to_have_count(0)  # a finished run stays put


def screenshot(page: Page, path) -> None:
    page.screenshot(path=path, full_page=True)
    assert path.exists() and path.stat().st_size > 0


@pytest.mark.django_db(transaction=True)
def test_launch_from_the_form_watch_it_pass_and_read_an_artifact(
    tmp_path, live_server, worker, operator, demo_app
):
    repo = local_repo(tmp_path, "web", preview_url=demo_app, allowed_hosts=["127.0.0.1"])
    with admin_page(live_server, operator) as page:
        page.goto("/launch/")
        page.select_option("#id_repository", label="acme/web")
        # The page's script shows what an empty field becomes for the chosen repository.
        expect(page.locator("#id_ref")).to_have_attribute("placeholder", "main")
        expect(page.locator("#id_depth_level option[value='']")).to_have_text(
            "Repository default (smoke)"
        )
        page.click("#launch-form input[type=submit]")
        expect(page.locator(".messagelist")).to_contain_text("launched on acme/web@main")
        wait_until_passed(page)
        # BootApp is skipped (the run has a target URL: AMTP does not start the app); every
        # other stage passed.
        expect(page.locator("#amtp-timeline .amtp-badge-skipped")).to_have_count(1)
        expect(page.locator("#amtp-timeline .amtp-badge-passed")).to_have_count(
            page.locator("#amtp-timeline tbody tr").count() - 1
        )
        expect(page.locator("#amtp-verdict .amtp-verdict-detail")).to_have_text("4 tests")
        expect(page.locator("#amtp-verdict.amtp-verdict-ok")).to_be_visible()
        report = page.locator("#amtp-verification")
        expect(report.locator("h2 .amtp-badge")).to_have_text("verified")
        expect(report).to_contain_text(f"against {demo_app}")
        rows = report.locator("tbody tr")
        expect(rows.filter(has_text="tc_page_home")).to_have_count(1)
        expect(report.locator("tbody .amtp-badge-passed")).to_have_count(rows.count())

        page.locator("#amtp-artifacts").get_by_role("link", name="Test Engineer Output").click()
        expect(page.locator(".amtp-file summary").first).to_contain_text(".spec.ts")
        code = page.locator(".amtp-file pre.amtp-code").first
        expect(code).to_contain_text("@playwright/test")
        expect(code.locator("span").first).to_be_visible()  # Pygments highlighted it
        expect(page.locator(".amtp-meta pre.amtp-code")).to_contain_text("v1.0.0")
        screenshot(page, tmp_path / "artifact.png")

    run = Run.objects.get(repository=repo)
    assert (run.status, run.trigger, run.requested_by) == ("passed", "form", operator)


@pytest.mark.django_db(transaction=True)
def test_approve_a_held_run_from_the_admin(tmp_path, live_server, worker, operator):
    # olga launches and approves: the repository allows it (four eyes are tested elsewhere)
    repo = local_repo(tmp_path, "gated", require_approval=True, allow_self_approval=True)
    with admin_page(live_server, operator) as page:
        page.goto(f"/launch/?repository={repo.pk}")
        page.click("#launch-form input[type=submit]")
        run_url = page.url
        expect(page.locator("#amtp-approvals")).to_be_visible(timeout=RUN_TIMEOUT_MS)

        page.goto("/admin/")
        page.get_by_role("link", name="Pending approvals (1)").click()
        page.locator("#result_list tbody tr").first.locator("th a").click()
        expect(page.locator("#amtp-decide")).to_be_visible()
        page.fill("#amtp-decide textarea", "Looked at the tests: fine.")
        page.click("#amtp-decide button[value=approved]")
        expect(page.locator(".messagelist")).to_contain_text("approved by olga")

        page.goto(run_url)
        wait_until_passed(page)
        expect(page.locator("#amtp-approvals")).to_contain_text("Looked at the tests: fine.")
        screenshot(page, tmp_path / "approved.png")

    approval = Approval.objects.get(run__repository=repo)
    assert (approval.decision, approval.decided_by) == ("approved", operator)
    assert Run.objects.get(repository=repo).status == "passed"


@pytest.mark.django_db(transaction=True)
def test_the_dashboard_draws_the_rollup_in_chromium(tmp_path, live_server, operator):
    shop = RepositoryFactory(full_name="acme/shop")
    ended_run(shop, "passed", crawl_s=40, tests=[("passed", 1), ("healed", 2)], cost="0.02")
    ended_run(shop, "passed", crawl_s=40, cost="0.02")
    ended_run(shop, "failed", crawl_s=90, cost="0.05")  # each UPDATE commits: rolled up
    today = timezone.now().strftime("%m-%d")
    with admin_page(live_server, operator) as page:
        page.click("text=Dashboard")
        expect(page.locator('[data-figure="runs"]')).to_have_text("3")
        expect(page.locator('[data-figure="first-attempt"]')).to_have_text("50.0%")
        expect(page.locator('[data-figure="after-heal"]')).to_have_text("100.0%")
        runs = '#amtp-chart-runs rect[data-series="{}"][data-label="{}"]'
        bars = {s: page.locator(runs.format(s, today)) for s in ("passed", "failed")}
        expect(bars["passed"]).to_have_attribute("data-value", "2")
        expect(bars["failed"]).to_have_attribute("data-value", "1")
        passed, failed = (bars[s].bounding_box() for s in ("passed", "failed"))
        assert passed["height"] == pytest.approx(2 * failed["height"], abs=1)  # drawn to scale
        assert failed["y"] + failed["height"] == pytest.approx(passed["y"], abs=1)  # stacked
        cost = page.locator(f'#amtp-chart-cost rect[data-label="{today}"]')
        expect(cost).to_have_attribute("data-value", "0.03")
        crawl = page.locator('#amtp-chart-stages rect[data-series="p50"]').first
        assert crawl.bounding_box()["height"] > 0
        screenshot(page, tmp_path / "dashboard.png")
