"""The operator's screens as a person sees them, in Chromium at 1280 and 1440 px: the run page
(passed, passed with a quarantined test, failed), the runs list, a repository's health page and
the dashboard. Each is screenshotted into ``test-artifacts/screens/`` (git-ignored) and checked
for what a glance must find (the verdict, the PR link, every list column on screen) and for
labels drawn over each other."""

import copy
from itertools import combinations
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from runs import transitions
from runs.admin.runs import RunAdmin
from runs.models import Stage
from tests.contract_examples import PULL_REQUEST, VERIFICATION_REPORT
from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory
from tests.test_browser import admin_page, operator  # noqa: F401 (a fixture)
from tests.test_dashboard import ended_run

SCREENS = Path(__file__).resolve().parent.parent / "test-artifacts" / "screens"
WIDTHS = (1280, 1440)
# What reads as a label on these pages: headings, badges, stage tiles, list headers, the
# verdict's parts, chart text.
LABELS = (
    "#content h1, #content h2, .amtp-badge, .amtp-steps li, #result_list thead th, "
    ".amtp-verdict-detail, #amtp-pr-link, svg text"
)
RECTS = """els => els
  .filter(e => e.getClientRects().length && getComputedStyle(e).visibility !== "hidden")
  .map(e => { const r = e.getBoundingClientRect();
    return {text: e.textContent.trim().slice(0, 40), x: r.x, y: r.y, w: r.width, h: r.height}; })"""


def _overlaps(a: dict, b: dict, slack: float = 1.0) -> bool:
    return (
        a["x"] + a["w"] - slack > b["x"]
        and b["x"] + b["w"] - slack > a["x"]
        and a["y"] + a["h"] - slack > b["y"]
        and b["y"] + b["h"] - slack > a["y"]
    )


def _contains(outer: dict, inner: dict) -> bool:
    return (
        outer["x"] <= inner["x"] + 1
        and outer["y"] <= inner["y"] + 1
        and inner["x"] + inner["w"] <= outer["x"] + outer["w"] + 1
        and inner["y"] + inner["h"] <= outer["y"] + outer["h"] + 1
    )


def assert_no_labels_overlap(page: Page) -> None:
    """No two labels share pixels, unless one holds the other (a badge in a heading)."""
    rects = [r for r in page.eval_on_selector_all(LABELS, RECTS) if r["w"] and r["h"]]
    clashes = [
        (a["text"], b["text"])
        for a, b in combinations(rects, 2)
        if _overlaps(a, b) and not _contains(a, b) and not _contains(b, a)
    ]
    assert not clashes, clashes


def shoot(page: Page, name: str, width: int) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    path = SCREENS / f"{name}-{width}.png"
    page.screenshot(path=path, full_page=True)
    assert path.stat().st_size > 0
    assert_no_labels_overlap(page)


def _run(repo, status: str, report: dict | None, **fields):
    run = RunFactory(repository=repo, status=status, ref="feature/checkout-flow", **fields)
    transitions.create_stages(run)
    Stage.objects.filter(run=run).update(status="passed", note="done")
    if report is not None:
        ArtifactFactory(run=run, kind="verification_report", content=report)
    return run


def _report(quarantined: bool) -> dict:
    report = copy.deepcopy(VERIFICATION_REPORT)
    if quarantined:
        test = {**report["tests"][0], "title": "create a book", "status": "quarantined"}
        report["tests"].append({**test, "reason": "the Save button never enabled", "heal": ""})
        report["totals"].update(tests=3, quarantined=1)
    return report


@pytest.fixture
def screens(tmp_path):
    repo = RepositoryFactory(full_name="acme-corporation/bookshop-storefront")
    passed = _run(repo, "passed", _report(False), pr_number=7, pr_url=PULL_REQUEST["url"])
    quarantined = _run(repo, "passed", _report(True), pr_number=8, pr_url=PULL_REQUEST["url"])
    for run in (passed, quarantined):
        content = {**PULL_REQUEST, "run_id": str(run.run_id), "title": "Add e2e tests"}
        ArtifactFactory(run=run, kind="pull_request", content={**content, "body": "**ok**"})
    failed = _run(
        repo,
        "failed",
        None,
        error_type="TargetAnswersErrors",
        error_message="target answers errors only: every page the exploration visited (6) "
        "answered a server error (500)",
    )
    Stage.objects.filter(run=failed, name="explore_app").update(status="failed")
    for status in ("passed", "failed", "passed"):
        ended_run(repo, status, tests=[("passed", 1)])
    return {"repo": repo, "passed": passed, "quarantined": quarantined, "failed": failed}


@pytest.mark.django_db(transaction=True)
def test_each_screen_reads_true_at_a_glance(live_server, operator, screens):  # noqa: F811
    runs = {name: screens[name] for name in ("passed", "quarantined", "failed")}
    health = reverse("repository_health", args=[screens["repo"].pk])
    with admin_page(live_server, operator) as page:
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            for name, run in runs.items():
                page.goto(reverse("admin:runs_run_change", args=[run.pk]))
                verdict = page.locator("#amtp-verdict")
                expect(verdict).to_be_visible()
                expect(verdict.locator(".amtp-verdict-status")).to_have_text(run.status)
                if name != "failed":
                    expect(page.locator("#amtp-pr-link a")).to_be_visible()
                shoot(page, f"run-{name}", width)
            expect(page.locator("#amtp-verdict")).to_contain_text("at Explore App")

            page.goto(reverse("admin:runs_run_changelist"))
            shoot(page, "runs-list", width)
            headers = page.locator("#result_list thead th")
            assert headers.count() == len(RunAdmin.list_display) + 1  # and the checkbox
            # The table scrolls inside its box: a column past the box's edge is off screen.
            frame = page.locator("#changelist .results").bounding_box()
            for i in range(headers.count()):
                box = headers.nth(i).bounding_box()
                right = min(width, frame["x"] + frame["width"])
                assert box and box["x"] + box["width"] <= right + 1, headers.nth(i).inner_text()

            page.goto(health)
            expect(page.locator("#content h1")).to_be_visible()
            shoot(page, "repository-health", width)

            page.goto(reverse("dashboard"))
            expect(page.locator('[data-figure="runs"]')).to_be_visible()
            shoot(page, "dashboard", width)
