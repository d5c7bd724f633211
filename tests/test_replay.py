"""Recorded workflow histories replay without non-determinism errors.

The fixtures are the histories of real test runs (`AMTP_RECORD_HISTORIES=1`, see
tests/histories.py), one per path the workflow takes: passed (web, mobile), VerifyTests
skipped and run with heals, a hold approved, rejected and expired, a stale base, a cancel in
each stage, retries after a worker kill and service restarts. A change to
TestGenerationWorkflow that would break a running workflow fails here. Before 1.0.0 such a
change re-records them; from 1.0.0 on, a released history keeps replaying (CHANGELOG.md).
"""

from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from runs.temporal.workflow import TestGenerationWorkflow

HISTORIES = sorted((Path(__file__).resolve().parent / "fixtures" / "histories").glob("*.json"))


def test_there_are_histories_to_replay():
    assert len(HISTORIES) >= 20


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
def test_history_replays_deterministically(path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=[TestGenerationWorkflow])
    result = async_to_sync(replayer.replay_workflow)(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
