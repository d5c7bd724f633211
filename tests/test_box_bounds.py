"""The hostile corpus, host resources: specs that try to exhaust the worker's host through the
real box (bubblewrap, its cgroup and tmpfs, the seccomp filter, the proxy).

Each case runs VerifyTests' engine with small caps, so it meets them in seconds; it prints what
the host lost at worst while it ran (memory, disk and inodes under /tmp, this worker's threads)
next to the box's own high-water mark, checks the run ended with its reason, and that the next
run on the same worker passes. Longer versions at the default caps: scripts/hostile_box.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time

import pytest

from tests import test_sandbox
from tests.test_sandbox import assert_no_canary, healer, plan, run_alone
from tests.test_verify import HEADER, spec
from verification import proxy, sandbox
from verification import verify as v

app = test_sandbox.app  # the live app on loopback, a canary credential in the environment

MIB = 1 << 20
PASSING = """test('the target still answers', async ({ request }) => {
  expect((await request.get('/login')).ok()).toBeTruthy();
});
"""


def _meminfo(key: str) -> int:
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _threads() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


class HostWatch(threading.Thread):
    """Samples the host while a case runs: the least memory available, the least space and
    inodes free where the boxes live (the temporary folder), the most threads of this worker."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.before = self._sample()
        self.worst = dict(self.before)

    def _sample(self) -> dict:
        disk = os.statvfs("/tmp")
        return {
            "memory": _meminfo("MemAvailable"),
            "disk": disk.f_bavail * disk.f_frsize,
            "inodes": disk.f_favail,
            "threads": _threads() - 1,  # not this sampler
        }

    def run(self) -> None:
        while not self.stop.wait(0.05):
            now = self._sample()
            for key in ("memory", "disk", "inodes"):
                self.worst[key] = min(self.worst[key], now[key])
            self.worst["threads"] = max(self.worst["threads"], now["threads"])

    def __enter__(self) -> HostWatch:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.join()

    def lost(self) -> dict:
        return {
            "memory_mib": (self.before["memory"] - self.worst["memory"]) / MIB,
            "disk_mib": (self.before["disk"] - self.worst["disk"]) / MIB,
            "inodes": self.before["inodes"] - self.worst["inodes"],
            "threads": self.worst["threads"] - self.before["threads"],
        }


@pytest.fixture
def boxes(monkeypatch):
    """The Outcome of every box run (a spy around the real ``Box.run``) and every proxy."""
    seen = {"outcomes": [], "proxies": []}
    real_run, real_init = sandbox.Box.run, proxy.ProxyServer.__init__

    def run(self, *args, **kwargs):
        outcome = real_run(self, *args, **kwargs)
        seen["outcomes"].append(outcome)
        return outcome

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        seen["proxies"].append(self)

    monkeypatch.setattr(sandbox.Box, "run", run)
    monkeypatch.setattr(proxy.ProxyServer, "__init__", init)
    return seen


@pytest.fixture
def small(settings):
    """Caps a hostile spec meets in seconds (the defaults hold the same way, later)."""
    settings.AMTP_SANDBOX_DISK_BYTES = 64 * MIB
    settings.AMTP_SANDBOX_DISK_INODES = 5_000
    settings.AMTP_SANDBOX_BOX_MEMORY_BYTES = 768 * MIB
    settings.AMTP_SANDBOX_BOX_PROCESSES = 256
    settings.AMTP_PROXY_MAX_CONNECTIONS = 32
    return settings


def next_run_passes(tmp_path, url) -> None:
    folder = tmp_path / "next"
    folder.mkdir()
    report = v.verify(plan(folder, url, [spec("next", HEADER + PASSING)]), heal=healer([]))
    assert [t["status"] for t in report["tests"]] == ["passed"], report["tests"]


