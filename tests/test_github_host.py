"""GitHubHost through the real PyGithub client against the fake GitHub API over HTTP.

No Django: run with ``pytest -p no:django``. Every answer the host sees is one GitHub gives
(status, body, headers), so the error classification is tested as it happens in production.
"""

from __future__ import annotations

import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from amtp_site.errors import ConfigurationError
from repositories.errors import (
    BranchProtectionViolation,
    DraftPullRequestsUnsupported,
    GitHubForbidden,
    GitHubRateLimited,
    GitHubUnavailable,
    GitTreesApi409,
    RepositoryAccessError,
    StaleBaseBranch,
)
from repositories.hosts.base import TreeEntry
from repositories.hosts.github import NOT_THE_API, GitHubHost
from repositories.hosts.github_limits import LocalStrikes
from repositories.hosts.github_pulls import _files_digest
from schemas.errors import ContractViolation
from tests.fakes.github_api import FakeGitHub, git_sha
from tests.gitrepo import git, make_git_repo

REPO = "acme/web"
FILES = {
    "README.md": "# web\n",
    "package.json": '{"name": "web"}\n',
    "src/app.ts": "export const app = 1;\n",
    "src/pages/index.tsx": "export default () => null;\n",
    "bin/run.sh": ("100755", "#!/bin/sh\necho run\n"),
    "docs/current": ("120000", "../README.md"),  # a symlink: not a file to read
    "vendor/lib": ("160000", "a" * 40),  # a submodule: not in this repository
}
PR = {"base_branch": "main", "head_branch": "amtp/run-1", "title": "Add e2e tests", "body": "AMTP"}
NEW_FILES = {"tests/e2e/home.spec.ts": "test('home', () => {});\n"}


@pytest.fixture
def gh():
    with FakeGitHub() as fake:
        fake.base = fake.create_repo(REPO, files=FILES)
        yield fake
        assert fake.errors == []  # the fake itself never crashed


QUICK = (0.0, 0.01)  # the in-process retry pauses, shrunk


def make_host(gh, full_name=REPO, **kwargs):
    """A host as production builds one, with quick retries and its own strike count."""
    options = {"api_url": gh.api_url, "token": gh.token, "seconds_between_writes": None}
    options |= {"retry_waits": QUICK, "strikes": LocalStrikes()}
    return GitHubHost(full_name, **(options | kwargs))


@pytest.fixture
def host(gh):
    return make_host(gh)


def open_pr(host, gh, **overrides):
    return host.open_pull_request(
        **{**PR, "expected_base_sha": gh.base, "files": NEW_FILES, **overrides}
    )


def expected_entries(gh):
    """Regular files only: symlinks and submodules are not part of what the crawler reads."""
    return [
        TreeEntry(path, len(data), git_sha("blob", data))
        for path, (mode, data) in sorted(gh.files(REPO, "main").items())
        if mode in ("100644", "100755")
    ]


# -- the fake is git -----------------------------------------------------------------------
def test_fake_object_ids_are_gits(gh, tmp_path):
    files = {p: v for p, v in FILES.items() if isinstance(v, str)}
    gh.create_repo("acme/plain", files={**files, "docs/current": ("120000", "../README.md")})
    checkout = make_git_repo(tmp_path / "plain", files, symlinks={"docs/current": "../README.md"})
    tree = gh.commit_info("acme/plain", gh.head("acme/plain", "main"))["tree"]
    assert tree == git(checkout, "rev-parse", "HEAD^{tree}")  # same files, same SHA, as in git


# -- reads ---------------------------------------------------------------------------------
def test_resolve_ref_branch_tag_sha(gh, host):
    gh.tag(REPO, "v1", "main")
    gh.tag(REPO, "v1.0.0", "main", message="release")  # annotated: a tag object to peel
    for ref in ("main", "refs/heads/main", "v1", "v1.0.0", "refs/tags/v1.0.0", gh.base):
        assert host.resolve_ref(ref) == gh.base
    with pytest.raises(RepositoryAccessError, match="not found"):
        host.resolve_ref("no-such-branch")
    with pytest.raises(RepositoryAccessError):
        host.resolve_ref("0" * 40)


