"""A repository's test health: ``run_health`` as PostgreSQL fills it when runs end, what
``reporting.health`` reads from it (points, oldest quarantined test, flaky tests, maintenance
runs), the admin page and ``/api/repositories/{owner}/{name}/health``, each only for those who
may see the repository's runs; and the page in Chromium, its chart read back."""

from __future__ import annotations

import io
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from reporting import health
from reporting.models import RunHealth
from repositories.models import RepositoryGrant
from runs import transitions
from runs.models import Artifact, Run
from tests.admin_helpers import change_url, client_for, staff
from tests.api_support import assert_problem, bearer, make_token  # noqa: F401 (fixture)
from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory
from tests.test_browser import admin_page, screenshot
from tests.test_prune import local_repository

pytestmark = pytest.mark.django_db

REPORT_SCHEMA = "https://amtp.zagtrader.internal/schemas/verification/report.json"
NO_REPORT = object()


def outcome(file: str, title: str, status: str, reason: str = "") -> dict:
    return {
        "id": f"{file}:3 › {title}",
        "title": title,
        "file": file,
        "status": status,
        "duration_ms": 10,
        "attempts": 2 if status == "flaky" else 1,
        "error": "",
        "reason": reason,
        "heal": "",
        "evidence": [],
    }


def report_run(repo, *tests, kind="maintenance", ago=timedelta(0), content=None, end="passed"):
    """A run of ``repo`` that ends ``end`` now minus ``ago`` with a verified report of
    ``tests`` ((file, title, status[, reason])), or with ``content`` as its report."""
    finished = timezone.now() - ago
    run = RunFactory(repository=repo, kind=kind, status="running", started_at=finished)
    if content is None:
        content = {"status": "verified", "tests": [outcome(*t) for t in tests]}
    if content is not NO_REPORT:
        ArtifactFactory(
            run=run, kind="verification_report", schema_id=REPORT_SCHEMA, content=content
        )
    # Ended at a past time: the status written here, the rollup as transitions.run_end does.
    Run.objects.filter(pk=run.pk).update(status=end, finished_at=finished)
    transitions.roll_up([run.pk])
    return run


def figures(point: health.Point) -> tuple:
    return (point.kind, point.tests, point.passing, point.healed, point.quarantined)


A, B, C = ("e2e/a.spec.ts", "logs in"), ("e2e/b.spec.ts", "adds a task"), ("e2e/c.spec.ts", "pays")


@pytest.fixture
def shop():
    """Four days of acme/shop: a generation run, two maintenance runs and a check run, plus
    runs that are no points (no report, a report that ran nothing, still running)."""
    repo = RepositoryFactory(full_name="acme/shop")
    day = timedelta(days=1)
    report_run(repo, (*A, "passed"), (*B, "flaky"), kind="generation", ago=4 * day)
    report_run(repo, (*A, "healed"), (*B, "quarantined", "no button"), (*C, "flaky"), ago=3 * day)
    report_run(repo, (*A, "passed"), (*B, "skipped"), (*C, "failed"), kind="check", ago=2 * day)
    report_run(repo, (*A, "passed"), (*B, "skipped"), (*C, "flaky"), ago=day, end="failed")
    report_run(repo, ago=day, content=NO_REPORT)
    report_run(repo, ago=day, content={"status": "skipped", "tests": [outcome(*A, "skipped")]})
    RunFactory(repository=repo, kind="maintenance", status="running")
    return repo


def test_one_point_per_ended_run_whose_report_ran_the_tests(shop):
    found = health.repository_health(shop)
    assert [figures(p) for p in found.points] == [
        ("generation", 2, 2, 0, 0),
        ("maintenance", 3, 1, 1, 1),
        ("check", 3, 1, 0, 0),
        ("maintenance", 3, 2, 0, 0),
    ]
    check = found.points[2]
    assert (check.failed, check.skipped, check.flaky) == (1, 1, 0)
    statuses = ["running", "passed", "passed", "failed", "passed"]  # newest first
    assert [run.status for run in found.maintenance] == statuses
    # B was quarantined by the first maintenance run and is skipped (test.fixme) since
    (oldest,) = found.quarantined
    assert (oldest.file, oldest.title, oldest.reason) == (*B, "no button")
    assert oldest.since == found.points[1].finished_at and not oldest.at_least
    assert [(f.title, f.times, f.runs) for f in found.flaky] == [
        ("pays", 2, 3),
        ("adds a task", 1, 2),
    ]


