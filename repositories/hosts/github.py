"""The GitHub repository host, on PyGithub (github.com, GitHub Enterprise, or a local fake).

Reads are by commit SHA (trees and blobs), so they are immutable and cacheable. Writes use the
Git Trees API: one tree on top of the base tree, one commit, one ref, one pull request; an
earlier attempt's branch or PR is adopted, never duplicated. PyGithub's own retries are off
because Temporal owns retries: every GitHub failure becomes one typed error from
``amtp_site.errors`` that says whether to retry and what an operator should do.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests
from github import Auth, Github, GithubException, GithubIntegration, InputGitTreeElement

from amtp_site.canonical import canonical_json
from amtp_site.errors import (
    AmtpError,
    BranchProtectionViolation,
    GitHubForbidden,
    GitHubRateLimited,
    GitHubUnavailable,
    GitTreesApi409,
    RepositoryAccessError,
    StaleBaseBranch,
)
from repositories.hosts.base import PullRequestResult, RepositoryHost, TreeEntry, check_files

DEFAULT_API_URL = "https://api.github.com"
REGULAR_FILE_MODES = ("100644", "100755")  # symlinks (120000) and submodules (160000) are skipped
_FULL_SHA = re.compile(r"[0-9a-f]{40}")
# How GitHub words a refusal by branch protection or a ruleset (403 or, for git refs, 422).
_PROTECTION = ("protected branch", "branch protection", "repository rule violation")
# How GitHub words "the base moved under you" on tree/ref writes.
_STALE = ("base tree", "out of date", "not a fast forward", "not a fast-forward")
_DIGEST_TRAILER = "AMTP-Files-Digest"
# What an operator should do, per failure.
_FORBIDDEN = "give {who} contents: write and pull_requests: write on {repo}"
_UNAUTHORIZED = "{who} was refused: check GITHUB_TOKEN, or GITHUB_APP_ID and its private key"
_NOT_INSTALLED = "the GitHub App {app} is not installed on it: install it, or check the app id"
_NOT_FOUND = "check the repository name, the ref, and that the credential can see the repository"
_REFUSED = "GitHub refused the request as made: fix the input (branches, files), start a new run"


class GitHubHost(RepositoryHost):
    """One GitHub repository, authenticated as a GitHub App installation or with a token."""

    name = "github"

    def __init__(
        self,
        full_name: str,
        *,
        api_url: str = DEFAULT_API_URL,
        token: str | None = None,
        app_id: int | str | None = None,
        private_key: str | None = None,
        installation_id: int | None = None,
        timeout: int = 30,
        seconds_between_writes: float | None = 1.0,
        user_agent: str = "amtp",
    ) -> None:
        """``seconds_between_writes``: GitHub asks integrations to space content-creating
        requests about a second apart to stay clear of secondary rate limits."""
        super().__init__(full_name)
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", full_name):
            raise RepositoryAccessError(f"{full_name!r} is not an owner/name repository name")
        if bool(app_id) != bool(private_key) or not (token or app_id):
            raise GitHubForbidden(
                "configure a GitHub credential: a GitHub App (GITHUB_APP_ID and "
                "GITHUB_APP_PRIVATE_KEY, both) or a token (GITHUB_TOKEN)"
            )
        self.api_url = api_url.rstrip("/")
        self._options: dict[str, Any] = {
            "base_url": self.api_url,
            "timeout": int(timeout),
            "retry": None,  # no hidden retries: Temporal's retry policy is the only one
            "seconds_between_requests": None,  # serial requests are within GitHub's guidance
            "seconds_between_writes": seconds_between_writes,
            "user_agent": user_agent,
        }
        # The App wins when both are set (least privilege); a PEM from an environment variable
        # often carries literal "\\n" sequences.
        self._token = None if app_id else token
        self._app_id, self._private_key = app_id, (private_key or "").replace("\\n", "\n")
        self._installation_id = installation_id
        self._client: Github | None = None
        self._indexes: OrderedDict[str, dict[str, TreeEntry]] = OrderedDict()  # per commit

    # -- connection -----------------------------------------------------------------------
    def _github(self) -> Github:
        """Built on first use, so constructing a host never touches the network."""
        if self._client is not None:
            return self._client
        if self._token:
            self._client = Github(auth=Auth.Token(self._token), lazy=True, **self._options)
            return self._client
        app_auth = Auth.AppAuth(self._app_id, self._private_key)
        if self._installation_id is None:
            owner, repo = self.full_name.split("/")
            with self._errors("find the GitHub App installation", installation=True):
                integration = GithubIntegration(auth=app_auth, **self._options)
                self._installation_id = integration.get_repo_installation(owner, repo).id
        # PyGithub fetches the installation token on first use and renews it before it expires.
        auth = app_auth.get_installation_auth(int(self._installation_id))
        self._client = Github(auth=auth, lazy=True, **self._options)
        return self._client

    def _repo(self):
        return self._github().get_repo(self.full_name)  # lazy: no request until used

    # -- reads ----------------------------------------------------------------------------
    def resolve_ref(self, ref: str) -> str:
        ref = ref.strip()
        with self._errors(f"resolve ref {ref!r}"):
            repo = self._repo()
            if _FULL_SHA.fullmatch(ref.lower()):
                return repo.get_git_commit(ref.lower()).sha
            names = [ref[5:]] if ref.startswith("refs/") else [f"heads/{ref}", f"tags/{ref}"]
            for name in names if ref else []:
                try:
                    target = repo.get_git_ref(name).object
                except GithubException as exc:
                    if exc.status == 404:
                        continue
                    raise
                kind, sha = target.type, target.sha
                while kind == "tag":  # annotated tag: peel to what it points at
                    tagged = repo.get_git_tag(sha).object
                    kind, sha = tagged.type, tagged.sha
                if kind != "commit":
                    raise RepositoryAccessError(f"ref {ref!r} points at a {kind}, not a commit")
                return sha
        raise RepositoryAccessError(
            f"ref {ref!r} not found in {self.full_name}: give a branch, a tag or a full 40-hex "
            "commit SHA, and check that the credential can see the repository"
        )

    def tree(self, commit_sha: str) -> list[TreeEntry]:
        _check_sha(commit_sha)
        with self._errors(f"list the files of commit {commit_sha}"):
            listing = self._repo().get_git_tree(commit_sha, recursive=True)  # usually the only call
            rows = self._walk(listing.sha, "", listing)
            entries = sorted(
                (
                    TreeEntry(path=path, size=el.size or 0, sha=el.sha)
                    for path, el in rows
                    if el.type == "blob" and el.mode in REGULAR_FILE_MODES
                ),
                key=lambda e: e.path,
            )
        self._indexes[commit_sha] = {e.path: e for e in entries}
        while len(self._indexes) > 4:  # a few commits' indexes; trees can be 100k entries
            self._indexes.popitem(last=False)
        return entries

    def _walk(self, tree_sha: str, prefix: str, listing=None) -> Iterator[tuple[str, Any]]:
        """Every entry under a tree. GitHub cuts recursive listings beyond 100,000 entries or
        7 MB and says ``truncated``; then list one level and recurse into each subtree."""
        repo = self._repo()
        listing = listing or repo.get_git_tree(tree_sha, recursive=True)
        if not listing.truncated:
            yield from ((prefix + el.path, el) for el in listing.tree)
            return
        level = repo.get_git_tree(tree_sha)
        if level.truncated:
            raise RepositoryAccessError(
                f"directory {prefix or '/'} of {self.full_name} has too many entries for the "
                "GitHub API to list; use the local host on a clone instead"
            )
        for el in level.tree:
            yield prefix + el.path, el
            if el.type == "tree":
                yield from self._walk(el.sha, f"{prefix}{el.path}/")

    def read_file(self, commit_sha: str, path: str) -> bytes:
        _check_sha(commit_sha)
        path = path.strip("/")
        with self._errors(f"read {path!r} at {commit_sha}"):
            index = self._indexes.get(commit_sha)
            if index is not None:
                entry = index.get(path)
                mode, blob_sha = (REGULAR_FILE_MODES[0], entry.sha) if entry else ("", "")
            else:
                mode, blob_sha = self._lookup(commit_sha, path)
            if mode not in REGULAR_FILE_MODES:
                raise RepositoryAccessError(
                    f"{path!r} is not a regular file at {commit_sha} in {self.full_name}; "
                    "list the tree to see which paths exist"
                )
            blob = self._repo().get_git_blob(blob_sha)  # by blob SHA: immutable, unlike /contents
            return base64.b64decode(blob.content)  # GitHub always answers blobs in base64

    def _lookup(self, commit_sha: str, path: str) -> tuple[str, str]:
        """(mode, sha) of ``path``, one small tree listing per directory level."""
        mode, sha = "040000", commit_sha  # the trees endpoint accepts a commit SHA for its root
        for part in path.split("/"):
            if mode != "040000":
                return "", ""
            found = [el for el in self._repo().get_git_tree(sha).tree if el.path == part]
            if not found:
                return "", ""
            mode, sha = found[0].mode, found[0].sha
        return mode, sha

    # -- the pull request -------------------------------------------------------------------
    def open_pull_request(
        self,
        *,
        base_branch: str,
        expected_base_sha: str,
        head_branch: str,
        files: dict[str, str],
        title: str,
        body: str,
    ) -> PullRequestResult:
        check_files(files)
        stale = (base_branch, expected_base_sha)
        with self._errors(f"open a pull request from {head_branch} into {base_branch}", stale):
            observed = self._branch_sha(base_branch)
            if observed is None:
                raise RepositoryAccessError(
                    f"base branch {base_branch!r} does not exist in {self.full_name}; "
                    "start a new run against an existing branch"
                )
            head_sha = self._branch_sha(head_branch)
            adopted = head_sha is not None  # an earlier attempt got this far: adopt it
            if head_sha is None:
                if observed != expected_base_sha:
                    raise StaleBaseBranch(base_branch, observed, expected_base_sha)
                head_sha, adopted = self._commit(head_branch, expected_base_sha, files, title)
            pr = self._find_pull(head_branch, base_branch) if adopted else None
            if pr is None:
                if adopted:
                    self._check_ours(head_branch, head_sha, expected_base_sha, files)
                pr, pr_adopted = self._create_pull(base_branch, head_branch, title, body)
                adopted = adopted or pr_adopted
            head = (pr.number, pr.html_url, head_branch, head_sha)
            return PullRequestResult(*head, base_branch, expected_base_sha, adopted)

    def _commit(self, head_branch, parent_sha, files, title) -> tuple[str, bool]:
        """Tree on top of the parent's tree, commit, ref: (head SHA, whether adopted)."""
        repo = self._repo()
        parent = repo.get_git_commit(parent_sha)
        elements = [
            InputGitTreeElement(path, "100644", "blob", content=text)  # regular files only
            for path, text in sorted(files.items())
        ]
        tree = repo.create_git_tree(elements, base_tree=parent.tree)
        message = f"{title}\n\n{_DIGEST_TRAILER}: {_files_digest(files)}\n"
        commit = repo.create_git_commit(message, tree, [parent])
        try:
            repo.create_git_ref(f"refs/heads/{head_branch}", commit.sha)
            return commit.sha, False
        except GithubException as exc:  # a concurrent attempt may have created it first
            existing = None
            if exc.status == 409 or "reference already exists" in _text(exc):
                existing = self._branch_sha(head_branch)
            if existing is None:
                raise
            return existing, True

    def _create_pull(self, base, head, title, body):
        """(pull request, whether adopted): GitHub's "already exists" answer is adopted."""
        try:
            return self._repo().create_pull(base=base, head=head, title=title, body=body), False
        except GithubException as exc:
            found = None
            if exc.status == 422 and "a pull request already exists" in _text(exc):
                found = self._find_pull(head, base)
            if found is None:
                raise
            return found, True

    def discard_pull_request(self, *, head_branch: str, base_branch: str) -> bool:
        with self._errors(f"take back the pull request from {head_branch}"):
            pr = self._find_pull(head_branch, base_branch)
            if pr is not None and pr.state == "open":
                pr.edit(state="closed")
            try:
                self._repo().get_git_ref(f"heads/{head_branch}").delete()
            except GithubException as exc:  # 422 "Reference does not exist": already gone
                if exc.status not in (404, 422):
                    raise
                return pr is not None
            return True

    def _branch_sha(self, branch: str) -> str | None:
        try:
            return self._repo().get_git_ref(f"heads/{branch}").object.sha
        except GithubException as exc:
            if exc.status == 404:
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

    # -- errors ----------------------------------------------------------------------------
    @contextmanager
    def _errors(self, action: str, stale: tuple[str, str] | None = None, installation=False):
        """Turn PyGithub/requests failures into the typed errors Temporal understands."""
        try:
            yield
        except AmtpError:
            raise
        except GithubException as exc:
            raise self._translate(exc, action, stale, installation) from exc
        except requests.RequestException as exc:
            raise GitHubUnavailable(
                f"could not {action}: GitHub at {self.api_url} did not answer ({exc}); "
                "Temporal retries; if it persists check GITHUB_API_URL and the network"
            ) from exc

    def _translate(self, exc: GithubException, action: str, stale, installation) -> AmtpError:
        status, text = exc.status, _text(exc)
        headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
        said = f"GitHub answered {status}: {_message(exc)}"
        where = f"could not {action} in {self.full_name}"
        limited = headers.get("x-ratelimit-remaining") == "0" or "rate limit" in text
        if status in (403, 429) and (limited or "abuse detection" in text):
            wait = _retry_after(headers)
            hint = f"Temporal retries after {wait}s; if it recurs, lower the repository's run rate"
            return GitHubRateLimited(f"{where}: {said}; {hint}", retry_after=wait, status=status)
        if status in (403, 422) and any(marker in text for marker in _PROTECTION):
            return BranchProtectionViolation(json.dumps(exc.data, sort_keys=True))
        if stale and status == 422 and any(marker in text for marker in _STALE):
            try:
                observed = self._branch_sha(stale[0]) or "deleted"
            except (GithubException, requests.RequestException):
                observed = "unknown"
            return StaleBaseBranch(stale[0], observed, stale[1])
        kind, hint = RepositoryAccessError, _REFUSED
        if status in (401, 403):
            who = f"GitHub App {self._app_id}" if self._app_id else "the token"
            hint = _UNAUTHORIZED if status == 401 else _FORBIDDEN
            kind, hint = GitHubForbidden, hint.format(who=who, repo=self.full_name)
        elif status == 404:
            hint = _NOT_INSTALLED.format(app=self._app_id) if installation else _NOT_FOUND
        elif status >= 500:
            kind, hint = GitHubUnavailable, "Temporal retries; see githubstatus.com if it persists"
        return kind(f"{where}: {said}; {hint}", status=status, body=exc.data)


def _check_sha(commit_sha: str) -> None:
    """Reads are cached per commit, so they take a SHA: a branch name would go stale."""
    if not _FULL_SHA.fullmatch(commit_sha):
        raise RepositoryAccessError(f"{commit_sha!r} is not a 40-hex commit SHA; resolve_ref first")


def _files_digest(files: dict[str, str]) -> str:
    """sha256 of the files, recorded in the commit so a replay can recognise its own branch."""
    return hashlib.sha256(canonical_json(files)).hexdigest()


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {"message": str(exc.data)}
    details = [
        e.get("message") or json.dumps(e) for e in data.get("errors") or [] if isinstance(e, dict)
    ]
    return " ".join(str(x) for x in [data.get("message"), *details] if x)


def _text(exc: GithubException) -> str:
    return _message(exc).lower()


def _retry_after(headers: dict[str, str]) -> int:
    """Seconds to wait, by GitHub's rules: retry-after, else the reset time, else a minute."""
    if headers.get("retry-after", "").isdigit():
        return max(int(headers["retry-after"]), 1)
    reset = headers.get("x-ratelimit-reset", "")
    if headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
        return max(int(reset) - int(time.time()), 1)
    return 60
