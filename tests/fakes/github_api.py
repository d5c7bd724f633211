"""A stateful fake of the GitHub REST API, served over real HTTP on 127.0.0.1.

Tests drive the real PyGithub client against it, so the code under test meets the same URLs,
headers, status codes and error bodies as on github.com. Objects are stored the way git stores
them (content-addressed SHA-1), so the same files always give the same tree SHA, exactly as
``git write-tree`` would compute it.

    with FakeGitHub() as gh:                      # create repositories inside the block
        base = gh.create_repo("acme/web", files={"app.py": "print(1)"})
        Github(base_url=gh.url, auth=Auth.Token(gh.token), retry=None)

    with FakeGitHub(enterprise=True) as ghes:     # GitHub Enterprise Server: the API is
        Github(base_url=ghes.api_url, ...)         # under /api/v3, the rest is its web UI

Seeding and inspection: create_repo, push, branch, tag, install_app; head, refs, pulls,
labels_of, files, read, commit_info; the ledger (method, path, status), calls (with headers) and count().
Switches: protect (a ruleset or classic branch protection, answering in each wording GitHub
uses), forbid, rate_limit (primary or secondary, with or without retry-after),
flaky_ref_creation and flaky_base_tree (GitHub's transient 422s), no_drafts (a plan without
draft pull requests), server_error, fail (any answer, before or after the request is
carried out), hold (a request kept waiting until released), move_base / after_calls (something happens mid-operation),
max_recursive_entries and max_recursive_bytes (when recursive tree listings report
``truncated``), token_ttl, token_scopes. Drafts and labels: github_labels; check runs: github_checks.

Every behaviour that is not plain REST documentation names its public source where it is set.
"""

from __future__ import annotations

import base64
import dataclasses
import fnmatch
import hashlib
import io
import json
import re
import secrets
import tarfile
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote

import jwt  # PyJWT (a PyGithub dependency) verifies App JWTs the way GitHub does

from tests.fakes import github_rules, ports
from tests.fakes.github_checks import CheckRuns
from tests.fakes.github_labels import LabelsAndDrafts

DOCS = "https://docs.github.com/rest"
CREATE_REF_DOC = f"{DOCS}/git/refs#create-a-reference"
WRITES = ("POST", "PATCH", "PUT", "DELETE")
CODELOAD = "/_codeload/"  # codeload.github.com's part: where archive downloads redirect
GHES_PREFIX = "/api/v3"  # GHES: "prefixed with the following URL: http(s)://HOSTNAME/api/v3"
GHES_VERSION = "3.17.0"  # sent as X-GitHub-Enterprise-Version by every GHES API answer
# What GitHub's web UI answers for a page that does not exist: HTML, not the API's JSON.
HOLD_MAX_S = 300.0  # a held request goes on by itself after this long (a test that forgot it)
WEB_NOT_FOUND = "<!DOCTYPE html>\n<html><head><title>Page not found · GitHub</title></head></html>"
# How each ruleset rule words its refusal (git push GH013 lines and REST messages):
# creation: dmf-mxl/mxl#356; pull_request: satisfactory-factories/application#67;
# required_status_checks: kubeflow/pipelines#4384, 47degrees/sbt-org-policies#263. Other
# rules get a neutral line: AMTP only creates refs, so their wording is never relied on.
RULE_MESSAGES = {
    "creation": "Cannot create ref due to creations being restricted.",
    "pull_request": "Changes must be made through a pull request.",
    "required_status_checks": "1 of 1 required status check is expected.",
}
# Rules that do not apply when a new branch is created (docs.github.com/rest/repos/rules; a
# required-status-checks rule does, unless do_not_enforce_on_create:
# artifact-keeper/artifact-keeper#3798).
NOT_ON_CREATE = {"deletion", "non_fast_forward", "update", "pull_request"}
_MODES = {
    "100644": "blob",
    "100755": "blob",
    "120000": "blob",
    "040000": "tree",
    "160000": "commit",
}
_R = r"/repos/([^/]+/[^/]+)"
_ROUTES = [  # (verb, path pattern, handler); the first group is always the repo or app target
    (v, re.compile(p), h)
    for v, p, h in [
        ("GET", r"/(user)", "user"),
        ("GET", r"/(rate_limit)", "rate_limit_status"),
        ("GET", r"/(app)", "app_info"),
        ("GET", r"/(app)/installations", "installations"),
        ("GET", _R, "repo"),
        ("GET", _R + "/rules/branches/(.+)", "branch_rules"),
        ("GET", _R + "/installation", "installation"),
        ("POST", r"/app/installations/(\d+)/access_tokens", "access_token"),
        ("GET", _R + "/branches/(.+)", "branch"),
        ("GET", _R + "/git/ref/(.+)", "get_ref"),
        ("GET", _R + "/git/refs/(.+)", "get_ref"),
        ("GET", _R + "/git/matching-refs/(.*)", "matching_refs"),
        ("POST", _R + "/git/refs", "create_ref"),
        ("PATCH", _R + "/git/refs/(.+)", "update_ref"),
        ("DELETE", _R + "/git/refs/(.+)", "delete_ref"),
        ("GET", _R + "/git/commits/([^/]+)", "get_commit"),
        ("POST", _R + "/git/commits", "create_commit"),
        ("GET", _R + "/git/trees/(.+)", "get_tree"),
        ("POST", _R + "/git/trees", "create_tree"),
        ("GET", _R + "/git/blobs/([^/]+)", "get_blob"),
        ("POST", _R + "/git/blobs", "create_blob"),
        ("GET", _R + "/git/tags/([^/]+)", "get_tag"),
        ("GET", _R + "/contents/?(.*)", "contents"),
        ("GET", _R + "/tarball/?(.*)", "tarball"),
        ("GET", _R + "/pulls", "list_pulls"),
        ("POST", _R + "/pulls", "create_pull"),
        ("GET", _R + r"/pulls/(\d+)", "get_pull"),
        ("PATCH", _R + r"/pulls/(\d+)", "update_pull"),
        ("POST", _R + r"/issues/(\d+)/labels", "add_labels"),
        ("POST", _R + "/check-runs", "create_check_run"),
        ("PATCH", _R + r"/check-runs/(\d+)", "update_check_run"),
        ("GET", _R + r"/check-runs/(\d+)/annotations", "check_annotations"),
        ("GET", _R + "/commits/([^/]+)/check-runs", "list_ref_check_runs"),
    ]
]


class Reply(Exception):
    """Raised by a handler to answer with GitHub's error shape."""

    def __init__(self, status: int, message: str, *, doc: str = DOCS, errors=None, headers=None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}
        self.body = {"message": message, "documentation_url": doc, "status": str(status)}
        if errors:
            self.body["errors"] = errors


def git_sha(kind: str, body: bytes) -> str:
    """Git's object id: SHA-1 over "<kind> <size>\\0<body>"."""
    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(body)) + body).hexdigest()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Grant:  # what a bearer token may see; repos None = every repository
    repos: set[str] | None
    expires: float
    installation: int | None = None
    permissions: dict[str, str] | None = None  # an installation's; None: a user's token


