"""What a verified GitHub delivery does: the rules behind ``POST /api/webhooks/github``.

Every delivery is recorded once by its ``X-GitHub-Delivery`` (unique): a redelivery finds its
row and creates nothing. A push starts a run only when its repository is registered with
webhooks on and the branch is watched (a generation run), or, with ``maintain_on_push``, the
branch is the default branch (a maintenance run, instead), the pushed SHA (``after``) is the branch's head on the
repository host right now, and no webhook delivery has started a run for that (repository,
SHA) before, ever: a unique index on ``webhook_deliveries`` holds that, so a captured push
replayed under any delivery id, however much later and however many at once, starts nothing.
"Run again" (admin, API) is the way to run a commit twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from pydantic import BaseModel, Field

from amtp_site.errors import AmtpError
from repositories.errors import RepositoryAccessError
from repositories.hosts import host_for
from repositories.models import Repository
from runs.errors import PushNotChecked, RunInputInvalid
from runs.models import Run
from runs.services import MAINTENANCE_NO_TARGET, run_create, run_enqueue, target_address_check
from triggers.checks import pull_request_check
from triggers.deployments import deployment_check
from triggers.models import STARTED_A_RUN, DeliveryOutcome, WebhookDelivery

ZERO_SHA = re.compile(r"^0+$")

IGNORED_EVENT = (
    "event '{event}' is not handled; push, pull_request, deployment_status and check_run "
    "(rerequested) start runs"
)
NOT_REGISTERED = "repository {repo} is not registered in AMTP"
WEBHOOKS_DISABLED = "webhook runs are disabled for {repo}"
BRANCH_DELETED = "the push deleted {ref}"
NOT_A_BRANCH = "{ref} is not a branch"
BRANCH_NOT_WATCHED = "branch {branch} does not start runs for {repo} (watched: {watched})"
DUPLICATE = "delivery {delivery} was already received"
PUSH_SEEN = "push of {sha} to {repo} already started run {run_id}"
NOT_THE_HEAD = (
    "{sha} is not the head of {branch} in {repo} (the host says {head}): a push starts a run "
    "only for the commit its branch points at"
)
BRANCH_UNKNOWN = "{branch} cannot be read from {repo}: {problem}"
HOST_UNREACHABLE = (
    "could not ask the repository host whether {sha} is the head of {branch}: nothing was "
    "recorded, so redelivering the push from GitHub retries it"
)
TARGET_REFUSED = "{repo} starts no run: {rule}"
PONG = "pong"
REQUEST_SCOPE = "github-delivery"  # a run's request_key is github-delivery:<X-GitHub-Delivery>


class _Repo(BaseModel):
    full_name: str = Field(max_length=200)


class PushEvent(BaseModel):
    ref: str = Field(max_length=255)
    after: str = Field(pattern=r"^([0-9a-f]{40}|[0-9a-f]{64})$")
    deleted: bool = False
    repository: _Repo
    sender: dict | None = None


def webhook_secret_for(repo_full_name: str) -> str:
    """The secret a delivery about ``repo_full_name`` must be signed with: the repository's
    own, else the global ``GITHUB_WEBHOOK_SECRET`` (shared by every repository without one,
    and the only one for a repository that is not registered); empty when neither is set."""
    own = (
        Repository.objects.filter(full_name=repo_full_name)
        .values_list("webhook_secret", flat=True)
        .first()
        if repo_full_name
        else None
    )
    return own or settings.GITHUB_WEBHOOK_SECRET


@dataclass(frozen=True)
class Plan:
    """What a delivery will do, decided before anything is written."""

    outcome: str
    note: str
    repo_name: str = ""
    repository: Repository | None = None  # set when the delivery may start a run
    push: PushEvent | None = None
    kind: str = Run.Kind.GENERATION

    @property
    def branch(self) -> str:
        return self.push.ref.removeprefix("refs/heads/") if self.push else ""

    @property
    def sha(self) -> str:
        return self.push.after if self.push else ""


def _ignored(note: str, repo_name: str = "", push: PushEvent | None = None) -> Plan:
    return Plan(DeliveryOutcome.IGNORED, note, repo_name, push=push)


def _plan(event: str, payload: dict) -> Plan:
    """The checks that need only the payload and the repository's settings."""
    if event == "ping":
        return Plan(DeliveryOutcome.PONG, PONG)
    if event != "push":
        return _ignored(IGNORED_EVENT.format(event=event))
    push = PushEvent.model_validate(payload)
    name = push.repository.full_name
    repository = Repository.objects.filter(full_name=name).first()
    if repository is None:
        return _ignored(NOT_REGISTERED.format(repo=name), name, push)
    branch = push.ref.removeprefix("refs/heads/")
    maintain = repository.maintain_on_push and push.ref == f"refs/heads/{repository.default_branch}"
    if not (repository.webhook_enabled or maintain):
        return _ignored(WEBHOOKS_DISABLED.format(repo=name), name, push)
    if push.deleted or ZERO_SHA.match(push.after):
        return _ignored(BRANCH_DELETED.format(ref=push.ref), name, push)
    if not push.ref.startswith("refs/heads/"):
        return _ignored(NOT_A_BRANCH.format(ref=push.ref), name, push)
    watched = repository.webhook_branches or [repository.default_branch]
    if not maintain and branch not in watched:
        note = BRANCH_NOT_WATCHED.format(branch=branch, repo=name, watched=watched)
        return _ignored(note, name, push)
    if maintain and not repository.preview_url:  # nothing to re-verify the tests against
        return _ignored(MAINTENANCE_NO_TARGET.format(repo=name), name, push)
    try:  # the preview URL is judged as a launched run's target_url is
        target_address_check(repository, "")
    except RunInputInvalid as exc:
        return _ignored(TARGET_REFUSED.format(repo=name, rule=exc.rule), name, push)
    kind = Run.Kind.MAINTENANCE if maintain else Run.Kind.GENERATION
    note = f"push of {push.after} to {branch}" + (": maintenance run" if maintain else "")
    return Plan(DeliveryOutcome.RUN_CREATED, note, name, repository, push, kind)


