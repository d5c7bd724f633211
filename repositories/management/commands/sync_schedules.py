"""``manage.py sync_schedules``: the repositories' maintenance schedules in Temporal made to
match their settings (created, updated, deleted). Every worker does the same when it starts;
run it after settings were saved while Temporal was away, or from a deploy step."""

from django.core.management.base import BaseCommand, CommandError

from amtp_site.temporal import ExitsWithoutFinalizing
from repositories.schedules import maintenance_schedules_sync_all


class Command(ExitsWithoutFinalizing, BaseCommand):
    help = "Create, update and delete the maintenance schedules as the repositories' settings say."

    def handle(self, *args, **options):
        try:
            done = maintenance_schedules_sync_all()
        except Exception as exc:
            raise CommandError(f"Temporal could not be reached: {exc}") from exc
        for line in done or ["no maintenance schedules"]:
            self.stdout.write(line)