@dataclass
class Call:
    method: str
    path: str  # without GHES's /api/v3 prefix, so the same test reads both
    query: dict[str, str]
    status: int
    headers: dict[str, str]
    url_path: str = ""  # the path exactly as requested


@dataclass
class Protection:
    """A ruleset (visible to GET rules/branches/{branch}) or a classic protection rule (not)."""

    pattern: str
    ruleset: bool
    answer: str  # "message" | "errors" | "opaque"
    status: int
    rules: list[dict]

    def refusing(self, creating: bool) -> list[dict]:
        if not self.ruleset:
            return self.rules
        return [
            r
            for r in self.rules
            if not creating
            or not (
                r["type"] in NOT_ON_CREATE
                or (r.get("parameters") or {}).get("do_not_enforce_on_create")
            )
        ]


class Html(str):
    """A payload that is a web page, not JSON."""


class Archive(bytes):
    """A payload that is a gzipped tar file (codeload's answer), not JSON."""


class FakeRepo:
    """One repository: git objects, refs and pull requests, rendered as GitHub JSON."""

    def __init__(self, api: str, full_name: str, repo_id: int, default_branch: str) -> None:
        self.full_name, self.id, self.default_branch = full_name, repo_id, default_branch
        self.owner = full_name.split("/")[0]
        self.url = f"{api}/repos/{full_name}"
        self.objects: dict[str, tuple[str, Any]] = {}  # sha -> (kind, payload)
        self.refs: dict[str, str] = {}
        self.pulls: list[dict] = []
        self.check_runs: list[dict] = []  # github_checks
        self.protections: list[Protection] = []
        self.forbidden: tuple[str, ...] = ()
        self.drafts_supported = True  # FakeGitHub.no_drafts: a plan without draft PRs
        self.labels: dict[str, str] = {}  # the repository's labels: casefolded -> as named
        self._listings: dict[tuple[str, bool], list[dict]] = {}  # trees are immutable: cache

    # -- git objects ------------------------------------------------------------------
    def blob(self, data: bytes) -> str:
        sha = git_sha("blob", data)
        self.objects[sha] = ("blob", data)
        return sha

    def put_tree(self, entries: dict[str, tuple[str, str]]) -> str:
        """entries: name -> (mode, sha). Git sorts a tree's names as if directories end in /."""
        names = sorted(
            entries, key=lambda n: (n + "/" if entries[n][0] == "040000" else n).encode()
        )
        rows = [(entries[n][0], n, entries[n][1]) for n in names]
        body = b"".join(
            f"{m.lstrip('0')} {n}".encode() + b"\0" + bytes.fromhex(s) for m, n, s in rows
        )
        sha = git_sha("tree", body)
        self.objects[sha] = ("tree", rows)
        return sha

    def apply(self, base: str | None, changes: dict[str, tuple[str, str] | None]) -> str:
        """A new tree: ``base`` plus ``changes`` (path -> (mode, sha), None deletes)."""
        entries = {n: (m, s) for m, n, s in (self.get(base, "tree") if base else [])}
        nested: dict[str, dict] = {}
        for path, value in changes.items():
            head, _, rest = path.strip("/").partition("/")
            if rest:
                nested.setdefault(head, {})[rest] = value
            elif value is None:
                entries.pop(head, None)
            else:
                entries[head] = value
        for head, sub in nested.items():
            old = entries.get(head)
            sha = self.apply(old[1] if old and old[0] == "040000" else None, sub)
            if self.objects[sha][1]:
                entries[head] = ("040000", sha)
            else:  # git has no empty directories
                entries.pop(head, None)
        return self.put_tree(entries)

    def commit(self, tree: str, parents: list[str], message: str, when: float, who=None) -> str:
        name, email = who or ("Fake Bot", "bot@example.invalid")
        sig = f"{name} <{email}> {int(when)} +0000"
        head = "".join([f"tree {tree}\n", *(f"parent {p}\n" for p in parents)])
        body = f"{head}author {sig}\ncommitter {sig}\n\n{message}".encode()
        sha = git_sha("commit", body)
        info = {
            "tree": tree,
            "parents": parents,
            "message": message,
            "name": name,
            "email": email,
            "date": _iso(when),
        }
        self.objects[sha] = ("commit", info)
        return sha

    def get(self, sha: str | None, kind: str) -> Any:
        found = self.objects.get(sha or "")
        if not found or found[0] != kind:
            raise Reply(404, "Not Found")
        return found[1]

    def resolve(self, name: str) -> str:
        """Branch, tag, refs/... or SHA -> commit SHA (annotated tags peeled)."""
        for ref in (name, f"refs/heads/{name}", f"refs/tags/{name}"):
            if ref.startswith("refs/") and ref in self.refs:
                name = self.refs[ref]
                break
        while self.objects.get(name, ("",))[0] == "tag":
            name = self.objects[name][1]["object"]
        if self.objects.get(name, ("",))[0] != "commit":
            raise Reply(404, f"No commit found for the ref {name}")
        return name

    def tree_of(self, ish: str) -> str:
        if self.objects.get(ish, ("",))[0] == "tree":
            return ish
        return self.get(self.resolve(ish), "commit")["tree"]

    def find(self, commit: str, path: str) -> tuple[str, str] | None:
        mode, sha = "040000", self.tree_of(commit)
        for part in [p for p in path.strip("/").split("/") if p]:
            if mode != "040000":
                return None
            rows = {n: (m, s) for m, n, s in self.get(sha, "tree")}
            if part not in rows:
                return None
            mode, sha = rows[part]
        return mode, sha

    def listing(self, tree: str, recursive: bool) -> list[dict]:
        key = (tree, recursive)
        if key not in self._listings:
            out: list[dict] = []
            self._list(tree, "", recursive, out)
            self._listings[key] = out
        return self._listings[key]

    def _list(self, tree: str, prefix: str, recursive: bool, out: list[dict]) -> None:
        for mode, name, sha in self.get(tree, "tree"):
            kind = _MODES[mode]
            entry = {"path": prefix + name, "mode": mode, "type": kind, "sha": sha}
            if kind == "blob":
                entry["size"] = len(self.objects[sha][1])
            if kind != "commit":
                entry["url"] = f"{self.url}/git/{kind}s/{sha}"
            out.append(entry)
            if kind == "tree" and recursive:  # pre-order, as GitHub lists it
                self._list(sha, f"{prefix}{name}/", True, out)

    def is_ancestor(self, old: str, new: str) -> bool:
        seen, todo = set(), [new]
        while todo:
            sha = todo.pop()
            if sha == old:
                return True
            if sha not in seen and self.objects.get(sha, ("",))[0] == "commit":
                seen.add(sha)
                todo.extend(self.objects[sha][1]["parents"])
        return False

    # -- JSON ---------------------------------------------------------------------------
    def ref_json(self, ref: str) -> dict:
        sha = self.refs[ref]
        kind = self.objects.get(sha, ("commit",))[0]
        obj = {"sha": sha, "type": kind, "url": f"{self.url}/git/{kind}s/{sha}"}
        return {
            "ref": ref,
            "node_id": f"REF_{sha[:12]}",
            "url": f"{self.url}/git/{ref}",
            "object": obj,
        }

    def commit_json(self, sha: str) -> dict:
        c = self.get(sha, "commit")
        who = {"name": c["name"], "email": c["email"], "date": c["date"]}
        parents = [{"sha": p, "url": f"{self.url}/git/commits/{p}"} for p in c["parents"]]
        return {
            "sha": sha,
            "node_id": f"C_{sha[:12]}",
            "url": f"{self.url}/git/commits/{sha}",
            "author": who,
            "committer": who,
            "message": c["message"],
            "parents": parents,
            "tree": {"sha": c["tree"], "url": f"{self.url}/git/trees/{c['tree']}"},
            "verification": {"verified": False, "reason": "unsigned"},
        }

    def repo_json(self, api: str) -> dict:
        return {
            "id": self.id,
            "node_id": f"R_{self.id}",
            "name": self.full_name.split("/")[1],
            "full_name": self.full_name,
            "private": True,
            "default_branch": self.default_branch,
            "owner": {"login": self.owner, "id": self.id + 10_000, "type": "Organization"},
            "url": self.url,
            "html_url": f"{api}/{self.full_name}",
            "permissions": {"admin": False, "push": True, "pull": True},
        }

    def label_json(self, name: str) -> dict:
        n = sorted(self.labels).index(name.casefold()) + 1
        return {
            "id": self.id * 1000 + n,
            "node_id": f"LA_{self.id}_{n}",
            "url": f"{self.url}/labels/{name}",
            "name": name,
            "color": "ededed",
            "default": False,
            "description": None,
        }

    def pull_json(self, pr: dict, api: str) -> dict:
        def side(branch: str, sha: str) -> dict:
            sha = self.refs.get(f"refs/heads/{branch}", sha)  # a PR follows its branch
            return {
                "label": f"{self.owner}:{branch}",
                "ref": branch,
                "sha": sha,
                "user": {"login": self.owner},
                "repo": self.repo_json(api),
            }

        n = pr["number"]
        return {
            "url": f"{self.url}/pulls/{n}",
            "id": self.id * 1000 + n,
            "node_id": f"PR_{n}",
            "number": n,
            "state": pr["state"],
            "title": pr["title"],
            "body": pr["body"],
            "html_url": f"{api}/{self.full_name}/pull/{n}",
            "draft": pr["draft"],
            "labels": [self.label_json(name) for name in pr["labels"]],
            "issue_url": f"{self.url}/issues/{n}",
            "head": side(pr["head"], pr["head_sha"]),
            "base": side(pr["base"], pr["base_sha"]),
            "user": {"login": "fake-bot[bot]"},
            "merged": False,
            "created_at": pr["created"],
            "updated_at": pr["created"],
            "closed_at": pr.get("closed"),
            "merged_at": None,
        }