def _head_check(plan: Plan) -> Plan:
    """``plan``, or an ignored one when the host says the branch points elsewhere (a replayed
    or forged push, or one overtaken by a newer push). A host that cannot answer raises
    PushNotChecked: nothing is recorded, so GitHub's redelivery tries again."""
    where = {"sha": plan.sha, "branch": plan.branch, "repo": plan.repo_name}
    try:
        head = host_for(plan.repository).resolve_ref(f"refs/heads/{plan.branch}")
    except RepositoryAccessError as exc:
        note = BRANCH_UNKNOWN.format(**where, problem=exc.message)
        return _ignored(note, plan.repo_name, plan.push)
    except AmtpError as exc:
        raise PushNotChecked(HOST_UNREACHABLE.format(**where)) from exc
    if head != plan.sha:
        return _ignored(NOT_THE_HEAD.format(**where, head=head), plan.repo_name, plan.push)
    return plan


def webhook_delivery_receive(*, delivery_id: str, event: str, payload: dict) -> tuple[int, dict]:
    """Record the delivery and act on it once; a redelivery answers ``duplicate``."""
    earlier = WebhookDelivery.objects.filter(delivery_id=delivery_id).first()
    if earlier is not None:
        return 200, _redelivered(earlier)
    if event in ("pull_request", "check_run", "deployment_status"):
        return _check_delivery(event, payload, delivery_id)
    plan = _plan(event, payload)
    if plan.repository is not None:
        if (first := _first_run_of(plan)) is not None:  # no need to ask the host
            return 200, _push_seen(plan, delivery_id, first)
        plan = _head_check(plan)
    if plan.repository is None:
        return _record(plan, event, delivery_id)
    return _start(plan, delivery_id)


