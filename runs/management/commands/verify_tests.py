"""``manage.py verify_tests OWNER/NAME --target-url URL``: re-check a repository's tests."""

from django.core.management.base import BaseCommand, CommandError

from amtp_site.errors import AmtpError
from runs.errors import RunInputInvalid
from runs.management.repository_arg import repository_arg
from verification.service import check_repository_tests

MARK = {"passed": "ok  ", "flaky": "ok~ ", "skipped": "skip", "failed": "FAIL"}


class Command(BaseCommand):
    help = (
        "Run the Playwright tests a repository holds under its test directory at a ref against "
        "a running app, in the same sandbox as VerifyTests; one line per test, exit 1 when any "
        "test fails."
    )

    def add_arguments(self, parser):
        parser.add_argument("repo", help="owner/name of a registered repository")
        parser.add_argument("--ref", default="", help="branch, tag or SHA (default branch)")
        parser.add_argument("--target-url", required=True, metavar="URL")
        parser.add_argument("--local", default="", metavar="PATH", help="a local git repository")
        parser.add_argument(
            "--allow-host",
            action="append",
            default=[],
            metavar="HOST[:PORT]",
            help="also let the tests reach HOST (e.g. an app on loopback) for this check",
        )

    def handle(self, *args, repo, ref, target_url, local, allow_host, **options):
        repository = repository_arg(repo, local, self.stdout.write)
        try:
            report = check_repository_tests(
                repository, ref=ref, target_url=target_url, allow_hosts=allow_host
            )
        except RunInputInvalid as exc:
            raise CommandError(f"--{exc.field.replace('_', '-')}: {exc.rule}") from exc
        except (AmtpError, ValueError) as exc:
            raise CommandError(getattr(exc, "message", str(exc))) from exc
        for test in report["tests"]:
            note = f"  ({test['error'].splitlines()[0][:200]})" if test["error"] else ""
            self.stdout.write(f"{MARK.get(test['status'], test['status'])} {test['id']}{note}")
        for entry in report["sandbox"]["blocked"]:
            self.stdout.write(f"blocked: {entry}")
        totals = report["totals"]
        self.stdout.write(
            f"{totals['tests']} test(s): {totals['passed']} passed, {totals['flaky']} flaky, "
            f"{totals['failed']} failed, {totals['skipped']} skipped"
        )
        if totals["failed"]:
            raise SystemExit(1)
