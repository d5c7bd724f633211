"""Operator surfaces in the admin, on PostgreSQL: runs, artifacts, repository settings."""

from datetime import timedelta

import pytest
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from approvals.models import Approval
from repositories import names, paths
from repositories import services as repository_services
from repositories.models import Repository
from runs.admin import runs as runs_admin
from runs.models import Artifact, Run, RunStart, Stage
from runs.services import RUN_FINISHED
from tests.admin_helpers import (
    APPROVALS,
    ARTIFACTS,
    RUNS,
    VIEW,
    XSS,
    change_url,
    client_for,
    flashed,
    listed,
    staff,
)
from tests.factories import ApprovalFactory, ArtifactFactory, RepositoryFactory, RunFactory
from tests.gitrepo import make_git_repo

pytestmark = pytest.mark.django_db

# --- runs list ---------------------------------------------------------------------------


def test_run_list_shows_status_badges_age_duration_and_pr_links(admin_client):
    now = timezone.now()
    passed = RunFactory(
        status="passed",
        started_at=now - timedelta(seconds=95),
        finished_at=now,
        pr_number=7,
        pr_url="https://github.com/acme/app/pull/7",
    )
    failed = RunFactory(status="failed", ref="feature/login", target_framework="maestro")
    page = admin_client.get(RUNS).content.decode()
    assert 'class="amtp-badge amtp-badge-passed"' in page
    assert 'class="amtp-badge amtp-badge-failed"' in page
    assert 'href="https://github.com/acme/app/pull/7"' in page and ">#7<" in page
    assert "1m 35s" in page and "feature/login" in page and "maestro" in page
    assert str(passed.run_id)[:8] in page and str(failed.run_id)[:8] in page
    assert "Launch run" in page and reverse("launch_run") in page


def test_run_list_filters_and_search(admin_client):
    other = RepositoryFactory(full_name="globex/shop")
    a = RunFactory(status="failed", trigger="webhook", requested_by="github:push")
    b = RunFactory(
        status="passed",
        repository=other,
        repo_full_name=other.full_name,
        ref="release/2.0",
        target_framework="maestro",
        requested_by="alice",
    )
    c = RunFactory(status="running", trigger="form")
    Run.objects.filter(pk=c.pk).update(created_at=timezone.now() - timedelta(days=400))
    year = timezone.now().year

    def rows(**params):
        return listed(admin_client.get(RUNS, params))

    assert rows() == {a.pk, b.pk, c.pk}
    assert rows(status__exact="failed") == {a.pk}
    assert rows(repository__id__exact=other.pk) == {b.pk}
    assert rows(target_framework__exact="maestro") == {b.pk}
    assert rows(trigger__exact="form") == {c.pk}
    assert rows(created_at__year=year) == {a.pk, b.pk}
    assert rows(q=str(c.run_id)) == {c.pk}
    assert rows(q=str(c.run_id)[:8]) == {c.pk}
    assert rows(q="globex") == {b.pk}
    assert rows(q="release/2.0") == {b.pk}
    assert rows(q="alice") == {b.pk}


def _bulk_runs(count: int) -> list[Run]:
    repo = RepositoryFactory(full_name="acme/bulk")
    now = timezone.now()
    return Run.objects.bulk_create(
        [
            Run(
                repository=repo,
                repo_full_name=repo.full_name,
                ref=f"branch-{i}",
                base_branch="main",
                depth_level="core",
                target_framework="playwright",
                status=["passed", "failed", "running"][i % 3],
                started_at=now,
                finished_at=now,
                pr_number=i + 1,
                pr_url=f"https://github.com/acme/bulk/pull/{i + 1}",
            )
            for i in range(count)
        ]
    )


def _queries_for(client, model_admin, url, per_page, monkeypatch) -> int:
    monkeypatch.setattr(model_admin, "list_per_page", per_page)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == per_page
    return len(ctx.captured_queries)


