"""The Temporal client, from settings. Retries are Temporal's own (the SDK client adds none).

Async code (the worker) calls :func:`connect`. Sync code (the web: starting, cancelling and
signalling runs) calls :func:`call`, which runs the request on one long-lived client per
process instead of connecting for each request (a TCP handshake and a ``GetSystemInfo`` round
trip: 1-3 ms on loopback, a TLS handshake and a WAN round trip more against Temporal Cloud).
The SDK's client is not thread-safe; its documented way to use it from other threads is to
keep the event loop that made it and hand each call to that loop with
``asyncio.run_coroutine_threadsafe`` (https://python.temporal.io/temporalio.client.Client.html),
so the client lives on one event loop in a daemon thread of its own. The SDK's runtime does
not survive a fork (it refuses to connect in the child of a process that used it), so a
pre-forking server such as gunicorn must not connect before it forks: nothing here connects
at import time.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NoReturn, TypeVar

from django.conf import settings
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from amtp_site import tracing

T = TypeVar("T")


async def connect(*, runtime: Runtime | None = None) -> Client:
    """A client; with tracing on, its interceptor (and so its workers') carries the trace."""
    return await Client.connect(
        settings.TEMPORAL_ADDRESS,
        namespace=settings.TEMPORAL_NAMESPACE,
        api_key=settings.TEMPORAL_API_KEY or None,
        tls=tls_config(),
        interceptors=tracing.temporal_interceptors(),
        runtime=runtime,
    )


_runtimes: dict[str, Runtime] = {}


def metrics_runtime() -> Runtime | None:
    """The SDK runtime serving Temporal's own metrics (schedule-to-start latency, task slots,
    poll failures) on ``AMTP_TEMPORAL_METRICS_ADDRESS``; None (the default runtime) when it
    is empty. One per address and process: a runtime binds its port when it is made."""
    address = settings.AMTP_TEMPORAL_METRICS_ADDRESS
    if not address:
        return None
    with _lock:
        if address not in _runtimes:
            # Prometheus's conventions: seconds, and counters ending in _total.
            prometheus = PrometheusConfig(
                bind_address=address,
                durations_as_seconds=True,
                unit_suffix=True,
                counters_total_suffix=True,
            )
            config = TelemetryConfig(metrics=prometheus)
            _runtimes[address] = Runtime(telemetry=config)
        return _runtimes[address]


def tls_config() -> TLSConfig | bool:
    """``TEMPORAL_TLS`` alone: TLS with the system's roots (an API key needs it). With
    certificate files: mTLS, and a private CA when ``TEMPORAL_TLS_SERVER_CA_FILE`` is set."""
    files = {
        "client_cert": settings.TEMPORAL_TLS_CLIENT_CERT_FILE,
        "client_private_key": settings.TEMPORAL_TLS_CLIENT_KEY_FILE,
        "server_root_ca_cert": settings.TEMPORAL_TLS_SERVER_CA_FILE,
    }
    if not settings.TEMPORAL_TLS or not any(files.values()):
        return settings.TEMPORAL_TLS
    return TLSConfig(**{name: Path(path).read_bytes() for name, path in files.items() if path})


class _Loop:
    """An event loop in a daemon thread and the clients made on it, by connection settings
    (a changed TEMPORAL_ADDRESS gets a client of its own)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.clients: dict[tuple, Client] = {}
        threading.Thread(target=self.loop.run_forever, name="temporal-client", daemon=True).start()


_loop: _Loop | None = None
_lock = threading.Lock()


def _this_process() -> _Loop:
    global _loop
    with _lock:
        if _loop is None:
            _loop = _Loop()
        return _loop


def call(request: Callable[[Client], Awaitable[T]], *, timeout: float | None = None) -> T:
    """Run ``request(client)`` on this process's long-lived client and return its result.
    A connection that fails raises as :func:`connect` does and is tried again next call;
    past ``timeout`` seconds (connecting included) it raises TimeoutError."""
    here = _this_process()
    key = (
        settings.TEMPORAL_ADDRESS,
        settings.TEMPORAL_NAMESPACE,
        settings.TEMPORAL_API_KEY,
        settings.TEMPORAL_TLS,
        settings.TEMPORAL_TLS_CLIENT_CERT_FILE,
        tracing.enabled(),
    )

    async def run() -> T:
        client = here.clients.get(key)
        if client is None:
            client = here.clients[key] = await connect()
        return await request(client)

    return asyncio.run_coroutine_threadsafe(run(), here.loop).result(timeout)


async def task_queue_pollers(client: Client, task_queue: str) -> set[str]:
    """The identities of the workers polling ``task_queue`` for workflow tasks
    (DescribeTaskQueue). Temporal lists a poller for a few minutes after its last poll, so a
    worker stopped just now may still be named; an empty set means no worker is there."""
    answer = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return {poller.identity for poller in answer.pollers}


def exit_without_finalizing(code: int) -> NoReturn:
    """End a short-lived command that used the client, skipping interpreter finalization.

    The SDK's Rust runtime keeps threads of its own that can still call into Python while
    the interpreter finalizes, which aborts the process ("Fatal Python error:
    PyGILState_Release: thread state ... must be current when releasing") after its work
    is done and with a non-zero status
    (https://github.com/temporalio/sdk-python/issues/300, open upstream). The workaround
    used there is ``os._exit``; what a normal exit would still do that matters here runs
    first: atexit handlers, closing database connections, flushing stdout and stderr."""
    from django.db import connections

    atexit._run_exitfuncs()
    connections.close_all()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe must not bring finalization back
            pass
    os._exit(code)


class ExitsWithoutFinalizing:
    """A management command mixin: run from the shell, the command ends through
    :func:`exit_without_finalizing`, with the status Django would have given it (a
    CommandError's 1, a traceback's 1). ``call_command`` does not come here."""

    def run_from_argv(self, argv):
        try:
            super().run_from_argv(argv)
            code = 0
        except SystemExit as exc:  # a CommandError, printed by Django already
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:
            traceback.print_exc()
            code = 1
        exit_without_finalizing(code)


async def workflow_result(client: Client, workflow_id: str):
    """The workflow's result, once it exists: a run's workflow is started by a worker's
    dispatcher moments after the run is accepted, so at first there may be none. Asks again
    after 5 ms, then twice as long each time up to 100 ms."""
    handle, pause = client.get_workflow_handle(workflow_id), 0.005
    while True:
        try:
            return await handle.result()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
        await asyncio.sleep(pause)
        pause = min(0.1, pause * 2)
