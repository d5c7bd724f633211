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

from access import oidc
from access.models import ApiToken, OidcTrustRule, Scope
from amtp_site import audit, rows
from repositories import access as repo_access

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
SERVICE_TOKEN_NEEDS_REPOSITORIES = (
    "repositories: a service token (no user) must name the repositories it may reach"
)
UNKNOWN_REPOSITORIES = "repositories: no repository {names} that you may see"
CSRF_FAILED = "CSRF check failed: session-authenticated unsafe requests need the CSRF token"
UNAUTHENTICATED = "send 'Authorization: Bearer <token>' with an active API token, or log in"

SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")


class ScopeMissing(Exception):
    """Authenticated, but not allowed to do this (HTTP 403)."""


class CsrfFailed(Exception):
    """A session-authenticated unsafe request without a valid CSRF token (HTTP 403)."""


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


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


def token_repository_ids(
    *, actor: audit.Actor | None, user, repositories: list[str] | None
) -> list[int] | None:
    """The ids of the repositories a token is limited to (None: not limited): registered and
    visible to the minter (one message for both); a service token names at least one."""
    if not repositories:
        if user is None:
            raise ValueError(SERVICE_TOKEN_NEEDS_REPOSITORIES)
        return None
    names = sorted(set(repositories))
    ids = repo_access.visible_ids(names, actor.user if actor else None, everything=actor is None)
    missing = [name for name in names if name not in ids]
    if missing:
        raise ValueError(UNKNOWN_REPOSITORIES.format(names=", ".join(map(repr, missing))))
    return sorted(ids.values())


def api_token_check(
    *, actor: audit.Actor | None, scopes: list[str], user=None, repositories=None
) -> list[int] | None:
    """The minting rules, for the service and the admin form alike: the minter holds
    ``runs.add_apitoken``, mints for themselves (superusers for anyone, services included),
    and no scope beyond the minter's, or the owner's, permissions; a service token names its
    repositories (token_repository_ids). ``actor=None`` is trusted code (tests, scripts) and
    is not checked beyond the shape. Returns the token's repository ids."""
    unknown = sorted(set(scopes) - set(Scope.values))
    if unknown:
        raise ValueError(UNKNOWN_SCOPES.format(scopes=unknown, known=Scope.values))
    if not scopes:
        raise ValueError(NO_SCOPES)
    ids = token_repository_ids(actor=actor, user=user, repositories=repositories)
    if actor is None:
        return ids
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
    return ids


def api_token_create(
    *,
    name: str,
    scopes: list[str],
    actor: audit.Actor | None,
    user=None,
    expires_at=None,
    repositories: list[str] | None = None,
) -> tuple[ApiToken, str]:
    """Create a token; return it with its secret (the only time the secret is available).
    ``repositories`` (full names) limits it to those; its right on each is still at most its
    owner's."""
    repository_ids = api_token_check(
        actor=actor, scopes=scopes, user=user, repositories=repositories
    )
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        name=name,
        user=user,
        created_by=actor.user if actor else None,
        scopes=sorted(set(scopes)),
        repository_ids=repository_ids,
        expires_at=expires_at,
        key_prefix=secret[:PREFIX_LENGTH],
        token_hash=hash_secret(secret),
    )
    owner = user.get_username() if user else "no user (a service token)"
    what = f"Minted with scopes {', '.join(token.scopes)} for {owner}"
    if repositories:
        what += f", limited to {', '.join(sorted(set(repositories)))}"
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
SELECT t.id, t.name, t.user_id, t.created_by_id, t.key_prefix, t.scopes, t.repository_ids,
       t.last_used_at, u.{username}, u.is_superuser, u.is_active
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
    ``owner_name``: its user's username, or None for a service token, and ``owner``: that
    user as far as rights need it (is_superuser, is_active; the rest deferred)."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    with connection.cursor() as cursor:
        cursor.execute(_authenticate_sql(), [hash_secret(secret)])
        row = cursor.fetchone()
    if row is None:
        return None
    # In the model's field order, as from_db needs them; the other fields are deferred.
    names = [
        *("id", "name", "user_id", "created_by_id", "key_prefix", "scopes", "repository_ids"),
        "last_used_at",
    ]
    *values, owner_name, is_superuser, is_active = row
    token = rows.load(ApiToken, values, names)
    token.owner_name = owner_name
    token.owner = None
    if token.user_id is not None:
        user = get_user_model()
        found = {"id": token.user_id, user.USERNAME_FIELD: owner_name}
        found.update(is_superuser=is_superuser, is_active=is_active)
        columns = [name for name in rows.attnames(user) if name in found]
        token.owner = rows.load(user, [found[name] for name in columns], columns)
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def _user(pk: int):
    return get_user_model().objects.get(pk=pk)


