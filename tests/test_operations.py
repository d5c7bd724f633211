"""What an operator reads: who may scrape ``/metrics``, what a stored artifact and a refusal
add to it, runs waiting to start, and the JSON log lines (AMTP_LOG_JSON)."""

import json
import os
import subprocess
import sys
import uuid

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from runs import artifacts
from runs.services import run_create
from tests.api_support import bearer, make_token, post  # noqa: F401  (fixture)
from tests.factories import RepositoryFactory, RunFactory

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-7f3a9c1e5b"


def scrape(client: Client | None = None, **extra):
    return (client or Client()).get("/metrics", **extra)


def values(response) -> dict[tuple, float]:
    assert response.status_code == 200, response.content
    return {
        (s.name, *sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
    }


@pytest.mark.parametrize(
    "remote,headers,allowed",
    [
        ("127.0.0.1", {}, True),  # the default: loopback only
        ("::1", {}, True),
        ("10.0.0.5", {}, False),
        ("not-an-address", {}, False),
        # X-Forwarded-For from a client that is not a trusted proxy is the client's own text
        ("203.0.113.9", {"X-Forwarded-For": "127.0.0.1"}, False),
        ("203.0.113.9", {"X-Forwarded-For": "192.0.2.4"}, False),
        # from the trusted proxy: the last address it did not add itself
        ("10.1.2.3", {"X-Forwarded-For": "192.0.2.4"}, True),
        ("10.1.2.3", {"X-Forwarded-For": "192.0.2.4, 10.9.9.9"}, True),
        ("10.1.2.3", {"X-Forwarded-For": "192.0.2.4, 198.51.100.7"}, False),  # left: spoofable
        ("10.1.2.3", {"X-Forwarded-For": "garbage" * 500}, False),
        ("10.1.2.3", {}, False),
        # a bearer token decides alone, from any address
        ("198.51.100.7", {"Authorization": f"Bearer {TOKEN}"}, True),
        ("198.51.100.7", {"Authorization": f"bearer {TOKEN}"}, True),
        ("127.0.0.1", {"Authorization": f"Bearer {TOKEN}x"}, False),
        ("127.0.0.1", {"Authorization": f"Basic {TOKEN}"}, False),
        ("127.0.0.1", {"Authorization": "Bearer "}, False),
        ("198.51.100.7", {"Authorization": f"Bearer {TOKEN[:-1]}"}, False),
    ],
)
def test_metrics_answer_only_allowed_addresses_and_the_token(settings, remote, headers, allowed):
    settings.AMTP_METRICS_ALLOWED_CIDRS = ["127.0.0.0/8", "::1/128", "192.0.2.0/24"]
    settings.AMTP_METRICS_TRUSTED_PROXIES = ["10.0.0.0/8"]
    settings.AMTP_METRICS_TOKEN = TOKEN
    response = scrape(Client(headers=headers), REMOTE_ADDR=remote)
    if allowed:
        assert response.status_code == 200 and b"amtp_runs_pending" in response.content
        return
    assert response.status_code == 403
    body = response.content.decode()
    assert "amtp_" not in body and TOKEN not in body
    if "Authorization" in headers:
        assert body == "/metrics: the bearer token is not AMTP_METRICS_TOKEN\n"
    else:
        assert "is not in AMTP_METRICS_ALLOWED_CIDRS" in body


def test_without_a_token_setting_no_bearer_token_is_accepted(settings):
    settings.AMTP_METRICS_TOKEN = ""
    assert scrape(Client(headers={"Authorization": "Bearer "})).status_code == 403
    assert scrape(Client(headers={"Authorization": "Bearer x"})).status_code == 403


def test_an_artifact_is_counted_once_and_waiting_runs_are_read_at_scrape(settings):
    repo = RepositoryFactory()
    waiting = run_create(repository=repo, trigger="cli")  # no worker: it waits in run_starts
    report = {
        "framework": "playwright",
        "settings": {"heal_rounds": 1},
        "tests": [{"status": s} for s in ("passed", "healed", "healed", "quarantined")],
        "totals": {"healed": 2, "quarantined": 1, "failed": 0},
    }
    session = {"agent": "test_engineer", "model": "m-heal", "usage": {"input_tokens": 900}}
    meta = {"pid": 1, "heal_sessions": [session, {**session, "usage": {"output_tokens": 40}}]}
    run = RunFactory(repository=repo, status="running")
    before = values(scrape())
    for attempt in range(2):  # the second attempt gets the first one's artifact: not counted
        key = f"{attempt:064x}"
        artifacts.store(run, "verification_report", "s", report, meta, key, "VerifyTests")
    after = values(scrape())

    def grew(name, **labels):
        key = (name, *sorted(labels.items()))
        return after.get(key, 0) - before.get(key, 0)

    assert grew("amtp_tests_total", framework="playwright", outcome="healed") == 2
    assert grew("amtp_tests_total", framework="playwright", outcome="passed") == 1
    assert grew("amtp_heals_total", result="healed") == 2
    assert grew("amtp_heals_total", result="not_healed") == 1
    tokens = {"agent": "test_engineer", "model": "m-heal"}
    assert grew("amtp_llm_tokens_total", direction="input", **tokens) == 900
    assert grew("amtp_llm_tokens_total", direction="output", **tokens) == 40
    assert grew("amtp_runs_accepted_total", trigger="cli") == 0  # accepted before `before`
    assert after[("amtp_run_starts_waiting",)] == 1
    assert after[("amtp_runs_pending",)] == 1 and waiting.status == "pending"
    assert 0 <= after[("amtp_run_starts_oldest_seconds",)] < 600


def test_a_rate_limited_submit_is_counted(valkey, make_token):  # noqa: F811
    RepositoryFactory(full_name="acme/limited", rate_limit_runs=1, rate_limit_window_seconds=600)
    api = bearer(make_token())
    before = values(scrape()).get(("amtp_refusals_total", ("reason", "rate_limit")), 0)
    accepted = values(scrape()).get(("amtp_runs_accepted_total", ("trigger", "api")), 0)
    assert post(api, "/api/runs", {"repo_full_name": "acme/limited"}).status_code == 201
    assert post(api, "/api/runs", {"repo_full_name": "acme/limited"}).status_code == 429
    after = values(scrape())
    assert after[("amtp_refusals_total", ("reason", "rate_limit"))] == before + 1
    assert after[("amtp_runs_accepted_total", ("trigger", "api"))] == accepted + 1


LOG_IN_AN_ACTIVITY = """
import dataclasses, logging
from temporalio.testing import ActivityEnvironment
from amtp_site import logs

def crawl():
    with logs.bound(stage="crawl_repo"):
        try:
            raise RuntimeError("ghp_" + "a1B2c3D4" * 4 + "e5F6")
        except RuntimeError:
            logging.getLogger("amtp.test").exception("push with %s failed", TOKEN)

env = ActivityEnvironment()
env.info = dataclasses.replace(
    env.info, workflow_id=RUN_ID, activity_type="CrawlRepo", attempt=3
)
env.run(crawl)
logging.getLogger("amtp.test").warning("outside: %s", "plain")
"""


def test_json_logs_carry_the_run_and_never_a_secret():
    run_id, token = str(uuid.uuid4()), "ghs_" + "Zq8" * 12
    code = f"TOKEN = {token!r}\nRUN_ID = {run_id!r}\n" + LOG_IN_AN_ACTIVITY
    env = {**os.environ, "AMTP_LOG_JSON": "true", "GITHUB_TOKEN": token}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert len(lines) == 2, done.stderr
    failed, outside = lines
    assert failed["level"] == "ERROR" and failed["logger"] == "amtp.test"
    assert {k: failed[k] for k in ("run_id", "workflow_id", "activity", "stage", "attempt")} == {
        "run_id": run_id,
        "workflow_id": run_id,
        "activity": "CrawlRepo",
        "stage": "crawl_repo",
        "attempt": 3,
    }
    # The worker's own token (held), and one that only looks like a credential (a pattern).
    assert failed["message"] == "push with [REDACTED:held-secret] failed"
    assert "RuntimeError: [REDACTED:github-pat]" in failed["exception"]
    assert token not in done.stderr and "a1B2c3D4" not in done.stderr
    assert outside["message"] == "outside: plain" and "run_id" not in outside
