"""``manage.py run_worker``: the Temporal worker (flags default to settings)."""

import asyncio

from django.conf import settings
from django.core.management.base import BaseCommand

from amtp_site.child import undumpable
from runs.temporal.worker import run_worker


class Command(BaseCommand):
    help = "Run the Temporal worker for TestGenerationWorkflow and its activities."

    def add_arguments(self, parser):
        parser.add_argument("--task-queue", default=settings.TEMPORAL_TASK_QUEUE)
        parser.add_argument(
            "--processes",
            type=int,
            default=settings.AMTP_WORKER_PROCESSES,
            help="Agent processes running at once (each task gets a new one).",
        )

    def handle(self, *args, task_queue, processes, **options):
        undumpable()  # the worker holds every credential: no same-user process reads it
        asyncio.run(run_worker(task_queue=task_queue, processes=processes))
