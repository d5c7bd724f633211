"""Opening the pull request on GitHub: one tree, one commit, one ref, one PR, or the earlier
attempt's adopted.

The base is compared with the SHA the crawl used before anything is written and once more just
before the ref (the first write anyone can see): a moved base is StaleBaseBranch with the head
GitHub reports, a deleted one its own error. GitHub's transient 422s are retried here a few
times, each only one request of the sequence; then Temporal retries the whole, which adopts
whatever an earlier attempt left.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from urllib.parse import quote

from github import GithubException, InputGitTreeElement

from amtp_site.canonical import canonical_json
from repositories.errors import (
    BranchProtectionViolation,
    DraftPullRequestsUnsupported,
    GitHubUnavailable,
    GitTreesApi409,
    RepositoryAccessError,
    StaleBaseBranch,
)
from repositories.hosts import github_errors as answers
from repositories.hosts.base import NewPullRequest, PullRequestResult, check_files

_DIGEST_TRAILER = "AMTP-Files-Digest"
BASE_GONE = (
    "base branch {branch!r} no longer exists in {repo} (the crawl used {expected}); start a new "
    "run against an existing branch"
)
STILL_FAILING = (
    "could not {action} in {repo}: GitHub answered {status} {message!r} {tries} times; GitHub "
    "gives this answer to valid requests now and then, so Temporal retries"
)
DRAFTS_REFUSED = (
    "GitHub offers no draft pull requests for {repo} (a private repository on GitHub Free or "
    "Pro): turn off 'draft pull requests' in its AMTP settings (CI that runs on pull requests "
    "will then run the generated specs at once), or move it to a plan with drafts; then run again"
)
REF_STILL_FAILING = (
    "; no repository rule applies to {branch}. If it persists, a classic branch protection rule "
    "matching it may restrict creating branches (GitHub does not say so for classic rules): "
    "exclude amtp/* from it, or use a ruleset"
)


class PullRequestWrites:
    """The write half of GitHubHost: needs its ``full_name``, ``_repo()``, ``_github()``,
    ``_errors()`` and ``_retry_waits``."""

    def _open_pull_request(self, new: NewPullRequest) -> PullRequestResult:
        base_branch, head_branch, files = new.base_branch, new.head_branch, new.files
        expected_base_sha = new.expected_base_sha
        check_files(files)
        with self._errors(f"open a pull request from {head_branch} into {base_branch}"):
            observed = self._base_head(base_branch, expected_base_sha)
            head_sha = self._branch_sha(head_branch)
            adopted = head_sha is not None  # an earlier attempt got this far: adopt it
            if head_sha is None:
                if observed != expected_base_sha:
                    raise StaleBaseBranch(base_branch, observed, expected_base_sha)
                head_sha, adopted = self._commit(
                    head_branch, base_branch, expected_base_sha, files, new.title
                )
            pr = self._find_pull(head_branch, base_branch) if adopted else None
            if pr is None:
                if adopted:
                    self._check_ours(head_branch, head_sha, expected_base_sha, files)
                pr, pr_adopted = self._create_pull(
                    base_branch, head_branch, new.title, new.body, new.draft
                )
                adopted = adopted or pr_adopted
            self._label(pr, new.labels)
            head = (pr.number, pr.html_url, head_branch, head_sha)
            return PullRequestResult(*head, base_branch, expected_base_sha, adopted)

    def update_pull_request(
        self, *, head_branch: str, base_branch: str, files: dict[str, str], title: str, body: str
    ) -> PullRequestResult | None:
        check_files(files)
        with self._errors(f"update the pull request from {head_branch}"):
            owner = self.full_name.split("/")[0]
            pulls = self._repo().get_pulls(
                state="open", head=f"{owner}:{head_branch}", base=base_branch
            )
            pr = next(iter(pulls), None)
            parent_sha = self._branch_sha(head_branch) if pr is not None else None
            if parent_sha is None:
                return None
            head_sha = self._commit_onto(head_branch, parent_sha, files, title)
            pr.edit(title=title, body=body)
            head = (pr.number, pr.html_url, head_branch, head_sha, base_branch, parent_sha)
            return PullRequestResult(*head, adopted=False, updated=True)

    def _commit_onto(self, branch: str, parent_sha: str, files: dict, title: str) -> str:
        """A commit of ``files`` on ``parent_sha``, ``branch`` fast-forwarded to it (PATCH
        git/refs with force false: docs.github.com/rest/git/refs#update-a-reference, so a
        push made meanwhile is never overwritten); ``parent_sha`` when nothing would change."""
        repo = self._repo()
        parent = repo.get_git_commit(parent_sha)
        elements = [
            InputGitTreeElement(path, "100644", "blob", content=text)
            for path, text in sorted(files.items())
        ]
        tree = repo.create_git_tree(elements, base_tree=parent.tree)
        if tree.sha == parent.tree.sha:
            return parent_sha
        message = f"{title}\n\n{_DIGEST_TRAILER}: {_files_digest(files)}\n"
        commit = repo.create_git_commit(message, tree, [parent])
        url = f"{repo.url}/git/refs/heads/{quote(branch, safe='/')}"
        self._github().requester.requestJsonAndCheck(
            "PATCH", url, input={"sha": commit.sha, "force": False}
        )
        return commit.sha

    def _base_head(self, base_branch: str, expected: str) -> str:
        """The base branch's head now: a real SHA, or a typed error when the branch is gone."""
        observed = self._branch_sha(base_branch)
        if observed is None:
            raise RepositoryAccessError(
                BASE_GONE.format(branch=base_branch, repo=self.full_name, expected=expected)
            )
        return observed

    def _check_base(self, base_branch: str, expected: str) -> None:
        observed = self._base_head(base_branch, expected)
        if observed != expected:
            raise StaleBaseBranch(base_branch, observed, expected)

    def _commit(self, head_branch, base_branch, parent_sha, files, title) -> tuple[str, bool]:
        """Tree on top of the parent's tree, commit, ref: (head SHA, whether adopted). The base
        is compared once more before the ref, the first write anyone can see."""
        repo = self._repo()
        parent = repo.get_git_commit(parent_sha)
        elements = [
            InputGitTreeElement(path, "100644", "blob", content=text)  # regular files only
            for path, text in sorted(files.items())
        ]
        tree = self._again(
            "create the tree",
            lambda: repo.create_git_tree(elements, base_tree=parent.tree),
            answers.is_base_tree_invalid,
            before_retry=lambda: self._check_base(base_branch, parent_sha),
        )
        message = f"{title}\n\n{_DIGEST_TRAILER}: {_files_digest(files)}\n"
        commit = repo.create_git_commit(message, tree, [parent])
        self._check_base(base_branch, parent_sha)
        return self._create_ref(head_branch, commit.sha)

    def _create_ref(self, head_branch: str, sha: str) -> tuple[str, bool]:
        """POST git/refs, adopting a branch that exists by now. GitHub's bare "Reference update
        failed" is a ruleset's refusal when the branch's rules say so, else retried."""
        repo, waits, tries = self._repo(), iter(self._retry_waits), 0
        while True:
            tries += 1
            try:
                repo.create_git_ref(f"refs/heads/{head_branch}", sha)
                return sha, False
            except GithubException as exc:
                if exc.status not in (409, 422):
                    raise
                existing = self._branch_sha(head_branch)  # a concurrent attempt, or this one
                if existing is not None:
                    return existing, True
                if not answers.is_reference_update_failed(exc):
                    raise
                rules = self._rules_refusing_creation(head_branch)
                if rules:
                    raise BranchProtectionViolation(answers.refusal_body(exc, rules)) from exc
                wait = next(waits, None)
                if wait is None:
                    raise self._still_failing(exc, "create the branch", tries, head_branch) from exc
                time.sleep(wait)

    def _again(self, action: str, call: Callable, transient, *, before_retry=None):
        """``call()``, retried after GitHub's transient answers (``transient(exc)``)."""
        waits, tries = iter(self._retry_waits), 0
        while True:
            tries += 1
            try:
                return call()
            except GithubException as exc:
                if not transient(exc):
                    raise
                wait = next(waits, None)
                if wait is None:
                    raise self._still_failing(exc, action, tries) from exc
                time.sleep(wait)
                if before_retry:
                    before_retry()

    def _still_failing(self, exc, action: str, tries: int, branch: str | None = None):
        text = STILL_FAILING.format(
            action=action,
            repo=self.full_name,
            status=exc.status,
            message=answers.message(exc),
            tries=tries,
        )
        if branch:
            text += REF_STILL_FAILING.format(branch=branch)
        return GitHubUnavailable(text, status=exc.status, body=exc.data)

    def _rules_refusing_creation(self, branch: str) -> list[dict]:
        """The active ruleset rules for ``branch`` that may refuse creating it (GET
        rules/branches/{branch}: metadata read, docs.github.com/rest/repos/rules)."""
        url = f"{self._repo().url}/rules/branches/{quote(branch, safe='')}"
        try:
            _, rules = self._github().requester.requestJsonAndCheck(
                "GET", url, parameters={"per_page": 100}
            )
        except GithubException as exc:
            if exc.status in (403, 404):  # an older GHES without rulesets, or not visible
                return []
            raise
        return answers.blocking_rules(rules)

    def _create_pull(self, base, head, title, body, draft):
        """(pull request, whether adopted): GitHub's "already exists" answer is adopted."""
        try:
            pr = self._repo().create_pull(base=base, head=head, title=title, body=body, draft=draft)
            return pr, False
        except GithubException as exc:
            found = None
            said = answers.text(exc) if exc.status == 422 else ""
            if answers.DRAFTS_NOT_SUPPORTED in said:
                raise DraftPullRequestsUnsupported(
                    DRAFTS_REFUSED.format(repo=self.full_name), body=exc.data
                ) from exc
            if "a pull request already exists" in said:
                found = self._find_pull(head, base)
            if found is None:
                raise
            return found, True

    def _label(self, pr, labels: Sequence[str]) -> None:
        """Add the labels the pull request lacks (names ignore case, as on GitHub): one POST
        issues/{n}/labels, none when a retry finds them all there already. Labels the
        repository does not have yet are created by GitHub."""
        present = {label.name.casefold() for label in pr.labels}
        missing = [name for name in labels if name.casefold() not in present]
        if missing:
            url = f"{self._repo().url}/issues/{pr.number}/labels"
            self._github().requester.requestJsonAndCheck("POST", url, input={"labels": missing})

    def discard_pull_request(self, *, head_branch: str, base_branch: str) -> bool:
        """Close the run's PR and delete its head branch (a cancelled run takes back what it
        wrote); False when there was nothing to take back."""
        with self._errors(f"take back the pull request from {head_branch}"):
            pr = self._find_pull(head_branch, base_branch)
            if pr is not None and pr.state == "open":
                pr.edit(state="closed")
            try:
                ref = self._repo().get_git_ref(f"heads/{head_branch}")
                # Read it first: PyGithub's lazy ref points at GET's git/ref/{ref}; DELETE is
                # documented on git/refs/{ref}, the "url" GitHub answers with.
                ref.object  # noqa: B018
                ref.delete()
            except GithubException as exc:  # 404 / 422 "Reference does not exist": gone
                if exc.status not in (404, 422) or answers.is_not_the_api(exc):
                    raise
                return pr is not None
            return True

    def open_pull_request_numbers(self) -> set[int]:
        """Every open pull request's number (PyGithub pages through them, 30 a request)."""
        with self._errors("list the open pull requests"):
            return {pr.number for pr in self._repo().get_pulls(state="open")}

    def _branch_sha(self, branch: str) -> str | None:
        try:
            return self._repo().get_git_ref(f"heads/{branch}").object.sha
        except GithubException as exc:
            if exc.status == 404 and not answers.is_not_the_api(exc):
                return None
            raise

    def _find_pull(self, head_branch: str, base_branch: str):
        owner = self.full_name.split("/")[0]
        pulls = self._repo().get_pulls(state="all", head=f"{owner}:{head_branch}", base=base_branch)
        return next(iter(pulls), None)

    def _check_ours(self, head_branch: str, head_sha: str, parent: str, files: dict) -> None:
        """An existing head branch without a PR must carry exactly these files on ``parent``
        (the digest in its commit message); otherwise it is not ours to open a PR for."""
        commit = self._repo().get_git_commit(head_sha)
        digest = _files_digest(files)
        if [p.sha for p in commit.parents] != [parent] or digest not in commit.message:
            raise GitTreesApi409(
                f"branch {head_branch!r} already exists at {head_sha} with other content; "
                "delete that branch or start a new run (which uses a new head branch)",
                head_branch=head_branch,
                head_sha=head_sha,
            )


def _files_digest(files: dict[str, str]) -> str:
    """sha256 of the files, recorded in the commit so a replay can recognise its own branch."""
    return hashlib.sha256(canonical_json(files)).hexdigest()
