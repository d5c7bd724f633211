"""``/api/runs``: start, list, inspect and cancel runs; read artifacts and the context document.

Writes go through ``runs.services`` (the same functions the admin and the launch form call).
"""

import logging
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import redis
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Field, Header, Query, Router, Schema, Status
from ninja.pagination import paginate
from pydantic import ConfigDict, field_validator

import schemas
from amtp_site.errors import SchemaValidationError
from amtp_site.pagination import Page
from amtp_site.problems import Problem, documented, field_error
from amtp_site.valkey_peek import window_peek
from repositories.models import DepthLevel, Framework, Repository
from repositories.refnames import ref_problem
from runs.admin.artifacts import artifact_size
from runs.auth import scoped
from runs.context import run_context
from runs.models import ArtifactKind, Run, RunStatus, Trigger
from runs.models_api import Scope
from runs.services import run_cancel, run_create, run_start

logger = logging.getLogger(__name__)
router = Router(tags=["runs"])

REPO_NOT_REGISTERED = "repository {name!r} is not registered in AMTP"
RATE_LIMITED = (
    "{repo} already started {count} runs in the last {window} s (limit {limit}); "
    "try again in {retry_after} s"
)
DATE_OUT_OF_RANGE = "date out of range"
NOT_ISO_DATE = "use an ISO 8601 date-time, e.g. 2025-01-15T10:30:00Z"
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
IDEMPOTENCY_KEY_REUSED = (
    "Idempotency-Key {key!r} was used for a different request (run {run_id}); use a new key"
)

# Printable, no whitespace or git-special characters (git check-ref-format, simplified).
REF_PATTERN = r"^[^\x00-\x20\x7f~^:?*\[\\]+$"
NO_CONTROL = r"^[^\x00-\x1f\x7f]*$"
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,150}$"


# --- schemas ------------------------------------------------------------------------------


class RunIn(Schema):
    model_config = ConfigDict(extra="forbid")

    repo_full_name: str = Field(
        min_length=3,
        max_length=200,
        pattern=r"^[^/\x00-\x20\x7f]+/[^/\x00-\x20\x7f]+$",
        description="A registered repository, owner/name.",
        examples=["acme/shop"],
    )
    ref: str | None = Field(
        None,
        min_length=1,
        max_length=255,
        pattern=REF_PATTERN,
        description="Branch or commit SHA (default: the default branch).",
    )
    depth_level: DepthLevel | None = Field(None, description="Default: the repository's.")
    target_framework: Framework | None = Field(None, description="Default: the repository's.")
    base_branch: str | None = Field(
        None,
        min_length=1,
        max_length=255,
        pattern=REF_PATTERN,
        description="PR base (default: the default branch).",
    )

    @field_validator("ref", "base_branch")
    @classmethod
    def _git_ref(cls, value: str | None) -> str | None:
        problem = ref_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value


class ApprovalOut(Schema):
    approval_id: uuid.UUID
    run_id: uuid.UUID
    stage: str = Field(description="The stage that waits, e.g. create_pull_request.")
    decision: str
    approver: str = Field(description="Who must decide: 'branch-protection' or 'policy'.")
    comment: str = Field(description="Why the run is held (GitHub's error body).")
    decided_by: str
    decided_at: datetime | None
    decision_comment: str
    created_at: datetime

    @staticmethod
    def resolve_stage(approval) -> str:
        return approval.stage.name


class StageOut(Schema):
    name: str
    status: str
    attempts: int
    started_at: datetime | None
    finished_at: datetime | None
    error_type: str
    error_message: str


class ArtifactSummaryOut(Schema):
    artifact_id: uuid.UUID
    kind: str
    schema_id: str
    size: int = Field(description="Bytes of the JSON content.")
    created_at: datetime


class ArtifactOut(ArtifactSummaryOut):
    content: Any
    meta: dict[str, Any]


class PullRequestOut(Schema):
    number: int | None
    url: str
    head_branch: str


class RunOut(Schema):
    run_id: uuid.UUID
    repo_full_name: str
    ref: str
    commit_sha: str
    base_branch: str
    base_sha: str
    depth_level: str
    target_framework: str
    status: str
    trigger: str
    requested_by: str
    pull_request: PullRequestOut | None
    error_type: str
    error_message: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    url: str

    @staticmethod
    def resolve_pull_request(run: Run) -> dict | None:
        if not run.pr_url:
            return None
        return {"number": run.pr_number, "url": run.pr_url, "head_branch": run.head_branch}

    @staticmethod
    def resolve_url(run: Run) -> str:
        return run_url(run)


