"""Scale benchmark: whole runs on generated monorepos of 1k, 10k and 100k files.

Each size of ``tests/scale_repo.py``'s Next.js monorepo (30 route and page files under
``src/pages``, the rest workspace packages, tests, docs and what crawls drop) is served by the
local host (a bare git repository written with ``git fast-import``) and by the fake GitHub
(``tests/fakes/github_api.py``, real HTTP, in a process of its own). Every (size, host, depth)
runs once, cold (Valkey flushed first), through ``run_create`` and the real worker with its
process pool, offline provider. Per run it prints: passed or the error, wall time from
``run_create`` to the terminal state, the crawl stage's time, each agent's
``max_call_input_tokens``, the peak RSS of each agent process (its ``meta.peak_rss_mib``, and
sampled from ``/proc``) and of the MCP server (sampled), and the recall of route/page files (share of them whose URL a generated test visits).

    .venv/bin/python scripts/bench_scale.py [--sizes 1000,10000,100000]
        [--hosts local,github] [--depths standard,deep]

Uses its own PostgreSQL database (amtp_bench_scale, recreated), Valkey DB 12 (flushed before
every run) and task queue, and starts the embedded devstack if it is not running. See
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a plain script: make amtp_site, runs, tests importable

DB_NAME = "amtp_bench_scale"
VALKEY_DB = 12
AGENTS = ("repo_crawler", "test_case_generator", "test_engineer")
KINDS = {agent: f"{agent}_output" for agent in AGENTS}
LIMITS = {"max_call_input_tokens": 40_000, "peak_rss_mib": 1024, "recall": 0.9}


def repo_name(host: str, size: int) -> str:
    return f"scale/{host}-{size}"


# --- the fake GitHub, in a process of its own ------------------------------------------------


def _fake_main(conn, sizes: list[int]) -> None:
    from tests.fakes.github_api import FakeGitHub
    from tests.scale_repo import generate

    with FakeGitHub() as gh:
        for size in sizes:
            gh.create_repo(repo_name("github", size), generate(size))
        conn.send({"url": gh.url, "token": gh.token})
        conn.recv()  # until told to stop


def start_fake(sizes: list[int]):
    ctx = multiprocessing.get_context("spawn")
    conn, child = ctx.Pipe()
    proc = ctx.Process(target=_fake_main, args=(child, sizes), daemon=True)
    proc.start()
    return proc, conn, conn.recv()


# --- peak memory of the worker's agent processes and their MCP servers ---------------------


class PeakSampler(threading.Thread):
    """Every 0.2 s, the high-water RSS (VmHWM) of this process's descendants: agent processes
    (the worker's pool, forked from the agent template) and MCP server processes
    (``manage.py mcp_github``: none since the crawler runs its server in-process, so that
    column reads 0 and the server's memory is in the crawler's). ``take()`` returns the
    peaks since the last call. The agents' own ``meta.peak_rss_mib`` is read before the
    artifact is stored; this also sees what storing it costs."""

    def __init__(self, ignore: set[int]) -> None:
        super().__init__(daemon=True, name="peak-sampler")
        self.ignore, self.stop = ignore, threading.Event()
        self.peaks: dict[int, tuple[str, float]] = {}
        self.lock = threading.Lock()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            for pid, kind in _descendants(os.getpid(), self.ignore):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    status = Path(f"/proc/{pid}/status").read_text()
                    hwm = int(status.split("VmHWM:")[1].split()[0]) / 1024
                    with self.lock:
                        self.peaks[pid] = (kind, max(hwm, self.peaks.get(pid, (kind, 0))[1]))

    def take(self) -> dict[str, float]:
        with self.lock:
            peaks, self.peaks = self.peaks, {}
        return {
            kind: max((mib for k, mib in peaks.values() if k == kind), default=0.0)
            for kind in ("agent", "mcp")
        }


def _descendants(root: int, ignore: set[int]) -> list[tuple[int, str]]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(stat.parent.name))
    found, templates = [], set()
    queue = [(pid, root) for pid in children.get(root, [])]
    while queue:
        pid, parent = queue.pop()
        queue += [(child, pid) for child in children.get(pid, [])]
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if pid in ignore or not cmdline.startswith((b"/", b"python")):
                continue  # git, the fake GitHub
            if b"resource_tracker" in cmdline:
                continue
            if b"multiprocessing.forkserver" in cmdline and parent not in templates:
                templates.add(pid)  # the agent template; its children (same cmdline) are agents
                continue
            found.append((pid, "mcp" if b"mcp_github" in cmdline else "agent"))
    return found


# --- one run -------------------------------------------------------------------------------


def one_run(repository, depth: str, timeout: float, sampler: PeakSampler) -> dict:
    from amtp_site import valkey
    from runs.models import Run
    from runs.services import run_create
    from tests.scale_repo import recall

    valkey.client().flushdb()  # a cold crawl: nothing cached for this commit
    sampler.take()
    started = time.perf_counter()
    run = run_create(
        repository=repository, depth_level=depth, trigger=Run.Trigger.CLI, requested_by="bench"
    )
    while not run.is_terminal and time.perf_counter() - started < timeout:
        time.sleep(0.5)
        run.refresh_from_db()
    time.sleep(0.5)  # the sampler's last look at processes that just ended
    out: dict = {"status": run.status, "wall_s": time.perf_counter() - started}
    out["sampled"] = sampler.take()
    out["error"] = f"{run.error_type}: {run.error_message[:300]}" if run.error_type else ""
    crawl = run.stages.filter(name="crawl_repo").first()
    if crawl and crawl.started_at and crawl.finished_at:
        out["crawl_s"] = (crawl.finished_at - crawl.started_at).total_seconds()
    artifacts = {a.kind: a for a in run.artifacts.all()}
    for agent, kind in KINDS.items():
        meta = artifacts[kind].meta if kind in artifacts else {}
        out[agent] = {
            "tokens": meta.get("usage", {}).get("max_call_input_tokens"),
            "rss": meta.get("peak_rss_mib"),
        }
    crawler = artifacts.get(KINDS["repo_crawler"])
    if crawler:
        out["files"] = len(crawler.content["file_tree"])
    engineer = artifacts.get(KINDS["test_engineer"])
    if engineer:
        out["recall"], out["missed"] = recall(engineer.content["files"])
    return out


def row(size: int, host: str, depth: str, r: dict) -> str:
    def cell(agent: str, key: str) -> str:
        value = r.get(agent, {}).get(key)
        return "-" if value is None else f"{value:,}"

    tokens = " / ".join(cell(a, "tokens") for a in AGENTS)
    rss = " / ".join(cell(a, "rss") for a in AGENTS)
    recall = f"{r['recall']:.0%}" if "recall" in r else "-"
    sampled = r["sampled"]
    return (
        f"| {size:,} | {host} | {depth} | {r['status']} | {r['wall_s']:.1f} s | "
        f"{r.get('crawl_s', 0):.1f} s | {r.get('files', 0):,} | {tokens} | {rss} | "
        f"{sampled['agent']:.0f} / {sampled['mcp']:.0f} | {recall} |"
    )


HEADER = (
    "| files | host | depth | run | wall time | crawl stage | file_tree | "
    "max_call_input_tokens (crawler / cases / engineer) | peak RSS MiB, meta (crawler / cases "
    "/ engineer) | peak RSS MiB, sampled (agent processes / MCP server) | route/page recall |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def verdict(results: list[dict]) -> list[str]:
    """Every goal of docs/benchmarks.md (scale) that a run broke."""
    broken = []
    for label, r in results:
        if r["status"] != "passed":
            broken.append(f"{label}: {r['status']} {r['error']}")
            continue
        for agent in AGENTS:
            if (r[agent]["tokens"] or 0) > LIMITS["max_call_input_tokens"]:
                broken.append(f"{label}: {agent} max_call_input_tokens {r[agent]['tokens']}")
            if (r[agent]["rss"] or 0) > LIMITS["peak_rss_mib"]:
                broken.append(f"{label}: {agent} peak RSS {r[agent]['rss']} MiB")
        if r["sampled"]["agent"] > LIMITS["peak_rss_mib"]:
            broken.append(f"{label}: an agent process peaked at {r['sampled']['agent']:.0f} MiB")
        if r.get("recall", 0) < LIMITS["recall"]:
            broken.append(f"{label}: recall {r.get('recall', 0):.0%}, missed {r.get('missed')}")
    return broken


def prepare_local(sizes: list[int], workdir: str) -> dict[int, str]:
    from tests.gitrepo import import_git_repo
    from tests.scale_repo import generate

    return {
        size: import_git_repo(Path(workdir) / f"local-{size}.git", generate(size)) for size in sizes
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--hosts", default="local,github")
    parser.add_argument("--depths", default="standard,deep")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    hosts, depths = args.hosts.split(","), args.depths.split(",")

    fake = start_fake(sizes) if "github" in hosts else None
    github = fake[2] if fake else {"url": "", "token": ""}
    from amtp_site.scratch_stack import use_scratch_stack

    use_scratch_stack(
        database=DB_NAME,
        valkey_db=VALKEY_DB,
        AMTP_LLM_PROVIDER="offline",
        AMTP_RETRY_MAX_ATTEMPTS="3",  # a failure shows in minutes, not after 20 attempts
        AMTP_RETRY_INITIAL_S="1",
        GITHUB_API_URL=github["url"],
        GITHUB_TOKEN=github["token"],
        GITHUB_SECONDS_BETWEEN_WRITES="0",
        # The generated repositories look like apps (a package.json, a Next.js layout) but
        # are not: BootApp would try to build them and fail every run. This measures the
        # crawl and the agents' context at size; bench_boot.py measures booting.
        AMTP_BOOT_APPS="false",
    )
    from django.conf import settings

    from repositories.models import Repository
    from runs.temporal.worker_thread import WorkerThread

    settings.TEMPORAL_TASK_QUEUE = f"bench-scale-{uuid.uuid4()}"
    results = []
    sampler = PeakSampler(ignore={fake[0].pid} if fake else set())
    sampler.start()
    with tempfile.TemporaryDirectory() as workdir, WorkerThread(settings.TEMPORAL_TASK_QUEUE):
        local = prepare_local(sizes, workdir) if "local" in hosts else {}
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n\n{HEADER}")
        for size in sizes:
            for host in hosts:
                repository = Repository.objects.create(
                    full_name=repo_name(host, size), host=host, local_path=local.get(size, "")
                )
                for depth in depths:
                    result = one_run(repository, depth, args.timeout, sampler)
                    results.append((f"{size} {host} {depth}", result))
                    print(row(size, host, depth, result), flush=True)
    if fake:
        fake[1].send("stop")
        fake[0].join(30)
    broken = verdict(results)
    print(f"\nload average {os.getloadavg()[0]:.1f}")
    print("Done-when bounds: " + ("all met" if not broken else "BROKEN:\n  " + "\n  ".join(broken)))
    ratios(results)


def ratios(results: list) -> None:
    """One line per Done-when bound, for ``make bench``'s summary."""
    done = [r for _, r in results if r["status"] == "passed"]
    tokens = max((r[a]["tokens"] or 0 for r in done for a in AGENTS), default=0)
    rss = max(
        (max(r["sampled"]["agent"], *(r[a]["rss"] or 0 for a in AGENTS)) for r in done), default=0
    )
    recall = min((r.get("recall", 0) for r in done), default=0)
    print(f"RATIO scale_runs_passed: {len(done)}/{len(results)} (goal: all)")
    print(
        f"RATIO scale_max_call_input_tokens: {tokens} (goal <= {LIMITS['max_call_input_tokens']})"
    )
    print(f"RATIO scale_min_recall: {recall:.0%} (goal >= {LIMITS['recall']:.0%})")
    print(f"RATIO scale_peak_agent_rss_mib: {rss:.0f} (goal <= {LIMITS['peak_rss_mib']})")


if __name__ == "__main__":
    main()
