"""ExploreApp: the target app as it renders, recorded before any test is written.

A headless Chromium in the sandbox (the same box and allow-listing proxy as VerifyTests) visits
the app breadth-first from its start paths, following same-origin links, within the page, depth
and time bounds of :class:`Bounds`. Per page: the HTTP status, title, accessibility snapshot
(Playwright's ``ariaSnapshot()``), the same-origin links, the forms with their labelled fields,
console errors and a small screenshot (``box/explore.mjs``); per GET that answered JSON, the
shape of its body (``agents/offline/api_shape.py``). Everything the box wrote is
untrusted: it is read bounded, checked field by field, scrubbed of secrets and capped to
``max_bytes`` before it becomes the ``app_map`` artifact; screenshots are kept only as real
JPEGs under the run's evidence folder.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from urllib.parse import unquote_plus

from django.conf import settings

from agents.offline.api_shape import CREDENTIALS, clean_apis
from agents.offline.common import ACCOUNT, EMAIL_DOMAIN, LOGOUT_PATH
from amtp_site.setting_fields import from_settings
from repositories.login import ApiKey
from repositories.secrets import held_secrets, scrub
from verification import proxy, sandbox
from verification.box_text import line
from verification.errors import LoginFailed, VerifierNotInstalled
from verification.exploration import interactions as acts
from verification.exploration.signup import signup_record
from verification.exploration.trials import box_config, new_tag, trial
from verification.exploration.writes import writes as probed_writes
from verification.login import FAILED as LOGIN_FAILED
from verification.login import Login, Throwaway
from verification.playwright import (
    BOX_PROXY,
    Runner,
    box_env,
    box_json,
    clean,
    furnish,
    launch_options,
    preflight,
    probe,
    tool_versions,
)
from verification.session import CRASHED, LiveApp

SCRIPT = Path(__file__).with_name("box") / "explore.mjs"
SCRIPTS = (SCRIPT, *(SCRIPT.with_name(f"{n}.mjs") for n in ("interact", "signup", "answers")))
GRACE_S = 30.0  # the browser's start and shutdown, past the explorer's own deadline
MAX_RAW_BYTES = 32 << 20
MAX_SHOT_BYTES = 512 << 10
SHOTS = "explore"  # under the run's evidence folder
NO_MAP = "the explorer ended (exit code {code}) without a map of the app: {tail}"
BAD_MAP = "the explorer's map is over 32 MiB or not JSON; its output ends: {tail}"
# A path on the target's own origin: "//host" and "/\\host" lead elsewhere in a browser.
_PATH = re.compile(r"^/([^/\\\s]\S{0,498})?$")
_JPEG = b"\xff\xd8\xff"
UNKNOWN_PATH = "/amtp-page-that-does-not-exist"  # the offline engine's not-found page
MAX_RESTARTS = 2  # crashes of the app AMTP started: after the second, exploration ends


@dataclass(frozen=True)
class Bounds:
    max_pages: int
    max_depth: int
    time_s: float
    page_timeout_s: float
    max_bytes: int  # the whole app_map artifact
    form_trials: int = 0  # forms submitted once with test data (0: none)
    interactions: int = 0  # actions outside forms: type and Enter, toggle, filter… (0: none)

    @classmethod
    def from_settings(cls) -> Bounds:
        # AMTP_EXPLORE_MAX_PAGES, …; the whole stage's limit is AMTP_EXPLORE_TIMEOUT_S.
        return from_settings(cls, "AMTP_EXPLORE_", time_s=settings.AMTP_EXPLORE_TIMEOUT_S)


def explore(
    target_url: str,
    *,
    allow_hosts: list[str],
    runner: Runner,
    bounds: Bounds,
    shots_dir: Path,
    start_paths: list[str],
    login: Login | None = None,
    signup: Throwaway | None = None,
    tag: str = "",
    app: LiveApp | None = None,
    writes: list[list[str]] | None = None,
    api_key: dict | None = None,
) -> dict:
    """The ``app_map`` content for the app at ``target_url``, explored logged in when there
    is a ``login`` (its credentials scrubbed by the caller: ``login_for``), with up to
    ``bounds.form_trials`` forms submitted once with test data carrying ``tag`` (unique to
    the run; a new one when empty). Without a ``login``, a ``signup`` account (scrubbed by
    the caller: ``throwaway``) signs up through the first sign-up form met and the crawl goes
    on signed in (``signup`` in the map says how it went). TargetUnreachable,
    VerifierNotInstalled, SandboxUnavailable or LoginFailed when it cannot be explored.
    ``app``, the app AMTP started for the run, ended during the crawl: the crash is a finding
    (``crashes``: the request it crashed on, its exit and log lines), the app is restarted and
    the paths not yet answered are explored in a second crawl, without the crashing ones. A
    crash in that second crawl is recorded and the app restarted once more, and ``stopped``
    names it: at most MAX_RESTARTS restarts, and the app runs when this returns. ``api_key``:
    an API key the source names (``writes.api_key_probe``), asked with after the crawl."""
    preflight(runner)
    sandbox.check_available()
    policy = proxy.Policy(target_url, allow_hosts)
    probe(target_url, policy)
    tag = tag or new_tag()
    began = time.monotonic()
    key_setting = login.recipe if login and isinstance(login.recipe, ApiKey) else None
    if key_setting:  # the repository's own key (the login password) where it says
        place = {"in": key_setting.where, "name": key_setting.name}
        api_key = {"paths": [], "unknown": "", **(api_key or {}), **place, "setting": True}
    config = _config(target_url, runner, bounds, start_paths) | {"api_key": api_key}
    part = _crawl(config, policy, runner, bounds, shots_dir, login, signup, tag, writes or [])
    pages, crashes = part["pages"], []
    while app is not None and app.ended() is not None:
        crashes.append(crash_record(app, policy))  # before the restart: its exit and log
        app.restart()  # the app runs when ExploreApp ends, whatever comes next
        if len(crashes) >= MAX_RESTARTS:
            last = crashes[-1]
            part["stopped"] = line(CRASHED.format(request=last["request"], how=last["exit"]), 200)
            break
        pages = [page for page in pages if page["status"]]  # the rest went unanswered
        left = _not_answered(pages, start_paths, {c["path"] for c in crashes})
        room = bounds.max_pages - len(pages)
        if not left or room <= 0:
            break
        # The second crawl: no form or interaction trials, no writes and no sign-up again
        # (the first crawl's stand), its screenshots numbered after the first crawl's.
        again = replace(bounds, max_pages=room, form_trials=0, interactions=0)
        # What is left of the stage's time, and at least 30 s: enough for a few pages.
        again = replace(again, time_s=max(bounds.time_s - (time.monotonic() - began), 30.0))
        config = _config(target_url, runner, again, left)
        shots = [int(Path(p["screenshot"]).stem) for p in part["pages"] if p["screenshot"]]
        first = max(shots, default=-1) + 1
        more = _crawl(config, policy, runner, again, shots_dir, login, None, tag, [], first)
        seen = {page["path"] for page in pages}
        pages += [page for page in more["pages"] if page["path"] not in seen]
        part.update(stopped=more["stopped"], unvisited=more["unvisited"])
        part["apis"] += more["apis"]
        part["unknown_path_status"] = part["unknown_path_status"] or more["unknown_path_status"]
    content = {
        "target_url": target_url,
        "settings": {k: v for k, v in asdict(bounds).items() if k != "max_bytes"},
        "tool_versions": tool_versions(runner),
        "pages": pages[: bounds.max_pages],
        "stopped": part["stopped"],
        "unvisited": part["unvisited"],
        "unknown_path_status": part["unknown_path_status"],
        "trials": part["trials"],
        "interactions": part["interactions"],
        "apis": part["apis"],
        "writes": part["writes"],
        "signup": part["signup"] if signup and not login else None,
        "crashes": crashes,
        **({"credential": place} if key_setting else {}),
        "truncated": False,
        "sandbox": {
            "isolated": sandbox.sandboxed(),
            "blocked": [line(b, 300) for b in policy.blocked[:100]],  # hosts a page named
        },
    }
    return capped(content, bounds.max_bytes)


def _crawl(
    config: dict,
    policy: proxy.Policy,
    runner: Runner,
    bounds: Bounds,
    shots_dir: Path,
    login: Login | None,
    signup: Throwaway | None,
    tag: str,
    writes: list[list[str]],
    first_shot: int = 0,
) -> dict:
    """One run of the explorer in a new box: the map's fields from what it wrote, checked."""
    target_url = config["base_url"]
    box = sandbox.Box()
    try:
        modules, _inside = furnish(box, runner)
        for script in SCRIPTS:
            shutil.copyfile(script, box.work / script.name)
        config["login"] = login.recipe.as_config() if login else None
        config["trials"] = box_config(bounds.form_trials, tag)
        config["interactions"] = acts.box_config(bounds.interactions, tag, bounds.page_timeout_s)
        # The box sends them unless it signed up with the throwaway account (explore.mjs).
        config["writes"] = writes
        config["credentials"] = CREDENTIALS
        signup = None if login else signup
        config["signup"] = signup is not None
        account = login or signup  # its values reach the box's process environment only
        (box.work / "config.json").write_text(json.dumps(config))
        with proxy.serving(box.socket, policy):
            outcome = box.run(
                ["node", "explore.mjs", "config.json"],
                env={**box_env(box, target_url), **(account.env() if account else {})},
                runner=modules,
                limits=sandbox.Limits.from_settings(),
                wall_s=bounds.time_s + GRACE_S,
            )
        raw = _raw_map(box, outcome, login)
        pages = [
            _page(_named(p, signup), box.work, shots_dir, first_shot)
            for p in raw.get("pages", [])[: bounds.max_pages]
        ]
        unvisited = raw.get("unvisited") if isinstance(raw.get("unvisited"), int) else 0
        held = held_secrets()
        return {
            "pages": pages,
            "stopped": clean(str(raw.get("stopped", "")), 200),
            "unvisited": max(0, unvisited),
            "unknown_path_status": _int(raw.get("unknown_path_status"), 0, 599),
            "trials": _trials(raw.get("trials"), tag, pages, bounds.form_trials),
            "apis": _apis(raw.get("apis")),
            "signup": signup_record(raw.get("signup"), _form, lambda p: _local(p, held)),
            "interactions": _interactions(raw.get("interactions"), tag, pages, bounds.interactions),
            "writes": probed_writes(raw.get("writes"), writes, tag, held),
        }
    finally:
        box.remove()


