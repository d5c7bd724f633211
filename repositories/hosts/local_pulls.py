"""The local host's pull-request records: ``<git-dir>/amtp/pulls.json``, written whole and
atomically, under a lock that serialises writers across processes. A record holds what GitHub
would show: title, body, branches, ``draft`` and ``labels``."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from repositories.hosts.base import PullRequestResult


class PullRecords:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @contextmanager
    def lock(self) -> Iterator[None]:
        """flock is released by the kernel if the holder dies, so a crash never leaves a stale
        lock behind (unlike a lock file that must be deleted)."""
        self.folder.mkdir(exist_ok=True)
        with open(self.folder / "pulls.lock", "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # closing the file releases it
            yield

    def load(self) -> dict:
        try:
            return json.loads((self.folder / "pulls.json").read_text("utf-8"))
        except FileNotFoundError:
            return {"version": 1, "pulls": []}

    def save(self, data: dict) -> None:
        # Write-then-rename so a reader never sees a half-written file.
        fd, tmp = tempfile.mkstemp(prefix="pulls.", suffix=".tmp", dir=self.folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.folder / "pulls.json")


def missing_labels(record: dict, labels: list[str]) -> list[str]:
    """``labels`` a recorded pull request lacks (names ignore case, as on GitHub)."""
    present = {name.casefold() for name in record.get("labels", [])}
    return [name for name in labels if name.casefold() not in present]


def pull_result(
    record: dict, head_sha: str, base_sha: str, *, adopted: bool, updated: bool = False
) -> PullRequestResult:
    """A recorded pull request as a host returns it: its head at ``head_sha``, a commit made
    on ``base_sha``."""
    return PullRequestResult(
        **{key: record[key] for key in ("number", "url", "head_branch", "base_branch")},
        head_sha=head_sha,
        base_sha=base_sha,
        adopted=adopted,
        updated=updated,
    )
