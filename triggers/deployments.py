"""What a ``deployment_status`` delivery does: a check run against a deployed preview.

For a repository whose PR preview URL template is ``{deployment}`` (``pr_checks`` on), the
preview of a commit is where its deployment says it is. GitHub sends ``deployment_status``
(action ``created``) with ``deployment`` (``sha``, ``ref``, ``environment``) and
``deployment_status`` (``state``; ``environment_url``, and ``target_url``, the older field:
docs.github.com/webhooks/webhook-events-and-payloads#deployment_status). A ``success``
status starts the check run of ``deployment.sha`` against ``environment_url``, else
``target_url``; any other state, a production deployment (``production_environment``, or the
environment ``production`` when the payload does not say: docs.github.com/rest/deployments/
deployments#create-a-deployment) or a status without a URL is acknowledged and starts
nothing. The URL is judged by the rule of every target URL (repositories.targets).

One check run per head SHA, shared with ``pull_request`` (triggers.checks.check_start):
the first delivery that starts one wins; a redelivery, the same commit's status in another
environment, or a ``pull_request`` delivery for it finds that run. A repository with
``{deployment}`` starts no check from ``pull_request``, so for it the deployment wins.

Whose code: a deployment's ``ref`` is a branch, tag or SHA. A commit that is the head of that
branch of this repository came from someone with write access; anything else (a fork's pull
request deployed from ``refs/pull/N/head``, a tag, a bare SHA, a branch that moved on) waits
for an approval before its tests run, as a fork's pull request does.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from amtp_site.errors import AmtpError
from repositories.errors import RepositoryAccessError
from repositories.hosts import host_for
from repositories.models import Repository
from repositories.refnames import ref_problem
from repositories.targets import FROM_DEPLOYMENT
from runs.errors import PushNotChecked
from runs.models import Run
from triggers.checks import NO_SENDER, SHA, RepoRef, check_start, sender_login

NOT_FROM_DEPLOYMENTS = (
    "{repo} takes no previews from deployments (pull request checks off, or its PR preview URL "
    "template is not {{deployment}}): deployment statuses start nothing"
)
STATE_IGNORED = "deployment status '{state}' starts no check; only 'success' does"
PRODUCTION_IGNORED = "a deployment to production ({environment}) starts no check"
NO_URL = "the deployment status names no environment_url or target_url: nothing to test"
HOST_UNREACHABLE = (
    "could not ask the repository host whether {sha} is the head of {ref} in {repo}: nothing "
    "was recorded, so redelivering the deployment status from GitHub retries it"
)


class _Deployment(BaseModel):
    sha: str = Field(pattern=SHA)
    ref: str = Field(max_length=255)
    environment: str = Field(default="", max_length=255)
    production_environment: bool | None = None


class _Status(BaseModel):
    state: str = Field(max_length=40)
    environment_url: str | None = Field(default=None, max_length=2000)
    target_url: str | None = Field(default=None, max_length=2000)


class DeploymentStatusEvent(BaseModel):
    deployment: _Deployment
    deployment_status: _Status
    repository: RepoRef
    sender: dict | None = None


def deployment_check(payload: dict) -> tuple[str, Run | None]:
    """(note, the check run started or found) for a deployment_status delivery."""
    parsed = DeploymentStatusEvent.model_validate(payload)
    sender = sender_login(parsed)
    if not sender:
        return NO_SENDER, None
    name, deployment = parsed.repository.full_name, parsed.deployment
    repository = Repository.objects.filter(full_name=name).first()
    if repository is None or not repository.pr_checks:
        return NOT_FROM_DEPLOYMENTS.format(repo=name), None
    if repository.pr_preview_url_template != FROM_DEPLOYMENT:
        return NOT_FROM_DEPLOYMENTS.format(repo=name), None
    status = parsed.deployment_status
    if status.state != "success":
        return STATE_IGNORED.format(state=status.state), None
    production = deployment.production_environment
    if production or (production is None and deployment.environment == "production"):
        return PRODUCTION_IGNORED.format(environment=deployment.environment), None
    url = status.environment_url or status.target_url
    if not url:
        return NO_URL, None
    held = not _own_branch_head(repository, deployment)
    note, run = check_start(
        repository, sha=deployment.sha, url=url, sender=sender, pull_number=None, held=held
    )
    where = f" deployed to {deployment.environment}" if deployment.environment else ""
    return note or f"check of {deployment.sha}{where}", run


def _own_branch_head(repository: Repository, deployment: _Deployment) -> bool:
    """Whether the deployed commit is the head of the branch ``deployment.ref`` names in the
    repository itself. A host that cannot answer raises PushNotChecked (503, nothing
    recorded: GitHub's redelivery retries)."""
    branch = deployment.ref.removeprefix("refs/heads/")
    if branch == deployment.sha or branch.startswith("refs/") or ref_problem(branch):
        return False
    try:
        return host_for(repository).resolve_ref(f"refs/heads/{branch}") == deployment.sha
    except RepositoryAccessError:
        return False  # no such branch here
    except AmtpError as exc:
        where = {"sha": deployment.sha, "ref": deployment.ref, "repo": repository.full_name}
        raise PushNotChecked(HOST_UNREACHABLE.format(**where)) from exc
