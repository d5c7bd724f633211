"""One run through the real worker, accepted by ``POST /api/runs``, watched the way an
operator would: one trace exported to an OTLP collector, the web's and the worker's metrics
scraped."""

import socket
import time
import urllib.request

import pytest
from django.contrib.auth.models import User
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from amtp_site import tracing
from runs.models import Artifact, Run
from runs.temporal.worker_thread import WorkerThread
from tests.api_support import bearer, make_token, post  # noqa: F401  (fixture)
from tests.factories import RepositoryFactory
from tests.gitrepo import make_git_repo
from tests.otlp_collector import OtlpCollector
from tests.samples import DEMO_WEB
from tests.temporal_worker import wait_terminal

pytestmark = pytest.mark.django_db(transaction=True)

AGENTS = ("repo_crawler", "test_case_generator", "test_engineer")
# The activities a run without a target URL runs (ExploreApp and VerifyTests are skipped in
# CrawlRepo and GenerateTestCode: no activity of their own), one span each.
STAGE_ACTIVITIES = ("CrawlRepo", "GenerateTestCases", "GenerateTestCode", "CreatePullRequest")
TEMPORAL_SPANS = ("StartWorkflow", "RunWorkflow", "StartActivity", "RunActivity")


def free_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def samples(text: str) -> dict[tuple, float]:
    """{(name, (label, value), ...): value} of a Prometheus text page."""
    found = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, *sorted(s.labels.items()))] = s.value
    return found


def web_metrics() -> dict[tuple, float]:
    response = Client().get("/metrics")  # the test client comes from 127.0.0.1
    assert response.status_code == 200, response.content
    return samples(response.content.decode())


def scrape(address: str) -> str:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        return answer.read().decode()


@pytest.fixture
def traced(monkeypatch):
    with OtlpCollector() as collector:
        monkeypatch.setenv(tracing.ENDPOINT, collector.endpoint)
        assert tracing.setup("amtp-test") is not None
        try:
            yield collector
        finally:
            tracing.shutdown()  # exports what is left


def test_one_run_is_one_trace_and_its_values_are_scraped(
    tmp_path,
    temporal_env,
    traced,
    make_token,  # noqa: F811
):
    temporal_env.AMTP_WORKER_METRICS_ADDRESS = worker_address = free_address()
    temporal_env.AMTP_TEMPORAL_METRICS_ADDRESS = sdk_address = free_address()
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    RepositoryFactory(full_name="acme/observed", host="local", local_path=str(path))
    before = web_metrics()

    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2):
        api = bearer(make_token())
        answer = post(api, "/api/runs", {"repo_full_name": "acme/observed", "depth_level": "core"})
        assert answer.status_code == 201, answer.content
        run = wait_terminal(Run.objects.get(pk=answer.json()["run_id"]))
        assert run.status == "passed", (run.error_type, run.error_message)
        # The workflow counts the run just after marking it: the page has it at once or soon.
        finished = ("amtp_runs_finished_total", ("status", "passed"), ("trigger", "api"))
        deadline = time.monotonic() + 30
        while finished not in samples(worker_page := scrape(worker_address)):
            assert time.monotonic() < deadline, worker_page
            time.sleep(0.1)
        sdk_page = scrape(sdk_address)
    tracing.shutdown()  # every span exported; what follows is not traced
    detail = bearer(make_token()).get(f"/api/runs/{run.run_id}").json()

    # The trace: the request's span is the root, every stage's activity is in it.
    trace_id = detail["trace_id"]
    assert len(trace_id) == 32 and trace_id == run.traceparent.split("-")[1]
    temporal = [s for s in traced.spans if s.name.split(":")[0] in TEMPORAL_SPANS]
    assert {span.trace_id.hex() for span in temporal} == {trace_id}
    spans = [span for span in traced.spans if span.trace_id.hex() == trace_id]
    names = [span.name for span in spans]
    roots = [span for span in spans if not span.parent_span_id]
    assert [root.name for root in roots] == ["POST api/runs"], names
    for activity in STAGE_ACTIVITIES:
        assert names.count(f"RunActivity:{activity}") == 1, names
    assert "StartWorkflow:TestGenerationWorkflow" in names
    assert any(span.name in ("INSERT", "SELECT") for span in spans), "no psycopg span"
    admin = Client()
    admin.force_login(User.objects.create_superuser("observer", password=None))
    page = admin.get(f"/admin/runs/run/{run.run_id}/change/").content.decode()
    assert f'<code id="amtp-trace-id">{trace_id}</code>' in page

    # The web's /metrics: this run's values (counters of this process: compared with before).
    after = web_metrics()

    def grew(name, **labels):
        key = (name, *sorted(labels.items()))
        return after.get(key, 0) - before.get(key, 0)

    assert grew("amtp_runs_accepted_total", trigger="api") == 1
    assert grew("amtp_runs_finished_total", trigger="api", status="passed") == 1
    for stage in ("crawl_repo", "generate_test_cases", "generate_test_code"):
        assert grew("amtp_stage_duration_seconds_count", stage=stage, status="passed") == 1
    usage = {
        meta["agent"]: meta
        for meta in Artifact.objects.filter(run=run).values_list("meta", flat=True)
        if "usage" in meta
    }
    assert set(usage) == set(AGENTS)
    for agent, meta in usage.items():
        for direction in ("input", "output"):
            tokens = meta["usage"][f"{direction}_tokens"]
            assert tokens > 0
            labels = {"agent": agent, "model": meta["model"], "direction": direction}
            assert grew("amtp_llm_tokens_total", **labels) == tokens, (agent, direction)
    assert after[("amtp_run_starts_waiting",)] == 0
    assert after[("amtp_runs_pending",)] == 0
    assert any(key[0] == "django_http_requests_total_by_method_total" for key in after)
    assert any(key[0] == "django_db_execute_total" for key in after)

    # The worker's two ports: AMTP's own (above), and the Temporal SDK's.
    worker = samples(worker_page)
    assert any(k[:2] == ("amtp_llm_tokens_total", ("agent", "test_engineer")) for k in worker)
    sdk = samples(sdk_page)
    for name in (
        "temporal_workflow_task_schedule_to_start_latency_seconds_count",
        "temporal_activity_schedule_to_start_latency_seconds_count",
        "temporal_worker_task_slots_available",
    ):
        assert any(key[0] == name for key in sdk), sorted({key[0] for key in sdk})