def crash_record(app: LiveApp, policy: proxy.Policy) -> dict:
    """The app's crash as the map records it: the request it crashed on (the first it left
    unanswered: ``Policy.crash_cause``), its exit code and the last lines of its log, each
    bounded and scrubbed (the log and the path are the app's and the browser's, hostile both)."""
    note = app.exit_note()
    how, _, log = note.partition(";")
    request = policy.crash_cause(app.ended() or time.time())
    path = request.path if request else ""
    kept = _local(path, held_secrets()) and scrub(path) == path  # no token a query carried
    return {
        "request": line(request.shown, 300) if request else "an unknown request",
        "path": path if kept else "",
        "exit": line(how, 100),
        "log": clean(log.partition(":")[2] if log else "", 2000),
    }


def _not_answered(pages: list[dict], start_paths: list[str], crashed: set[str]) -> list[str]:
    """The start paths and the answered pages' links that no page answered yet, in their
    order, without the paths that crashed the app."""
    answered = {page["path"] for page in pages}
    found = [*start_paths, *(link for page in pages for link in page["links"])]
    return [p for p in dict.fromkeys(found) if p not in answered and p not in crashed]


def _config(target_url: str, runner: Runner, bounds: Bounds, start_paths: list[str]) -> dict:
    return {
        "base_url": target_url,
        "start_paths": start_paths,
        "logout": LOGOUT_PATH,
        "unknown_path": UNKNOWN_PATH,
        "email_domain": EMAIL_DOMAIN,
        "max_pages": bounds.max_pages,
        "max_depth": bounds.max_depth,
        "max_links": 100,
        "max_forms": 10,
        "time_ms": int(bounds.time_s * 1000),
        "page_timeout_ms": int(bounds.page_timeout_s * 1000),
        "proxy": BOX_PROXY,
        "launch": launch_options(runner),
    }


