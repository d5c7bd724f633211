"""``POST /api/webhooks/github``: GitHub events start runs: a push starts a generation or a
maintenance run; a ``pull_request``, ``check_run`` ("Re-run") or ``deployment_status`` starts a
check run.

Order of checks: size (before reading); the secret (the repository's own, named by the
payload's ``repository.full_name``, else the global ``GITHUB_WEBHOOK_SECRET``); then
``X-Hub-Signature-256`` over the raw body (constant time), the delivery headers, the payload.
Nothing of the payload is trusted before the signature: it only chooses which secret must
have signed it, so a push for one repository signed with another's secret is refused. What a
verified delivery does is ``triggers.services``'. The answer is fast: rows are written,
nothing waits on Temporal.
"""

import hashlib
import hmac
import json
import re
import uuid
from urllib.parse import parse_qs

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.debug import sensitive_variables
from ninja import Router, Schema, Status
from pydantic import Field
from pydantic import ValidationError as PayloadInvalid

from amtp_site.bodies import read_body
from amtp_site.problems import Problem, documented, field_error
from runs.errors import PushNotChecked
from triggers.services import webhook_delivery_receive, webhook_secret_for

router = Router(tags=["webhooks"])

DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")
EVENT_NAME = re.compile(r"^[a-z_]{1,64}$")

NO_SECRET = (
    "no webhook secret applies to this delivery (the repository has none and "
    "GITHUB_WEBHOOK_SECRET is not configured): it cannot be verified, so it is not accepted"
)
TOO_LARGE = "webhook payloads are limited to {limit} bytes"
SIGNATURE_MISSING = "X-Hub-Signature-256 is missing: deliveries must be signed with the secret"
SIGNATURE_MISMATCH = "X-Hub-Signature-256 does not match the body: wrong secret or altered body"
BAD_HEADER = "header {name} is missing or malformed"
BAD_PAYLOAD = "the payload is not a JSON object"
BAD_EVENT = "the {event} payload is malformed ({count} problem(s))"


class WebhookOut(Schema):
    status: str = Field(description="pong, run_created, ignored or duplicate")
    delivery: str
    note: str = ""
    run_id: uuid.UUID | None = None


# --- signature ---------------------------------------------------------------------------


def signature_for(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_valid(secret: str, body: bytes, header: str) -> bool:
    """Constant-time comparison of ``X-Hub-Signature-256`` with the HMAC of the raw body."""
    given = header.encode("utf-8", errors="replace")
    return hmac.compare_digest(signature_for(secret, body).encode(), given)


# --- the endpoint --------------------------------------------------------------------------


def _read_body(request: HttpRequest) -> bytes:
    """At most the limit + 1 bytes are read, whatever Content-Length says, chunked or not."""
    limit = settings.AMTP_WEBHOOK_MAX_BYTES
    try:
        return read_body(request, limit)
    except RequestDataTooBig as exc:
        raise Problem(413, "payload-too-large", TOO_LARGE.format(limit=limit)) from exc


def _header(request: HttpRequest, name: str, pattern: re.Pattern) -> str:
    value = request.headers.get(name, "")
    if not pattern.match(value):
        detail = BAD_HEADER.format(name=name)
        raise Problem(
            400, "bad-webhook", detail, errors=[field_error(name, detail, location="header")]
        )
    return value


def _payload(request: HttpRequest, body: bytes) -> dict:
    try:
        if request.content_type == "application/x-www-form-urlencoded":
            body = parse_qs(body.decode(), strict_parsing=True)["payload"][0].encode()
        payload = json.loads(body)
    except (ValueError, KeyError) as exc:
        raise Problem(400, "bad-webhook", BAD_PAYLOAD) from exc
    if not isinstance(payload, dict):
        raise Problem(400, "bad-webhook", BAD_PAYLOAD)
    return payload


def _named_repository(request: HttpRequest, body: bytes) -> str:
    """The ``repository.full_name`` an unverified body claims, only to choose the secret that
    must have signed it ("" when it names none, like an organization's ping)."""
    try:
        repository = _payload(request, body).get("repository")
    except Problem:
        return ""  # judged after the signature, as every malformed body is
    name = repository.get("full_name") if isinstance(repository, dict) else None
    return name if isinstance(name, str) and len(name) <= 200 else ""


@router.post(
    "/github",
    response={200: WebhookOut, 201: WebhookOut, **documented(400, 403, 413, 503)},
    url_name="github_webhook",
    summary="GitHub webhook receiver",
)
@sensitive_variables("secret")  # an error report shows a frame's locals: not this one
def github_webhook(request: HttpRequest, response: HttpResponse):
    """Signed GitHub deliveries: ``ping`` is answered, a ``push`` to a watched branch of a
    registered repository starts a run (201), ``pull_request``, ``deployment_status`` and
    ``check_run`` may start a check run (201), everything else is acknowledged and ignored."""
    body = _read_body(request)
    secret = webhook_secret_for(_named_repository(request, body))
    if not secret:
        raise Problem(503, "webhook-secret-missing", NO_SECRET)
    signature = request.headers.get("X-Hub-Signature-256", "")
    if not signature:
        raise Problem(403, "bad-signature", SIGNATURE_MISSING)
    if not signature_valid(secret, body, signature):
        raise Problem(403, "bad-signature", SIGNATURE_MISMATCH)
    event = _header(request, "X-GitHub-Event", EVENT_NAME)
    delivery_id = _header(request, "X-GitHub-Delivery", DELIVERY_ID)
    payload = _payload(request, body)
    try:
        status, answer = webhook_delivery_receive(
            delivery_id=delivery_id, event=event, payload=payload
        )
    except PushNotChecked as exc:
        raise Problem(503, "host-unavailable", exc.message, cause=exc) from exc
    except PayloadInvalid as exc:
        errors = [
            field_error(".".join(map(str, e["loc"])), e["msg"], type=e["type"])
            for e in exc.errors()
        ]
        raise Problem(
            400, "bad-webhook", BAD_EVENT.format(event=event, count=len(errors)), errors=errors
        ) from exc
    if answer.get("run_id") and status == 201:
        response["Location"] = reverse("api:run_detail", kwargs={"run_id": answer["run_id"]})
    return Status(status, answer)
