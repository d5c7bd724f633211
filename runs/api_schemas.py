"""The request and response bodies of ``/api/runs``."""

import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from django.urls import reverse
from ninja import Field, Schema
from pydantic import AfterValidator, ConfigDict, StringConstraints, field_validator

from amtp_site import tracing
from approvals.api_schemas import ApprovalOut
from approvals.selectors import run_approvals
from repositories.models import DepthLevel, Framework
from repositories.names import FULL_NAME_PATTERN, full_name_problem
from repositories.refnames import ref_problem
from repositories.targets import (
    MAX_TARGET_URL_LENGTH,
    TARGET_URL_PATTERN,
    display,
    target_url_problem,
)
from runs import costs, selectors
from runs.models import Run, RunStatus, Trigger

DATE_OUT_OF_RANGE = "date out of range"
NOT_ISO_DATE = "use an ISO 8601 date-time, e.g. 2025-01-15T10:30:00Z"
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")

# Printable, no whitespace or git-special characters (git check-ref-format, simplified).
REF_PATTERN = r"^[^\x00-\x20\x7f~^:?*\[\\]+$"
NO_CONTROL = r"^[^\x00-\x1f\x7f]*$"
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,150}$"


def checked_by(problem_of) -> AfterValidator:
    """Refuse a value ``problem_of`` finds a problem with (422 naming the field and the rule)."""

    def check(value: str) -> str:
        if problem := problem_of(value):
            raise ValueError(problem)
        return value

    return AfterValidator(check)


# The constraints first, then the rule: a 10 MB value is refused for its length, unread.
FullName = Annotated[
    str, StringConstraints(min_length=3, max_length=200), checked_by(full_name_problem)
]
GitRef = Annotated[
    str,
    StringConstraints(min_length=1, max_length=255, pattern=REF_PATTERN),
    checked_by(ref_problem),
]
TargetUrl = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_TARGET_URL_LENGTH),
    checked_by(target_url_problem),
]


class ClosedSchema(Schema):
    """A body whose unknown fields are an error: 422 in a request, a bug in a response."""

    model_config = ConfigDict(extra="forbid")


class RunIn(ClosedSchema):
    repo_full_name: FullName = Field(
        json_schema_extra={"pattern": FULL_NAME_PATTERN},  # checked by full_name_problem
        description="A registered repository, owner/name.",
        examples=["acme/shop"],
    )
    ref: GitRef | None = Field(
        None, description="Branch or commit SHA (default: the default branch)."
    )
    depth_level: DepthLevel | None = Field(None, description="Default: the repository's.")
    target_framework: Framework | None = Field(None, description="Default: the repository's.")
    base_branch: GitRef | None = Field(None, description="PR base (default: the default branch).")
    target_url: TargetUrl | None = Field(
        None,
        json_schema_extra={"pattern": TARGET_URL_PATTERN},  # checked by target_url_problem
        description="A running instance of the app: the generated tests run against it before "
        "the PR (default: the repository's preview URL; none: verification is skipped).",
        examples=["https://preview.acme.test"],
    )
    kind: Literal["generation", "maintenance"] = Field(
        "generation",
        description="generation: write new tests and open a PR of them; maintenance: re-verify "
        "the tests the repository holds under its test directory, heal or quarantine what broke "
        "and open a PR only when something changed.",
    )


class StageOut(Schema):
    name: str
    status: str
    attempts: int
    started_at: datetime | None
    finished_at: datetime | None
    error_type: str
    error_message: str
    note: str = Field(description="Why the stage was skipped, or what it found.")


class ArtifactSummaryOut(Schema):
    artifact_id: uuid.UUID
    kind: str
    schema_id: str
    size: int = Field(description="Bytes of the JSON content.")
    created_at: datetime


class ArtifactOut(ArtifactSummaryOut):
    content: Any
    meta: dict[str, Any]