@pytest.mark.parametrize("model,url", [(Run, RUNS), (Approval, APPROVALS), (Artifact, ARTIFACTS)])
def test_list_pages_use_a_bounded_number_of_queries(
    admin_client, monkeypatch, django_assert_max_num_queries, model, url
):
    runs = _bulk_runs(300)
    stages = Stage.objects.bulk_create(
        [Stage(run=run, name="create_pull_request", position=3) for run in runs]
    )
    Approval.objects.bulk_create(
        [Approval(run=s.run, stage=s, approver="policy", comment="held") for s in stages]
    )
    Artifact.objects.bulk_create(
        [
            Artifact(
                run=run,
                kind="test_engineer_output",
                schema_id="x",
                content={"files": ["x" * 10_000]},
            )
            for run in runs
        ]
    )
    model_admin = admin.site._registry[model]
    small = _queries_for(admin_client, model_admin, url, 20, monkeypatch)
    large = _queries_for(admin_client, model_admin, url, 200, monkeypatch)
    assert small == large
    with django_assert_max_num_queries(8):
        admin_client.get(url)


# --- the run page ------------------------------------------------------------------------


def _failed_run():
    now = timezone.now()
    run = RunFactory(
        status="failed",
        started_at=now - timedelta(minutes=3),
        finished_at=now,
        error_type="StaleBaseBranch",
        error_message="base branch 'main' moved",
    )
    for position, (name, status) in enumerate(
        [
            ("crawl_repo", "passed"),
            ("generate_test_cases", "passed"),
            ("generate_test_code", "passed"),
            ("create_pull_request", "failed"),
        ]
    ):
        Stage.objects.create(
            run=run,
            name=name,
            position=position,
            status=status,
            attempts=1 + (position == 3),
            started_at=now - timedelta(minutes=3 - position),
            finished_at=now - timedelta(minutes=2 - position),
            error_type="StaleBaseBranch" if status == "failed" else "",
            error_message="base branch 'main' moved" if status == "failed" else "",
        )
    crawl = ArtifactFactory(run=run, content={"file_tree": ["a.ts"]})
    ArtifactFactory(
        run=run,
        kind="failure_report",
        content={
            "error": "StaleBaseBranch",
            "base_branch": "main",
            "observed_head": "a" * 40,
            "expected_parent": "b" * 40,
        },
    )
    ApprovalFactory(
        run=run,
        stage=run.stages.get(name="create_pull_request"),
        decision="approved",
        decided_by="alice",
        decided_at=now,
        decision_comment="ship it",
    )
    return run, crawl


def test_run_page_shows_timeline_artifacts_approvals_and_failure_report(admin_client):
    run, crawl = _failed_run()
    response = admin_client.get(change_url(run))
    page = response.content.decode()
    assert response.status_code == 200
    timeline = page[page.index('id="amtp-timeline"') : page.index('id="amtp-artifacts"')]
    names = ["Crawl Repo", "Generate Test Cases", "Generate Test Code", "Create Pull Request"]
    assert sorted(names, key=timeline.index) == names
    assert "amtp-badge-failed" in timeline and "2 attempts" in timeline and "1m 00s" in timeline
    assert "StaleBaseBranch</strong>: base branch &#x27;main&#x27; moved" in timeline
    assert reverse("admin:runs_artifact_change", args=[crawl.pk]) in page
    assert reverse("admin:runs_artifact_download", args=[crawl.pk]) in page
    assert 'id="amtp-failure-report"' in page and "a" * 40 in page
    assert "ship it" in page and "alice" in page
    assert "data-amtp-autorefresh" not in page, "a finished run does not refresh"
    assert ">Cancel run<" not in page and ">Run again<" in page


def test_a_running_run_page_refreshes_itself_and_offers_cancel(admin_client):
    run = RunFactory(status="running", started_at=timezone.now())
    page = admin_client.get(change_url(run)).content.decode()
    assert 'data-amtp-autorefresh="5"' in page and 'http-equiv="refresh"' in page
    assert reverse("admin:runs_run_cancel", args=[run.pk]) in page