def test_tree_is_one_call_when_not_truncated(gh, host):
    entries = host.tree(gh.base)
    assert entries == expected_entries(gh)
    paths = [e.path for e in entries]
    assert paths == sorted(paths) and "bin/run.sh" in paths  # executables are files too
    assert "docs/current" not in paths and "vendor/lib" not in paths  # symlink, submodule
    assert gh.ledger == [("GET", f"/repos/{REPO}/git/trees/{gh.base}", 200)]
    assert gh.calls[0].query == {"recursive": "1"}


@pytest.mark.parametrize("limit", ["max_recursive_entries", "max_recursive_bytes"])
def test_truncated_tree_falls_back_to_walking_subtrees(gh, host, limit):
    setattr(gh, limit, 3 if limit == "max_recursive_entries" else 400)
    assert host.tree(gh.base) == expected_entries(gh)
    trees = [c for c in gh.calls if "/git/trees/" in c.path]
    assert len(trees) > 1
    assert any("recursive" not in c.query for c in trees)  # one level at a time where cut


def test_read_file_uses_the_blob_api(gh, host):
    assert host.read_file(gh.base, "src/app.ts") == b"export const app = 1;\n"  # tree walk
    host.tree(gh.base)
    before = len(gh.ledger)
    assert host.read_file(gh.base, "bin/run.sh") == b"#!/bin/sh\necho run\n"
    run_sh = git_sha("blob", b"#!/bin/sh\necho run\n")
    assert [p for _, p, _ in gh.ledger[before:]] == [f"/repos/{REPO}/git/blobs/{run_sh}"]
    assert not any("/contents/" in p for _, p, _ in gh.ledger)
    for missing in ("nope.txt", "src", "docs/current", "src/app.ts/x"):
        with pytest.raises(RepositoryAccessError, match="not a regular file"):
            host.read_file(gh.base, missing)


def test_enterprise_api_url():
    with FakeGitHub(enterprise=True) as ghes:
        ghes.base = ghes.create_repo(REPO, files={"a.txt": "a"})
        enterprise = make_host(ghes, api_url=f"{ghes.url}/api/v3/")
        assert enterprise.resolve_ref("main") == ghes.base
        assert open_pr(enterprise, ghes).number == 1
        assert {c.url_path[:8] for c in ghes.calls} == {"/api/v3/"}
    assert ghes.calls[0].path == f"/repos/{REPO}/git/ref/heads/main"


def test_enterprise_rules_are_read_under_api_v3():
    with FakeGitHub(enterprise=True) as ghes:
        ghes.base = ghes.create_repo(REPO, files={"a.txt": "a"})
        ghes.protect(REPO, "amtp/*", answer="opaque")
        with pytest.raises(BranchProtectionViolation, match="creation"):
            open_pr(make_host(ghes), ghes)
        assert ghes.calls[-1].url_path == f"/api/v3/repos/{REPO}/rules/branches/amtp%2Frun-1"


def test_enterprise_url_without_api_v3_says_what_to_set():
    # Real GHES serves its web UI at the root: the API client gets a 404 web page, which
    # must not read as "check the repository name". The fake serves the API only under
    # /api/v3, as GHES does.
    with FakeGitHub(enterprise=True) as ghes:
        base = ghes.base = ghes.create_repo(REPO, files={"a.txt": "a"})
        for call in (
            lambda h: h.resolve_ref("main"),
            lambda h: h.tree(base),
            lambda h: open_pr(h, ghes),
        ):
            with pytest.raises(ConfigurationError) as caught:
                call(make_host(ghes, api_url=ghes.url))
            assert caught.value.message == NOT_THE_API.format(url=ghes.url, status=404)
            assert "GITHUB_API_URL=https://HOSTNAME/api/v3" in caught.value.message
        assert ghes.refs(REPO) == {"refs/heads/main": base} and ghes.pulls(REPO) == []
        assert {status for _, _, status in ghes.ledger} == {404}


def test_github_com_url_with_api_v3_is_not_found(gh):
    # api.github.com answers JSON 404s for paths it does not have, /api/v3/... included
    wrong = make_host(gh, api_url=f"{gh.url}/api/v3")
    with pytest.raises(RepositoryAccessError, match="ref 'main' not found in acme/web"):
        wrong.resolve_ref("main")
    assert ("GET", f"/api/v3/repos/{REPO}/git/ref/heads/main", 404) in gh.ledger