class RunDetailOut(RunOut):
    stages: list[StageOut]
    artifacts: list[ArtifactSummaryOut]
    approvals: list[ApprovalOut]

    @staticmethod
    def resolve_stages(run: Run) -> list:
        return list(run.stages.order_by("position"))

    @staticmethod
    def resolve_artifacts(run: Run) -> list:
        return list(with_size(run.artifacts.order_by("created_at")))

    @staticmethod
    def resolve_approvals(run: Run) -> list:
        return list(run.approvals.select_related("stage").order_by("created_at"))


class RunFilters(Schema):
    status: RunStatus | None = None
    repository: str | None = Field(
        None, max_length=200, pattern=NO_CONTROL, description="owner/name"
    )
    framework: Framework | None = None
    trigger: Trigger | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None

    @field_validator("created_after", "created_before", mode="before")
    @classmethod
    def _iso(cls, value):
        if isinstance(value, str) and not ISO_DATE.match(value):
            raise ValueError(NOT_ISO_DATE)  # pydantic would read "1700000000" as a timestamp
        return value

    @field_validator("created_after", "created_before")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        """Naive means UTC; aware is converted to UTC (PostgreSQL bounds the offset)."""
        if value is None:
            return None
        try:
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        except OverflowError as exc:
            raise ValueError(DATE_OUT_OF_RANGE) from exc

    def apply(self, runs):
        lookups = {
            "status": self.status,
            "repo_full_name": self.repository,
            "target_framework": self.framework,
            "trigger": self.trigger,
            "created_at__gt": self.created_after,
            "created_at__lt": self.created_before,
        }
        return runs.filter(**{k: v for k, v in lookups.items() if v is not None})


# --- helpers ------------------------------------------------------------------------------


def run_url(run: Run) -> str:
    return reverse("api:run_detail", kwargs={"run_id": run.run_id})


def with_size(artifacts):
    return artifacts.annotate(size=artifact_size())


def _repository(name: str) -> Repository:
    repository = Repository.objects.filter(full_name=name).first()
    if repository is None:
        detail = REPO_NOT_REGISTERED.format(name=name)
        raise Problem(
            422,
            "validation-error",
            detail,
            errors=[field_error("repo_full_name", detail, type="not_registered")],
        )
    return repository


def _replay(run: Run, payload: RunIn, key: str) -> Run:
    """The run an earlier request with this Idempotency-Key created (same inputs only)."""
    asked = payload.model_dump(exclude_none=True)
    if any(str(getattr(run, name)) != str(value) for name, value in asked.items()):
        detail = IDEMPOTENCY_KEY_REUSED.format(key=key, run_id=run.run_id)
        raise Problem(
            422,
            "idempotency-key-reused",
            detail,
            errors=[field_error("Idempotency-Key", detail, location="header")],
        )
    if run.status == Run.Status.PENDING:
        run_start(run)  # the first request may have met 503: starting twice is one workflow
    return run


def _check_window(repository: Repository) -> None:
    """429 when the repository's run window is full; only looks, never takes a slot."""
    try:
        window = window_peek(
            repository.full_name,
            limit=repository.rate_limit_runs,
            window_seconds=repository.rate_limit_window_seconds,
        )
    except redis.RedisError as exc:  # the workflow checks the window again; do not fail here
        logger.warning("rate-limit peek for %s failed: %s", repository.full_name, exc)
        return
    if not window.allowed:
        detail = RATE_LIMITED.format(
            repo=repository.full_name,
            count=window.count,
            limit=repository.rate_limit_runs,
            window=repository.rate_limit_window_seconds,
            retry_after=window.retry_after,
        )
        raise Problem(
            429,
            "rate-limited",
            detail,
            headers={"Retry-After": str(window.retry_after)},
            retry_after=window.retry_after,
        )


def _schema_problem(exc: SchemaValidationError) -> Problem:
    errors = [
        field_error(v["path"].removeprefix("$.").removeprefix("$"), v["message"], type=v["rule"])
        for v in exc.violations
    ]
    return Problem(422, "validation-error", exc.message, errors=errors)