def test_the_run_page_is_read_only():
    client = client_for(staff(*VIEW, "runs.change_run"))
    run = RunFactory(status="running")
    assert client.post(change_url(run), {"status": "passed"}).status_code == 403
    run.refresh_from_db()
    assert run.status == "running"


# --- cancel and run again without a worker (the service effects) ------------------------


def test_cancel_a_finished_run_shows_the_service_message():
    client = client_for(staff(*VIEW, "runs.change_run"))
    run = RunFactory(status="passed")
    response = client.post(reverse("admin:runs_run_cancel", args=[run.pk]))
    assert response.status_code == 302
    assert flashed(response) == [RUN_FINISHED.format(run_id=run.pk, status="passed")]


def test_cancel_and_run_again_need_permission_post_and_csrf():
    run = RunFactory(status="pending")
    cancel = reverse("admin:runs_run_cancel", args=[run.pk])
    again = reverse("admin:runs_run_again", args=[run.pk])
    assert client_for(staff(*VIEW)).post(cancel).status_code == 403
    operator = staff(*VIEW, "runs.change_run", "runs.add_run")
    assert client_for(operator).get(cancel).status_code == 405
    assert client_for(operator).get(again).status_code == 405
    assert client_for(operator, csrf=True).post(cancel).status_code == 403
    assert client_for(operator, csrf=True).post(again).status_code == 403
    assert Run.objects.count() == 1
    run.refresh_from_db()
    assert run.status == "pending"


def test_cancel_action_cancels_unstarted_runs_and_skips_finished_ones():
    client = client_for(staff(*VIEW, "runs.change_run"))
    pending, finished = RunFactory(status="pending"), RunFactory(status="failed")
    response = client.post(
        RUNS, {"action": "cancel_selected", "_selected_action": [pending.pk, finished.pk]}
    )
    pending.refresh_from_db()
    assert pending.status == "cancelled"  # never reached Temporal: cancelled in place
    assert runs_admin.FINISHED_SKIPPED.format(count=1) in flashed(response)


def test_run_again_keeps_the_inputs_even_while_the_orchestrator_is_unreachable(settings):
    settings.TEMPORAL_ADDRESS = "127.0.0.1:1"
    user = staff(*VIEW, "runs.add_run")
    run = RunFactory(
        status="failed",
        ref="feature/x",
        depth_level="deep",
        target_framework="maestro",
        base_branch="develop",
        trigger="api",
    )
    response = client_for(user).post(
        RUNS, {"action": "run_again_selected", "_selected_action": [run.pk]}
    )
    again = Run.objects.exclude(pk=run.pk).get()
    assert (again.ref, again.depth_level, again.target_framework, again.base_branch) == (
        "feature/x",
        "deep",
        "maestro",
        "develop",
    )
    assert again.trigger == "form" and again.requested_by == user.username
    assert again.status == "pending" and again.stages.count() == len(Stage.ORDER)
    [message] = flashed(response)
    assert message == runs_admin.RUN_AGAIN_STARTED.format(new_id=again.pk, run_id=run.pk)
    assert RunStart.objects.filter(run=again).exists()  # a worker's dispatcher starts it


def test_bulk_actions_are_bounded(admin_client):
    runs = _bulk_runs(runs_admin.MAX_BULK_RUNS + 1)
    response = admin_client.post(
        RUNS, {"action": "run_again_selected", "_selected_action": [r.pk for r in runs]}
    )
    assert flashed(response) == [runs_admin.TOO_MANY_SELECTED]
    assert Run.objects.count() == len(runs)


def test_run_again_needs_the_launch_permission():
    run = RunFactory(status="failed")
    client = client_for(staff(*VIEW, "runs.change_run"))
    assert client.post(reverse("admin:runs_run_again", args=[run.pk])).status_code == 403
    assert ">Run again<" not in client.get(change_url(run)).content.decode()
    assert Run.objects.count() == 1


# --- repositories ------------------------------------------------------------------------


