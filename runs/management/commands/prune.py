"""``manage.py prune``: remove finished runs older than their retention (runs/retention.py)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from repositories.models import Repository
from repositories.services import MAX_RETENTION_DAYS
from runs.retention import MAX_BATCH, prune, retention_days

DAYS_RANGE = f"--older-than: give a whole number of days from 1 to {MAX_RETENTION_DAYS}"
BATCH_RANGE = f"--batch-size: give a whole number of runs from 1 to {MAX_BATCH}"
NO_REPOSITORY = "--repository: {name!r} is not a registered repository"


def _days(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_RETENTION_DAYS:
        raise CommandError(DAYS_RANGE)
    return int(text)


def _batch(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_BATCH:
        raise CommandError(BATCH_RANGE)
    return int(text)


class Command(BaseCommand):
    help = (
        "Remove finished runs older than their repository's retention (--older-than overrides "
        "it), with stages, artifacts, approvals and evidence; runs still open, held, or whose "
        "pull request is open stay. In batches; run it daily from cron."
    )

    def add_arguments(self, parser):
        parser.add_argument("--older-than", metavar="DAYS", default="")
        parser.add_argument("--repository", metavar="OWNER/NAME", default="")
        parser.add_argument("--batch-size", metavar="N", default="1000")
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, older_than, repository, batch_size, dry_run, **options):
        days = _days(older_than) if older_than else None
        batch = _batch(batch_size)
        repositories = Repository.objects.order_by("full_name")
        if repository:
            repositories = repositories.filter(full_name=repository)
            if not repositories.exists():
                raise CommandError(NO_REPOSITORY.format(name=repository[:200]))
        verb = "would remove" if dry_run else "removed"
        total = 0
        for repo in repositories:
            keep = retention_days(repo, days)
            if keep is None:
                self.stdout.write(f"{repo.full_name}: no retention set, every run kept")
                continue
            done = prune(repo, keep, batch_size=batch, dry_run=dry_run)
            total += done.removed
            self.stdout.write(
                f"{repo.full_name}: {verb} {done.removed} run(s) older than {keep} day(s) "
                f"and {done.evidence} evidence folder(s) in {done.batches} batch(es), longest "
                f"{done.longest_lock_s * 1000:.0f} ms; kept {done.kept} older one(s) (open, "
                "held, or with an open pull request)"
            )
            for note in done.notes:
                self.stdout.write(f"{repo.full_name}: {note}")
        default = settings.AMTP_RETENTION_DAYS
        self.stdout.write(
            f"{verb} {total} run(s) in all (AMTP_RETENTION_DAYS: {default or 'not set'})"
        )