def test_missing_repository_is_an_access_error(gh):
    other = GitHubHost("acme/none", api_url=gh.url, token=gh.token)
    with pytest.raises(RepositoryAccessError, match="check the repository name"):
        other.tree(gh.base)


# -- opening the pull request --------------------------------------------------------------
def test_open_pull_request_creates_one_ref_one_commit_one_pr(gh, host):
    result = open_pr(host, gh)
    assert (result.number, result.adopted, result.base_sha) == (1, False, gh.base)
    assert (result.head_branch, result.base_branch) == ("amtp/run-1", "main")
    assert gh.head(REPO, "amtp/run-1") == result.head_sha
    assert gh.commit_info(REPO, result.head_sha)["parents"] == [gh.base]
    assert [gh.count("POST", p) for p in ("/git/refs", "/git/commits", "/pulls")] == [1, 1, 1]
    new = {path: ("100644", text.encode()) for path, text in NEW_FILES.items()}
    assert gh.files(REPO, "amtp/run-1") == {**gh.files(REPO, "main"), **new}  # base tree kept
    [pr] = gh.pulls(REPO)
    assert (pr["title"], pr["body"]) == (PR["title"], PR["body"])
    assert (pr["head"]["ref"], pr["base"]["ref"], pr["html_url"]) == (
        "amtp/run-1",
        "main",
        result.url,
    )


@pytest.mark.parametrize("path", ["/abs.ts", "../up.ts", "a//b.ts", "a/./b.ts", "a\\b.ts", ""])
def test_unsafe_paths_are_refused_before_any_request(gh, host, path):
    with pytest.raises(ContractViolation):
        open_pr(host, gh, files={path: "x"})
    assert gh.ledger == []


@pytest.mark.parametrize(
    "path", [".github/workflows/ci.yml", ".git/config", "e2e/x\u202e.ts", "C:/x.ts", "e2e/"]
)
def test_the_write_guard_is_the_file_policys_path_rules(gh, host, path):
    with pytest.raises(ContractViolation, match="unsafe file path"):
        open_pr(host, gh, files={"e2e/ok.spec.ts": "x", path: "x"})
    assert gh.ledger == []


def test_the_files_digest_is_unchanged_for_existing_head_commits():
    # Pinned from the implementation before it used amtp_site.canonical: a head branch an
    # earlier release created still carries a digest _check_ours recognises on replay.
    files = {"e2e/amtp/b.spec.ts": "x", "e2e/amtp/a.spec.ts": 'café \u2028 "q" \\ \U0001f600'}
    assert _files_digest(files) == (
        "c71b205c6f6477bdab086e0c59157c346ab2ca30e89e7a03fdd39c753c334e41"
    )


def test_a_credential_is_required(gh):
    for incomplete in ({}, {"app_id": 1}, {"private_key": "k"}):
        with pytest.raises(GitHubForbidden, match="configure a GitHub credential"):
            GitHubHost(REPO, api_url=gh.url, **incomplete)


def test_second_call_adopts_without_writing(gh, host):
    first = open_pr(host, gh)
    writes = gh.count("POST")
    second = open_pr(host, gh)
    assert second.adopted and (second.number, second.head_sha) == (first.number, first.head_sha)
    assert gh.count("POST") == writes and len(gh.pulls(REPO)) == 1


def test_replay_after_the_base_moved_adopts_the_existing_pr(gh, host):
    first = open_pr(host, gh)
    gh.move_base(REPO, "main")
    assert open_pr(host, gh).number == first.number


def test_branch_without_pr_gets_its_pr(gh, host):
    gh.server_error(method="POST", path="/pulls$")
    with pytest.raises(GitHubUnavailable):
        open_pr(host, gh)
    assert "refs/heads/amtp/run-1" in gh.refs(REPO) and gh.pulls(REPO) == []
    result = open_pr(host, gh)
    assert result.adopted and len(gh.pulls(REPO)) == 1
    assert gh.count("POST", "/git/refs") == 1


