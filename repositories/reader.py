"""Repository reads for the crawler, cached in Valkey by repository and commit SHA.

Content at a commit SHA never changes, so cache entries can live for a long TTL and a branch
that moves can never be served stale data: a branch name is resolved live on every call, only
what hangs off the resulting SHA is cached. Every hit (a tool answer served without calling
the host: from Valkey, or from this process's copy of a commit's tree) is counted per crawl
(``amtp:mcp:crawl:{crawl_id}:hits``) so the crawler's ``cache_hits`` is a real figure.

Secrets never pass through here (:mod:`repositories.secrets`): secret-bearing files are left
out of ``tree`` and refused by ``read_file``, and file content is redacted before it is cached
or returned (again when read from the cache, so an entry cached before a rule existed is clean).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

from repositories import depth as depth_rules
from repositories import depth_names
from repositories import overview as overview_rules
from repositories import secrets as secret_rules
from repositories.depth import DEPTH_LEVELS, is_binary_path, looks_binary, min_depth_level
from repositories.errors import RepositoryAccessError
from repositories.hosts.base import RepositoryHost
from repositories.overview import DEFAULT_PAGE_SIZE, build_overview, listing
from repositories.secrets import SECRET_FILE, is_secret_path, redact

_SHA = re.compile(r"^[0-9a-f]{40}$")
HITS_TTL = 7 * 24 * 3600
_RANK = {level: rank for rank, level in enumerate(DEPTH_LEVELS)}


def _compact(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def _rank(path: str) -> int:
    """The shallowest depth that lists ``path``; -1: never listed (nor readable), which is
    where secret-bearing files go, before any overview or listing is built or cached."""
    return -1 if is_secret_path(path) else _RANK.get(min_depth_level(path), -1)


def tree_key(repo: str, sha: str) -> str:
    return f"amtp:mcp:{repo}:{sha}:tree"


# What the depth ranks and overviews are computed by (secret files included: they rank -1):
# a deploy that changes these rules gets
# new cache keys instead of yesterday's answers.
RULES_VERSION = hashlib.sha256(
    b"".join(
        Path(m.__file__).read_bytes()
        for m in (depth_rules, depth_names, overview_rules, secret_rules)
    )
).hexdigest()[:12]


def levels_key(repo: str, sha: str) -> str:
    return f"amtp:mcp:{repo}:{sha}:levels:{RULES_VERSION}"


def overview_key(repo: str, sha: str, depth_level: str) -> str:
    return f"amtp:mcp:{repo}:{sha}:overview:{depth_level}:{RULES_VERSION}"


def page_key(repo: str, sha: str, depth_level: str, page: int, page_size: int) -> str:
    return f"amtp:mcp:{repo}:{sha}:page:{depth_level}:{page}:{page_size}:{RULES_VERSION}"


def readable_key(repo: str, sha: str) -> str:
    return f"amtp:mcp:{repo}:{sha}:readable:{RULES_VERSION}"


KNOWN = "\0"  # a field no path can be: marks a readable index as written (it may be empty)


def answer_text(answer: dict) -> str:
    """A tool answer as MCP sends it: compact JSON text, once (no structured copy)."""
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


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
        # Per commit (immutable, so safe to memo): the tree and depth ranks, each depth's view,
        # and path → size of what a deep crawl may read.
        self._index: dict[str, tuple[list[list], list[int]]] = {}
        self._views: dict[tuple[str, str], tuple[list[list], dict]] = {}
        self.host_tree_calls = 0
        self._readable: dict[str, dict[str, int]] = {}

    def _hit(self) -> None:
        if self.crawl_id:
            key = hits_key(self.crawl_id)
            self.conn.pipeline(transaction=False).incr(key).expire(key, HITS_TTL).execute()

    def commit_sha(self, ref: str) -> str:
        # A full SHA is immutable: no lookup. Anything else is resolved live, never cached.
        return ref if _SHA.match(ref) else self.host.resolve_ref(ref)

    def _indexed(self, sha: str) -> tuple[list[list], list[int]]:
        """(the commit's rows ``[path, size, sha]``, each row's depth rank; -1: never listed).
        Both lists are cached per commit: a warm crawl neither calls the host nor runs the
        depth rules again, and this process keeps them for its next calls."""
        if sha not in self._index:
            cached = self.conn.get(tree_key(self.repo, sha))
            if cached is None:
                self.host_tree_calls += 1
                rows = [[e.path, e.size, e.sha] for e in self.host.tree(sha)]
                self.conn.set(tree_key(self.repo, sha), _compact(rows), ex=self.ttl)
            else:
                rows = json.loads(cached)
            levels = self.conn.get(levels_key(self.repo, sha)) if cached is not None else None
            ranks = json.loads(levels) if levels is not None else []
            if len(ranks) != len(rows):
                ranks = [_rank(row[0]) for row in rows]
                self.conn.set(levels_key(self.repo, sha), _compact(ranks), ex=self.ttl)
            self._index[sha] = (rows, ranks)
        return self._index[sha]

    def _view(self, sha: str, depth_level: str) -> tuple[list[list], dict]:
        """(the rows a crawl at ``depth_level`` sees, their overview)."""
        if (sha, depth_level) not in self._views:
            rows, ranks = self._indexed(sha)
            limit = _RANK[depth_level]
            kept = [row for row, rank in zip(rows, ranks, strict=True) if 0 <= rank <= limit]
            key = overview_key(self.repo, sha, depth_level)
            cached = self.conn.get(key)
            if cached is None:
                at_depth = Counter(ranks)
                counts = {d: sum(at_depth[r] for r in range(i + 1)) for d, i in _RANK.items()}
                overview = build_overview(kept, counts)
                self.conn.set(key, _compact(overview), ex=self.ttl)
            else:
                overview = json.loads(cached)
            self._views[(sha, depth_level)] = (kept, overview)
        return self._views[(sha, depth_level)]

    def tree(
        self,
        ref: str,
        depth_level: str,
        *,
        prefix: object = "",
        glob: object = "",
        page: object = 1,
        page_size: object = DEFAULT_PAGE_SIZE,
    ) -> dict:
        """A page of the filtered tree (``repositories.overview.listing``); an unfiltered
        first page carries the overview too."""
        if depth_level not in DEPTH_LEVELS:
            raise RepositoryAccessError(
                f"depth_level {depth_level!r} is not one of {', '.join(DEPTH_LEVELS)}"
            )
        sha = self.commit_sha(ref)
        host_calls = self.host_tree_calls
        rows, overview = self._view(sha, depth_level)
        page_of = listing(rows, prefix=prefix, glob=glob, page=page, page_size=page_size)
        answer = {"repo": self.repo, "commit_sha": sha, "depth_level": depth_level, **page_of}
        if not page_of["prefix"] and not page_of["glob"] and page == 1:
            answer["overview"] = overview
        if self.host_tree_calls == host_calls:  # served without the host: a cache hit
            self._hit()
        return answer

    def tree_text(self, ref: str, depth_level: str, **args) -> str:
        """``tree`` as the text the MCP server answers. A page of the whole tree (no prefix or
        glob) at a commit never changes, so its text is cached as is: a warm crawl's pages
        cost a Valkey read each, not a parse of the whole tree."""
        page, size = args.get("page", 1), args.get("page_size", DEFAULT_PAGE_SIZE)
        if args.get("prefix") or args.get("glob") or type(page) is not int or type(size) is not int:
            return answer_text(self.tree(ref, depth_level, **args))
        sha = self.commit_sha(ref)
        key = page_key(self.repo, sha, depth_level, page, size)
        cached = self.conn.get(key)
        if cached is not None:
            self._hit()
            return cached.decode("utf-8")
        answer = self.tree(sha, depth_level, **args)  # invalid arguments raise here
        text = answer_text(answer)
        if page <= max(answer["pages"], 1):  # not the empty pages past the end
            self.conn.set(key, text.encode("utf-8"), ex=self.ttl)
        return text

    def _readable_size(self, sha: str, path: str) -> tuple[int | None, bytes | None]:
        """(the size of ``path`` if a deep crawl may read it, else None: never .git,
        dependency or build folders; its cached content, if any). From the commit's index in
        Valkey (one lookup, not a parse of the whole tree, in the same round trip as the
        content), which the first read of the commit writes."""
        content_key = file_key(self.repo, sha, path)
        if sha in self._readable:
            size = self._readable[sha].get(path)
            return size, None if size is None else self.conn.get(content_key)
        key = readable_key(self.repo, sha)
        pipe = self.conn.pipeline(transaction=False)
        size, known, cached = pipe.hget(key, path).hexists(key, KNOWN).get(content_key).execute()
        if known:
            return (None, None) if size is None or path == KNOWN else (int(size), cached)
        rows, ranks = self._indexed(sha)  # a lookup, not a served response
        readable = {r[0]: r[1] for r, k in zip(rows, ranks, strict=True) if k >= 0}
        self.conn.pipeline().hset(key, mapping={KNOWN: -1, **readable}).expire(
            key, self.ttl
        ).execute()
        self._readable[sha] = readable
        return readable.get(path), cached

    def read_file(self, ref: str, path: str) -> dict:
        sha = self.commit_sha(ref)
        if is_secret_path(path):
            raise RepositoryAccessError(SECRET_FILE.format(path=path))
        if is_binary_path(path):
            raise RepositoryAccessError(f"{path!r} is a binary file; only text files can be read")
        size, cached = self._readable_size(sha, path)
        if size is None:
            raise RepositoryAccessError(
                f"{path!r} is not a file in {self.repo} at {sha[:12]}; use a path listed by repo.tree"
            )
        if size > self.max_read_bytes:
            raise RepositoryAccessError(
                f"{path!r} is {size} bytes, over the {self.max_read_bytes}-byte read limit; "
                "pick a smaller file"
            )
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
            "size": size,
            "content": text,
        }
