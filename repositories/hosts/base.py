"""The repository-host interface that the MCP server and CreatePullRequest sit on."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from repositories.paths import AMTP_CI_WORKFLOW, GIT_DIRECTORY, path_problems
from schemas.errors import ContractViolation


@dataclass(frozen=True)
class TreeEntry:
    """One regular file (blob) of a commit's tree."""

    path: str
    size: int
    sha: str  # 40-hex blob SHA


@dataclass(frozen=True)
class PullRequestResult:
    number: int
    url: str
    head_branch: str
    head_sha: str  # the commit that carries the files
    base_branch: str
    base_sha: str  # the parent commit used for the tree
    adopted: bool  # True when an existing ref/PR was found and reused (idempotent replay)
    updated: bool = False  # True when an open PR of an earlier run got the files instead


@dataclass(frozen=True)
class NewPullRequest:
    """What ``open_pull_request`` was asked for, as the hosts' ``_open_pull_request`` get it."""

    base_branch: str
    expected_base_sha: str
    head_branch: str
    files: dict[str, str]
    title: str
    body: str
    draft: bool
    labels: Sequence[str]


class RepositoryHost(ABC):
    """One repository on one host. Reads are by commit SHA, so they are immutable."""

    name: str  # "github" or "local"

    def __init__(self, full_name: str) -> None:
        self.full_name = full_name

    @abstractmethod
    def resolve_ref(self, ref: str) -> str:
        """Branch, tag or SHA → the 40-hex commit SHA. Unknown ref: RepositoryAccessError."""

    @abstractmethod
    def tree(self, commit_sha: str) -> list[TreeEntry]:
        """Every blob of the commit's tree, recursively, sorted by path (unfiltered)."""

    def archive(self, commit_sha: str, limit: int) -> bytes | None:
        """The commit as one gzipped tar file, at most ``limit`` bytes (RepositoryAccessError
        beyond), where the host offers one; None where files are read one by one instead."""
        return None

    @abstractmethod
    def read_file(self, commit_sha: str, path: str) -> bytes:
        """The blob at ``path`` in the commit. Missing path: RepositoryAccessError."""

    def open_pull_request(
        self,
        *,
        base_branch: str,
        expected_base_sha: str,
        head_branch: str,
        files: dict[str, str],
        title: str,
        body: str,
        draft: bool = True,
        labels: Sequence[str] = (),
    ) -> PullRequestResult:
        """Commit ``files`` on top of ``expected_base_sha`` as ``head_branch`` and open a PR,
        a draft unless ``draft`` is False, carrying ``labels``.

        Raises StaleBaseBranch when ``base_branch`` no longer points at ``expected_base_sha``;
        adopts (``adopted=True``) an existing head branch / PR created by an earlier attempt,
        adding only the labels it lacks.
        """
        return self._open_pull_request(
            NewPullRequest(
                base_branch, expected_base_sha, head_branch, files, title, body, draft, labels
            )
        )

    @abstractmethod
    def _open_pull_request(self, pr: NewPullRequest) -> PullRequestResult:
        """The host's own open_pull_request."""

    def update_pull_request(
        self, *, head_branch: str, base_branch: str, files: dict[str, str], title: str, body: str
    ) -> PullRequestResult | None:
        """Commit ``files`` onto the head branch of the open pull request from ``head_branch``
        into ``base_branch`` and give it ``title`` and ``body`` (``updated=True``); None when
        there is no such open pull request (merged, closed, its branch gone), so the caller
        opens a new one. Files already there as given make no commit, so a retry adds none."""
        return None

    def report_check_run(self, **check) -> object:
        """Report a check run on the head commit (GitHub's Checks API); a host without
        one refuses."""
        raise self._no_check_runs()

    def show_check_run(self, **check) -> object:
        """Show a check run without a result yet (queued, in progress) on the head commit;
        a host without check runs refuses."""
        raise self._no_check_runs()

    def _no_check_runs(self) -> Exception:
        from repositories.errors import RepositoryAccessError

        return RepositoryAccessError(
            f"{self.full_name} is on the {self.name} host, which has no check runs"
        )

    @abstractmethod
    def discard_pull_request(self, *, head_branch: str, base_branch: str) -> bool:
        """Take back what ``open_pull_request`` wrote for a run that was cancelled: close the
        pull request from ``head_branch`` and delete the branch. Idempotent; False when there
        was nothing to take back."""

    @abstractmethod
    def open_pull_request_numbers(self) -> set[int]:
        """The numbers of the repository's open pull requests (retention keeps their runs)."""


def check_files(files: dict[str, str]) -> None:
    """A host's last guard before it writes: the Test Engineer's file policy has checked these
    files already, but a host is an interface anyone may call, so the path rules (the same
    ones) are checked again and nothing is written if one breaks. The one path under .github/
    allowed is the CI workflow AMTP writes itself (runs.pr_workflow)."""
    if not isinstance(files, dict) or not files:
        raise ContractViolation("a pull request needs at least one file")
    problems = [
        f"{path!r}: {rule}"
        for path in files
        for rule in path_problems(path)
        if not (path == AMTP_CI_WORKFLOW and rule == GIT_DIRECTORY)  # AMTP's own workflow
    ]
    if problems:
        raise ContractViolation(f"unsafe file path(s) for the pull request: {problems}", problems)
    if not all(isinstance(content, str) for content in files.values()):
        raise ContractViolation("file contents must be text")
