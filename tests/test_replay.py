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

import json
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from runs.temporal.worker import WORKFLOWS

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
