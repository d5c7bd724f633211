"""Single sign-on for the admin: OpenID Connect through mozilla-django-oidc.

The authorization code flow with PKCE (S256), ``state`` and ``nonce``, all checked by the
library; the ID token is verified here against the provider's keys with its ``iss``, ``aud``
(our client id), ``exp`` and ``iat``. The provider's endpoints come from its discovery document,
read when a sign-in needs them (cached :data:`DISCOVERY_TTL_S`), never at start-up: a provider
that is down costs a clear page (:func:`problem`, with the break-glass password form), not a
crash.

People are users matched by the provider's ``sub`` (username ``sso-<sub>``: an e-mail address
can be reused or unverified, a subject cannot). Each sign-in sets their name, e-mail and
groups from the claims: ``AMTP_SSO_GROUP_MAP`` maps the provider's groups (the
``AMTP_SSO_GROUPS_CLAIM``) to Django groups, which are the whole of an SSO user's groups, and
grants on those groups give roles on repositories (``repositories.access`` stays the one rule).
A user none of whose groups is mapped is refused. :class:`SessionRefresh` re-reads the claims
every ``AMTP_SSO_RECHECK_S`` at the user's next page load (silently, ``prompt=none``), so a
right the provider takes away is gone then, and a user the provider no longer signs in is
signed out.

With ``AMTP_SSO_PASSWORD_LOGIN`` off, only superusers sign in with a password
(:class:`PasswordBackend`): the break-glass accounts for when the provider is down.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from urllib.parse import urlencode

import jwt
import requests
from django.conf import settings
from django.contrib import admin, auth
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from django.views.generic import View
from mozilla_django_oidc import auth as oidc_auth
from mozilla_django_oidc import middleware as oidc_middleware
from mozilla_django_oidc import views as oidc_views

from amtp_site import audit

logger = logging.getLogger("amtp.sso")

DISCOVERY_TTL_S = 300
USERNAME_PREFIX = "sso-"
# Django's username characters; a subject with others (or too long) is hashed into one.
_PLAIN_SUB = re.compile(r"[\w.@+-]{1,140}", re.ASCII)

PROVIDER_DOWN = (
    "{name} cannot be reached, so nobody can sign in through it now: {reason}. Try again in a "
    "few minutes. Superusers can sign in with their break-glass password below."
)
REFUSED = "Sign-in through {name} refused: {reason}"
NO_GROUP = (
    "none of your groups at the identity provider ({groups}) gives access to AMTP; ask for one "
    "of: {mapped}"
)

_discovered: dict[str, tuple[float, dict]] = {}  # issuer -> (until, document)


class ProviderDown(Exception):
    """The provider did not answer, or its discovery document cannot be used."""


def enabled() -> bool:
    return bool(settings.AMTP_SSO_ISSUER)


def discovery() -> dict:
    """The provider's discovery document (OpenID Connect Discovery 1.0 §4), checked: its
    ``issuer`` is exactly the configured one (§4.3) and the endpoints a sign-in needs are
    there."""
    issuer = settings.AMTP_SSO_ISSUER
    cached = _discovered.get(issuer)
    if cached and cached[0] > time.monotonic():
        return cached[1]
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.AMTP_SSO_TIMEOUT_S)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderDown(f"{url} did not answer ({type(exc).__name__})") from exc
    if not isinstance(document, dict) or document.get("issuer") != issuer:
        raise ProviderDown(f"{url} does not name the issuer {issuer}")
    for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(document.get(key), str):
            raise ProviderDown(f"{url} has no {key}")
    _discovered[issuer] = (time.monotonic() + DISCOVERY_TTL_S, document)
    return document


def signed_in_by_sso(request: HttpRequest) -> bool:
    return request.session.get(auth.BACKEND_SESSION_KEY) == f"{__name__}.SsoBackend"


def username_for(sub: str) -> str:
    if _PLAIN_SUB.fullmatch(sub):
        return USERNAME_PREFIX + sub
    return USERNAME_PREFIX + hashlib.sha256(sub.encode()).hexdigest()[:40]


def mapped_groups(claims: dict) -> tuple[list[str], list[str]]:
    """(the provider's groups in ``claims``, the Django group names they map to)."""
    found = claims.get(settings.AMTP_SSO_GROUPS_CLAIM, [])
    if not isinstance(found, list) or not all(isinstance(g, str) for g in found):
        raise SuspiciousOperation(
            f"the '{settings.AMTP_SSO_GROUPS_CLAIM}' claim must be a list of group names"
        )
    names = {name for group in found for name in settings.AMTP_SSO_GROUP_MAP.get(group, ())}
    return found, sorted(names)


class PasswordBackend(ModelBackend):
    """Django's password sign-in; with ``AMTP_SSO_PASSWORD_LOGIN`` off, for superusers only
    (a session of anyone else signed in by password ends too)."""

    def user_can_authenticate(self, user):
        allowed = settings.AMTP_SSO_PASSWORD_LOGIN or user.is_superuser
        return super().user_can_authenticate(user) and allowed


class SsoBackend(oidc_auth.OIDCAuthenticationBackend):
    """Signs in the user of an authorization code the callback received. Its endpoints are
    properties: Django builds backends for every session lookup, which must not cost a request
    to the provider."""

    def __init__(self, *args, **kwargs):
        self.UserModel = auth.get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: discovery()["token_endpoint"])
    OIDC_OP_USER_ENDPOINT = property(lambda self: discovery().get("userinfo_endpoint"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: discovery()["jwks_uri"])

    def authenticate(self, request, **kwargs):
        # Only the callback calls with the nonce and PKCE verifier its own sign-in request
        # stored; a password form posted with ?code= in its URL is not a sign-in here.
        if not enabled() or not kwargs.get("nonce") or not kwargs.get("code_verifier"):
            return None
        return super().authenticate(request, **kwargs)

    def get_user(self, user_id):
        # Active users only (ModelBackend's rule), and none once single sign-on is off.
        return ModelBackend.get_user(self, user_id) if enabled() else None

    def verify_token(self, token, **kwargs):
        key = self.retrieve_matching_jwk(token)
        try:
            payload = jwt.decode(
                token,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.AMTP_SSO_ISSUER,
                leeway=settings.AMTP_SSO_LEEWAY_S,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise SuspiciousOperation(f"the ID token is not valid: {exc}") from exc
        audience = payload["aud"]
        if isinstance(audience, list) and len(audience) > 1:
            if payload.get("azp") != self.OIDC_RP_CLIENT_ID:  # OpenID Connect Core 1.0 §3.1.3.7
                raise SuspiciousOperation("the ID token has several audiences and is not ours")
        if kwargs.get("nonce") != payload.get("nonce"):
            raise SuspiciousOperation("the ID token's nonce is not this sign-in's")
        return payload

    def get_userinfo(self, access_token, id_token, payload):
        """The ID token's claims, with the userinfo endpoint's where the provider has one
        (some send the groups only there, some only in the ID token)."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            info = super().get_userinfo(access_token, id_token, payload)
            if not isinstance(info, dict) or info.get("sub") != payload["sub"]:
                # OpenID Connect Core 1.0 §5.3.2: else the answer may be another user's.
                raise SuspiciousOperation("the userinfo answer is not the ID token's subject")
            claims.update(info)
        return claims

    def get_or_create_user(self, access_token, id_token, payload):
        try:
            return super().get_or_create_user(access_token, id_token, payload)
        except SuspiciousOperation as exc:  # the library turns it into "no user": keep why
            self.request.sso_refusal = str(exc)
            raise

    def verify_claims(self, claims):
        sub = claims.get("sub")
        return isinstance(sub, str) and 0 < len(sub) <= 255

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(username=username_for(claims["sub"]))

    def create_user(self, claims):
        user = self.UserModel(username=username_for(claims["sub"]))
        user.set_unusable_password()
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        if user.has_usable_password():
            raise SuspiciousOperation(
                f"{user.username} is a local account with a password, not one of the provider's"
            )
        provider_groups, names = mapped_groups(claims)
        user.email = str(claims.get("email") or "")[:254]
        user.first_name = str(claims.get("given_name") or claims.get("name") or "")[:150]
        user.last_name = str(claims.get("family_name") or "")[:150]
        user.is_staff = bool(names)  # the admin is for people with some group of AMTP's
        user.save()
        # The provider owns an SSO user's groups: one it no longer lists is left here too.
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in names])
        logger.info("signed in %s by single sign-on: groups %s", user.username, names)
        if not names:
            self.request.sso_refusal = NO_GROUP.format(
                groups=", ".join(provider_groups) or "none",
                mapped=", ".join(sorted(settings.AMTP_SSO_GROUP_MAP)) or "none is mapped",
            )
            return None
        return user


def context(request: HttpRequest) -> dict:
    """What the sign-in page needs to know (templates/admin/login.html)."""
    return {
        "sso_enabled": enabled(),
        "sso_name": settings.AMTP_SSO_NAME,
        "sso_password_login": settings.AMTP_SSO_PASSWORD_LOGIN,
    }


def problem(request: HttpRequest, message: str, *, status: int) -> HttpResponse:
    """The sign-in page with ``message`` above it and the password form (the break-glass way
    in) under it."""
    page = {
        **admin.site.each_context(request),
        "title": "Log in",
        "sso_problem": message,
        "form": AdminAuthenticationForm(request),
        "app_path": reverse("admin:login"),
        "next": resolve_url(settings.LOGIN_REDIRECT_URL),
    }
    return TemplateResponse(request, "admin/login.html", page, status=status)


def provider_down(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.warning("single sign-on: the provider is down: %s", exc)
    return problem(
        request, PROVIDER_DOWN.format(name=settings.AMTP_SSO_NAME, reason=exc), status=503
    )


class SignIn(oidc_views.OIDCAuthenticationRequestView):
    """Sends the browser to the provider (``?next=`` kept only when it is a path of this
    site: the library's check)."""

    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request):
        if not enabled():
            raise Http404("single sign-on is not configured")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = discovery()["authorization_endpoint"]
        except ProviderDown as exc:
            return provider_down(request, exc)
        return super().get(request)


class Callback(oidc_views.OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back; any failure is a page that says why (and
    signs out whoever was signed in: a failed re-check ends the session)."""

    def get(self, request):
        if not enabled():
            raise Http404("single sign-on is not configured")
        # The provider's own words are shown only for a sign-in this browser started: anyone
        # can link to this page with an error_description of their choosing.
        self.ours = request.GET.get("state") in request.session.get("oidc_states", {})
        try:
            return super().get(request)
        except (ProviderDown, requests.RequestException) as exc:
            self._sign_out()
            return provider_down(request, exc)
        except SuspiciousOperation as exc:
            return self.refuse(str(exc), status=400)

    def login_failure(self):
        request = self.request
        reason = getattr(request, "sso_refusal", "")
        if not reason and request.GET.get("error"):
            reason = "the provider answered an error to a sign-in this browser did not start"
            if self.ours:
                reason = f"the provider answered '{request.GET['error'][:100]}'"
                if request.GET.get("error_description"):
                    reason += f": {request.GET['error_description'][:300]}"
        if not reason and self.user is not None and not self.user.is_active:
            reason = "this account is deactivated in AMTP"
        return self.refuse(reason or "the sign-in did not complete; start it again", status=403)

    def refuse(self, reason: str, *, status: int) -> HttpResponse:
        audit.refused("admin", f"a single sign-on: {reason}")
        self._sign_out()
        message = REFUSED.format(name=settings.AMTP_SSO_NAME, reason=reason)
        return problem(self.request, message, status=status)

    def _sign_out(self) -> None:
        if self.request.user.is_authenticated:
            auth.logout(self.request)

    user = None  # set by the library once authenticate() answered
    ours = False


class SignOut(oidc_views.OIDCLogoutView):
    """The admin's "Log out": ends the AMTP session and, for an SSO user, the provider's
    (its end-session endpoint, where its discovery document names one)."""

    http_method_names = ["post"]

    def post(self, request):
        if signed_in_by_sso(request):
            return super().post(request)
        return admin.site.logout(request)


def provider_logout_url(request: HttpRequest) -> str:
    """OpenID Connect RP-Initiated Logout 1.0 §2: back to the sign-in page afterwards."""
    after = request.build_absolute_uri(resolve_url(settings.LOGOUT_REDIRECT_URL))
    try:
        endpoint = discovery().get("end_session_endpoint")
    except ProviderDown:
        endpoint = None
    if not isinstance(endpoint, str) or not endpoint:
        return after
    params = {"client_id": settings.OIDC_RP_CLIENT_ID, "post_logout_redirect_uri": after}
    if request.session.get("oidc_id_token"):
        params["id_token_hint"] = request.session["oidc_id_token"]
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"


STALE = (
    "Your sign-in must be re-checked with {name} before a change: reload the page, then try "
    "again (nothing was changed)."
)


class SessionRefresh(oidc_middleware.SessionRefresh):
    """Every ``AMTP_SSO_RECHECK_S`` an SSO user's next page load goes through the provider
    again (no prompt) and the callback re-reads their groups. A change (any method but GET)
    past that time is refused until then: only a page load can go to the provider."""

    def __init__(self, get_response):
        MiddlewareMixin.__init__(self, get_response)  # settings are read when needed, below

    OIDC_OP_AUTHORIZATION_ENDPOINT = property(lambda self: discovery()["authorization_endpoint"])
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_RP_SCOPES = property(lambda self: settings.OIDC_RP_SCOPES)
    OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
    OIDC_EXEMPT_URLS = ()
    OIDC_STATE_SIZE = OIDC_NONCE_SIZE = 32
    OIDC_USE_NONCE = True

    def process_request(self, request):
        if not enabled() or not request.user.is_authenticated or not signed_in_by_sso(request):
            return None
        if request.session.get("oidc_id_token_expiration", 0) > time.time():
            return None
        if request.path in self.exempt_urls:
            return None
        if request.method != "GET":
            message = STALE.format(name=settings.AMTP_SSO_NAME)
            return HttpResponse(message, status=403, content_type="text/plain")
        try:
            discovery()
        except ProviderDown as exc:
            auth.logout(request)  # its rights cannot be re-checked: it ends
            return provider_down(request, exc)
        return super().process_request(request)
