"""``manage.py prune``: old finished runs go with everything that hangs off them; open,
held and open-PR runs stay; a dry run changes nothing; batches page correctly; bad arguments
are refused naming the flag, changing nothing."""

from __future__ import annotations

import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from approvals.models import Approval
from notifications.models import Notification
from reporting.models import RunDay, StageDay
from repositories.hosts import host_for
from runs import transitions
from runs.models import ActivityIdempotency, Artifact, Run, RunCost, Stage
from tests.factories import ApprovalFactory, ArtifactFactory, RepositoryFactory, RunFactory
from tests.gitrepo import make_git_repo
from triggers.models import WebhookDelivery


@pytest.fixture
def evidence(settings, tmp_path):
    settings.AMTP_VERIFY_EVIDENCE_DIR = tmp_path / "evidence"
    settings.AMTP_RETENTION_DAYS = None
    return settings.AMTP_VERIFY_EVIDENCE_DIR


def local_repository(tmp_path, **fields):
    path = make_git_repo(tmp_path / "repo", {"README.md": "hello\n"})
    return RepositoryFactory(full_name="acme/web", host="local", local_path=path, **fields)


def pull_request(repository, n: int, *, open_: bool) -> int:
    """A real pull request of the local host (closed again unless ``open_``)."""
    host = host_for(repository)
    branch = f"amtp/run-{n}"
    result = host.open_pull_request(
        base_branch="main",
        expected_base_sha=host.resolve_ref("main"),
        head_branch=branch,
        files={"e2e/amtp/a.spec.ts": "test('a', async () => {});\n"},
        title=f"tests {n}",
        body="",
    )
    if not open_:
        host.discard_pull_request(head_branch=branch, base_branch="main")
    return result.number


def old_run(repository, evidence, *, days=40, status="passed", pr=None, stage="passed") -> Run:
    """A run ``days`` old with stages, artifacts, an idempotency row, a notification, a
    webhook delivery and an evidence folder."""
    run = RunFactory(repository=repository, status=status, pr_number=pr)
    transitions.create_stages(run)
    Stage.objects.filter(run=run).update(status=stage)
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(days=days))
    ArtifactFactory(run=run)
    ActivityIdempotency.objects.create(
        idem_key=run.pk.hex * 2, run=run, activity_name="CrawlRepo", result={}
    )
    Notification.objects.create(
        run=run,
        event="run_failed",
        dedupe_key="run_failed",
        channel="email",
        recipient="ops@example.com",
        subject="s",
        text="t",
    )
    WebhookDelivery.objects.create(
        delivery_id=f"d-{run.pk}", event="push", outcome="run_created", run=run
    )
    RunCost.objects.create(run=run, agent="crawler", provider="offline", model="rules")
    (evidence / str(run.pk)).mkdir(parents=True)
    (evidence / str(run.pk) / "trace.zip").write_bytes(b"PK")
    return run


