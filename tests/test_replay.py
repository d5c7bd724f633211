"""Recorded workflow histories replay without non-determinism errors.

The fixtures were recorded from real runs (see `record_histories` in tests/test_workflow.py):
happy paths, approvals approved and rejected, a stale base, a cancellation. A change to
TestGenerationWorkflow that would break running workflows fails here.
"""

from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from runs.temporal.workflow import TestGenerationWorkflow

HISTORIES = sorted((Path(__file__).resolve().parent / "fixtures" / "histories").glob("*.json"))


def test_there_are_histories_to_replay():
    assert len(HISTORIES) >= 5


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
def test_history_replays_deterministically(path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=[TestGenerationWorkflow])
    result = async_to_sync(replayer.replay_workflow)(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
