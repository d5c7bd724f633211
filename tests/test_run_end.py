"""A run's end is written in one place while its workflow lives: the workflow's EndRun
(runs/outcome.py). Only runs without one write their own: runs/temporal/reconcile.py ends
those whose workflow is gone, and run_cancel (runs/services.py) those whose workflow was never
started."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("amtp_site", "approvals", "agents", "repositories", "runs", "schemas")
ENDS_A_RUN = re.compile(r"\b(mark_passed|mark_failed|mark_cancelled|slot_release)\(")
# Where those are defined (lifecycle: a failure after every stage passed is no failure), and
# the three that end runs.
ALLOWED = {
    "runs/lifecycle.py",
    "runs/slots.py",
    "runs/outcome.py",
    "runs/temporal/reconcile.py",
    "runs/services.py",
}


def test_only_the_workflow_and_reconcile_end_a_run():
    writers = {
        str(path.relative_to(ROOT))
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if ENDS_A_RUN.search(path.read_text())
    }
    assert writers - ALLOWED == set()
    assert {"runs/outcome.py", "runs/temporal/reconcile.py"} <= writers
