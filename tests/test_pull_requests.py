"""CreatePullRequest on the local and GitHub hosts: one branch, one commit, one PR; typed
failures."""

import pytest

from amtp_site import valkey as valkey_mod
from amtp_site.errors import RepoPrLockContended
from repositories.errors import BranchProtectionViolation, GitHubRateLimited, StaleBaseBranch
from repositories.hosts.github_limits import QUIET
from repositories.hosts.local import LocalGitHost
from runs.errors import RunNotActive
from runs.models import Artifact
from runs.pull_requests import head_branch_for, pull_request_create, pull_request_discard
from tests.factories import RepositoryFactory, RunFactory
from tests.gitrepo import commit_files, git, make_git_repo

pytestmark = pytest.mark.django_db

FILES = [
    {"path": "e2e/amtp/home.spec.ts", "contents": "import { test } from '@playwright/test';\n"}
]


@pytest.fixture
def run(tmp_path, valkey):
    path = make_git_repo(tmp_path / "web", {"package.json": "{}", "src/index.js": "1;\n"})
    sha = git(path, "rev-parse", "main").strip()
    repository = RepositoryFactory(full_name="acme/web", host="local", local_path=str(path))
    return RunFactory(repository=repository, commit_sha=sha, base_sha=sha)


def branches(run):
    return git(run.repository.local_path, "branch", "--format=%(refname:short)").split()


def test_opens_one_branch_with_one_commit_on_the_crawled_base(run):
    artifact = pull_request_create(run=run, files=FILES, title="Add e2e tests", body="Body")
    head = head_branch_for(run)
    assert branches(run) == sorted(["main", head])
    path = run.repository.local_path
    assert git(path, "rev-parse", f"{head}^").strip() == run.commit_sha
    assert git(path, "show", f"{head}:e2e/amtp/home.spec.ts") == FILES[0]["contents"].strip()
    assert "100644 blob" in git(path, "ls-tree", head, "e2e/amtp/home.spec.ts")
    assert artifact.content["number"] == 1 and artifact.content["adopted"] is False
    assert artifact.content["files"] == ["e2e/amtp/home.spec.ts"]
    run.refresh_from_db()
    assert run.pr_number == 1 and run.head_branch == head and run.pr_url


def test_called_twice_still_one_pr(run):
    first = pull_request_create(run=run, files=FILES, title="t", body="b")
    second = pull_request_create(run=run, files=FILES, title="t", body="b")
    assert first.pk == second.pk
    assert Artifact.objects.filter(run=run, kind="pull_request").count() == 1


def test_a_retry_after_a_kill_between_recording_and_releasing_gives_the_lock_back(run, valkey):
    """The worker died after the PR was recorded, inside ``pr_lock``: the lock is still this
    run's. The retry finds the PR and releases the lock; another run's lock is never touched."""
    first = pull_request_create(run=run, files=FILES, title="t", body="b")
    lock = valkey_mod.pr_lock_key(run.repo_full_name)
    valkey.set(lock, str(run.run_id), px=120_000)  # left by the killed attempt
    assert pull_request_create(run=run, files=FILES, title="t", body="b").pk == first.pk
    assert valkey.get(lock) is None
    valkey.set(lock, "another-run", px=120_000)
    pull_request_create(run=run, files=FILES, title="t", body="b")
    assert valkey.get(lock) == b"another-run"


def test_lock_lost_to_a_valkey_restart_does_not_make_a_second_pr(run, valkey):
    pull_request_create(run=run, files=FILES, title="t", body="b")
    Artifact.objects.filter(
        run=run, kind="pull_request"
    ).delete()  # the attempt died before recording
    valkey.flushdb()  # ... and Valkey restarted, losing the lock
    again = pull_request_create(run=run, files=FILES, title="t", body="b")
    assert again.content["adopted"] is True and again.content["number"] == 1
    assert branches(run).count(head_branch_for(run)) == 1


