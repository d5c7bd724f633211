"""A git repository on disk as a RepositoryHost, read and written in-process with libgit2
(pygit2): no git process per call.

Used offline, by the demo and by tests. Reads come from git objects addressed by commit SHA,
never from the working tree, so they are as immutable as GitHub's. The "pull request" is a real
branch and commit in the repository plus a record in ``<git-dir>/amtp/pulls.json``; nothing here
touches the working tree, the index or the checked-out branch, so the repository may be bare,
or in active use by a developer.

Pull request URLs are ``file://<absolute repository path>#<head branch>`` (branch URL-quoted).

Safety: repository content and paths are untrusted. Symlinks and submodules are never listed
or read, written files are regular files (100644) at validated paths that neither replace a
directory nor go under a file, and the head branch is created only if it does not exist, so an
existing branch is never overwritten. libgit2 runs no hooks, filters or fsmonitor, does not
follow replace refs, and ignores ``GIT_DIR`` and the like in the environment, so neither a
repository's config nor an inherited variable can run a program or redirect a read.
"""

from __future__ import annotations

import os
import re
import threading
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from urllib.parse import quote

import pygit2
from pygit2.enums import FileMode, RepositoryOpenFlag

from repositories.errors import RepositoryAccessError, StaleBaseBranch
from repositories.hosts.base import (
    NewPullRequest,
    PullRequestResult,
    RepositoryHost,
    TreeEntry,
    check_files,
)
from repositories.hosts.local_pulls import PullRecords, missing_labels, pull_result
from repositories.hosts.local_updates import PullRequestUpdates
from repositories.paths import read_path_problem
from repositories.refnames import ref_problem
from schemas.errors import ContractViolation

AUTHOR_NAME = "AMTP"
AUTHOR_EMAIL = "amtp@localhost"
# As plain ints: the tree walk compares every entry's mode (an enum member compares slower).
REGULAR_FILE_MODES = (int(FileMode.BLOB), int(FileMode.BLOB_EXECUTABLE))
_TREE = int(FileMode.TREE)
_OBJECT_ID = re.compile(r"^[0-9a-f]{40}$")
# What libgit2 raises for a name or object it cannot find or parse, and for its own failures.
_GIT_ERRORS = (pygit2.GitError, KeyError, ValueError, OSError)