def test_a_quarantined_test_that_passes_again_or_is_deleted_is_no_longer_quarantined():
    repo = RepositoryFactory(full_name="acme/blog")
    day = timedelta(days=1)
    report_run(repo, (*A, "passed"), ago=120 * day)  # before the window
    report_run(repo, (*A, "quarantined", "A broke"), (*B, "quarantined", "B broke"), ago=80 * day)
    report_run(repo, (*A, "skipped"), (*B, "skipped"), (*C, "quarantined", "C broke"), ago=9 * day)
    report_run(repo, (*A, "passed"), (*B, "skipped"), (*C, "skipped"), kind="check", ago=5 * day)
    found = health.repository_health(repo)
    assert [q.title for q in found.quarantined] == ["adds a task", "pays"]
    oldest = found.oldest_quarantined
    assert (oldest.title, oldest.at_least) == ("adds a task", True)  # older runs exist
    # a maintenance run without B: the test is gone from the repository
    report_run(repo, (*C, "skipped"), ago=day)
    assert [q.title for q in health.repository_health(repo).quarantined] == ["pays"]
    # a check run without C says nothing of the repository's tests; C passing again does
    report_run(repo, (*A, "passed"), kind="check")
    assert [q.title for q in health.repository_health(repo).quarantined] == ["pays"]
    report_run(repo, (*C, "healed"), kind="generation")
    assert health.repository_health(repo).oldest_quarantined is None


def test_a_repository_without_runs_has_empty_health():
    found = health.repository_health(RepositoryFactory(full_name="acme/empty"))
    assert (found.points, found.maintenance, found.quarantined, found.flaky) == ([], [], [], [])
    assert found.oldest_quarantined is None


@pytest.mark.parametrize(
    ("content", "point"),
    [
        ({"status": "verified"}, (0, 0, 0)),  # no tests at all
        ({"status": "verified", "tests": {"a": 1}}, (0, 0, 0)),
        (
            {
                "status": "verified",
                "tests": [
                    "junk",
                    7,
                    None,
                    {"status": "passed"},  # no file, no title
                    {"file": 7, "title": ["x"], "status": "quarantined", "reason": {"a": 1}},
                    {"file": "a.spec.ts", "title": "t", "status": "exploded"},
                    {"file": "a.spec.ts", "title": "t", "status": 3},
                    {"file": "a.spec.ts", "title": "u", "status": "flaky", "reason": "x" * 5000},
                ],
            },
            (3, 2, 1),
        ),
        ([{"status": "verified"}], None),  # not an object
        ("verified", None),
        ({"tests": [outcome(*A, "passed")]}, None),  # no status: not known to have run
    ],
)
def test_a_report_missing_fields_adds_what_it_has_and_the_run_still_ends(content, point):
    repo = RepositoryFactory(full_name="acme/odd")
    run = report_run(repo, content=content)
    assert Run.objects.get(pk=run.pk).status == "passed"
    found = health.repository_health(repo)
    if point is None:
        assert found.points == []
        return
    (only,) = found.points
    assert (only.tests, only.passing, only.quarantined) == point
    outcomes = RunHealth.objects.get(run=run).outcomes
    assert all(
        len(o) == 4 and all(isinstance(v, str) and len(v) <= 1024 for v in o) for o in outcomes
    )
    assert [q.file for q in found.quarantined] == [""] * point[2]  # kept, though nameless


def test_outcomes_that_are_not_the_tables_shape_are_ignored(shop):
    RunHealth.objects.filter(run__repository=shop, kind="check").update(
        outcomes=[["a"], 5, None, [1, 2, 3, 4], {"x": 1}]
    )
    RunHealth.objects.filter(run__repository=shop, kind="generation").update(outcomes={"x": 1})
    found = health.repository_health(shop)
    assert len(found.points) == 4 and found.oldest_quarantined.title == "adds a task"


