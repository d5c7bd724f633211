"""``POST /api/webhooks/github``: GitHub push events start runs.

Order of checks: size (before reading), a configured secret, ``X-Hub-Signature-256`` over the
raw body (constant time), the delivery headers, the payload. Each ``X-GitHub-Delivery`` is
recorded once (unique), so a redelivery finds its row and creates nothing; the run's
``request_key`` derives from the delivery id as well. The answer is fast: the run row is
created and the workflow started, nothing more.
"""

import hashlib
import hmac
import json
import re
import uuid
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import parse_qs

import redis
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from ninja import Router, Schema, Status
from pydantic import BaseModel, Field
from pydantic import ValidationError as PayloadInvalid

from amtp_site import valkey
from amtp_site.bodies import read_body
from amtp_site.problems import Problem, documented, field_error
from repositories.models import Repository
from runs.errors import RunInputInvalid
from runs.models import Run
from runs.models_api import DeliveryOutcome, WebhookDelivery
from runs.services import run_create, run_enqueue, target_address_check

router = Router(tags=["webhooks"])

ZERO_SHA = re.compile(r"^0+$")
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")
EVENT_NAME = re.compile(r"^[a-z_]{1,64}$")

NO_SECRET = (
    "GITHUB_WEBHOOK_SECRET is not configured: webhook deliveries cannot be verified, so none "
    "is accepted"
)
TOO_LARGE = "webhook payloads are limited to {limit} bytes"
SIGNATURE_MISSING = "X-Hub-Signature-256 is missing: deliveries must be signed with the secret"
SIGNATURE_MISMATCH = "X-Hub-Signature-256 does not match the body: wrong secret or altered body"
BAD_HEADER = "header {name} is missing or malformed"
BAD_PAYLOAD = "the payload is not a JSON object"
BAD_PUSH = "the push payload is malformed ({count} problem(s))"

IGNORED_EVENT = "event '{event}' is not handled; only push events start runs"
NOT_REGISTERED = "repository {repo} is not registered in AMTP"
WEBHOOKS_DISABLED = "webhook runs are disabled for {repo}"
BRANCH_DELETED = "the push deleted {ref}"
NOT_A_BRANCH = "{ref} is not a branch"
BRANCH_NOT_WATCHED = "branch {branch} does not start runs for {repo} (watched: {watched})"
DUPLICATE = "delivery {delivery} was already received"
PUSH_SEEN = "push of {sha} to {branch} already started run {run_id}"
TARGET_REFUSED = "{repo} starts no run: {rule}"
PONG = "pong"
REQUEST_SCOPE = "github-delivery"  # a run's request_key is github-delivery:<X-GitHub-Delivery>


class WebhookOut(Schema):
    status: str = Field(description="pong, run_created, ignored or duplicate")
    delivery: str
    note: str = ""
    run_id: uuid.UUID | None = None


class _Repo(BaseModel):
    full_name: str = Field(max_length=200)


class PushEvent(BaseModel):
    ref: str = Field(max_length=255)
    after: str = Field(pattern=r"^([0-9a-f]{40}|[0-9a-f]{64})$")
    deleted: bool = False
    repository: _Repo
    sender: dict | None = None


# --- signature ---------------------------------------------------------------------------


