"""Who may call the API: bearer tokens with scopes, or staff sessions (CSRF-checked) with
exactly their Django permissions.

A token is ``amtp_`` + 43 URL-safe characters (256 random bits). Only its SHA-256 is stored,
so the secret exists once: in the answer to :func:`api_token_create`. Lookups go by hash, so
no comparison of secrets happens in Python at all. A token never carries more than the person
who minted it may do (:func:`scopes_allowed`), and every mint and revoke is in the audit trail.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import SimpleLazyObject
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from amtp_site import audit, rows
from runs.models_api import ApiToken, Scope

TOKEN_PREFIX = "amtp_"
PREFIX_LENGTH = 12  # "amtp_" + 7 characters of the secret: enough to recognise, useless to guess
LAST_USED_PRECISION = timedelta(minutes=1)  # at most one write per token per minute
ADD_TOKEN_PERMISSION = "runs.add_apitoken"
REVOKE_TOKEN_PERMISSION = "runs.change_apitoken"

UNKNOWN_SCOPES = "unknown scope(s) {scopes}; choose from {known}"
NO_SCOPES = "a token needs at least one scope"
MISSING_SCOPE = "these credentials lack the '{scope}' scope"
MISSING_PERMISSION = "{action} needs the {permission} permission for session users"
TOKEN_PERMISSION = "{action} needs the '{permission}' permission"
SCOPES_BEYOND_RIGHTS = (
    "scopes: your permissions do not allow {scopes}; a token gets at most what its minter may do"
)
OWNER_LACKS_SCOPES = (
    "scopes: {owner}'s permissions do not allow {scopes}; a token gets at most what its owner "
    "may do"
)
ONLY_FOR_ONESELF = (
    "user: you can mint tokens only for yourself; tokens for other users and service tokens "
    "are minted by superusers"
)
CSRF_FAILED = "CSRF check failed: session-authenticated unsafe requests need the CSRF token"
UNAUTHENTICATED = "send 'Authorization: Bearer <token>' with an active API token, or log in"

SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")


class ScopeMissing(Exception):
    """Authenticated, but not allowed to do this (HTTP 403)."""


class CsrfFailed(Exception):
    """A session-authenticated unsafe request without a valid CSRF token (HTTP 403)."""


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


# --- what each operation needs -------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    """What an API operation needs: a token's ``scope``, or for a session user any one of
    ``permissions`` (the permissions the admin asks for the same data or action)."""

    scope: str
    action: str  # for the 403 message, e.g. "starting runs"
    permissions: tuple[str, ...]

    def allows(self, user) -> bool:
        return any(user.has_perm(permission) for permission in self.permissions)

    def refusal(self) -> str:
        permission = " or ".join(f"'{p}'" for p in self.permissions)
        return MISSING_PERMISSION.format(action=self.action, permission=permission)


READ_RUNS = Access(Scope.RUNS_READ, "reading runs", ("runs.view_run",))
START_RUNS = Access(Scope.RUNS_WRITE, "starting runs", ("runs.add_run",))
CANCEL_RUNS = Access(Scope.RUNS_WRITE, "cancelling runs", ("runs.change_run",))
READ_ARTIFACTS = Access(
    Scope.RUNS_READ, "reading artifacts", ("runs.view_artifact", "runs.change_artifact")
)
READ_APPROVALS = Access(
    Scope.RUNS_READ,
    "listing approvals",
    ("approvals.view_approval", "approvals.change_approval", "approvals.decide_approval"),
)
DECIDE_APPROVALS = Access(
    Scope.APPROVALS_DECIDE, "deciding approvals", ("approvals.decide_approval",)
)
ACCESSES = (READ_RUNS, START_RUNS, CANCEL_RUNS, READ_ARTIFACTS, READ_APPROVALS, DECIDE_APPROVALS)


def scopes_allowed(user) -> set[str]:
    """The scopes whose every operation ``user`` may perform: what a token of theirs may hold."""
    return {
        scope
        for scope in Scope.values
        if all(access.allows(user) for access in ACCESSES if access.scope == scope)
    }


# --- services ----------------------------------------------------------------------------


def api_token_check(*, actor: audit.Actor | None, scopes: list[str], user=None) -> None:
    """The minting rules, for the service and the admin form alike: the minter holds
    ``runs.add_apitoken``, mints for themselves (superusers for anyone, services included),
    and no scope beyond the minter's, or the owner's, permissions. ``actor=None`` is trusted
    code (tests, scripts) and is not checked."""
    unknown = sorted(set(scopes) - set(Scope.values))
    if unknown:
        raise ValueError(UNKNOWN_SCOPES.format(scopes=unknown, known=Scope.values))
    if not scopes:
        raise ValueError(NO_SCOPES)
    if actor is None:
        return
    minter = actor.user
    if not minter.has_perm(ADD_TOKEN_PERMISSION):
        raise PermissionDenied(
            TOKEN_PERMISSION.format(action="minting tokens", permission=ADD_TOKEN_PERMISSION)
        )
    if not minter.is_superuser and (user is None or user.pk != minter.pk):
        raise PermissionDenied(ONLY_FOR_ONESELF)
    beyond = sorted(set(scopes) - scopes_allowed(minter))
    if beyond:
        raise PermissionDenied(SCOPES_BEYOND_RIGHTS.format(scopes=", ".join(beyond)))
    beyond = sorted(set(scopes) - scopes_allowed(user)) if user is not None else []
    if beyond:
        owner = user.get_username()
        raise PermissionDenied(OWNER_LACKS_SCOPES.format(owner=owner, scopes=", ".join(beyond)))


def api_token_create(
    *, name: str, scopes: list[str], actor: audit.Actor | None, user=None, expires_at=None
) -> tuple[ApiToken, str]:
    """Create a token; return it with its secret (the only time the secret is available)."""
    api_token_check(actor=actor, scopes=scopes, user=user)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        name=name,
        user=user,
        created_by=actor.user if actor else None,
        scopes=sorted(set(scopes)),
        expires_at=expires_at,
        key_prefix=secret[:PREFIX_LENGTH],
        token_hash=hash_secret(secret),
    )
    owner = user.get_username() if user else "no user (a service token)"
    what = f"Minted with scopes {', '.join(token.scopes)} for {owner}"
    audit.record(actor, token, what, flag=audit.ADDITION)
    return token, secret


def api_token_revoke(*, token: ApiToken, actor: audit.Actor | None) -> ApiToken:
    """Revoke (once); needs ``runs.change_apitoken`` unless ``actor`` is None (trusted code)."""
    if actor is not None and not actor.user.has_perm(REVOKE_TOKEN_PERMISSION):
        raise PermissionDenied(
            TOKEN_PERMISSION.format(action="revoking tokens", permission=REVOKE_TOKEN_PERMISSION)
        )
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    token.refresh_from_db()
    if revoked:
        audit.record(actor, token, "Revoked")
    return token


# Every API request runs this: one statement, without the ORM compiling a query (a third of the
# CPU of ``POST /api/runs`` went into compiling the select_related lookup it replaces).
# Revocation, expiry and the owner's being active are checked in it.
_AUTHENTICATE = """
SELECT t.id, t.name, t.user_id, t.created_by_id, t.key_prefix, t.scopes, t.last_used_at,
       u.{username}