def test_ref_created_concurrently_is_adopted(gh, host):
    def rival_creates_the_branch():  # the same run's other attempt, with the same commit
        repo = gh.repo(REPO)
        commits = [
            s
            for s, (kind, c) in repo.objects.items()
            if kind == "commit" and c["parents"] == [gh.base]
        ]
        repo.refs["refs/heads/amtp/run-1"] = commits[-1]

    gh.after_calls(6, rival_creates_the_branch)  # just before POST /git/refs
    result = open_pr(host, gh)
    assert ("POST", f"/repos/{REPO}/git/refs", 422) in gh.ledger
    assert result.adopted and len(gh.pulls(REPO)) == 1


def test_branch_with_other_content_is_not_adopted(gh, host):
    gh.push(REPO, "amtp/run-1", {"unrelated.txt": "someone else's\n"})
    with pytest.raises(GitTreesApi409, match="delete that branch or start a new run"):
        open_pr(host, gh)
    assert gh.pulls(REPO) == []


# -- failure classes -----------------------------------------------------------------------
def test_moved_base_is_stale(gh, host):
    gh.move_base(REPO, "main")
    with pytest.raises(StaleBaseBranch) as caught:
        open_pr(host, gh)
    err = caught.value
    assert (err.observed_head, err.expected_parent) == (gh.head(REPO, "main"), gh.base)
    assert not err.retryable and gh.count("POST") == 0


def test_base_moved_mid_operation_is_stale_before_anything_visible(gh, host):
    # GitHub has no "base tree is out of date" answer: the host compares the base's head with
    # the crawled SHA once more just before the ref, the first write anyone can see.
    gh.move_base(REPO, "main", after_calls=4)  # a merge lands while the tree is being written
    with pytest.raises(StaleBaseBranch) as caught:
        open_pr(host, gh)
    err = caught.value
    assert (err.base_branch, err.expected_parent) == ("main", gh.base)
    assert err.observed_head == gh.head(REPO, "main") != gh.base  # a real SHA, as GitHub has it
    assert gh.count("POST", "/git/refs") == 0 and gh.pulls(REPO) == []


def test_deleted_base_branch_is_its_own_error(gh, host):
    del gh.repo(REPO).refs["refs/heads/main"]
    with pytest.raises(RepositoryAccessError, match="base branch 'main' no longer exists"):
        open_pr(host, gh)
    assert gh.count("POST") == 0


def test_sporadic_base_tree_answer_is_retried(gh, host):
    gh.flaky_base_tree(calls=2)
    result = open_pr(host, gh)
    assert result.number == 1 and not result.adopted
    assert [s for m, p, s in gh.ledger if m == "POST" and p.endswith("/git/trees")] == [
        422,
        422,
        201,
    ]


def test_base_tree_answer_that_persists_goes_to_temporal(gh, host):
    gh.flaky_base_tree(calls=len(QUICK) + 1)
    with pytest.raises(GitHubUnavailable) as caught:
        open_pr(host, gh)
    assert caught.value.retryable and "base_tree is not a valid tree oid" in caught.value.message
    assert f"{len(QUICK) + 1} times" in caught.value.message
    assert gh.count("POST", "/git/refs") == 0
    assert open_pr(host, gh).number == 1  # Temporal's next attempt goes through


def test_base_moved_while_retrying_the_tree_is_stale(gh, host):
    gh.flaky_base_tree(calls=1)
    gh.move_base(REPO, "main", after_calls=5)  # between the 422 and the retry
    with pytest.raises(StaleBaseBranch) as caught:
        open_pr(host, gh)
    assert caught.value.observed_head == gh.head(REPO, "main")


@pytest.mark.parametrize(
    ("ruleset", "answer", "status", "wording"),
    [
        (True, "message", 422, "Repository rule violations found"),
        (True, "errors", 422, "Validation Failed"),
        (True, "opaque", 422, "Reference update failed"),
        (False, "message", 422, "Protected branch update failed"),
        (False, "message", 403, "Protected branch update failed"),
    ],
)
def test_branch_protection_and_rulesets_are_holds(gh, host, ruleset, answer, status, wording):
    gh.protect(REPO, "amtp/*", ruleset=ruleset, answer=answer, status=status)
    with pytest.raises(BranchProtectionViolation) as caught:
        open_pr(host, gh)
    body = json.loads(caught.value.body)  # GitHub's own body, for the approvals row
    assert body["message"].startswith(wording) and body["status"] == str(status)
    assert not caught.value.retryable and gh.pulls(REPO) == []
    assert gh.count("POST", "/git/refs") == 1  # a refusal is not retried


