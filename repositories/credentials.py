"""The login credentials of a repository's preview: the one place they are encrypted,
decrypted and resolved.

Stored credentials are Fernet tokens (AES-128-CBC and HMAC-SHA256) under the key
``AMTP_CREDENTIALS_KEY`` (comma-separated keys: the first encrypts, each decrypts, so a key can
be rotated). In DEBUG without it, the settings derive a development key from ``SECRET_KEY``;
without DEBUG a missing key is an error wherever credentials are stored or used. Instead of stored
values, a repository may name environment variables of the worker (``AMTP_LOGIN_*``).

Plain values exist only in the worker thread of the stage that logs in (ExploreApp,
VerifyTests), which loads the repository from PostgreSQL itself: they are never activity input
or output. :func:`in_use` adds them to what every text leaving the box is scrubbed of.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from repositories.boot_settings import WORKER_PREFIX
from repositories.errors import CredentialsUnavailable
from repositories.secrets import also_scrubbed

NO_KEY = (
    "AMTP_CREDENTIALS_KEY is not set: stored login credentials are encrypted with it (a Fernet "
    "key, from `python -c 'from cryptography.fernet import Fernet; "
    "print(Fernet.generate_key().decode())'`); set it on the web and worker processes, or name "
    "environment variables of the worker instead (login_username_env, login_password_env)"
)
BAD_KEY = (
    "AMTP_CREDENTIALS_KEY is not a Fernet key (32 url-safe base64-encoded bytes; several are "
    "separated by commas)"
)
WRONG_KEY = (
    "the stored login {what} of {repo} does not decrypt with AMTP_CREDENTIALS_KEY (was the key "
    "replaced? list the old key after the new one), or set the credentials again"
)
NO_ENV = (
    "the worker has no environment variable {name} (the login {what} of {repo}): set it on "
    "every worker, or store the {what} in the repository's settings instead"
)


@dataclass(frozen=True)
class Credentials:
    """A user name and password in plain text: never printed (``repr`` hides them)."""

    username: str = field(repr=False)
    password: str = field(repr=False)


def _fernet() -> MultiFernet:
    keys = [key.strip() for key in settings.AMTP_CREDENTIALS_KEY.split(",") if key.strip()]
    if not keys:  # DEBUG has derived one (settings)
        raise CredentialsUnavailable(NO_KEY)
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError:
        raise CredentialsUnavailable(BAD_KEY) from None


def encrypt(value: str) -> str:
    """``value`` as a Fernet token (text); CredentialsUnavailable without a key."""
    return _fernet().encrypt(value.encode()).decode()


def credentials_for(repository) -> Credentials:
    """The plain user name and password of ``repository``'s login recipe (stored, or from the
    worker's environment); CredentialsUnavailable naming what is missing."""
    return Credentials(_value(repository, "username"), _value(repository, "password"))


def _value(repository, what: str) -> str:
    name = getattr(repository, f"login_{what}_env")
    if name:
        value = os.environ.get(name, "")
        if not value:
            raise CredentialsUnavailable(NO_ENV.format(name=name, what=what, repo=repository))
        return value
    token = getattr(repository, f"login_{what}_token").encode()
    if not token:  # none needed (an API key's recipe has no user name): validation says
        return ""
    try:
        return _fernet().decrypt(token).decode()
    except InvalidToken:
        raise CredentialsUnavailable(WRONG_KEY.format(what=what, repo=repository)) from None


@contextlib.contextmanager
def in_use(credentials: Credentials | None) -> Iterator[None]:
    """Within the block (this thread), every scrubbed text is also scrubbed of
    ``credentials``' values, as typed and as a URL carries them."""
    if credentials is None:
        yield
        return
    with also_scrubbed([credentials.username, credentials.password]):
        yield


NO_APP_ENV = (
    "the worker has no environment variable {name} (the app's {app} of {repo}): set it on "
    "every worker, or store {app} in the repository's boot settings instead"
)
WRONG_KEY_APP_ENV = (
    "the stored app environment of {repo} does not decrypt with AMTP_CREDENTIALS_KEY (was the "
    "key replaced? list the old key after the new one), or set it again"
)


def app_environment(repository) -> dict[str, str]:
    """The plain values of the app recipe's ``secret_env`` (repositories.boot_settings): the
    stored ones decrypted, the worker's ``AMTP_APP_<NAME>`` ones read; CredentialsUnavailable
    naming what is missing. For the stage that starts the app, in the worker only."""
    values: dict[str, str] = {}
    if repository.boot_env_token:
        try:
            values.update(json.loads(_fernet().decrypt(repository.boot_env_token.encode())))
        except InvalidToken:
            raise CredentialsUnavailable(WRONG_KEY_APP_ENV.format(repo=repository)) from None
    for name in repository.boot_env_worker or ():
        value = os.environ.get(WORKER_PREFIX + name, "")
        if not value:
            raise CredentialsUnavailable(
                NO_APP_ENV.format(name=WORKER_PREFIX + name, app=name, repo=repository)
            )
        values[name] = value
    return values
