"""BootApp's box: real apps booted from local git repositories (installed through the
registries' proxy, then from the cache), each bad recipe's own error, isolation, and no process
left behind. Each test boots real processes in the real sandbox (bubblewrap)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from repositories.hosts.local import LocalGitHost
from tests.boot_apps import RECIPES, app_git_repo
from tests.gitrepo import make_git_repo
from verification.boot import failures
from verification.boot.app import booted, staging_maker, store, sweep_staging
from verification.boot.recipe import AppRecipe

pytestmark = pytest.mark.skipif(
    not os.path.exists("/usr/bin/bwrap"), reason="bubblewrap is a requirement of the worker"
)


@pytest.fixture(autouse=True)
def _boot_settings(settings, tmp_path):
    settings.AMTP_BOOT_CACHE_DIR = tmp_path / "cache"
    settings.AMTP_BOOT_READY_TIMEOUT_S = 60.0


def _host(path: Path, files: dict[str, str]) -> tuple[LocalGitHost, str]:
    make_git_repo(path, files)
    host = LocalGitHost("acme/app", path)
    return host, host.resolve_ref("main")


def _get(url: str) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as answer:
        return answer.status, answer.read().decode("utf-8", "replace")


def _processes_of(uid: int) -> list[str]:
    """The processes (pid: command) running as ``uid``: a box's own uid."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
        if str(uid) in uids:
            found.append(f"{pid}: {command.decode(errors='replace')}")
    return found


def _left_behind(app) -> list[str]:
    """The box's processes still there a moment after it was stopped (its PID namespace is
    torn down by the kernel after the box's first process is reaped: not at once)."""
    if not app.box.user:
        return []
    deadline = time.monotonic() + 5
    while (left := _processes_of(app.box.user["user"])) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


# One real app here: a cold install, then the install (its Python venv) restored from the cache
# into a new box. Every vendored app, the Node ones included, cold then warm:
# scripts/bench_boot.py (docs/benchmarks.md).
@pytest.mark.parametrize("name,page,marker", [("flaskr", "/auth/login", 'name="password"')])
def test_a_real_app_boots_then_boots_from_the_cache(tmp_path, name, page, marker):
    app_git_repo(name, tmp_path / name)
    host = LocalGitHost("acme/" + name, tmp_path / name)
    commit = host.resolve_ref("main")
    with booted(host, commit, RECIPES[name], {}) as first:
        status, body = _get(first.url + page)
        assert status == 200 and marker in body
        assert not first.cached and first.install_s > 0
        summary = first.summary()
        assert summary["recipe"]["start"] == RECIPES[name].start
    assert _left_behind(first) == [] and not first.box.root.exists()
    with booted(host, commit, RECIPES[name], {}) as second:
        assert second.cached
        assert second.install_s < first.install_s
        print(
            f"{name}: cold {first.install_s:.1f}+{first.boot_s:.1f} s, "
            f"warm {second.install_s:.1f}+{second.boot_s:.1f} s"
        )
        assert _get(second.url + page)[0] == 200
    assert _left_behind(second) == []


def _failing(tmp_path, recipe: AppRecipe, error: type, secrets=None) -> failures.BootFailed:
    server = "require('http').createServer((q, s) => { s.statusCode = 503; s.end('down') })"
    host, commit = _host(tmp_path / "repo", {"server.js": server + ".listen(4000)\n"})
    with pytest.raises(error) as raised, booted(host, commit, recipe, secrets or {}):
        pytest.fail("booted")
    return raised.value


def test_an_install_failure_names_its_command_exit_code_and_log(tmp_path):
    recipe = AppRecipe(
        "test", "node server.js", 4000, install=("echo no such package >&2; exit 3",)
    )
    exc = _failing(tmp_path, recipe, failures.InstallFailed)
    assert exc.details["exit_code"] == 3 and "no such package" in exc.details["log"]
    assert exc.message.startswith(
        "install command `echo no such package >&2; exit 3` (exit code 3)"
    )


def test_a_start_command_that_exits_names_its_exit_code(tmp_path, settings):
    recipe = AppRecipe("test", "echo cannot bind; exit 4", 4000)
    exc = _failing(tmp_path, recipe, failures.AppExited)
    assert exc.details == {
        "command": "echo cannot bind; exit 4",
        "exit_code": 4,
        "log": "cannot bind",
    }


