"""The project API at ``/api`` (docs at ``/api/docs``): routers mounted by dotted path, and
every error — validation, auth, domain, routing, crash — answered as an RFC 9457 problem.

Domain errors are mapped to HTTP here, once; views raise them (or :class:`Problem`) freely.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, re_path
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from temporalio.service import RPCError

from access.auth import UNAUTHENTICATED, CsrfFailed, ScopeMissing
from access.oidc import OidcRefused, OidcUnavailable
from amtp_site.bodies import TOO_LARGE, LengthRequired
from amtp_site.problems import CONTENT_TYPE, Problem, field_error, is_problem, problem_response
from approvals.errors import ApprovalAlreadyDecided, ApprovalDecisionInvalid, SelfApprovalRefused
from runs.errors import (
    IdempotencyKeyReused,
    OrchestratorUnavailable,
    RateLimitExceeded,
    RunError,
    RunInputInvalid,
)

NOT_FOUND = "no such resource: {path}"
METHOD_NOT_ALLOWED = "{method} is not allowed here; allowed: {allowed}"
UNSUPPORTED_MEDIA_TYPE = (
    "the request body must be JSON (Content-Type: application/json), not {got!r}"
)
INVALID_JSON = "the request body is not valid JSON: {error}"
INVALID_INPUT = "the request has {count} invalid field(s): {fields}"
INTERNAL_ERROR = "the server failed to answer this request; the error was logged"
ORCHESTRATOR_DOWN = (
    "the orchestrator (Temporal) is unreachable; nothing was lost: send the same request again "
    "shortly"
)


class UnsupportedMediaType(ValueError):
    pass


class JsonParser(Parser):
    """Bodies are JSON, said so by their Content-Type (``application/json`` or ``…+json``)."""

    def parse_body(self, request: HttpRequest) -> Any:
        media_type = request.content_type or ""
        if media_type != "application/json" and not media_type.endswith("+json"):
            raise UnsupportedMediaType(media_type)
        return json.loads(request.body)


class ProblemAPI(NinjaAPI):
    """A NinjaAPI whose routing errors (unknown path, wrong method) are problems too, and
    whose OpenAPI document gives error responses their real media type."""

    @property
    def urls(self):
        patterns, app_name, namespace = super().urls
        wrapped = [
            URLPattern(p.pattern, _plain_errors_as_problems(p.callback), p.default_args, p.name)
            for p in patterns
        ]
        return [*wrapped, re_path(r"", _not_found, name="not-found")], app_name, namespace

    def get_openapi_schema(self, **kwargs):
        schema = super().get_openapi_schema(**kwargs)
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                for status, answer in operation.get("responses", {}).items():
                    if int(status) >= 400 and "application/json" in answer.get("content", {}):
                        answer["content"] = {CONTENT_TYPE: answer["content"]["application/json"]}
        return schema


def _plain_errors_as_problems(view):
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            response = view(request, *args, **kwargs)
        except Http404:
            return _not_found(request)
        if response.status_code == 405 and not is_problem(response):
            allowed = response.get("Allow", "")
            detail = METHOD_NOT_ALLOWED.format(method=request.method, allowed=allowed)
            return problem_response(
                request, 405, "method-not-allowed", detail, headers={"Allow": allowed}
            )
        return response

    return wrapped


@csrf_exempt
def _not_found(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    return problem_response(request, 404, "not-found", NOT_FOUND.format(path=request.path))


# --- the one mapping from errors to problems ---------------------------------------------


def _validation(request, exc: ValidationError) -> HttpResponse:
    errors = []
    for error in exc.errors:
        loc = [str(part) for part in error.get("loc", ())]
        location = loc[0] if loc else "body"
        # Body errors are located under the view's argument name: drop it.
        path = loc[2:] if location == "body" else loc[1:]
        # A validator's own ValueError is our sentence: pydantic prefixes it ("Value error, …");
        # django-ninja hands the ValueError over as its text.
        cause = (
            (error.get("ctx") or {}).get("error") if error.get("type") == "value_error" else None
        )
        errors.append(
            field_error(
                ".".join(path),
                str(cause) if cause else str(error.get("msg", "invalid")),
                location=location,
                type=str(error.get("type", "invalid")),
            )
        )
    fields = ", ".join(sorted({e["field"] for e in errors}))
    detail = INVALID_INPUT.format(count=len(errors), fields=fields)
    return problem_response(request, 422, "validation-error", detail, errors=errors)


def _http_error(request, exc: HttpError) -> HttpResponse:
    cause = exc.__cause__
    if isinstance(cause, UnsupportedMediaType):
        return problem_response(
            request, 415, "unsupported-media-type", UNSUPPORTED_MEDIA_TYPE.format(got=str(cause))
        )
    if isinstance(cause, RequestDataTooBig):
        return _too_large(request, cause)
    if cause is not None and exc.status_code == 400:
        return problem_response(request, 400, "invalid-json", INVALID_JSON.format(error=cause))
    return problem_response(request, exc.status_code, "http-error", exc.message)


def _unauthenticated(request, exc) -> HttpResponse:
    return problem_response(
        request,
        401,
        "unauthenticated",
        UNAUTHENTICATED,
        headers={"WWW-Authenticate": 'Bearer realm="amtp"'},
    )


def _oidc_refused(request, exc: OidcRefused) -> HttpResponse:
    # RFC 6750 §3.1: an invalid token is 401 with error="invalid_token".
    challenge = 'Bearer realm="amtp", error="invalid_token"'
    return problem_response(
        request, 401, "unauthenticated", str(exc), headers={"WWW-Authenticate": challenge}
    )


def _too_large(request, exc) -> HttpResponse:
    return problem_response(request, 413, "payload-too-large", TOO_LARGE)


def _internal(request, exc: Exception) -> HttpResponse:
    return problem_response(request, 500, "internal-error", INTERNAL_ERROR, cause=exc)


def _orchestrator_down(request, exc: Exception) -> HttpResponse:
    # The message names the Temporal address and the client's error: the log's, not the caller's.
    return problem_response(request, 503, "orchestrator-unavailable", ORCHESTRATOR_DOWN, cause=exc)


def _rate_limited(request, exc: RateLimitExceeded) -> HttpResponse:
    retry_after = exc.details["retry_after"]
    return problem_response(
        request,
        429,
        "rate-limited",
        exc.message,
        headers={"Retry-After": str(retry_after)},
        retry_after=retry_after,
    )


def _idempotency_key_reused(request, exc: IdempotencyKeyReused) -> HttpResponse:
    error = field_error("Idempotency-Key", exc.message, location="header")
    return problem_response(request, 422, "idempotency-key-reused", exc.message, errors=[error])


def _field_invalid(request, exc: ApprovalDecisionInvalid | RunInputInvalid) -> HttpResponse:
    error = field_error(exc.field, exc.message)
    return problem_response(request, 422, "validation-error", exc.message, errors=[error])


def _simple(status: int, slug: str, detail: str | None = None):
    def handler(request, exc) -> HttpResponse:
        return problem_response(request, status, slug, detail or str(exc))

    return handler


def install_problem_handlers(api: NinjaAPI) -> None:
    handlers = {
        Problem: lambda request, exc: exc.response(request),
        ValidationError: _validation,
        HttpError: _http_error,
        AuthenticationError: _unauthenticated,
        ScopeMissing: _simple(403, "forbidden"),
        OidcRefused: _oidc_refused,
        OidcUnavailable: _simple(503, "oidc-issuer-unavailable"),
        CsrfFailed: _simple(403, "csrf-failed"),
        Http404: _simple(404, "not-found", "not found"),
        ObjectDoesNotExist: _simple(404, "not-found", "not found"),
        RequestDataTooBig: _too_large,
        LengthRequired: _simple(411, "length-required"),
        RunError: _simple(409, "run-conflict"),
        OrchestratorUnavailable: _orchestrator_down,
        IdempotencyKeyReused: _idempotency_key_reused,
        RateLimitExceeded: _rate_limited,
        RPCError: _orchestrator_down,
        ApprovalAlreadyDecided: _simple(409, "approval-already-decided"),
        SelfApprovalRefused: _simple(403, "forbidden"),
        ApprovalDecisionInvalid: _field_invalid,
        RunInputInvalid: _field_invalid,
        Exception: _internal,
    }
    for exc_class, handler in handlers.items():
        api.add_exception_handler(exc_class, handler)


api = ProblemAPI(
    title="AMTP API",
    version=settings.AMTP_VERSION,
    description=(
        "Start and follow AMTP runs, read their artifacts and context document, decide held "
        "approvals. Authenticate with `Authorization: Bearer <API token>` (tokens are created "
        "in the admin, with scopes) or a staff session, which gets exactly its Django "
        "permissions. Errors are RFC 9457 problem details; a 5xx carries an `error_id` to "
        "quote."
    ),
    urls_namespace="api",
    parser=JsonParser(),
)
install_problem_handlers(api)
api.add_router("/runs", "runs.api.router")
api.add_router("/approvals", "approvals.api.router")
api.add_router("/costs", "reporting.api.costs.router")
api.add_router("/repositories", "reporting.api.health.router")
api.add_router("/webhooks", "triggers.api.router")