def test_the_window_is_bounded_whatever_the_history(django_assert_max_num_queries):
    repo = RepositoryFactory(full_name="acme/busy")
    now = timezone.now()
    runs = Run.objects.bulk_create(
        RunFactory.build(repository=repo, status="running", finished_at=now - timedelta(hours=i))
        for i in range(health.MAX_POINTS + 60)
    )
    Artifact.objects.bulk_create(
        ArtifactFactory.build(
            run=run,
            kind="verification_report",
            content={"status": "verified", "tests": [outcome(*A, "passed"), outcome(*B, "flaky")]},
        )
        for run in runs
    )
    Run.objects.filter(repository=repo).update(status="passed")
    transitions.roll_up([run.pk for run in runs])
    assert RunHealth.objects.filter(repository=repo).count() == len(runs)
    with django_assert_max_num_queries(3):
        found = health.repository_health(repo)
    assert len(found.points) == health.MAX_POINTS
    assert found.points[-1].run_id == str(runs[0].pk)  # the newest last
    assert found.flaky[0].times == health.MAX_POINTS


def test_prune_removes_a_runs_health_with_the_run(tmp_path, settings):
    settings.AMTP_VERIFY_EVIDENCE_DIR = tmp_path / "evidence"
    repo = local_repository(tmp_path, retention_days=30)
    old = report_run(repo, (*A, "passed"), ago=timedelta(days=40))
    Run.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    kept = report_run(repo, (*A, "passed"))
    call_command("prune", stdout=io.StringIO())
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no row left pointing at a gone run
    assert list(RunHealth.objects.values_list("run_id", flat=True)) == [kept.pk]


# --- the admin page ------------------------------------------------------------------------


def point_attributes(html: str) -> list[dict[str, str]]:
    svg = re.search(r'<svg id="amtp-chart-health".*?</svg>', html, re.S).group(0)
    return [
        dict(re.findall(r'data-([a-z]+)="([^"]*)"', g))
        for g in re.findall(r'<g class="amtp-health-point"([^>]*)>', svg)
    ]


def health_url(repo) -> str:
    return f"/admin/repositories/repository/{repo.pk}/health/"


def test_the_health_page_is_for_those_who_may_see_the_repository(shop):
    viewer = staff()
    RepositoryGrant.objects.create(repository=shop, user=viewer, role="viewer")
    page = client_for(viewer).get(health_url(shop))
    assert page.status_code == 200
    html = page.content.decode()
    points = point_attributes(html)
    assert [
        (p["kind"], p["tests"], p["passing"], p["healed"], p["quarantined"]) for p in points
    ] == [
        ("generation", "2", "2", "0", "0"),
        ("maintenance", "3", "1", "1", "1"),
        ("check", "3", "1", "0", "0"),
        ("maintenance", "3", "2", "0", "0"),
    ]
    assert 'aria-labelledby="amtp-chart-health-title amtp-chart-health-desc"' in html
    assert html.count('<tr data-run="') == 4 + 5  # the table fallback and the maintenance runs
    assert 'data-field="title">adds a task<' in html and "no button" in html
    other = RepositoryFactory(full_name="acme/secret")
    assert client_for(viewer).get(health_url(other)).status_code == 404  # as if not there
    assert (
        client_for(viewer).get("/admin/repositories/repository/999999/health/").status_code == 404
    )
    assert client_for(staff()).get(health_url(shop)).status_code == 403
    change = client_for(staff("repositories.view_repository", "runs.view_run")).get(
        change_url(shop)
    )
    assert health_url(shop) in change.content.decode()
    listing = client_for(viewer).get("/admin/repositories/repository/")
    assert health_url(shop) in listing.content.decode()


def test_the_health_page_escapes_what_the_reports_say():
    repo = RepositoryFactory(full_name="acme/xss")
    evil = '<script>alert("x")</script>'
    report_run(repo, ("e2e/<b>.spec.ts", evil, "quarantined", evil), (f"e2e/{evil}", evil, "flaky"))
    html = client_for(staff("runs.view_run")).get(health_url(repo)).content.decode()
    assert evil not in html and "&lt;script&gt;" in html


# --- the API -------------------------------------------------------------------------------


def test_the_api_answers_the_same_figures(shop, make_token):  # noqa: F811
    body = bearer(make_token("runs:read")).get("/api/repositories/acme/shop/health").json()
    found = health.repository_health(shop)
    assert [
        (p["kind"], p["tests"], p["passing"], p["healed"], p["quarantined"]) for p in body["points"]
    ] == [figures(p) for p in found.points]
    assert body["quarantined_now"] == 1 and body["oldest_quarantined"]["title"] == "adds a task"
    assert body["oldest_quarantined"]["run_id"] == found.oldest_quarantined.run_id
    assert [f["times"] for f in body["flaky"]] == [2, 1]
    assert [m["status"] for m in body["maintenance_runs"]] == [r.status for r in found.maintenance]


