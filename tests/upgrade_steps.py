"""What tests/test_upgrade_release.py does through AMTP's own services, in a process of the
source tree it is run in: the released tree (before the upgrade) or this one (after).

Not imported: its text is run with ``python -c`` in the tree's folder, so ``import runs``
finds that tree's code, and nothing of this tree's is on the path. It calls only the services
an operator's surfaces call (the API's and admin's), so it must work with the release the
upgrade starts from; when a release changes them, change it with the releases file.

    python -c "$(cat tests/upgrade_steps.py)" repository OWNER/NAME MAX_CONCURRENT_RUNS
    python -c "$(cat tests/upgrade_steps.py)" run OWNER/NAME          # prints the run id
    python -c "$(cat tests/upgrade_steps.py)" check OWNER/NAME SHA   # a fork's check run, held
    python -c "$(cat tests/upgrade_steps.py)" approve RUN_ID
    python -c "$(cat tests/upgrade_steps.py)" reject RUN_ID
"""

import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "amtp_site.settings")
import django  # noqa: E402

django.setup()


def repository(full_name: str, max_concurrent_runs: str) -> None:
    from repositories.models import Repository

    Repository.objects.create(
        full_name=full_name, host="github", max_concurrent_runs=int(max_concurrent_runs)
    )


def run(full_name: str) -> None:
    from repositories.models import Repository
    from runs.services import run_create

    created = run_create(
        repository=Repository.objects.get(full_name=full_name),
        depth_level="smoke",
        trigger="cli",
        requested_by="upgrade-test",
    )
    print(created.pk)


def check(full_name: str, sha: str) -> None:
    from repositories.models import Repository
    from runs.services import run_create

    created = run_create(
        repository=Repository.objects.get(full_name=full_name),
        ref=sha,
        target_url="http://127.0.0.1:9/?pr=7",  # never asked: it is rejected before it runs
        allowed_hosts=["127.0.0.1"],
        trigger="webhook",
        requested_by="github:forker",
        kind="check",
        pull_number=7,
        held=True,
    )
    print(created.pk)


def decide(run_id: str, decision: str, comment: str = "") -> None:
    from approvals.models import Approval
    from approvals.services import approval_decide

    approval = Approval.objects.get(run_id=run_id, decision="pending")
    approval_decide(
        approval=approval, decision=decision, decided_by="upgrade-test", comment=comment
    )


STEPS = {
    "repository": repository,
    "run": run,
    "check": check,
    "approve": lambda run_id: decide(run_id, "approved"),
    "reject": lambda run_id: decide(run_id, "rejected", "not this fork's code"),
}
STEPS[sys.argv[1]](*sys.argv[2:])
sys.stdout.flush()
# Done: no interpreter finalization, which a Temporal client may abort (temporalio/sdk-python#300).
os._exit(0)