# One flood per bound, sized to meet the small caps in seconds; the default caps' versions
# (3 GiB, 200,000 files, four 1.5 GiB processes) are scripts/hostile_box.py's.
CASES = {
    # /dev/shm and /tmp are the one tmpfs: a file unlinked while open (no walk of the tree
    # finds it) in shared memory (the host's RAM before the box had its own) is both old escapes
    "256 MiB into /dev/shm, unlinked while open": (
        """import fs from 'node:fs';
test('fills shared memory where no walk sees it', async () => {
  const block = Buffer.alloc(1 << 20, 120);
  const fd = fs.openSync('/dev/shm/gone', 'w');
  fs.unlinkSync('/dev/shm/gone');
  for (let n = 0; n < 256; n++) fs.writeSync(fd, block);
});
""",
        "the disk cap",
    ),
    "20,000 empty files": (
        """import fs from 'node:fs';
test('floods the inodes', async () => {
  fs.mkdirSync('flood');
  for (let n = 0; n < 20000; n++) fs.writeFileSync(`flood/${n}`, '');
});
""",
        "the inode cap",
    ),
    "four 512 MiB processes": (
        """import { spawn } from 'node:child_process';
test('takes memory in four processes', async () => {
  const hog = 'const b = Buffer.alloc(512 * 1024 * 1024); b.fill(1); setTimeout(() => {}, 60000);';
  const kids = [0, 1, 2, 3].map(() => spawn('node', ['-e', hog], { stdio: 'ignore' }));
  await new Promise((resolve) => setTimeout(resolve, 20000));
  kids.forEach((kid) => kid.kill());
});
""",
        "the memory cap",
    ),
    "300 processes": (
        """import { spawn } from 'node:child_process';
test('starts 300 processes', async () => {
  for (let n = 0; n < 300; n++) spawn('sleep', ['30'], { stdio: 'ignore' }).on('error', () => {});
  await new Promise((resolve) => setTimeout(resolve, 20000));
});
""",
        "the process cap",
    ),
}
# the runner, its loader and its worker take about 40 processes and threads; RLIMIT_NPROC far
# above, so the box's cgroup meets the flood first
SETTINGS = {"300 processes": {"AMTP_SANDBOX_BOX_PROCESSES": 100, "AMTP_SANDBOX_PROCESSES": 10_000}}


def flood(tmp_path, url, case: str, body: str, cap: str, outcomes: list, memory_cap: int):
    """Run one hostile spec through the real box; print and check what it cost the host."""
    seen: list = []
    started = time.monotonic()
    with HostWatch() as host:
        report, error = run_alone(tmp_path, url, body, seen)
    took = time.monotonic() - started
    outcome = outcomes[-1]
    lost = host.lost()
    print(f"\n{case}: stopped after {took:.1f} s: {outcome.stopped!r}")
    print(f"  box peak memory {outcome.peak_memory / MIB:.0f} MiB (cap {memory_cap / MIB:.0f} MiB)")
    print("  host lost at worst: " + ", ".join(f"{k} {v:.0f}" for k, v in lost.items()))
    if report is not None and cap in ("the disk cap", "the inode cap"):
        # The write that found the tmpfs full failed at once (ENOSPC) and the box ended before
        # the watcher's next look at the tmpfs (freed again when the files closed): the cap
        # held all the same, and the failing test says so.
        assert "ENOSPC" in json.dumps(report), report
    else:
        assert report is None and cap in error, error
    assert took < 60, case
    assert outcome.peak_memory <= memory_cap
    # nothing of the flood landed on the host's disk (other processes share it: some slack)
    assert lost["disk_mib"] < 1024 and lost["inodes"] < 50_000
    assert lost["threads"] <= 8
    assert_no_canary(error, seen)


def test_each_flood_stops_at_its_cap_and_the_host_keeps_its_resources(tmp_path, app, small, boxes):
    defaults = {name: getattr(small, name) for case in SETTINGS.values() for name in case}
    for n, (case, (body, cap)) in enumerate(CASES.items()):
        folder = tmp_path / str(n)
        folder.mkdir()
        for name, value in {**defaults, **SETTINGS.get(case, {})}.items():
            setattr(small, name, value)
        flood(folder, app, case, body, cap, boxes["outcomes"], small.AMTP_SANDBOX_BOX_MEMORY_BYTES)
    for name, value in defaults.items():
        setattr(small, name, value)
    next_run_passes(tmp_path, app)  # the worker is whole again: cgroups, mounts, proxy


