"""Real apps: AMTP's offline engine against small open-source apps, each started live
(docs/benchmarks.md, "`realworld.py`: real apps").

The apps are vendored under ``tests/fixtures/realworld/`` with their licences (each folder's
README.md names the repository, path and commit); ``tests/realworld_apps.py`` lists them and
marks the held-out ones (measured, never tuned on). Each has a hand-written ``routes.json``:
the routes a person reading the app lists; those with an end-to-end suite of their own have
``behaviours.yaml``, its tests listed by hand (scripts/realworld_behaviours.py). For each app
this script installs what it needs into ``.devstack/realworld/`` (realworld_start.py), starts
it on a free loopback port and then measures it as ``bench_grounding.py`` does: the offline
crawl of the app's files (all but the measures and the provenance README), ExploreApp against
the live app, the offline cases and spec files at ``standard``, VerifyTests with one healing
round. It prints per app: routes of the list named in a generated test, flows generated (and
passing), first-attempt and after-heal pass rates, the own suite's behaviours that a passing
test exercises, and tests that failed or were quarantined without a reason; then a total.

Each app runs in a child process of its own session with a time limit (``--timeout``); on
expiry the whole session (the app's server, the browsers) is killed and the app is reported
as timed out.

    .venv/bin/python scripts/realworld.py [--apps flaskr,express-mvc | --set held-out]
        [--mode started|booted|both]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from realworld_behaviours import exercised  # noqa: E402
from realworld_behaviours import load as load_behaviours  # noqa: E402
from realworld_start import STARTERS, accounts, boot_settings, logins, stop  # noqa: E402

from tests.realworld_apps import HELD_OUT, REALWORLD, SUITE, app_repository  # noqa: E402


@dataclass
class RealApp:
    key: str
    name: str
    routes: list[dict] = field(default_factory=list)
    forms: list[dict] = field(default_factory=list)  # the forms a user fills (routes.json)
    repo: dict[str, str] = field(default_factory=dict)
    login: object = None  # a verification.login.Login, or None
    held_out: bool = False  # measured, never tuned on (tests/realworld_apps.py SUITE)
    behaviours: list = field(default_factory=list)  # its own suite's (behaviours.yaml)

    @property
    def folder(self) -> Path:
        return REALWORLD / self.key


KEYS = tuple(SUITE)


def load(key: str) -> RealApp:
    meta = json.loads((REALWORLD / key / "routes.json").read_text())
    suite = REALWORLD / key / "behaviours.yaml"
    listed = load_behaviours(suite) if suite.exists() else []
    return RealApp(
        key,
        meta["app"],
        meta["routes"],
        meta["forms"],
        app_repository(key),
        None,
        SUITE[key],
        listed,
    )


# --- one app, in a child process --------------------------------------------------------------


def found(app: RealApp) -> list[str]:
    """The routes of the list that the offline crawl of the app's files finds."""
    from bench_grounding import covered
    from bench_verify import crawl

    stack = crawl(app.repo)["detected_stack"]
    paths = [r["path"] for r in stack["routes"]] + [p["route"] for p in stack["pages"]]
    return [r["path"] for r in covered(app.routes, {p.rstrip("/") or "/" for p in paths})]


@contextlib.contextmanager
def started(app: RealApp) -> Iterator[tuple[str, dict]]:
    """The app started by this script (realworld_start.py): its URL."""
    process, url = STARTERS[app.key](app)
    try:
        yield url, {}
    finally:
        stop(process)


@contextlib.contextmanager
def booted_by_amtp(app: RealApp) -> Iterator[tuple[str, dict]]:
    """The app booted as a run with no target URL boots it: the folder committed to a local
    git repository, its recipe found in its files (with the repository settings of
    realworld_start.boot_settings), installed and started in the sandbox by BootApp's
    ``booted`` (dependencies from AMTP_BOOT_CACHE_DIR once installed)."""
    from repositories.hosts.local import LocalGitHost
    from tests.gitrepo import make_git_repo
    from verification.boot.app import booted
    from verification.boot.recipe import recipe_at

    with tempfile.TemporaryDirectory(prefix="amtp-realworld-") as scratch:
        make_git_repo(Path(scratch), app.repo)
        host = LocalGitHost("realworld/" + app.key, Path(scratch))
        commit = host.resolve_ref("main")
        recipe = recipe_at(host, commit, boot_settings().get(app.key))
        with booted(host, commit, recipe, {}) as running:
            yield (
                running.url,
                {
                    "recipe": recipe.source,
                    "install_s": running.install_s,
                    "boot_s": running.boot_s,
                    "cached": running.cached,
                },
            )


MODES = {"started": started, "booted": booted_by_amtp}