def _check_delivery(event: str, payload: dict, delivery_id: str) -> tuple[int, dict]:
    """A pull request's check (triggers.checks, triggers.deployments), the delivery
    recorded with it."""
    with transaction.atomic():
        if event == "deployment_status":
            note, run = deployment_check(payload)
        else:
            note, run = pull_request_check(event, payload, delivery_id)
        created = run is not None and run.created
        WebhookDelivery.objects.create(
            delivery_id=delivery_id,
            event=event,
            repo_full_name=str((payload.get("repository") or {}).get("full_name", ""))[:200],
            outcome=DeliveryOutcome.RUN_CREATED if created else DeliveryOutcome.IGNORED,
            note=note if run is None or created else f"{note}: run {run.run_id} already",
            run=run,
        )
    status = "run_created" if created else ("duplicate" if run else "ignored")
    answer = {"status": status, "delivery": delivery_id, "note": note}
    return (
        (201, {**answer, "run_id": run.run_id})
        if created
        else (200, {**answer, "run_id": run and run.run_id})
    )


def _record(plan: Plan, event: str, delivery_id: str) -> tuple[int, dict]:
    delivery, created = WebhookDelivery.objects.get_or_create(
        delivery_id=delivery_id,
        defaults={
            "event": event,
            "repo_full_name": plan.repo_name,
            "outcome": plan.outcome,
            "note": plan.note,
            "pushed_sha": plan.sha,
        },
    )
    if not created:
        return 200, _redelivered(delivery)
    return 200, {"status": str(plan.outcome), "delivery": delivery_id, "note": plan.note}


def _start(plan: Plan, delivery_id: str) -> tuple[int, dict]:
    """The delivery row and its run in one transaction. A concurrent delivery of the same
    push (or the same delivery) waits on the unique index and then fails here; it is
    answered as the duplicate it is."""
    sender = (plan.push.sender or {}).get("login", "")
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.create(
                delivery_id=delivery_id,
                event="push",
                repo_full_name=plan.repo_name,
                pushed_sha=plan.sha,
                outcome=DeliveryOutcome.RUN_CREATED,
                note=plan.note,
            )
            run = run_create(
                repository=plan.repository,
                ref=plan.sha,
                base_branch=plan.branch,
                trigger=Run.Trigger.WEBHOOK,
                requested_by=f"github:{sender}" if sender else "github",
                request_key=delivery_id,
                request_scope=REQUEST_SCOPE,
                kind=plan.kind,
            )
            delivery.run = run
            delivery.save(update_fields=["run"])
    except IntegrityError:
        same = WebhookDelivery.objects.filter(delivery_id=delivery_id).first()
        if same is not None:
            return 200, _redelivered(same)
        return 200, _push_seen(plan, delivery_id, _first_run_of(plan))
    answer = {"status": str(plan.outcome), "delivery": delivery_id, "note": plan.note}
    return 201, {**answer, "run_id": run.run_id}


def _first_run_of(plan: Plan) -> WebhookDelivery | None:
    """The delivery that started a run for this push, if one did."""
    return WebhookDelivery.objects.filter(
        repo_full_name=plan.repo_name, pushed_sha=plan.sha, outcome__in=STARTED_A_RUN
    ).first()


def _push_seen(plan: Plan, delivery_id: str, first: WebhookDelivery | None) -> dict:
    """This delivery is recorded as ignored, pointing at the run the push started."""
    run_id = first.run_id if first else None
    note = PUSH_SEEN.format(sha=plan.sha, repo=plan.repo_name, run_id=run_id)
    delivery, created = WebhookDelivery.objects.get_or_create(
        delivery_id=delivery_id,
        defaults={
            "event": "push",
            "repo_full_name": plan.repo_name,
            "pushed_sha": plan.sha,
            "outcome": DeliveryOutcome.IGNORED,
            "note": note,
            "run_id": run_id,
        },
    )
    if not created:
        return _redelivered(delivery)
    return {"status": "duplicate", "delivery": delivery_id, "note": note, "run_id": run_id}


def _redelivered(delivery: WebhookDelivery) -> dict:
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
