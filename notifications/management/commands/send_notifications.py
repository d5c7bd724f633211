"""``manage.py send_notifications``: send what a worker recorded but did not get to send."""

from django.core.management.base import BaseCommand, CommandError

from notifications.services import send_pending


class Command(BaseCommand):
    help = (
        "Send the notifications still pending after --older-than seconds (their worker "
        "stopped before sending). Run it every few minutes from cron."
    )

    def add_arguments(self, parser):
        parser.add_argument("--older-than", metavar="SECONDS", default="60")

    def handle(self, *args, older_than, **options):
        if not older_than.isdigit():
            raise CommandError("--older-than: give a whole number of seconds")
        counts = send_pending(float(older_than))
        shown = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"
        self.stdout.write(f"pending notifications sent: {shown}")