def test_opaque_refusal_names_the_rules_that_apply(gh, host):
    # GitHub's bare "Reference update failed" says nothing; GET rules/branches/{branch} does
    gh.protect(REPO, "amtp/*", answer="opaque", rules=("creation", "deletion"))
    with pytest.raises(BranchProtectionViolation) as caught:
        open_pr(host, gh)
    body = json.loads(caught.value.body)
    assert [r["type"] for r in body["rules"]] == ["creation"]  # deletion does not refuse it
    assert "repository rules for this branch: creation" in body["message"]
    assert gh.count("GET", "/rules/branches/amtp") == 1


def test_transient_reference_update_failed_is_retried(gh, host):
    gh.flaky_ref_creation(calls=2)
    result = open_pr(host, gh)
    assert result.number == 1 and not result.adopted
    assert [s for m, p, s in gh.ledger if m == "POST" and p.endswith("/git/refs")] == [
        422,
        422,
        201,
    ]
    assert gh.count("POST", "/git/commits") == 1  # only the failed request was repeated


def test_rules_that_do_not_refuse_creation_do_not_make_a_hold(gh, host):
    required = {"type": "required_status_checks", "parameters": {"do_not_enforce_on_create": True}}
    gh.protect(REPO, "amtp/*", rules=("deletion", "non_fast_forward", "pull_request", required))
    gh.flaky_ref_creation(calls=1)
    assert open_pr(host, gh).number == 1


def test_ref_failure_that_persists_goes_to_temporal_and_names_classic_protection(gh, host):
    # Classic protection that restricts creating matching branches answers the same bare
    # 422 (actions/github-script#455) and no API readable by a writer shows it.
    gh.protect(REPO, "amtp/*", ruleset=False)
    with pytest.raises(GitHubUnavailable) as caught:
        open_pr(host, gh)
    assert caught.value.retryable
    assert f"{len(QUICK) + 1} times" in caught.value.message
    assert "classic branch protection rule" in caught.value.message
    assert gh.count("POST", "/git/refs") == len(QUICK) + 1 and gh.pulls(REPO) == []


PRE_RECEIVE = {
    "code": "custom",
    "field": "pre_receive",
    "message": "pre_receive Repository rule violations found\n\nCannot create ref due to "
    "creations being restricted.\n\n",
}


@pytest.mark.parametrize(
    ("status", "message", "errors"),
    [
        (422, "Validation Failed", [PRE_RECEIVE]),
        (403, "Protected branch update failed for refs/heads/main.", None),
        (405, "You're not authorized to push to this branch.", None),
    ],
)
def test_pull_request_refused_by_rules_is_a_hold(gh, host, status, message, errors):
    gh.fail(status, message, errors=errors, method="POST", path="/pulls$")
    with pytest.raises(BranchProtectionViolation):
        open_pr(host, gh)
    assert "refs/heads/amtp/run-1" in gh.refs(REPO) and gh.pulls(REPO) == []
    assert open_pr(host, gh).adopted  # after the approval, the branch is adopted


def test_plain_403_is_forbidden(gh, host):
    gh.forbid(REPO)
    with pytest.raises(GitHubForbidden, match="contents: write and pull_requests: write") as caught:
        open_pr(host, gh)
    assert not caught.value.retryable and "Resource not accessible by integration" in str(
        caught.value
    )


def test_bad_token_is_forbidden(gh):
    with pytest.raises(GitHubForbidden, match="401"):
        GitHubHost(REPO, api_url=gh.url, token="ghp_wrong").resolve_ref("main")


