"""Record a release's workflow histories: the replay fixtures every later release must keep
replaying (tests/test_replay.py, docs/releasing.md).

    make release-histories VERSION=1.0.0        # or:
    AMTP_DEVSTACK_DIR=$PWD/.devstack/test DJANGO_DEBUG=true \\
        .venv/bin/python scripts/record_release_histories.py 1.0.0 [--replace]

Runs the tests in ``PATHS`` (real runs on the test devstack, started and stopped around them)
with ``AMTP_RECORD_HISTORIES=1`` into a temporary folder, checks that every test recorded a
history and every run workflow is there, then writes
``tests/fixtures/histories/released/<VERSION>/`` and that folder's lines of
``released/SHA256SUMS``. Nothing is written when a test fails. A version already recorded is
refused; ``--replace`` records it again until it is tagged ``v<VERSION>`` (the release).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.released import (  # noqa: E402
    RELEASED,
    RUN_WORKFLOWS,
    read_manifest,
    sha256,
    workflow_type,
    write_manifest,
)

# One test per path a run takes that matters to a run in flight across an upgrade: passed,
# held then approved (or rejected, expired), a stage failed, cancelled, retried after a crash.
PATHS = [
    # TestGenerationWorkflow
    "tests/test_workflow.py::test_happy_path_on_the_local_host",
    "tests/test_workflow.py::test_policy_gate_approve_opens_the_pr",
    "tests/test_workflow.py::test_policy_gate_reject_fails_the_run_with_the_comment",
    "tests/test_workflow.py::test_nobody_deciding_in_time_fails_the_run_clearly",
    "tests/test_workflow.py::test_stale_base_fails_with_the_spec_failure_report",
    "tests/test_workflow.py::test_cancel_mid_run_releases_everything_and_opens_no_pr",
    "tests/test_workflow_github.py::test_branch_protection_holds_for_approval_then_opens_the_pr",
    "tests/test_workflow_github.py::test_forbidden_token_fails_with_the_error_on_the_stage",
    "tests/test_workflow_boot.py::test_a_run_without_a_target_boots_its_app_and_runs_against_it",
    "tests/test_workflow_verify.py::"
    "test_tests_grounded_in_the_app_pass_first_and_a_real_bug_is_quarantined",
    "tests/test_cancel.py::test_cancel_while_the_pull_request_is_being_written",
    "tests/test_worker_crash.py::test_worker_killed_mid_activity_then_restarted_completes_the_run",
    # MaintenanceWorkflow
    "tests/test_maintenance.py::"
    "test_a_push_heals_a_renamed_button_quarantines_a_removed_page_and_opens_one_pr",
    "tests/test_maintenance_faults.py::test_a_maintenance_run_cancelled_in_reverify_tests_opens_no_pr",
    "tests/test_workflow_paths.py::"
    "test_a_maintenance_run_whose_pull_request_is_forbidden_fails_on_that_stage",
    # CheckWorkflow
    "tests/test_check_runs.py::test_a_pull_request_gets_one_check_run_with_its_failures_annotated",
    "tests/test_maintenance_faults.py::test_a_cancelled_check_run_is_concluded_cancelled_on_github",
    "tests/test_workflow_paths.py::test_a_check_run_held_for_approval_runs_once_approved",
    "tests/test_workflow_paths.py::test_a_check_run_whose_tests_cannot_run_reports_why_then_fails",
    "tests/test_workflow_paths.py::"
    "test_a_check_run_held_then_rejected_or_expired_fails_on_the_stage_that_waited",
    "tests/test_workflow_paths.py::"
    "test_a_check_run_cancelled_while_held_concludes_its_check_run_cancelled",
]
VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def tagged(version: str) -> bool:
    command = ["git", "-C", str(ROOT), "rev-parse", "-q", "--verify", f"refs/tags/v{version}"]
    return subprocess.run(command, capture_output=True).returncode == 0


def record(into: Path) -> None:
    """Run ``PATHS`` on the test devstack, their histories written to ``into``."""
    env = {**os.environ, "AMTP_RECORD_HISTORIES": "1", "AMTP_HISTORIES_DIR": str(into)}
    command = ["bash", "scripts/test.sh", sys.executable, "0", *PATHS]
    if subprocess.run(command, cwd=ROOT, env=env).returncode != 0:
        sys.exit("a test failed: nothing recorded")


def check(recorded: list[Path]) -> None:
    """Every test left a history, and every run workflow has one."""
    names = [path.stem for path in recorded]
    for node in PATHS:
        test = node.rpartition("::")[2]
        if not any(name.startswith(test) for name in names):
            sys.exit(f"{node} recorded no history (does it use record_histories?)")
    missing = set(RUN_WORKFLOWS) - {workflow_type(path) for path in recorded}
    if missing:
        sys.exit(f"no history of {', '.join(sorted(missing))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("version", help="the release, e.g. 1.0.0")
    parser.add_argument("--replace", action="store_true", help="record an untagged version again")
    args = parser.parse_args()
    if not VERSION.match(args.version):
        sys.exit(f"version {args.version!r}: expected MAJOR.MINOR.PATCH, e.g. 1.0.0")
    target = RELEASED / args.version
    if target.exists() and not args.replace:
        sys.exit(f"{target.relative_to(ROOT)} exists: a released history is never recorded again")
    if args.replace and tagged(args.version):
        sys.exit(f"v{args.version} is tagged: its histories are released and stay as they are")
    with tempfile.TemporaryDirectory(prefix="amtp-histories-") as tmp:
        record(Path(tmp))
        recorded = sorted(Path(tmp).glob("*.json"))
        check(recorded)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for path in recorded:
            shutil.copyfile(path, target / path.name)
    entries = {k: v for k, v in read_manifest().items() if not k.startswith(f"{args.version}/")}
    entries.update({f"{args.version}/{p.name}": sha256(p) for p in sorted(target.glob("*.json"))})
    write_manifest(entries)
    print(f"{len(recorded)} histories in {target.relative_to(ROOT)}; SHA256SUMS updated")


if __name__ == "__main__":
    main()
