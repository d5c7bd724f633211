"""The upgrade path (issue 43): runs in flight on the newest release (tests/fixtures/releases.txt;
its own code, from git history) survive an upgrade to this tree and end on its worker, each
with exactly one pull request. How: tests/upgrade_release.py. A longer version with more runs:
scripts/upgrade_drill.py.

Real PostgreSQL (a database of its own), Valkey and Temporal (a task queue of its own); the
fake GitHub over HTTP; the offline provider. The release's worker is SIGKILLed with a run
held for approval, one writing its pull request, one waiting for its repository's slot, one
submitted meanwhile, and a fork's check run held for approval (rejected after the upgrade,
which its pull request must then show)."""

import os
import time

import pytest

from amtp_site.child import connection_env
from amtp_site.valkey import concurrency_key, pr_lock_key
from tests.fakes.github_api import FakeGitHub
from tests.upgrade_release import (
    FAST,
    NO_COMMIT,
    RELEASES,
    Upgrade,
    newest_release,
    release_tree,
    releases,
    scratch_database,
)

PENDING_APPROVAL = "SELECT decision FROM approvals WHERE run_id = %s"


@pytest.mark.django_db(transaction=True)
def test_runs_in_flight_on_the_newest_release_finish_after_the_upgrade(
    temporal_env, valkey, tmp_path
):
    version, commit = newest_release()
    try:
        release = release_tree(version, commit, tmp_path / f"amtp-{version}")
    except LookupError as missing:
        pytest.fail(str(missing))  # never skipped: a shallow clone must fetch the history
    (tmp_path / "logs").mkdir()
    started = time.monotonic()
    with FakeGitHub() as github, scratch_database(connection_env()["DATABASE_URL"]) as db:
        env = {
            **{k: v for k, v in os.environ.items() if k != "AMTP_TEST_DATABASE_NAME"},
            **FAST,
            "DATABASE_URL": db,
            "VALKEY_URL": temporal_env.VALKEY_URL,
            "TEMPORAL_ADDRESS": temporal_env.TEMPORAL_ADDRESS,
            "TEMPORAL_TASK_QUEUE": temporal_env.TEMPORAL_TASK_QUEUE,
            "GITHUB_API_URL": github.url,
            "GITHUB_TOKEN": github.token,
        }
        upgrade = Upgrade(release, env, github, tmp_path / "logs")
        upgrade.migrate(release)
        upgrade.before()
        assert {
            key: upgrade.rows("SELECT status FROM runs WHERE run_id = %s", run_id)[0][0]
            for key, run_id in upgrade.runs.items()
        } == {
            "held-0": "running",
            "writing-0": "running",
            "waiting-0": "running",
            "submitted-0": "pending",
        }
        # The release shows a fork's held check run nowhere on the pull request.
        assert upgrade.rows(PENDING_APPROVAL, upgrade.checks["checked-0"]) == [("pending",)]
        assert github.check_runs("acme/checked-0") == []
        writing = upgrade.runs["writing-0"]
        assert upgrade.stage(writing, "create_pull_request")[0] == "running"
        # The killed worker's PR lock and slots are still there: they are the new one's to free.
        assert valkey.get(pr_lock_key("acme/writing-0")) == writing.encode()
        assert valkey.zcard(concurrency_key("acme/writing-0")) == 1  # the waiting run waits
        assert valkey.zcard(concurrency_key("acme/held-0")) == 1
        # GitHub made the PR the killed worker had asked for, once its hold was released.
        upgrade.wait("the held PR", lambda: github.pulls("acme/writing-0"), 30)
        upgrade.after()
        problems = upgrade.problems(valkey)
        adopted = upgrade.rows(
            "SELECT content->>'adopted' FROM artifacts WHERE run_id = %s AND kind = 'pull_request'",
            writing,
        )
        attempts = upgrade.rows(
            "SELECT attempts FROM stages WHERE run_id = %s AND name = 'create_pull_request'",
            writing,
        )
    print(f"upgrade from {version}: {time.monotonic() - started:.0f} s; {upgrade.timings}")
    assert problems == [], problems
    # The PR the release's worker had asked for (GitHub made it, the worker died before hearing
    # so) is the one the run has: adopted, not opened again.
    assert adopted == [("true",)]
    assert attempts[0][0] >= 2  # the release's attempt(s), then the new worker's


def test_a_release_missing_from_the_checkout_fails_saying_to_fetch_the_history(tmp_path):
    """A shallow clone lacks the release's commit: the upgrade test fails, never skips."""
    with pytest.raises(LookupError) as raised:
        release_tree("9.9.9", "0" * 40, tmp_path)
    assert str(raised.value) == NO_COMMIT.format(version="9.9.9", commit="0" * 40)
    assert "git fetch --unshallow" in str(raised.value)


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "names no release"),
        ("# only a comment\n", "names no release"),
        ("1.0.0 e0957d3\n", "line 1: expected"),  # a short id: ambiguous as history grows
        ("1.0.0 v1.0.0\n", "line 1: expected"),  # a tag can move
        (f"1.0 {'a' * 40}\n", "line 1: expected"),
        (f"1.0.0 {'A' * 40}\n", "line 1: expected"),
        (f"1.0.0 {'a' * 40} extra\n", "line 1: expected"),
        (f"1.0.0 {'a' * 40}; rm -rf /\n", "line 1: expected"),
        (f"1.1.0 {'a' * 40}\n1.0.9 {'b' * 40}\n", "line 2: 1.0.9 is not after 1.1.0"),
        (f"1.0.0 {'a' * 40}\n1.0.0 {'b' * 40}\n", "line 2: 1.0.0 is not after 1.0.0"),
    ],
)
def test_a_malformed_releases_file_is_refused_naming_the_line_and_rule(text, words):
    with pytest.raises(ValueError, match=words):
        releases(text)


def test_the_releases_file_parses_and_its_versions_rise():
    found = releases(RELEASES.read_text())
    assert found[-1] == newest_release() and found[0][0] == "1.0.0"
    assert releases(f"# c\n\n1.0.0 {'a' * 40}\n1.10.0 {'b' * 40}\n")[-1][0] == "1.10.0"
