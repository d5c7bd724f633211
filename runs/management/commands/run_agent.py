"""``manage.py run_agent <agent> <input.json>``: one agent, outside Temporal, for prompt work.

Prints the validated output and its meta as JSON, or the typed error (with every violation)
and exits 1. Nothing is persisted.
"""

import json
import sys
import uuid

from django.core.management.base import BaseCommand, CommandError

from agents import service
from amtp_site.canonical import canonical_json
from amtp_site.errors import AmtpError
from repositories.hosts import host_for_repo

AGENTS = ("repo_crawler", "test_case_generator", "test_engineer")


class Command(BaseCommand):
    help = "Run one agent on an input JSON file (its input schema) and print the result."

    def add_arguments(self, parser):
        parser.add_argument("agent", choices=AGENTS)
        parser.add_argument("input", help="path of a JSON file, or - for stdin")
        parser.add_argument("--test-dir", default="e2e/amtp", help="test_engineer only")
        parser.add_argument("--base-branch", default="main", help="test_engineer only")

    def handle(self, *args, agent, input, test_dir, base_branch, **options):
        try:
            payload = json.load(sys.stdin if input == "-" else open(input))
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {input}: {exc}") from exc
        if not isinstance(payload, dict):
            raise CommandError(f"{input}: the input must be a JSON object")
        # Outside a run there is no upstream artifact: name one after the input's content.
        upstream = str(uuid.uuid5(uuid.NAMESPACE_URL, canonical_json(payload).hex()))
        try:
            if agent == "repo_crawler":
                commit = host_for_repo(str(payload.get("repo_full_name"))).resolve_ref(
                    str(payload.get("ref"))
                )
                result = service.run_repo_crawler(payload, commit_sha=commit)
            elif agent == "test_case_generator":
                result = service.run_test_case_generator(payload, upstream_artifact_id=upstream)
            else:
                result = service.run_test_engineer(
                    payload,
                    upstream_artifact_id=upstream,
                    base_branch=base_branch,
                    head_branch=f"amtp/run-{payload.get('run_id')}",
                    test_dir=test_dir,
                )
        except AmtpError as exc:
            self.stderr.write(json.dumps(exc.to_dict(), indent=2, default=str))
            sys.exit(1)
        self.stdout.write(
            json.dumps({"output": result.output, "meta": result.meta}, indent=2, ensure_ascii=False)
        )
