"""``manage.py devstack up|down|status``: the embedded PostgreSQL, Valkey and Temporal."""

from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError

from amtp_site import devstack


class Command(BaseCommand):
    help = "Start, stop or show the embedded PostgreSQL, Valkey and Temporal servers."
    # It manages servers, not the project: the system checks (which import every URL, view
    # and admin module) would only make each call ~0.7 s of CPU slower.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["up", "down", "status"])
        parser.add_argument("services", nargs="*", help="postgres, valkey, temporal (default: all)")

    def handle(self, action, services, **options):
        unknown = set(services) - set(devstack.SERVICES)
        if unknown:
            raise CommandError(
                f"unknown service(s) {sorted(unknown)}; choose from {devstack.SERVICES}"
            )
        external = devstack.external_services()
        for name in external:
            self.stdout.write(
                f"{name}: using external {devstack.ENV_VARS[name]} from the environment"
            )
        selected = tuple(s for s in (services or devstack.SERVICES) if s not in external)
        if action == "up":
            try:
                devstack.up(selected, say=self.stderr.write)
            except devstack.DevstackError as exc:
                raise CommandError(str(exc)) from exc
        elif action == "down":
            devstack.down(selected)
        self._print_status()

    def _print_status(self):
        self.stdout.write(f"devstack folder: {devstack.STACK_DIR}")
        for svc in devstack.status():
            state = self.style.SUCCESS("running") if svc.running else self.style.WARNING("stopped")
            pid = f"pid {svc.pid}" if svc.pid else ""
            self.stdout.write(f"  {svc.name:<9} {state:<8} {svc.address} {pid}")
        for name, url in devstack.urls().items():
            self.stdout.write(f"  {name}={_masked(url)}")
        self.stdout.write(f"  passwords: {devstack.STACK_DIR}/*.password (mode 0600)")


def _masked(url: str) -> str:
    """The URL with its password shown as ***: a terminal is not a place for secrets."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)
