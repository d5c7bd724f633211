"""A repository's test data hooks: the rules of its set-up and tear-down settings.

Each hook is either a URL on the app under test, which the verifier POSTs to from inside the
sandbox, or a command (an argv, no shell unless it names one) run in the sandbox. A URL is a
path (``/api/test-data/seed``, called on the run's target) or an absolute URL on the preview
URL's origin: the call is made to the app under test and nowhere else. These rules are the
admin's; the verifier checks the origin again against the run's own target.
"""

from __future__ import annotations

from typing import Any

from repositories import targets

MAX_URL_LENGTH = 500
MAX_ARGS, MAX_ARG_CHARS, MAX_ARGV_CHARS = 32, 1000, 4000
MIN_TIMEOUT_S, MAX_TIMEOUT_S, DEFAULT_TIMEOUT_S = 1, 300, 60
HOOKS = ("setup", "teardown")

URL_INVALID = (
    "give a path on the app such as /api/test-data/seed, or an http(s) URL on the preview "
    "URL's origin (no spaces, backslashes, user names or fragments)"
)
URL_OTHER_ORIGIN = (
    "{url} is not on the preview URL's origin ({origin}): test data calls go to the app under "
    "test only; give a path such as /api/test-data/seed"
)
URL_NO_PREVIEW = (
    "an absolute URL needs a preview URL on the same origin; give a path such as "
    "/api/test-data/seed, which is called on each run's target"
)
COMMAND_NOT_A_LIST = (
    'give the command as a JSON list of strings, e.g. ["node", "-e", "…"]; it runs without a '
    'shell unless it names one (["sh", "-c", "…"])'
)
COMMAND_EMPTY_PROGRAM = "the first item names the program to run: it cannot be empty"
COMMAND_TOO_MANY = f"at most {MAX_ARGS} arguments"
COMMAND_ARG_TOO_LONG = f"argument {{n}} is over {MAX_ARG_CHARS} characters"
COMMAND_TOO_LONG = f"at most {MAX_ARGV_CHARS} characters in all"
COMMAND_CONTROL = "argument {n} holds a control character (only tab and newline are allowed)"
URL_AND_COMMAND = "give a URL or a command for the {hook}, not both"
TIMEOUT_OUT_OF_RANGE = f"between {MIN_TIMEOUT_S} and {MAX_TIMEOUT_S} seconds"


def _is_path(value: str) -> bool:
    return value.startswith("/") and not value.startswith("//")


def url_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a hook URL (None: it can; "" is no hook)."""
    if value == "":
        return None
    if not isinstance(value, str):
        return URL_INVALID
    if len(value) > MAX_URL_LENGTH:
        return targets.TARGET_URL_TOO_LONG
    # A backslash reads as a slash to browsers: "/\evil.example" would leave the origin.
    if any(ord(c) <= 32 or ord(c) == 127 or c in "\\#" for c in value):
        return URL_INVALID
    if _is_path(value):
        return None
    return targets.target_url_problem(value) and URL_INVALID


def origin_problem(value: str, preview_url: str) -> str | None:
    """Why the (valid) hook URL ``value`` is not on ``preview_url``'s origin, or None."""
    if not value or _is_path(value):
        return None
    if not preview_url:
        return URL_NO_PREVIEW
    if targets.origin(value) != targets.origin(preview_url):
        scheme, host, port = targets.origin(preview_url)
        return URL_OTHER_ORIGIN.format(
            url=targets.display(value), origin=f"{scheme}://{host}:{port}"
        )
    return None


def command_problems(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(arg, str) for arg in value):
        return [COMMAND_NOT_A_LIST]
    if not value:
        return []
    problems = [COMMAND_EMPTY_PROGRAM] if not value[0].strip() else []
    if len(value) > MAX_ARGS:
        return [*problems, COMMAND_TOO_MANY]
    if sum(map(len, value)) > MAX_ARGV_CHARS:
        problems.append(COMMAND_TOO_LONG)
    for n, arg in enumerate(value, 1):
        if len(arg) > MAX_ARG_CHARS:
            problems.append(COMMAND_ARG_TOO_LONG.format(n=n))
        elif any((ord(c) < 32 and c not in "\t\n") or ord(c) == 127 for c in arg):
            problems.append(COMMAND_CONTROL.format(n=n))
    return problems


def timeout_problems(value: int) -> list[str]:
    return [] if MIN_TIMEOUT_S <= value <= MAX_TIMEOUT_S else [TIMEOUT_OUT_OF_RANGE]


def hook_problems(values: dict, checked: set[str]) -> dict[str, list[str]]:
    """Problems between fields: URL and command both given; an absolute URL off the preview
    URL's origin. ``checked``: the fields already found wrong (not judged again)."""
    errors: dict[str, list[str]] = {}
    for hook in HOOKS:
        url, command = f"test_data_{hook}_url", f"test_data_{hook}_command"
        if {url, command} & checked:
            continue
        if values[url] and values[command]:
            errors[command] = [URL_AND_COMMAND.format(hook=hook.replace("setup", "set-up"))]
        elif "preview_url" not in checked and (
            problem := origin_problem(values[url], values["preview_url"])
        ):
            errors[url] = [problem]
    return errors


def resolve(value: str, target_url: str) -> str:
    """The URL a hook setting calls for a run aimed at ``target_url``: a path on its origin,
    or the absolute URL itself; ValueError when that is not on the target's origin."""
    scheme, host, port = targets.origin(target_url)
    netloc = f"[{host}]" if ":" in host else host
    url = f"{scheme}://{netloc}:{port}{value}" if _is_path(value) else value
    if url_problem(value) or targets.origin(url) != (scheme, host, port):
        raise ValueError(
            URL_OTHER_ORIGIN.replace("preview URL", "target").format(
                url=targets.display(url), origin=f"{scheme}://{host}:{port}"
            )
        )
    return url
