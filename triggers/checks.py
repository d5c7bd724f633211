"""What ``pull_request`` and ``check_run`` deliveries do: check runs of a pull request.

A ``pull_request`` delivery (opened, synchronize, reopened, ready_for_review) of a registered
repository with ``pr_checks`` on and a PR preview URL template starts a check run: the
repository's tests against that pull request's preview, reported as a GitHub check run. One
per head SHA: the run's request key is the repository and the SHA, so any number of
deliveries for one head start one run (``deployment_status`` deliveries share the key:
triggers.deployments). A repository whose previews come from deployments (the template
``{deployment}``) starts its checks from those, so its ``pull_request`` deliveries start
none. ``check_run`` with action ``rerequested`` ("Re-run" on GitHub) of AMTP's check starts a
new one. A delivery without a sender starts nothing. A draft pull request starts nothing
unless ``pr_checks_drafts`` is on: marking it ready sends ``ready_for_review``, which starts
its check. A pull request from a fork, or by an author without write access, is held for an
approval before its code runs (in the sandbox, as every test run). A preview URL the verifier
would refuse (repositories.targets: a private or metadata address the repository's allowed
hosts do not name) starts nothing; the delivery's note says why.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from repositories.models import Repository
from repositories.targets import FROM_DEPLOYMENT, display, preview_url
from runs.errors import IdempotencyKeyReused, RunInputInvalid
from runs.models import Run
from runs.services import run_create

SHA = r"^([0-9a-f]{40}|[0-9a-f]{64})$"
# ready_for_review: GitHub's delivery when a draft is marked ready (its ``draft`` is false then)
PR_ACTIONS = ("opened", "synchronize", "reopened", "ready_for_review")
TRUSTED = ("OWNER", "MEMBER", "COLLABORATOR")
CHECK_SCOPE = "github-check"
NO_SENDER = "the delivery names no sender: nothing runs for an unknown sender"
NOT_CHECKED = "pull request checks are off for {repo} (or it has no PR preview URL template)"
ACTION_IGNORED = "pull_request action '{action}' starts no check"
DRAFT_IGNORED = (
    "pull request #{number} is a draft and {repo} does not check drafts (pr_checks_drafts, "
    '"Check draft pull requests too", is off): its check starts when it is marked ready for review'
)
NOT_OURS = "check run {name!r} is not AMTP's"
BAD_PREVIEW = "the preview URL {url} is refused: {problem}"
FROM_DEPLOYMENTS = (
    "{repo} takes its previews from deployments: the deployment_status of {sha} starts its check"
)


class RepoRef(BaseModel):
    full_name: str = Field(max_length=200)


class _Head(BaseModel):
    sha: str = Field(pattern=SHA)
    ref: str = Field(max_length=255)
    repo: RepoRef | None = None


class _Pull(BaseModel):
    number: int = Field(ge=1)
    head: _Head
    author_association: str = Field(default="NONE", max_length=40)
    # strict: "false" or 0 is not GitHub's boolean, and lax parsing would read "yes" as a draft
    draft: bool = Field(default=False, strict=True)


class PullRequestEvent(BaseModel):
    action: str = Field(max_length=40)
    pull_request: _Pull
    repository: RepoRef
    sender: dict | None = None


class _CheckRun(BaseModel):
    name: str = Field(max_length=200)
    head_sha: str = Field(pattern=SHA)
    external_id: str = Field(default="", max_length=100)


class CheckRunEvent(BaseModel):
    action: str = Field(max_length=40)
    check_run: _CheckRun
    repository: RepoRef
    sender: dict | None = None


def sender_login(payload: BaseModel) -> str:
    login = (payload.sender or {}).get("login")
    return login if isinstance(login, str) and 0 < len(login) <= 100 else ""


def pull_request_check(event: str, payload: dict, delivery_id: str) -> tuple[str, Run | None]:
    """(note, the check run started or found) for a pull_request or check_run delivery."""
    from runs.checks import CHECK_NAME

    model = PullRequestEvent if event == "pull_request" else CheckRunEvent
    parsed = model.model_validate(payload)
    sender = sender_login(parsed)
    if not sender:
        return NO_SENDER, None
    name = parsed.repository.full_name
    repository = Repository.objects.filter(full_name=name).first()
    if repository is None or not repository.pr_checks or not repository.pr_preview_url_template:
        return NOT_CHECKED.format(repo=name), None
    if event == "check_run":
        if parsed.action != "rerequested":
            return ACTION_IGNORED.format(action=parsed.action), None
        if parsed.check_run.name != CHECK_NAME:
            return NOT_OURS.format(name=parsed.check_run.name), None
        earlier = Run.objects.filter(pk=parsed.check_run.external_id or None).first()
        if earlier is None or earlier.repository_id != repository.pk:
            return NOT_OURS.format(name=parsed.check_run.name), None
        return "check run again", _again(earlier, sender, delivery_id)
    if parsed.action not in PR_ACTIONS:
        return ACTION_IGNORED.format(action=parsed.action), None
    pull = parsed.pull_request
    if pull.draft and not repository.pr_checks_drafts:
        return DRAFT_IGNORED.format(number=pull.number, repo=name), None
    if repository.pr_preview_url_template == FROM_DEPLOYMENT:
        return FROM_DEPLOYMENTS.format(repo=name, sha=pull.head.sha), None
    url = preview_url(
        repository.pr_preview_url_template, pr=pull.number, sha=pull.head.sha, branch=pull.head.ref
    )
    fork = pull.head.repo is None or pull.head.repo.full_name != name
    held = fork or pull.author_association not in TRUSTED
    note, run = check_start(
        repository, sha=pull.head.sha, url=url, sender=sender, pull_number=pull.number, held=held
    )
    return note or f"check of pull request #{pull.number} at {pull.head.sha}", run


def check_start(
    repository: Repository, *, sha: str, url: str, sender: str, pull_number: int | None, held: bool
) -> tuple[str, Run | None]:
    """The check run of ``sha`` against ``url``: ("", the run started), or the run an earlier
    delivery started for that SHA (whatever its URL: the first to start one wins), or (why
    not, None) when the verifier would refuse ``url``."""
    try:
        run = run_create(
            repository=repository,
            ref=sha,
            target_url=url,
            trigger=Run.Trigger.WEBHOOK,
            requested_by=f"github:{sender}",
            request_key=f"{repository.full_name}:{sha}",
            request_scope=CHECK_SCOPE,
            kind=Run.Kind.CHECK,
            pull_number=pull_number,
            held=held,
        )
    except RunInputInvalid as exc:
        return BAD_PREVIEW.format(url=display(url), problem=exc.rule), None
    except IdempotencyKeyReused as exc:  # the same head, another URL (another environment)
        run = Run.objects.get(pk=exc.details["run_id"])
        run.created = False
    return "", run


def _again(earlier: Run, sender: str, delivery_id: str) -> Run:
    return run_create(
        repository=earlier.repository,
        ref=earlier.ref,
        target_url=earlier.target_url,
        trigger=Run.Trigger.WEBHOOK,
        requested_by=f"github:{sender}",
        request_key=delivery_id,
        request_scope=f"{CHECK_SCOPE}-rerun",
        kind=Run.Kind.CHECK,
        pull_number=earlier.pull_number,
        held=earlier.held,
    )