def test_a_port_never_opened_and_an_app_never_ready_are_told_apart(tmp_path, settings):
    settings.AMTP_BOOT_READY_TIMEOUT_S = 2.0
    silent = _failing(tmp_path / "a", AppRecipe("test", "sleep 30", 4000), failures.PortNeverOpened)
    assert "nothing listens on port 4000" in silent.message
    # listening on another port than the recipe's: the same answer
    other = AppRecipe("test", "node server.js", 4001)
    assert "port 4001" in _failing(tmp_path / "b", other, failures.PortNeverOpened).message
    down = _failing(tmp_path / "c", AppRecipe("test", "node server.js", 4000), failures.AppNotReady)
    assert "(its last answer: 503)" in down.message and down.details["exit_code"] is None


def test_secrets_reach_the_app_but_not_its_log(tmp_path):
    secret = "s3cr3t-boot-value-0451"
    recipe = AppRecipe("test", "echo token=$API_TOKEN; exit 1", 4000, secret_env=("API_TOKEN",))
    exc = _failing(tmp_path, recipe, failures.AppExited, {"API_TOKEN": secret})
    assert "token=" in exc.details["log"] and secret not in exc.message + exc.details["log"]


def test_the_app_reaches_neither_the_worker_loopback_nor_the_internet(tmp_path):
    # the seed runs as the app would: the box's network has its own loopback, and without a
    # proxy serving its bridge (only installs get one) nothing outside
    probe = (
        "node -e \"const n=require('net');let left=2;const done=()=>--left||process.exit(7);"
        "for (const [h,p] of [['127.0.0.1', %d],['93.184.215.14',80]]) "
        "n.connect(p,h).on('connect',()=>process.exit(0)).on('error',done)\""
    )
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        recipe = AppRecipe("test", "node server.js", 4000, seed=probe % listener.getsockname()[1])
        exc = _failing(tmp_path, recipe, failures.SeedFailed)
    assert exc.details["exit_code"] == 7


def test_an_app_listening_on_ipv6_loopback_only_is_reached(tmp_path):
    server = "require('http').createServer((q, s) => s.end('<h1>six</h1>')).listen(4000, '::1')"
    host, commit = _host(tmp_path / "repo", {"server.js": server + "\n"})
    with booted(host, commit, AppRecipe("test", "node server.js", 4000), {}) as app:
        assert _get(app.url + "/") == (200, "<h1>six</h1>")


# The seed speaks each service's own protocol through the box's loopback: PostgreSQL answers
# an SSLRequest with one byte ("N": no TLS), Valkey a PING with "+PONG".
SERVICES_CHECK = r"""
const net = require('net');
const ask = (port, bytes) => new Promise((ok, no) => {
  const c = net.connect(port, '127.0.0.1', () => c.write(bytes));
  c.once('data', (d) => { ok(d.toString('latin1')); c.destroy(); });
  c.on('error', no);
});
(async () => {
  const pg = await ask(5432, Buffer.from([0, 0, 0, 8, 4, 210, 22, 47]));
  const vk = await ask(6379, 'PING\r\n');
  console.log(`pg=${pg} valkey=${vk.trim()} ${process.env.DATABASE_URL} ${process.env.REDIS_URL}`);
  process.exit(pg === 'N' && vk.startsWith('+PONG') ? 9 : 1);
})().catch((e) => { console.log(String(e)); process.exit(2); });
"""


def test_a_recipe_gets_throwaway_postgres_and_valkey_gone_with_the_box(tmp_path):
    host, commit = _host(tmp_path / "repo", {"check.js": SERVICES_CHECK})
    recipe = AppRecipe(
        "test", "sleep 30", 4000, services=("postgres", "valkey"), seed="node check.js"
    )
    # the seed exits 9 when both answered: a SeedFailed that carries what it saw
    with pytest.raises(failures.SeedFailed) as raised, booted(host, commit, recipe, {}):
        pytest.fail("booted")
    log = raised.value.details["log"]
    assert raised.value.details["exit_code"] == 9, log
    assert "pg=N valkey=+PONG postgresql://postgres@127.0.0.1:5432/app" in log
    assert "redis://127.0.0.1:6379/0" in log
    leftovers = [p for p in _processes_named(("postgres", "valkey-server")) if "amtp-box-" in p]
    assert leftovers == []


def _processes_named(names: tuple[str, ...]) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if any(name in command for name in names):
            found.append(command)
    return found


