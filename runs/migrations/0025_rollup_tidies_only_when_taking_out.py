"""``amtp_rollup_runs(ids, sign)`` deletes emptied rollup rows only when it takes runs out
(``sign`` -1, ``manage.py prune``), and looks only at the rows of the runs' repositories and
days. 0024 deleted on every call and scanned every ``stage_days`` row of the runs'
repositories and all of the all-repository ones: about 100 ms added to each run's end at a
million runs (``scripts/bench_dashboard.py``), for rows a run's end can never empty."""

import importlib

from django.db import migrations

before = importlib.import_module("runs.migrations.0024_rollups_forget_pruned_runs")

# The (repository, day) keys the runs count under, as the rollup's inserts compute them.
KEYS = f"SELECT r.repository_id, {before.DAY} FROM runs r WHERE r.run_id = ANY(ids)"
DAYS = f"SELECT {before.DAY} FROM runs r WHERE r.run_id = ANY(ids)"
# One statement per key shape, so that each is a lookup on the rollup's unique index.
TIDY = f"""DELETE FROM run_days WHERE sign < 0 AND runs <= 0 AND (repository_id, day) IN ({KEYS});
DELETE FROM stage_days WHERE sign < 0 AND stages <= 0 AND (repository_id, day) IN ({KEYS});
DELETE FROM stage_days WHERE sign < 0 AND stages <= 0 AND repository_id IS NULL
  AND day IN ({DAYS});"""


def rollup() -> str:
    old = before.rollup(signed=True)
    tidy = old[old.index("DELETE FROM run_days") : old.index("\n$$;")]
    return old.replace(tidy, TIDY)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0024_rollups_forget_pruned_runs"),
    ]

    operations = [
        migrations.RunSQL(
            "DROP FUNCTION amtp_rollup_runs(uuid[], integer);" + rollup(),
            "DROP FUNCTION amtp_rollup_runs(uuid[], integer);" + before.rollup(signed=True),
        ),
    ]
