"""Candidate test cases for the Test Case Generator, before ids, depth and caps are applied.

Web candidates come from `detected_stack.routes`/`pages`, mobile ones from `screens`; the
priorities follow the rule documented in `cases.py`. Every route and label is re-validated
here, because a detected_stack may come from a model rather than from these rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .api_keys import INVALID_KEY, clean_api_key, key_words, token_words
from .api_shape import AUTH_HEADERS, CREDENTIALS, WITH_TOKEN, describe, summary
from .common import (
    RouteTrie,
    area_of,
    clean_route,
    logs_out,
    one_line,
    params,
    sample_path,
    slug,
    ui_text,
)
from .journey_code import SIGN_OUT
from .live import (
    LivePage,
    absent_paths,
    api_probes,
    api_shapes,
    behind_login,
    live_pages,
    login_page,
    unknown_path_status,
    write_answers,
)

NOT_FOUND_PAGE = "/amtp-page-that-does-not-exist"
SAMPLE_NOTE = "Sample values fill the path parameters of {}; adjust them to existing data"
LIVE_NOTE = "Seen at {} when the app was explored: expectations follow what it showed"
RUNNING = "The web app is running and reachable at the base URL (default {})"
NO_ERRORS = "throws no uncaught page errors"
# A page behind a login (code.py turns it into the address and a password field).
ASKS_LOGIN = "it asks for a login: the browser ends on"
PAGE_OK = f"the page responds with a 2xx status, renders a visible body and {NO_ERRORS}"
PAGE_DYNAMIC = f"the page responds without a server error (status below 500) and {NO_ERRORS}"
SMOKE = " renders (smoke)"  # a test that checks nothing but the render says so
BLANK = "nothing rendered when explored: its content needs requests the sandbox refused"
NO_5XX = "responds without a server error (status below 500)"
STATUS_ONLY = "status only, shape not checked"
# Mutations target records that must not exist, so a test run never damages real data.
EXPECT = {
    "sample": f"{NO_5XX}: 2xx when the sample record exists, otherwise 404",
    "missing": "responds with status 404 for a record that does not exist",
    "mutate_missing": f"{NO_5XX}, typically 404 for a record that does not exist",
    # A route the app does not have answers 404: that is a wrong route, never a pass.
    "mutate_empty": f"{NO_5XX} and not 404: invalid input is rejected with a 4xx",
}


@dataclass
class Candidate:
    key: str  # id seed, before `tc_` and deduplication
    title: str
    steps: list[str]
    expected: str
    priority: str
    area: str
    preconditions: list[str] = field(default_factory=list)


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _str_items(items: object, *keys: str) -> list[dict]:
    """Items of a detected_stack list that carry the given string keys (others are skipped)."""
    if not isinstance(items, list):
        return []
    return [
        i for i in items if isinstance(i, dict) and all(isinstance(i.get(k), str) for k in keys)
    ]


# --- web ----------------------------------------------------------------------------------


def running_note(stack: dict) -> str:
    """The precondition that the web app runs, at its base URL."""
    base_url = stack.get("base_url") if isinstance(stack.get("base_url"), str) else None
    return RUNNING.format(one_line(base_url or "http://localhost:3000", 80))


def web_candidates(stack: dict, app_map: object = None) -> list[Candidate]:
    running = running_note(stack)
    frameworks = {str(f) for f in stack.get("frameworks") or [] if isinstance(f, str)}
    pages: dict[str, str | None] = {}
    for page in _str_items(stack.get("pages"), "route"):
        if route := clean_route(page["route"]):
            pages.setdefault(route, ui_text(page.get("heading")))
    api: list[tuple[str, str, bool]] = []
    shapes, probes, wrote = api_shapes(app_map), api_probes(app_map), write_answers(app_map)
    for item in _str_items(stack.get("routes"), "method", "path"):
        route, method = clean_route(item["path"]), item["method"].upper()
        if route is None or method not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            continue
        json_ = item.get("json") is True or "api" in route.split("/") or route in shapes
        if method == "GET" and not json_:
            pages.setdefault(route, None)  # a server-rendered view: test it as a page
        elif (method, route, True) not in api:
            api.append((method, route, json_))
    live = _live(pages, api, app_map)
    # A GET the source took for JSON that the browser saw render a heading is a page.
    api = [a for a in api if not (a[0] == "GET" and a[1] in live and live[a[1]].heading)]
    api, absent = _untestable(pages, api, app_map)
    out: list[Candidate] = _login_wall_cases(app_map, running)
    if ("/" in pages or not api) and "/" not in absent:
        out += _page_cases("/", pages.pop("/", None), "critical", running, live.get("/"))
    entry = _entries([r for r in pages if not params(r)])
    for route in sorted(pages, key=lambda r: (area_of(r), r.count("/"), r)):
        prio = "critical" if entry.get(area_of(route)) == route else "high"
        prio = "medium" if params(route) else prio
        out += _page_cases(route, pages[route], prio, running, live.get(route))
    # Client-side routers answer every URL with index.html, so a 404 check would be wrong;
    # what the explored app answered for an unknown path beats the guess from frameworks.
    spa = bool({"react-router", "vite"} & frameworks) and "next" not in frameworks
    if unknown := unknown_path_status(app_map):
        spa = unknown != 404
    if out and not spa:
        out.append(
            Candidate(
                "page_not_found",
                "Unknown URL shows the not-found page",
                [f"Open {NOT_FOUND_PAGE}"],
                f"the page responds with status 404 and {NO_ERRORS}",
                "low",
                "home",
                [running],
            )
        )
    entry = _entries([r for m, r, _ in api if m == "GET" and not params(r)])
    key, asked, given = clean_api_key(stack.get("api_key")), set(), token_words(app_map)
    if given != WITH_TOKEN:  # the repository's own key, where it says: the source's is not
        key = {**app_map["credential"], "keys": []}
    for method, route, is_json in sorted(api, key=lambda a: (area_of(a[1]), a[1], a[0])):
        if method == "GET" and params(route) and sample_path(route, missing=True) in shapes:
            route = sample_path(route, missing=True)  # asked when explored (api_key_probe)
        shape = shapes.get(route) if method == "GET" else None
        answered = wrote.get((method, sample_path(route, missing=True), "empty"))
        out += _api_cases(
            method, route, is_json, entry.get(area_of(route)) == route, running, shape, answered
        )
        if gone := wrote.get((method, sample_path(route, missing=True), "signed_out")):
            out.append(_signed_out_case(method, route, gone, running))
        for probe in probes.get(route, []) if method == "GET" else []:
            out += _probe_case(route, probe, running, key, given)
        asked.add(route)
        if refused := wrote.get((method, route, "credentials")):
            out.append(_sign_in_case(method, route, refused, running))
        out += _account_cases(method, route, wrote, running)
    for path in sorted(set(probes) - asked):  # a route under the API's prefix that cannot exist
        for record in [r for r in probes[path] if r["auth"] in ("key", "token")]:
            out += _probe_case(path, record, running, key, given)
    return out


def _untestable(pages: dict[str, str | None], api: list, app_map: object) -> tuple[list, set]:
    """Drops what no test may open from ``pages`` and ``api``: a path that answered 404 when
    explored or sent the browser to a login (no session to show it), and an API route that
    logs out (the suite shares one signed-in session, and a server-side logout ends it for
    every later test); returns the API left and those paths."""
    absent = absent_paths(app_map) | behind_login(app_map)
    for route in [r for r in pages if r in absent]:
        del pages[route]
    gone = [a for a in api if logs_out(a[1]) or (a[0] == "GET" and a[1] in absent)]
    return [a for a in api if a not in gone], absent


def _login_wall_cases(app_map: object, running: str) -> list[Candidate]:
    """A page that sent the browser to a login when explored (in the session the tests
    share) is tested as that: it asks for a login (the address ends on the login page, which
    shows a password field), never as the page asked for."""
    login = login_page(app_map)
    if not login:
        return []
    out = []
    for path in sorted(behind_login(app_map) - {login}):
        if params(path) or logs_out(path):
            continue
        name = "Home page" if path == "/" else f"Page {path}"
        area = "home" if path == "/" else "page_" + area_of(path)
        expected = f"{ASKS_LOGIN} {_q(login)} with a password field; {NO_ERRORS}"
        title = f"{name} asks for a login"
        key = "page_" + (slug(path) or "home")
        out.append(Candidate(key, title, [f"Open {path}"], expected, "medium", area, [running]))
    return out


def _entries(routes: list[str]) -> dict[str, str]:
    """Top-level area → its entry route (fewest segments, then alphabetical)."""
    best: dict[str, str] = {}
    for route in sorted(routes, key=lambda r: (r.count("/"), len(r), r)):
        best.setdefault(area_of(route), route)
    return best


def _live(pages: dict[str, str | None], api: list, app_map: object) -> dict[str, LivePage]:
    """Route → the live page that shows it; live paths the source did not reveal join
    ``pages`` (a path that instances a dynamic route is that route's sample instead)."""
    api_routes = {route for _, route, _ in api}
    out: dict[str, LivePage] = {}
    dynamic = RouteTrie(route for route in pages if params(route))
    for path, page in live_pages(app_map).items():
        pattern = dynamic.match(path)
        if pattern:
            out.setdefault(pattern, page)
        elif "api" not in path.split("/") and (
            path not in api_routes or page.heading or page.shows or page.redirect
        ):
            # A route the source took for JSON that renders a heading, a field or a button
            # (or sends the browser on to a page) is a page too.
            pages.setdefault(path, None)
            out[path] = page
    return out


def _page_cases(
    route: str, heading: str | None, prio: str, running: str, live: LivePage | None = None
) -> list[Candidate]:
    area = "home" if route == "/" else "page_" + area_of(route)
    key = "page_" + (slug(route) or "home")
    url = live.path if live else sample_path(route)
    pre = [running]
    if params(route):
        pre.append(SAMPLE_NOTE.format(route))
    expected = PAGE_DYNAMIC if params(route) else PAGE_OK
    if live and live.blank and not params(route) and not logs_out(route):
        pre.append(LIVE_NOTE.format(live.path))
        expected = f"the page responds with a 2xx status; {BLANK}"
        titled = f", titled {_q(live.title)}" if live.title else ""
        if live.title:
            expected += f"; its document title is {_q(live.title)}"
        title = f"{'Home page' if route == '/' else f'Page {route}'} answers{titled} ({BLANK})"
        key = "page_" + (slug(route) or "home")
        return [Candidate(key, title, [f"Open {url}"], expected, prio, area, pre)]
    if live and live.redirect and not logs_out(route):
        return [_redirect_case(route, key, prio, area, running, live)]
    if live:
        pre.append(LIVE_NOTE.format(live.path))
        heading = live.heading  # what the app shows, not what its source suggested
    if heading:
        expected += f"; it shows the heading {_q(heading)}"
    for role, label in live.shows if live else []:
        expected += f"; the {role} {_q(label)} is visible"
    name = "Home page" if route == "/" else f"Page {route}"
    if logs_out(route):
        title = f"{name}, opened signed out, answers without a server error"
        steps = [SIGN_OUT, f"Open {url}"]
        return [Candidate(key, title, steps, PAGE_DYNAMIC, prio, area, [running])]
    # "Renders" alone is the last resort, and the title says so.
    if heading:
        title = f"{name} shows its heading {_q(heading)}"
    elif live and live.shows:
        title = f"{name} shows its {' and '.join(dict.fromkeys(r for r, _ in live.shows))}"
    else:
        title = name + SMOKE
    cases = [Candidate(key, title, [f"Open {url}"], expected, prio, area, pre)]
    if not params(route) and route.count("/") <= 1:
        cases.append(
            Candidate(
                key + "_title",
                f"{name} has a document title",
                [f"Open {url}"],
                "the page has a non-empty document title",
                "low",
                area,
                [running],
            )
        )
    return cases


def _redirect_case(
    route: str, key: str, prio: str, area: str, running: str, live: LivePage
) -> Candidate:
    """A page that sent the browser elsewhere when explored (in the session the tests share:
    ``/`` to ``/login``, a sign-in page to the home page once signed in) is tested as that
    redirect: it ends on the page it led to and shows that page's heading, never as itself."""
    name = "Home page" if route == "/" else f"Page {route}"
    expected = f"the browser ends on {_q(live.redirect)}; it renders a visible body"
    shown = f", which shows its heading {_q(live.heading)}" if live.heading else ""
    if live.heading:
        expected += f"; it shows the heading {_q(live.heading)}"
    title = f"{name} redirects to {live.redirect}{shown}"
    pre = [running, REDIRECT_NOTE.format(route, live.redirect)]
    return Candidate(key, title, [f"Open {live.path}"], f"{expected}; {NO_ERRORS}", prio, area, pre)


REDIRECT_NOTE = "Opened when the app was explored, {} sent the browser to {}"


def _api_cases(
    method: str,
    route: str,
    is_json: bool,
    entry: bool,
    running: str,
    shape: dict | None = None,
    answered: dict | None = None,
) -> list[Candidate]:
    area = "api_" + area_of(route)
    bare = route[4:] if route.startswith("/api/") else route  # keep ids short: no tc_api_get_api_
    key = f"api_{method.lower()}_{slug(bare) or 'root'}"
    pre = [running]
    dynamic = bool(params(route))
    if dynamic:
        pre.append(SAMPLE_NOTE.format(route))
    if method == "GET":
        if not dynamic:
            prio = "critical" if entry else "high"
            steps = [f"Send GET {route}"]
            if shape:  # what the explored app answered: its status and the body's shape
                pre.append(LIVE_NOTE.format(route))
                expected = describe(shape["status"], shape["body"], shape)
                title = f"GET {route} answers {summary(route, shape['body'])}"
                if shape["status"] >= 400:  # a refusal: its status and message are the point
                    title = f"GET {route} without credentials is refused: {_refused(shape)}"
                return [Candidate(key, title, steps, expected, prio, area, pre)]
            # Without a shape the test checks only the status: the title says so.
            expected = "responds with a 2xx status" + (" and a JSON body" if is_json else "")
            title = f"GET {route} answers 2xx{' JSON' if is_json else ''} ({STATUS_ONLY})"
            return [Candidate(key, title, steps, expected, prio, area, pre)]
        found = Candidate(
            key,
            f"GET {route} answers for a sample record",
            [f"Send GET {sample_path(route)}"],
            EXPECT["sample"],
            "medium",
            area,
            pre,
        )
        missing = Candidate(
            key + "_not_found",
            f"GET {route} returns 404 for a missing record",
            [f"Send GET {sample_path(route, missing=True)}"],
            EXPECT["missing"],
            "low",
            area,
            pre,
        )
        return [found, missing]
    body = "" if method == "DELETE" else " with an empty JSON body"
    if answered and answered.get("fields"):  # the page's form, its fields sent empty
        body = f" with the form fields {json.dumps(answered['fields'])} empty"
    url = sample_path(route, missing=True)
    if dynamic:
        title = f"{method} {route} on a missing record answers without a server error"
        expected = EXPECT["mutate_missing"]
    else:
        title = f"{method} {route} answers an empty payload without a server error"
        expected = EXPECT["mutate_empty"]
    prio = "medium" if dynamic else "high"
    if answered:  # what the app answered this very request when explored
        pre.append(WROTE_NOTE)
        path = url.split("?")[0]
        expected = _answered(answered, stayed=path)
        said = f": {_q(answered['message'])}" if answered["message"] else ""
        if answered["path_after"] and answered["path_after"] != path:
            said = said or f", ending on {answered['path_after']}"
        what = "on a missing record" if dynamic else "with an empty payload"
        title = f"{method} {route} {what} answers {answered['status']}{said}"
    return [Candidate(key, title, [f"Send {method} {url}{body}"], expected, prio, area, pre)]


WROTE_NOTE = (
    "The explored app answered this request so (the suite's session: signed in when the"
    " exploration was)"
)


SIGNED_OUT_NOTE = (
    "The explored app answered this request so without a session (a visitor not signed in);"
    " the test sends it from a request context of its own"
)


def _answered(answered: dict, stayed: str = "", says: bool = True) -> str:
    """What a test expects of a write the explored app answered: its status, the page it
    ended on (unless it stayed on ``stayed``) and, if ``says``, the answer's message."""
    expected = f"responds with status {answered['status']}"
    if answered["path_after"] and answered["path_after"] != stayed:
        expected += f"; it ends on {_q(answered['path_after'])}"
    if says and answered["message"]:
        expected += f"; the answer says {_q(answered['message'])}"
    return expected


# How a probe sent a write → the case's priority and the note on what the app answered.
_WRITES = {"signed_out": ("medium", SIGNED_OUT_NOTE), "unknown_credentials": ("high", WROTE_NOTE)}


def _write_case(
    method: str, route: str, tried: str, title: str, step: str, expected: str, running: str
) -> Candidate:
    """A write a probe sent to ``route`` (``tried`` names how), as a case sending it again."""
    priority, note = _WRITES[tried]
    key = f"api_{method.lower()}_{slug(route) or 'root'}_{tried}"
    area = "api_" + area_of(route)
    return Candidate(key, title, [step], expected, priority, area, [running, note])


def _signed_out_case(method: str, route: str, answered: dict, running: str) -> Candidate:
    """A write sent without a session (``signed_out``) that ended elsewhere than signed in:
    the test sends it signed out and expects where it ended (the login page)."""
    body = "" if method == "DELETE" else " with an empty JSON body"
    if answered["fields"]:
        body = f" with the form fields {json.dumps(answered['fields'])} empty"
    url = sample_path(route, missing=True)
    where = f"ends on {answered['path_after']}" if answered["path_after"] else "answers"
    title = f"{method} {route} signed out {where} ({answered['status']})"
    step = f"Send {method} {url}{body}, signed out"
    expected = _answered(answered, says=False)
    return _write_case(method, route, "signed_out", title, step, expected, running)


def _sign_in_case(method: str, route: str, answered: dict, running: str) -> Candidate:
    """A sign-in route sent a username and password no account has (``writes``): the test
    sends the same and expects what the app answered (its refusal)."""
    creds = " and ".join(f"{k} {_q(v)}" for k, v in CREDENTIALS.items())
    said = f": {_q(answered['message'])}" if answered["message"] else ""
    title = f"{method} {route} with credentials no account has answers {answered['status']}{said}"
    step = f"Send {method} {route} with the form {creds}"
    expected = _answered(answered, stayed=route)
    return _write_case(method, route, "unknown_credentials", title, step, expected, running)


ACCOUNT_VALUES = {
    "username": "a unique username",
    "email": "a unique email",
    "password": "a unique password",
}
ACCOUNT_NOTE = (
    "The explored app answered so, in a session of its own, for an account the probe signed"
    " up itself; the test signs up its own, with values unique to each run and retry"
)


def _account_form(record: dict, password: str = "a unique password") -> str:
    values = {
        name: password if kind == "password" else ACCOUNT_VALUES[kind]
        for name, kind in zip(record["fields"], record["kinds"], strict=True)
    }
    return f"with the account form {json.dumps(values)}, signed out"  # as the probe sent it


def _account_cases(method: str, route: str, wrote: dict, running: str) -> list[Candidate]:
    """What a sign-up route answers a new account signed up twice (``taken``) and one
    without a password (``no_password``), and a sign-in route that account's name with a
    wrong password (``wrong_password``): each test signs up an account of its own first
    where it needs one, then expects the app's answer (its message, ``{tag}`` the test's
    own), in a request context of its own."""
    taken = next(((k[1], v) for k, v in wrote.items() if k[2] == "taken"), None)
    if taken is None:
        return []
    signup, first = taken
    sign_up = f"Send POST {signup} {_account_form(first)}"
    pre = [running, ACCOUNT_NOTE]
    area = "api_" + area_of(route)
    key = f"api_{method.lower()}_{slug(route) or 'root'}"
    out = []
    for payload in ("taken", "no_password", "wrong_password"):
        record = wrote.get((method, route, payload))
        if record is None or (payload == "wrong_password") == (route == signup):
            continue
        expected = f"responds with status {record['status']}"
        if record["message"]:
            expected += f"; the answer says {_q(record['message'])}"
        said = f" {record['status']}" + (f": {_q(record['message'])}" if record["message"] else "")
        if payload == "taken":
            if record.get("signed_up_to"):
                expected += f"; the first answer ends on {_q(record['signed_up_to'])}"
            title = f"{method} {route} twice with the same new account answers"
            steps = [sign_up, sign_up]
        elif payload == "no_password":
            title = f"{method} {route} with a new user name and no password answers"
            steps = [f"Send {method} {route} {_account_form(record, 'an empty value')}"]
        else:
            title = f"{method} {route} with a new account's name and a wrong password answers"
            steps = [sign_up, f"Send {method} {route} {_account_form(record, 'a wrong password')}"]
        out.append(Candidate(f"{key}_{payload}", title + said, steps, expected, "high", area, pre))
    return out


def _refused(record: dict) -> str:
    message = f" {_q(record['message'])}" if record.get("message") else ""
    return f"{record['status']}{message}"


TOKEN_NOTE = (
    "The setup project got an API token from the repository's API token path with the test "
    "account's credentials"
)


def _probe_case(
    route: str, record: dict, running: str, key: dict | None = None, token: str = WITH_TOKEN
) -> list[Candidate]:
    """A GET asked with a credential the app cannot have issued (``api_probes``): the test
    sends the same header and expects the same refusal. With the API token or a key the
    source lists: the test sends the same and expects what the app answered."""
    auth = record["auth"]
    bare = route[4:] if route.startswith("/api/") else route

    def case(suffix: str, title: str, step: str, priority: str, *notes: str) -> list[Candidate]:
        return [
            Candidate(
                f"api_get_{slug(bare) or 'root'}_{suffix}",
                f"GET {route} with {title}",
                [f"Send GET {route} {step}"],
                describe(record["status"], record["body"], record),
                priority,
                "api_" + area_of(route),
                [running, *notes, LIVE_NOTE.format(route)],
            )
        ]

    refused = record["status"] >= 400
    if auth in ("key", "invalid_key") and key and (key["keys"] or auth == "invalid_key"):
        value = key["keys"][0] if auth == "key" else INVALID_KEY
        what = "the source's API key" if auth == "key" else "an API key no app issued"
        answered = _refused(record) if refused else summary(route, record["body"])
        return case(auth, f"{what} answers {answered}", key_words(key, value), "high")
    if auth == "token":  # the repository's API token path issued it to the test account
        what = "API token" if token == WITH_TOKEN else "API key"
        answered = (
            f"is refused: {_refused(record)}"
            if refused
            else f"answers {summary(route, record['body'])}"
        )
        return case("token", f"the {what} {answered}", token, "critical", TOKEN_NOTE)
    if auth not in AUTH_HEADERS:  # a key's probe with no key's place to send it in
        return []
    header = AUTH_HEADERS[auth]
    what = "a bearer token it never issued" if auth == "invalid_bearer" else "another scheme"
    step = f"with the header Authorization {_q(header)}"
    return case(auth, f"{what} is refused: {_refused(record)}", step, "high")


# --- mobile -------------------------------------------------------------------------------


def mobile_candidates(stack: dict) -> list[Candidate]:
    app_id = stack.get("app_id") if isinstance(stack.get("app_id"), str) else None
    installed = (
        f"The app ({one_line(app_id, 80)}) is installed" if app_id else "The app is installed"
    )
    pre = [installed + " on a device or emulator and Maestro can reach it"]
    screens = _str_items(stack.get("screens"), "name")
    root = next((s for s in screens if s.get("root") is True), None)
    root_text = ui_text((root or {}).get("title")) or ui_text((root or {}).get("tab_label"))
    expected = "the app starts and shows its first screen; no crash dialog appears"
    if root_text:
        expected = f"the app starts, {_q(root_text)} is visible and no crash dialog appears"
    launch = ["Launch the app with a clean state", "Wait for animations to end"]
    out = [
        Candidate(
            "app_launch",
            "App launches to its first screen",
            launch + ["Take a screenshot named app_launch"],
            expected,
            "critical",
            "launch",
            pre,
        )
    ]
    for screen in screens:
        if screen is root:
            continue
        out += _screen_cases(screen, launch, pre)
    return out


def _screen_cases(screen: dict, launch: list[str], pre: list[str]) -> list[Candidate]:
    name = ui_text(screen["name"]) or "Screen"
    route = clean_route(screen["route"]) if isinstance(screen.get("route"), str) else None
    key = "screen_" + (slug(route or "") or slug(name) or "screen")
    area = "screen_" + (area_of(route) if route and route != "/" else slug(name) or "screen")
    tab, title = ui_text(screen.get("tab_label")), ui_text(screen.get("title"))
    link = screen.get("deep_link") if isinstance(screen.get("deep_link"), str) else None
    extra = list(pre)
    if link:
        nav = f"Open deep link {sample_path(link)}"
    else:
        nav = f"Tap {_q(tab or title or name)}"
        if not tab:
            label = _q(title or name)
            extra.append(f"The {name} screen is reachable from the first screen via {label}")
    visible = title or tab  # an unknown title is not guessed: only "no crash" is checked
    known = (link or title) and not (route and params(route))
    prio = "critical" if tab else ("high" if known else "medium")
    steps = launch + [nav, "Wait for animations to end"]
    expected = f"the {name} screen opens and no crash dialog appears"
    if visible:
        expected = (
            f"the {name} screen is shown: {_q(visible)} is visible and no crash dialog appears"
        )
    shot = f"Take a screenshot named {slug(key)}"
    return [
        Candidate(key, f"{name} screen opens", steps + [shot], expected, prio, area, extra),
        Candidate(
            key + "_scroll",
            f"{name} screen scrolls without crashing",
            steps + ["Scroll down", shot + "_scrolled"],
            "the screen scrolls and no crash dialog appears",
            "low",
            area,
            extra,
        ),
    ]