def test_thousands_of_idle_proxy_connections_cost_no_thread(tmp_path, app, small, boxes):
    body = """import { spawn } from 'node:child_process';
test('holds thousands of idle connections to the proxy', async () => {
  const hold = `const net = require('net'); let open = 0;
    for (let n = 0; n < 900; n++) net.connect('/run/amtp/proxy/proxy.sock')
      .on('connect', () => open++).on('error', () => {});
    setTimeout(() => { console.log('open', open); process.exit(0); }, 4000);`;
  const kids = [0, 1, 2, 3].map(() => spawn('node', ['-e', hold], { stdio: 'inherit' }));
  await Promise.all(kids.map((kid) => new Promise((resolve) => kid.on('exit', resolve))));
});
""" + PASSING.replace("the target still", "then the target still")
    seen: list = []
    with HostWatch() as host:
        report, error = run_alone(tmp_path, app, body, seen)
    lost = host.lost()
    server = boxes["proxies"][0]
    print(
        f"\n3,600 idle connections: at most {server.peak_open} open, {server.refused_busy} refused"
    )
    print("  host lost at worst: " + ", ".join(f"{k} {v:.0f}" for k, v in lost.items()))
    assert error == "", error
    statuses = {t["title"]: t["status"] for t in report["tests"]}
    assert set(statuses.values()) == {"passed"}, statuses
    # the rest met a full listen queue (EAGAIN) and never reached the proxy. How many of the
    # 3,600 attempts reach it within the spec's 4 s depends on the machine's load (434 to
    # 1,700 seen): the bound is that the cap was reached and held, under a flood several
    # times its size.
    assert server.peak_open == 32 and server.refused_busy > 3 * 32
    assert lost["threads"] <= 8  # one proxy thread and its DNS pool, whatever the flood
    assert_no_canary(report, seen)


def test_no_nested_namespace_mount_or_trace_in_the_box(tmp_path, app, boxes):
    body = """import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
const refused = (argv) => {
  try { execFileSync(argv[0], argv.slice(1), { stdio: 'pipe' }); return 'allowed'; }
  catch (e) { return String(e.stderr); }
};
test('cannot make namespaces, mount or trace', async () => {
  expect(fs.readFileSync('/proc/self/status', 'utf8')).toMatch(/Seccomp:\\s+2/);
  for (const argv of [['unshare', '--user', '--map-root-user', 'true'], ['unshare', '--net', 'true'],
                      ['unshare', '--mount', 'true'], ['unshare', '--pid', '--fork', 'true'],
                      ['mount', '-t', 'tmpfs', 'x', '/tmp']]) {
    expect(refused(argv), argv.join(' ')).not.toBe('allowed');
  }
  expect(refused(['unshare', '--user', 'true'])).toContain('Operation not permitted');
});
test('the browser still works', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Notes' })).toBeVisible();
});
"""
    report = v.verify(plan(tmp_path, app, [spec("nested", HEADER + body)]), heal=healer([]))
    statuses = {t["title"]: (t["status"], t["error"]) for t in report["tests"]}
    assert {t: s for t, (s, _) in statuses.items()} == dict.fromkeys(statuses, "passed"), statuses


def test_the_proxy_socket_is_the_box_uids_only(tmp_path):
    box = sandbox.Box()
    try:
        with proxy.serving(box.socket, proxy.Policy("http://127.0.0.1:9/", [])):
            box.hand_over()
            argv = box._argv(["true"], 5, 6, 7)
            assert str(box.proxy_dir) not in " ".join(argv) and str(box.socket) not in " ".join(
                argv
            )
            assert (box.proxy_dir.stat().st_mode & 0o777, box.socket.stat().st_mode & 0o777) == (
                0o700,
                0o600,
            )
            other = sandbox.UID_RANGE[0] - 1  # a local user that is not this box's
            probe = "import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])"
            tried = subprocess.run(
                ["setpriv", f"--reuid={other}", f"--regid={other}", "--clear-groups"]
                + ["/usr/bin/python3", "-c", probe, str(box.socket)],
                capture_output=True,
                text=True,
            )
            assert tried.returncode != 0 and "Permission denied" in tried.stderr, tried.stderr
    finally:
        box.remove()
