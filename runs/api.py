"""``/api/runs``: start, list, inspect and cancel runs; read artifacts and the context document.

Writes go through ``runs.services`` (the same functions the admin and the launch form call);
the bodies are in ``runs.api_schemas``.
"""

import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Header, Query, Status

import schemas
from access.auth import (
    CANCEL_RUNS,
    READ_ARTIFACTS,
    READ_RUNS,
    START_RUNS,
    Access,
    Principal,
    scoped,
)
from access.routes import ApiRouter
from amtp_site.problems import Problem, documented, field_error
from repositories.models import Repository
from runs import selectors
from runs.api_schemas import (
    IDEMPOTENCY_KEY_PATTERN,
    ArtifactOut,
    RunDetailOut,
    RunFilters,
    RunIn,
    RunOut,
    run_url,
)
from runs.context import run_context
from runs.models import ArtifactKind, Run
from runs.services import run_cancel, run_create
from schemas.errors import SchemaValidationError

router = ApiRouter(tags=["runs"])

REPO_NOT_REGISTERED = "repository {name!r} is not registered in AMTP"


# What a submit reads of its repository (the defaults and the rate limit); any other field is
# read when first used.
_REPOSITORY = (
    "SELECT id, full_name, default_branch, default_depth_level, default_framework, "
    "rate_limit_runs, rate_limit_window_seconds, preview_url, allowed_hosts "
    "FROM repositories WHERE full_name = %s"
)


def _repository(name: str, principal: Principal) -> Repository:
    """The repository to start a run on: one the caller cannot see reads as unregistered;
    one they see but may not launch on is 403 naming the rule."""
    # Raw: the ORM took as long to compile this lookup as the rest of POST /api/runs' reads.
    for repository in Repository.objects.raw(_REPOSITORY, [name]):
        if principal.may(READ_RUNS, START_RUNS, obj=repository):
            principal.require_on(START_RUNS, repository, repository.full_name)
            return repository
    detail = REPO_NOT_REGISTERED.format(name=name)
    raise Problem(
        422,
        "validation-error",
        detail,
        errors=[field_error("repo_full_name", detail, type="not_registered")],
    )


def _schema_problem(exc: SchemaValidationError) -> Problem:
    errors = [
        field_error(v["path"].removeprefix("$.").removeprefix("$"), v["message"], type=v["rule"])
        for v in exc.violations
    ]
    return Problem(422, "validation-error", exc.message, errors=errors)


def _visible_run(request: HttpRequest, run_id: uuid.UUID, *also: Access) -> Run:
    """The run, if the caller may read it (or do one of ``also`` on its repository);
    otherwise 404, exactly as for a run that does not exist (a caller learns nothing of
    other repositories' runs)."""
    runs = request.auth.restrict(Run.objects.all(), READ_RUNS, *also)
    return get_object_or_404(runs, pk=run_id)


# --- operations ---------------------------------------------------------------------------


@router.post(
    "",
    response={
        200: RunDetailOut,
        201: RunDetailOut,
        **documented(400, 401, 403, 413, 415, 422, 429),
    },
    auth=scoped(START_RUNS),
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

    The run is stored ``pending`` and ``run_worker`` starts its workflow moments later, also
    when Temporal is briefly unreachable (it is started once Temporal answers).

    A retry with the same ``Idempotency-Key`` returns the run created the first time (200).
    """
    principal = request.auth
    try:
        run = run_create(
            repository=_repository(payload.repo_full_name, principal),
            ref=payload.ref or "",
            depth_level=payload.depth_level or "",
            target_framework=payload.target_framework or "",
            base_branch=payload.base_branch or "",
            target_url=payload.target_url or "",
            trigger=Run.Trigger.API,
            requested_by=principal.name,
            requester=principal.requester,
            request_key=idempotency_key,
            request_scope=f"api:{principal.key}",
            admit_at_submit=True,
            kind=payload.kind,
        )
    except SchemaValidationError as exc:
        raise _schema_problem(exc) from exc
    response["Location"] = run_url(run)
    return Status(201 if run.created else 200, run)


@router.page(RunOut, READ_RUNS, url_name="run_list", summary="List runs")
def list_runs(request: HttpRequest, filters: Query[RunFilters]):
    """Newest first; filter by status, repository, framework, trigger and creation time."""
    return filters.apply(request.auth.restrict(Run.objects.all(), READ_RUNS))


@router.read("/{run_id}", RunDetailOut, READ_RUNS, url_name="run_detail", summary="A run")
def get_run(request: HttpRequest, run_id: uuid.UUID):
    """The run with its stages, artifact summaries, approvals and pull request."""
    return _visible_run(request, run_id)


@router.read(
    "/{run_id}/artifacts/{kind}",
    ArtifactOut,
    READ_ARTIFACTS,
    url_name="run_artifact",
    summary="An artifact of a run",
)
def get_artifact(request: HttpRequest, run_id: uuid.UUID, kind: ArtifactKind):
    """The artifact's validated content (verbatim) and its meta."""
    run = _visible_run(request, run_id, READ_ARTIFACTS)
    request.auth.require_on(READ_ARTIFACTS, run, run.repo_full_name)
    return get_object_or_404(selectors.run_artifacts(run, content=True), kind=kind)


@router.post(
    "/{run_id}/cancel",
    response={202: RunDetailOut, **documented(401, 403, 404, 409, 422, 503)},
    auth=scoped(CANCEL_RUNS),
    url_name="run_cancel",
    summary="Cancel a run",
)
def cancel_run(request: HttpRequest, run_id: uuid.UUID):
    """Ask the workflow to cancel (202); the run and its open stages become ``cancelled``."""
    run = _visible_run(request, run_id, CANCEL_RUNS)
    request.auth.require_on(CANCEL_RUNS, run, run.repo_full_name)
    run_cancel(run=run, actor=request.auth.actor)
    run.refresh_from_db()
    return Status(202, run)


_CONTEXT_SCHEMA = {
    k: v
    for k, v in schemas.load("context/workflow_context").items()
    if k not in ("$schema", "examples")
}


@router.read(
    "/{run_id}/context",
    dict[str, Any],
    READ_RUNS,
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
    """The run in the multi-agent context format, validated against its schema."""
    return run_context(_visible_run(request, run_id))