class LocalGitHost(PullRequestUpdates, RepositoryHost):
    """``full_name`` ("owner/name") backed by the git repository at ``path``.

    ``path`` must be the top of a working tree or a bare repository; a folder inside some
    other repository is refused rather than silently resolved to its parent.
    """

    name = "local"

    def __init__(self, full_name: str, path: str | os.PathLike[str]) -> None:
        super().__init__(full_name)
        self.path = Path(path).resolve()
        # Per commit SHA, whose objects never change: path -> blob id of the regular files
        # tree() listed.
        self._files: dict[str, dict[str, str]] = {}
        # One libgit2 repository object per host, used by one thread at a time.
        self._lock = threading.RLock()

    # --- the repository ---------------------------------------------------------------

    @cached_property
    def _repo(self) -> pygit2.Repository:
        """The repository at ``path`` exactly: no search upwards, so a plain folder is not
        taken for the repository that happens to contain it."""
        if not self.path.is_dir():
            raise RepositoryAccessError(f"{self.full_name}: no directory at {self.path}")
        try:
            return pygit2.Repository(str(self.path), RepositoryOpenFlag.NO_SEARCH)
        except pygit2.GitError as exc:
            raise RepositoryAccessError(
                f"{self.full_name}: {self.path} is not a git repository ({exc})"
            ) from None

    @cached_property
    def _common_dir(self) -> Path:
        """The git dir that holds refs and our pull records: a linked worktree's git dir
        names it in its ``commondir`` file (gitrepository-layout(5))."""
        git_dir = Path(self._repo.path)
        commondir = git_dir / "commondir"
        if commondir.is_file():
            return (git_dir / commondir.read_text().strip()).resolve()
        return git_dir

    def _object(self, oid: str, kind: str = "blob") -> pygit2.Object | None:
        """The object ``oid`` if it is one of ``kind``, else None."""
        try:
            found = self._repo.get(oid)
        except _GIT_ERRORS:
            return None
        return found if found is not None and found.type_str == kind else None

    def _branch_heads(self, *branches: str) -> dict[str, str]:
        """branch -> the commit it points at, for those of ``branches`` that exist."""
        heads = {}
        for branch in branches:
            ref = self._repo.references.get(f"refs/heads/{branch}")
            if ref is not None:
                heads[branch] = str(ref.resolve().target)
        return heads

    def _commit(self, commit_sha: str) -> pygit2.Commit:
        """The commit ``commit_sha``, checked to be a full SHA naming a commit (not a tag or
        tree naming one) in this repository."""
        if not isinstance(commit_sha, str) or not _OBJECT_ID.match(commit_sha):
            raise RepositoryAccessError(
                f"{self.full_name}: expected a full commit SHA, got {commit_sha!r} "
                "(resolve refs with resolve_ref first)"
            )
        commit = self._object(commit_sha, "commit")
        if commit is None:
            raise RepositoryAccessError(f"{self.full_name}: no commit {commit_sha}")
        return commit

    # --- reads --------------------------------------------------------------------------

    def resolve_ref(self, ref: str) -> str:
        if not isinstance(ref, str) or not ref.strip() or ref.startswith("-") or "\0" in ref:
            raise RepositoryAccessError(f"{self.full_name}: invalid ref {ref!r}")
        with self._lock:
            try:
                return str(self._repo.revparse_single(f"{ref}^{{commit}}").id)
            except _GIT_ERRORS:
                raise RepositoryAccessError(
                    f"{self.full_name}: ref {ref!r} does not name a commit (no such branch, "
                    "tag or SHA, or the short SHA is ambiguous)"
                ) from None

    def tree(self, commit_sha: str) -> list[TreeEntry]:
        with self._lock:
            repo = self._repo
            size_of = repo.odb.read_header
            entries = []
            pending = [(b"", self._commit(commit_sha).tree)]  # no recursion: trees nest deep
            while pending:
                prefix, tree = pending.pop()
                for entry in tree:
                    mode = entry.filemode
                    if mode == _TREE:
                        pending.append((prefix + entry.raw_name + b"/", repo[entry.id]))
                    # Symlinks and submodules are left out so nothing downstream can follow
                    # them out of the repository.
                    elif mode in REGULAR_FILE_MODES:
                        try:
                            path = (prefix + entry.raw_name).decode("utf-8")
                        except UnicodeDecodeError:
                            continue  # not representable in the JSON contracts
                        oid = entry.id
                        entries.append(TreeEntry(path, size_of(oid)[1], str(oid)))
            self._files[commit_sha] = {e.path: e.sha for e in entries}
        return sorted(entries, key=lambda e: e.path)

    def read_file(self, commit_sha: str, path: str) -> bytes:
        with self._lock:
            commit = self._commit(commit_sha)
            problem = read_path_problem(path)
            if problem:
                raise RepositoryAccessError(f"{self.full_name}: cannot read {path!r}: {problem}")
            missing = RepositoryAccessError(
                f"{self.full_name}: no regular file {path!r} in commit {commit_sha}"
            )
            listed = self._files.get(commit_sha)
            if listed is not None:  # tree() listed the commit: its regular files, nothing else
                blob = self._object(listed[path]) if path in listed else None
            else:
                # Component by component: a symlinked directory is a blob, not a tree, so the
                # lookup fails instead of following it.
                try:
                    entry = commit.tree[path]
                except _GIT_ERRORS:
                    raise missing from None
                blob = self._object(str(entry.id)) if entry.filemode in REGULAR_FILE_MODES else None
            if blob is None:
                raise missing
            return blob.data

    # --- pull requests ------------------------------------------------------------------

    def _open_pull_request(self, new: NewPullRequest) -> PullRequestResult:
        base_branch, head_branch, files = new.base_branch, new.head_branch, new.files
        expected_base_sha, title, body = new.expected_base_sha, new.title, new.body
        self._check_branch(base_branch, "base branch")
        self._check_branch(head_branch, "head branch")
        if head_branch == base_branch:
            raise ContractViolation(f"head branch {head_branch!r} is the base branch")
        if not isinstance(expected_base_sha, str) or not _OBJECT_ID.match(expected_base_sha):
            raise ContractViolation(f"expected_base_sha {expected_base_sha!r} is not a full SHA")
        check_files(files)
        blobs = {path: content.encode("utf-8") for path, content in files.items()}

        pull = {
            "head_branch": head_branch,
            "base_branch": base_branch,
            "base_sha": expected_base_sha,
            "title": title,
            "body": body,
            "draft": bool(new.draft),
            "labels": list(new.labels),
        }
        with self._pulls.lock(), self._lock:
            heads = self._branch_heads(head_branch, base_branch)
            existing_head, observed = heads.get(head_branch), heads.get(base_branch)
            if existing_head is not None:  # an earlier attempt got this far: adopt it
                return self._recorded(pull, existing_head, adopted=True)
            if observed is None:
                raise RepositoryAccessError(
                    f"{self.full_name}: base branch {base_branch!r} does not exist"
                )
            if observed != expected_base_sha:
                raise StaleBaseBranch(
                    base_branch, observed_head=observed, expected_parent=expected_base_sha
                )
            head_sha = self._commit_files(expected_base_sha, blobs, f"{title}\n\n{body}\n")
            ref = f"refs/heads/{head_branch}"
            try:
                # Create-only: if the branch appeared meanwhile (the local analogue of GitHub's
                # 422 "Reference already exists"), adopt it.
                self._create_ref(ref, head_sha)
            except pygit2.AlreadyExistsError:
                winner = self._branch_heads(head_branch)[head_branch]
                return self._recorded(pull, winner, adopted=True)
            return self._recorded(pull, head_sha, adopted=False)

    def discard_pull_request(self, *, head_branch: str, base_branch: str) -> bool:
        self._check_branch(head_branch, "head branch")
        with self._pulls.lock(), self._lock:
            ref = self._repo.references.get(f"refs/heads/{head_branch}")
            if ref is not None:  # deleted only if it still points where we saw it
                self._clear_stale_lock(ref.name)
                try:
                    ref.delete()
                except _GIT_ERRORS as exc:
                    raise RepositoryAccessError(
                        f"{self.full_name}: could not delete {ref.name}: {exc}"
                    ) from None
            data = self._pulls.load()
            records = [
                p
                for p in data["pulls"]
                if p["head_branch"] == head_branch and p.get("state") != "closed"
            ]
            for record in records:
                record["state"] = "closed"
            if records:
                self._pulls.save(data)
        return ref is not None or bool(records)

    def open_pull_request_numbers(self) -> set[int]:
        return {p["number"] for p in self._pulls.load()["pulls"] if p.get("state") != "closed"}

    def pull_requests(self) -> list[dict]:
        """Every recorded pull request of this repository, by number."""
        return sorted(self._pulls.load()["pulls"], key=lambda p: p["number"])

    def _check_branch(self, branch: str, what: str) -> None:
        """``git check-ref-format --branch``'s rules, in Python (a test holds them to git's
        answers), and only literal names: "@{-1}" is refused."""
        if not isinstance(branch, str) or ref_problem(branch) or branch == "HEAD":
            raise ContractViolation(f"{what} {branch!r} is not a valid branch name")

    def _clear_stale_lock(self, ref: str) -> None:
        """Called under the pulls lock, where no other AMTP process writes refs: a
        ``<ref>.lock`` there was left by a process killed in the middle of a ref update and
        would refuse every retry, so it goes first (refs live in the common git dir)."""
        (self._common_dir / f"{ref}.lock").unlink(missing_ok=True)

    def _create_ref(self, ref: str, sha: str) -> None:
        """``ref`` -> ``sha`` if ``ref`` does not exist (else ``pygit2.AlreadyExistsError``)."""
        self._clear_stale_lock(ref)
        try:
            self._repo.create_reference_direct(
                ref, pygit2.Oid(hex=sha), False, message="amtp: open pull request"
            )
        except pygit2.AlreadyExistsError:
            raise
        except _GIT_ERRORS as exc:  # e.g. refs/heads/a when refs/heads/a/b exists
            raise RepositoryAccessError(
                f"{self.full_name}: update-ref {ref} failed: {exc}"
            ) from None

    def _commit_files(self, parent: str, blobs: dict[str, bytes], message: str) -> str:
        """A commit whose tree is ``parent``'s tree plus ``blobs`` (mode 100644), parent first.
        The tree is built in an in-memory index: the repository's own index (and so ``git
        status`` of whoever works in it) is untouched."""
        repo = self._repo
        parent_commit = self._commit(parent)
        base = parent_commit.tree
        problems = _directory_file_conflicts(base, list(blobs))
        if problems:
            raise ContractViolation(
                f"the files cannot be added on top of {parent}: {'; '.join(problems)}", problems
            )
        index = pygit2.Index()
        index.read_tree(base)
        for path, data in blobs.items():
            index.add(pygit2.IndexEntry(path, repo.create_blob(data), FileMode.BLOB))
        tree = index.write_tree(repo)
        author = pygit2.Signature(AUTHOR_NAME, AUTHOR_EMAIL)
        return str(repo.create_commit(None, author, author, message, tree, [parent_commit.id]))

    # --- pull request records -----------------------------------------------------------

    @cached_property
    def _pulls(self) -> PullRecords:
        return PullRecords(self._common_dir / "amtp")

    def _recorded(self, pull: dict, head_sha: str, *, adopted: bool) -> PullRequestResult:
        """The result for ``pull``, recording it under the next number if it is new.

        Looked up by head branch, so replays get the same number; a branch left without a
        record (the process died between update-ref and here) gets one on adoption.
        """
        data = self._pulls.load()
        record = next((p for p in data["pulls"] if p["head_branch"] == pull["head_branch"]), None)
        if record is not None and (missing := missing_labels(record, pull["labels"])):
            record["labels"] = [*record.get("labels", []), *missing]  # as GitHub adds them
            self._pulls.save(data)
        if record is None:
            record = {
                **pull,
                "number": max((p["number"] for p in data["pulls"]), default=0) + 1,
                "url": f"{self.path.as_uri()}#{quote(pull['head_branch'], safe='/')}",
                "head_sha": head_sha,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            data["pulls"].append(record)
            self._pulls.save(data)
        return pull_result(record, head_sha, record["base_sha"], adopted=adopted)


def _directory_file_conflicts(base: pygit2.Tree, paths: list[str]) -> list[str]:
    """Why each of ``paths`` cannot be written as a file on top of ``base``: it is a directory
    there (or among ``paths``), or a folder on its way is a file. A plain index would replace
    either silently; git's ``update-index --add`` refuses them, and so does the host."""
    problems = []
    new_dirs = {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}
    for path in paths:
        if _entry(base, path) == _TREE or path in new_dirs:
            problems.append(f"{path!r} is a directory")
            continue
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            mode = _entry(base, folder)
            if mode is None:
                break
            if mode != _TREE:
                problems.append(f"{path!r} would go under {folder!r}, which is a file")
                break
    return problems


def _entry(tree: pygit2.Tree, path: str) -> int | None:
    """The mode of ``path`` in ``tree``, or None."""
    try:
        return tree[path].filemode
    except _GIT_ERRORS:
        return None
