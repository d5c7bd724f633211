"""``manage.py check_providers``: call the configured LLM provider once (and once with a tool),
check the GitHub credential with one cheap call, and print what is wrong and how to fix it.
Exits 1 when a run could not work."""

from django.core.management.base import BaseCommand, CommandError

from agents.providers.probe import check_providers
from repositories.hosts.probe import check_github

MARKS = {"ok": "ok     ", "warning": "WARNING", "error": "ERROR  "}
FAILED = "the provider check found errors (above); runs would fail until they are fixed"


class Command(BaseCommand):
    help = (
        "Check the configured LLM provider, model and key, and the GitHub credential, with a "
        "few cheap real calls."
    )

    def handle(self, *args, **options):
        findings = [*check_providers(), *check_github()]
        for finding in findings:
            self.stdout.write(
                self.style_for(finding.level)(f"{MARKS[finding.level]} {finding.text}")
            )
        if any(f.level == "error" for f in findings):
            raise CommandError(FAILED)

    def style_for(self, level: str):
        return {"ok": self.style.SUCCESS, "warning": self.style.WARNING}.get(
            level, self.style.ERROR
        )
