"""The GitHub repository host, on PyGithub (github.com, GitHub Enterprise, or a local fake).

Reads are by commit SHA (trees and blobs), so they are immutable and cacheable. Writes
(``github_pulls``) use the Git Trees API: one tree on top of the base tree, one commit, one
ref, one pull request; an earlier attempt's branch or PR is adopted, never duplicated.
PyGithub's own retries are off because Temporal owns retries: every GitHub failure becomes one
typed error from ``amtp_site.errors`` that says whether to retry and what an operator should do
(``github_errors`` reads GitHub's answers, ``github_limits`` sizes the waits). The one exception
is GitHub's own transient 422s on valid writes, retried in-process a few times first because
each is only one request of a longer sequence.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests
from github import Auth, Github, GithubException, GithubIntegration

from amtp_site.errors import AmtpError, ConfigurationError
from amtp_site.github_url import check_github_api_url
from repositories.errors import (
    BranchProtectionViolation,
    GitHubForbidden,
    GitHubRateLimited,
    GitHubUnavailable,
    RepositoryAccessError,
)
from repositories.hosts import github_errors as answers
from repositories.hosts import github_limits as limits
from repositories.hosts.base import RepositoryHost, TreeEntry
from repositories.hosts.github_checks import CheckRunWrites
from repositories.hosts.github_pulls import PullRequestWrites

DEFAULT_API_URL = "https://api.github.com"
REGULAR_FILE_MODES = ("100644", "100755")  # symlinks (120000) and submodules (160000) are skipped
ARCHIVE_TIMEOUT_S = 120.0  # per read of a tarball download (requests' timeout)
RETRY_WAITS = (1.0, 2.0, 4.0)  # in-process waits before a transient 422 goes to Temporal
_FULL_SHA = re.compile(r"[0-9a-f]{40}")
# What an operator should do, per failure.
_FORBIDDEN = "give {who} contents: write and pull_requests: write on {repo}"
_UNAUTHORIZED = "{who} was refused: check GITHUB_TOKEN, or GITHUB_APP_ID and its private key"
_NOT_INSTALLED = "the GitHub App {app} is not installed on it: install it, or check the app id"
_NOT_FOUND = "check the repository name, the ref, and that the credential can see the repository"
_REFUSED = "GitHub refused the request as made: fix the input (branches, files), start a new run"
NOT_THE_API = (
    "GITHUB_API_URL={url} answered {status} with something that is not the GitHub REST API (a "
    "web page): GitHub Enterprise Server serves its API under /api/v3, so set "
    "GITHUB_API_URL=https://HOSTNAME/api/v3"
)
RATE_LIMITED = (
    "{where}: {said}; Temporal retries after {wait}s{repeat}; if it recurs, lower the "
    "repository's run rate"
)
REPEATED = " (secondary limit {strikes} times in a row: each wait doubles, as GitHub asks)"


class GitHubHost(PullRequestWrites, CheckRunWrites, RepositoryHost):
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
        retry_waits: tuple[float, ...] = RETRY_WAITS,
        strikes: limits.Strikes | None = None,
    ) -> None:
        """``seconds_between_writes``: GitHub asks integrations to space content-creating
        requests about a second apart to stay clear of secondary rate limits.
        ``retry_waits``: the pauses before retrying GitHub's transient 422s in-process.
        ``strikes``: where repeated secondary rate limits are counted (Valkey in the app)."""
        super().__init__(full_name)
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", full_name):
            raise RepositoryAccessError(f"{full_name!r} is not an owner/name repository name")
        if bool(app_id) != bool(private_key) or not (token or app_id):
            raise GitHubForbidden(
                "configure a GitHub credential: a GitHub App (GITHUB_APP_ID and "
                "GITHUB_APP_PRIVATE_KEY, both) or a token (GITHUB_TOKEN)"
            )
        self.api_url = check_github_api_url(api_url)
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
        self._retry_waits, self._strikes = retry_waits, strikes or limits.PROCESS_STRIKES
        identity = (
            f"app:{app_id}" if app_id else f"token:{hashlib.sha256(token.encode()).hexdigest()}"
        )
        self._credential = limits.credential_key(self.api_url, identity)
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
                    if exc.status == 404 and not answers.is_not_the_api(exc):
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

    def archive(self, commit_sha: str, limit: int) -> bytes:
        """The commit's tarball: the API answers 302 to a short-lived codeload URL that
        carries its own token, fetched without the credential (docs.github.com/en/rest/repos/
        contents#download-a-repository-archive-tar)."""
        _check_sha(commit_sha)
        with self._errors(f"download the archive of commit {commit_sha}"):
            link = self._repo().get_archive_link("tarball", commit_sha)
        what = f"{self.full_name}'s archive of {commit_sha}"
        try:
            with requests.get(link, timeout=ARCHIVE_TIMEOUT_S, stream=True) as answer:
                if answer.status_code != 200:
                    raise RepositoryAccessError(f"{what}: answered {answer.status_code}")
                data = bytearray()
                for chunk in answer.iter_content(1 << 16):
                    data += chunk
                    if len(data) > limit:
                        raise RepositoryAccessError(f"{what} is larger than {limit} bytes")
        except requests.RequestException as exc:
            raise RepositoryAccessError(f"{what}: {type(exc).__name__}") from None
        return bytes(data)

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

    # -- errors ----------------------------------------------------------------------------
    @contextmanager
    def _errors(self, action: str, installation=False):
        """Turn PyGithub/requests failures into the typed errors Temporal understands."""
        try:
            yield
        except AmtpError:
            raise
        except GithubException as exc:
            raise self._translate(exc, action, installation) from exc
        except requests.RequestException as exc:
            raise GitHubUnavailable(
                f"could not {action}: GitHub at {self.api_url} did not answer ({exc}); "
                "Temporal retries; if it persists check GITHUB_API_URL and the network"
            ) from exc

    def _translate(self, exc: GithubException, action: str, installation) -> AmtpError:
        status = exc.status
        said = f"GitHub answered {status}: {answers.message(exc)}"
        where = f"could not {action} in {self.full_name}"
        if answers.is_rate_limited(exc):
            return self._rate_limited(exc, where, said)
        if answers.is_rule_refusal(exc):
            return BranchProtectionViolation(answers.refusal_body(exc))
        if answers.is_not_the_api(exc):
            return ConfigurationError(NOT_THE_API.format(url=self.api_url, status=status))
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

    def _rate_limited(self, exc: GithubException, where: str, said: str) -> GitHubRateLimited:
        """Wait as GitHub asks; repeated secondary limits on this credential wait longer."""
        headers, secondary = answers.headers_of(exc), answers.is_secondary(exc)

        def wait_for(strikes: int) -> int:
            return limits.rate_limit_wait(headers, secondary=secondary, strikes=strikes)

        strikes = (
            self._strikes.strike(self._credential, lambda n: wait_for(n) + limits.QUIET)
            if secondary
            else 0
        )
        wait = wait_for(strikes)
        repeat = REPEATED.format(strikes=strikes) if strikes > 1 else ""
        return GitHubRateLimited(
            RATE_LIMITED.format(where=where, said=said, wait=wait, repeat=repeat),
            retry_after=wait,
            status=exc.status,
            secondary=secondary,
            strikes=strikes,
        )


def _check_sha(commit_sha: str) -> None:
    """Reads are cached per commit, so they take a SHA: a branch name would go stale."""
    if not _FULL_SHA.fullmatch(commit_sha):
        raise RepositoryAccessError(f"{commit_sha!r} is not a 40-hex commit SHA; resolve_ref first")
