"""Keyless CI: an OpenID Connect ID token from the configured issuer as a bearer credential.

A CI job (GitHub Actions: ``permissions: id-token: write``) asks its platform for a short-lived
token naming the repository, ref, workflow and environment that run it, and sends it instead of
a stored API token. Verified here with PyJWT against the issuer's published keys:

- the issuer's keys come from its discovery document (OpenID Connect Discovery 1.0 §4: the
  document's ``issuer`` must equal the configured one) and its ``jwks_uri`` (RFC 7517), read by
  ``PyJWKClient``: cached ``AMTP_OIDC_JWKS_TTL_S``, and a ``kid`` it does not hold re-reads the
  set once, at most every ``AMTP_OIDC_JWKS_COOLDOWN_S`` (key rotation without a refetch storm);
- ``alg`` from an allow-list of asymmetric algorithms only: never ``none``, never HS* (RFC 8725
  §3.1-3.2: a public key used as an HMAC secret would let anyone sign);
- ``iss``, ``aud``, ``exp``, ``nbf``, ``iat`` (RFC 7519 §4.1) with ``AMTP_OIDC_LEEWAY_S`` of
  skew, a lifetime of at most ``AMTP_OIDC_MAX_LIFETIME_S``, and ``jti`` used once (Valkey
  ``SET NX`` for the token's remaining lifetime; infra/valkey/NAMESPACES.md);
- the claims then meet the trust rules (:class:`~access.models.OidcTrustRule`); the first
  that matches makes the caller a service identity limited to the one repository the token
  names, with the rule's scopes (the access rule of repositories.access, like a service token).

Every refusal is a 401 naming the check or the rules that failed (never the token), and is
audited: on the rules that knew the repository, else in the ``amtp.audit`` log only (an
unverified token names no one to file it under, and a row per forgery would let anyone fill
the table).
"""

from __future__ import annotations

import functools
import time
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

import jwt
import requests
from django.conf import settings

from access.models import OidcTrustRule
from amtp_site import audit, valkey
from repositories import access

# RFC 7518 §3.1's asymmetric signatures (RFC 8725 §3.1: an explicit allow-list).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
MAX_TOKEN_CHARS = 8192  # GitHub's are ~1.5 KB; anything far larger is not an ID token
REQUIRED = ["iss", "aud", "exp", "iat", "jti", "sub"]
MATCHED_CLAIMS = ("ref", "workflow_ref", "environment")
DISCOVERY = "/.well-known/openid-configuration"
TIMEOUT_S = 5

TOO_LONG = "the token is longer than {limit} characters"
MALFORMED = "the token is not a signed JWT (header.payload.signature)"
BAD_ALG = "the token's alg is not one of {allowed}"
KEY_ALG = "alg: the token's alg is not the one of the key it names"
NO_KID = "the token's header names no key (kid)"
WRONG_ISSUER = "iss: the token is not from the configured issuer"
UNKNOWN_KEY = "kid: the issuer's key set holds no such key"
BAD_SIGNATURE = "the signature does not verify with the issuer's key"
EXPIRED = "exp: the token has expired"
NOT_YET = "nbf/iat: the token is not valid yet"
WRONG_AUDIENCE = "aud: the token is not for this audience ({audience})"
MISSING_CLAIM = "{claim}: the token lacks this claim"
TOO_LONG_LIVED = "exp: the token lives longer than {limit} s"
NO_REPOSITORY = "repository: the token names no repository"
NO_RULES = "no OIDC trust rule is configured"
NO_MATCH = "no OIDC trust rule matches the token's claims: {failures}"
REPLAYED = "jti: this token was used before; request a fresh one for every call"
NOT_RULE_REPOSITORY = "claim 'repository' is not one of its repositories"
CLAIM_MISMATCH = "claim '{claim}' does not match"
NO_AUDIENCE = "AMTP_OIDC_AUDIENCE is not set: CI tokens cannot be accepted"
ISSUER_DOWN = "the OIDC issuer's keys could not be read; try again later"


class OidcRefused(Exception):
    """The bearer token is not a valid, trusted CI token (HTTP 401); the message says why."""


class OidcUnavailable(Exception):
    """The issuer's discovery document or key set could not be read (HTTP 503)."""


def configured() -> bool:
    return bool(settings.AMTP_OIDC_ISSUER)


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and not token.startswith("amtp_")


@functools.cache
def _key_client(issuer: str, ttl: int, cooldown: int) -> jwt.PyJWKClient:
    """The issuer's key set client (one per process and configuration, so its cache lives)."""
    try:
        answer = requests.get(
            issuer.rstrip("/") + DISCOVERY, timeout=TIMEOUT_S, allow_redirects=False
        )
        answer.raise_for_status()
        document = answer.json()
    except (requests.RequestException, ValueError) as exc:
        raise OidcUnavailable(ISSUER_DOWN) from exc
    if not isinstance(document, dict):
        raise OidcUnavailable(ISSUER_DOWN)
    jwks_uri = document.get("jwks_uri")
    # Discovery §4.3: the document's issuer is exactly ours; its keys are served by the same
    # origin (GitHub's and GitLab's are), so a tampered document cannot point elsewhere.
    same_origin = isinstance(jwks_uri, str) and urlsplit(jwks_uri)[:2] == urlsplit(issuer)[:2]
    if document.get("issuer") != issuer or not same_origin:
        raise OidcUnavailable(ISSUER_DOWN)
    return jwt.PyJWKClient(jwks_uri, lifespan=ttl, cooldown_duration=cooldown, timeout=TIMEOUT_S)


def key_client() -> jwt.PyJWKClient:
    return _key_client(
        settings.AMTP_OIDC_ISSUER, settings.AMTP_OIDC_JWKS_TTL_S, settings.AMTP_OIDC_JWKS_COOLDOWN_S
    )


