"""An app AMTP starts itself, from its repository at the run's commit, inside the sandbox.

``booted(...)`` is a context manager: the tree written into a fresh box (read through the
repository host: libgit2 for local repositories), the recipe's install commands run in the box
with the network only to the package registries the worker itself uses (pip's index, npm's
registry, through the allow-listing proxy), or the installed dependencies restored from the
cache of an earlier install of the same lock files; the seed command; the start command; then
readiness (GET ``ready_path`` until it answers below 500). While the block runs the app answers
on a loopback port of the worker (``Booted.url``); when it ends, however it ends (an error, a
cancel), the box's session is killed and its directory removed. A worker that is killed takes
the box with it (bubblewrap's ``--die-with-parent``; the box's PID namespace dies with its first
process), so no app outlives the activity that started it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import socket
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import Popen

from django.conf import settings

from repositories.hosts.base import RepositoryHost
from repositories.paths import read_path_problem
from repositories.secrets import scrub
from verification import proxy, sandbox
from verification.boot import failures, registries, services
from verification.boot.forward import forwarding
from verification.boot.recipe import AppRecipe

ENTRY = Path(__file__).with_name("box") / "entry.mjs"
SOCKET_NAME = ".amtp-app.sock"  # in the box's work directory: the app's port, outwards
HOME_NAME = ".amtp-home"
STAGING = ".tmp"  # the suffix of an install's folder while it is copied into the cache
VENV = ".venv"  # in the app's folder: a Python recipe's packages (on the box's PATH)  # HOME in the box: package managers' own caches, never cached here
LOG_TAIL_BYTES = 4000
CRASH_LOG_LINES = 15
POLL_S = 0.2
PROBE_TIMEOUT_S = 2.0
WORKDIR_INVALID = "the recipe's workdir {workdir!r} is not a folder of the repository"
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy from env


@dataclass
class Booted:
    """A running app: where the worker reaches it, and how it got there."""

    url: str
    recipe: AppRecipe
    install_s: float
    boot_s: float
    cached: bool
    box: AppBox = field(repr=False)
    process: Popen = field(repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    start: Callable[[], Popen] | None = field(default=None, repr=False)  # the start command
    ended_at: float | None = None  # time.time() when the current process ended by itself
    restarts: int = 0
    stopping: bool = False  # stopped on purpose (a cancel): its end is no crash

    def __post_init__(self) -> None:
        self._watch()

    def _watch(self) -> None:
        """Note when the app's process ends (a crash's time: which request caused it)."""
        process = self.process

        def wait() -> None:
            process.wait()
            if self.process is process and not self.stopping:
                self.ended_at = time.time()

        threading.Thread(target=wait, name="amtp-app-exit", daemon=True).start()

    def ended(self) -> float | None:
        """When the app's process ended by itself (a time.time()), None while it runs or
        once stopped on purpose. Its watcher thread notes the moment; a process that is found
        ended before that thread ran (a busy machine) is noted now."""
        if self.ended_at is None and not self.stopping and self.process.poll() is not None:
            self.ended_at = time.time()
        return self.ended_at

    def exited(self) -> int | None:
        """The app's exit code once it has ended (None while it runs)."""
        return self.process.poll()

    def exit_note(self) -> str:
        """How the app ended: its exit code, the last lines of its log (scrubbed)."""
        code = self.process.poll()
        lines = self.log_tail().splitlines()[-CRASH_LOG_LINES:]
        said = "; the last lines of its log:\n" + "\n".join(lines) if lines else ""
        return f"exit code {code}{said}"

    def restart(self) -> None:
        """The start command again in the same box (its installed files, its services and
        its port kept: ``url`` stays), then readiness; a BootFailed when it does not come up."""
        sandbox.stop(self.process)
        began = time.monotonic()
        self.process = self.start()
        self.ended_at = None
        self._watch()
        self.restarts += 1
        _wait_ready(self)
        self.boot_s = time.monotonic() - began

    def log_tail(self) -> str:
        """The last lines of the install and app output, scrubbed of secrets."""
        return clean_tail(self.box.output_tail(LOG_TAIL_BYTES), self.secrets)

    def summary(self) -> dict:
        """What the run page shows: the recipe used, the times and the log tail."""
        return {
            "recipe": self.recipe.as_config(),
            "install_s": round(self.install_s, 2),
            "boot_s": round(self.boot_s, 2),
            "dependencies_from_cache": self.cached,
            "log_tail": self.log_tail(),
        }


