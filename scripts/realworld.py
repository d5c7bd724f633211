"""Real apps: AMTP's offline engine against small open-source apps, each started live
(docs/benchmarks.md, "`realworld.py`: real apps").

The apps are vendored under ``tests/fixtures/realworld/`` with their licences (each folder's
README.md names the repository, path and commit). Each has a hand-written ``routes.json``:
the routes a person reading the app lists. For each app this script installs what the app
needs into ``.devstack/realworld/`` (pip for Flask, npm for the Node apps; never committed,
reused while the dependency list is unchanged), copies the app there, builds it when it has a
build step, starts it on a free loopback port and then measures it as
``bench_grounding.py`` does: the offline crawl of the app's files (all but ``routes.json`` and
the provenance README), ExploreApp against the live app, the offline cases and spec files at
``standard``, VerifyTests with one healing round. It prints per app: routes of the list named
in a generated test, flows generated (and passing), first-attempt and after-heal pass rates,
and tests that failed or were quarantined without a reason; then a total.

Each app runs in a child process of its own session with a time limit (``--timeout``); on
expiry the whole session (the app's server, the browsers) is killed and the app is reported
as timed out.

    .venv/bin/python scripts/realworld.py [--apps flaskr,express-mvc] [--timeout 900]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.realworld_apps import REALWORLD, app_repository  # noqa: E402

CACHE = ROOT / ".devstack" / "realworld"
FLASK = "flask==3.1.3"
# examples/mvc ran on the Express repository's own devDependencies: its package.json's
# versions at the vendored commit (express-session's "^1.18.1" as 1.18.2).
EXPRESS_MVC_DEPS = {
    "express": "5.2.1",
    "ejs": "3.1.10",
    "hbs": "4.2.1",
    "express-session": "1.18.2",
    "method-override": "3.0.0",
    "morgan": "1.11.0",
}
# Fixed test accounts the script creates in the apps' own databases: test values, not secrets.
TEST_USER, TEST_PASSWORD = "amtp-bench", "realworld-bench-password"


@dataclass
class RealApp:
    key: str
    name: str
    routes: list[dict] = field(default_factory=list)
    forms: list[dict] = field(default_factory=list)  # the forms a user fills (routes.json)
    repo: dict[str, str] = field(default_factory=dict)
    login: object = None  # a runs.verification.login.Login, or None

    @property
    def folder(self) -> Path:
        return REALWORLD / self.key


KEYS = ("flaskr", "django-polls", "express-mvc", "nextjs-dynamic-routing", "react-router-auth")


def load(key: str) -> RealApp:
    meta = json.loads((REALWORLD / key / "routes.json").read_text())
    return RealApp(key, meta["app"], meta["routes"], meta["forms"], app_repository(key))


# --- starting the apps ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(command: list[str], cwd: Path, env: dict | None = None, timeout: float = 600) -> None:
    """Run a setup step; on failure raise with the tail of its output."""
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode:
        tail = (done.stdout + done.stderr)[-2000:]
        raise RuntimeError(f"{' '.join(command[:3])} exited {done.returncode}: {tail}")


def _stamped(folder: Path, spec: str) -> bool:
    stamp = folder / ".installed"
    digest = hashlib.sha256(spec.encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return True
    stamp.unlink(missing_ok=True)
    return False


def _stamp(folder: Path, spec: str) -> None:
    (folder / ".installed").write_text(hashlib.sha256(spec.encode()).hexdigest())


def npm_deps(key: str, package_json: str) -> Path:
    """``.devstack/realworld/<key>/`` with ``node_modules`` installed from ``package_json``."""
    folder = CACHE / key
    folder.mkdir(parents=True, exist_ok=True)
    if not _stamped(folder, package_json):
        (folder / "package.json").write_text(package_json)
        _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], folder)
        _stamp(folder, package_json)
    return folder


def pip_deps(key: str, requirement: str) -> Path:
    folder = CACHE / key / "py"
    folder.mkdir(parents=True, exist_ok=True)
    if not _stamped(folder, requirement):
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _run([*pip, "--upgrade", "--target", str(folder), requirement], folder)
        _stamp(folder, requirement)
    return folder


def app_copy(app: RealApp) -> Path:
    """A fresh copy of the app beside its installed dependencies (builds write into it)."""
    work = CACHE / app.key / "app"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(app.folder, work, ignore=shutil.ignore_patterns("__pycache__", ".ruff_cache"))
    return work


def wait_up(process: subprocess.Popen, url: str, log: Path, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app exited {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError as answer:
            if answer.code < 500:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the app did not answer at {url} within {seconds:.0f} s")


def start(command: list[str], cwd: Path, port: int, env: dict | None = None, path: str = "/"):
    """Start the app's server; (process, base URL) once it answers."""
    log = cwd.parent / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(process, url + path, log)
    except BaseException:
        stop(process)
        raise
    return process, url


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def post_form(url: str, data: dict) -> None:
    body = urllib.parse.urlencode(data).encode()
    try:
        urllib.request.urlopen(urllib.request.Request(url, body, method="POST"), timeout=10)
    except urllib.error.HTTPError as answer:
        if answer.code >= 400:
            raise


