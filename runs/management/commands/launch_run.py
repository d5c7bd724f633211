"""``manage.py launch_run OWNER/NAME``: start a run from the command line, optionally wait."""

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from temporalio.service import RPCError

from amtp_site import temporal
from amtp_site.errors import AmtpError
from repositories.errors import RepositoryInvalid
from repositories.models import DepthLevel, Framework, Repository
from repositories.services import repository_allow_hosts_add
from repositories.targets import target_url_problem
from runs.errors import RunInputInvalid
from runs.management.repository_arg import repository_arg
from runs.models import Run
from runs.services import run_create

POLL_SECONDS = 0.5
WORKER_CHECK_SECONDS = 15  # while a waited-for run is pending: is a worker there to start it?
TEMPORAL_TIMEOUT_S = 10

RUN_HOSTS = (
    "allowed hosts of this run only: {hosts} (kept for running it again; {repo}'s own list is "
    "unchanged: add --remember to save them there)"
)
NO_WORKER = (
    "no worker polls task queue {queue} on {address}: the run stays pending until one does "
    "(start one: manage.py run_worker --task-queue {queue})"
)
WORKER_BACK = "a worker polls task queue {queue} now: {names}"
TEMPORAL_UNREACHABLE = (
    "could not ask Temporal at {address} for the workers of task queue {queue} ({error}); "
    "the run starts when a worker can reach both"
)


class Command(temporal.ExitsWithoutFinalizing, BaseCommand):
    help = "Launch a test-generation run; --wait prints each stage and exits 0 only on success."
    kind = Run.Kind.GENERATION

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
        parser.add_argument(
            "--allow-host",
            action="append",
            default=[],
            metavar="HOST[:PORT]",
            help="let the tests reach HOST (on PORT only, if given) although it is a loopback or "
            "private address (repeatable). With --target-url it applies to this run (and to "
            "running it again) only, unless --remember; without, it is added to the "
            "repository's allowed hosts",
        )
        parser.add_argument(
            "--remember",
            action="store_true",
            help="save --allow-host entries in the repository's allowed hosts for every run",
        )
        parser.add_argument("--wait", action="store_true")
        parser.add_argument("--timeout", type=float, default=3600, help="seconds to --wait")

    def handle(self, *args, repo, ref, depth_level, framework, base_branch, **options):
        if problem := target_url_problem(options["target_url"]):
            raise CommandError(f"--target-url: {problem}")
        try:  # one transaction: a refused run leaves no registration or allow-list behind
            with transaction.atomic():
                repository = repository_arg(repo, options["local"], self.stdout.write)
                for_run = bool(options["target_url"]) and not options["remember"]
                hosts = options["allow_host"]
                allowed = "" if for_run else self._allow(repository, hosts)
                run = run_create(
                    repository=repository,
                    ref=ref,
                    depth_level=depth_level,
                    target_framework=framework,
                    base_branch=base_branch,
                    target_url=options["target_url"],
                    allowed_hosts=hosts if for_run else (),
                    trigger=Run.Trigger.CLI,
                    requested_by="cli",
                    kind=self.kind,
                )
        except RunInputInvalid as exc:
            flag = "allow-host" if exc.field == "allowed_hosts" else exc.field.replace("_", "-")
            raise CommandError(f"--{flag}: {exc.rule}") from exc
        except AmtpError as exc:
            raise CommandError(exc.message) from exc
        if allowed:
            self.stdout.write(allowed)
        if run.allowed_hosts:
            self.stdout.write(
                RUN_HOSTS.format(hosts=", ".join(run.allowed_hosts), repo=repository.full_name)
            )
        self.stdout.write(
            f"{self.kind} run {run.run_id} started: {repository.full_name}@{run.ref} "
            f"({run.depth_level}, {run.target_framework})"
        )
        self.stdout.write(f"  admin: http://127.0.0.1:8000/admin/runs/run/{run.run_id}/change/")
        workers = self._workers()
        if options["wait"]:
            self._wait(run, options["timeout"], workers)

    def _allow(self, repository: Repository, hosts: list[str]) -> str:
        """``--allow-host`` entries added to the repository's allowed hosts; what to say
        about it once the run is accepted."""
        if not hosts:
            return ""
        try:
            added = repository_allow_hosts_add(repository=repository, hosts=hosts)
        except RepositoryInvalid as exc:
            shown = "; ".join(
                f"{'--allow-host' if field == 'allowed_hosts' else field}: {message}"
                for field, messages in exc.errors.items()
                for message in messages
            )
            raise CommandError(shown) from exc
        return (
            f"allowed hosts of {repository.full_name}: "
            + (f"added {', '.join(added)}" if added else "already listed")
            + f" (now {', '.join(repository.allowed_hosts)})"
        )

    def _workers(self) -> set[str] | None:
        """The workers polling the queue the run goes to, saying so when there are none;
        None when Temporal could not be asked (the run is accepted either way)."""
        queue, address = settings.TEMPORAL_TASK_QUEUE, settings.TEMPORAL_ADDRESS
        try:
            workers = temporal.call(
                lambda client: temporal.task_queue_pollers(client, queue),
                timeout=TEMPORAL_TIMEOUT_S,
            )
        except (RPCError, RuntimeError, TimeoutError) as exc:
            # RuntimeError: the SDK's "Failed client connect"
            error = str(exc) or type(exc).__name__
            self.stderr.write(
                TEMPORAL_UNREACHABLE.format(address=address, queue=queue, error=error)
            )
            return None
        if not workers:
            self.stderr.write(NO_WORKER.format(queue=queue, address=address))
        return workers

    def _wait(self, run: Run, timeout: float, workers: set[str] | None) -> None:
        deadline = time.monotonic() + timeout
        seen: dict[str, str] = {}
        checked = time.monotonic()
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if (
                run.status == Run.Status.PENDING
                and not workers
                and time.monotonic() - checked > WORKER_CHECK_SECONDS
            ):
                checked = time.monotonic()
                if workers := self._workers():
                    self.stdout.write(
                        WORKER_BACK.format(
                            queue=settings.TEMPORAL_TASK_QUEUE, names=", ".join(sorted(workers))
                        )
                    )
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
            hint = " with no worker polling its task queue" if workers == set() else ""
            raise CommandError(f"run {run.run_id} still {run.status} after {timeout:.0f} s{hint}")
        if run.status != Run.Status.PASSED:
            raise CommandError(
                f"run {run.run_id} {run.status}: {run.error_type} {run.error_message}"
            )
        outcome = f"PR {run.pr_url} (branch {run.head_branch})" if run.pr_url else "no PR"
        self.stdout.write(self.style.SUCCESS(f"run {run.run_id} passed: {outcome}"))