def prune(*args) -> str:
    out = io.StringIO()
    call_command("prune", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_prune_keeps_open_held_and_open_pr_runs_and_removes_the_rest(tmp_path, evidence):
    repo = local_repository(tmp_path, retention_days=30)
    gone = [
        old_run(repo, evidence, status="failed"),
        old_run(repo, evidence, status="cancelled"),
        old_run(repo, evidence, pr=pull_request(repo, 1, open_=False)),  # PR closed
    ]
    ApprovalFactory(
        run=gone[0],
        stage=gone[0].stages.get(name="create_pull_request"),
        decision="rejected",
        decided_at=timezone.now(),
    )
    held = old_run(repo, evidence, status="running", stage="awaiting_approval")
    ApprovalFactory(run=held, stage=held.stages.get(name="create_pull_request"))
    kept = [
        held,
        old_run(repo, evidence, pr=pull_request(repo, 2, open_=True)),  # PR open
        old_run(repo, evidence, status="pending", stage="pending"),
        old_run(repo, evidence, status="running", stage="running"),
        old_run(repo, evidence, days=10, status="failed"),  # younger than the retention
    ]
    said = prune("--batch-size", "2")
    assert "acme/web: removed 3 run(s) older than 30 day(s) and 3 evidence folder(s) in 2 " in said
    assert "kept 4 older one(s)" in said
    ids = [run.pk for run in gone]
    assert set(Run.objects.values_list("pk", flat=True)) == {run.pk for run in kept}
    for model in (Stage, Artifact, ActivityIdempotency, Notification, Approval, RunCost):
        assert not model.objects.filter(run_id__in=ids).exists(), model
    connection.check_constraints()  # what the commit checks: no row points at a removed run
    assert WebhookDelivery.objects.filter(run=None).count() == 3  # the pushes stay recorded
    assert Approval.objects.filter(run=held, decision="pending").exists()
    assert sorted(p.name for p in evidence.iterdir()) == sorted(str(r.pk) for r in kept)


@pytest.mark.django_db
def test_a_dry_run_changes_nothing_and_says_what_it_would_remove(tmp_path, evidence):
    repo = local_repository(tmp_path)
    for _ in range(3):
        old_run(repo, evidence, status="failed")
    before = Run.objects.count(), Stage.objects.count(), len(list(evidence.iterdir()))
    said = prune("--older-than", "30", "--dry-run")
    assert "acme/web: would remove 3 run(s) older than 30 day(s) and 3 evidence" in said
    assert (Run.objects.count(), Stage.objects.count(), len(list(evidence.iterdir()))) == before


@pytest.mark.django_db
@pytest.mark.parametrize("batch", ["1", "2", "3", "7", "1000"])
def test_batches_page_through_runs_of_the_same_instant(tmp_path, evidence, batch):
    repo = local_repository(tmp_path)
    instant = timezone.now() - timedelta(days=90)
    runs = [RunFactory(repository=repo, status="failed") for _ in range(7)]
    kept = RunFactory(repository=repo, status="running")
    Run.objects.update(created_at=instant)  # one instant: the keyset's tie-break is the id
    said = prune("--older-than", "30", "--batch-size", batch)
    assert f"removed {len(runs)} run(s)" in said
    assert f"in {-(-len(runs) // int(batch))} batch(es)" in said
    assert list(Run.objects.values_list("pk", flat=True)) == [kept.pk]


@pytest.mark.django_db
def test_pruned_runs_leave_the_daily_rollups_and_the_others_stay(tmp_path, evidence):
    repo = local_repository(tmp_path, retention_days=30)
    old, old_failed = old_run(repo, evidence), old_run(repo, evidence, status="failed")
    kept = RunFactory(repository=repo, status="passed")
    transitions.create_stages(kept)
    now = timezone.now()
    Run.objects.update(started_at=now - timedelta(seconds=50), finished_at=now)
    Stage.objects.update(status="passed", started_at=now - timedelta(seconds=40), finished_at=now)
    RunCost.objects.update(input_tokens=100, cost_usd=Decimal("0.01"))
    RunCost.objects.create(run=kept, agent="crawler", provider="offline", model="rules")
    transitions.roll_up([old.pk, old_failed.pk, kept.pk])  # as each run's end did
    passed = RunDay.objects.get(repository=repo, status="passed")
    assert (passed.runs, passed.input_tokens, passed.cost_usd) == (2, 100, Decimal("0.01"))
    assert "removed 2 run(s)" in prune()
    passed.refresh_from_db()
    assert (passed.runs, passed.input_tokens, passed.cost_usd) == (1, 0, 0)  # kept's own
    assert not RunDay.objects.filter(status="failed").exists()  # counted no run any more
    stages = StageDay.objects.filter(stage="crawl_repo")
    assert set(stages.values_list("repository_id", "stages")) == {(repo.pk, 1), (None, 1)}


@pytest.mark.django_db
def test_repositories_without_a_retention_keep_everything(tmp_path, evidence, settings):
    repo = local_repository(tmp_path)
    other = RepositoryFactory(full_name="acme/api", retention_days=5)
    old_run(repo, evidence, status="failed")
    gone = old_run(other, evidence, status="failed", days=6)
    said = prune()
    assert "acme/web: no retention set, every run kept" in said
    assert not Run.objects.filter(pk=gone.pk).exists() and Run.objects.count() == 1
    settings.AMTP_RETENTION_DAYS = 30  # the default now covers acme/web
    assert "acme/web: removed 1 run(s) older than 30 day(s)" in prune()


@pytest.mark.django_db
def test_when_the_host_cannot_list_open_pull_requests_every_run_with_one_stays(evidence):
    repo = RepositoryFactory(full_name="acme/gone", host="local", local_path="/nonexistent/x")
    with_pr = old_run(repo, evidence, pr=12)
    old_run(repo, evidence, status="failed")
    said = prune("--older-than", "30")
    assert "could not list the open pull requests" in said
    assert "removed 1 run(s)" in said
    assert list(Run.objects.values_list("pk", flat=True)) == [with_pr.pk]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--older-than", "0"], "--older-than"),
        (["--older-than", "-5"], "--older-than"),
        (["--older-than", "1e3"], "--older-than"),
        (["--older-than", "99999999"], "--older-than"),
        (["--batch-size", "0"], "--batch-size"),
        (["--batch-size", "1000000"], "--batch-size"),
        (["--batch-size", "ten"], "--batch-size"),
        (["--repository", "acme/../web"], "--repository"),
        (["--repository", "nobody/none"], "--repository"),
    ],
)
def test_bad_arguments_are_refused_naming_the_flag_and_change_nothing(
    tmp_path, evidence, args, flag
):
    repo = local_repository(tmp_path, retention_days=1)
    old_run(repo, evidence, status="failed")
    with pytest.raises(CommandError, match=f"^{flag}: "):
        prune(*args)
    assert Run.objects.count() == 1 and len(list(evidence.iterdir())) == 1


def _rollup_source() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'amtp_rollup_runs'")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_only_taking_runs_out_looks_for_emptied_rollup_rows_and_0025_reverses():
    """A run's end adds to the rollups and cannot empty a row, so its rollup deletes nothing
    and reads no other row (0024 scanned every stage_days row: ~100 ms a run's end at a
    million runs); each delete is guarded by ``sign < 0``. 0025 goes back to 0024's function."""
    assert _rollup_source().count("sign < 0") == 3
    executor = MigrationExecutor(connection)
    executor.migrate([("runs", "0024_rollups_forget_pruned_runs")])
    try:
        assert "sign < 0" not in _rollup_source() and "DELETE FROM stage_days" in _rollup_source()
    finally:  # the next tests of this database expect every migration applied
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert _rollup_source().count("sign < 0") == 3