def measure_one(key: str, depth: str, mode: str = "started") -> dict:
    from bench_grounding import measure_at  # sets up Django: only in the child

    app = load(key)
    # AMTP_REALWORLD_NO_RECIPE=1: as a user who gives no login recipe (AMTP signs up).
    app.login = None if os.environ.get("AMTP_REALWORLD_NO_RECIPE") else logins().get(key)
    began = time.monotonic()
    with MODES[mode](app) as (url, boot):
        accounts(key, url)
        setup_s = time.monotonic() - began
        m = measure_at(app, url, depth)
    m["boot"] = boot
    m["named"] = [r["path"] for r in m["named"]]
    m["passing"] = [r["path"] for r in m["passing"]]
    m["behaviours"] = exercised(app.behaviours, m["passing_code"])
    return {**m, "found": found(app), "setup_s": setup_s}


def child(key: str, depth: str, timeout: float, mode: str = "started") -> dict:
    """Run ``--one key`` in its own session; kill the session when it overruns."""
    command = [sys.executable, __file__, "--one", key, "--depths", depth, "--mode", mode]
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
        why = [line for line in out.splitlines() if line.startswith("FAILED ")]
        return {"error": f"exited {process.returncode}" + (f": {why[-1][7:]}" if why else "")}
    return json.loads(lines[-1][len("RESULT ") :])


# --- the table --------------------------------------------------------------------------------


def _share(count: int, total: int) -> str:
    return f"{count}/{total} ({100 * count / total:.0f}%)" if total else "0/0"


HEADER = (
    "| app | routes found | routes named in a test | flows (passing) | tests | first attempt "
    "| after healing | own suite's behaviours exercised | failed or quarantined without a reason "
    "| passing on a 404 or login page | routes not named | pages explored | verification s "
    "| s |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: "
    "| ---: |"
)


def _behaviours(app: RealApp, m: dict) -> str:
    return _share(len(m["behaviours"]), len(app.behaviours)) if app.behaviours else "-"


def row(app: RealApp, m: dict) -> str:
    name = f"{app.name}{' (held out)' if app.held_out else ''}"
    if "error" in m:
        return f"| {name} | {m['error']} |" + " |" * 12
    missed = [r["path"] for r in app.routes if r["path"] not in m["named"]]
    return (
        f"| {name} | {_share(len(m['found']), len(app.routes))} "
        f"| {_share(len(m['named']), len(app.routes))} "
        f"| {m['flows']} ({m['flows_passing']} passing) | {m['tests']} "
        f"| {_share(m['first'], m['tests'])} | {_share(m['after'], m['tests'])} "
        f"| {_behaviours(app, m)} | {len(m['unexplained'])} | {m['on_wrong_page']} "
        f"| {', '.join(missed) or '-'} | {m['pages']} | {m['verify_s']:.0f} "
        f"| {m['setup_s'] + m['explore_s'] + m['verify_s']:.0f} |"
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
        "on_wrong_page": sum(m["on_wrong_page"] for _, m in done),
        "verify_s": max((m["verify_s"] for _, m in done), default=0.0),
        "apps": len(done),
        # An app that did not finish still counts its behaviours: none of them exercised.
        "behaviours": sum(len(a.behaviours) for a, _ in results),
        "exercised": sum(len(m["behaviours"]) for _, m in done),
    }