@dataclass
class _App:
    app_id: str
    public_key: str
    installations: dict[int, tuple[set[str], dict[str, str]]]  # id -> (repos, permissions)


@dataclass
class Held:
    """Requests :meth:`FakeGitHub.hold` keeps waiting: ``arrived`` once the first came, carried
    out once ``release()`` is called."""

    method: str
    path: str
    arrived: threading.Event = dataclasses.field(default_factory=threading.Event)
    released: threading.Event = dataclasses.field(default_factory=threading.Event)

    def release(self) -> None:
        self.released.set()


@dataclass
class _Fault:
    reply: Reply
    calls: int
    method: str | None
    path: str | None
    applied: bool = False  # the request is carried out, then answered with ``reply``


class FakeGitHub(LabelsAndDrafts, CheckRuns):
    """The fake server. Switches and helpers are plain methods; all state sits behind one lock."""

    Reply = Reply

    def __init__(self, *, enterprise: bool = False) -> None:
        """``enterprise``: GitHub Enterprise Server, with the API under /api/v3 only."""
        self.enterprise = enterprise
        self.token = "ghp_" + "f" * 36  # a valid personal access token for every repository
        self.token_scopes: str | None = "repo"  # X-OAuth-Scopes of that (classic) token;
        # None: a fine-grained token, which GitHub sends no scopes header for
        self.max_recursive_entries = 100_000  # GitHub truncates recursive trees at 100,000
        self.max_recursive_bytes = 7 * 1024 * 1024  # ... or at 7 MB, whichever comes first
        self.token_ttl = 3600.0  # installation tokens live an hour on GitHub
        self.ledger: list[tuple[str, str, int]] = []  # (method, path, status) per request
        self.calls: list[Call] = []  # the same, with query and request headers
        self.issued_tokens: list[str] = []
        self.errors: list[Exception] = []  # unexpected exceptions inside the fake itself
        self.url = ""
        self._lock = threading.RLock()
        self._repos: dict[str, FakeRepo] = {}
        self._grants: dict[str, Grant] = {self.token: Grant(None, float("inf"))}
        self._apps: dict[str, _App] = {}
        self._faults: list[_Fault] = []
        self._holds: list[Held] = []
        self._later: list[list] = []  # [calls_left, callback]
        self._archives: dict[str, tuple[str, str]] = {}  # codeload token -> (repo, commit)
        self._clock = 1_700_000_000  # seeded commits get deterministic dates, hence SHAs
        self._used = 0
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> FakeGitHub:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ports.listen(type(self).__name__, handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"  # the host's root
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    @property
    def api_url(self) -> str:
        """Where the REST API is: the root, or /api/v3 on GitHub Enterprise Server."""
        return self.url + (GHES_PREFIX if self.enterprise else "")

    def __exit__(self, *exc: object) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    # -- seeding and inspection -----------------------------------------------------------
    def create_repo(self, full_name: str, files: dict | None = None, *, default_branch="main"):
        """A repository whose default branch holds ``files``; returns the commit SHA.

        Values are text, bytes, or (mode, content) for "100755", "120000" (symlink target)
        and "160000" (submodule commit SHA)."""
        with self._lock:
            repo = FakeRepo(self.url, full_name, len(self._repos) + 1, default_branch)
            self._repos[full_name.lower()] = repo
            return self.push(full_name, default_branch, files or {}, message="Initial commit")

    def push(self, full_name: str, branch: str, files: dict, message: str = "Update") -> str:
        """Commit ``files`` (None deletes) on top of ``branch`` (created from the default)."""
        with self._lock:
            repo = self.repo(full_name)
            parent = repo.refs.get(f"refs/heads/{branch}") or repo.refs.get(
                f"refs/heads/{repo.default_branch}"
            )
            changes: dict[str, tuple[str, str] | None] = {}
            for path, value in files.items():
                mode, data = value if isinstance(value, tuple) else ("100644", value)
                if value is None:
                    changes[path] = None
                elif mode == "160000":
                    changes[path] = (mode, data)
                else:
                    changes[path] = (
                        mode,
                        repo.blob(data if isinstance(data, bytes) else data.encode()),
                    )
            base = repo.get(parent, "commit")["tree"] if parent else None
            self._clock += 1
            sha = repo.commit(
                repo.apply(base, changes), [parent] if parent else [], message, self._clock
            )
            repo.refs[f"refs/heads/{branch}"] = sha
            return sha

    def tag(self, full_name: str, name: str, target: str, message: str | None = None) -> str:
        """A lightweight tag, or an annotated tag object when ``message`` is given."""
        with self._lock:
            repo = self.repo(full_name)
            sha = repo.resolve(target)
            if message is not None:
                body = f"object {sha}\ntype commit\ntag {name}\n\n{message}".encode()
                tag_sha = git_sha("tag", body)
                repo.objects[tag_sha] = ("tag", {"object": sha, "tag": name, "message": message})
                sha = tag_sha
            repo.refs[f"refs/tags/{name}"] = sha
            return sha

    def branch(self, full_name: str, name: str, target: str) -> str:
        """A branch at ``target`` (a branch, tag or SHA), as ``git branch NAME TARGET``."""
        with self._lock:
            repo = self.repo(full_name)
            repo.refs[f"refs/heads/{name}"] = sha = repo.resolve(target)
            return sha

    def repo(self, full_name: str) -> FakeRepo:
        return self._repos[full_name.lower()]

    def head(self, full_name: str, branch: str) -> str:
        return self.repo(full_name).refs[f"refs/heads/{branch}"]

    def refs(self, full_name: str) -> dict[str, str]:
        return dict(self.repo(full_name).refs)

    def pulls(self, full_name: str) -> list[dict]:
        repo = self.repo(full_name)
        return [repo.pull_json(pr, self.url) for pr in repo.pulls]

    def files(self, full_name: str, ref: str) -> dict[str, tuple[str, bytes]]:
        """Every blob at ``ref``: path -> (mode, content)."""
        repo = self.repo(full_name)
        rows = repo.listing(repo.tree_of(ref), True)
        return {
            e["path"]: (e["mode"], repo.objects[e["sha"]][1]) for e in rows if e["type"] == "blob"
        }

    def read(self, full_name: str, ref: str, path: str) -> bytes | None:
        found = self.repo(full_name).find(ref, path)
        return self.repo(full_name).objects[found[1]][1] if found and found[0] != "040000" else None

    def commit_info(self, full_name: str, sha: str) -> dict:
        return dict(self.repo(full_name).get(sha, "commit"))

    def count(self, method: str | None = None, path: str | None = None) -> int:
        """Requests received, optionally by method and by a regex searched in the path."""
        return sum(
            1
            for m, p, _ in self.ledger
            if (method is None or m == method) and (path is None or re.search(path, p))
        )

    # -- switches -----------------------------------------------------------------------
    def protect(
        self,
        full_name: str,
        pattern: str = "main",
        *,
        ruleset: bool = True,
        answer: str | None = None,
        status: int = 422,
        rules: tuple = ("creation",),
    ) -> None:
        """Refuse ref writes to branches matching ``pattern``.

        ``ruleset``: a repository ruleset made of ``rules`` (types, or dicts with
        "parameters"), listed by GET rules/branches/{branch}; else classic branch protection,
        which that endpoint does not show. ``answer``, how the refusal reads:
        - "message": 422 "Repository rule violations found\\n\\n<rule messages>\\n\\n"
          (satisfactory-factories/application#67, REST update-a-reference); for classic
          protection "Protected branch update failed for <ref>." (the GH006 wording:
          kubeflow/pipelines#4384), 403 when ``status`` says so (technote-space/
          github-action-helper#17 reports 403s for required checks);
        - "errors": 422 "Validation Failed", the rules in errors[] with field "pre_receive"
          (softprops/action-gh-release's tests; github/github-mcp-server#3080);
        - "opaque": 422 "Reference update failed" and nothing more (actions/github-script#455
          "when creating a protected branch"; release-plz/action#518).
        Default: "message" for a ruleset, "opaque" for classic protection."""
        kinds = [r if isinstance(r, dict) else {"type": r} for r in rules]
        answer = answer or ("message" if ruleset else "opaque")
        self.repo(full_name).protections.append(Protection(pattern, ruleset, answer, status, kinds))

    def forbid(self, full_name: str, methods: tuple[str, ...] = WRITES) -> None:
        """The token lacks permission: 403 "Resource not accessible by integration"."""
        self.repo(full_name).forbidden = methods

    def fail(
        self,
        status: int,
        message: str,
        *,
        calls=1,
        errors=None,
        headers=None,
        doc=DOCS,
        method: str | None = None,
        path: str | None = None,
        applied: bool = False,
    ) -> None:
        """Answer the next ``calls`` matching requests (method, regex on path) with an error.
        ``applied``: the request is carried out first, and only its answer is the error (a
        502 or 504 from GitHub's front end does not say whether the write behind it was made:
        "If GitHub takes more than 10 seconds to process an API request, GitHub will terminate
        the request and you will receive a timeout response", troubleshooting-the-rest-api)."""
        reply = Reply(status, message, doc=doc, errors=errors, headers=headers)
        with self._lock:
            self._faults.append(_Fault(reply, calls, method, path, applied))

    def rate_limit(
        self, calls=1, *, secondary=False, status=403, reset_in=60, retry_after=True, **match
    ) -> None:
        """Primary: x-ratelimit-remaining 0 and the reset time. Secondary: the documented
        message, with retry-after unless ``retry_after`` is False (GitHub does not always send
        it: hub4j/github-api#1805; then "wait for at least one minute")."""
        if secondary:
            message = (
                "You have exceeded a secondary rate limit. Please wait a few minutes before "
                "you try again. If you reach out to GitHub Support for help, please "
                "include the request ID 0000:1111:2222."
            )
            headers = {"retry-after": str(reset_in)} if retry_after else {}
            doc = f"{DOCS}/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
        else:
            message = "API rate limit exceeded for installation ID 1."
            headers = {
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": str(int(time.time()) + reset_in),
            }
            doc = f"{DOCS}/overview/rate-limits-for-the-rest-api"
        self.fail(status, message, calls=calls, headers=headers, doc=doc, **match)

    def flaky_ref_creation(self, calls=1) -> None:
        """POST git/refs answers a bare 422 "Reference update failed" to a valid request:
        "Sometimes it works, sometimes it fails" (github/rest-api-description#4887;
        renovatebot/renovate#11481, exercism/website#8248 show the body)."""
        self.fail(
            422,
            "Reference update failed",
            calls=calls,
            doc=CREATE_REF_DOC,
            method="POST",
            path=r"/git/refs$",
        )

    def flaky_base_tree(self, calls=1) -> None:
        """POST git/trees answers 422 "base_tree is not a valid tree oid" for a base tree that
        exists, "constantly failing for a period of time (minutes to hours)"
        (PyGithub/PyGithub#1732)."""
        self.fail(
            422,
            "base_tree is not a valid tree oid",
            calls=calls,
            doc=f"{DOCS}/git/trees#create-a-tree",
            method="POST",
            path=r"/git/trees$",
        )

    def server_error(self, calls=1, *, status=500, **match) -> None:
        self.fail(status, "Server Error", calls=calls, **match)

    def hold(self, method: str, path: str) -> Held:
        """Keep every request matching ``method`` and ``path`` (a regex) waiting, before it is
        carried out, until the returned hold is released (at most ``HOLD_MAX_S``): a slow
        answer, with every other request served meanwhile. Released, each is carried out and
        answered whether or not its client is still there, as GitHub finishes a write whose
        client went away (a client's retry after its timeout waits too)."""
        held = Held(method, path)
        with self._lock:
            self._holds.append(held)
        return held

    def _wait_if_held(self, method: str, path: str) -> None:
        with self._lock:
            holds = [h for h in self._holds if h.method == method and re.search(h.path, path)]
        for held in holds:
            held.arrived.set()
            held.released.wait(HOLD_MAX_S)

    def after_calls(self, calls: int, callback) -> None:
        """Run ``callback`` just before the ``calls``-th next request is served."""
        with self._lock:
            self._later.append([calls, callback])

    def move_base(self, full_name: str, branch: str, *, after_calls: int = 0) -> None:
        """Advance ``branch`` by a new commit, now or mid-operation (a concurrent merge)."""

        def move() -> None:
            self.push(full_name, branch, {"MOVED.md": f"moved at {self._clock}\n"}, "Merge")

        if after_calls:
            self.after_calls(after_calls, move)
        else:
            move()

    def install_app(
        self,
        app_id: int | str,
        public_key_pem: str,
        repos: list[str],
        permissions: dict | None = None,
    ) -> int:
        """Register a GitHub App (by its public key) installed on ``repos``; the install id."""
        with self._lock:
            app = self.register_app(app_id, public_key_pem)
            installation_id = 1000 + sum(len(a.installations) for a in self._apps.values())
            perms = permissions or {"contents": "write", "pull_requests": "write"}
            app.installations[installation_id] = ({r.lower() for r in repos}, perms)
            return installation_id

    def register_app(self, app_id: int | str, public_key_pem: str) -> _App:
        """A GitHub App that exists (by its public key), installed nowhere yet."""
        with self._lock:
            return self._apps.setdefault(str(app_id), _App(str(app_id), public_key_pem, {}))

    def installation_token(self, installation_id: int) -> str:
        """An installation access token (ghs_...), as POST .../access_tokens mints one."""
        with self._lock:
            app = next(a for a in self._apps.values() if installation_id in a.installations)
            return self._access_token(app, str(installation_id))[1]["token"]

    # -- request handling -----------------------------------------------------------------
    def handle(self, method: str, raw_path: str, query: dict, raw: bytes, headers) -> tuple:
        """(status, payload, extra headers) for one request; records it in the ledger. The
        payload is JSON, or Html where a web server (not the API) answers."""
        url_path = raw_path
        if raw_path.startswith(CODELOAD):
            return self._codeload(raw_path, query)
        if self.enterprise:  # the API lives under /api/v3; everything else is the web UI
            if not raw_path.startswith(GHES_PREFIX + "/"):
                return self._web_page(method, raw_path, query, headers)
            raw_path = raw_path.removeprefix(GHES_PREFIX)
        path = unquote(raw_path)
        with self._lock:
            for item in list(self._later):
                item[0] -= 1
                if item[0] <= 0:
                    self._later.remove(item)
                    item[1]()
            try:
                status, payload, extra = (
                    *self._dispatch(method, raw_path, query, raw, headers),
                    {},
                )[:3]
            except Reply as reply:
                status, payload, extra = reply.status, reply.body, reply.headers
            except Exception as exc:  # a bug in the fake: answer like GitHub, keep it for the test
                self.errors.append(exc)
                status, payload, extra = 500, Reply(500, "Server Error").body, {}
            self.ledger.append((method, path, status))
            self.calls.append(Call(method, path, query, status, dict(headers.items()), url_path))
            self._used += 1
            rate = {
                "x-ratelimit-limit": "5000",
                "x-ratelimit-used": str(self._used),
                "x-ratelimit-remaining": str(max(5000 - self._used, 1)),
                "x-ratelimit-reset": str(int(time.time()) + 3600),
                "x-ratelimit-resource": "core",
            }
            if self.enterprise:
                rate["x-github-enterprise-version"] = GHES_VERSION
            return status, payload, {**rate, **extra}

    def _web_page(self, method: str, path: str, query: dict, headers) -> tuple:
        """GHES's web UI at the host's root: a missing page is a 404 HTML page."""
        with self._lock:
            self.ledger.append((method, unquote(path), 404))
            self.calls.append(Call(method, unquote(path), query, 404, dict(headers.items()), path))
        return 404, Html(WEB_NOT_FOUND), {"Content-Type": "text/html; charset=utf-8"}

    def _dispatch(self, method: str, raw_path: str, query: dict, raw: bytes, headers) -> tuple:
        for fault in self._faults:
            if (
                fault.calls > 0
                and fault.method in (None, method)
                and (fault.path is None or re.search(fault.path, raw_path))
            ):
                fault.calls -= 1
                if fault.applied:
                    self._route(method, raw_path, query, raw, headers)
                raise fault.reply
        return self._route(method, raw_path, query, raw, headers)

    def _route(self, method: str, raw_path: str, query: dict, raw: bytes, headers) -> tuple:
        for verb, pattern, route in _ROUTES:
            match = pattern.fullmatch(raw_path.rstrip("/"))
            if match and verb == method:
                name = route
                break
        else:
            raise Reply(404, "Not Found")
        target, *args = [unquote(a) for a in match.groups()]
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            raise Reply(400, "Problems parsing JSON") from None
        handler = getattr(self, f"_{name}")
        if name in ("installation", "access_token", "app_info", "installations"):
            return handler(self._app(headers), target)
        if name in ("user", "rate_limit_status"):
            return handler(self._grant(headers))
        repo = self._authorize(headers, target)
        if method in repo.forbidden or not self._permitted(headers, name):
            raise Reply(403, "Resource not accessible by integration")
        return handler(repo, *args, query=query, body=body)

    def _permitted(self, headers, route: str) -> bool:
        return github_rules.permitted(self._grant(headers).permissions, route)

    def _grant(self, headers) -> Grant:
        credential = (headers.get("Authorization") or "").partition(" ")[2]
        if not credential:
            raise Reply(401, "Requires authentication")
        grant = self._grants.get(credential)
        if grant is None or grant.expires < time.time():
            raise Reply(401, "Bad credentials")
        return grant

    def _authorize(self, headers, full_name: str) -> FakeRepo:
        grant = self._grant(headers)
        repo = self._repos.get(full_name.lower())
        if repo is None or (grant.repos is not None and full_name.lower() not in grant.repos):
            raise Reply(404, "Not Found")  # GitHub hides what a token may not see
        return repo

    def _app(self, headers) -> _App:
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        try:
            app = self._apps[str(jwt.decode(token, options={"verify_signature": False})["iss"])]
            claims = jwt.decode(
                token,
                app.public_key,
                algorithms=["RS256"],
                options={"require": ["exp", "iat", "iss"]},
            )
        except jwt.ImmatureSignatureError:  # PyJWT's own iat check
            raise Reply(401, github_rules.BAD_IAT) from None
        except jwt.ExpiredSignatureError:
            raise Reply(
                401,
                "'Expiration time' claim ('exp') must be a numeric value "
                "representing the future time at which the assertion expires",
            ) from None
        except (jwt.PyJWTError, KeyError):
            raise Reply(401, "A JSON web token could not be decoded") from None
        if claims["iat"] > time.time():
            raise Reply(401, github_rules.BAD_IAT)
        too_long = claims["exp"] - claims["iat"] > github_rules.JWT_LIFETIME
        if scheme.lower() != "bearer" or claims["exp"] - time.time() > 600 or too_long:
            raise Reply(401, "'Expiration time' claim ('exp') is too far in the future")
        return app

    # -- who is calling (what `manage.py check_providers` asks) ---------------------------
    def _user(self, grant: Grant) -> tuple:
        """GET /user: the token's user. An installation token is not a user: 403
        "Resource not accessible by integration" (docs.github.com/rest/users/users)."""
        if grant.installation is not None:
            raise Reply(403, "Resource not accessible by integration")
        user = {"login": "fake-user", "id": 4242, "type": "User"}
        scopes = {} if self.token_scopes is None else {"x-oauth-scopes": self.token_scopes}
        return 200, user, scopes

    def _rate_limit_status(self, grant: Grant) -> tuple:
        core = {"limit": 5000, "used": self._used, "remaining": 5000 - self._used, "reset": 0}
        return 200, {"resources": {"core": core}, "rate": core}

    def _app_info(self, app: _App, _target: str) -> tuple:
        """GET /app (JWT): the App itself."""
        owner = {"login": "acme", "type": "Organization"}
        return 200, {
            "id": int(app.app_id),
            "slug": f"amtp-{app.app_id}",
            "owner": owner,
            "name": f"AMTP {app.app_id}",
            "permissions": {"contents": "write"},
        }

    def _installations(self, app: _App, _target: str) -> tuple:
        """GET /app/installations (JWT): where the App is installed."""
        rows = []
        for inst_id, (repos, perms) in app.installations.items():
            owner = sorted(repos)[0].split("/")[0] if repos else "nobody"
            rows.append(
                {
                    "id": inst_id,
                    "app_id": int(app.app_id),
                    "permissions": perms,
                    "account": {"login": owner, "type": "Organization"},
                    "target_type": "Organization",
                    "repository_selection": "selected",
                }
            )
        return 200, rows

    # -- GitHub Apps --------------------------------------------------------------------
    def _installation(self, app: _App, full_name: str) -> tuple:
        for inst_id, (repos, perms) in app.installations.items():
            if full_name.lower() in repos and full_name.lower() in self._repos:
                account = {"login": full_name.split("/")[0], "type": "Organization"}
                return 200, {
                    "id": inst_id,
                    "app_id": int(app.app_id),
                    "account": account,
                    "target_type": "Organization",
                    "permissions": perms,
                    "repository_selection": "selected",
                    "access_tokens_url": f"{self.url}/app/installations/{inst_id}/access_tokens",
                }
        raise Reply(404, "Not Found")

    def _access_token(self, app: _App, installation: str) -> tuple:
        if int(installation) not in app.installations:
            raise Reply(404, "Not Found")
        repos, perms = app.installations[int(installation)]
        token, expires = "ghs_" + secrets.token_hex(18), time.time() + self.token_ttl
        self._grants[token] = Grant(set(repos), expires, int(installation), dict(perms))
        self.issued_tokens.append(token)
        return 201, {
            "token": token,
            "expires_at": _iso(expires),
            "permissions": perms,
            "repository_selection": "selected",
        }

    # -- repository, branches, refs -----------------------------------------------------
    def _repo(self, repo: FakeRepo, **_) -> tuple:
        return 200, repo.repo_json(self.url)

    def _branch(self, repo: FakeRepo, name: str, **_) -> tuple:
        if f"refs/heads/{name}" not in repo.refs:
            raise Reply(404, "Branch not found")
        sha = repo.refs[f"refs/heads/{name}"]
        protected = any(fnmatch.fnmatchcase(name, p.pattern) for p in repo.protections)
        commit = {"sha": sha, "url": f"{repo.url}/commits/{sha}", "commit": repo.commit_json(sha)}
        return 200, {"name": name, "commit": commit, "protected": protected}

    def _get_ref(self, repo: FakeRepo, ref: str, **_) -> tuple:
        if f"refs/{ref}" in repo.refs:
            return 200, repo.ref_json(f"refs/{ref}")
        raise Reply(404, "Not Found")

    def _matching_refs(self, repo: FakeRepo, prefix: str, **_) -> tuple:
        return 200, [repo.ref_json(r) for r in sorted(repo.refs) if r.startswith(f"refs/{prefix}")]

    def _branch_rules(self, repo: FakeRepo, branch: str, **_) -> tuple:
        """GET rules/branches/{branch}: "all active rules that apply to the specified branch.
        The branch does not need to exist" (docs.github.com/rest/repos/rules). Rulesets only:
        classic protection is not listed."""
        rows = [
            {
                **rule,
                "ruleset_source_type": "Repository",
                "ruleset_source": repo.full_name,
                "ruleset_id": 1000 + n,
            }
            for n, p in enumerate(repo.protections)
            if p.ruleset and fnmatch.fnmatchcase(branch, p.pattern)
            for rule in p.rules
        ]
        return 200, rows

    def _guard(self, repo: FakeRepo, ref: str, *, creating: bool) -> None:
        for p in repo.protections:
            if not (ref.startswith("refs/heads/") and fnmatch.fnmatchcase(ref[11:], p.pattern)):
                continue
            refusing = p.refusing(creating)
            if refusing:
                raise self._refusal(p, ref, refusing)

    @staticmethod
    def _refusal(p: Protection, ref: str, rules: list[dict]) -> Reply:
        """The answers are documented at FakeGitHub.protect."""
        if p.answer == "opaque":
            return Reply(422, "Reference update failed", doc=CREATE_REF_DOC)
        said = [RULE_MESSAGES.get(r["type"], f"Rule {r['type']} was violated.") for r in rules]
        violations = "Repository rule violations found\n\n" + "\n\n".join(said) + "\n\n"
        if p.answer == "errors":
            error = {
                "code": "custom",
                "field": "pre_receive",
                "message": f"pre_receive {violations}",
            }
            return Reply(p.status, "Validation Failed", doc=CREATE_REF_DOC, errors=[error])
        if p.ruleset:
            return Reply(p.status, violations, doc=CREATE_REF_DOC)
        return Reply(
            p.status,
            f"Protected branch update failed for {ref}.",
            doc="https://docs.github.com/articles/about-protected-branches",
        )

    def _create_ref(self, repo: FakeRepo, body: dict, **_) -> tuple:
        ref, sha = str(body.get("ref") or ""), str(body.get("sha") or "")
        doc = f"{DOCS}/git/refs#create-a-reference"
        if not ref.startswith("refs/") or ref.count("/") < 2:
            raise Reply(422, "Reference name is invalid", doc=doc)
        if sha not in repo.objects:
            raise Reply(422, "Object does not exist", doc=doc)
        if ref in repo.refs:
            raise Reply(422, "Reference already exists", doc=doc)
        self._guard(repo, ref, creating=True)
        repo.refs[ref] = sha
        return 201, repo.ref_json(ref)

    def _update_ref(self, repo: FakeRepo, ref: str, body: dict, **_) -> tuple:
        ref, sha = f"refs/{ref}", str(body.get("sha") or "")
        doc = f"{DOCS}/git/refs#update-a-reference"
        if ref not in repo.refs:
            raise Reply(422, "Reference does not exist", doc=doc)
        if sha not in repo.objects:
            raise Reply(422, "Object does not exist", doc=doc)
        self._guard(repo, ref, creating=False)
        if not body.get("force") and not repo.is_ancestor(repo.refs[ref], sha):
            raise Reply(422, "Update is not a fast forward", doc=doc)
        repo.refs[ref] = sha
        return 200, repo.ref_json(ref)

    def _delete_ref(self, repo: FakeRepo, ref: str, **_) -> tuple:
        """DELETE git/refs/{ref} (docs.github.com/rest/git/refs#delete-a-reference): 204 No
        Content; a ref that does not exist is 422 "Reference does not exist" (the body GitHub
        sends: jcabi/jcabi-github#1335). Open PRs from a deleted branch close with it
        (docs.github.com/repositories/configuring-branches-and-merges-in-your-repository/
        managing-branches-in-your-repository/deleting-and-restoring-branches-in-a-repository).
        Protection of the deleted branch is not modelled: AMTP deletes only its own amtp/*."""
        ref = f"refs/{ref}"
        if ref not in repo.refs:
            raise Reply(422, "Reference does not exist", doc=f"{DOCS}/git/refs#delete-a-reference")
        del repo.refs[ref]
        for pr in repo.pulls:
            if pr["state"] == "open" and f"refs/heads/{pr['head']}" == ref:
                pr["state"], pr["closed"] = "closed", _iso(time.time())
        return 204, None

    # -- git objects ----------------------------------------------------------------------
    def _get_commit(self, repo: FakeRepo, sha: str, **_) -> tuple:
        return 200, repo.commit_json(sha)

    def _create_commit(self, repo: FakeRepo, body: dict, **_) -> tuple:
        doc = f"{DOCS}/git/commits#create-a-commit"
        if repo.objects.get(str(body.get("tree")), ("",))[0] != "tree":
            raise Reply(422, "Tree SHA does not exist", doc=doc)
        parents = [str(p) for p in body.get("parents") or []]
        if any(repo.objects.get(p, ("",))[0] != "commit" for p in parents):
            raise Reply(422, "Parent SHA does not exist or is not a commit object", doc=doc)
        author = body.get("author") or {}
        who = (author["name"], author["email"]) if author.get("name") else None
        sha = repo.commit(body["tree"], parents, str(body.get("message") or ""), time.time(), who)
        return 201, repo.commit_json(sha)

    def _get_tree(self, repo: FakeRepo, ish: str, query: dict, **_) -> tuple:
        try:
            tree = repo.tree_of(ish)
        except Reply:
            raise Reply(404, "Not Found") from None
        recursive = "recursive" in query  # GitHub: any value means recursive
        rows = repo.listing(tree, recursive)
        keep, size = len(rows), 0
        if recursive:  # GitHub cuts recursive listings at 100,000 entries or 7 MB
            keep = min(keep, self.max_recursive_entries)
            for i, row in enumerate(rows[:keep]):  # ~what each entry costs in the JSON answer
                size += 60 + sum(len(str(v)) + len(k) for k, v in row.items())
                if size > self.max_recursive_bytes:
                    keep = i
                    break
        return 200, {
            "sha": tree,
            "url": f"{repo.url}/git/trees/{tree}",
            "tree": rows[:keep],
            "truncated": keep < len(rows),
        }

    def _create_tree(self, repo: FakeRepo, body: dict, **_) -> tuple:
        def invalid(why: str) -> Reply:
            return Reply(422, f"Invalid tree info: {why}", doc=f"{DOCS}/git/trees#create-a-tree")

        base = body.get("base_tree")
        if base and repo.objects.get(base, ("",))[0] != "tree":
            raise invalid(f"base_tree {base} is not a tree")
        changes: dict[str, tuple[str, str] | None] = {}
        for item in body.get("tree") or []:
            path, mode = str(item.get("path") or ""), str(item.get("mode") or "")
            if not path or path.startswith("/") or ".." in path.split("/") or mode not in _MODES:
                raise invalid(f"path {path!r}, mode {mode!r}")
            if "content" in item:
                changes[path] = (mode, repo.blob(str(item["content"]).encode()))
            elif item.get("sha") is None:
                changes[path] = None
            elif mode == "160000" or repo.objects.get(item["sha"], ("",))[0] == _MODES[mode]:
                changes[path] = (mode, item["sha"])
            else:
                raise invalid(f"tree.sha {item['sha']} is not a valid {_MODES[mode]}")
        sha = repo.apply(base, changes)
        return 201, {
            "sha": sha,
            "url": f"{repo.url}/git/trees/{sha}",
            "truncated": False,
            "tree": repo.listing(sha, False),
        }

    def _get_blob(self, repo: FakeRepo, sha: str, **_) -> tuple:
        data = repo.get(sha, "blob")
        return 200, {
            "sha": sha,
            "node_id": f"B_{sha[:12]}",
            "size": len(data),
            "url": f"{repo.url}/git/blobs/{sha}",
            "encoding": "base64",
            "content": base64.encodebytes(data).decode(),
        }

    def _create_blob(self, repo: FakeRepo, body: dict, **_) -> tuple:
        content = str(body.get("content", ""))
        data = base64.b64decode(content) if body.get("encoding") == "base64" else content.encode()
        sha = repo.blob(data)
        return 201, {"sha": sha, "url": f"{repo.url}/git/blobs/{sha}"}

    def _get_tag(self, repo: FakeRepo, sha: str, **_) -> tuple:
        tag = repo.get(sha, "tag")
        obj = {
            "sha": tag["object"],
            "type": "commit",
            "url": f"{repo.url}/git/commits/{tag['object']}",
        }
        return 200, {
            "sha": sha,
            "tag": tag["tag"],
            "message": tag["message"],
            "object": obj,
            "url": f"{repo.url}/git/tags/{sha}",
        }

    def _tarball(self, repo: FakeRepo, ref: str, **_) -> tuple:
        """Download a repository archive (tar): "302 Found" to a short-lived codeload URL
        (https://docs.github.com/en/rest/repos/contents#download-a-repository-archive-tar).
        The URL carries its own token: the client follows it without its credential."""
        commit = repo.resolve(ref or repo.default_branch)
        token = uuid.uuid4().hex
        self._archives[token] = (repo.full_name, commit)
        location = f"{self.url}{CODELOAD}{repo.full_name}/legacy.tar.gz/{commit}?token={token}"
        return 302, None, {"Location": location}

    def _codeload(self, raw_path: str, query: dict) -> tuple:
        """codeload's answer: the commit's files in one top folder ``owner-repo-sha7/`` (as
        GitHub names it), modes and symlinks kept; 404 for a URL it did not hand out."""
        full_name, commit = self._archives.get(query.get("token", ""), ("", ""))
        with self._lock:
            self.ledger.append(("GET", unquote(raw_path), 200 if commit else 404))
        if not commit or not raw_path.endswith("/" + commit):
            return 404, Html("Not Found"), {"Content-Type": "text/plain"}
        top = f"{full_name.replace('/', '-')}-{commit[:7]}/"
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w:gz") as tar:
            for path, (mode, data) in sorted(self.files(full_name, commit).items()):
                info = tarfile.TarInfo(top + path)
                if mode == "120000":
                    info.type, info.linkname = tarfile.SYMTYPE, data.decode()
                    tar.addfile(info)
                    continue
                info.size, info.mode = len(data), 0o755 if mode == "100755" else 0o644
                tar.addfile(info, io.BytesIO(data))
        return 200, Archive(out.getvalue()), {"Content-Type": "application/x-gzip"}

    def _contents(self, repo: FakeRepo, path: str, query: dict, **_) -> tuple:
        commit = repo.resolve(query.get("ref") or repo.default_branch)
        found = repo.find(commit, path)
        if found is None:
            raise Reply(404, "Not Found", doc=f"{DOCS}/repos/contents#get-repository-content")

        def item(p: str, mode: str, sha: str) -> dict:
            kind = {"040000": "dir", "120000": "symlink", "160000": "submodule"}.get(mode, "file")
            size = len(repo.objects[sha][1]) if kind in ("file", "symlink") else 0
            return {
                "type": kind,
                "name": p.rsplit("/", 1)[-1],
                "path": p,
                "sha": sha,
                "size": size,
                "url": f"{repo.url}/contents/{p}?ref={commit}",
            }

        if found[0] == "040000":
            rows = repo.get(found[1], "tree")
            return 200, [item(f"{path.strip('/')}/{n}".lstrip("/"), m, s) for m, n, s in rows]
        data, out = repo.objects.get(found[1], ("", b""))[1], item(path, *found)
        small = len(data) <= 1024 * 1024  # the contents API inlines files up to 1 MB
        out.update(
            encoding="base64" if small else "none",
            content=base64.encodebytes(data).decode() if small else "",
        )
        return 200, out

    # -- pull requests --------------------------------------------------------------------
    def _list_pulls(self, repo: FakeRepo, query: dict, **_) -> tuple:
        """GET pulls (docs.github.com/rest/pulls/pulls#list-pull-requests): ``state`` open (the
        default), closed or all; ``base`` a branch name; ``head`` in the form
        ``user:ref-name``. GitHub ignores a ``head`` without the owner and lists every pull
        request (github/docs#16647, PyGithub/PyGithub#1566), so a client that forgets it
        finds the wrong one here too."""
        state, head, base = query.get("state", "open"), query.get("head"), query.get("base")
        head = head if head and ":" in head else None
        return 200, [
            repo.pull_json(pr, self.url)
            for pr in repo.pulls
            if state in ("all", pr["state"])
            and base in (None, pr["base"])
            and head in (None, f"{repo.owner}:{pr['head']}")
        ]

    def _get_pull(self, repo: FakeRepo, number: str, **_) -> tuple:
        for pr in repo.pulls:
            if pr["number"] == int(number):
                return 200, repo.pull_json(pr, self.url)
        raise Reply(404, "Not Found")

    def _create_pull(self, repo: FakeRepo, body: dict, **_) -> tuple:
        head = str(body.get("head") or "").split(":")[-1]
        base = str(body.get("base") or "")
        head_sha, base_sha = (
            repo.refs.get(f"refs/heads/{head}"),
            repo.refs.get(f"refs/heads/{base}"),
        )
        for field, sha in (("base", base_sha), ("head", head_sha)):
            if sha is None:
                self._invalid_pull({"resource": "PullRequest", "field": field, "code": "invalid"})
        for pr in repo.pulls:
            if pr["state"] == "open" and (pr["head"], pr["base"]) == (head, base):
                message = f"A pull request already exists for {repo.owner}:{head}."
                self._invalid_pull(
                    {"resource": "PullRequest", "code": "custom", "message": message}
                )
        if repo.is_ancestor(head_sha, base_sha):
            message = f"No commits between {base} and {head}"
            self._invalid_pull({"resource": "PullRequest", "code": "custom", "message": message})
        draft = self._draft_rule(repo, body)
        pr = {
            "number": len(repo.pulls) + 1,
            "state": "open",
            "title": body.get("title"),
            "body": body.get("body"),
            "draft": draft,
            "labels": [],
            "head": head,
            "base": base,
            "head_sha": head_sha,
            "base_sha": base_sha,
            "created": _iso(time.time()),
        }
        repo.pulls.append(pr)
        return 201, repo.pull_json(pr, self.url)

    def _update_pull(self, repo: FakeRepo, number: str, body: dict, **_) -> tuple:
        """PATCH pulls/{n} (docs.github.com/rest/pulls/pulls#update-a-pull-request): title,
        body, state ``open`` or ``closed``; 200 with the pull request. Another state is 422
        Validation Failed naming the field; reopening a PR whose head branch is gone is 422."""
        pr = next((p for p in repo.pulls if p["number"] == int(number)), None)
        if pr is None:
            raise Reply(404, "Not Found")
        doc = f"{DOCS}/pulls/pulls#update-a-pull-request"
        state = body.get("state", pr["state"])
        if state not in ("open", "closed"):
            error = {"resource": "PullRequest", "field": "state", "code": "invalid"}
            raise Reply(422, "Validation Failed", errors=[error], doc=doc)
        if state == "open" and pr["state"] == "closed":
            if f"refs/heads/{pr['head']}" not in repo.refs:
                message = f"state cannot be changed. The {pr['head']} branch has been deleted."
                error = {"resource": "PullRequest", "code": "custom", "message": message}
                raise Reply(422, "Validation Failed", errors=[error], doc=doc)
        pr.update({k: body[k] for k in ("title", "body") if k in body})
        if state != pr["state"]:
            pr["state"], pr["closed"] = state, _iso(time.time()) if state == "closed" else None
        return 200, repo.pull_json(pr, self.url)

    @staticmethod
    def _invalid_pull(error: dict) -> None:
        raise Reply(
            422,
            "Validation Failed",
            errors=[error],
            doc=f"{DOCS}/pulls/pulls#create-a-pull-request",
        )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like api.github.com
    disable_nagle_algorithm = True  # headers and body go out at once: no 40 ms delayed-ACK stalls
    fake: FakeGitHub

    def _serve(self) -> None:
        path, _, qs = self.path.partition("?")
        query = dict(parse_qsl(qs, keep_blank_values=True))
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.fake._wait_if_held(self.command, unquote(path))
        status, payload, headers = self.fake.handle(self.command, path, query, raw, self.headers)
        if isinstance(payload, Archive):
            data = bytes(payload)
        elif isinstance(payload, Html):
            data = payload.encode()
        else:
            data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        for key, value in {"Content-Type": "application/json; charset=utf-8", **headers}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        try:
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # its client went away while the request was held: nobody to answer

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # tests want a quiet server
        pass