def test_base_moved_since_the_crawl_is_stale(run):
    moved = commit_files(run.repository.local_path, {"src/index.js": "2;\n"}, message="moved")
    with pytest.raises(StaleBaseBranch) as caught:
        pull_request_create(run=run, files=FILES, title="t", body="b")
    assert caught.value.to_dict() == {
        "error": "StaleBaseBranch",
        "message": caught.value.message,
        "base_branch": "main",
        "observed_head": moved,
        "expected_parent": run.commit_sha,
    }
    assert head_branch_for(run) not in branches(run)


def test_a_held_lock_is_contended_and_nothing_is_written(run):
    with valkey_mod.pr_lock("acme/web", "another-run"):
        with pytest.raises(RepoPrLockContended):
            pull_request_create(run=run, files=FILES, title="t", body="b")
    assert branches(run) == ["main"]


# -- the same service on the GitHub host, against the fake GitHub API over HTTP ---------------
@pytest.fixture
def github_run(settings, valkey):
    from tests.fakes.github_api import FakeGitHub

    with FakeGitHub() as gh:
        sha = gh.create_repo("acme/api", {"package.json": "{}", "src/index.js": "1;\n"})
        settings.GITHUB_API_URL, settings.GITHUB_TOKEN = gh.url, gh.token
        settings.GITHUB_APP_ID = settings.GITHUB_APP_PRIVATE_KEY = ""
        settings.GITHUB_SECONDS_BETWEEN_WRITES = 0
        repository = RepositoryFactory(full_name="acme/api", host="github")
        yield gh, RunFactory(repository=repository, commit_sha=sha, base_sha=sha)


def test_github_base_moved_reports_the_head_github_has(github_run):
    gh, run = github_run
    moved = gh.push("acme/api", "main", {"src/index.js": "2;\n"})
    with pytest.raises(StaleBaseBranch) as caught:
        pull_request_create(run=run, files=FILES, title="t", body="b")
    assert caught.value.to_dict() == {
        "error": "StaleBaseBranch",
        "message": caught.value.message,
        "base_branch": "main",
        "observed_head": moved,
        "expected_parent": run.commit_sha,
    }
    assert gh.count("POST") == 0


def test_github_transient_ref_failure_still_makes_one_pr(github_run):
    gh, run = github_run
    gh.flaky_ref_creation(calls=1)  # retried in-process after GitHub's 1 s
    artifact = pull_request_create(run=run, files=FILES, title="t", body="b")
    assert artifact.content["number"] == 1 and artifact.content["adopted"] is False
    assert gh.count("POST", r"/git/refs$") == 2 and len(gh.pulls("acme/api")) == 1


def test_github_ruleset_refusal_is_branch_protection(github_run):
    gh, run = github_run
    gh.protect("acme/api", "amtp/*", answer="opaque")
    with pytest.raises(BranchProtectionViolation, match="creation"):
        pull_request_create(run=run, files=FILES, title="t", body="b")
    assert not Artifact.objects.filter(run=run, kind="pull_request").exists()


def test_repeated_secondary_limits_wait_longer_across_processes(github_run, valkey):
    # Each CreatePullRequest attempt runs in a fresh process with a fresh host: the strikes
    # live in Valkey, per credential, so the second limit waits twice as long.
    gh, run = github_run
    waits = []
    for _ in range(3):
        gh.rate_limit(secondary=True, retry_after=False)
        with pytest.raises(GitHubRateLimited) as caught:
            pull_request_create(run=run, files=FILES, title="t", body="b")
        waits.append(caught.value.details["retry_after"])
    assert waits == [60, 120, 240]
    (key,) = valkey.keys("amtp:gh:secondary:*")
    assert int(valkey.get(key)) == 3 and 240 < valkey.ttl(key) <= 240 + QUIET
    valkey.flushdb()  # forgotten with Valkey: the next limit starts at a minute again
    gh.rate_limit(secondary=True, retry_after=False)
    with pytest.raises(GitHubRateLimited) as caught:
        pull_request_create(run=run, files=FILES, title="t", body="b")
    assert caught.value.details["retry_after"] == 60
    assert pull_request_create(run=run, files=FILES, title="t", body="b").content["number"] == 1


