"""RFC 9457 problem details: the one shape of every error the API answers with.

``{"type", "title", "status", "detail", "instance", "errors": [...]}`` as
``application/problem+json``. ``errors`` names the offending fields (``field``, ``location``,
``pointer``, ``detail``, ``type``) and is empty when no field is to blame.

A 5xx answer says a human sentence and a short ``error_id``, never internals (addresses,
exception text): those go to the log under the same error id, for the operator to find.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from http import HTTPStatus
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html
from django.utils.regex_helper import _lazy_re_compile
from django.views.debug import SafeExceptionReporterFilter
from ninja import Field, Schema

logger = logging.getLogger("amtp.errors")

CONTENT_TYPE = "application/problem+json"
# A relative reference with its full path (RFC 9457, section 3.1.1): it resolves on the AMTP
# that answered, whose page there says what the problem means; no host we do not own is named.
TYPE_BASE = "/api/problems/"

# Each problem type: what it means and what to do. ``GET /api/problems/<slug>`` shows it, and a
# test holds every slug the code answers with to this list.
PROBLEM_TYPES: dict[str, str] = {
    "validation-error": "A field broke a rule. `errors` names each field, where it was (body, "
    "query, path, header) and the rule. Correct those fields and send again: nothing changed.",
    "invalid-json": "The body is not JSON. Send `Content-Type: application/json` and a JSON "
    "object.",
    "unsupported-media-type": "The body's Content-Type is not one this endpoint reads: send "
    "`application/json`.",
    "payload-too-large": "The body is larger than the endpoint accepts; `detail` gives the limit.",
    "length-required": "The request has a body but no Content-Length: send one.",
    "unauthenticated": "No valid credentials: send `Authorization: Bearer <API token>` (or a "
    "CI's OpenID Connect token), or sign in to the admin.",
    "forbidden": "The credentials are valid but lack the right: a token scope or a role on the "
    "repository. `detail` names which.",
    "csrf-failed": "A session's unsafe request without its CSRF token: send the `X-CSRFToken` "
    "header, or use an API token.",
    "not-found": "No such resource, or none the caller may see.",
    "method-not-allowed": "The path exists but not with this HTTP method.",
    "run-conflict": "The run is not in a state that allows this (e.g. cancelling a run that has "
    "ended).",
    "approval-already-decided": "Someone decided this approval first; reload the run.",
    "idempotency-key-reused": "This Idempotency-Key was used with another request body: use a "
    "new key for a new request.",
    "rate-limited": "Too many requests: wait `retry_after` seconds (also the Retry-After header).",
    "bad-webhook": "The webhook's payload is not what the event promises.",
    "bad-signature": "The webhook's `X-Hub-Signature-256` is missing or does not match the "
    "repository's secret.",
    "webhook-secret-missing": "The repository has no webhook secret, so no delivery can be "
    "trusted: set one in the admin and at the host.",
    "host-unavailable": "The repository host (e.g. GitHub) did not answer; try again later.",
    "oidc-issuer-unavailable": "The OpenID Connect issuer of the presented token did not "
    "answer; try again later.",
    "orchestrator-unavailable": "Temporal did not answer; nothing was started. Try again "
    "later (the operator sees why in the log).",
    "internal-error": "AMTP failed. Quote `error_id` to the operator: the log has the details "
    "under it.",
    "http-error": "The request failed as its status says.",
}


class FieldError(Schema):
    field: str = Field(description="The field to blame, dotted for nested fields.")
    location: str = Field(description="body, query, path or header")
    pointer: str = Field(description="JSON Pointer into the request part, e.g. '#/ref'.")
    detail: str
    type: str


class ProblemOut(Schema):
    type: str = Field(examples=[TYPE_BASE + "validation-error"])
    title: str
    status: int
    detail: str
    instance: str
    errors: list[FieldError] = []
    error_id: str | None = Field(
        None, description="5xx only: quote it when reporting; the log has the details under it."
    )


class Problem(Exception):
    """Raise from a view (or map a domain error to it) to answer with a problem document."""

    def __init__(
        self,
        status: int,
        slug: str,
        detail: str,
        *,
        errors: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(detail)
        self.status, self.slug, self.detail = status, slug, detail
        self.errors = errors or []
        self.headers = headers or {}
        self.extensions = extensions

    def response(self, request: HttpRequest) -> HttpResponse:
        return problem_response(
            request,
            self.status,
            self.slug,
            self.detail,
            errors=self.errors,
            headers=self.headers,
            **self.extensions,
        )


def field_error(
    field: str, detail: str, *, location: str = "body", type: str = "invalid"
) -> dict[str, str]:
    pointer = "#/" + field.replace(".", "/") if field and field != location else "#"
    return {
        "field": field or location,
        "location": location,
        "pointer": pointer,
        "detail": detail,
        "type": type,
    }


def problem_document(
    status: int,
    slug: str,
    detail: str,
    instance: str,
    *,
    errors: list[dict[str, str]] | None = None,
    **extensions: Any,
) -> dict[str, Any]:
    return {
        "type": TYPE_BASE + slug,
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": instance,
        "errors": errors or [],
        **extensions,
    }


def problem_response(
    request: HttpRequest,
    status: int,
    slug: str,
    detail: str,
    *,
    errors: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
    cause: BaseException | None = None,
    **extensions: Any,
) -> HttpResponse:
    """The problem document. For a 5xx, ``cause`` (or the detail) is logged under a new
    ``error_id`` and only the id and ``detail`` — a sentence for humans — are answered."""
    if status >= 500:
        extensions["error_id"] = error_id = secrets.token_hex(6)
        logger.error(
            "error id %s: %s %s answered %s: %s",
            error_id,
            request.method,
            request.get_full_path(),
            status,
            cause if cause is not None else detail,
            exc_info=cause if status == 500 else None,
        )
    body = problem_document(
        status, slug, detail, request.get_full_path(), errors=errors, **extensions
    )
    response = HttpResponse(
        json.dumps(body, cls=DjangoJSONEncoder), status=status, content_type=CONTENT_TYPE
    )
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def problem_type_view(request: HttpRequest, slug: str) -> HttpResponse:
    """``GET /api/problems/<slug>``: what a problem type means, for whoever follows ``type``."""
    meaning = PROBLEM_TYPES.get(slug)
    if meaning is None:
        return problem_response(request, 404, "not-found", f"no problem type {slug!r}")
    page = format_html(
        "<!doctype html><title>AMTP problem: {0}</title><h1>{0}</h1><p>{1}</p>"
        '<p>Every API error is an RFC 9457 problem document: <a href="/api/docs">the API '
        "reference</a>.</p>",
        slug,
        meaning,
    )
    return HttpResponse(page, content_type="text/html; charset=utf-8")


def is_problem(response: HttpResponse) -> bool:
    return response.get("Content-Type", "").startswith(CONTENT_TYPE)


def documented(*statuses: int) -> dict[int, type[ProblemOut]]:
    """``response={...}`` entries for the problems an operation can answer with."""
    return dict.fromkeys(statuses, ProblemOut)


class CredentialsHidingFilter(SafeExceptionReporterFilter):
    """Django's filter for error reports, also hiding connection URLs and addresses (a
    ``DATABASE_URL`` carries the database password; Django's list does not catch it)."""

    hidden_settings = _lazy_re_compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|DSN|LOCATION|ADDRESS",
        flags=re.IGNORECASE,
    )
