"""Reads of a run that several surfaces share (API, admin, context document, CLI): one query
each, so the surfaces show the same stages and artifacts in the same order."""

from __future__ import annotations

import functools
import json

from django.db import connection
from django.db.models import F, Func, IntegerField, QuerySet, TextField
from django.db.models.functions import Cast

from amtp_site import rows
from repositories.login import recipe_of
from repositories.models import Repository
from runs.models import Artifact, ArtifactKind, Run, Stage
from verification.coverage import coverage_map
from verification.login import signup_of


class OctetLength(Func):
    function = "octet_length"
    output_field = IntegerField()


def artifact_size():
    """Bytes of an artifact's JSON, computed by PostgreSQL so the content never leaves it."""
    return OctetLength(Cast(F("content"), TextField()))


def run_artifacts(run: Run, *, content: bool = False) -> QuerySet[Artifact]:
    """The run's artifacts, oldest first, each with ``size``; ``content`` and ``meta`` (can be
    megabytes) stay in PostgreSQL unless asked for."""
    artifacts = run.artifacts.annotate(size=artifact_size()).order_by("created_at")
    return artifacts if content else artifacts.defer("content", "meta")


def run_stages(run: Run) -> list[Stage]:
    """The run's stages in pipeline order."""
    return list(run.stages.order_by("position"))


def failure_report(run: Run) -> dict | None:
    """The content of the run's failure report, if it failed with one."""
    return (
        run.artifacts.filter(kind=ArtifactKind.FAILURE_REPORT)
        .values_list("content", flat=True)
        .first()
    )


def verification_summary(run: Run) -> dict | None:
    """Status, reason, target URL and totals of the run's verification report (the test
    files and per-test rows stay in PostgreSQL)."""
    row = (
        run.artifacts.filter(kind=ArtifactKind.VERIFICATION_REPORT)
        .values("content__status", "content__reason", "content__target_url", "content__totals")
        .first()
    )
    if row is None:
        return None
    return {key.removeprefix("content__"): value for key, value in row.items()}


REPORT_FIELDS = (
    "status",
    "reason",
    "target_url",
    "totals",
    "tests",
    "tool_versions",
    "timings",
    "test_data",
)


def app_map(run: Run) -> dict | None:
    """The run's app map (ExploreApp), or None."""
    found = run.artifacts.filter(kind=ArtifactKind.APP_MAP).values_list("content", flat=True)
    return found.first()


def signed_up_map(repository) -> dict | None:
    """The latest app map of ``repository``'s runs whose exploration signed up and signed in
    (a maintenance run or a check explores nothing: their tests sign up as that run's did)."""
    found = Artifact.objects.filter(
        run__repository=repository, kind=ArtifactKind.APP_MAP, content__signup__signed_in=True
    )
    return found.order_by("-created_at").values_list("content", flat=True).first()


def evidence_names(run: Run) -> set[str]:
    """Every evidence file the run's reports list (verification evidence, the app map's
    screenshots), by its path under the run's evidence folder."""
    found = dict(
        run.artifacts.filter(kind__in=[ArtifactKind.VERIFICATION_REPORT, ArtifactKind.APP_MAP])
        .order_by()
        .values_list("kind", "content")
    )
    tests = (found.get(ArtifactKind.VERIFICATION_REPORT) or {}).get("tests", [])
    pages = (found.get(ArtifactKind.APP_MAP) or {}).get("pages", [])
    listed = {item["path"] for test in tests for item in test["evidence"]}
    return listed | {page["screenshot"] for page in pages if page["screenshot"]}


def verification_report(run: Run) -> dict | None:
    """The run's verification report without its file contents (for the run page)."""
    row = (
        run.artifacts.filter(kind=ArtifactKind.VERIFICATION_REPORT)
        .values(*(f"content__{name}" for name in REPORT_FIELDS))
        .first()
    )
    if row is None:
        return None
    return {key.removeprefix("content__"): value for key, value in row.items()}


# What the coverage map reads of each artifact, projected by PostgreSQL: not the crawl's file
# tree, the pages' snapshots nor the tests' errors and evidence.
_COVERAGE_SQL = """
SELECT kind, CASE kind
  WHEN 'repo_crawler_output' THEN jsonb_build_object('detected_stack', content->'detected_stack')
  WHEN 'app_map' THEN jsonb_build_object('target_url', content->'target_url', 'pages', (
    SELECT coalesce(jsonb_agg(jsonb_build_object('path', p->'path', 'status', p->'status')), '[]')
    FROM jsonb_array_elements(content->'pages') p))
  WHEN 'test_engineer_output' THEN jsonb_build_object('files', content->'files')
  ELSE jsonb_build_object(
    'status', content->'status', 'target_url', content->'target_url', 'files', content->'files',
    'tests', (
      SELECT coalesce(jsonb_agg(jsonb_build_object(
        'file', t->'file', 'title', t->'title', 'status', t->'status')), '[]')
      FROM jsonb_array_elements(content->'tests') t))
  END
FROM artifacts WHERE run_id = %s AND kind = ANY(%s)
"""
_COVERAGE_KINDS = [
    ArtifactKind.REPO_CRAWLER_OUTPUT,
    ArtifactKind.APP_MAP,
    ArtifactKind.TEST_ENGINEER_OUTPUT,
    ArtifactKind.VERIFICATION_REPORT,
]