# --- cancellation (R18) ---------------------------------------------------------------------


def test_a_run_no_longer_open_writes_nothing(run):
    run.status = "cancelled"
    run.save()
    with pytest.raises(RunNotActive, match="is cancelled: its pull request is not written"):
        pull_request_create(run=run, files=FILES, title="t", body="b")
    assert branches(run) == ["main"]
    assert valkey_mod.client().get(valkey_mod.pr_lock_key("acme/web")) is None


def test_a_cancel_noticed_after_writing_takes_the_pull_request_back(run):
    """The cancel request arrives while the host writes: the branch is deleted, the PR closed,
    nothing recorded on the run."""
    asked = iter([False, True])  # before writing: carry on; before recording: cancelled
    with pytest.raises(RunNotActive, match="is being cancelled"):
        pull_request_create(run=run, files=FILES, title="t", body="b", stop=lambda: next(asked))
    assert branches(run) == ["main"]
    host = LocalGitHost("acme/web", run.repository.local_path)
    assert [p["state"] for p in host.pull_requests()] == ["closed"]
    assert not Artifact.objects.filter(run=run, kind="pull_request").exists()
    run.refresh_from_db()
    assert (run.pr_number, run.head_branch) == (None, "")


def test_discard_takes_back_only_a_cancelled_runs_pull_request(run):
    pull_request_create(run=run, files=FILES, title="t", body="b")
    assert pull_request_discard(str(run.pk)) is False  # not cancelled: left alone
    assert head_branch_for(run) in branches(run)
    run.status = "cancelled"
    run.save()
    assert pull_request_discard(str(run.pk)) is True
    assert pull_request_discard(str(run.pk)) is False  # nothing left to take back
    assert branches(run) == ["main"]
    run.refresh_from_db()
    assert (run.pr_number, run.pr_url, run.head_branch) == (None, "", "")


# -- drafts and labels, from the repository's settings -------------------------------------------


def test_a_new_pull_request_is_a_labelled_draft_by_default(run):
    assert run.repository.draft_pull_requests is True
    pull_request_create(run=run, files=FILES, title="t", body="b")
    [record] = LocalGitHost("acme/web", run.repository.local_path).pull_requests()
    assert (record["draft"], record["labels"]) == (True, ["amtp", "model-written"])


def test_with_the_setting_off_the_local_pull_request_is_not_a_draft(run):
    run.repository.draft_pull_requests = False
    run.repository.pull_request_labels = []
    run.repository.save()
    pull_request_create(run=run, files=FILES, title="t", body="b")
    [record] = LocalGitHost("acme/web", run.repository.local_path).pull_requests()
    assert (record["draft"], record["labels"]) == (False, [])


def test_github_draft_and_labels_from_the_settings_and_a_retry_adds_nothing(github_run):
    gh, run = github_run
    first = pull_request_create(run=run, files=FILES, title="t", body="b")
    [pr] = gh.pulls("acme/api")
    assert pr["draft"] is True
    assert [label["name"] for label in pr["labels"]] == ["amtp", "model-written"]
    Artifact.objects.filter(run=run).delete()  # the attempt died before recording
    again = pull_request_create(run=run, files=FILES, title="t", body="b")
    assert again.content["adopted"] and again.content["number"] == first.content["number"]
    assert gh.count("POST", r"/labels$") == 1 and len(gh.pulls("acme/api")) == 1
    assert gh.labels_of("acme/api", pr["number"]) == ["amtp", "model-written"]


def test_github_with_drafts_off_opens_a_ready_pull_request(github_run):
    gh, run = github_run
    run.repository.draft_pull_requests = False
    run.repository.save()
    pull_request_create(run=run, files=FILES, title="t", body="b")
    assert gh.pulls("acme/api")[0]["draft"] is False
