"""Upgrade drill: runs in flight on the newest release (tests/fixtures/releases.txt) upgraded to
this tree, with more runs than the test (tests/test_upgrade_release.py, ``make test``).

``--sets`` sets (default 5) of four runs, each set on three repositories of the fake GitHub:
one run held for approval, one writing its pull request, one waiting for that repository's
slot, one submitted while no worker runs (tests/upgrade_release.py says how). The release's
worker is SIGKILLed, this tree migrates and its worker finishes the runs. Then checked: every
run passed, exactly one pull request each (no duplicate), every workflow completed, no
approval pending, no slot or PR lock left. Prints the figures; exit code 1 when a check fails.

    .venv/bin/python scripts/upgrade_drill.py [--sets 5]

Uses a database of its own (created, then dropped), Valkey DB 12 (flushed) and a task queue
of its own on the embedded devstack (started if it is not running). The release's tree is
extracted from git history into a temporary folder: a shallow clone must fetch the history
first (``git fetch --unshallow --tags``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a plain script: make amtp_site and tests importable

VALKEY_DB = 12


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=5, help="sets of four runs")
    parser.add_argument("--timeout", type=float, default=900, help="s for the runs to end")
    args = parser.parse_args()

    import redis

    from amtp_site import devstack
    from amtp_site.child import django_setup

    os.environ.setdefault("DJANGO_DEBUG", "true")
    external = devstack.external_services()
    devstack.up(tuple(s for s in devstack.SERVICES if s not in external))
    django_setup()  # for the fakes' imports only: this process touches no database of Django's
    from tests.fakes.github_api import FakeGitHub
    from tests.upgrade_release import (
        FAST,
        Upgrade,
        newest_release,
        release_tree,
        scratch_database,
    )

    urls = {
        **devstack.urls(),
        **{v: os.environ[v] for v in devstack.ENV_VARS.values() if os.environ.get(v)},
    }
    valkey_url = urlsplit(urls["VALKEY_URL"])._replace(path=f"/{VALKEY_DB}").geturl()
    valkey = redis.Redis.from_url(valkey_url)
    valkey.flushdb()
    version, commit = newest_release()
    with tempfile.TemporaryDirectory(prefix="amtp-upgrade-") as tmp:
        try:
            release = release_tree(version, commit, Path(tmp) / f"amtp-{version}")
        except LookupError as missing:
            print(missing, file=sys.stderr)
            return 1
        logs = Path(tmp) / "logs"
        logs.mkdir()
        with FakeGitHub() as github, scratch_database(urls["DATABASE_URL"]) as db:
            env = {
                **os.environ,
                **FAST,
                "DATABASE_URL": db,
                "VALKEY_URL": valkey_url,
                "TEMPORAL_ADDRESS": urls["TEMPORAL_ADDRESS"],
                "TEMPORAL_TASK_QUEUE": f"upgrade-{uuid.uuid4().hex[:8]}",
                "GITHUB_API_URL": github.url,
                "GITHUB_TOKEN": github.token,
            }
            upgrade = Upgrade(release, env, github, logs, sets=args.sets)
            upgrade.migrate(release)
            upgrade.before()
            print(f"{len(upgrade.runs)} runs in flight on {version} ({commit[:10]}); worker killed")
            upgrade.after(timeout=args.timeout)
            problems = upgrade.problems(valkey)
    valkey.flushdb()
    for what, seconds in upgrade.timings.items():
        print(f"{what}: {seconds:.1f} s")
    for problem in problems:
        print(f"FAILED: {problem}")
    print(f"{len(upgrade.runs)} runs: {'every check held' if not problems else 'checks failed'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
