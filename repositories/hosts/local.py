"""A git repository on disk as a RepositoryHost, driven through git plumbing commands.

Used offline, by the demo and by tests. Reads come from git objects addressed by commit SHA,
never from the working tree, so they are as immutable as GitHub's. The "pull request" is a real
branch and commit in the repository plus a record in ``<git-dir>/amtp/pulls.json``; nothing here
touches the working tree, the index or the checked-out branch, so the repository may be bare,
or in active use by a developer.

Pull request URLs are ``file://<absolute repository path>#<head branch>`` (branch URL-quoted).

Safety: repository content and paths are untrusted. Symlinks and submodules are never listed
or read, written files are regular files (100644) at validated paths, the head branch is
created with a zero old-value so an existing branch is never overwritten, and hooks and
fsmonitor are switched off so a repository's config cannot run programs in the worker.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from urllib.parse import quote

from amtp_site.errors import ContractViolation, RepositoryAccessError, StaleBaseBranch
from repositories.hosts.base import PullRequestResult, RepositoryHost, TreeEntry, check_files
from repositories.paths import read_path_problem
from repositories.refnames import ref_problem

AUTHOR_NAME = "AMTP"
AUTHOR_EMAIL = "amtp@localhost"
REGULAR_FILE_MODES = frozenset({"100644", "100755"})
WRITE_MODE = "100644"
GIT_TIMEOUT_SECONDS = 120

_Ran = tuple[bool, bytes, str]  # (succeeded, stdout, stderr) of one git command
# Repository path -> (git dir, common git dir), as LocalGitHost._dirs found them.
_GIT_DIRS: dict[Path, tuple[Path, Path]] = {}
_OBJECT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# Repository config could otherwise run programs (hooks fire on update-ref via the
# reference-transaction hook; fsmonitor is a configured command).
_SAFE_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
# Inherited variables that would point git at another repository, index or object store.
_REDIRECTING_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
    "GIT_REPLACE_REF_BASE",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
)


def _git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTING_ENV}
    env.update(
        LC_ALL="C",
        GIT_TERMINAL_PROMPT="0",
        # Replace refs would make a SHA read return some other object's content.
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_AUTHOR_NAME=AUTHOR_NAME,
        GIT_AUTHOR_EMAIL=AUTHOR_EMAIL,
        GIT_COMMITTER_NAME=AUTHOR_NAME,
        GIT_COMMITTER_EMAIL=AUTHOR_EMAIL,
    )
    env.update(extra or {})
    return env


class _ObjectReader:
    """One ``git cat-file --batch`` answering every object read of a host, by object id.

    A git process per read costs a fork and exec (2-3 ms here); a crawl reads tens of files.
    The process ends when its stdin closes: :meth:`close`, or this process exiting. Reads are
    serialised and bounded by ``timeout``; a failure closes the process and raises
    RepositoryAccessError (the next read starts a new one).
    """

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> None:
        self._cmd, self._cwd, self._env, self._timeout = cmd, cwd, env, timeout
        self._proc: subprocess.Popen | None = None
        self._pending = b""
        self._lock = threading.Lock()

    def read(self, oid: str, kind: str = "blob") -> bytes | None:
        """The object's bytes; None when ``oid`` names no object of ``kind``. A process found
        dead (killed, or ended with the repository gone) is replaced once."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    return self._read(oid, kind.encode("ascii"))
                except (OSError, ValueError, TimeoutError) as exc:
                    self._close()
                    if attempt == 2 or isinstance(exc, TimeoutError):
                        raise RepositoryAccessError(f"git cat-file --batch failed: {exc}") from None
        raise AssertionError("unreachable")

    def _read(self, oid: str, kind: bytes) -> bytes | None:
        if self._proc is None:
            self._proc = subprocess.Popen(
                self._cmd,
                cwd=self._cwd,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        self._proc.stdin.write(oid.encode("ascii") + b"\n")
        self._proc.stdin.flush()
        deadline = time.monotonic() + self._timeout
        header = self._take_line(deadline).split()
        if len(header) != 3 or header[1] != kind:  # "<oid> missing", or another kind
            if len(header) == 3:
                self._take(int(header[2]) + 1, deadline)
            return None
        return self._take(int(header[2]) + 1, deadline)[:-1]  # the content, then "\n"

    def _fill(self, deadline: float) -> None:
        fd = self._proc.stdout.fileno()
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise TimeoutError(f"no answer within {self._timeout:g}s")
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise OSError("the process ended")
        self._pending += chunk

    def _take_line(self, deadline: float) -> bytes:
        while b"\n" not in self._pending:
            self._fill(deadline)
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def _take(self, size: int, deadline: float) -> bytes:
        while len(self._pending) < size:
            self._fill(deadline)
        data, self._pending = self._pending[:size], self._pending[size:]
        return data

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        proc, self._proc, self._pending = self._proc, None, b""
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):  # a dead process's unflushed request
                    pipe.close()
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class LocalGitHost(RepositoryHost):
    """``full_name`` ("owner/name") backed by the git repository at ``path``.

    ``path`` must be the top of a working tree or a bare repository; a folder inside some
    other repository is refused rather than silently resolved to its parent.
    """

    name = "local"

    def __init__(self, full_name: str, path: str | os.PathLike[str]) -> None:
        super().__init__(full_name)
        self.path = Path(path).resolve()
        # Both memos are per commit SHA, whose objects never change: commits verified by
        # _commit, and path -> blob id of the regular files tree() listed.
        self._commits: set[str] = set()
        self._files: dict[str, dict[str, str]] = {}
        self._objects: _ObjectReader | None = None

    # --- plumbing ---------------------------------------------------------------------

    @cached_property
    def _dirs(self) -> tuple[Path, Path]:
        """(git dir, common git dir); the common one holds refs and our pull records. Found
        once per path in this process (a host is made per activity), while that git dir
        is still there."""
        if not self.path.is_dir():
            raise RepositoryAccessError(f"{self.full_name}: no directory at {self.path}")
        known = _GIT_DIRS.get(self.path)
        if known is not None and known[0].is_dir():
            return known
        # The ceiling stops discovery at ``path`` so a plain folder is not taken for the
        # repository that happens to contain it.
        env = _git_env({"GIT_CEILING_DIRECTORIES": str(self.path.parent)})
        cmd = ["git", "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"]
        proc = subprocess.run(
            cmd, cwd=self.path, env=env, capture_output=True, timeout=GIT_TIMEOUT_SECONDS
        )
        if proc.returncode != 0:
            detail = proc.stderr.decode(errors="replace").strip()
            raise RepositoryAccessError(
                f"{self.full_name}: {self.path} is not a git repository ({detail})"
            )
        git_dir, common_dir = proc.stdout.decode().splitlines()[:2]
        _GIT_DIRS[self.path] = (Path(git_dir), Path(common_dir))
        return _GIT_DIRS[self.path]

    def _run(self, *args: str, stdin: bytes | None = None, env: dict | None = None) -> _Ran:
        """(ok, stdout, stderr) of one git command run against this repository's git dir."""
        git_dir = self._dirs[0]
        # An explicit --git-dir and cwd inside it: no discovery, no working tree in play.
        cmd = ["git", *_SAFE_CONFIG, f"--git-dir={git_dir}", *args]
        try:
            proc = subprocess.run(
                cmd,
                cwd=git_dir,
                env=_git_env(env),
                input=stdin,
                capture_output=True,
                timeout=GIT_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired:
            return False, b"", f"timed out after {GIT_TIMEOUT_SECONDS}s"
        return proc.returncode == 0, proc.stdout, proc.stderr.decode(errors="replace").strip()

    def _git(self, *args: str, stdin: bytes | None = None, env: dict | None = None) -> bytes:
        """Stdout of a git command that must succeed, else RepositoryAccessError.

        That class itself, not a subclass: Temporal's non-retryable list is derived from the
        classes ``amtp_site.errors`` defines.
        """
        ok, out, stderr = self._run(*args, stdin=stdin, env=env)
        if not ok:
            message = f"{self.full_name}: git {args[0]} failed: {stderr}"
            raise RepositoryAccessError(message, stderr=stderr)
        return out

    def _object(self, oid: str, kind: str = "blob") -> bytes | None:
        """An object of ``kind`` by id through this host's ``cat-file --batch`` (started on
        first use, ended with the host or by :meth:`close`)."""
        if self._objects is None:
            git_dir = self._dirs[0]
            cmd = ["git", *_SAFE_CONFIG, f"--git-dir={git_dir}", "cat-file", "--batch"]
            self._objects = _ObjectReader(cmd, git_dir, _git_env(), GIT_TIMEOUT_SECONDS)
            weakref.finalize(self, self._objects.close)
        return self._objects.read(oid, kind)

    def close(self) -> None:
        """End the object reader's git process, if one was started (a later read starts one)."""
        if self._objects is not None:
            self._objects.close()

    def _update_ref(self, message: str, ref: str, *values: str, delete: bool = False) -> None:
        """``git update-ref`` under the pulls lock, where no other AMTP process writes refs: a
        ``<ref>.lock`` there was left by a process killed inside update-ref and would refuse
        every retry, so it goes first (refs live in the common git dir)."""
        (self._dirs[1] / f"{ref}.lock").unlink(missing_ok=True)
        self._git("update-ref", "-m", message, *(["-d"] if delete else []), ref, *values)

    def _rev_parse(self, rev: str) -> str | None:
        ok, out, _ = self._run("rev-parse", "--verify", "--quiet", rev)
        return out.decode().strip() if ok else None

    def _branch_heads(self, *branches: str) -> dict[str, str]:
        """branch -> the commit it points at, for those of ``branches`` that exist (one
        process; the names were checked, so no pattern characters or spaces are in them)."""
        refs = {f"refs/heads/{branch}": branch for branch in branches}
        out = self._git("for-each-ref", "--format=%(objectname) %(refname)", *refs)
        heads = {}
        for line in out.decode().splitlines():
            sha, _, ref = line.partition(" ")
            if ref in refs:  # a pattern also matches the refs below it (refs/heads/a/b)
                heads[refs[ref]] = sha
        return heads

    def _commit(self, commit_sha: str) -> str:
        """``commit_sha`` checked to be a full SHA naming a commit in this repository."""
        if not isinstance(commit_sha, str) or not _OBJECT_ID.match(commit_sha):
            raise RepositoryAccessError(
                f"{self.full_name}: expected a full commit SHA, got {commit_sha!r} "
                "(resolve refs with resolve_ref first)"
            )
        if commit_sha not in self._commits:
            # The object itself must be a commit (not a tag or tree naming one): asked of the
            # object reader, which the reads use next anyway, instead of a rev-parse process.
            if self._object(commit_sha, "commit") is None:
                raise RepositoryAccessError(f"{self.full_name}: no commit {commit_sha}")
            self._commits.add(commit_sha)
        return commit_sha

    # --- reads --------------------------------------------------------------------------

    def resolve_ref(self, ref: str) -> str:
        if not isinstance(ref, str) or not ref.strip() or ref.startswith("-") or "\0" in ref:
            raise RepositoryAccessError(f"{self.full_name}: invalid ref {ref!r}")
        sha = self._rev_parse(f"{ref}^{{commit}}")
        if sha is None:
            raise RepositoryAccessError(
                f"{self.full_name}: ref {ref!r} does not name a commit (no such branch, tag "
                "or SHA, or the short SHA is ambiguous)"
            )
        return sha

    def tree(self, commit_sha: str) -> list[TreeEntry]:
        commit = self._commit(commit_sha)
        out = self._git("ls-tree", "-r", "-l", "-z", commit)
        entries = []
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            mode, _kind, oid, size = meta.decode().split()
            # Symlinks (120000) and submodules (160000) are left out so nothing downstream
            # can follow them out of the repository.
            if mode not in REGULAR_FILE_MODES:
                continue
            try:
                path = raw_path.decode("utf-8")
            except UnicodeDecodeError:
                continue  # not representable in the JSON contracts; skipping beats mangling
            entries.append(TreeEntry(path=path, size=int(size), sha=oid))
        self._files[commit] = {e.path: e.sha for e in entries}
        return sorted(entries, key=lambda e: e.path)

    def read_file(self, commit_sha: str, path: str) -> bytes:
        commit = self._commit(commit_sha)
        problem = read_path_problem(path)
        if problem:
            raise RepositoryAccessError(f"{self.full_name}: cannot read {path!r}: {problem}")
        missing = RepositoryAccessError(
            f"{self.full_name}: no regular file {path!r} in commit {commit}"
        )
        if commit in self._files:  # tree() listed the commit: its regular files, nothing else
            data = self._object(self._files[commit][path]) if path in self._files[commit] else None
            if data is None:
                raise missing
            return data
        parent, _, name = path.rpartition("/")
        # ``<commit>:<dir>`` names the directory literally (no pathspec magic); a symlinked
        # directory is a blob there, so ls-tree fails instead of following it.
        ok, listing, _ = self._run("ls-tree", "-z", f"{commit}:{parent}")
        if not ok:
            raise missing
        for record in listing.split(b"\0"):
            meta, _, raw_name = record.partition(b"\t")
            if raw_name == name.encode("utf-8"):
                mode, _kind, oid = meta.decode().split()
                data = self._object(oid) if mode in REGULAR_FILE_MODES else None
                if data is None:
                    raise missing
                return data
        raise missing

    # --- pull requests ------------------------------------------------------------------

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
        }
        with self._pulls_lock():
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
            ref, zero = f"refs/heads/{head_branch}", "0" * len(head_sha)
            try:
                # The zero old-value makes this create-only: if the branch appeared meanwhile
                # (the local analogue of GitHub's 422 "Reference already exists"), adopt it.
                self._update_ref("amtp: open pull request", ref, head_sha, zero)
            except RepositoryAccessError:
                winner = self._rev_parse(ref)
                if winner is None:
                    raise
                return self._recorded(pull, winner, adopted=True)
            return self._recorded(pull, head_sha, adopted=False)

    def discard_pull_request(self, *, head_branch: str, base_branch: str) -> bool:
        self._check_branch(head_branch, "head branch")
        with self._pulls_lock():
            ref = f"refs/heads/{head_branch}"
            head = self._rev_parse(ref)
            if head is not None:  # deleted only if it still points where we saw it
                self._update_ref("amtp: discard pull request", ref, head, delete=True)
            data = self._load_pulls()
            records = [
                p
                for p in data["pulls"]
                if p["head_branch"] == head_branch and p.get("state") != "closed"
            ]
            for record in records:
                record["state"] = "closed"
            if records:
                self._save_pulls(data)
        return head is not None or bool(records)

    def pull_requests(self) -> list[dict]:
        """Every recorded pull request of this repository, by number."""
        return sorted(self._load_pulls()["pulls"], key=lambda p: p["number"])

    def _check_branch(self, branch: str, what: str) -> None:
        """``git check-ref-format --branch``'s rules, in Python (no process per name; a test
        holds them to git's answers), and only literal names: "@{-1}" is refused."""
        if not isinstance(branch, str) or ref_problem(branch) or branch == "HEAD":
            raise ContractViolation(f"{what} {branch!r} is not a valid branch name")

    def _commit_files(self, parent: str, blobs: dict[str, bytes], message: str) -> str:
        """A commit whose tree is ``parent``'s tree plus ``blobs`` (mode 100644), parent first.

        A throwaway index file keeps the repository's own index (and so ``git status`` of
        whoever works in it) untouched.
        """
        with tempfile.TemporaryDirectory(prefix="amtp-index-") as tmp:
            index_env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
            self._git("read-tree", f"{parent}^{{tree}}", env=index_env)
            # One process for all the blobs, from files named by us (never the paths given).
            names = []
            for number, data in enumerate(blobs.values()):
                names.append(os.path.join(tmp, f"blob-{number}"))
                Path(names[-1]).write_bytes(data)
            oids = self._git("hash-object", "-w", "--no-filters", "--", *names).decode().split()
            cacheinfo = [
                arg
                for path, oid in zip(blobs, oids, strict=True)
                for arg in ("--cacheinfo", f"{WRITE_MODE},{oid},{path}")
            ]
            try:
                # --add without --replace: a path that is a directory (or under a file) in the
                # base is refused, never replaced. (--index-info would replace it.)
                self._git("update-index", "--add", *cacheinfo, env=index_env)
            except RepositoryAccessError as exc:
                raise ContractViolation(
                    f"the files cannot be added on top of {parent}: {exc.details['stderr']}"
                ) from None
            tree = self._git("write-tree", env=index_env).decode().strip()
        commit = self._git(
            "commit-tree", "--no-gpg-sign", tree, "-p", parent, stdin=message.encode()
        )
        return commit.decode().strip()

    # --- pull request records -----------------------------------------------------------

    @property
    def _pulls_dir(self) -> Path:
        return self._dirs[1] / "amtp"

    @contextmanager
    def _pulls_lock(self) -> Iterator[None]:
        """Serialises pull-request writers on this repository across processes.

        flock is released by the kernel if the holder dies, so a crash never leaves a stale
        lock behind (unlike a lock file that must be deleted).
        """
        self._pulls_dir.mkdir(exist_ok=True)
        with open(self._pulls_dir / "pulls.lock", "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # closing the file releases it
            yield

    def _load_pulls(self) -> dict:
        try:
            return json.loads((self._pulls_dir / "pulls.json").read_text("utf-8"))
        except FileNotFoundError:
            return {"version": 1, "pulls": []}

    def _save_pulls(self, data: dict) -> None:
        # Write-then-rename so a reader never sees a half-written file.
        fd, tmp = tempfile.mkstemp(prefix="pulls.", suffix=".tmp", dir=self._pulls_dir)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self._pulls_dir / "pulls.json")

    def _recorded(self, pull: dict, head_sha: str, *, adopted: bool) -> PullRequestResult:
        """The result for ``pull``, recording it under the next number if it is new.

        Looked up by head branch, so replays get the same number; a branch left without a
        record (the process died between update-ref and here) gets one on adoption.
        """
        data = self._load_pulls()
        record = next((p for p in data["pulls"] if p["head_branch"] == pull["head_branch"]), None)
        if record is None:
            record = {
                **pull,
                "number": max((p["number"] for p in data["pulls"]), default=0) + 1,
                "url": f"{self.path.as_uri()}#{quote(pull['head_branch'], safe='/')}",
                "head_sha": head_sha,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            data["pulls"].append(record)
            self._save_pulls(data)
        return PullRequestResult(
            number=record["number"],
            url=record["url"],
            head_branch=record["head_branch"],
            head_sha=head_sha,
            base_branch=record["base_branch"],
            base_sha=record["base_sha"],
            adopted=adopted,
        )