class AppBox(sandbox.Box):
    """A sandbox Box whose entry also exposes the app's port as a Unix socket (box/entry.mjs)."""

    def __init__(self) -> None:
        super().__init__()
        shutil.copyfile(ENTRY, self.entry)
        self.nothing = self.root / "nothing"  # the box's runner mount: nothing of the worker's
        self.nothing.mkdir()

    def start(self, command: list[str], **kwargs) -> Popen:
        self._release()  # a restart's: the ended process' cgroup first
        return super().start(command, **kwargs)

    def inside(self, relative: str = ".") -> str:
        """A path under ``work/`` as the box's commands see it."""
        return os.path.normpath(os.path.join(self.code_dir, relative))


def clean_tail(text: str, secrets: tuple[str, ...]) -> str:
    """``text``'s last lines, without a partial first line, secrets and credentials scrubbed."""
    if len(text) >= LOG_TAIL_BYTES and "\n" in text:
        text = text.split("\n", 1)[1]
    for value in secrets:
        text = text.replace(value, "[secret]") if value else text
    return scrub(text).strip()


@contextlib.contextmanager
def booted(
    host: RepositoryHost, commit_sha: str, recipe: AppRecipe, secrets: Mapping[str, str]
) -> Iterator[Booted]:
    """The app of ``host`` at ``commit_sha`` running by ``recipe`` while the block runs;
    ``secrets`` are the values of the recipe's ``secret_env`` (given to the app only, never
    in an argument list, scrubbed from its log). A BootFailed (failures.py) when it cannot."""
    sandbox.check_available()
    box = AppBox()
    secret_values = tuple(secrets.values())
    try:
        workdir = _write_tree(host, commit_sha, box.work, recipe.workdir)
        started = time.monotonic()
        cached = _install(box, workdir, recipe, host.full_name, secret_values)
        install_s = time.monotonic() - started
        env = {**_env(box, recipe, dict(secrets)), **services.environment(recipe.services)}
        env["AMTP_FORWARDS"] = services.forwards(recipe.services, box.inside())
        with services.running(recipe.services, box.work, box.root / "services"):
            if recipe.seed:
                _run(box, recipe.seed, recipe, env, failures.SeedFailed, secret_values)
            started = time.monotonic()
            command = [box.inside(SOCKET_NAME), str(recipe.port), "sh", "-c", _in(box, recipe)]

            def start() -> Popen:
                return box.start(command, env=env, runner=box.nothing, limits=_limits())

            app = None
            process = start()
            try:
                with forwarding(box.work / SOCKET_NAME) as port:
                    url = f"http://127.0.0.1:{port}"
                    app = Booted(
                        url, recipe, install_s, 0.0, cached, box, process, secret_values, start
                    )
                    _wait_ready(app)
                    app.boot_s = time.monotonic() - started
                    yield app
            finally:
                sandbox.stop(app.process if app else process)  # a restart's, when restarted
    finally:
        box.remove()


def _write_tree(host: RepositoryHost, commit_sha: str, root: Path, workdir: str) -> Path:
    """The commit's regular files under ``root`` (unsafe paths, links and anything but a
    regular file never written): from the host's archive (GitHub's tarball: one download)
    where it offers one, else read one by one (libgit2 for a local repository)."""
    cap = settings.AMTP_SANDBOX_DISK_BYTES
    if (archive := host.archive(commit_sha, cap)) is not None:
        _write_archive(archive, root, cap)
    else:
        entries = host.tree(commit_sha)
        if (size := sum(e.size for e in entries)) > cap:
            raise _too_large(size, cap)
        for entry in entries:
            if not read_path_problem(entry.path):
                _write_file(root, entry.path, host.read_file(commit_sha, entry.path))
    folder = (root / workdir).resolve()
    if workdir != "." and (read_path_problem(workdir) or not folder.is_dir()):
        raise failures.BootFailed(
            WORKDIR_INVALID.format(workdir=workdir), command="cd " + workdir, exit_code=None, log=""
        )
    return folder


