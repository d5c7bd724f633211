"""Recorded workflow histories replay without non-determinism errors.

The fixtures are the histories of real test runs (`AMTP_RECORD_HISTORIES=1`, see
tests/histories.py), one per path a workflow takes. TestGenerationWorkflow: passed (web,
mobile), VerifyTests skipped and run with heals, a hold approved, rejected and expired, a
stale base, a cancel in each stage, retries after a worker kill and service restarts.
MaintenanceWorkflow: a maintenance run that heals and opens its PR, one cancelled in
ReverifyTests, retries through GitHub 5xx and after a worker kill. CheckWorkflow: a check run
reported and run again, one cancelled, one reported through GitHub 5xx. A change to a
workflow that would break a running workflow fails here. Before 1.0.0 such a change
re-records them; from 1.0.0 on, a released history keeps replaying (CHANGELOG.md).
"""

import base64
import json
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from temporalio.activity import _Definition
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from runs.temporal.activities import AgentActivities
from runs.temporal.worker import ACTIVITIES, WORKFLOWS

HISTORIES = sorted((Path(__file__).resolve().parent / "fixtures" / "histories").glob("*.json"))


def workflow_type(path: Path) -> str:
    start = json.loads(path.read_text())["events"][0]
    return start["workflowExecutionStartedEventAttributes"]["workflowType"]["name"]


def test_there_are_histories_to_replay():
    types = [workflow_type(path) for path in HISTORIES]
    assert types.count("TestGenerationWorkflow") >= 20
    assert types.count("MaintenanceWorkflow") >= 3
    assert types.count("CheckWorkflow") >= 3


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
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
