"""The login recipe of a repository's preview: its rules (checked by repositories.services)
and the recipe as the stages use it.

A recipe logs in the way a person does, whatever the app does underneath (a form POST, or a
``fetch`` and a client-side navigation): open ``login_path`` on the target's origin, fill the
fields whose accessible labels are ``login_username_label`` and ``login_password_label``,
click the button named ``login_submit``, then wait until ``login_success`` holds: a path
(starting with ``/``) the page's URL reaches, or else a text the page shows. The credentials
are typed from the environment variables ``AMTP_E2E_USERNAME`` and ``AMTP_E2E_PASSWORD`` of
the sandboxed browser's process (:mod:`repositories.credentials` resolves them).

A JSON API with token auth has no login page: its recipe is ``api_token_path`` instead
(:class:`ApiToken`), the path where the same credentials are POSTed as a form (``username``,
``password``: OAuth 2.0's password grant, RFC 6749 4.3; JSON when a form gets no token) for
a token sent as a bearer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit

from repositories.targets import origin, target_url_problem

USERNAME_VAR, PASSWORD_VAR = "AMTP_E2E_USERNAME", "AMTP_E2E_PASSWORD"
CREDENTIALS = ("login_username", "login_password")  # plain values, only ever written
RECIPE = ("login_username_label", "login_password_label", "login_submit", "login_success")
ENV_FIELDS = ("login_username_env", "login_password_env")
TOKEN_PATH = "api_token_path"
KEY_IN = "api_key_in"
_KEY_IN = re.compile(r"^(query|header) ([\w.-]{1,40})$")
WAYS = ("login_path", TOKEN_PATH, KEY_IN)  # one way to sign in at most
# On the target's own origin: "//host" and "/\\host" lead elsewhere in a browser.
PATH = re.compile(r"^/(?![/\\])[^\s#\\\x00-\x1f\x7f]{0,499}$")
ENV_NAME = re.compile(r"^AMTP_LOGIN_[A-Z0-9_]{1,52}$")
MIN_LENGTH = {"login_username": 3, "login_password": 8}
MAX_LENGTH = 500

LOGIN_PATH_INVALID = (
    "give a path on the preview's origin (e.g. /login) or an http(s) URL on the preview URL's "
    "origin"
)
LOGIN_PATH_ELSEWHERE = (
    "{url} is not on the preview URL's origin ({origin}): the browser logs in on the app's own "
    "origin only"
)
LOGIN_PATH_NO_PREVIEW = "a URL needs a preview URL to be on: give a path instead (e.g. /login)"
REQUIRED = "required when a login path is set"
TOKEN_PATH_INVALID = (
    "a path on the app's origin where the API issues a token (e.g. /token): no // or \\ at "
    "its start, no spaces, control characters or #, at most 500 characters"
)
TOKEN_PATH_AND_LOGIN = (
    "give one of a login path, an API token path and an API key's place: the tests sign in one way"
)
KEY_IN_INVALID = (
    "'query NAME' or 'header NAME', NAME 1-40 letters, digits, _ . or - (e.g. query api-key, "
    "header X-API-Key)"
)
TEXT_INVALID = "one line of text, at most 200 characters, no control characters"
SUCCESS_PATH_INVALID = "a path the app lands on, e.g. /dashboard (no // or \\ at its start)"
ENV_INVALID = (
    "a variable name starting with AMTP_LOGIN_ (capitals, digits, _): the worker's other "
    "variables hold its own keys"
)
CREDENTIAL_MISSING = (
    "required when a login path, an API token path or an API key's place is set: type it "
    "(stored encrypted) or name a worker environment variable holding it ({field})"
)
CREDENTIAL_TWICE = "give the stored {what} or this variable, not both (remove the stored one)"
CREDENTIAL_INVALID = "{low} to {high} characters, no control characters"


@dataclass(frozen=True)
class Recipe:
    """A repository's way to log in (no credentials in it: it may be shown and committed)."""

    path: str
    username_label: str
    password_label: str
    submit: str
    success: str  # a path ("/dashboard") or a text the page shows

    @property
    def success_is_path(self) -> bool:
        return self.success.startswith("/")

    def as_config(self) -> dict:
        return {
            "path": self.path,
            "username_label": self.username_label,
            "password_label": self.password_label,
            "submit": self.submit,
            "success": self.success,
            "success_is_path": self.success_is_path,
        }


@dataclass(frozen=True)
class ApiToken:
    """A token-auth API's way in (no credentials in it): POST the login credentials to
    ``path`` as a form, send the answer's ``access_token`` as ``Authorization: Bearer``."""

    path: str

    def as_config(self) -> dict:
        return {"token_path": self.path}