@pytest.mark.parametrize(
    ("kwargs", "low", "high"),
    [
        ({"reset_in": 42}, 40, 42),
        ({"secondary": True, "status": 429, "reset_in": 30}, 30, 30),
        ({"secondary": True, "reset_in": 7}, 7, 7),
        ({"secondary": True, "retry_after": False}, 60, 60),  # "at least one minute"
    ],
)
def test_rate_limits_say_when_to_retry(gh, host, kwargs, low, high):
    gh.rate_limit(**kwargs)
    with pytest.raises(GitHubRateLimited) as caught:
        host.tree(gh.base)
    assert caught.value.retryable and low <= caught.value.details["retry_after"] <= high


@pytest.mark.parametrize(
    ("kwargs", "waits"),
    [
        ({"secondary": True, "retry_after": False}, [60, 120, 240, 480]),
        ({"secondary": True, "reset_in": 30}, [30, 60, 120, 240]),
        ({"secondary": True, "status": 429, "reset_in": 2000}, [2000, 3600, 3600, 3600]),
    ],
)
def test_repeated_secondary_limits_wait_longer_each_time(gh, kwargs, waits):
    # "If your request continues to fail due to a secondary rate limit, wait for an
    # exponentially increasing amount of time between retries" -- each attempt is a new host
    # (a new process in production); the strikes are the credential's.
    strikes = LocalStrikes()
    seen = []
    for _ in waits:
        gh.rate_limit(**kwargs)
        with pytest.raises(GitHubRateLimited) as caught:
            make_host(gh, strikes=strikes).tree(gh.base)
        seen.append(caught.value.details["retry_after"])
    assert seen == waits
    assert "each wait doubles" in caught.value.message
    other = make_host(gh, token="ghp_" + "e" * 36, strikes=strikes)  # another credential
    gh.rate_limit(**kwargs)
    with pytest.raises(GitHubRateLimited) as caught:
        other.tree(gh.base)
    assert caught.value.details["retry_after"] == waits[0]


def test_primary_limits_wait_for_the_reset_however_often(gh):
    strikes = LocalStrikes()
    for _ in range(3):
        gh.rate_limit(reset_in=100)
        with pytest.raises(GitHubRateLimited) as caught:
            make_host(gh, strikes=strikes).tree(gh.base)
        assert 98 <= caught.value.details["retry_after"] <= 100


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_unavailable(gh, host, status):
    gh.server_error(status=status)
    with pytest.raises(GitHubUnavailable) as caught:
        host.resolve_ref("main")
    assert caught.value.retryable
    assert gh.count() == 1  # PyGithub did not retry on its own: Temporal owns retries


def test_unreachable_github_is_unavailable():
    with FakeGitHub() as closed:
        url = closed.url
    with pytest.raises(GitHubUnavailable, match="did not answer"):
        GitHubHost(REPO, api_url=url, token="t", timeout=2).resolve_ref("main")


NO_COMMITS = {"resource": "PullRequest", "code": "custom", "message": "No commits between x and y"}
BAD_BASE = {"resource": "PullRequest", "field": "base", "code": "invalid"}


@pytest.mark.parametrize(
    ("path", "message", "errors"),
    [
        ("/pulls$", "Validation Failed", [NO_COMMITS]),
        ("/pulls$", "Validation Failed", [BAD_BASE]),
        ("/git/refs$", "Reference name is invalid", None),
        ("/git/trees$", "Invalid tree info", None),
    ],
)
def test_unrelated_422_is_not_adopted(gh, host, path, message, errors):
    gh.fail(422, message, errors=errors, method="POST", path=path)
    with pytest.raises(RepositoryAccessError, match="422") as caught:
        open_pr(host, gh)
    assert not caught.value.retryable and gh.pulls(REPO) == []


# -- GitHub App authentication ---------------------------------------------------------------
def rsa_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def test_github_app_installation_token(gh):
    private, public = rsa_pair()
    installation = gh.install_app(4242, public, [REPO])
    host = GitHubHost(  # with a token configured too, the App is still the identity used
        REPO,
        api_url=gh.url,
        app_id=4242,
        private_key=private,
        token=gh.token,
        seconds_between_writes=None,
    )
    assert host.resolve_ref("main") == gh.base
    lookup, mint, read = gh.calls
    assert (lookup.method, lookup.path) == ("GET", f"/repos/{REPO}/installation")
    assert (mint.method, mint.path, mint.status) == (
        "POST",
        f"/app/installations/{installation}/access_tokens",
        201,
    )
    for call in (lookup, mint):  # the app itself signs in with an RS256 JWT
        scheme, token = call.headers["Authorization"].split(" ")
        claims = jwt.decode(token, public, algorithms=["RS256"])
        assert scheme == "Bearer" and claims["iss"] == "4242" and claims["exp"] - time.time() <= 600
    assert read.headers["Authorization"] == f"token {gh.issued_tokens[0]}"
    open_pr(host, gh)  # repository writes use the installation token too
    assert {c.headers["Authorization"] for c in gh.calls[2:]} == {f"token {gh.issued_tokens[0]}"}