def _write_archive(archive: bytes, root: Path, cap: int) -> None:
    """A host's tarball (one top folder, GitHub's ``owner-repo-sha7/``) under ``root``."""
    written = 0
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar:
            path = member.name.partition("/")[2]
            if not member.isreg() or not path or read_path_problem(path):
                continue
            written += member.size
            if written > cap:
                raise _too_large(written, cap)
            source = tar.extractfile(member)
            _write_file(root, path, source.read() if source else b"")


def _write_file(root: Path, path: str, data: bytes) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _too_large(size: int, cap: int) -> failures.BootFailed:
    return failures.BootFailed(
        f"the commit's files ({size} bytes) exceed the box's disk cap "
        f"(AMTP_SANDBOX_DISK_BYTES, {cap} bytes)",
        command="checkout",
        exit_code=None,
        log="",
    )


def _in(box: AppBox, recipe: AppRecipe, command: str | None = None) -> str:
    """The shell script that runs ``command`` (the start command) from the recipe's workdir."""
    return f"cd {_quote(box.inside(recipe.workdir))} && {command or recipe.start}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _limits() -> sandbox.Limits:
    return sandbox.Limits.from_settings()


def _env(box: AppBox, recipe: AppRecipe, secrets: dict[str, str]) -> dict[str, str]:
    """The box's whole environment: nothing of the worker's but what is named here."""
    workdir = box.inside(recipe.workdir)
    path = [f"{workdir}/node_modules/.bin", f"{workdir}/{VENV}/bin", "/usr/local/bin", "/usr/bin"]
    return {
        "PATH": ":".join([*path, "/bin"]),
        "HOME": box.inside(HOME_NAME),
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PORT": str(recipe.port),
        "HOST": "127.0.0.1",
        "NODE_ENV": "production",
        **dict(recipe.env),
        **secrets,
    }


def cache_dir(recipe: AppRecipe, workdir: Path, repository: str) -> Path:
    """Where the dependencies installed for this repository, these install commands and these
    lock files' contents are kept (the repository's name in the key: one repository's install
    never feeds another's app)."""
    digest = hashlib.sha256()
    key = {"repository": repository, "install": recipe.install, "workdir": recipe.workdir}
    digest.update(json.dumps(key, sort_keys=True).encode())
    for name in sorted(recipe.lock_files):
        lock = workdir / name
        digest.update(name.encode() + b"\0")
        digest.update(lock.read_bytes() if lock.is_file() else b"<absent>")
    return Path(settings.AMTP_BOOT_CACHE_DIR) / digest.hexdigest()


def _install(box: AppBox, workdir: Path, recipe: AppRecipe, repository: str, secrets) -> bool:
    """Run the install commands (or restore their result); True when it came from the cache."""
    if not recipe.install:
        _closed_socket(box.socket)
        return False
    cache = cache_dir(recipe, workdir, repository)
    if cache.is_dir():
        for entry in cache.iterdir():
            _copy(entry, workdir / entry.name)
        _closed_socket(box.socket)
        return True
    before = set(os.listdir(workdir))
    policy = proxy.Policy(*registries.allowed())
    env = {**_env(box, recipe, {}), **registries.environment()}
    if "NODE_ENV" not in dict(recipe.env):
        # Unset, as on a CI runner: npm installs the devDependencies a build needs, and the
        # build picks its own mode (`next build` fails to prerender under "development").
        del env["NODE_ENV"]
    with proxy.serving(box.socket, policy):
        for command in (*_python_venv(recipe, workdir), *recipe.install):
            _run(box, command, recipe, env, failures.InstallFailed, secrets)
    made = sorted(set(os.listdir(workdir)) - before - {SOCKET_NAME, HOME_NAME})
    store(cache, workdir, made)
    return False