@dataclass(frozen=True)
class Principal:
    """Who is calling: ``name`` goes into requested_by/decided_by, ``key`` scopes idempotency,
    ``user`` files their audit entries (a service token's are filed under its minter).

    Where: ``owner`` is the user whose rights bound the caller (a session's user, a token's
    owner; None for a service token), ``only`` the token's repository ids (None: not
    limited). ``requester`` is who the four-eyes rule compares: the person, or the service
    token itself."""

    key: str
    name: str
    scopes: frozenset[str]
    via: str  # "token", "oidc" or "session"
    user: Any = None
    owner: Any = None
    only: frozenset[int] | None = None
    requester: str = ""

    @classmethod
    def for_token(cls, token: ApiToken) -> Principal:
        """``token`` as api_token_authenticate returns it. Its user (a service token's:
        its minter) is read only when an audit entry or a right needs it."""
        owner = getattr(token, "owner", None)
        actor_id = token.user_id or token.created_by_id
        user = owner or (SimpleLazyObject(lambda: _user(actor_id)) if actor_id else None)
        only = None if token.repository_ids is None else frozenset(token.repository_ids)
        return cls(
            f"token:{token.pk}",
            f"{token.owner_name or 'service'} (API token {token.key_prefix}…)",
            frozenset(token.scopes),
            "token",
            user,
            owner=user if token.user_id else None,  # a service token's rights are its list
            only=only,
            requester=f"user:{token.user_id}" if token.user_id else f"token:{token.pk}",
        )

    @classmethod
    def for_oidc(cls, rule: OidcTrustRule, repository_id: int, claims: dict) -> Principal:
        """A CI's OIDC token trusted by ``rule``: a service identity limited to the one
        repository it names (its audit entries filed under the rule's creator)."""
        name = f"{claims['repository']} CI (OIDC rule {rule.name})"[:200]
        return cls(
            f"oidc:{rule.pk}:{repository_id}",
            name,
            frozenset(rule.scopes),
            "oidc",
            rule.created_by,
            owner=None,  # like a service token: its rights are its list
            only=frozenset({repository_id}),
            requester=f"oidc:{rule.pk}:{repository_id}",
        )

    @classmethod
    def for_user(cls, user) -> Principal:
        scopes = frozenset(scopes_allowed(user))
        key = f"user:{user.pk}"
        return cls(key, user.get_username(), scopes, "session", user, user, None, key)

    @property
    def actor(self) -> audit.Actor:
        return audit.Actor(self.user, self.name, "api")

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise ScopeMissing(MISSING_SCOPE.format(scope=scope))

    # --- per repository (repositories.access): lists narrowed, objects checked ------------

    def restrict(self, queryset, *accesses: Access, via: str = "repository"):
        """``queryset`` narrowed to the repositories where this caller may do any of
        ``accesses``."""
        perms = [perm for access in accesses for perm in access.permissions]
        return repo_access.restrict(queryset, self.owner, perms, only=self.only, via=via)

    def repository_ids(self, *accesses: Access) -> frozenset[int] | None:
        """The ids of the repositories where this caller may do any of ``accesses`` (None:
        every repository), for sums that must leave the others out."""
        perms = [perm for access in accesses for perm in access.permissions]
        return repo_access.repository_ids(self.owner, perms, only=self.only)

    def may(self, *accesses: Access, obj) -> bool:
        perms = [perm for access in accesses for perm in access.permissions]
        return repo_access.may(self.owner, perms, obj, only=self.only)

    def require_on(self, access: Access, obj, repository: str) -> None:
        """403 naming the rule when the caller, who can see ``obj``, may not do ``access``."""
        if not self.may(access, obj=obj):
            message = repo_access.refusal(access.action, repository, access.permissions)
            raise ScopeMissing(message)


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


class OidcBearer(HttpBearer):
    """``Authorization: Bearer <JWT>`` from the configured OIDC issuer (access.oidc), when one is
    configured; a token that fails is refused (401 naming the check), not passed on."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        super().__init__()

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        token = token.strip()
        if not oidc.configured() or not oidc.looks_like_jwt(token):
            return None
        rule, repository_id, claims = oidc.authenticate(token)
        principal = Principal.for_oidc(rule, repository_id, claims)
        try:
            principal.require(self.scope)
        except ScopeMissing as exc:
            audit.record(principal.actor, rule, f"Refused an OIDC token: {exc}")
            raise
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
    """The ``auth=`` of an operation: a token (AMTP's or a CI's OIDC token) with its scope,
    else a staff session with its permission."""
    return [BearerToken(access.scope), OidcBearer(access.scope), StaffSession(access)]
