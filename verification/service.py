"""The VerifyTests stage's inputs from the run, the repository and settings."""

from __future__ import annotations

import os
import uuid
from concurrent.futures import Executor
from pathlib import Path

from django.conf import settings

import schemas
from amtp_site.setting_fields import from_settings
from repositories.hosts import host_for
from repositories.targets import (
    TARGET_URL_INVALID,
    parse_allow_host,
    target_address_problem,
    target_url_problem,
)
from runs import selectors
from runs.errors import RunInputInvalid
from runs.models import Run
from verification.errors import VerificationError
from verification.healer import heal_in
from verification.login import Login, login_for
from verification.playwright import Runner
from verification.session import LiveApp
from verification.test_data import hooks_of
from verification.verify import Plan, not_run, verify

REPORT_SCHEMA = "verification/report"


def runner_from_settings() -> Runner:
    return from_settings(Runner, "AMTP_VERIFY_")  # AMTP_VERIFY_RUNNER_DIR, …


def target_url_of(run: Run) -> str:
    """The run's own target URL, else its repository's preview URL ("" when neither)."""
    return run.target_url or run.repository.preview_url


def verification_report(
    run: Run,
    code: dict,
    sessions: Executor | None,
    *,
    check: bool = False,
    app: LiveApp | None = None,
) -> tuple[dict, dict]:
    """(report content, meta) for the run's ``code`` (test_engineer output, or the tests a
    repository holds); the healing sessions run in ``sessions``, the worker's agent process
    pool. A ``check`` (a pull request's check run) heals nothing and changes no file. ``app``:
    the app AMTP started for the run, restarted when a test crashes it.

    A failure to run the tests at all (VerificationError) fails the stage, unless the
    repository opens the pull request anyway: then the report says ``unverified`` and why."""
    runs_tests = code["framework"] == "playwright" and bool(target_url_of(run))
    # The sign-up the run's exploration made, else (a run that explores nothing) the last one.
    app_map = (
        (selectors.app_map(run) or selectors.signed_up_map(run.repository)) if runs_tests else None
    )
    with login_for(run.repository if runs_tests else None, app_map) as login:  # scrubbed
        return _verification_report(run, code, sessions, login, check, app)


def _verification_report(
    run: Run,
    code: dict,
    sessions: Executor | None,
    login: Login | None,
    check: bool,
    app: LiveApp | None,
) -> tuple[dict, dict]:
    plan = _plan(
        run.repository,
        run_id=str(run.run_id),
        framework=code["framework"],
        files=code["files"],
        target_url=target_url_of(run),
        allow_hosts=[*run.repository.allowed_hosts, *run.allowed_hosts],
        evidence=str(run.run_id),
        login=login,
        app=app,
        heals=not check,
        test_data=hooks_of(run.repository),
    )
    heals: list[dict] = []

    def heal(payload: dict, seconds: float) -> dict:
        return heal_in(sessions, payload, test_dir=plan.test_dir, max_seconds=seconds, meta=heals)

    try:
        report = verify(plan, heal=heal)
    except VerificationError as exc:
        if not run.repository.open_pr_unverified:
            raise
        reason = f"{type(exc).__name__}: {exc.message}"
        report = not_run(plan, "unverified", reason, exc.details.get("test_data"))
    meta = {"pid": os.getpid(), "heal_sessions": heals}
    return schemas.validate(REPORT_SCHEMA, report), meta


MAX_CHECKED_FILES = 200
NO_SPECS = "{repo}@{ref} holds no Playwright spec (*.spec.ts) under {test_dir}/"


def repository_tests(repository, ref: str) -> tuple[str, list[dict]]:
    """(commit SHA, the ``*.spec.ts`` files under the repository's test directory at ``ref``)."""
    host = host_for(repository)
    sha = host.resolve_ref(ref or repository.default_branch)
    prefix = repository.test_dir.strip("/") + "/"
    paths = [e.path for e in host.tree(sha) if e.path.startswith(prefix)]
    paths = [p for p in paths if p.endswith(".spec.ts")][:MAX_CHECKED_FILES]
    files = [
        {"path": p, "contents": host.read_file(sha, p).decode("utf-8", "replace")} for p in paths
    ]
    return sha, files


def check_repository_tests(
    repository, *, ref: str, target_url: str, allow_hosts: list[str]
) -> dict:
    """The report of the repository's own tests at ``ref`` run against ``target_url``: the same
    box, proxy and reporting as VerifyTests, without healing or quarantine (an operator's check
    after a deploy); ``allow_hosts`` adds to the repository's for this check only.
    RunInputInvalid (nothing run) for a target the network rule refuses or a bad entry;
    VerificationError when the tests cannot run; ValueError when there are none."""
    allowed = [*repository.allowed_hosts, *allow_hosts]
    _check_inputs(target_url, allow_hosts, allowed)
    sha, files = repository_tests(repository, ref)
    if not files:
        raise ValueError(
            NO_SPECS.format(repo=repository.full_name, ref=ref or sha, test_dir=repository.test_dir)
        )
    check_id = str(uuid.uuid4())
    with login_for(repository, selectors.signed_up_map(repository)) as login:
        return _check(repository, files, target_url, allowed, check_id, login)


def _check(repository, files, target_url, allowed, check_id, login) -> dict:
    plan = _plan(
        repository,
        run_id=check_id,
        framework="playwright",
        files=files,
        target_url=target_url,
        allow_hosts=allowed,
        evidence=f"check-{check_id}",
        login=login,
    )
    return schemas.validate(REPORT_SCHEMA, verify(plan, heal=_no_heal))


def _plan(
    repository,
    *,
    evidence: str,
    heals: bool = False,
    **given,
) -> Plan:
    """How ``repository``'s tests run: a run's (``heals``: healed and quarantined) or a check's
    (reported only); ``evidence`` names its folder. ``given``: run_id, framework, files,
    target_url, allow_hosts, login and test_data."""
    return Plan(
        test_dir=repository.test_dir,
        failing_tests=repository.failing_tests,
        heal_rounds=settings.AMTP_VERIFY_HEAL_ROUNDS if heals else 0,
        budget_s=settings.AMTP_VERIFY_TIMEOUT_S,
        runner=runner_from_settings(),
        evidence_dir=settings.AMTP_VERIFY_EVIDENCE_DIR / evidence,
        quarantine=heals,
        **given,
    )


def _check_inputs(target_url: str, allow_hosts: list[str], allowed: list[str]) -> None:
    if problem := target_url_problem(target_url) or (None if target_url else TARGET_URL_INVALID):
        raise RunInputInvalid("target_url", problem)
    for entry in allow_hosts:
        try:
            parse_allow_host(entry)
        except ValueError as exc:
            raise RunInputInvalid("allow_host", str(exc)) from None
    if problem := target_address_problem(target_url, allowed):
        raise RunInputInvalid("target_url", problem)


def _no_heal(payload: dict, seconds: float) -> dict:
    raise AssertionError("a check has no healing round")  # heal_rounds=0: never called


def evidence_file(run: Run, path: str, listed: set[str]) -> Path | None:
    """The kept evidence file ``path`` of ``run``: only a path its reports list (``listed``),
    and only inside the run's own evidence folder (None otherwise, or when it is gone)."""
    if path not in listed:
        return None
    folder = (settings.AMTP_VERIFY_EVIDENCE_DIR / str(run.run_id)).resolve()
    candidate = (folder / path).resolve()
    if not candidate.is_relative_to(folder) or not candidate.is_file():
        return None
    return candidate
