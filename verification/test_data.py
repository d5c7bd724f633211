"""Test data: the repository's set-up before the generated tests first run, its tear-down after
they last ran, each in a sandbox of its own behind the same allow-listing proxy as the tests.

A hook is a URL on the target (POSTed to by ``box/test_data.mjs`` with Playwright's request
API, from inside the box: the URL is outside input, so the worker never calls it itself) or a
command (an argv, started without a shell, in the box's working directory with ``BASE_URL``
and ``HTTP_PROXY`` set). A failed set-up is the environment's failure (TestDataFailed): no
test runs, none is quarantined. A failed tear-down is reported and fails nothing. Each result
goes to the report: kind, what was called (no query string, secrets scrubbed), outcome, time
and the output's bounded, scrubbed tail.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from amtp_site.errors import AmtpError
from repositories import targets
from repositories import test_data as rules
from verification import proxy, sandbox
from verification.errors import TestDataFailed
from verification.playwright import GRACE_S, Runner, box_env, clean, furnish

SCRIPT = Path(__file__).with_name("box") / "test_data.mjs"
OUTPUT_CHARS = 1000
MAX_RESULT_BYTES = 4096
BOX_PROXY_URL = f"http://127.0.0.1:{sandbox.BRIDGE_PORT}"
SETUP_FAILED = (
    "test data setup failed: {call} {detail}{tail}; no test was run. Fix the set-up (admin → "
    "Repositories → Test data) or the app, then run again"
)


@dataclass(frozen=True)
class Hook:
    phase: str  # "setup" | "teardown"
    url: str  # the setting: a path on the target or a URL on its origin ("" for a command)
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hooks:
    setup: Hook | None
    teardown: Hook | None
    timeout_s: float = rules.DEFAULT_TIMEOUT_S


def hooks_of(repository) -> Hooks | None:
    """The repository's hooks (None when it sets none)."""
    found = {}
    for phase in rules.HOOKS:
        url = getattr(repository, f"test_data_{phase}_url")
        command = tuple(getattr(repository, f"test_data_{phase}_command") or ())
        found[phase] = Hook(phase, url, command) if url or command else None
    if not any(found.values()):
        return None
    return Hooks(found["setup"], found["teardown"], float(repository.test_data_timeout_s))


def shown_call(hook: Hook, target_url: str) -> str:
    """What the hook calls, as it may be printed: no query string, secrets scrubbed."""
    if hook.command:
        return clean(shlex.join(hook.command), 500)
    try:
        url = rules.resolve(hook.url, target_url)
    except ValueError:
        url = hook.url if not hook.url.startswith("/") else target_url.rstrip("/") + hook.url
    return clean(f"POST {targets.display(url)}", 500)


def run(hook: Hook, *, target_url: str, policy: proxy.Policy, runner: Runner, timeout_s: float):
    """The report entry of ``hook`` run once in a fresh box (never raises for its failure)."""
    began = time.monotonic()
    entry = {
        "phase": hook.phase,
        "kind": "command" if hook.command else "url",
        "call": shown_call(hook, target_url),
        "status": "failed",
        "code": None,
        "detail": "",
        "duration_ms": 0,
        "output": "",
    }
    box = sandbox.Box()
    try:
        if hook.command:
            entry.update(_command(box, hook, target_url, policy, runner, timeout_s))
        else:
            entry.update(_post(box, hook, target_url, policy, runner, timeout_s))
    except ValueError as exc:  # a URL off the target's origin: never called
        entry["detail"] = f"refused: {exc}"
    finally:
        entry["output"] = clean(box.output_tail(2 * OUTPUT_CHARS), OUTPUT_CHARS)
        entry["duration_ms"] = max(0, int((time.monotonic() - began) * 1000))
        box.remove()
    return entry


def _command(box, hook, target_url, policy, runner, timeout_s) -> dict:
    modules, _inside = furnish(box, runner)
    env = box_env(box, target_url)
    env.update(
        {name: BOX_PROXY_URL for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    )
    with proxy.serving(box.socket, policy):
        outcome = box.run(
            list(hook.command),
            env=env,
            runner=modules,
            limits=sandbox.Limits.from_settings(),
            wall_s=timeout_s,
        )
    if outcome.stopped:
        return {"detail": _stopped(outcome.stopped, timeout_s)}
    ok = outcome.returncode == 0
    return {
        "status": "passed" if ok else "failed",
        "code": outcome.returncode,
        "detail": f"exited {outcome.returncode}",
    }


def _post(box, hook, target_url, policy, runner, timeout_s) -> dict:
    url = rules.resolve(hook.url, target_url)
    modules, _inside = furnish(box, runner)
    shutil.copyfile(SCRIPT, box.work / "test-data.mjs")
    command = ["node", "test-data.mjs", url, target_url, str(int(timeout_s * 1000)), BOX_PROXY_URL]
    with proxy.serving(box.socket, policy):
        outcome = box.run(
            command,
            env=box_env(box, target_url),
            runner=modules,
            limits=sandbox.Limits.from_settings(),
            wall_s=timeout_s + GRACE_S,
        )
    if outcome.stopped:
        return {"detail": _stopped(outcome.stopped, timeout_s)}
    result = _result(box.work / "test-data.json")
    status = result.get("status")
    if not isinstance(status, int) or isinstance(status, bool):
        said = clean(str(result.get("error") or f"no answer (exit {outcome.returncode})"), 300)
        return {"detail": f"failed: {said}"}
    ok = 200 <= status < 400
    return {"status": "passed" if ok else "failed", "code": status, "detail": f"answered {status}"}


def _stopped(why: str, timeout_s: float) -> str:
    return f"timed out after {timeout_s:.0f} s" if "wall-time" in why else why


def _result(path: Path) -> dict:
    """The script's result file, read only when it is a small regular file."""
    with contextlib.suppress(OSError, ValueError):
        if not path.is_symlink() and path.is_file() and path.stat().st_size <= MAX_RESULT_BYTES:
            data = json.loads(path.read_bytes())
            return data if isinstance(data, dict) else {}
    return {}


class Around:
    """``with Around(...):`` the set-up on entry (TestDataFailed when it fails, after the
    tear-down has run), the tear-down on exit however the block ended; ``results`` lists both.
    An AmtpError leaving the block carries them (``details["test_data"]``)."""

    def __init__(self, hooks: Hooks | None, *, target_url: str, policy, runner: Runner) -> None:
        self.hooks = hooks
        self.where = {"target_url": target_url, "policy": policy, "runner": runner}
        self.results: list[dict] = []

    def _run(self, hook: Hook | None) -> dict | None:
        if hook is None:
            return None
        entry = run(hook, timeout_s=self.hooks.timeout_s, **self.where)
        self.results.append(entry)
        return entry

    def __enter__(self) -> Around:
        setup = self._run(self.hooks and self.hooks.setup)
        if setup is not None and setup["status"] != "passed":
            self._run(self.hooks.teardown)  # whatever the set-up left half done
            tail = f": {clean(setup['output'], 300)}" if setup["output"] else ""
            message = SETUP_FAILED.format(call=setup["call"], detail=setup["detail"], tail=tail)
            raise TestDataFailed(message, test_data=self.results)
        return self

    def __exit__(self, kind, exc, traceback) -> None:
        self._run(self.hooks and self.hooks.teardown)
        if isinstance(exc, AmtpError):
            exc.details["test_data"] = self.results