# --- operations ---------------------------------------------------------------------------


@router.post(
    "",
    response={
        200: RunDetailOut,
        201: RunDetailOut,
        **documented(400, 401, 403, 413, 415, 422, 429, 503),
    },
    auth=scoped(Scope.RUNS_WRITE),
    url_name="run_create",
    summary="Start a run",
)
def create_run(
    request: HttpRequest,
    response: HttpResponse,
    payload: RunIn,
    idempotency_key: str | None = Header(
        None,
        alias="Idempotency-Key",
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Retrying with the same key returns the same run instead of a new one.",
    ),
):
    """Start a run (201, ``Location``). Omitted fields default from the repository's settings.

    A retry with the same ``Idempotency-Key`` returns the run created the first time (200).
    """
    principal = request.auth
    repository = _repository(payload.repo_full_name)
    request_key = f"api:{principal.key}:{idempotency_key}" if idempotency_key else None
    runs = Run.objects.select_related("repository")
    existing = runs.filter(request_key=request_key).first() if request_key else None
    if existing is not None:
        run, status = _replay(existing, payload, idempotency_key), 200
    else:
        _check_window(repository)
        try:
            run = run_create(
                repository=repository,
                ref=payload.ref or "",
                depth_level=payload.depth_level or "",
                target_framework=payload.target_framework or "",
                base_branch=payload.base_branch or "",
                trigger=Run.Trigger.API,
                requested_by=principal.name,
                request_key=request_key,
            )
        except SchemaValidationError as exc:
            raise _schema_problem(exc) from exc
        status = 201
    response["Location"] = run_url(run)
    return Status(status, run)


@router.get(
    "",
    response={200: list[RunOut], **documented(401, 403, 422)},
    auth=scoped(Scope.RUNS_READ),
    url_name="run_list",
    summary="List runs",
)
@paginate(Page)
def list_runs(request: HttpRequest, filters: Query[RunFilters]):
    """Newest first; filter by status, repository, framework, trigger and creation time."""
    return filters.apply(Run.objects.all())


@router.get(
    "/{run_id}",
    response={200: RunDetailOut, **documented(401, 403, 404, 422)},
    auth=scoped(Scope.RUNS_READ),
    url_name="run_detail",
    summary="A run",
)
def get_run(request: HttpRequest, run_id: uuid.UUID):
    """The run with its stages, artifact summaries, approvals and pull request."""
    return get_object_or_404(Run, pk=run_id)


@router.get(
    "/{run_id}/artifacts/{kind}",
    response={200: ArtifactOut, **documented(401, 403, 404, 422)},
    auth=scoped(Scope.RUNS_READ),
    url_name="run_artifact",
    summary="An artifact of a run",
)
def get_artifact(request: HttpRequest, run_id: uuid.UUID, kind: ArtifactKind):
    """The artifact's validated content (verbatim) and its meta."""
    run = get_object_or_404(Run, pk=run_id)
    return get_object_or_404(with_size(run.artifacts.all()), kind=kind)


@router.post(
    "/{run_id}/cancel",
    response={202: RunDetailOut, **documented(401, 403, 404, 409, 422, 503)},
    auth=scoped(Scope.RUNS_WRITE),
    url_name="run_cancel",
    summary="Cancel a run",
)
def cancel_run(request: HttpRequest, run_id: uuid.UUID):
    """Ask the workflow to cancel (202); the run and its open stages become ``cancelled``."""
    run = get_object_or_404(Run, pk=run_id)
    run_cancel(run=run)
    run.refresh_from_db()
    return Status(202, run)


_CONTEXT_SCHEMA = {
    k: v
    for k, v in schemas.load("context/workflow_context").items()
    if k not in ("$schema", "examples")
}


@router.get(
    "/{run_id}/context",
    response={200: dict[str, Any], **documented(401, 403, 404, 422)},
    auth=scoped(Scope.RUNS_READ),
    url_name="run_context",
    summary="The run as a context document",
    openapi_extra={
        "responses": {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": _CONTEXT_SCHEMA}},
            }
        }
    },
)
def get_context(request: HttpRequest, run_id: uuid.UUID):
    """The run in the multi-agent context format (spec 004), validated against its schema."""
    return run_context(get_object_or_404(Run, pk=run_id))