def store(cache: Path, workdir: Path, names: list[str]) -> None:
    """``names`` of ``workdir`` into ``cache``, whole or not at all: copied into a folder of
    this call's own, then renamed. Two installs of one key at once (two runs of a repository
    on one worker, or a retried attempt beside the one it replaces) each copy their own; the
    first rename wins, and no app is ever given half a copy."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    prefix = f"{cache.name}.{staging_maker(os.getpid())}."  # for sweep_staging()
    staging = Path(tempfile.mkdtemp(prefix=prefix, suffix=STAGING, dir=cache.parent))
    try:
        for name in names:
            _copy(workdir / name, staging / name)
        with contextlib.suppress(OSError):  # another install stored the same key first
            staging.rename(cache)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def sweep_staging() -> list[Path]:
    """Remove the staging folders (``<key>.<pid>-<start>.<random>.tmp``) of installs whose
    process is gone: a worker killed while it copied an install into the cache never ran
    :func:`store`'s clean-up. Those of processes still running (another worker's) are left.
    A worker calls this as it starts; the removed ones."""
    removed = []
    for folder in Path(settings.AMTP_BOOT_CACHE_DIR).glob(f"*{STAGING}"):
        try:
            maker = folder.name.split(".")[1]
            gone = staging_maker(int(maker.partition("-")[0])) != maker
        except (ValueError, IndexError):
            continue  # not one of ours
        if gone:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def staging_maker(pid: int) -> str:
    """How a staging folder names the process that makes it: its pid and start time
    (``sandbox.process_id``), "-" between them ("" once it is gone)."""
    return sandbox.process_id(pid).replace(" ", "-")


def _python_venv(recipe: AppRecipe, workdir: Path) -> tuple[str, ...]:
    """A venv in the app's folder for a Python recipe, made before its install: the box's
    python3 is Debian's, which refuses ``pip install`` (PEP 668), and ``python`` then names
    the venv's (its ``bin`` is first on the box's PATH), as setup-python gives a CI job one.
    The venv is part of the install, cached with it."""
    if not recipe.uses_python or (workdir / VENV).exists():
        return ()
    return (f"python3 -m venv {VENV}",)


def _copy(source: Path, target: Path) -> None:
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copy2(source, target, follow_symlinks=False)


def _closed_socket(path: Path) -> None:
    """A socket file nobody listens on: the box's way out (its proxy bridge) leads nowhere."""
    if not path.exists():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as closed:
            closed.bind(str(path))


def _run(box: AppBox, command: str, recipe, env, error: type, secrets) -> None:
    """Run one install or seed command to its end in the box; ``error`` when it fails."""
    outcome = box.run(
        ["-", "0", "sh", "-c", _in(box, recipe, command)],
        env=env,
        runner=box.nothing,
        limits=_limits(),
        wall_s=settings.AMTP_BOOT_INSTALL_TIMEOUT_S,
    )
    if outcome.returncode != 0 or outcome.stopped:
        tail = clean_tail(box.output_tail(LOG_TAIL_BYTES), secrets)
        problem = outcome.stopped or "failed"
        raise error(problem, command=command, exit_code=outcome.returncode, log=tail)


def _wait_ready(app: Booted) -> None:
    """Until ``ready_path`` answers below 500: AppExited, AppNotReady or PortNeverOpened."""
    recipe = app.recipe
    limit = settings.AMTP_BOOT_READY_TIMEOUT_S
    deadline = time.monotonic() + limit
    answered: int | None = None  # the last status the app answered with
    while time.monotonic() < deadline:
        if (code := app.exited()) is not None:
            raise failures.AppExited(
                f"ended before answering on port {recipe.port}",
                command=recipe.start,
                exit_code=code,
                log=app.log_tail(),
            )
        status = _probe(app.url + recipe.ready_path)
        if status is not None and status < 500:
            return
        answered = status if status is not None else answered
        time.sleep(POLL_S)
    if answered is None:
        raise failures.PortNeverOpened(
            f"still running after {limit:.0f} s, but nothing listens on port {recipe.port}",
            command=recipe.start,
            exit_code=None,
            log=app.log_tail(),
        )
    raise failures.AppNotReady(
        f"GET {recipe.ready_path} on port {recipe.port} did not answer below 500 within "
        f"{limit:.0f} s (its last answer: {answered})",
        command=recipe.start,
        exit_code=None,
        log=app.log_tail(),
    )


def _probe(url: str) -> int | None:
    """The HTTP status ``url`` answers with, or None when nothing answered."""
    try:
        with _DIRECT.open(url, timeout=PROBE_TIMEOUT_S) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):  # refused, reset, closed before a status line, timed out
        return None