def _raw_map(box: sandbox.Box, outcome: sandbox.Outcome, login: Login | None) -> dict:
    data = box_json(box, outcome, "app_map.json", MAX_RAW_BYTES, missing=NO_MAP, bad=BAD_MAP)
    if not isinstance(data.get("pages", []), list):
        raise VerifierNotInstalled(BAD_MAP.format(tail=clean(box.output_tail(1500), 1500)))
    if login is not None and data.get("login_error"):
        seen = clean(_str(data["login_error"]), 500) or "no message"
        raise LoginFailed(LOGIN_FAILED.format(path=login.recipe.path, seen=seen))
    return data


def _page(raw, work: Path, shots_dir: Path, first_shot: int = 0) -> dict:
    """One page as the box described it, each field checked and bounded."""
    raw = raw if isinstance(raw, dict) else {}
    path = raw.get("path") if isinstance(raw.get("path"), str) else ""
    status = raw.get("status")
    held = held_secrets()
    return {
        "path": path if _local(path, held) else "/",
        "depth": _int(raw.get("depth"), 0, 100),
        "status": _int(status, 0, 599),
        "title": line(_str(raw.get("title")), 300),
        "snapshot": clean(_str(raw.get("snapshot")), 20_000),
        "links": [p for p in _list(raw.get("links"))[:100] if _local(p, held)],
        "forms": [_form(f) for f in _list(raw.get("forms"))[:10]],
        "console_errors": [line(_str(e), 500) for e in _list(raw.get("console_errors"))[:20]],
        "screenshot": _keep_shot(raw.get("screenshot"), work, shots_dir, first_shot),
        "error": clean(_str(raw.get("error")), 500),
        # Where a page that sent the browser to a login form went: it showed the login.
        "login_redirect": redirect if _local(redirect := raw.get("login_redirect"), held) else "",
        # Where any other redirect sent the browser: the page showed that path, not its own.
        "redirected_to": moved if _local(moved := raw.get("redirected_to"), held) else "",
    }