@dataclass(frozen=True)
class ApiKey:
    """A ready API key's place (the key itself is the login password): ``where`` is "query
    parameter" or "header", ``name`` its name."""

    where: str
    name: str

    @property
    def path(self) -> str:  # what a failure names: where the key goes
        return f"the {self.where} {self.name}"

    def as_config(self) -> dict:
        return {"key_in": self.where, "key_name": self.name}


def recipe_of(repository) -> Recipe | ApiToken | ApiKey | None:
    """``repository``'s login recipe (a login page, an API's token path, a key's place), or
    None when it logs in nowhere."""
    if not repository.login_path:
        if getattr(repository, TOKEN_PATH, ""):
            return ApiToken(repository.api_token_path)
        if found := _KEY_IN.match(getattr(repository, KEY_IN, "")):
            where = "query parameter" if found.group(1) == "query" else "header"
            return ApiKey(where, found.group(2))
        return None
    # Each of the recipe's fields is the repository's login_ column of its name.
    return Recipe(**{f.name: getattr(repository, f"login_{f.name}") for f in fields(Recipe)})


def normalised_login_path(value: str, preview_url: str) -> tuple[str, str | None]:
    """(the login path as stored: a path with its query, the problem or None)."""
    if not value or (isinstance(value, str) and PATH.match(value)):
        return value, None
    if not isinstance(value, str) or target_url_problem(value) is not None:
        return value, LOGIN_PATH_INVALID
    if not preview_url or target_url_problem(preview_url) is not None:
        return value, LOGIN_PATH_NO_PREVIEW
    if origin(value) != origin(preview_url):
        shown = [
            f"{scheme}://{host}:{port}"
            for scheme, host, port in (origin(value), origin(preview_url))
        ]
        return value, LOGIN_PATH_ELSEWHERE.format(url=shown[0], origin=shown[1])
    parts = urlsplit(value)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return (path, None) if PATH.match(path) else (value, LOGIN_PATH_INVALID)


def _text_problem(value: Any) -> str | None:
    if not isinstance(value, str) or len(value) > 200 or value != value.strip():
        return TEXT_INVALID
    return TEXT_INVALID if any(ord(c) < 32 or ord(c) == 127 for c in value) else None


def recipe_problems(values: dict, plain: dict[str, str | None]) -> dict[str, list[str]]:
    """{field: problems} of the recipe in ``values`` (every setting as it would be saved,
    the credential tokens included), with ``plain``: the credentials typed now (None: kept,
    "": removed)."""
    errors: dict[str, list[str]] = {}
    for name in ENV_FIELDS:
        if values[name] and not ENV_NAME.match(values[name]):
            errors[name] = [ENV_INVALID]
    for name, value in plain.items():
        low, high = MIN_LENGTH[name], MAX_LENGTH
        bad = not isinstance(value, str) or not low <= len(value) <= high
        if value and (bad or any(ord(c) < 32 or ord(c) == 127 for c in value)):
            errors[name] = [CREDENTIAL_INVALID.format(low=low, high=high)]
    token_path, key_in = values.get(TOKEN_PATH) or "", values.get(KEY_IN) or ""
    if token_path and not PATH.match(token_path):
        errors[TOKEN_PATH] = [TOKEN_PATH_INVALID]
    if key_in and not _KEY_IN.match(key_in):
        errors[KEY_IN] = [KEY_IN_INVALID]
    given = [name for name in WAYS if values.get(name)]
    for name in given[1:]:
        errors.setdefault(name, [TOKEN_PATH_AND_LOGIN])
    if not given:
        return errors
    for name in RECIPE if values["login_path"] else ():
        problem = REQUIRED if not values[name] else _text_problem(values[name])
        if problem is None and name == "login_success" and values[name].startswith("/"):
            problem = None if PATH.match(values[name]) else SUCCESS_PATH_INVALID
        if problem:
            errors[name] = [problem]
    for name, env in zip(CREDENTIALS, ENV_FIELDS, strict=True):
        stored = plain[name] if plain.get(name) is not None else values[f"{name}_token"]
        if stored and values[env] and env not in errors:
            errors[env] = [CREDENTIAL_TWICE.format(what=name.removeprefix("login_"))]
        elif not stored and not values[env] and (given != [KEY_IN] or name != "login_username"):
            errors.setdefault(name, [CREDENTIAL_MISSING.format(field=env)])
    return errors