def test_installation_token_is_renewed_before_it_expires(gh):
    private, public = rsa_pair()
    installation = gh.install_app(7, public, [REPO])
    gh.token_ttl = 10  # inside PyGithub's 20 s renewal margin: every use renews it
    escaped = private.replace("\n", "\\n")  # as a PEM often arrives in an environment variable
    host = GitHubHost(
        REPO,
        api_url=gh.url,
        app_id=7,
        private_key=escaped,
        installation_id=installation,
        seconds_between_writes=None,
    )
    host.resolve_ref("main")
    host.resolve_ref("main")
    assert len(gh.issued_tokens) == 2 and gh.count("GET", "/installation$") == 0


def test_app_with_wrong_key_or_not_installed(gh):
    private, public = rsa_pair()
    gh.install_app(1, rsa_pair()[1], [REPO])  # registered with another key
    with pytest.raises(GitHubForbidden, match="JSON web token"):
        GitHubHost(REPO, api_url=gh.url, app_id=1, private_key=private).resolve_ref("main")
    gh.install_app(2, public, ["acme/other"])
    with pytest.raises(RepositoryAccessError, match="acme/web: GitHub answered 404.*not installed"):
        GitHubHost(REPO, api_url=gh.url, app_id=2, private_key=private).resolve_ref("main")


# -- scale ---------------------------------------------------------------------------------
def test_hundred_thousand_files(gh, host):
    started = time.monotonic()
    files = {f"pkg{d:03}/mod{f:04}.py": f"# {d} {f}\n" for d in range(200) for f in range(500)}
    base = gh.create_repo("acme/big", files=files)
    big = GitHubHost("acme/big", api_url=gh.url, token=gh.token)
    entries = big.tree(base)  # GitHub's 7 MB cap truncates the recursive listing: walk
    assert len(entries) == 100_000 and entries[0].path == "pkg000/mod0000.py"
    assert gh.count("GET", "/git/trees/") == 2 + 200
    assert time.monotonic() - started < 60