def test_a_github_repository_boots_from_its_tarball(tmp_path):
    from repositories.hosts.github import GitHubHost
    from tests.fakes.github_api import FakeGitHub

    server = "require('http').createServer((q, s) => s.end('<h1>from the tarball</h1>'))"
    files = {"server.js": server + ".listen(4000)\n", "etc-link": ("120000", "/etc/passwd")}
    with FakeGitHub() as gh:
        commit = gh.create_repo("acme/tiny", files=files)
        options = {"api_url": gh.api_url, "token": gh.token, "seconds_between_writes": None}
        host = GitHubHost("acme/tiny", **options)
        with booted(host, commit, AppRecipe("test", "node server.js", 4000), {}) as app:
            assert _get(app.url + "/") == (200, "<h1>from the tarball</h1>")
            assert not (app.box.work / "etc-link").exists()  # a link is never written
        paths = [path for _method, path, _status in gh.ledger]
        assert sum("/tarball/" in p for p in paths) == 1 and not any(
            "/git/blobs" in p for p in paths
        )
        assert ("GET", f"/_codeload/acme/tiny/legacy.tar.gz/{commit}", 200) in gh.ledger
        assert gh.errors == []


def _tarball(members: list[tuple[str, bytes | str]]) -> bytes:
    """A gzipped tar of (name, content) members; content str = a symlink's target."""
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, content in members:
            info = tarfile.TarInfo(name)
            if isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def test_a_hostile_archive_writes_only_regular_files_inside_the_box(tmp_path, settings):
    from verification.boot.app import _write_archive

    root = tmp_path / "work"
    root.mkdir()
    archive = _tarball(
        [
            ("top/ok.txt", b"fine"),
            ("top/../../escaped.txt", b"no"),
            ("top//abs/etc/x", b"no"),
            ("top/.git/config", b"no"),
            ("top/link", "/etc"),
            ("top/link/passwd", b"into the link's name: a plain folder, never the link"),
        ]
    )
    _write_archive(archive, root, 1 << 20)
    written = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert written == ["link/passwd", "ok.txt"]
    assert not (root / "link").is_symlink() and not (tmp_path / "escaped.txt").exists()
    with pytest.raises(failures.BootFailed, match="exceed the box's disk cap"):
        _write_archive(_tarball([("top/big", b"x" * 100)]), tmp_path / "other", 99)


def test_two_installs_of_one_key_at_once_store_one_whole_copy(tmp_path):
    """Two runs of a repository on one worker (or an attempt and its retry) install at once:
    each copies into a folder of its own and one rename wins, so the cache is never half a
    copy (a shared staging folder gave `Cannot find module` to every later boot)."""
    workdir = tmp_path / "app"
    for n in range(40):
        package = workdir / "node_modules" / f"pkg{n}"
        package.mkdir(parents=True)
        for m in range(10):
            (package / f"f{m}.js").write_text(f"module.exports = {n * 10 + m};\n")
    expected = sorted(p.relative_to(workdir) for p in workdir.rglob("*"))
    for round_ in range(5):
        cache = tmp_path / "cache" / f"key{round_}"
        errors = []

        def install(cache: Path, errors: list) -> None:
            try:
                store(cache, workdir, ["node_modules"])
            except Exception as exc:  # noqa: BLE001 (the test reports it)
                errors.append(exc)

        threads = [threading.Thread(target=install, args=(cache, errors)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert sorted(p.relative_to(cache) for p in cache.rglob("*")) == expected
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name.endswith(".tmp")] == []


def test_a_worker_starting_removes_the_unfinished_installs_of_a_process_that_is_gone(
    tmp_path, settings
):
    """A worker killed while it copied an install into the cache leaves its staging folder;
    the next worker to start removes it, and leaves a running process's and the cache's own."""
    settings.AMTP_BOOT_CACHE_DIR = str(tmp_path / "cache")
    gone = subprocess.Popen(["sleep", "60"])
    gone_id = staging_maker(gone.pid)
    gone.kill()
    gone.wait()
    workdir = tmp_path / "app"
    (workdir / "node_modules").mkdir(parents=True)
    (workdir / "node_modules" / "index.js").write_text("module.exports = 1;\n")
    kept = tmp_path / "cache" / "abc123"
    store(kept, workdir, ["node_modules"])
    left = tmp_path / "cache" / f"def456.{gone_id}.x1y2.tmp"
    (left / "node_modules").mkdir(parents=True)
    running = tmp_path / "cache" / f"def456.{staging_maker(os.getpid())}.z3.tmp"
    running.mkdir()
    strangers = [tmp_path / "cache" / "other.tmp", tmp_path / "cache" / "a.b-c.tmp"]
    for folder in strangers:
        folder.mkdir()

    assert sweep_staging() == [left]
    assert not left.exists() and running.is_dir() and all(f.is_dir() for f in strangers)
    assert (kept / "node_modules" / "index.js").read_text() == "module.exports = 1;\n"
