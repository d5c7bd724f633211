"""One writer of a run's status and of a stage's status: runs/transitions.py. Everything else
(the workflow's EndRun, a cancel, reconcile_runs, the stages) asks it."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("amtp_site", "approvals", "agents", "repositories", "runs", "schemas")
WRITER = "runs/transitions.py"
# The ways code writes a status: SQL, a queryset's update, an attribute saved, a bulk update,
# and the Valkey calls that give a run's places back.
WRITES = {
    "sql": re.compile(r"UPDATE\s+(runs|stages)\b[^;]*?\bstatus\s*=", re.I | re.S),
    "orm": re.compile(r"\b(Run|Stage|stages)\b[^\n]*\.update\([^)]*\bstatus\s*=", re.S),
    "attribute": re.compile(r"\b(run|stage)\.status\s*=[^=]"),
    "bulk": re.compile(r"bulk_update\([^)]*[\"']status[\"']"),
    "give back": re.compile(r"\b(concurrency_decr|release_pr_lock)\("),
}
# Where the Valkey calls are defined, and a pull request's own lock released by its holder.
GIVE_BACK_ALSO = {"amtp_site/valkey.py", "runs/pull_requests.py"}


def writers(pattern: re.Pattern) -> set[str]:
    return {
        str(path.relative_to(ROOT))
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts and pattern.search(path.read_text())
    }


def test_only_the_transitions_module_writes_a_run_or_stage_status():
    for how, pattern in WRITES.items():
        found = writers(pattern) - (GIVE_BACK_ALSO if how == "give back" else set())
        assert found <= {WRITER}, (how, found)
    assert writers(WRITES["sql"]) == writers(WRITES["give back"]) - GIVE_BACK_ALSO == {WRITER}


def test_the_patterns_find_what_they_look_for():
    """The grep above would pass on nothing: each pattern matches the form it stands for."""
    samples = {
        "sql": "UPDATE stages SET note = '', status = %(to)s WHERE",
        "orm": "Run.objects.filter(pk=run_id).update(\n    status=RunStatus.FAILED)",
        "attribute": "run.status = 'passed'",
        "bulk": "Stage.objects.bulk_update(stages, ['status'])",
        "give back": "valkey.concurrency_decr(repo, run_id)",
    }
    assert all(WRITES[how].search(text) for how, text in samples.items())
