"""``manage.py run_system``: the main job behind ``make run``.

Brings up the embedded services (unless external ones are configured), migrates, ensures the
admin login, creates the two demo repositories on first start, starts the worker and the web
server, launches a demo run (whose app the worker starts from demo/web's own recipe, in the
sandbox: BootApp) and prints where to look. Keeps serving until Ctrl-C, then stops
everything it started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, close_old_connections

from agents.providers.probe import check_providers
from amtp_site import devstack
from amtp_site.ports import port_problem
from repositories.hosts.probe import check_github
from runs import demo, selectors
from runs.models import Run
from runs.services import run_create

ROOT = Path(__file__).resolve().parents[3]
CHILD_DIED = "{name} exited with code {code}"


class Command(BaseCommand):
    help = "Start AMTP (services, worker, web), create the demo repositories and run a demo."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo-run", action="store_true")
        parser.add_argument(
            "--stop-devstack",
            action="store_true",
            help="stop the embedded services on exit (make run started them)",
        )

    def handle(self, *args, port, no_demo_run, stop_devstack, **options):
        if problem := port_problem(port):  # before anything starts (make run asked too)
            raise CommandError(problem)
        # The services must be up before this process loaded its settings (`make run` does
        # `manage.py devstack up` first), so only check them here.
        external = devstack.external_services()
        down = [s.name for s in devstack.status() if not s.running and s.name not in external]
        if down:
            raise CommandError(f"{', '.join(down)} not running: run `manage.py devstack up` first")
        started = [s for s in devstack.SERVICES if s not in external] if stop_devstack else []
        call_command("migrate", interactive=False, verbosity=0)
        call_command("ensure_admin")
        repos = demo.ensure_demo_repositories(devstack.STACK_DIR / "demo")
        self._say_demo_app()
        self._say_provider()
        children = [
            self._spawn("worker", [sys.executable, "manage.py", "run_worker"]),
            self._spawn(
                "web", [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
            ),
        ]
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        base = f"http://127.0.0.1:{port}"
        self.stdout.write(
            f"\nAMTP is up: admin {base}/admin/  API docs {base}/api/docs  "
            f"Temporal UI {self._temporal_ui()}"
        )
        if not no_demo_run:
            run = run_create(
                repository=repos["web"], trigger=Run.Trigger.CLI, requested_by="make run"
            )
            self.stdout.write(
                f"demo run {run.run_id} on {run.repo_full_name}: "
                f"{base}/admin/runs/run/{run.run_id}/change/"
            )
            threading.Thread(target=self._report, args=(run, stop), daemon=True).start()
        self.stdout.write("Press Ctrl-C to stop everything.\n")
        died = ""
        try:
            while not stop.is_set():
                for name, proc in children:
                    if proc.poll() is not None and not died:
                        died = CHILD_DIED.format(name=name, code=proc.returncode)
                        self.stderr.write(died + "; stopping")
                        stop.set()
                stop.wait(1)
        finally:
            self._shutdown(children, started)
        if died:  # a system with a dead part is not a clean stop: make run exits non-zero
            raise CommandError(died)

    def _say_demo_app(self) -> None:
        if settings.AMTP_BOOT_APPS:
            self.stdout.write(
                "demo web app: the worker starts it from demo/web's recipe "
                "(.devcontainer/devcontainer.json) in the sandbox; the first run installs its "
                f"npm packages (cached under {settings.AMTP_BOOT_CACHE_DIR})"
            )
        else:
            self.stdout.write(
                "demo web app: not started (AMTP_BOOT_APPS=false): the demo's tests are "
                "written from the source, unverified"
            )

    def _say_provider(self) -> None:
        provider = settings.AMTP_LLM_PROVIDER
        if provider == "offline":
            self.stdout.write(
                "LLM provider: offline (rule-based, no network). Set ANTHROPIC_API_KEY "
                "or OPENAI_BASE_URL to use a real model."
            )
        else:
            self.stdout.write(f"LLM provider: {provider}; checking it (manage.py check_providers)")
            self._say_findings(check_providers())
        if settings.GITHUB_TOKEN or settings.GITHUB_APP_ID:
            self.stdout.write("GitHub credentials set; checking them (manage.py check_providers)")
            self._say_findings(check_github())

    def _say_findings(self, findings) -> None:
        for finding in findings:  # printed, never fatal: the system still starts
            write = self.stdout.write if finding.level == "ok" else self.stderr.write
            write(f"  {finding.level}: {finding.text}")

    def _temporal_ui(self) -> str:
        ui = devstack.read_state().get("temporal", {}).get("ui_port")
        return (
            f"http://127.0.0.1:{ui}"
            if ui and "temporal" not in devstack.external_services()
            else "-"
        )

    def _spawn(self, name: str, cmd: list[str]) -> tuple[str, subprocess.Popen]:
        # Own process group: Ctrl-C reaches us once, and we stop the children in order.
        return name, subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, env=os.environ.copy())

    def _report(self, run: Run, stop: threading.Event) -> None:
        while not stop.is_set():
            close_old_connections()  # after a PostgreSQL restart: a new connection
            try:
                run.refresh_from_db()
            except DatabaseError:  # PostgreSQL is down; the run goes on without us
                stop.wait(1)
                continue
            if run.is_terminal:
                break
            time.sleep(1)
        if run.status == Run.Status.PASSED:
            self.stdout.write(
                self.style.SUCCESS(
                    f"demo run passed: head branch {run.head_branch} in {run.repository.local_path} "
                    f"(git -C {run.repository.local_path} log {run.head_branch})"
                )
            )
            self._say_grounding(run)
        elif run.is_terminal:
            self.stderr.write(f"demo run {run.status}: {run.error_type} {run.error_message}")

    def _say_grounding(self, run: Run) -> None:
        """What the run page shows of the app: the explored map and the coverage line."""
        for stage in run.stages.filter(name__in=("explore_app", "verify_tests")):
            self.stdout.write(f"  {stage.name}: {stage.status} ({stage.note})")
        if coverage := selectors.coverage(run):
            self.stdout.write(f"  coverage: {coverage['headline']}")

    def _shutdown(self, children, started: list[str]) -> None:
        self.stdout.write("stopping worker and web ...")
        for _, proc in children:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for _, proc in children:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        if started:
            self.stdout.write(f"stopping {', '.join(started)} ...")
            devstack.down(tuple(started))