class VerificationOut(Schema):
    status: str = Field(description="verified, skipped, not_executed or unverified.")
    reason: str = Field(description="Why the tests were not (all) run; empty when verified.")
    target_url: str
    totals: dict[str, int] = Field(
        description="tests, passed, failed, flaky, healed, quarantined, skipped."
    )


class AppRecipeOut(ClosedSchema):
    status: str = Field(
        description="booted (AMTP started the run's app from its recipe), failed (it did not "
        "come up: error and message say why) or no_recipe (nothing says how the app starts)."
    )
    source: str = Field(
        description='Where the recipe came from ("from playwright.config.ts webServer", '
        '"repository settings"); empty without a recipe.'
    )
    recipe: dict | None = Field(
        description="The recipe used: start, port, ready_path, install, env (plain values), "
        "secret_env (names only), services, seed, workdir, lock_files, url."
    )
    install_s: float | None = Field(description="Seconds the install (or its cache copy) took.")
    boot_s: float | None = Field(description="Seconds from the start command to readiness.")
    dependencies_from_cache: bool | None
    log_tail: str = Field(description="The last lines of the install and app log, scrubbed.")
    error: str = Field(
        description="The error class when it did not boot (InstallFailed, AppExited, "
        "AppNotReady, PortNeverOpened, SeedFailed, RecipeNotFound, RecipeUnsupported)."
    )
    message: str = Field(
        description="The error naming the command, its exit code and the last lines of its log."
    )


class CoverageRowOut(ClosedSchema):
    route: str = Field(
        description="The route as found in source, parameters as {name} (/notes/{id}); for a "
        "route only the live app showed, the path it was reached at; empty for a screen "
        "without a route (see name)."
    )
    kind: str = Field(description="page, api, screen, or live (only the live app showed it).")
    name: str = Field(description="A screen's name; empty otherwise.")
    methods: list[str] = Field(description="HTTP methods the source declares for it.")
    in_source: bool = Field(description="Found in the repository by the crawl.")
    live_path: str = Field(description="The path ExploreApp reached it at; empty if not reached.")
    live_status: int | None = Field(description="The HTTP status it answered (0: no answer).")
    live_state: str = Field(
        description="What ExploreApp saw there: answered, login_redirect (it showed the login "
        "instead), not_found (404/410), error; empty if not reached."
    )
    state: str = Field(
        description="covered; or why not: empty_write (a write with no body), anonymous_write "
        "(a write without credentials on an app behind a login), login_redirect (only the "
        "login was seen there), not_found, not_covered (no test went there)."
    )
    tests: list[str] = Field(description="Titles of the tests that exercise it (at most 5).")
    more_tests: int = Field(description="Tests that exercise it beyond those listed.")
    covered: bool = Field(description="At least one test exercises it (state covered).")


class CoverageTotalsOut(ClosedSchema):
    routes: int = Field(description="Rows in all: routes in source and routes only seen live.")
    in_source: int
    reached: int = Field(description="Rows where the exploration got the page itself.")
    live_only: int
    covered: int
    not_covered: int
    login_redirect: int = Field(description="Not covered: only the login was seen there.")
    not_found: int = Field(description="Not covered: the live app answered 404 or 410.")
    uncounted_writes: int = Field(
        description="Not covered: tests wrote there only with an empty body or no credentials."
    )
    source_left_off: int = Field(
        description="Routes, pages and screens of the crawl past the map's limit (not mapped)."
    )


class CoverageOut(ClosedSchema):
    headline: str = Field(examples=["5 of 7 routes covered; not covered: /tasks/{taskId}"])
    verified: bool = Field(
        description="The tests ran against the app: only those that passed (at once, healed "
        "or flaky) count; quarantined and dropped ones do not. False: a written test counts "
        "unless it is test.fixme/test.skip."
    )
    basis: str = Field(description="What counted, in a sentence (the run page's note).")
    totals: CoverageTotalsOut
    not_covered: list[str] = Field(description="The first 20 routes no test exercises.")
    rows: list[CoverageRowOut] = Field(description="Not covered first; at most 200.")
    rows_left_off: int = Field(description="Rows past the 200 shown.")


