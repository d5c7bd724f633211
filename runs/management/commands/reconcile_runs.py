"""``manage.py reconcile_runs``: end the runs whose workflow can no longer end them (R17).

Run it from cron (or a systemd timer) every few minutes; see docs/operations.md."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from amtp_site.temporal import ExitsWithoutFinalizing
from runs.errors import OrchestratorUnavailable
from runs.temporal.reconcile import reconcile_runs


class Command(ExitsWithoutFinalizing, BaseCommand):
    help = (
        "For every pending/running run older than the grace period, ask Temporal for its "
        "workflow: start a run that never started, end one whose workflow closed, leave the rest."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--grace",
            type=float,
            default=None,
            metavar="SECONDS",
            help="only runs created at least this long ago (default: AMTP_RECONCILE_GRACE_S, 900)",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="say what would be done, change nothing"
        )

    def handle(self, *args, grace, dry_run, **options):
        grace = settings.AMTP_RECONCILE_GRACE_S if grace is None else grace
        if grace < 0:
            raise CommandError(f"--grace: must be 0 or more seconds, not {grace}")
        try:
            outcomes = reconcile_runs(grace_s=grace, dry_run=dry_run)
        except OrchestratorUnavailable as exc:
            raise CommandError(str(exc)) from exc
        for outcome in outcomes:
            self.stdout.write(str(outcome))
        acted = sum(o.action != "left" for o in outcomes)
        self.stdout.write(f"{len(outcomes)} open runs older than {grace:g} s; {acted} reconciled")