def print_results(results: list[tuple[RealApp, dict]]) -> None:
    t = totals(results)
    print(
        f"| total ({t['apps']} of {len(results)} apps) | {_share(t['found'], t['routes'])} "
        f"| {_share(t['named'], t['routes'])} "
        f"| {t['flows']} ({t['flows_passing']} passing) | {t['tests']} "
        f"| {_share(t['first'], t['tests'])} | {_share(t['after'], t['tests'])} "
        f"| {_share(t['exercised'], t['behaviours'])} | {t['unexplained']} "
        f"| {t['on_wrong_page']} | | | {t['verify_s']:.0f} (longest) | |",
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
        print(f"RATIO realworld_{app.key}_first_attempt: {first:.0%} of {tests} (goal >= 90%)")
        print(f"RATIO realworld_{app.key}_verify_s: {m['verify_s']:.0f} s (goal <= 120 s)")
        if app.forms:  # at least one flow through a form passes, wherever the app has one
            print(
                f"RATIO realworld_{app.key}_passing_flows: {m['flows_passing']} "
                f"(goal >= 1; forms listed: {len(app.forms)})"
            )
        if app.behaviours:
            missed = [b.id for b in app.behaviours if b.id not in m["behaviours"]]
            print(
                f"RATIO realworld_{app.key}_behaviours: {_behaviours(app, m)} of its own suite's "
                f"exercised by a passing test; not: {', '.join(missed) or '-'}"
            )
        for title in m["unexplained"]:
            print(f"  failed or quarantined without a reason: {title}")
        for bad in m["not_passing"]:
            reason = bad["reason"] or "(no reason)"
            print(f"  {app.key}: {bad['status']}: {bad['title']}: {reason}")
    if t["tests"]:
        print(f"RATIO realworld_total_first_attempt: {t['first'] / t['tests']:.0%} of {t['tests']}")
        print(f"RATIO realworld_on_404_or_login_page: {t['on_wrong_page']} passing tests (goal 0)")
        print(f"RATIO realworld_longest_verify_s: {t['verify_s']:.0f} s (goal <= 120 s)")
    for label, part in (("total", results), ("held_out", [r for r in results if r[0].held_out])):
        b = totals(part)
        if b["behaviours"]:
            print(
                f"RATIO realworld_{label}_behaviours: "
                f"{_share(b['exercised'], b['behaviours'])} (goal >= 60%)"
            )


MODE_BOOTED = "booted by AMTP from its recipe, no target URL (BootApp's box)"


def _rates(app: RealApp, m: dict) -> tuple[float, float]:
    """(first-attempt pass rate, routes named) in percent."""
    first = 100 * m["first"] / m["tests"] if m["tests"] else 0.0
    return first, 100 * len(m["named"]) / len(app.routes)


def compare(started: list[tuple[RealApp, dict]], booted: list[tuple[RealApp, dict]]) -> None:
    """Per app: did AMTP boot it, and its first-attempt pass rate and routes named either way
    (goal: at least 4 of 5 boot; on those both figures within 5 points)."""
    print(
        "\n| app | booted by AMTP (recipe) | install s | start s | first attempt: started / "
        "booted | routes named: started / booted | within 5 points |\n"
        "| --- | --- | ---: | ---: | --- | --- | --- |"
    )
    ok = close = 0
    for (app, s), (_, b) in zip(started, booted, strict=True):
        if "error" in b:
            print(f"| {app.name} | no: {b['error']} | | | | | |")
            continue
        ok += 1
        boot = b["boot"]
        cached = " (cached)" if boot["cached"] else ""
        if "error" in s:
            within, first, named = "-", f"- / {_rates(app, b)[0]:.0f}%", "-"
        else:
            (sf, sn), (bf, bn) = _rates(app, s), _rates(app, b)
            near = abs(sf - bf) <= 5 and abs(sn - bn) <= 5
            close += near
            within = "yes" if near else "no"
            first, named = f"{sf:.0f}% / {bf:.0f}%", f"{sn:.0f}% / {bn:.0f}%"
        print(
            f"| {app.name} | yes ({boot['recipe']}) | {boot['install_s']:.1f}{cached} "
            f"| {boot['boot_s']:.1f} | {first} | {named} | {within} |"
        )
    print(f"RATIO realworld_booted: {ok} of {len(booted)} apps (goal >= 80%)")
    print(f"RATIO realworld_booted_within_5_points: {close} of {ok} booted")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", default="", help="comma-separated: " + ", ".join(KEYS))
    parser.add_argument(
        "--set",
        choices=("all", "tuning", "held-out"),
        default="all",
        help="the apps to tune on, the held-out ones, or all (with --apps: ignored)",
    )
    parser.add_argument("--depths", default="standard")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per app")
    parser.add_argument(
        "--code", default="", help="a folder to write each app's passing tests into (<app>.ts)"
    )
    parser.add_argument(
        "--mode",
        choices=("started", "booted", "both"),
        default="both",
        help="started: by this script; booted: by AMTP from its recipe, no target URL; both: "
        "each app both ways, then the two compared",
    )
    parser.add_argument("--one", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        try:
            m = measure_one(args.one, args.depths, args.mode)
        except Exception as exc:  # a boot that fails is a figure: why, on one line
            print("FAILED " + " ".join(f"{type(exc).__name__}: {exc}".split())[:400], flush=True)
            raise
        print("RESULT " + json.dumps(m), flush=True)
        return 0
    keys = [k.strip() for k in args.apps.split(",") if k.strip()] or [
        k for k in KEYS if args.set == "all" or (k in HELD_OUT) == (args.set == "held-out")
    ]
    if unknown := set(keys) - set(KEYS):
        parser.error(f"--apps: unknown {sorted(unknown)}")
    modes = ("started", "booted") if args.mode == "both" else (args.mode,)
    by_mode: dict[str, list[tuple[RealApp, dict]]] = {}
    for mode in modes:
        print(f"\n{mode}: " + ("started by this script" if mode == "started" else MODE_BOOTED))
        print(HEADER)
        results = by_mode[mode] = []
        for key in keys:
            app = load(key)
            m = child(key, args.depths, args.timeout, mode)
            if args.code and "error" not in m:  # to read why a behaviour was or was not counted
                Path(args.code).mkdir(parents=True, exist_ok=True)
                code = "\n\n".join(m["passing_code"]) + "\n"
                (Path(args.code) / f"{key}{'' if mode == 'started' else '.booted'}.ts").write_text(
                    code
                )
            print(row(app, m), flush=True)
            results.append((app, m))
        print_results(results)
    if len(modes) == 2:
        compare(by_mode["started"], by_mode["booted"])
    return 1 if any("error" in m for r in by_mode.values() for _, m in r) else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "scripts"))
    sys.exit(main())
