"""Repository reads for the crawler, cached in Valkey by repository and commit SHA.

Content at a commit SHA never changes, so cache entries can live for a long TTL and a branch
that moves can never be served stale data: a branch name is resolved live on every call, only
what hangs off the resulting SHA is cached. Every hit is counted per crawl
(``amtp:mcp:crawl:{crawl_id}:hits``) so the crawler's ``cache_hits`` is a real figure.

Secrets never pass through here (:mod:`repositories.secrets`): secret-bearing files are left
out of ``tree`` and refused by ``read_file``, and file content is redacted before it is cached
or returned (again when read from the cache, so an entry cached before a rule existed is clean).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict

from amtp_site.errors import RepositoryAccessError
from repositories.depth import DEPTH_LEVELS, filter_tree, is_binary_path, looks_binary
from repositories.hosts.base import RepositoryHost, TreeEntry
from repositories.secrets import SECRET_FILE, is_secret_path, redact

_SHA = re.compile(r"^[0-9a-f]{40}$")
HITS_TTL = 7 * 24 * 3600


def tree_key(repo: str, sha: str) -> str:
    return f"amtp:mcp:{repo}:{sha}:tree"


def file_key(repo: str, sha: str, path: str) -> str:
    return f"amtp:mcp:{repo}:{sha}:file:{path}"


def hits_key(crawl_id: str) -> str:
    return f"amtp:mcp:crawl:{crawl_id}:hits"


def crawl_cache_hits(conn, crawl_id: str) -> int:
    return int(conn.get(hits_key(crawl_id)) or 0)


class CachedRepoReader:
    def __init__(
        self, host: RepositoryHost, conn, *, ttl: int, max_read_bytes: int, crawl_id: str = ""
    ) -> None:
        self.host = host
        self.repo = host.full_name
        self.conn = conn
        self.ttl = ttl
        self.max_read_bytes = max_read_bytes
        self.crawl_id = crawl_id
        # Per commit: path → entry of what a deep crawl may read (immutable, so safe to memo).
        self._readable: dict[str, dict[str, TreeEntry]] = {}

    def _hit(self) -> None:
        if self.crawl_id:
            key = hits_key(self.crawl_id)
            self.conn.incr(key)
            self.conn.expire(key, HITS_TTL)

    def commit_sha(self, ref: str) -> str:
        # A full SHA is immutable: no lookup. Anything else is resolved live, never cached.
        return ref if _SHA.match(ref) else self.host.resolve_ref(ref)

    def full_tree(self, sha: str, *, count_hit: bool = True) -> list[TreeEntry]:
        cached = self.conn.get(tree_key(self.repo, sha))
        if cached is not None:
            if count_hit:
                self._hit()
            return [TreeEntry(*row) for row in json.loads(cached)]
        entries = self.host.tree(sha)
        rows = [[e.path, e.size, e.sha] for e in entries]
        self.conn.set(
            tree_key(self.repo, sha), json.dumps(rows, separators=(",", ":")), ex=self.ttl
        )
        return entries

    def tree(self, ref: str, depth_level: str) -> dict:
        if depth_level not in DEPTH_LEVELS:
            raise RepositoryAccessError(
                f"depth_level {depth_level!r} is not one of {', '.join(DEPTH_LEVELS)}"
            )
        sha = self.commit_sha(ref)
        entries = [
            e for e in filter_tree(self.full_tree(sha), depth_level) if not is_secret_path(e.path)
        ]
        return {
            "repo": self.repo,
            "commit_sha": sha,
            "depth_level": depth_level,
            "entries": [asdict(e) for e in entries],
        }

    def read_file(self, ref: str, path: str) -> dict:
        sha = self.commit_sha(ref)
        if is_secret_path(path):
            raise RepositoryAccessError(SECRET_FILE.format(path=path))
        if is_binary_path(path):
            raise RepositoryAccessError(f"{path!r} is a binary file; only text files can be read")
        # Only what a deep crawl may list is readable: never .git, dependency or build folders.
        if sha not in self._readable:
            tree = self.full_tree(sha, count_hit=False)  # a lookup, not a served response
            self._readable[sha] = {e.path: e for e in filter_tree(tree, "deep")}
        entry = self._readable[sha].get(path)
        if entry is None:
            raise RepositoryAccessError(
                f"{path!r} is not a file in {self.repo} at {sha[:12]}; use a path listed by repo.tree"
            )
        if entry.size > self.max_read_bytes:
            raise RepositoryAccessError(
                f"{path!r} is {entry.size} bytes, over the {self.max_read_bytes}-byte read limit; "
                "pick a smaller file"
            )
        cached = self.conn.get(file_key(self.repo, sha, path))
        if cached is not None:
            self._hit()
            text = redact(cached.decode("utf-8"))
        else:
            data = self.host.read_file(sha, path)
            if looks_binary(data):
                raise RepositoryAccessError(
                    f"{path!r} is a binary file; only text files can be read"
                )
            text = redact(data.decode("utf-8", errors="replace"))
            self.conn.set(file_key(self.repo, sha, path), text.encode("utf-8"), ex=self.ttl)
        return {
            "repo": self.repo,
            "commit_sha": sha,
            "path": path,
            "size": entry.size,
            "content": text,
        }
