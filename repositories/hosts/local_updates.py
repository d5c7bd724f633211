"""The local host's ``update_pull_request``: files committed onto an open pull request's head
branch, its record given the new title and body. A mixin of LocalGitHost (its ``_pulls``,
``_lock``, ``_repo``, ``_branch_heads``, ``_commit_files`` and ``_check_branch``)."""

from __future__ import annotations

import pygit2

from repositories.errors import RepositoryAccessError
from repositories.hosts.base import PullRequestResult, check_files
from repositories.hosts.local_pulls import pull_result


class PullRequestUpdates:
    def update_pull_request(
        self, *, head_branch: str, base_branch: str, files: dict[str, str], title: str, body: str
    ) -> PullRequestResult | None:
        self._check_branch(head_branch, "head branch")
        check_files(files)
        blobs = {path: content.encode("utf-8") for path, content in files.items()}
        with self._pulls.lock(), self._lock:
            data = self._pulls.load()
            record = next(
                (
                    p
                    for p in data["pulls"]
                    if (p["head_branch"], p["base_branch"]) == (head_branch, base_branch)
                    and p.get("state") != "closed"
                ),
                None,
            )
            parent = self._branch_heads(head_branch).get(head_branch)
            if record is None or parent is None:
                return None
            head_sha = self._commit_files(parent, blobs, f"{title}\n\n{body}\n")
            if self._repo[head_sha].tree_id == self._repo[parent].tree_id:
                head_sha = parent  # the files are there already (a retry): no empty commit
            else:
                self._move(f"refs/heads/{head_branch}", parent, head_sha)
            record.update(title=title, body=body, head_sha=head_sha)
            self._pulls.save(data)
        return pull_result(record, head_sha, parent, adopted=False, updated=True)

    def _move(self, ref: str, old: str, new: str) -> None:
        """``ref`` from ``old`` to ``new``, only if it is still at ``old`` (a commit pushed
        meanwhile is never overwritten)."""
        reference = self._repo.references[ref]
        if str(reference.target) != old:
            raise RepositoryAccessError(f"{self.full_name}: {ref} moved while it was updated")
        reference.set_target(pygit2.Oid(hex=new), "amtp: update pull request")