class PullRequestOut(Schema):
    number: int | None
    url: str
    head_branch: str


class AgentCostOut(Schema):
    agent: str
    provider: str
    model: str
    calls: int
    input_tokens: int = Field(description="Every prompt token, cache reads and writes included.")
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None = Field(description="null: the model's price is unknown.")


class RunCostOut(Schema):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None = Field(description="null: some agent's model has no known price.")
    agents: list[AgentCostOut]


class RunOut(Schema):
    run_id: uuid.UUID
    repo_full_name: str
    ref: str
    commit_sha: str
    base_branch: str
    base_sha: str
    target_url: str
    depth_level: str
    target_framework: str
    status: str
    trigger: str
    kind: str = Field(description="generation, maintenance or check (a pull request's).")
    requested_by: str
    pull_request: PullRequestOut | None
    error_type: str
    error_message: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    url: str

    @staticmethod
    def resolve_target_url(run: Run) -> str:
        return display(run.target_url) if run.target_url else ""  # tokens travel in queries

    @staticmethod
    def resolve_pull_request(run: Run) -> dict | None:
        if not run.pr_url:
            return None
        return {"number": run.pr_number, "url": run.pr_url, "head_branch": run.head_branch}

    @staticmethod
    def resolve_url(run: Run) -> str:
        return run_url(run)


class RunDetailOut(RunOut):
    """The run detail, its approvals included."""

    trace_id: str = Field(
        description="The OpenTelemetry trace of the request that accepted the run and of its "
        "workflow (32 hex digits; empty when tracing is off)."
    )
    stages: list[StageOut]
    artifacts: list[ArtifactSummaryOut]
    verification: VerificationOut | None = Field(
        description="The VerifyTests stage's outcome and totals (null until it has run)."
    )
    coverage: CoverageOut | None = Field(
        description="The app's routes found in the repository × reached by exploration × "
        "exercised by the generated tests (null until the crawl is stored)."
    )
    app_recipe: AppRecipeOut | None = Field(
        description="The run's own app, when AMTP starts it (no target URL, no preview): the "
        "recipe used and its source, install and boot times, the scrubbed log tail, or why it "
        "did not boot (null otherwise, or before BootApp ended)."
    )
    cost: RunCostOut = Field(
        description="Tokens the vendors reported and their cost in USD, per agent and in all."
    )

    approvals: list[ApprovalOut]

    # A run inserted by this request (``run_create``) has its stages at hand and no artifact,
    # approval or verification yet: answering it reads nothing (bench_submit.py).

    @staticmethod
    def resolve_trace_id(run: Run) -> str:
        return tracing.trace_id(run.traceparent)

    @staticmethod
    def resolve_verification(run: Run) -> dict | None:
        return None if just_inserted(run) else selectors.verification_summary(run)

    @staticmethod
    def resolve_coverage(run: Run) -> dict | None:
        return None if just_inserted(run) else selectors.coverage(run)

    @staticmethod
    def resolve_app_recipe(run: Run) -> dict | None:
        return None if just_inserted(run) else selectors.app_boot(run)

    @staticmethod
    def resolve_cost(run: Run) -> dict:
        empty = {**dict.fromkeys(costs.TOKENS, 0), "cost_usd": 0, "agents": []}
        return empty if just_inserted(run) else costs.run_costs(run)

    @staticmethod
    def resolve_stages(run: Run) -> list:
        return run.inserted_stages if just_inserted(run) else selectors.run_stages(run)

    @staticmethod
    def resolve_artifacts(run: Run) -> list:
        return [] if just_inserted(run) else list(selectors.run_artifacts(run))

    @staticmethod
    def resolve_approvals(run: Run) -> list:
        return [] if just_inserted(run) else list(run_approvals(run))


def just_inserted(run: Run) -> bool:
    """A run inserted by this request: it has nothing yet beside its stages."""
    return getattr(run, "inserted_stages", None) is not None


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


def run_url(run: Run) -> str:
    return reverse("api:run_detail", kwargs={"run_id": run.run_id})