def _repository_form(**overrides) -> dict:
    data = {
        "full_name": "acme/local",
        "host": "local",
        "local_path": "",
        "default_branch": "main",
        "default_depth_level": "core",
        "default_framework": "playwright",
        "test_dir": "e2e/amtp",
        "failing_tests": "fixme",
        "webhook_branches": "main, release/1.x",
        "max_concurrent_runs": 2,
        "rate_limit_runs": 30,
        "rate_limit_window_seconds": 3600,
    }
    return {**data, **overrides}


def test_repository_settings_are_validated(admin_client, tmp_path):
    add = reverse("admin:repositories_repository_add")
    plain = tmp_path / "not-a-repo"
    plain.mkdir()

    def errors(**overrides):
        response = admin_client.post(add, _repository_form(**overrides))
        return response.context["adminform"].form.errors if response.status_code == 200 else {}

    assert errors(full_name="no-slash")["full_name"] == [names.FULL_NAME_INVALID]
    assert errors()["local_path"] == [repository_services.LOCAL_PATH_REQUIRED]
    assert errors(local_path="relative/path")["local_path"] == [
        repository_services.LOCAL_PATH_NOT_ABSOLUTE
    ]
    assert "is not a git repository" in errors(local_path=str(plain))["local_path"][0]
    assert errors(host="github", local_path=str(plain))["local_path"] == [
        repository_services.LOCAL_PATH_UNUSED
    ]
    assert errors(test_dir="../outside")["test_dir"]
    assert errors(test_dir=".github/workflows")["test_dir"] == [paths.GIT_DIRECTORY]
    assert "'..'" in errors(webhook_branches="main, bad..name")["webhook_branches"][0]
    assert errors(max_concurrent_runs=0)["max_concurrent_runs"] == [
        repository_services.AT_LEAST_ONE
    ]
    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    assert (
        "does not name a commit" in errors(local_path=path, default_branch="trunk")["local_path"][0]
    )
    assert errors(local_path=path) == {}
    repo = Repository.objects.get(full_name="acme/local")
    assert repo.local_path == path and repo.webhook_branches == ["main", "release/1.x"]
    assert "main, release/1.x" in admin_client.get(change_url(repo)).content.decode()


# --- hostile input -----------------------------------------------------------------------


def test_hostile_content_is_escaped_on_every_page(admin_client):
    repo = RepositoryFactory(full_name="acme/hostile", default_branch=f"</script>{XSS}")
    run = RunFactory(
        repository=repo,
        repo_full_name=repo.full_name,
        ref=XSS,
        status="failed",
        requested_by=XSS,
        error_type="Boom",
        error_message=XSS,
        pr_number=3,
        pr_url="javascript:alert(1)",
    )
    Stage.objects.create(
        run=run, name="crawl_repo", status="failed", error_type="X", error_message=XSS
    )
    stage = Stage.objects.create(run=run, name="create_pull_request", position=3)
    approval = ApprovalFactory(run=run, stage=stage, comment=XSS)
    ApprovalFactory(
        run=RunFactory(),
        decision="rejected",
        decided_at=timezone.now(),
        decided_by=XSS,
        decision_comment=XSS,
        comment=XSS,
    )
    data = ArtifactFactory(run=run, content={XSS: XSS, "list": [XSS]}, meta={"model": XSS})
    code = ArtifactFactory(
        run=run,
        kind="test_engineer_output",
        content={
            "files": [{"path": f"e2e/{XSS}.ts", "contents": f"const x = '{XSS}';"}],
            "pr_title": XSS,
            "pr_body": XSS,
        },
    )
    ArtifactFactory(run=run, kind="failure_report", content={"error": XSS, "message": XSS})
    pages = [
        RUNS,
        change_url(run),
        change_url(data),
        change_url(code),
        ARTIFACTS,
        APPROVALS,
        f"{APPROVALS}?decision=all",
        change_url(approval),
        reverse("admin:index"),
        reverse("launch_run"),
    ]
    for page in pages:
        response = admin_client.get(page)
        assert response.status_code == 200, page
        body = response.content.decode()
        assert XSS not in body, page
        assert "<script>alert" not in body, page
        assert 'href="javascript:' not in body, page
