"""``manage.py prune_evidence``: delete verification evidence older than AMTP_EVIDENCE_DAYS."""

import shutil
import time

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Delete the kept traces, screenshots and error contexts of runs and checks older than "
        "AMTP_EVIDENCE_DAYS (their reports keep the test results). Run it daily from cron."
    )

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=settings.AMTP_EVIDENCE_DAYS)
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, days, dry_run, **options):
        root = settings.AMTP_VERIFY_EVIDENCE_DIR
        cutoff = time.time() - days * 86400
        pruned = kept = 0
        for folder in sorted(root.iterdir()) if root.is_dir() else []:
            if folder.is_symlink() or not folder.is_dir() or folder.stat().st_mtime >= cutoff:
                kept += 1
                continue
            if not dry_run:
                shutil.rmtree(folder, ignore_errors=True)
            pruned += 1
        verb = "would delete" if dry_run else "deleted"
        self.stdout.write(
            f"{verb} the evidence of {pruned} run(s) older than {days} day(s); kept {kept}"
        )