def test_the_api_hides_repositories_the_caller_may_not_see(shop, make_token):  # noqa: F811
    RepositoryFactory(full_name="acme/blog")
    only_blog = bearer(make_token("runs:read", repositories=["acme/blog"]))
    hidden = assert_problem(only_blog.get("/api/repositories/acme/shop/health"), 404, "not-found")
    unknown = assert_problem(only_blog.get("/api/repositories/acme/nope/health"), 404, "not-found")
    assert hidden["detail"] == "repository 'acme/shop' is not registered in AMTP"
    assert unknown["detail"] == "repository 'acme/nope' is not registered in AMTP"
    assert only_blog.get("/api/repositories/acme/blog/health").json()["points"] == []
    assert_problem(
        bearer(make_token("approvals:decide")).get("/api/repositories/acme/shop/health"), 403
    )
    assert_problem(bearer("amtp_nope").get("/api/repositories/acme/shop/health"), 401)
    viewer = staff()
    RepositoryGrant.objects.create(repository=shop, user=viewer, role="viewer")
    assert client_for(viewer).get("/api/repositories/acme/shop/health").status_code == 200
    assert_problem(client_for(staff()).get("/api/repositories/acme/shop/health"), 403)


@pytest.mark.parametrize(
    "path", ["acme/sh%20op", "acme/sh%00op", "ac%2Fme/shop", f"acme/{'x' * 101}"]
)
def test_hostile_repository_names_are_refused_naming_the_part(path, make_token):  # noqa: F811
    response = bearer(make_token("runs:read")).get(f"/api/repositories/{path}/health")
    if response.status_code == 404:  # a slash inside a part never reaches the operation
        assert_problem(response, 404)
        return
    problem = assert_problem(response, 422)
    assert problem["errors"][0]["location"] == "path"
    assert problem["errors"][0]["field"] in ("owner", "name")


# --- in Chromium ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_health_page_draws_the_data_in_chromium(tmp_path, live_server, django_user_model):
    repo = RepositoryFactory(full_name="acme/shop")
    day = timedelta(days=1)
    report_run(repo, (*A, "passed"), (*B, "flaky"), kind="generation", ago=3 * day)
    report_run(repo, (*A, "healed"), (*B, "quarantined", "no button"), (*C, "passed"), ago=2 * day)
    report_run(repo, (*A, "passed"), (*B, "skipped"), (*C, "failed"), kind="check", ago=day)
    viewer = django_user_model.objects.create_user("vera", password="pw", is_staff=True)
    RepositoryGrant.objects.create(repository=repo, user=viewer, role="viewer")
    expected = [  # each UPDATE committed: the trigger ran
        {
            "kind": p.kind,
            "tests": p.tests,
            "passing": p.passing,
            "healed": p.healed,
            "quarantined": p.quarantined,
        }
        for p in health.repository_health(repo).points
    ]
    assert len(expected) == 3
    with admin_page(live_server, "vera") as page:
        page.goto(f"/admin/repositories/repository/{repo.pk}/change/")
        page.get_by_role("link", name="Health").click()
        points = page.locator("#amtp-chart-health g.amtp-health-point")
        expect(points).to_have_count(3)
        drawn = points.evaluate_all(
            """gs => gs.map(g => ({kind: g.dataset.kind, tests: +g.dataset.tests,
                passing: +g.dataset.passing, healed: +g.dataset.healed,
                quarantined: +g.dataset.quarantined}))"""
        )
        assert drawn == expected
        heights = [
            sum(r.bounding_box()["height"] for r in points.nth(i).locator("rect").all())
            for i in range(3)
        ]
        assert heights[1] == pytest.approx(heights[0] * 3 / 2, abs=1)  # drawn to scale
        expect(page.locator('#amtp-health-quarantined [data-field="title"]')).to_have_text(
            "adds a task"
        )
        expect(page.locator("#amtp-health-flaky tbody tr").first).to_contain_text("1 of 2 runs")
        expect(page.locator('[data-figure="quarantined-now"]')).to_have_text("1")
        screenshot(page, tmp_path / "health.png")
