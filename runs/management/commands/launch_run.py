"""``manage.py launch_run OWNER/NAME``: start a run from the command line, optionally wait."""

import time

from django.core.management.base import BaseCommand, CommandError

from amtp_site.errors import AmtpError
from repositories.models import DepthLevel, Framework
from repositories.targets import target_url_problem
from runs.management.repository_arg import repository_arg
from runs.models import Run
from runs.services import run_create

POLL_SECONDS = 0.5


class Command(BaseCommand):
    help = "Launch a test-generation run; --wait prints each stage and exits 0 only on success."

    def add_arguments(self, parser):
        parser.add_argument("repo", help="owner/name of a registered repository")
        parser.add_argument(
            "--ref", default="", help="branch, tag or SHA (default: the default branch)"
        )
        parser.add_argument("--depth-level", default="", choices=["", *DepthLevel.values])
        parser.add_argument("--framework", default="", choices=["", *Framework.values])
        parser.add_argument("--base-branch", default="")
        parser.add_argument(
            "--target-url",
            default="",
            metavar="URL",
            help="a running instance of the app to verify the tests against "
            "(default: the repository's preview URL)",
        )
        parser.add_argument(
            "--local",
            default="",
            metavar="PATH",
            help="a local git repository (registered as host 'local' if new)",
        )
        parser.add_argument("--wait", action="store_true")
        parser.add_argument("--timeout", type=float, default=3600, help="seconds to --wait")

    def handle(self, *args, repo, ref, depth_level, framework, base_branch, **options):
        if problem := target_url_problem(options["target_url"]):
            raise CommandError(f"--target-url: {problem}")
        repository = repository_arg(repo, options["local"], self.stdout.write)
        try:
            run = run_create(
                repository=repository,
                ref=ref,
                depth_level=depth_level,
                target_framework=framework,
                base_branch=base_branch,
                target_url=options["target_url"],
                trigger=Run.Trigger.CLI,
                requested_by="cli",
            )
        except AmtpError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"run {run.run_id} started: {repository.full_name}@{run.ref} "
            f"({run.depth_level}, {run.target_framework})"
        )
        self.stdout.write(f"  admin: http://127.0.0.1:8000/admin/runs/run/{run.run_id}/change/")
        if options["wait"]:
            self._wait(run, options["timeout"])

    def _wait(self, run: Run, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        seen: dict[str, str] = {}
        while time.monotonic() < deadline:
            run.refresh_from_db()
            for stage in run.stages.order_by("position"):
                state = (
                    f"{stage.status}"
                    + (
                        f" ({stage.error_type}: {stage.error_message[:200]})"
                        if stage.error_type
                        else ""
                    )
                    + (f" — {stage.note[:200]}" if stage.note else "")
                )
                if seen.get(stage.name) != state:
                    seen[stage.name] = state
                    self.stdout.write(f"  {stage.name:<22} {state}")
            if run.is_terminal:
                break
            time.sleep(POLL_SECONDS)
        else:
            raise CommandError(f"run {run.run_id} still {run.status} after {timeout:.0f} s")
        if run.status != Run.Status.PASSED:
            raise CommandError(
                f"run {run.run_id} {run.status}: {run.error_type} {run.error_message}"
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"run {run.run_id} passed: PR {run.pr_url} (branch {run.head_branch})"
            )
        )
