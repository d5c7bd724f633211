"""One maintenance pull request per repository at a time: a maintenance run whose files
changed commits them onto the open pull request an earlier maintenance run opened (and gives
it the new report), and opens a new one once that was merged or closed. On GitHub through
the fake API (list pulls by head, fast-forward-only ref updates, PATCH pulls), and on the
local host."""

import pytest

from repositories.hosts.local import LocalGitHost
from runs.maintenance import UPDATED, earlier_maintenance_pull
from runs.models import Run
from runs.pull_requests import pull_request_create
from tests.factories import RepositoryFactory, RunFactory
from tests.gitrepo import git, make_git_repo
from tests.test_github_host import NEW_FILES, PR, REPO, gh, host, open_pr  # noqa: F401

HEALED = {"e2e/amtp/notes.spec.ts": "// AMTP\ntest('healed', () => {});\n"}
QUARANTINED = {"e2e/amtp/about.spec.ts": "// AMTP\ntest.fixme('gone', () => {});\n"}


def update(on, files, body="report 2", head_branch="amtp/run-1"):
    return on.update_pull_request(
        head_branch=head_branch, base_branch="main", files=files, title="Keep green", body=body
    )


# -- GitHub ---------------------------------------------------------------------------------


def test_github_commits_onto_the_open_pull_request_and_replaces_its_body(gh, host):  # noqa: F811
    opened = open_pr(host, gh)
    result = update(host, HEALED)
    assert (result.number, result.updated, result.adopted) == (opened.number, True, False)
    assert result.base_sha == opened.head_sha  # on top of the branch as it was
    assert gh.head(REPO, "amtp/run-1") == result.head_sha
    assert gh.commit_info(REPO, result.head_sha)["parents"] == [opened.head_sha]
    files = gh.files(REPO, "amtp/run-1")
    assert {p for p in {**NEW_FILES, **HEALED}} <= set(files)  # the earlier files stay
    [pr] = gh.pulls(REPO)
    assert (pr["title"], pr["body"], pr["state"]) == ("Keep green", "report 2", "open")
    commits = gh.count("POST", "/git/commits")
    again = update(host, HEALED)  # a retry: the files are there, no empty commit
    assert again.head_sha == result.head_sha and gh.count("POST", "/git/commits") == commits
    assert gh.count("POST", "/pulls") == 1


def test_github_opens_none_for_a_closed_pull_request_or_another_branch(gh, host):  # noqa: F811
    open_pr(host, gh)
    assert update(host, HEALED, head_branch="amtp/run-2") is None
    host._repo().get_pull(1).edit(state="closed")  # merged or closed by a person
    writes = gh.count("POST") + gh.count("PATCH")
    assert update(host, HEALED) is None
    assert gh.count("POST") + gh.count("PATCH") == writes  # nothing written


def test_github_never_overwrites_a_commit_pushed_meanwhile(gh, host):  # noqa: F811
    open_pr(host, gh)
    pushed = gh.push(REPO, "amtp/run-1", {"e2e/amtp/by-hand.spec.ts": "// mine\n"}, "by hand")
    result = update(host, QUARANTINED)
    assert gh.commit_info(REPO, result.head_sha)["parents"] == [pushed]
    assert "e2e/amtp/by-hand.spec.ts" in gh.files(REPO, "amtp/run-1")


# -- the service, on the local host ---------------------------------------------------------


@pytest.fixture
def repository(tmp_path, db):
    path = make_git_repo(tmp_path / "notes", {"README.md": "# notes\n"})
    return RepositoryFactory(full_name="acme/notes", host="local", local_path=str(path))


def maintenance_run(repository):
    head = git(repository.local_path, "rev-parse", "main").strip()
    return RunFactory(
        repository=repository, kind="maintenance", commit_sha=head, base_sha=head, status="running"
    )


def create(run, files, body):
    listed = [{"path": p, "contents": c} for p, c in files.items()]
    return pull_request_create(
        run=run,
        files=listed,
        title="Keep green",
        body=body,
        earlier=lambda: earlier_maintenance_pull(run, body),
    ).content


def test_a_later_maintenance_run_updates_the_open_pull_request_then_opens_anew(repository):
    local = LocalGitHost(repository.full_name, repository.local_path)
    first = create(maintenance_run(repository), HEALED, "report 1")
    assert (first["number"], first["updated"]) == (1, False)
    second_run = maintenance_run(repository)
    second = create(second_run, QUARANTINED, "report 2")
    assert (second["number"], second["updated"], second["head_branch"]) == (
        1,
        True,
        first["head_branch"],
    )
    second_run.refresh_from_db()
    assert (second_run.pr_number, second_run.head_branch) == (1, first["head_branch"])
    (pull,) = local.pull_requests()
    assert pull["body"] == "report 2" + UPDATED.format(run_id=second_run.run_id)
    branch = first["head_branch"]
    log = git(repository.local_path, "log", "--format=%H", branch).split()
    assert log[:2] == [second["head_sha"], first["head_sha"]]  # one commit on top
    shown = git(repository.local_path, "show", f"{branch}:e2e/amtp/about.spec.ts")
    assert shown == QUARANTINED["e2e/amtp/about.spec.ts"].strip()
    local.discard_pull_request(head_branch=branch, base_branch="main")  # closed by a person
    third = create(maintenance_run(repository), HEALED, "report 3")
    assert (third["number"], third["updated"]) == (2, False)
    assert third["head_branch"] != branch
    assert Run.objects.exclude(pr_number=None).count() == 3


def test_a_maintenance_run_never_updates_a_generation_pull_request(repository):
    generation = maintenance_run(repository)
    Run.objects.filter(pk=generation.pk).update(kind="generation")
    generation.refresh_from_db()
    files = [{"path": "e2e/amtp/new.spec.ts", "contents": "// AMTP\n"}]
    pull_request_create(run=generation, files=files, title="Add tests", body="b")
    opened = create(maintenance_run(repository), HEALED, "report 1")
    assert (opened["number"], opened["updated"]) == (2, False)


def test_the_fake_lists_every_pull_request_for_a_head_without_its_owner_as_github_does(
    gh,  # noqa: F811
    host,  # noqa: F811
):
    open_pr(host, gh)
    open_pr(host, gh, head_branch="amtp/run-2")
    pulls = host._repo().get_pulls(state="open", head="amtp/run-2")  # no "acme:": ignored
    assert [p.number for p in pulls] == [1, 2]
    assert update(host, HEALED, head_branch="amtp/run-2").number == 2  # the host names it