def start_flaskr(app: RealApp):
    """flaskr with its database initialised and a registered test user to log in as."""
    work, port = app_copy(app), free_port()
    env = {"PYTHONPATH": os.pathsep.join([str(pip_deps(app.key, FLASK)), str(work)])}
    flask = [sys.executable, "-m", "flask", "--app", "flaskr"]
    _run([*flask, "init-db"], work, env)
    process, url = start(
        [*flask, "run", "--host", "127.0.0.1", "--port", str(port)], work, port, env
    )
    post_form(url + "/auth/register", {"username": TEST_USER, "password": TEST_PASSWORD})
    return process, url


def start_django_polls(app: RealApp):
    """The polls tutorial with its seed question. No login: its users vote anonymously
    (the admin is Django's own, for staff)."""
    work, port = app_copy(app), free_port()
    env = {"DJANGO_SETTINGS_MODULE": "mysite.settings"}
    manage = [sys.executable, "manage.py"]
    for step in (["migrate", "--noinput"], ["loaddata", "seed"]):
        _run([*manage, *step], work, env)
    runserver = [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"]
    return start(runserver, work, port, env, path="/polls/")


def start_express_mvc(app: RealApp):
    deps = json.dumps({"private": True, "dependencies": EXPRESS_MVC_DEPS}, indent=2)
    npm_deps(app.key, deps)
    work, port = app_copy(app), free_port()
    listen = f"require('./index.js').listen({port}, '127.0.0.1')"
    return start(["node", "-e", listen], work, port)


def start_next(app: RealApp):
    """`next build` then `next start` (a production server, as deployed)."""
    folder = npm_deps(app.key, (app.folder / "package.json").read_text())
    work, port = app_copy(app), free_port()
    next_bin = str(folder / "node_modules" / ".bin" / "next")
    env = {"NEXT_TELEMETRY_DISABLED": "1"}
    _run([next_bin, "build"], work, env, timeout=900)
    return start([next_bin, "start", "-p", str(port), "-H", "127.0.0.1"], work, port, env)


def start_vite(app: RealApp):
    """`vite build` then `vite preview` (serves the build, index.html for unknown paths)."""
    folder = npm_deps(app.key, (app.folder / "package.json").read_text())
    work, port = app_copy(app), free_port()
    vite = str(folder / "node_modules" / ".bin" / "vite")
    _run([vite, "build"], work)
    preview = [vite, "preview", "--host", "127.0.0.1", "--port", str(port), "--strictPort"]
    return start(preview, work, port)


STARTERS = {
    "flaskr": start_flaskr,
    "django-polls": start_django_polls,
    "express-mvc": start_express_mvc,
    "nextjs-dynamic-routing": start_next,
    "react-router-auth": start_vite,
}


def logins() -> dict:
    """The apps' login recipes (repository settings a user gives AMTP) and test accounts:
    flaskr's blog posts are written signed in; the others' pages need no account."""
    from repositories.credentials import Credentials
    from repositories.login import Recipe
    from runs.verification.login import Login

    account = Credentials(TEST_USER, TEST_PASSWORD)
    return {
        "flaskr": Login(
            Recipe("/auth/login", "Username", "Password", "Log In", "Log Out"), account
        ),
    }


# --- one app, in a child process --------------------------------------------------------------


def found(app: RealApp) -> list[str]:
    """The routes of the list that the offline crawl of the app's files finds."""
    from bench_grounding import covered
    from bench_verify import offline_crawl

    stack = offline_crawl(app.repo)["detected_stack"]
    paths = [r["path"] for r in stack["routes"]] + [p["route"] for p in stack["pages"]]
    return [r["path"] for r in covered(app.routes, {p.rstrip("/") or "/" for p in paths})]


def measure_one(key: str, depth: str) -> dict:
    from bench_grounding import measure_at  # sets up Django: only in the child

    app = load(key)
    # AMTP_REALWORLD_NO_RECIPE=1: as a user who gives no login recipe (AMTP signs up).
    app.login = None if os.environ.get("AMTP_REALWORLD_NO_RECIPE") else logins().get(key)
    began = time.monotonic()
    process, url = STARTERS[key](app)
    setup_s = time.monotonic() - began
    try:
        m = measure_at(app, url, depth)
    finally:
        stop(process)
    m["named"] = [r["path"] for r in m["named"]]
    m["passing"] = [r["path"] for r in m["passing"]]
    return {**m, "found": found(app), "setup_s": setup_s}


def child(key: str, depth: str, timeout: float) -> dict:
    """Run ``--one key`` in its own session; kill the session when it overruns."""
    command = [sys.executable, __file__, "--one", key, "--depths", depth]
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return {"error": f"timed out after {timeout:.0f} s"}
    finally:
        try:  # the app's server and browsers, should the child have left any
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if process.returncode or not lines:
        return {"error": f"exited {process.returncode}"}
    return json.loads(lines[-1][len("RESULT ") :])


# --- the table --------------------------------------------------------------------------------


def _share(count: int, total: int) -> str:
    return f"{count}/{total} ({100 * count / total:.0f}%)" if total else "0/0"


def row(app: RealApp, m: dict) -> str:
    if "error" in m:
        return f"| {app.name} | {m['error']} |" + " |" * 9
    missed = [r["path"] for r in app.routes if r["path"] not in m["named"]]
    return (
        f"| {app.name} | {_share(len(m['found']), len(app.routes))} "
        f"| {_share(len(m['named']), len(app.routes))} "
        f"| {m['flows']} ({m['flows_passing']} passing) | {m['tests']} "
        f"| {_share(m['first'], m['tests'])} | {_share(m['after'], m['tests'])} "
        f"| {len(m['unexplained'])} | {', '.join(missed) or '-'} "
        f"| {m['pages']} | {m['setup_s'] + m['explore_s'] + m['verify_s']:.0f} |"
    )


def totals(results: list[tuple[RealApp, dict]]) -> dict:
    done = [(a, m) for a, m in results if "error" not in m]
    return {
        "routes": sum(len(a.routes) for a, _ in done),
        "found": sum(len(m["found"]) for _, m in done),
        "named": sum(len(m["named"]) for _, m in done),
        "tests": sum(m["tests"] for _, m in done),
        "first": sum(m["first"] for _, m in done),
        "after": sum(m["after"] for _, m in done),
        "flows": sum(m["flows"] for _, m in done),
        "flows_passing": sum(m["flows_passing"] for _, m in done),
        "unexplained": sum(len(m["unexplained"]) for _, m in done),
        "apps": len(done),
    }


def print_results(results: list[tuple[RealApp, dict]]) -> None:
    t = totals(results)
    print(
        f"| total ({t['apps']} of {len(results)} apps) | {_share(t['found'], t['routes'])} "
        f"| {_share(t['named'], t['routes'])} "
        f"| {t['flows']} ({t['flows_passing']} passing) | {t['tests']} "
        f"| {_share(t['first'], t['tests'])} | {_share(t['after'], t['tests'])} "
        f"| {t['unexplained']} | | | |",
        flush=True,
    )
    for app, m in results:
        if "error" in m:
            print(f"RATIO realworld_{app.key}: {m['error']}")
            continue
        routes, tests = len(app.routes), m["tests"]
        first = m["first"] / tests if tests else 0.0
        print(
            f"RATIO realworld_{app.key}_routes_named: {len(m['named']) / routes:.0%} (goal >= 90%)"
        )
        print(f"RATIO realworld_{app.key}_first_attempt: {first:.0%} of {tests} (goal >= 80%)")
        if app.forms:  # at least one flow through a form passes, wherever the app has one
            print(
                f"RATIO realworld_{app.key}_passing_flows: {m['flows_passing']} "
                f"(goal >= 1; forms listed: {len(app.forms)})"
            )
        for title in m["unexplained"]:
            print(f"  failed or quarantined without a reason: {title}")
        for bad in m["not_passing"]:
            reason = bad["reason"] or "(no reason)"
            print(f"  {app.key}: {bad['status']}: {bad['title']}: {reason}")
    if t["tests"]:
        print(f"RATIO realworld_total_first_attempt: {t['first'] / t['tests']:.0%} of {t['tests']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", default="", help="comma-separated: " + ", ".join(KEYS))
    parser.add_argument("--depths", default="standard")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per app")
    parser.add_argument("--one", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(measure_one(args.one, args.depths)), flush=True)
        return 0
    keys = [k.strip() for k in args.apps.split(",") if k.strip()] or list(KEYS)
    if unknown := set(keys) - set(KEYS):
        parser.error(f"--apps: unknown {sorted(unknown)}")
    print(
        "| app | routes found | routes named in a test | flows (passing) | tests | first attempt | after healing "
        "| failed or quarantined without a reason | routes not named | pages explored | s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    results = []
    for key in keys:
        app = load(key)
        m = child(key, args.depths, args.timeout)
        print(row(app, m), flush=True)
        results.append((app, m))
    print_results(results)
    return 1 if any("error" in m for _, m in results) else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "scripts"))
    sys.exit(main())
