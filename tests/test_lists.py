"""Lists that stay fast on big tables (amtp_site.lists, amtp_site.pagination): the API's cursor
pages, counts that never run COUNT(*) over a whole table, and indexes the plans can use.
The figures at 1,000,000 runs are scripts/bench_lists.py's (docs/benchmarks.md)."""

import base64
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from amtp_site import lists
from amtp_site.pagination import Position
from approvals.models import Approval
from runs.models import Artifact, Run
from tests import api_support
from tests.admin_helpers import APPROVALS, ARTIFACTS, RUNS, listed
from tests.api_support import assert_problem
from tests.factories import ApprovalFactory, ArtifactFactory, RepositoryFactory, RunFactory

pytestmark = pytest.mark.django_db

client = api_support.client
make_token = api_support.make_token
AUDIT = "/admin/admin/logentry/"


def _runs(count: int, *, same_time_every: int = 3, **fields) -> list[Run]:
    """``count`` runs; every ``same_time_every`` of them share one created_at."""
    repo = RepositoryFactory(full_name="acme/lists")
    base = timezone.now() - timedelta(hours=1)
    runs = [
        Run(
            repository=repo,
            repo_full_name=repo.full_name,
            ref=f"branch-{i}",
            base_branch="main",
            depth_level="core",
            target_framework="playwright",
            **fields,
        )
        for i in range(count)
    ]
    runs = Run.objects.bulk_create(runs)
    for i, run in enumerate(runs):
        run.created_at = base + timedelta(seconds=i // same_time_every)
    Run.objects.bulk_update(runs, ["created_at"])
    return runs


def _newest_first(runs) -> list[str]:
    return [str(r.run_id) for r in sorted(runs, key=lambda r: (r.created_at, r.run_id))[::-1]]


def _walk(client, limit: int, **params) -> tuple[list[str], list[dict]]:
    ids, pages, cursor = [], [], None
    while True:
        query = {"limit": limit, **params, **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/runs", query).json()
        pages.append(page)
        ids += [item["run_id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            return ids, pages


# --- the API's cursor --------------------------------------------------------------------


def test_walking_the_cursor_gives_every_run_once_in_order_despite_equal_timestamps(client):
    runs = _runs(23, same_time_every=4)
    ids, pages = _walk(client, 5)
    assert ids == _newest_first(runs)  # none missed, none twice, ties broken by run_id
    assert len(pages) == 5 and [len(p["items"]) for p in pages] == [5, 5, 5, 5, 3]
    assert all(p["count"] == 23 and p["count_exact"] for p in pages)


def test_a_cursor_walk_is_stable_while_runs_are_added(client):
    old = _runs(12)
    first = client.get("/api/runs", {"limit": 5}).json()
    newer = _runs(6)  # created after the walk began: newer than every run seen
    for run in newer:
        Run.objects.filter(pk=run.pk).update(created_at=timezone.now())
    rest, _ = _walk(client, 5, cursor=first["next_cursor"])
    assert [i["run_id"] for i in first["items"]] + rest == _newest_first(old)


def test_a_cursor_walk_keeps_the_filters(client):
    runs = _runs(9, status="failed") + _runs(5, status="passed")
    ids, _ = _walk(client, 2, status="failed")
    assert ids == _newest_first(runs[:9])


def test_offset_pages_still_work_and_hand_over_to_the_cursor(client):
    runs = _runs(10)
    expected = _newest_first(runs)
    page = client.get("/api/runs", {"limit": 3, "offset": 3}).json()
    assert [i["run_id"] for i in page["items"]] == expected[3:6]
    rest, _ = _walk(client, 3, cursor=page["next_cursor"])
    assert rest == expected[6:]
    last = client.get("/api/runs", {"limit": 3, "offset": 9}).json()
    assert len(last["items"]) == 1 and last["next_cursor"] is None


def _b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


NOW = "2026-01-01T00:00:00+00:00"
KEY = (
    "1dface2b-da4c-43ae-ac80-4ae308c7b9d3"  # fixed: pytest-xdist workers must collect the same ids
)


@pytest.mark.parametrize(
    "cursor",
    [
        "",  # empty
        "no spaces or +/ allowed",
        "A" * 201,  # longer than any cursor this API gives out
        "A",  # not base64 at all (a single leftover character)
        _b64("not json"),
        _b64(b"\xff\xfe{"),  # not UTF-8
        _b64(json.dumps([NOW, KEY])),
        _b64(json.dumps({"t": NOW})),
        _b64(json.dumps({"t": NOW, "k": KEY, "extra": 1})),
        _b64(json.dumps({"t": "yesterday", "k": KEY})),
        _b64(json.dumps({"t": "2026-01-01T00:00:00", "k": KEY})),  # no offset: ambiguous
        _b64(json.dumps({"t": "0001-01-01T00:00:00+14:00", "k": KEY})),  # before year 1 in UTC
        _b64(json.dumps({"t": "10000-01-01T00:00:00+00:00", "k": KEY})),
        _b64(json.dumps({"t": NOW, "k": "not-a-uuid"})),
        _b64(json.dumps({"t": 1e308, "k": KEY})),
        _b64(json.dumps({"t": NOW, "k": KEY}) + "\x00"),
    ],
)
def test_hostile_cursors_are_422_naming_the_cursor(client, cursor):
    _runs(3)
    body = assert_problem(client.get("/api/runs", {"cursor": cursor}), 422, "validation-error")
    assert body["errors"][0]["field"] == "cursor" and body["errors"][0]["location"] == "query"


def test_a_cursor_with_an_offset_is_422_naming_the_offset(client):
    cursor = Position(t=datetime.now(UTC), k=uuid.uuid4()).encode()
    body = assert_problem(client.get("/api/runs", {"cursor": cursor, "offset": 5}), 422)
    assert body["errors"][0]["field"] == "offset"


def test_a_forged_but_well_formed_cursor_is_just_a_position(client):
    runs = _runs(4)
    cursor = Position(t=datetime(2000, 1, 1, tzinfo=UTC), k=uuid.uuid4()).encode()
    assert client.get("/api/runs", {"cursor": cursor}).json()["items"] == []
    cursor = Position(t=datetime(2999, 1, 1, tzinfo=UTC), k=uuid.uuid4()).encode()
    items = client.get("/api/runs", {"cursor": cursor}).json()["items"]
    assert [i["run_id"] for i in items] == _newest_first(runs)


def test_the_approvals_api_pages_by_cursor_too(client):
    approvals = [ApprovalFactory(decision="approved", decided_at=timezone.now()) for _ in range(5)]
    seen, cursor = [], None
    while True:
        page = client.get("/api/approvals", {"limit": 2, **({"cursor": cursor} if cursor else {})})
        body = page.json()
        seen += [a["approval_id"] for a in body["items"]]
        if not (cursor := body["next_cursor"]):
            break
    assert sorted(seen) == sorted(str(a.approval_id) for a in approvals) and len(seen) == 5


# --- counts ------------------------------------------------------------------------------


def _no_full_count(queries) -> None:
    counts = [q["sql"] for q in queries if "COUNT(" in q["sql"].upper()]
    assert counts, "the page counts its rows somehow"
    assert all("LIMIT" in sql for sql in counts), counts  # bounded: never the whole table


def test_above_the_exact_bound_the_api_count_is_an_estimate_without_count_star(client, monkeypatch):
    _runs(12)
    monkeypatch.setattr(lists, "EXACT_COUNT_UP_TO", 5)
    with CaptureQueriesContext(connection) as ctx:
        page = client.get("/api/runs", {"limit": 4}).json()
    assert page["count_exact"] is False and page["count"] > 5
    _no_full_count(ctx.captured_queries)
    assert any(q["sql"].startswith("EXPLAIN") for q in ctx.captured_queries)
    assert len(ctx.captured_queries) <= 10


def _admin_data(user):
    runs = _runs(30, status="passed")
    for run in runs[:12]:
        ArtifactFactory(run=run)
        approval = ApprovalFactory(run=run, decision="approved", decided_at=timezone.now())
        LogEntry.objects.log_actions(user.pk, [approval], CHANGE, change_message="Approved")


@pytest.mark.parametrize(
    "model,url,params",
    [
        (Run, RUNS, {}),
        (Run, RUNS, {"status__exact": "passed"}),
        (Run, RUNS, {"q": "acme/li"}),
        (Run, RUNS, {"p": "3"}),
        (Artifact, ARTIFACTS, {}),
        (Approval, APPROVALS, {"decision": "all"}),
        (LogEntry, AUDIT, {}),
    ],
)
def test_admin_lists_never_count_the_whole_table(
    admin_client, admin_user, monkeypatch, model, url, params
):
    _admin_data(admin_user)
    monkeypatch.setattr(lists, "EXACT_COUNT_UP_TO", 5)
    monkeypatch.setattr(admin.site._registry[model], "list_per_page", 4)
    with CaptureQueriesContext(connection) as ctx:
        response = admin_client.get(url, params)
    assert response.status_code == 200 and len(response.context["cl"].result_list) == 4
    _no_full_count(ctx.captured_queries)
    assert len(ctx.captured_queries) <= 10
    assert "about " in response.content.decode()  # the count shown is an estimate


def test_admin_deep_pages_skip_rows_by_key_only(admin_client, monkeypatch):
    runs = _runs(30)
    monkeypatch.setattr("runs.admin.runs.RunAdmin.list_per_page", 10)
    with CaptureQueriesContext(connection) as ctx:
        response = admin_client.get(RUNS, {"p": "2"})
    assert listed(response) == {uuid.UUID(i) for i in _newest_first(runs)[10:20]}
    page_query = next(q["sql"] for q in ctx.captured_queries if "OFFSET 10" in q["sql"])
    assert page_query.count("SELECT") == 2  # the offset is walked in a subquery of keys


def test_admin_search_by_prefix_of_run_id_repository_ref_and_requester(admin_client):
    other = RepositoryFactory(full_name="globex/shop")
    run = RunFactory(repository=other, repo_full_name=other.full_name, ref="release/2.0")
    RunFactory(requested_by="alice")
    for term in [
        str(run.run_id)[:6],
        str(run.run_id).upper(),
        "GLOBEX/",
        "release/2",
        '"globex/shop"',
    ]:
        assert listed(admin_client.get(RUNS, {"q": term})) == {run.pk}, term
    assert listed(admin_client.get(RUNS, {"q": "shop"})) == set()  # a prefix, not a substring


# --- indexes -----------------------------------------------------------------------------


# Each filter value asked for is rare among 5,000 rows, and the tables are analysed: a plan
# that does not use the filter's own index walks far more rows, so the planner prefers it.
BIG_TABLES = """
INSERT INTO runs (run_id, repository_id, repo_full_name, ref, commit_sha, base_branch,
  target_url, base_sha, depth_level, target_framework, status, trigger, requested_by,
  head_branch, pr_url, error_type, error_message, created_at)
SELECT gen_random_uuid(), %(repo)s, 'acme/lists', 'main', '', 'main', '', '',
  CASE WHEN g %% 100 = 0 THEN 'deep' ELSE 'core' END,
  CASE WHEN g %% 100 = 1 THEN 'maestro' ELSE 'playwright' END,
  CASE WHEN g %% 100 = 2 THEN 'failed' ELSE 'passed' END,
  CASE WHEN g %% 100 = 3 THEN 'cli' ELSE 'api' END,
  'bob', '', '', '', '', now() - g * interval '1 second'
FROM generate_series(1, 5000) g;
INSERT INTO stages (stage_id, run_id, name, position, status, attempts, error_type,
  error_message, note)
SELECT gen_random_uuid(), run_id, 'create_pull_request', 4, 'passed', 1, '', '', ''
FROM runs;
INSERT INTO artifacts (artifact_id, run_id, kind, schema_id, content, meta, created_at)
SELECT gen_random_uuid(), run_id,
  CASE WHEN status = 'failed' THEN 'failure_report' ELSE 'repo_crawler_output' END, 'x',
  '{}', '{}', created_at
FROM runs;
INSERT INTO approvals (approval_id, run_id, stage_id, decision, approver, comment,
  decided_by, decided_at, decision_comment, created_at)
SELECT gen_random_uuid(), run_id, stage_id,
  CASE WHEN pending THEN 'pending' ELSE 'approved' END,
  CASE WHEN target_framework = 'maestro' THEN 'policy' ELSE 'branch-protection' END, '',
  CASE WHEN pending THEN '' ELSE 'bob' END,
  CASE WHEN pending THEN NULL ELSE now() END, '', created_at
FROM (
  -- One run in five held: enough that a page of them comes from the page index, not from
  -- sorting every pending row (with one in a hundred the planner may rightly prefer that).
  SELECT run_id, stage_id, target_framework, created_at,
    extract(second FROM created_at)::int %% 5 = 0 AS pending
  FROM runs JOIN stages USING (run_id)
) held;
ANALYZE runs; ANALYZE artifacts; ANALYZE approvals;
"""


@pytest.fixture
def big_tables():
    repo = RepositoryFactory(full_name="acme/lists")
    with connection.cursor() as cursor:
        cursor.execute(BIG_TABLES, {"repo": repo.pk})


def _plan(queryset) -> str:
    return queryset.explain()


NEWEST = ("-created_at", "-pk")


# The framework and depth filters have no index of their own: runs_newest_page includes both
# columns, and at a million runs those pages meet their goal through it (scripts/bench_lists.py);
# a table this small is read whole instead.
INDEXED_LISTS = [
    (lambda: Run.objects.order_by(*NEWEST)[:50], "runs_newest_page"),
    (lambda: Run.objects.filter(status="failed").order_by(*NEWEST)[:50], "runs_status_page"),
    (
        lambda: Run.objects.filter(repo_full_name="a/b").order_by(*NEWEST)[:50],
        "runs_repo_full_name_page",
    ),
    (
        lambda: Run.objects.filter(repository_id=0).order_by(*NEWEST)[:50],
        "runs_repository_page",
    ),
    (lambda: Run.objects.filter(trigger="cli").order_by(*NEWEST)[:50], "runs_trigger_page"),
    (
        lambda: Run.objects.filter(repo_full_name__istartswith="globex").order_by(*NEWEST)[:50],
        "runs_repo_full_name_prefix",
    ),
    (lambda: Run.objects.filter(ref__istartswith="release/"), "runs_ref_prefix"),
    (
        lambda: Run.objects.filter(requested_by__istartswith="ali").order_by(*NEWEST)[:50],
        "runs_requested_by_prefix",
    ),
    (lambda: Artifact.objects.order_by(*NEWEST)[:50], "artifacts_newest_page"),
    (
        lambda: Artifact.objects.filter(kind="failure_report").order_by(*NEWEST)[:50],
        "artifacts_kind_page",
    ),
    (lambda: Approval.objects.order_by(*NEWEST)[:50], "approvals_newest_page"),
    (
        lambda: Approval.objects.filter(decision="pending").order_by(*NEWEST)[:50],
        "approvals_decision_page",
    ),
    (
        lambda: Approval.objects.filter(approver="policy").order_by(*NEWEST)[:50],
        "approvals_approver_page",
    ),
    (
        lambda: Approval.objects.filter(decided_by__istartswith="al"),
        "approvals_decided_by_prefix",
    ),
]


def test_every_selective_list_filter_and_search_has_an_index(big_tables):
    for queryset, index in INDEXED_LISTS:
        assert index in _plan(queryset()), (index, str(queryset().query))


def test_admin_pages_past_an_estimated_count_are_empty_not_errors(admin_client, monkeypatch):
    _runs(8)
    monkeypatch.setattr(lists, "EXACT_COUNT_UP_TO", 5)
    monkeypatch.setattr(admin.site._registry[Run], "list_per_page", 2)
    response = admin_client.get(RUNS, {"p": "100000"})
    assert response.status_code == 200 and listed(response) == set()


def test_a_list_narrowed_to_granted_repositories_stays_on_an_index(big_tables):
    """What repositories.access.restrict adds to a list (a literal id list) keeps the page on
    the repository's page index, as the admin's repository filter does."""
    from repositories import access
    from repositories.models import RepositoryGrant
    from tests.admin_helpers import staff

    viewer = staff()
    for name in ("acme/one", "acme/two"):
        RepositoryGrant.objects.create(
            repository=RepositoryFactory(full_name=name), user=viewer, role="viewer"
        )
    runs = access.restrict(Run.objects.order_by(*NEWEST), viewer, access.VIEW)[:50]
    assert '"repository_id" IN' in str(runs.query)
    assert "runs_repository_page" in _plan(runs), _plan(runs)
