"""Who may call the API: bearer tokens with scopes, or staff sessions (CSRF-checked).

A token is ``amtp_`` + 43 URL-safe characters (256 random bits). Only its SHA-256 is stored,
so the secret exists once: in the answer to :func:`api_token_create`. Lookups go by hash, so
no comparison of secrets happens in Python at all.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from runs.models_api import ApiToken, Scope

TOKEN_PREFIX = "amtp_"
PREFIX_LENGTH = 12  # "amtp_" + 7 characters of the secret: enough to recognise, useless to guess
LAST_USED_PRECISION = timedelta(minutes=1)  # at most one write per token per minute

UNKNOWN_SCOPES = "unknown scope(s) {scopes}; choose from {known}"
NO_SCOPES = "a token needs at least one scope"
MISSING_SCOPE = "these credentials lack the '{scope}' scope"
MISSING_DECIDE_PERMISSION = (
    "deciding approvals needs the 'approvals.decide_approval' permission for session users"
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


# --- services ----------------------------------------------------------------------------


def api_token_create(
    *, name: str, scopes: list[str], user=None, expires_at=None
) -> tuple[ApiToken, str]:
    """Create a token; return it with its secret (the only time the secret is available)."""
    unknown = sorted(set(scopes) - set(Scope.values))
    if unknown:
        raise ValueError(UNKNOWN_SCOPES.format(scopes=unknown, known=Scope.values))
    if not scopes:
        raise ValueError(NO_SCOPES)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        name=name,
        user=user,
        scopes=sorted(set(scopes)),
        expires_at=expires_at,
        key_prefix=secret[:PREFIX_LENGTH],
        token_hash=hash_secret(secret),
    )
    return token, secret


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


def api_token_authenticate(secret: str) -> ApiToken | None:
    """The active token with this secret (recording its use), or None."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    now = timezone.now()
    token = (
        ApiToken.objects.select_related("user")
        .filter(token_hash=hash_secret(secret), revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )
    if token is None or (token.user is not None and not token.user.is_active):
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


# --- principals and the ninja auth classes -------------------------------------------------


@dataclass(frozen=True)
class Principal:
    """Who is calling: ``name`` goes into requested_by/decided_by, ``key`` scopes idempotency."""

    key: str
    name: str
    scopes: frozenset[str]
    via: str  # "token" or "session"

    @classmethod
    def for_token(cls, token: ApiToken) -> Principal:
        owner = token.user.get_username() if token.user else "service"
        return cls(
            f"token:{token.pk}",
            f"{owner} (API token {token.key_prefix}…)",
            frozenset(token.scopes),
            "token",
        )

    @classmethod
    def for_user(cls, user) -> Principal:
        scopes = {Scope.RUNS_READ, Scope.RUNS_WRITE}
        if user.has_perm("approvals.decide_approval"):
            scopes.add(Scope.APPROVALS_DECIDE)
        return cls(f"user:{user.pk}", user.get_username(), frozenset(scopes), "session")

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            if self.via == "session" and scope == Scope.APPROVALS_DECIDE:
                raise ScopeMissing(MISSING_DECIDE_PERMISSION)
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
    """A logged-in staff user; unsafe methods must carry the CSRF token (cookie auth)."""

    param_name = settings.SESSION_COOKIE_NAME

    def __init__(self, scope: str) -> None:
        self.scope = scope
        super().__init__(csrf=True)

    def __call__(self, request: HttpRequest) -> Principal | None:
        user = getattr(request, "user", None)
        if user is None or not (user.is_authenticated and user.is_active and user.is_staff):
            return None
        if request.method not in SAFE_METHODS and check_csrf(request) is not None:
            raise CsrfFailed(CSRF_FAILED)
        principal = Principal.for_user(user)
        principal.require(self.scope)
        return principal

    def authenticate(self, request: HttpRequest, key: str | None) -> Principal | None:
        return self(request)  # ``__call__`` does the work; ninja requires the method


def scoped(scope: str) -> list:
    """The ``auth=`` of an operation that needs ``scope``: a token, else a staff session."""
    return [BearerToken(scope), StaffSession(scope)]