def _refuse(why: str) -> None:
    audit.refused("api", f"OIDC token refused: {why}")
    raise OidcRefused(why)


def verify(token: str) -> dict:
    """The claims of ``token`` once its signature and registered claims hold; OidcRefused
    otherwise. ``jti`` is not spent here (see :func:`authenticate`)."""
    issuer, audience = settings.AMTP_OIDC_ISSUER, settings.AMTP_OIDC_AUDIENCE
    if not audience:  # settings refuse this at start-up; never verify against "any audience"
        raise OidcUnavailable(NO_AUDIENCE)
    if len(token) > MAX_TOKEN_CHARS:
        _refuse(TOO_LONG.format(limit=MAX_TOKEN_CHARS))
    try:
        header = jwt.get_unverified_header(token)
        unverified = jwt.decode(token, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        _refuse(MALFORMED)
    if header.get("alg") not in ALGORITHMS:
        _refuse(BAD_ALG.format(allowed=", ".join(ALGORITHMS)))
    if not isinstance(header.get("kid"), str):
        _refuse(NO_KID)
    if unverified.get("iss") != issuer:  # before any key fetch: another issuer's kid is no cue
        _refuse(WRONG_ISSUER)
    try:
        key = key_client().get_signing_key(header["kid"])
    except jwt.PyJWKClientConnectionError as exc:
        raise OidcUnavailable(ISSUER_DOWN) from exc
    except jwt.PyJWKClientError:
        _refuse(UNKNOWN_KEY)
    leeway = settings.AMTP_OIDC_LEEWAY_S
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=list(ALGORITHMS),
            audience=audience,
            issuer=issuer,
            leeway=leeway,
            options={"require": REQUIRED},
        )
    except jwt.MissingRequiredClaimError as exc:
        _refuse(MISSING_CLAIM.format(claim=exc.claim))
    except jwt.ExpiredSignatureError:
        _refuse(EXPIRED)
    except jwt.ImmatureSignatureError:
        _refuse(NOT_YET)
    except jwt.InvalidAudienceError:
        _refuse(WRONG_AUDIENCE.format(audience=audience))
    except jwt.InvalidIssuerError:
        _refuse(WRONG_ISSUER)
    except jwt.InvalidSignatureError:
        _refuse(BAD_SIGNATURE)
    except jwt.InvalidAlgorithmError:  # the key is bound to its own alg (RFC 8725 §3.1)
        _refuse(KEY_ALG)
    except jwt.InvalidTokenError:
        _refuse(MALFORMED)
    if not isinstance(claims["exp"], int | float) or not isinstance(claims["iat"], int | float):
        _refuse(MALFORMED)
    if claims["exp"] - claims["iat"] > settings.AMTP_OIDC_MAX_LIFETIME_S:
        _refuse(TOO_LONG_LIVED.format(limit=settings.AMTP_OIDC_MAX_LIFETIME_S))
    if not isinstance(claims.get("jti"), str) or not isinstance(claims.get("sub"), str):
        _refuse(MALFORMED)
    return claims


def rule_failure(rule: OidcTrustRule, claims: dict, repository_id: int | None) -> str | None:
    """Why ``rule`` does not trust ``claims`` (None: it does). Patterns are fnmatch's, case
    sensitive (claims are exact strings)."""
    if repository_id is None or repository_id not in rule.repository_ids:
        return NOT_RULE_REPOSITORY
    for claim in MATCHED_CLAIMS:
        pattern = getattr(rule, claim)
        value = claims.get(claim)
        if pattern and not (isinstance(value, str) and fnmatchcase(value, pattern)):
            return CLAIM_MISMATCH.format(claim=claim)
    return None


def _audit_rule(rule: OidcTrustRule, claims: dict, what: str) -> None:
    name = f"OIDC {str(claims.get('sub'))[:150]}"
    audit.record(audit.Actor(rule.created_by, name, "api"), rule, what)


def identify(claims: dict) -> tuple[OidcTrustRule, int]:
    """The first enabled rule (by name) that trusts ``claims``, and the repository id."""
    repository = claims.get("repository")
    if not isinstance(repository, str) or not repository:
        _refuse(NO_REPOSITORY)
    # The issuer's word, but still text: visible_ids leaves out what no repository can be named.
    repository_id = access.visible_ids([repository], None, everything=True).get(repository)
    enabled = OidcTrustRule.objects.filter(enabled=True).select_related("created_by")
    rules = list(enabled.order_by("name"))
    if not rules:
        _refuse(NO_RULES)
    failures = []
    for rule in rules:
        why = rule_failure(rule, claims, repository_id)
        if why is None:
            return rule, repository_id
        failures.append((rule, why))
    for rule, why in failures:
        if why != NOT_RULE_REPOSITORY:  # a rule for this repository refused its own CI
            _audit_rule(rule, claims, f"Refused an OIDC token: {why}")
    text = "; ".join(f"rule {rule.name!r}: {why}" for rule, why in failures)
    _refuse(NO_MATCH.format(failures=text))


def authenticate(token: str) -> tuple[OidcTrustRule, int, dict]:
    """The rule, repository id and claims of a valid, trusted, first-used CI token."""
    claims = verify(token)
    rule, repository_id = identify(claims)
    remaining_s = claims["exp"] + settings.AMTP_OIDC_LEEWAY_S - time.time()
    if not valkey.oidc_jti_first_use(claims["iss"], claims["jti"], int(remaining_s * 1000)):
        _audit_rule(rule, claims, f"Refused an OIDC token: {REPLAYED}")
        _refuse(REPLAYED)
    return rule, repository_id, claims
