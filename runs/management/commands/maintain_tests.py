"""``manage.py maintain_tests OWNER/NAME``: start a maintenance run, optionally wait.

The repository's tests re-verified against its preview (or ``--target-url``), healed or
quarantined, and one maintenance pull request when something changed; the flags are
launch_run's."""

from runs.management.commands.launch_run import Command as LaunchRun
from runs.models import Run


class Command(LaunchRun):
    help = (
        "Launch a maintenance run (the repository's tests re-verified, healed, quarantined); "
        "--wait prints each stage and exits 0 only on success."
    )
    kind = Run.Kind.MAINTENANCE
