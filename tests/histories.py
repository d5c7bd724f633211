"""Record one run's workflow history as a replay fixture (tests/test_replay.py), when
``AMTP_RECORD_HISTORIES=1``; for tests whose interesting run is not their only one."""

import json
import os

from asgiref.sync import async_to_sync

from amtp_site.temporal import connect
from tests.test_workflow import HISTORIES, strip_stack_traces


def record_history(run, name: str) -> None:
    if not os.environ.get("AMTP_RECORD_HISTORIES"):
        return

    async def fetch():
        client = await connect()
        return (await client.get_workflow_handle(str(run.run_id)).fetch_history()).to_json()

    history = json.loads(async_to_sync(fetch)())
    (HISTORIES / f"{name}.json").write_text(json.dumps(strip_stack_traces(history), indent=1))
