"""Recorded workflow histories replay without non-determinism errors.

Two sets (docs/releasing.md). The released histories (``fixtures/histories/released/<version>/``,
recorded by ``make release-histories``) are frozen: every one replays on today's workflows and
none changes (``released/SHA256SUMS``). The current ones, below, follow the workflow as it is
and may be recorded again when an unreleased change reshapes it.

The current fixtures are the histories of real test runs (`AMTP_RECORD_HISTORIES=1`, see
tests/histories.py), one per path a workflow takes. TestGenerationWorkflow: passed (web,
mobile), VerifyTests skipped and run with heals, a hold approved, rejected and expired, a
stale base, a cancel in each stage, retries after a worker kill and service restarts.
MaintenanceWorkflow: a maintenance run that heals and opens its PR, one cancelled in
ReverifyTests, retries through GitHub 5xx and after a worker kill. CheckWorkflow: a check run
reported and run again, one cancelled, one reported through GitHub 5xx, a fork's check run
shown while held then approved, rejected (with and without AMTP_PUBLIC_URL), expired,
cancelled, and one whose hold GitHub refused (patch ``check-run-reports-hold``). A change to a
workflow that would break a running workflow fails here.
"""

import base64
import json
import shutil
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from temporalio.activity import _Definition
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from runs.temporal.activities import AgentActivities
from runs.temporal.worker import ACTIVITIES, WORKFLOWS
from tests import released
from tests.released import RELEASED, RUN_WORKFLOWS, manifest_problems, workflow_type

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "histories"
CURRENT = sorted(FIXTURES.glob("*.json"))
HISTORIES = CURRENT + released.histories()


def history_id(path: Path) -> str:
    return str(path.relative_to(FIXTURES).with_suffix(""))


def test_there_are_histories_to_replay():
    types = [workflow_type(path) for path in CURRENT]
    assert types.count("TestGenerationWorkflow") >= 20
    assert types.count("MaintenanceWorkflow") >= 3
    assert types.count("CheckWorkflow") >= 3


def test_every_release_has_histories_of_every_run_workflow():
    versions = sorted(path for path in RELEASED.iterdir() if path.is_dir())
    assert [v.name for v in versions][:1] == ["1.0.0"]
    for version in versions:
        types = {workflow_type(path) for path in version.glob("*.json")}
        assert set(RUN_WORKFLOWS) <= types, (version.name, types)


def test_released_histories_are_as_they_were_recorded():
    """A released history stands for runs in flight on that release: it is never edited or
    re-recorded. A new release adds a folder and its lines in SHA256SUMS."""
    assert manifest_problems() == []


def test_an_edited_missing_or_unlisted_released_history_is_found(tmp_path):
    root = tmp_path / "released"
    shutil.copytree(RELEASED, root)
    first, second = released.histories(root)[:2]
    first.write_bytes(first.read_bytes().replace(b"}", b"} ", 1))
    second.unlink()
    (root / "1.0.0" / "new.json").write_text("{}")
    problems = manifest_problems(root)
    assert problems == [
        "1.0.0/new.json: not in SHA256SUMS",
        f"{second.relative_to(root)}: missing",
        f"{first.relative_to(root)}: changed (sha256 {released.sha256(first)}, "
        f"SHA256SUMS says {released.read_manifest(root)[str(first.relative_to(root))]})",
    ]


@pytest.mark.parametrize("path", HISTORIES, ids=[history_id(p) for p in HISTORIES])
def test_history_replays_deterministically(path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=list(WORKFLOWS))
    result = async_to_sync(replayer.replay_workflow)(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


def scheduled_activities(path: Path) -> set[str]:
    """The activity types a history scheduled: regular ones, and local ones (markers whose
    details carry the type)."""
    names = set()
    for event in json.loads(path.read_text())["events"]:
        if scheduled := event.get("activityTaskScheduledEventAttributes"):
            names.add(scheduled["activityType"]["name"])
        if marker := event.get("markerRecordedEventAttributes"):
            for payload in marker.get("details", {}).get("data", {}).get("payloads", []):
                names.add(json.loads(base64.b64decode(payload["data"]))["activity_type"])
    return names


def test_every_activity_a_history_scheduled_is_listed_in_the_worker():
    """The worker lists its activities (nothing is found by name): one left out of the list
    would fail only when a run reaches it."""
    listed = [
        _Definition.must_from_callable(fn).name
        for fn in [*ACTIVITIES, *AgentActivities(None).all()]
    ]
    scheduled = set().union(*(scheduled_activities(path) for path in HISTORIES))
    assert len(listed) == len(set(listed))
    assert {"MarkRunRunningAndTakeSlot", "EndRun", "RequestApproval", "CrawlRepo"} <= scheduled
    assert scheduled <= set(listed)
