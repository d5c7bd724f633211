"""Workflow histories of test runs: fetched for assertions, and recorded as replay fixtures
(tests/test_replay.py) when ``AMTP_RECORD_HISTORIES`` is set."""

import json
import os
import re
from pathlib import Path

from asgiref.sync import async_to_sync
from temporalio.client import WorkflowHistory

from amtp_site.temporal import connect

HISTORIES = Path(__file__).resolve().parent / "fixtures" / "histories"


def run_history(run_id) -> WorkflowHistory:
    async def fetch():
        client = await connect()
        return await client.get_workflow_handle(str(run_id)).fetch_history()

    return async_to_sync(fetch)()


def fixture_name(test_name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", test_name.lower()).strip("_")


def record_history(run, name: str) -> None:
    """A new fixture beside the others, when ``AMTP_RECORD_HISTORIES`` is set; a tag
    (anything but 1) names it ``<name>.<tag>.json``; ``AMTP_HISTORIES_DIR`` writes it
    elsewhere (scripts/record_release_histories.py). A recorded history is not overwritten:
    delete the current fixtures a workflow change makes obsolete and record them again."""
    tag = os.environ.get("AMTP_RECORD_HISTORIES")
    if not tag:
        return
    folder = Path(os.environ.get("AMTP_HISTORIES_DIR") or HISTORIES)
    path = folder / (f"{name}.json" if tag == "1" else f"{name}.{tag}.json")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        history = json.loads(run_history(run.run_id).to_json())
        path.write_text(json.dumps(strip_stack_traces(history), indent=1))


def strip_stack_traces(value):
    """Failure stack traces name this machine's paths; replay does not need them."""
    if isinstance(value, dict):
        if "Traceback (most recent call last)" in str(value.get("message", "")):
            value = {**value, "message": "(traceback removed)"}
        return {k: "" if k == "stackTrace" else strip_stack_traces(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_stack_traces(v) for v in value]
    return value