FROM api_tokens t LEFT JOIN {users} u ON u.id = t.user_id
WHERE t.token_hash = %s AND t.revoked_at IS NULL
  AND (t.expires_at IS NULL OR t.expires_at > now()) AND (t.user_id IS NULL OR u.is_active)
"""


@functools.cache
def _authenticate_sql() -> str:
    user = get_user_model()
    return _AUTHENTICATE.format(
        users=rows.table(user), username=rows.column(user, user.USERNAME_FIELD)
    )


def api_token_authenticate(secret: str) -> ApiToken | None:
    """The active token with this secret (recording its use), or None. The token comes with
    ``owner_name``: its user's username, or None for a service token."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    with connection.cursor() as cursor:
        cursor.execute(_authenticate_sql(), [hash_secret(secret)])
        row = cursor.fetchone()
    if row is None:
        return None
    # In the model's field order, as from_db needs them; the other fields are deferred.
    names = ["id", "name", "user_id", "created_by_id", "key_prefix", "scopes", "last_used_at"]
    *values, owner_name = row
    token = rows.load(ApiToken, values, names)
    token.owner_name = owner_name
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


# --- principals and the ninja auth classes -------------------------------------------------


def _user(pk: int):
    return get_user_model().objects.get(pk=pk)


@dataclass(frozen=True)
class Principal:
    """Who is calling: ``name`` goes into requested_by/decided_by, ``key`` scopes idempotency,
    ``user`` files their audit entries (a service token's are filed under its minter)."""

    key: str
    name: str
    scopes: frozenset[str]
    via: str  # "token" or "session"
    user: Any = None

    @classmethod
    def for_token(cls, token: ApiToken) -> Principal:
        """``token`` as api_token_authenticate returns it. Its user (a service token's:
        its minter) is read only when an audit entry needs it."""
        actor_id = token.user_id or token.created_by_id
        user = SimpleLazyObject(lambda: _user(actor_id)) if actor_id else None
        return cls(
            f"token:{token.pk}",
            f"{token.owner_name or 'service'} (API token {token.key_prefix}…)",
            frozenset(token.scopes),
            "token",
            user,
        )

    @classmethod
    def for_user(cls, user) -> Principal:
        scopes = frozenset(scopes_allowed(user))
        return cls(f"user:{user.pk}", user.get_username(), scopes, "session", user)

    @property
    def actor(self) -> audit.Actor:
        return audit.Actor(self.user, self.name, "api")

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise ScopeMissing(MISSING_SCOPE.format(scope=scope))


class BearerToken(HttpBearer):
    """``Authorization: Bearer amtp_…`` with the operation's scope."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        super().__init__()

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        api_token = api_token_authenticate(token.strip())
        if api_token is None:
            return None
        principal = Principal.for_token(api_token)
        principal.require(self.scope)
        return principal


class StaffSession(APIKeyCookie):
    """A logged-in staff user with the operation's permission; unsafe methods must carry the
    CSRF token (cookie auth)."""

    param_name = settings.SESSION_COOKIE_NAME

    def __init__(self, access: Access) -> None:
        self.access = access
        super().__init__(csrf=True)

    def __call__(self, request: HttpRequest) -> Principal | None:
        user = getattr(request, "user", None)
        if user is None or not (user.is_authenticated and user.is_active and user.is_staff):
            return None
        if request.method not in SAFE_METHODS and check_csrf(request) is not None:
            raise CsrfFailed(CSRF_FAILED)
        if not self.access.allows(user):
            raise ScopeMissing(self.access.refusal())
        return Principal.for_user(user)

    def authenticate(self, request: HttpRequest, key: str | None) -> Principal | None:
        return self(request)  # ``__call__`` does the work; ninja requires the method


def scoped(access: Access) -> list:
    """The ``auth=`` of an operation: a token with its scope, else a staff session with its
    permission."""
    return [BearerToken(access.scope), StaffSession(access)]