def coverage(run: Run) -> dict | None:
    """The run's coverage map (verification.coverage), or None before the crawl is stored."""
    with connection.cursor() as cursor:
        cursor.execute(_COVERAGE_SQL, [str(run.run_id), [str(k) for k in _COVERAGE_KINDS]])
        found = {kind: _json(content) for kind, content in cursor.fetchall()}
    if ArtifactKind.REPO_CRAWLER_OUTPUT not in found:
        return None
    app_map = found.get(ArtifactKind.APP_MAP)
    repository = run.repository if run.repository_id else None
    session = bool(repository and recipe_of(repository)) or bool(signup_of(app_map))
    return coverage_map(*(found.get(kind) for kind in _COVERAGE_KINDS), session=session)


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


@functools.cache
def _runs_with_repository_sql() -> str:
    return (
        f"SELECT {rows.select_list(Run)}, {rows.select_list(Repository)} FROM runs "
        "JOIN repositories ON repositories.id = runs.repository_id "
        "WHERE runs.run_id = ANY(%s::uuid[])"
    )


def runs_with_repository(run_ids) -> list[Run]:
    """The runs with their repositories (what ``select_related("repository")`` gives), from one
    precompiled statement: the worker loads a run once per stage, and compiling the ORM's join
    cost more CPU than the rest of some stages' bookkeeping. Runs that do not exist are left
    out."""
    with connection.cursor() as cursor:
        cursor.execute(_runs_with_repository_sql(), [[str(run_id) for run_id in run_ids]])
        found = cursor.fetchall()
    split = len(rows.fields(Run))
    runs = []
    for row in found:
        run = rows.load(Run, row[:split])
        run.repository = rows.load(Repository, row[split:])
        runs.append(run)
    return runs


def run_with_repository(run_id) -> Run:
    """The run with its repository (runs_with_repository); raises Run.DoesNotExist."""
    for run in runs_with_repository([run_id]):
        return run
    raise Run.DoesNotExist(f"run {run_id} does not exist")


def pull_request(run: Run) -> dict | None:
    """The content of the run's ``pull_request`` artifact, or None before it is opened."""
    found = run.artifacts.filter(kind=ArtifactKind.PULL_REQUEST).order_by()
    return found.values_list("content", flat=True).first()


def run_app(run: Run) -> dict[str, object]:
    """The app a run verifies against, where that came from, and the hosts only it may
    reach: what the run page says, so "Run again" is seen to reach the same app. A run
    that boots its own app: "started by AMTP" (``booted``), from the recipe named."""
    booted = False
    if run.target_url:
        source = "this run's target URL"
    elif run.repository.preview_url:
        source = "the repository's preview URL"
    elif (boot := app_boot(run)) and boot["status"] == "booted":
        source, booted = boot["source"], True
    else:
        source = ""
    url = run.target_url or run.repository.preview_url
    return {"url": url, "source": source, "booted": booted, "hosts": list(run.allowed_hosts)}


def app_boot(run: Run) -> dict | None:
    """The run's own app as BootApp left it: its ``app_boot`` artifact (the recipe used and
    where it came from, install and boot times, the scrubbed log tail; or the error), else
    its failed stage's error (a boot failure that ended the run stores no artifact). None
    when the run did not boot its app (a target URL, a preview) or has not got that far."""
    content = (
        run.artifacts.filter(kind=ArtifactKind.APP_BOOT).values_list("content", flat=True).first()
    )
    if content is None:
        failed = run.stages.filter(name=Stage.Name.BOOT_APP, status=Stage.Status.FAILED)
        row = failed.values("error_type", "error_message").first()
        if row is None:
            return None
        content = {
            "status": "failed",
            "error": {"error": row["error_type"], "message": row["error_message"]},
        }
    recipe, error = content.get("recipe"), content.get("error") or {}
    return {
        "status": content["status"],
        "source": recipe["source"] if recipe else "",
        "recipe": recipe,
        "install_s": content.get("install_s"),
        "boot_s": content.get("boot_s"),
        "dependencies_from_cache": content.get("dependencies_from_cache"),
        "log_tail": content.get("log_tail", ""),
        "error": error.get("error", ""),
        "message": error.get("message", ""),
    }
