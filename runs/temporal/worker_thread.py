"""The real worker (agent process pool included) on its own event loop in a thread, for code
that needs a worker next to it in one process: the tests and the benchmarks in ``scripts/``."""

from __future__ import annotations

import asyncio
import threading

from django.conf import settings

from runs.temporal.worker import RespawningProcessPool, serve


class WorkerThread:
    """``with WorkerThread(queue):`` or ``start()``/``stop()``. ``build`` goes to
    :func:`runs.temporal.worker.build_worker` (other workflows/activities, interceptors)."""

    def __init__(self, task_queue: str, processes: int | None = None, **build) -> None:
        self.task_queue = task_queue
        self.pool = RespawningProcessPool(processes or settings.AMTP_WORKER_PROCESSES)
        self.build = build
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._main, daemon=True, name="temporal-worker")

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # raised again by start()
            self.error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        await serve(
            task_queue=self.task_queue,
            pool=self.pool,
            stop=self._stop,
            ready=self._ready,
            **self.build,
        )

    def start(self) -> WorkerThread:
        self.thread.start()
        self._ready.wait(60)
        if self.error:
            raise self.error
        return self

    def stop(self) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(60)

    def __enter__(self) -> WorkerThread:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
