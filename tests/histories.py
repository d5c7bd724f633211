"""Record one run's workflow history as a replay fixture (tests/test_replay.py), when
``AMTP_RECORD_HISTORIES=1``; for tests whose interesting run is not their only one."""

import json
import os

from asgiref.sync import async_to_sync

from amtp_site.temporal import connect
from tests.test_workflow import write_history


def record_history(run, name: str) -> None:
    if not os.environ.get("AMTP_RECORD_HISTORIES"):
        return

    async def fetch():
        client = await connect()
        return (await client.get_workflow_handle(str(run.run_id)).fetch_history()).to_json()

    write_history(name, json.loads(async_to_sync(fetch)()))
