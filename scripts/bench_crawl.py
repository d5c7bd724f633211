"""Benchmark a deep crawl of a 100,000-file repository through the real MCP server.

A fake GitHub (tests/fakes/github_api.py, real HTTP on loopback) serves a generated monorepo.
The MCP server is reached as the Repo Crawler reaches it (in this process, over the MCP SDK's
in-memory transport; ``--transport stdio``: ``manage.py mcp_github`` spawned, as an external
client does) and asked what the crawler asks: the ``repo.tree`` overview (deep), the whole
tree in pages of 5,000, then a batch of ``repo.read_file`` calls: once with an empty cache,
once warm, then cold against a fake that truncates recursive tree listings (github.com's real
limits, then a lower entry limit). It prints GitHub API calls (from the fake's ledger), wall
time, peak memory and Valkey cache hits per crawl, and ``RATIO`` lines against the goals.

    .venv/bin/python scripts/bench_crawl.py [--files 100000] [--reads 20] [--truncate-at 20000]
                                            [--transport memory|stdio]

Uses its own PostgreSQL database (amtp_bench_crawl, recreated), Valkey DB 14 (flushed) and
starts the embedded devstack if it is not running; dev data is never touched. See
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import re
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a plain script: make amtp_site, agents, tests importable

REPO = "bench/monorepo"
DB_NAME = "amtp_bench_crawl"
VALKEY_DB = 14
GITHUB_MAX_ENTRIES, GITHUB_MAX_BYTES = 100_000, 7 * 1024 * 1024  # github.com's own cut-offs
UNLIMITED = 10**12
AREAS = [
    "auth",
    "billing",
    "cart",
    "checkout",
    "dashboard",
    "orders",
    "profile",
    "search",
    "settings",
    "admin",
    "catalog",
    "inventory",
    "reports",
    "messages",
    "teams",
]
WIDGETS = [
    "Button",
    "Modal",
    "Table",
    "Card",
    "Form",
    "List",
    "Header",
    "Footer",
    "Sidebar",
    "Avatar",
    "Badge",
    "Chart",
    "Tabs",
    "Toast",
    "Tooltip",
    "Menu",
]


# --- the repository -----------------------------------------------------------------------


def _ts(path: str, rng: random.Random) -> str:
    """A TypeScript-looking file of 100 B - 2 KB; the path makes every blob unique."""
    lines = [f"// {path}", "import { api } from '@acme/core';", ""]
    for i in range(rng.randint(1, 25)):
        lines.append(f"export const value{i} = (x: number) => api.get(`/v1/{i}/${{x}}`);")
    return "\n".join(lines) + "\n"


def generate_files(n: int, seed: int = 7) -> dict[str, str | bytes]:
    """A Node web app in a monorepo: ~10% the app itself (src/routes, pages, components), ~55%
    workspace packages nested 3-8 deep, tests and docs, plus what every deep crawl must drop:
    node_modules (~20%), build output, binaries and lockfiles."""
    rng = random.Random(seed)
    files: dict[str, str | bytes] = {
        "package.json": json.dumps(
            {"name": "acme-web", "scripts": {"dev": "vite"}, "workspaces": ["packages/*"]}, indent=2
        ),
        "package-lock.json": json.dumps({"lockfileVersion": 3, "packages": {}}) * 50,
        "README.md": "# Acme web\n\nnpm install && npm run dev\n",
        "tsconfig.json": '{"compilerOptions": {"strict": true, "jsx": "react-jsx"}}\n',
        "vite.config.ts": "import { defineConfig } from 'vite';\nexport default defineConfig({});\n",
        "index.html": '<div id="root"></div><script type="module" src="/src/main.tsx"></script>\n',
        "Dockerfile": "FROM node:20\nCOPY . .\nRUN npm ci && npm run build\nCMD npm start\n",
        "src/main.tsx": "import { App } from './App';\ncreateRoot(root).render(<App />);\n",
        "src/App.tsx": "export function App() { return <Router routes={routes} />; }\n",
        "src/routes/index.ts": "export const routes = [];\n",
    }
    binary = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256))

    def app(i: int) -> str:  # routes, pages, components (with their CSS), hooks
        area, widget = rng.choice(AREAS), rng.choice(WIDGETS)
        return [
            f"src/routes/{area}/{area}{i}.routes.ts",
            f"src/pages/{area}/{widget}Page{i}.tsx",
            f"src/components/{area}/{widget}/{widget}{i}.tsx",
            f"src/components/{area}/{widget}/{widget}{i}.module.css",
            f"src/hooks/use{widget}{i}.ts",
        ][i % 5]

    def package(i: int) -> str:
        # Folders cluster as in real code: three areas per package, a few levels under each.
        pkg = i % 120
        nest = [AREAS[(pkg * 3 + i // 120 % 3) % len(AREAS)]]
        nest += [("lib", "ui")[rng.randrange(2)] for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        return f"packages/pkg-{pkg:03d}/src/{'/'.join(nest)}/mod{i}.ts"

    def node_module(i: int) -> str:
        pkg = f"@scope{i % 7}/lib-{i % 90}" if i % 3 == 0 else f"dep-{i % 300}"
        return f"node_modules/{pkg}/{rng.choice(['lib', 'esm', 'cjs'])}/file{i}.js"

    def tests(i: int) -> str:
        if i % 2:
            return f"e2e/{rng.choice(AREAS)}/flow{i}.spec.ts"
        return f"packages/pkg-{i % 120:03d}/src/__tests__/mod{i}.test.ts"

    def docs(i: int) -> str:
        return f"docs/{rng.choice(AREAS)}/guide{i}.md"

    def dropped(i: int) -> str:  # build output, caches, lockfiles, minified bundles, binaries
        return [
            f"dist/assets/chunk{i}.js",
            f".next/cache/c{i}.json",
            f"coverage/lcov{i}.info",
            f"public/images/photo{i}.png",
            f"src/assets/fonts/font{i}.woff2",
            f"packages/pkg-{i % 120:03d}/dist/index{i}.js",
            f"packages/pkg-{i % 120:03d}/vendor{i}.min.js.map",
        ][i % 7]

    mix = [(app, 0.10), (node_module, 0.20), (tests, 0.06), (docs, 0.03), (dropped, 0.06)]
    plan = [(make, int(n * share)) for make, share in mix]
    plan.append((package, n - len(files) - sum(count for _, count in plan)))
    for make, count in plan:
        for _ in range(count):
            path = make(len(files))
            files[path] = binary if path.endswith((".png", ".woff2")) else _ts(path, rng)
    return files


def pick_reads(files: dict, count: int, seed: int = 7) -> list[str]:
    """What a crawler reads: manifests and entry points, then routes and pages, then sources."""
    rng = random.Random(seed)
    first = [
        "package.json",
        "README.md",
        "tsconfig.json",
        "vite.config.ts",
        "src/main.tsx",
        "src/App.tsx",
        "src/routes/index.ts",
    ]
    routes = sorted(p for p in files if p.startswith(("src/routes/", "src/pages/")))
    sources = sorted(p for p in files if p.startswith("packages/") and p.endswith(".ts"))
    more = max(count - len(first), 0)
    picked = rng.sample(routes, min(more * 2 // 3, len(routes)))
    picked += rng.sample(sources, min(more - len(picked), len(sources)))
    return (first + picked)[:count]


# --- the fake GitHub, in a process of its own (so the client's memory is the client's) ----


def _fake_main(conn, n_files: int, n_reads: int) -> None:
    from repositories.depth import min_depth_level
    from repositories.depth_names import SKIPPED_DIRS
    from tests.fakes.github_api import FakeGitHub

    started = time.perf_counter()
    files = generate_files(n_files)
    reads = pick_reads(files, n_reads)
    with FakeGitHub() as gh:
        sha = gh.create_repo(REPO, files)
        repo = gh.repo(REPO)
        listing = repo.listing(repo.tree_of(sha), True)
        # Would github.com itself cut this repository's recursive listing? (its real limits)
        auth = {"Authorization": f"token {gh.token}"}
        _, real, _ = gh.handle(
            "GET", f"/repos/{REPO}/git/trees/{sha}", {"recursive": "1"}, b"", auth
        )
        gh.max_recursive_entries = gh.max_recursive_bytes = UNLIMITED
        # tree SHA -> is it inside a folder every crawl drops (node_modules, dist, ...)?
        skipped = {
            row["sha"]: any(d in SKIPPED_DIRS for d in row["path"].split("/"))
            for row in listing
            if row["type"] == "tree"
        }
        info = {
            "url": gh.url,
            "token": gh.token,
            "sha": sha,
            "reads": reads,
            "files": len(files),
            "entries": len(listing),
            "deep_files": sum(1 for p in files if min_depth_level(p)),
            "github_truncates": real["truncated"],
            "github_keeps": len(real["tree"]),
            "seconds": time.perf_counter() - started,
        }
        del files
        conn.send(info)
        while True:
            cmd, *args = conn.recv()
            if cmd == "stop":
                break
            if cmd == "limits":
                gh.max_recursive_entries, gh.max_recursive_bytes = args
                conn.send(None)
            elif cmd == "mark":
                conn.send(len(gh.calls))
            elif cmd == "since":
                conn.send(_summarise(gh.calls[args[0] :], skipped))


def _summarise(calls, skipped: dict[str, bool]) -> dict[str, int]:
    out = {
        "total": len(calls),
        "trees_recursive": 0,
        "trees_one_level": 0,
        "trees_in_dropped_dirs": 0,
        "blobs": 0,
        "other": 0,
        "errors": 0,
    }
    for call in calls:
        out["errors"] += call.status >= 400
        tree = re.search(r"/git/trees/([0-9a-f]{40})$", call.path)
        if tree:
            out["trees_recursive" if "recursive" in call.query else "trees_one_level"] += 1
            out["trees_in_dropped_dirs"] += skipped.get(tree.group(1), False)
        elif "/git/blobs/" in call.path:
            out["blobs"] += 1
        else:
            out["other"] += 1
    return out


class FakeProcess:
    def __init__(self, n_files: int, n_reads: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_fake_main, args=(child, n_files, n_reads), daemon=True)
        self.proc.start()
        self.info = self.conn.recv()

    def ask(self, *cmd):
        self.conn.send(cmd)
        return self.conn.recv()

    def stop(self) -> None:
        self.conn.send(("stop",))
        self.proc.join(30)


# --- memory --------------------------------------------------------------------------------


def vm_hwm_mb(pid: int | str = "self") -> float:
    """Peak resident set size (VmHWM) of a live process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> None:
    """Linux resets VmHWM to the current RSS when "5" is written to clear_refs."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def mcp_server_pid() -> int:
    """Our child running ``manage.py mcp_github`` (the MCP stdio transport does not expose it)."""
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me and b"mcp_github" in cmdline:
            return int(stat.parent.name)
    raise RuntimeError("the MCP server process was not found")


# --- one crawl -----------------------------------------------------------------------------


async def _session(sha: str, reads: list[str], crawl_id: str, transport: str) -> dict:
    """What the Repo Crawler does: the overview, the whole tree in pages, then the reads. Over
    the in-memory transport to the server in this process, as the crawler does, or over stdio
    to ``manage.py mcp_github``, as an external client does."""
    from mcp import Client

    from repositories.mcp_server import READ_TOOL, TREE_TOOL, RepoServer, stdio_server_params
    from repositories.overview import MAX_PAGE_SIZE

    t0 = time.perf_counter()
    out: dict = {"errors": [], "tree_bytes": 0, "structured": 0, "entries": 0}

    async def call(client, name: str, args: dict) -> dict | None:
        result = await client.call_tool(name, {"repo": REPO, "ref": sha, **args})
        text = "".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            out["errors"].append(f"{name} {args}: {text[:200]}")
            return None
        if name == TREE_TOOL:
            out["tree_bytes"] += len(text.encode())
            if result.structured_content is not None:  # the same data a second time
                out["structured"] += 1
                out["tree_bytes"] += len(json.dumps(result.structured_content))
        return result.structured_content or json.loads(text)

    if transport == "memory":  # the same JSON-RPC session, without a second Python
        target, mode = RepoServer(crawl_id=crawl_id, allowed_repo=REPO), "legacy"
    else:
        target, mode = stdio_server_params(crawl_id=crawl_id, repo=REPO), "auto"
    async with Client(target, mode=mode, read_timeout_seconds=600) as client:
        t1 = time.perf_counter()
        out["startup_s"] = t1 - t0
        first = await call(client, TREE_TOOL, {"depth_level": "deep", "page_size": 0})
        out["overview_s"] = time.perf_counter() - t1
        out["overview_kib"] = len(json.dumps((first or {}).get("overview"))) / 1024
        pages = -(-(first or {"total": 0})["total"] // MAX_PAGE_SIZE)
        for page in range(1, pages + 1):
            args = {"depth_level": "deep", "page": page, "page_size": MAX_PAGE_SIZE}
            out["entries"] += len(
                ((await call(client, TREE_TOOL, args)) or {"entries": []})["entries"]
            )
        out["tree_s"] = time.perf_counter() - t1
        for path in reads:
            await call(client, READ_TOOL, {"path": path})
        out["reads_s"] = time.perf_counter() - t1 - out["tree_s"]
        out["tool_calls"] = 1 + pages + len(reads)
        stdio = transport == "stdio"
        out["server_peak_mb"] = vm_hwm_mb(mcp_server_pid()) if stdio else float("nan")
        t2 = time.perf_counter()
    out["shutdown_s"] = time.perf_counter() - t2  # stdio: the client closes stdin, the server exits
    out["tools_s"] = out["tree_s"] + out["reads_s"]
    return out


def crawl(fake: FakeProcess, valkey, label: str, transport: str) -> dict:
    from repositories.reader import crawl_cache_hits

    crawl_id = f"bench-{label}-{uuid.uuid4().hex[:8]}"
    mark = fake.ask("mark")
    reset_peak()
    started = time.perf_counter()
    out = asyncio.run(_session(fake.info["sha"], fake.info["reads"], crawl_id, transport))
    out["reads"] = fake.info["reads"]
    out["wall_s"] = time.perf_counter() - started
    out["client_peak_mb"] = vm_hwm_mb()
    out["api"] = fake.ask("since", mark)
    out["hits"] = crawl_cache_hits(valkey, crawl_id)
    return out


def report(label: str, r: dict) -> None:
    api = r["api"]
    print(f"\n{label}")
    print(
        f"  wall time          {r['wall_s']:7.2f} s  (session start {r['startup_s']:.2f} s, "
        f"tool calls {r['tools_s']:.2f} s: overview {r['overview_s']:.2f} s, whole tree "
        f"{r['tree_s']:.2f} s, {len(r['reads'])} reads {r['reads_s']:.2f} s; "
        f"shutdown {r['shutdown_s']:.2f} s)"
    )
    print(
        f"  deep tree entries  {r['entries']:7d}  ({r['tree_bytes'] / 2**20:.1f} MiB of tree "
        f"answers; {r['structured']} of them also as structured content; overview "
        f"{r['overview_kib']:.1f} KiB)"
    )
    print(
        f"  GitHub API calls   {api['total']:7d}  (recursive trees {api['trees_recursive']}, "
        f"one-level trees {api['trees_one_level']}, blobs {api['blobs']}, other {api['other']}"
        f"; trees inside dropped folders {api['trees_in_dropped_dirs']}; "
        f"errors {api['errors']})"
    )
    server = r["server_peak_mb"]
    print(
        f"  peak memory        client {r['client_peak_mb']:.0f} MiB"
        + ("" if server != server else f", MCP server process {server:.0f} MiB")
        + (" (the server runs in the client's process)" if server != server else "")
    )
    print(
        f"  cache hits         {r['hits']} / {r['tool_calls']} tool calls = "
        f"{r['hits'] / r['tool_calls']:.2f}"
    )
    for error in r["errors"]:
        print(f"  TOOL ERROR: {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument(
        "--truncate-at",
        type=int,
        default=20_000,
        help="max_recursive_entries of the fake for the truncated crawl",
    )
    parser.add_argument(
        "--transport",
        choices=["memory", "stdio"],
        default="memory",
        help="memory: the server in this process, as the Repo Crawler runs it (default); "
        "stdio: manage.py mcp_github in a process of its own, as an external client runs it",
    )
    args = parser.parse_args()

    from amtp_site.scratch_stack import use_scratch_stack

    use_scratch_stack(database=DB_NAME, valkey_db=VALKEY_DB)
    from django.conf import settings

    import repositories.mcp_server  # noqa: F401 -- an agent process has it preloaded too
    from amtp_site import valkey as valkey_mod
    from repositories.models import Repository

    fake = FakeProcess(args.files, args.reads)
    info = fake.info
    try:  # the MCP server inherits the environment; this process reads settings
        os.environ["GITHUB_API_URL"], os.environ["GITHUB_TOKEN"] = info["url"], info["token"]
        settings.GITHUB_API_URL, settings.GITHUB_TOKEN = info["url"], info["token"]
        Repository.objects.create(full_name=REPO, host="github")
        valkey = valkey_mod.client()
        valkey.flushdb()  # our own logical DB: a cold cache
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        print(
            f"repository {REPO}: {info['files']} files, {info['entries']} tree entries "
            f"(blobs and folders), {info['deep_files']} visible to a deep crawl; built in "
            f"{info['seconds']:.1f} s"
        )
        print(
            f"github.com's limits (100,000 entries / 7 MB) would truncate its recursive "
            f"listing: {'yes' if info['github_truncates'] else 'no'} (first "
            f"{info['github_keeps']} entries kept); lifted for the cold and warm runs"
        )
        print(f"transport: {args.transport}")
        cold = crawl(fake, valkey, "cold", args.transport)
        report("cold crawl (empty cache)", cold)
        warm = crawl(fake, valkey, "warm", args.transport)
        report("warm crawl (same commit, a new MCP server and session)", warm)

        # The fallback walk (GitHubHost._walk): first with github.com's own limits, then with
        # max_recursive_entries lowered so that subtrees are cut too.
        for entries, size, label in [
            (GITHUB_MAX_ENTRIES, GITHUB_MAX_BYTES, "github.com's limits, 100,000 entries / 7 MB"),
            (args.truncate_at, UNLIMITED, f"max_recursive_entries={args.truncate_at}"),
        ]:
            fake.ask("limits", entries, size)
            valkey.flushdb()
            report(f"cold crawl with {label}", crawl(fake, valkey, "truncated", args.transport))
        valkey.flushdb()
        print(
            f"warm / cold: wall time {cold['wall_s'] / warm['wall_s']:.1f}x faster, tool calls "
            f"{cold['tools_s'] / warm['tools_s']:.1f}x faster"
        )
        print(
            f"RATIO crawl_warm_speedup: {cold['wall_s'] / warm['wall_s']:.1f} "
            f"(cold {cold['wall_s']:.2f} s / warm {warm['wall_s']:.2f} s end to end, "
            f"{args.transport}; goal >= 10)"
        )
        print(
            f"RATIO crawl_tree_copies: {2 if cold['structured'] + warm['structured'] else 1} "
            "(copies of each tree answer: text, plus structured content if any; goal 1)"
        )
        goal = cold["api"]["trees_recursive"] + cold["api"]["trees_one_level"] == 1
        print(
            f"goal: 1 tree call per untruncated deep crawl -> "
            f"{'met' if goal else 'NOT met'} ({cold['api']['total'] - cold['api']['blobs']} "
            f"non-blob calls, {cold['api']['blobs']} blob reads); warm crawl: "
            f"{warm['api']['total']} calls; load average {os.getloadavg()[0]:.1f}"
        )
        trees = cold["api"]["trees_recursive"] + cold["api"]["trees_one_level"]
        print(f"RATIO crawl_cold_tree_calls: {trees} (goal == 1 per untruncated deep crawl)")
        print(
            f"RATIO crawl_warm_cache_hits: {warm['hits'] / warm['tool_calls']:.2f} "
            f"(goal 1.00 with 0 GitHub calls; warm crawl made {warm['api']['total']})"
        )
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