def signature_for(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_valid(secret: str, body: bytes, header: str) -> bool:
    """Constant-time comparison of ``X-Hub-Signature-256`` with the HMAC of the raw body."""
    given = header.encode("utf-8", errors="replace")
    return hmac.compare_digest(signature_for(secret, body).encode(), given)


# --- service -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What a delivery will do, decided before anything is written."""

    outcome: str
    note: str
    repo_name: str = ""
    repository: Repository | None = None  # set when the delivery starts a run
    push: PushEvent | None = None

    @property
    def branch(self) -> str:
        return self.push.ref.removeprefix("refs/heads/") if self.push else ""


def _ignored(note: str, repo_name: str = "") -> Plan:
    return Plan(DeliveryOutcome.IGNORED, note, repo_name)


def _plan(event: str, payload: dict) -> Plan:
    if event == "ping":
        return Plan(DeliveryOutcome.PONG, PONG)
    if event != "push":
        return _ignored(IGNORED_EVENT.format(event=event))
    push = PushEvent.model_validate(payload)
    name = push.repository.full_name
    repository = Repository.objects.filter(full_name=name).first()
    if repository is None:
        return _ignored(NOT_REGISTERED.format(repo=name), name)
    if not repository.webhook_enabled:
        return _ignored(WEBHOOKS_DISABLED.format(repo=name), name)
    if push.deleted or ZERO_SHA.match(push.after):
        return _ignored(BRANCH_DELETED.format(ref=push.ref), name)
    if not push.ref.startswith("refs/heads/"):
        return _ignored(NOT_A_BRANCH.format(ref=push.ref), name)
    branch = push.ref.removeprefix("refs/heads/")
    watched = repository.webhook_branches or [repository.default_branch]
    if branch not in watched:
        return _ignored(BRANCH_NOT_WATCHED.format(branch=branch, repo=name, watched=watched), name)
    try:  # the preview URL is judged as a launched run's target_url is
        target_address_check(repository, "")
    except RunInputInvalid as exc:
        return _ignored(TARGET_REFUSED.format(repo=name, rule=exc.rule), name)
    note = f"push of {push.after} to {branch}"
    return Plan(DeliveryOutcome.RUN_CREATED, note, name, repository, push)


def webhook_delivery_receive(*, delivery_id: str, event: str, payload: dict) -> tuple[int, dict]:
    """Record the delivery and act on it once; a redelivery answers ``duplicate``."""
    plan = _plan(event, payload)
    delivery, created = WebhookDelivery.objects.select_related("run__repository").get_or_create(
        delivery_id=delivery_id,
        defaults={
            "event": event,
            "repo_full_name": plan.repo_name,
            "outcome": plan.outcome,
            "note": plan.note,
        },
    )
    if not created:
        return 200, _retry_start(delivery)
    answer = {"status": str(plan.outcome), "delivery": delivery_id, "note": plan.note}
    if plan.repository is None:
        return 200, answer
    if (seen := _push_seen(plan, delivery)) is not None:
        return 200, seen
    sender = (plan.push.sender or {}).get("login", "")
    run = run_create(
        repository=plan.repository,
        ref=plan.push.after,
        base_branch=plan.branch,
        trigger=Run.Trigger.WEBHOOK,
        requested_by=f"github:{sender}" if sender else "github",
        request_key=delivery_id,
        request_scope=REQUEST_SCOPE,
    )
    delivery.run = run
    delivery.save(update_fields=["run"])
    return 201, {**answer, "run_id": run.run_id}


def _push_key(plan: Plan) -> str:
    return f"amtp:webhook:push:{plan.repo_name}:{plan.branch}:{plan.push.after}"


def _push_seen(plan: Plan, delivery: WebhookDelivery) -> dict | None:
    """A push GitHub (or anyone replaying it) sent before under another delivery id, within
    ``AMTP_WEBHOOK_PUSH_DEDUPE_S``: this delivery is recorded as ignored, pointing at the
    first one's run, and nothing starts. Concurrent deliveries of one push race for a Valkey
    key; the run table catches the ones that come after Valkey lost it."""
    window = settings.AMTP_WEBHOOK_PUSH_DEDUPE_S
    try:
        first = valkey.client().set(
            _push_key(plan), delivery.delivery_id, nx=True, ex=window, get=True
        )
    except redis.RedisError:
        first = None
    earlier = Run.objects.filter(
        repository=plan.repository,
        trigger=Run.Trigger.WEBHOOK,
        ref=plan.push.after,
        base_branch=plan.branch,
        created_at__gte=timezone.now() - timedelta(seconds=window),
    ).first()
    if first is None and earlier is None:
        return None
    if earlier is None:  # the first delivery is still creating its run
        earlier_id = (
            WebhookDelivery.objects.filter(delivery_id=first.decode())
            .values_list("run_id", flat=True)
            .first()
        )
    else:
        earlier_id = earlier.run_id
    delivery.outcome = DeliveryOutcome.IGNORED
    delivery.note = PUSH_SEEN.format(sha=plan.push.after, branch=plan.branch, run_id=earlier_id)
    delivery.run_id = earlier_id
    delivery.save(update_fields=["outcome", "note", "run"])
    return {
        "status": "duplicate",
        "delivery": delivery.delivery_id,
        "note": delivery.note,
        "run_id": earlier_id,
    }


def _retry_start(delivery: WebhookDelivery) -> dict:
    """A redelivery of a push recorded as ``orchestrator_unavailable`` (its run was accepted
    but not started) queues that run to start, so GitHub's redelivery is a way to retry it;
    any other redelivery does nothing."""
    if delivery.outcome == DeliveryOutcome.ORCHESTRATOR_UNAVAILABLE and delivery.run:
        run_enqueue(delivery.run)
        delivery.outcome = DeliveryOutcome.RUN_CREATED
        delivery.save(update_fields=["outcome"])
    return {
        "status": "duplicate",
        "delivery": delivery.delivery_id,
        "note": DUPLICATE.format(delivery=delivery.delivery_id),
        "run_id": delivery.run_id,
    }


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


@router.post(
    "/github",
    response={200: WebhookOut, 201: WebhookOut, **documented(400, 403, 413, 503)},
    url_name="github_webhook",
    summary="GitHub webhook receiver",
)
def github_webhook(request: HttpRequest, response: HttpResponse):
    """Signed GitHub deliveries: ``ping`` is answered, a ``push`` to a watched branch of a
    registered repository starts a run (201), everything else is acknowledged and ignored."""
    body = _read_body(request)
    secret = settings.GITHUB_WEBHOOK_SECRET
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
    except PayloadInvalid as exc:
        errors = [
            field_error(".".join(map(str, e["loc"])), e["msg"], type=e["type"])
            for e in exc.errors()
        ]
        raise Problem(
            400, "bad-webhook", BAD_PUSH.format(count=len(errors)), errors=errors
        ) from exc
    if answer.get("run_id") and status == 201:
        response["Location"] = reverse("api:run_detail", kwargs={"run_id": answer["run_id"]})
    return Status(status, answer)