# -- taking back a cancelled run's pull request ------------------------------------------
def _call(gh, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None]:
    """One raw request to the fake, as a client that is not PyGithub sends it."""
    import urllib.error
    import urllib.request

    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{gh.api_url}/repos/{REPO}{path}", data, method=method)
    request.add_header("Authorization", f"token {gh.token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_take_back_closes_the_pr_and_deletes_the_branch(gh, host):
    result = open_pr(host, gh)
    assert host.discard_pull_request(head_branch="amtp/run-1", base_branch="main") is True
    [pr] = gh.pulls(REPO)
    assert (pr["number"], pr["state"]) == (result.number, "closed") and pr["closed_at"]
    assert "refs/heads/amtp/run-1" not in gh.refs(REPO)
    assert gh.count("PATCH", r"/pulls/1$") == gh.count("DELETE", "/git/refs/heads/amtp/run-1") == 1
    # Again (a retried DiscardPullRequest): the PR is closed already, the ref gone (422).
    host.discard_pull_request(head_branch="amtp/run-1", base_branch="main")
    assert gh.count("PATCH") == 1 and gh.pulls(REPO)[0]["state"] == "closed"


def test_take_back_of_a_branch_without_a_pr_deletes_it_and_of_nothing_writes_nothing(gh, host):
    assert host.discard_pull_request(head_branch="amtp/run-1", base_branch="main") is False
    gh.push(REPO, "amtp/run-2", NEW_FILES)  # a crash between the ref and the PR
    assert host.discard_pull_request(head_branch="amtp/run-2", base_branch="main") is True
    assert "refs/heads/amtp/run-2" not in gh.refs(REPO)
    assert gh.count("PATCH") == 0 and gh.pulls(REPO) == []


def test_the_fakes_close_and_delete_answer_as_github(gh, host):
    """docs.github.com/rest/pulls/pulls#update-a-pull-request and
    docs.github.com/rest/git/refs#delete-a-reference."""
    open_pr(host, gh)
    status, body = _call(gh, "PATCH", "/pulls/1", {"state": "merged"})
    assert (status, body["message"], body["errors"][0]["field"]) == (
        422,
        "Validation Failed",
        "state",
    )
    status, body = _call(gh, "PATCH", "/pulls/1", {"state": "closed"})
    assert (status, body["state"], body["number"]) == (200, "closed", 1)
    assert _call(gh, "DELETE", "/git/refs/heads/amtp/run-1") == (204, None)
    status, body = _call(gh, "DELETE", "/git/refs/heads/amtp/run-1")
    assert (status, body["message"]) == (422, "Reference does not exist")
    assert body["documentation_url"].endswith("/git/refs#delete-a-reference")
    status, body = _call(gh, "PATCH", "/pulls/1", {"state": "open"})  # its branch is gone
    assert status == 422 and "branch has been deleted" in body["errors"][0]["message"]
    assert _call(gh, "PATCH", "/pulls/9", {"state": "closed"})[0] == 404


# -- drafts and labels ---------------------------------------------------------------------
LABELS = ["amtp", "model-written"]


def test_a_new_pull_request_is_a_draft_with_its_labels(gh, host):
    result = open_pr(host, gh, labels=LABELS)
    [pr] = gh.pulls(REPO)
    assert pr["draft"] is True and [label["name"] for label in pr["labels"]] == LABELS
    assert gh.labels_of(REPO, result.number) == LABELS
    [call] = [c for c in gh.calls if c.path.endswith(f"/issues/{result.number}/labels")]
    assert (call.method, call.status) == ("POST", 200)


def test_with_drafts_off_the_pull_request_is_ready_for_review(gh, host):
    open_pr(host, gh, draft=False)
    assert gh.pulls(REPO)[0]["draft"] is False
    assert gh.count("POST", r"/labels$") == 0  # no labels asked: no request


def test_a_retry_adds_no_label_twice_and_does_not_fail(gh, host):
    first = open_pr(host, gh, labels=LABELS)
    again = open_pr(host, gh, labels=[*LABELS, "e2e"])  # a label added to the settings since
    assert again.adopted and again.number == first.number
    assert gh.labels_of(REPO, first.number) == [*LABELS, "e2e"]
    open_pr(host, gh, labels=["AMTP", "model-written"])  # names ignore case
    assert gh.count("POST", r"/labels$") == 2 and len(gh.pulls(REPO)) == 1


def test_labels_lost_to_a_failure_are_added_by_the_retry(gh, host):
    gh.server_error(method="POST", path=r"/labels$")
    with pytest.raises(GitHubUnavailable):
        open_pr(host, gh, labels=LABELS)
    assert gh.labels_of(REPO, 1) == []  # the PR is open, unlabelled
    again = open_pr(host, gh, labels=LABELS)
    assert again.adopted and gh.labels_of(REPO, 1) == LABELS and len(gh.pulls(REPO)) == 1


def test_a_plan_without_drafts_is_a_final_error_that_says_what_to_do(gh, host):
    gh.no_drafts(REPO)
    with pytest.raises(DraftPullRequestsUnsupported, match="turn off 'draft pull requests'"):
        open_pr(host, gh, labels=LABELS)
    assert gh.pulls(REPO) == [] and not DraftPullRequestsUnsupported.retryable
    assert open_pr(host, gh, draft=False).number == 1  # the setting off: the run again works


def test_open_pull_request_numbers_lists_only_the_open_ones(gh, host):
    first = open_pr(host, gh, head_branch="amtp/run-1")
    second = open_pr(host, gh, head_branch="amtp/run-2")
    host.discard_pull_request(head_branch="amtp/run-1", base_branch="main")
    assert host.open_pull_request_numbers() == {second.number} != {first.number}