def _named(raw, signup: Throwaway | None):
    """A page the throwaway account signed in to, its user name in the texts (a greeting,
    "Hi, amtpx1y2z3!") as ``{account}``: the tests' own account stands there (the setup
    saves its name, ``verification.login.ACCOUNT_FILE``); elsewhere the name is scrubbed."""
    if signup is None or not isinstance(raw, dict):
        return raw
    out = dict(raw)
    for key in ("snapshot", "title"):
        text = out.get(key) if isinstance(out.get(key), str) else ""
        for name, _email, _password in signup.accounts:
            text = text.replace(name, ACCOUNT)
        out[key] = text
    return out


def _trials(items, tag: str, pages: list[dict], limit: int) -> list[dict]:
    """The box's trials, each checked against the map's own pages and forms (at most
    ``limit``, one per form); a path after submit that carries a held secret is dropped."""
    by_path = {page["path"]: page for page in pages if 200 <= page["status"] < 300}
    out: list[dict] = []
    held = held_secrets()
    for raw in _list(items)[: max(0, limit)]:
        found = trial(raw, tag, by_path)
        if found and not any((t["path"], t["form"]) == (found["path"], found["form"]) for t in out):
            found["path_after"] = found["path_after"] if _local(found["path_after"], held) else ""
            out.append(found)
    return out


def _interactions(items, tag: str, pages: list[dict], limit: int) -> list[dict]:
    """The box's interaction trials, each checked (``interactions.interaction``) against the
    map's live pages; an address after that carries a held secret is dropped."""
    live = {page["path"] for page in pages if 200 <= page["status"] < 300}
    held = held_secrets()
    items = items[: max(0, limit)] if isinstance(items, list) else []
    return acts.interactions(items, tag, live, lambda path: _local(path, held))


def _apis(items) -> list[dict]:
    """The box's JSON shapes, each checked (``clean_apis``), on local paths only."""
    held = held_secrets()
    return clean_apis(items, lambda path: _local(path, held))


def _local(path, held: list[str]) -> bool:
    """A path on the target's origin that carries no held secret (a login form sent by GET
    puts its password in the URL)."""
    if not isinstance(path, str) or not _PATH.match(path):
        return False
    return not any(value in text for text in (path, unquote_plus(path)) for value in held)


def _form(raw) -> dict:
    raw = raw if isinstance(raw, dict) else {}
    fields = [f if isinstance(f, dict) else {} for f in _list(raw.get("fields"))[:40]]
    return {
        "action": clean(_str(raw.get("action")), 500),
        "method": "post" if _str(raw.get("method")).lower() == "post" else "get",
        "submit": clean(_str(raw.get("submit")), 200),
        "fields": [
            {
                "label": clean(_str(f.get("label")), 200),
                "name": clean(_str(f.get("name")), 200),
                "type": clean(_str(f.get("type")), 40) or "text",
                "required": f.get("required") is True,
            }
            for f in fields
        ],
    }


def _keep_shot(name, work: Path, shots_dir: Path, first: int = 0) -> str:
    """The screenshot copied under ``shots_dir/explore/`` (its path relative to
    ``shots_dir``; numbered from ``first``: a second crawl's do not overwrite the first's),
    or "" when it is not a regular, bounded JPEG inside the box's folder."""
    if not isinstance(name, str) or not (found := re.fullmatch(r"shots/(\d{1,4})\.jpeg", name)):
        return ""
    if (number := first + int(found[1])) > 9999:
        return ""
    source = work / name
    if source.is_symlink() or not source.is_file() or source.stat().st_size > MAX_SHOT_BYTES:
        return ""
    data = source.read_bytes()
    if not data.startswith(_JPEG):
        return ""
    target = shots_dir / SHOTS / f"{number}.jpeg"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return f"{SHOTS}/{target.name}"


def capped(content: dict, max_bytes: int) -> dict:
    """``content`` within ``max_bytes`` of JSON: snapshots are shortened first (later pages
    first), then pages dropped from the end; ``truncated`` says so."""
    pages = content["pages"]
    for limit in (4000, 1000, 200):
        if _size(content) <= max_bytes:
            return content
        for page in reversed(pages):
            if len(page["snapshot"]) > limit:
                page["snapshot"] = page["snapshot"][: limit - 1] + "…"
                content["truncated"] = True
                if _size(content) <= max_bytes:
                    return content
    while pages and _size(content) > max_bytes:
        pages.pop()
        content["truncated"] = True
    return content


def _size(content: dict) -> int:
    return len(json.dumps(content, ensure_ascii=False).encode())


def _int(value, low: int, high: int) -> int:
    return value if isinstance(value, int) and low <= value <= high else low


def _str(value) -> str:
    return value if isinstance(value, str) else ""


def _list(value) -> list:
    return value if isinstance(value, list) else []
