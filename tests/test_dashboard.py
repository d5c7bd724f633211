"""The daily rollups PostgreSQL keeps as runs end, and what reads them: the admin dashboard,
``/api/costs`` (per repository and day) and a run's own cost on its page and in the API, each
showing only the repositories the caller may see."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from reporting import dashboard
from reporting.models import RunDay
from repositories.models import RepositoryGrant
from runs import transitions
from runs.models import Run, RunCost, Stage
from runs.stages import Failure
from tests.admin_helpers import client_for, staff
from tests.api_support import assert_problem, bearer, make_token  # noqa: F401 (fixture)
from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory, StageFactory

pytestmark = pytest.mark.django_db


def ended_run(repo, status, *, days_ago=0, crawl_s=40, tests=(), cost="0.01", cost_known=True):
    """A run of ``repo`` that ends ``status`` now minus ``days_ago``: a crawl of ``crawl_s``
    seconds, a verification report with ``tests`` [(status, attempts)], one cost row."""
    end = timezone.now() - timedelta(days=days_ago)
    start = end - timedelta(seconds=crawl_s + 5)
    run = RunFactory(repository=repo, status="running", started_at=start)
    StageFactory(
        run=run,
        name="crawl_repo",
        status="passed",
        started_at=start,
        finished_at=start + timedelta(seconds=crawl_s),
    )
    StageFactory(run=run, name="create_pull_request", status="skipped")
    if tests:
        report = [{"status": s, "attempts": n} for s, n in tests]
        ArtifactFactory(run=run, kind="verification_report", content={"tests": report})
    RunCost.objects.create(
        run=run,
        agent="test_engineer",
        provider="anthropic",
        model="claude-sonnet-5-5",
        input_tokens=1000,
        output_tokens=50,
        cost_usd=Decimal(cost) if cost_known else None,
    )
    # Ended at a past time: the status written here, the rollup as transitions.run_end does.
    Run.objects.filter(pk=run.pk).update(status=status, finished_at=end)
    transitions.roll_up([run.pk])
    return run


@pytest.fixture
def two_repos():
    shop, blog = RepositoryFactory(full_name="acme/shop"), RepositoryFactory(full_name="acme/blog")
    ended_run(shop, "passed", crawl_s=40, tests=[("passed", 1), ("healed", 2), ("failed", 2)])
    ended_run(shop, "passed", crawl_s=50, tests=[("passed", 1), ("skipped", 0)], cost="0.03")
    ended_run(shop, "failed", days_ago=1, crawl_s=200, cost_known=False)
    ended_run(blog, "cancelled", crawl_s=10, cost="5")
    return shop, blog


def test_each_ended_run_is_rolled_up_once_by_repository_day_and_status(two_repos):
    shop, blog = two_repos
    run = Run.objects.filter(repository=shop, status="passed").first()
    failure = Failure(str(run.pk), "crawl_repo", "GitHubForbidden", "late")
    assert not transitions.run_end(run_id=run.pk, status="failed", failure=failure)  # ended
    today = timezone.now().date()
    passed = RunDay.objects.get(repository=shop, day=today, status="passed")
    assert (passed.runs, passed.tests, passed.tests_first_attempt, passed.tests_passed) == (
        2,
        4,  # the skipped test is not counted
        2,
        3,  # healed counts as passing in the end
    )
    assert passed.cost_usd == Decimal("0.04") and passed.input_tokens == 2000
    failed = RunDay.objects.get(repository=shop, status="failed")
    assert failed.day == today - timedelta(days=1)
    assert (failed.runs, failed.runs_cost_unknown, failed.cost_usd) == (1, 1, 0)
    assert RunDay.objects.count() == 3
    # p50 of the crawl (10 s, 40 s, 50 s, 200 s) is the 40 s bucket's middle: within 12 %
    start, end = dashboard.window()
    crawl = dashboard.stage_durations(None, start, end)[0]
    assert crawl["stage"] == "crawl_repo" and crawl["count"] == 4
    assert 40 / 1.12 <= crawl["p50"] <= 40 * 1.12
    assert 200 / 1.12 <= crawl["p95"] <= 200 * 1.12


def chart_values(html: str, chart: str, series: str) -> dict[str, str]:
    svg = re.search(rf'<svg id="amtp-chart-{chart}".*?</svg>', html, re.S).group(0)
    found = re.findall(rf'data-series="{series}" data-label="([^"]+)" data-value="([^"]+)"', svg)
    return {label: value for label, value in found if value != "0"}


def test_the_dashboard_shows_only_the_repositories_one_may_see(two_repos):
    shop, blog = two_repos
    today = timezone.now().strftime("%m-%d")
    page = client_for(staff("runs.view_run")).get("/admin/dashboard/").content.decode()
    assert chart_values(page, "runs", "cancelled") == {today: "1"}
    assert chart_values(page, "runs", "passed") == {today: "2"}
    assert "acme/blog" in page
    viewer = staff()
    RepositoryGrant.objects.create(repository=shop, user=viewer, role="viewer")
    page = client_for(viewer).get("/admin/dashboard/").content.decode()
    assert chart_values(page, "runs", "cancelled") == {}  # blog's run is not theirs
    assert chart_values(page, "rates", "first attempt") == {today: "50"}
    assert chart_values(page, "rates", "after healing") == {today: "75"}
    assert chart_values(page, "cost", "cost per run") == {today: "0.02"}
    assert 'data-figure="cost-unknown">1<' in page and "acme/blog" not in page
    assert client_for(staff()).get("/admin/dashboard/").status_code == 403


def test_costs_per_repository_and_day_through_the_api(two_repos, make_token):  # noqa: F811
    shop, blog = two_repos
    everything = bearer(make_token("runs:read")).get("/api/costs").json()
    assert {(d["repository"], d["runs"]) for d in everything["days"]} == {
        ("acme/blog", 1),
        ("acme/shop", 2),
        ("acme/shop", 1),
    }
    assert everything["total"]["cost_usd"] == 5.04 and everything["total"]["runs"] == 4
    only_shop = bearer(make_token("runs:read", repositories=["acme/shop"]))
    yesterday = (timezone.now() - timedelta(days=1)).date().isoformat()
    body = only_shop.get(f"/api/costs?from={yesterday}&to={yesterday}").json()
    (day,) = body["days"]
    assert (day["repository"], day["runs"], day["runs_cost_unknown"]) == ("acme/shop", 1, 1)
    assert only_shop.get("/api/costs?repository=acme/blog").json()["days"] == []
    problem = only_shop.get("/api/costs?from=2026-02-01&to=2026-01-01")
    assert_problem(problem, 422)
    assert "from: must be on or before to" in problem.json()["detail"] + str(problem.json())
    assert_problem(only_shop.get("/api/costs?from=2020-01-01&to=2026-01-01"), 422)


def test_the_run_page_and_the_api_show_the_runs_tokens_and_cost(make_token):  # noqa: F811
    repo = RepositoryFactory(full_name="acme/shop")
    run = ended_run(repo, "passed", cost="0.0125")
    RunCost.objects.create(
        run=run,
        agent="repo_crawler",
        provider="openai",
        model="my-local-llama",
        input_tokens=7,
        output_tokens=3,
        cache_read_tokens=2,
    )
    cost = bearer(make_token("runs:read")).get(f"/api/runs/{run.pk}").json()["cost"]
    assert (cost["input_tokens"], cost["output_tokens"], cost["cost_usd"]) == (1007, 53, None)
    by_agent = {a["agent"]: a for a in cost["agents"]}
    assert by_agent["test_engineer"]["cost_usd"] == 0.0125
    assert by_agent["repo_crawler"]["cost_usd"] is None
    page = client_for(staff("runs.view_run")).get(f"/admin/runs/run/{run.pk}/change/")
    html = page.content.decode()
    assert re.search(r'id="amtp-cost-total">.*?1007.*?53.*?unknown', html, re.S)
    assert re.search(r'data-agent="test_engineer">.*?0\.012500', html, re.S)
    assert Stage.objects.filter(run=run).count() == 2
