"""A task for the agent process pool's tests (tests/test_agent_processes.py). Its own small
module: a pool process imports it by name, and should not pay for pytest."""

import os
import sys

MARK: str | None = None  # set by a task; a later task must never see it


def one_task(name: str) -> dict:
    """What a task finds when it starts in its process, then leaves a mark there."""
    global MARK
    from django.db import connection

    import schemas
    from runs.temporal.agent_template import PRELOAD

    schema_files = len(list(schemas.SCHEMA_DIR.rglob("*.json")))
    found = {
        "pid": os.getpid(),
        "parent": os.getppid(),
        "mark_found": MARK,
        "connection_inherited": connection.connection is not None,
        "preloaded": all(m in sys.modules for m in (*PRELOAD, "anthropic", "openai")),
        # Compiled in the template (its CACHES), before this task validated anything:
        "validators_compiled": schemas._fast_validator.cache_info().currsize == schema_files
        and schemas._validator.cache_info().currsize == schema_files,
        "setting": os.environ.get("AMTP_PROBE_SETTING"),
    }
    MARK = name
    os.write(2, f"agent process says {name}\n".encode())  # reaches the worker's stderr
    with connection.cursor() as cursor:  # the process's own connection works
        cursor.execute("SELECT 1")
        found["query"] = cursor.fetchone()[0]
    return found


def fail_loudly(size: int) -> None:
    """Raises in the agent process with a message of ``size`` characters, a few frames deep."""

    def deeper(depth: int) -> None:
        if depth:
            deeper(depth - 1)
        raise RuntimeError("the agent broke: " + "x" * size)

    deeper(20)
