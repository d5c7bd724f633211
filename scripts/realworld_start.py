"""Installing and starting the real apps of tests/fixtures/realworld (scripts/realworld.py).

Each app's dependencies are installed into ``.devstack/realworld/<app>/`` (pip ``--target`` for
the Python apps, npm for the Node ones; never committed, reused while the dependency list is
unchanged), the app is copied there, built when it has a build step, and started on a free
loopback port. A starter returns ``(process, base URL)`` once the app answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".devstack" / "realworld"
FLASK = "flask==3.1.3"
# The examples of the Express repository ran on its own devDependencies: its package.json's
# versions at the vendored commit (express-session's "^1.18.1" as 1.18.2).
EXPRESS = {"express": "5.2.1"}
EXPRESS_MVC_DEPS = {
    **EXPRESS,
    "ejs": "3.1.10",
    "hbs": "4.2.1",
    "express-session": "1.18.2",
    "method-override": "3.0.0",
    "morgan": "1.11.0",
}
EXPRESS_AUTH_DEPS = {
    **EXPRESS,
    "ejs": "3.1.10",
    "express-session": "1.18.2",
    "pbkdf2-password": "1.2.1",
}
# FastAPI's security tutorial (docs_src/security/tutorial004): its imports, and uvicorn to serve.
FASTAPI_JWT = (
    "fastapi==0.165.0 pyjwt==2.10.1 pwdlib[argon2]==0.3.1 python-multipart==0.0.34 uvicorn==0.54.0"
)
# microblog v0.11's imports (its requirements.txt came with later chapters).
MICROBLOG = (
    f"{FLASK} flask-sqlalchemy==3.1.1 flask-migrate==4.1.0 flask-login==0.6.3 flask-wtf==1.3.0 "
    "email-validator==2.4.0 flask-mail==0.10.0 pyjwt==2.10.1"
)
# Fixed test accounts the script creates in the apps' own databases: test values, not secrets.
TEST_USER, TEST_PASSWORD = "amtp-bench", "realworld-bench-password"


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


def pip_deps(key: str, requirements: str) -> Path:
    """``.devstack/realworld/<key>/py``: ``requirements`` (space-separated pins) installed."""
    folder = CACHE / key / "py"
    folder.mkdir(parents=True, exist_ok=True)
    if not _stamped(folder, requirements):
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _run([*pip, "--upgrade", "--target", str(folder), *requirements.split()], folder)
        _stamp(folder, requirements)
    return folder


def app_copy(app) -> Path:
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


# --- the starters -----------------------------------------------------------------------------


def start_flaskr(app):
    """flaskr with its database initialised (its test user: ``accounts``)."""
    work, port = app_copy(app), free_port()
    env = {"PYTHONPATH": os.pathsep.join([str(pip_deps(app.key, FLASK)), str(work)])}
    flask = [sys.executable, "-m", "flask", "--app", "flaskr"]
    _run([*flask, "init-db"], work, env)
    return start([*flask, "run", "--host", "127.0.0.1", "--port", str(port)], work, port, env)


def start_microblog(app):
    """microblog with its migrations applied and no account: signing up is the app's own
    register page (CSRF-protected, an e-mail validator), left to exploration."""
    work, port = app_copy(app), free_port()
    env = {"PYTHONPATH": os.pathsep.join([str(pip_deps(app.key, MICROBLOG)), str(work)])}
    flask = [sys.executable, "-m", "flask", "--app", "microblog"]
    _run([*flask, "db", "upgrade"], work, env)
    run = [*flask, "run", "--host", "127.0.0.1", "--port", str(port)]
    return start(run, work, port, env, path="/login")


def start_django_polls(app):
    """The polls tutorial with its seed question. No login: its users vote anonymously
    (the admin is Django's own, for staff)."""
    work, port = app_copy(app), free_port()
    env = {"DJANGO_SETTINGS_MODULE": "mysite.settings"}
    manage = [sys.executable, "manage.py"]
    for step in (["migrate", "--noinput"], ["loaddata", "seed"]):
        _run([*manage, *step], work, env)
    runserver = [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"]
    return start(runserver, work, port, env, path="/polls/")


def start_fastapi_jwt(app):
    """The JSON API under uvicorn (its one user, johndoe, is in the code: fake_users_db)."""
    work, port = app_copy(app), free_port()
    env = {"PYTHONPATH": os.pathsep.join([str(pip_deps(app.key, FASTAPI_JWT)), str(work)])}
    uvicorn = [sys.executable, "-m", "uvicorn", "main:app", "--host", "127.0.0.1"]
    return start([*uvicorn, "--port", str(port)], work, port, env, path="/docs")


def _express(deps: dict[str, str]):
    """A starter for an example of the Express repository: ``index.js`` exports the app."""

    def starter(app):
        npm_deps(app.key, json.dumps({"private": True, "dependencies": deps}, indent=2))
        work, port = app_copy(app), free_port()
        listen = f"require('./index.js').listen({port}, '127.0.0.1')"
        return start(["node", "-e", listen], work, port)

    return starter


def start_static(app):
    """A single-page app as its repository ships it built (``dist/``), served as files."""
    work, port = app_copy(app), free_port()
    serve = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    return start([*serve, "--directory", str(work / "dist")], work, port)


def start_next(app):
    """`next build` then `next start` (a production server, as deployed)."""
    folder = npm_deps(app.key, (app.folder / "package.json").read_text())
    work, port = app_copy(app), free_port()
    next_bin = str(folder / "node_modules" / ".bin" / "next")
    env = {"NEXT_TELEMETRY_DISABLED": "1"}
    _run([next_bin, "build"], work, env, timeout=900)
    return start([next_bin, "start", "-p", str(port), "-H", "127.0.0.1"], work, port, env)


def start_vite(app):
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
    "express-mvc": _express(EXPRESS_MVC_DEPS),
    "nextjs-dynamic-routing": start_next,
    "react-router-auth": start_vite,
    "todomvc-es5": start_static,
    "fastapi-jwt": start_fastapi_jwt,
    "todomvc-svelte": start_static,
    "microblog": start_microblog,
    "express-auth": _express(EXPRESS_AUTH_DEPS),
    "express-web-service": _express(EXPRESS),
}


def accounts(key: str, url: str) -> None:
    """The test account the app's login recipe signs in with, made once the app answers
    (either way it was started): flaskr's registered through its own form."""
    if key == "flaskr":
        post_form(url + "/auth/register", {"username": TEST_USER, "password": TEST_PASSWORD})


def _pip(pins: str) -> tuple[str, ...]:
    return ("python -m pip install --quiet " + pins.replace("[argon2]", "'[argon2]'"),)


def _npm(deps: dict[str, str]) -> tuple[str, ...]:
    pins = " ".join(f"{name}@{version}" for name, version in deps.items())
    return (f"npm install --no-audit --no-fund --loglevel=error {pins}",)


def boot_settings() -> dict:
    """With no target URL (``realworld.py --mode booted``) AMTP finds each app's recipe in
    its files; these are the repository settings a user fills in where the files do not say
    it all (verification/boot/recipe.py applies them field by field). Most vendored folders are a
    part of a larger repository and lack its dependency list: those get the same pins the
    started mode installs. flaskr's and polls' databases need their seed commands."""
    from importlib.metadata import version  # polls: the Django the started mode runs it on

    from repositories.boot_settings import RepositoryBootSettings as Settings

    flask = "flask --app microblog"
    return {
        "flaskr": Settings(seed="flask --app flaskr init-db"),
        "django-polls": Settings(
            install=_pip(f"django=={version('django')}"),
            seed="python manage.py migrate --noinput && python manage.py loaddata seed",
            ready_path="/polls/",
        ),
        "express-mvc": Settings(install=_npm(EXPRESS_MVC_DEPS)),
        "express-auth": Settings(install=_npm(EXPRESS_AUTH_DEPS)),
        "express-web-service": Settings(install=_npm(EXPRESS)),
        # its build script (scripts/build.js) is not in the folder; dist/ is committed
        "todomvc-es5": Settings(install=("npm install --no-audit --no-fund",)),
        # its vite.config.js (the Svelte plugin) is not in the folder; dist/ is committed
        "todomvc-svelte": Settings(
            install=("npm install --no-audit --no-fund",),
            start="vite preview --host 127.0.0.1 --port 4173 --strictPort",
        ),
        # its build script's `tsc` fails as published (its tsconfig.json names
        # verbatimModuleSyntax, which its TypeScript ^4.9 does not know): vite alone builds
        "react-router-auth": Settings(install=("npm install --no-audit --no-fund", "vite build")),
        "fastapi-jwt": Settings(
            install=_pip(FASTAPI_JWT),
            start="uvicorn main:app --host 127.0.0.1 --port 8000",
            port=8000,
            ready_path="/docs",
        ),
        "microblog": Settings(
            install=_pip(MICROBLOG),
            seed=f"{flask} db upgrade",
            start=f"{flask} run --host 127.0.0.1 --port 5000",
            port=5000,
            ready_path="/login",
        ),
    }


def logins() -> dict:
    """The apps' login recipes (repository settings a user gives AMTP) and test accounts:
    flaskr's blog posts are written signed in; express-auth's one account is the one its
    login page names; fastapi-jwt's API token path and its one user (the tutorial's johndoe,
    password "secret": its docs give them). microblog has none on purpose: it offers a sign-up
    form."""
    from repositories.credentials import Credentials
    from repositories.login import ApiToken, Recipe
    from verification.login import Login

    return {
        "flaskr": Login(
            Recipe("/auth/login", "Username", "Password", "Log In", "Log Out"),
            Credentials(TEST_USER, TEST_PASSWORD),
        ),
        "express-auth": Login(
            Recipe("/login", "Username:", "Password:", "Login", "Authenticated as tj"),
            Credentials("tj", "foobar"),
        ),
        "fastapi-jwt": Login(ApiToken("/token"), Credentials("johndoe", "secret")),
    }
