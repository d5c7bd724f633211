"""Keyless CI (access.oidc): a CI's OpenID Connect token, from a strict fake issuer on loopback
(tests/fakes/oidc_issuer.py), starts a run on its repository and nowhere else; every hostile
token is a 401 naming the check that failed (RFC 7519 / 7517 / 8725), and audited."""

import base64
import json
import logging

import jwt
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from access import oidc
from access.models import OidcTrustRule
from runs.models import Run
from tests.api_support import assert_problem, post
from tests.factories import RepositoryFactory
from tests.fakes.oidc_issuer import AUDIENCE, FakeIssuer

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def issuer():
    with FakeIssuer() as running:
        yield running


@pytest.fixture
def ci(settings, valkey, issuer):
    """AMTP trusting the fake issuer; acme/shop's rule: main's e2e workflow may start runs."""
    settings.AMTP_OIDC_ISSUER = issuer.url
    settings.AMTP_OIDC_AUDIENCE = AUDIENCE
    settings.AMTP_OIDC_JWKS_COOLDOWN_S = 30
    oidc._key_client.cache_clear()  # a fresh key cache per test: fetches are counted
    root = User.objects.create_superuser("root", password=None)
    shop = RepositoryFactory(full_name="acme/shop")
    RepositoryFactory(full_name="acme/other")
    OidcTrustRule.objects.create(
        name="shop-main-e2e",
        repository_ids=[shop.pk],
        ref="refs/heads/main",
        workflow_ref="acme/shop/.github/workflows/e2e.yml@*",
        scopes=["runs:read", "runs:write"],
        created_by=root,
    )
    issuer.jwks_fetches = 0
    yield issuer
    oidc._key_client.cache_clear()


def start(token: str, repository: str = "acme/shop"):
    client = Client(headers={"Authorization": f"Bearer {token}"})
    return post(client, "/api/runs", {"repo_full_name": repository})


def refused(response, fragment: str) -> dict:
    body = assert_problem(response, 401, "unauthenticated")
    assert fragment in body["detail"]
    assert 'error="invalid_token"' in response["WWW-Authenticate"]
    return body


def test_a_ci_token_starts_a_run_on_its_repository(ci):
    response = start(ci.mint())
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert run.repository.full_name == "acme/shop"
    assert run.requested_by == "acme/shop CI (OIDC rule shop-main-e2e)"
    # An EC key of the issuer's set signs as well (ES256 is on the allow-list).
    assert start(ci.mint(alg="ES256")).status_code == 201
    # The same identity reads its repository's runs (runs:read).
    client = Client(headers={"Authorization": f"Bearer {ci.mint()}"})
    assert client.get(f"/api/runs/{run.run_id}").status_code == 200


def test_a_ci_token_is_refused_on_another_repository(ci):
    # Its own token, another repository in the body: as for a service token limited to
    # acme/shop, acme/other is not one it may see (422 "not registered").
    response = start(ci.mint(), "acme/other")
    assert response.status_code == 422, response.content
    # A token of acme/other's CI: no rule trusts it (the rule covers acme/shop only).
    body = refused(start(ci.mint("acme/other"), "acme/other"), "rule 'shop-main-e2e'")
    assert "claim 'repository' is not one of its repositories" in body["detail"]


def _none_token(issuer) -> str:
    # RFC 7519 §6.1's unsecured JWT: alg none, empty signature.
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    header = {"alg": "none", "kid": issuer.kid(), "typ": "JWT"}
    return f"{part(header)}.{part(issuer.claims())}."


def _hs256_with_public_key(issuer) -> str:
    # RFC 8725 §2.1: the issuer's public key (public: the JWKS serves it) as an HMAC secret.
    key = issuer.keys[issuer.kid()][0].public_key()
    pem = key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    header = {"kid": issuer.kid(), "alg": "HS256"}
    signer = jwt.algorithms.HMACAlgorithm(jwt.algorithms.HMACAlgorithm.SHA256)
    signing_input = (
        base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=")
        + b"."
        + base64.urlsafe_b64encode(json.dumps(issuer.claims()).encode()).rstrip(b"=")
    )
    signature = base64.urlsafe_b64encode(signer.sign(signing_input, pem)).rstrip(b"=")
    return (signing_input + b"." + signature).decode()


def _foreign_key(issuer) -> str:
    # Signed by a key the issuer's JWKS does not hold, under a kid of its own.
    stranger = FakeIssuer()
    try:
        claims = issuer.claims()
        return stranger.sign(claims)
    finally:
        stranger.server_close()


def _forged_kid(issuer) -> str:
    # A stranger's signature under the issuer's own kid: the signature does not verify.
    stranger = FakeIssuer()
    try:
        key, _ = stranger.keys[stranger.kid()]
        return jwt.encode(issuer.claims(), key, algorithm="RS256", headers={"kid": issuer.kid()})
    finally:
        stranger.server_close()


HOSTILE = {
    "wrong issuer": (lambda i: i.mint(iss="https://token.actions.example.org"), "iss:"),
    "wrong audience": (lambda i: i.mint(aud="https://elsewhere.example.com"), "aud:"),
    "expired": (lambda i: i.mint(iat=1_000_000, nbf=1_000_000, exp=1_000_300), "exp:"),
    "not yet valid": (
        lambda i: i.mint(nbf=i.claims()["iat"] + 3600, exp=i.claims()["iat"] + 3900),
        "nbf/iat:",
    ),
    "alg none": (_none_token, "alg is not one of"),
    "HS256 with the public key": (_hs256_with_public_key, "alg is not one of"),
    "a key the JWKS does not hold": (_foreign_key, "kid:"),
    "a forged signature under a known kid": (_forged_kid, "signature does not verify"),
    "malformed": (lambda i: "not.a.token", "not a signed JWT"),
    "oversized": (lambda i: i.mint(padding="x" * 9000), "longer than 8192"),
    "no jti": (lambda i: i.mint(jti=None), "jti:"),
    "long-lived": (lambda i: i.mint(exp=i.claims()["iat"] + 86_400), "lives longer"),
    "a repository no one can name": (lambda i: i.mint("acme/\x00shop"), "rule 'shop-main-e2e'"),
    "no repository claim": (lambda i: i.sign({**i.claims(), "repository": None}), "repository:"),
}


@pytest.mark.parametrize("case", HOSTILE, ids=str)
def test_hostile_tokens_are_refused_and_audited(ci, case, caplog):
    make, fragment = HOSTILE[case]
    token = make(ci)
    with caplog.at_level(logging.WARNING, logger="amtp.audit"):
        body = refused(start(token), fragment)
    assert Run.objects.count() == 0
    assert token not in body["detail"]  # the refusal names the check, never the token
    audited = [r.getMessage() for r in caplog.records if r.name == "amtp.audit"]
    assert any(fragment in message for message in audited), audited


def test_a_replayed_token_is_refused_and_audited_on_its_rule(ci, valkey):
    token = ci.mint()
    assert start(token).status_code == 201
    refused_again = start(token)
    assert refused_again.status_code == 401
    assert "used before" in refused_again.json()["detail"]
    assert Run.objects.count() == 1
    rule = OidcTrustRule.objects.get()
    entry = LogEntry.objects.get(object_id=str(rule.pk))
    assert "used before" in entry.change_message
    # The key lives as long as the token could: exp + leeway, not longer.
    jti = jwt.decode(token, options={"verify_signature": False})["jti"]
    ttl = valkey.pttl(oidc.valkey.oidc_jti_key(ci.url, jti))
    assert 0 < ttl <= (300 + 30) * 1000


def test_a_claim_no_rule_trusts_names_the_rule_and_the_claim(ci):
    token = ci.mint(ref="refs/heads/feature")
    body = refused(start(token), "rule 'shop-main-e2e': claim 'ref' does not match")
    assert "refs/heads/feature" not in body["detail"]
    rule = OidcTrustRule.objects.get()
    assert "claim 'ref'" in LogEntry.objects.get(object_id=str(rule.pk)).change_message
    wrong_workflow = f"acme/shop/.github/workflows/deploy.yml@{'refs/heads/main'}"
    refused(start(ci.mint(workflow_ref=wrong_workflow)), "claim 'workflow_ref' does not match")
    # A rule asking for an environment: a job without one is refused.
    OidcTrustRule.objects.update(environment="production")
    refused(start(ci.mint()), "claim 'environment' does not match")
    assert start(ci.mint(environment="production")).status_code == 201


def test_the_rule_scopes_bound_the_identity(ci):
    OidcTrustRule.objects.update(scopes=["runs:read"])
    body = assert_problem(start(ci.mint()), 403, "forbidden")
    assert "runs:write" in body["detail"]
    entry = LogEntry.objects.get(object_id=str(OidcTrustRule.objects.get().pk))
    assert "lack the 'runs:write' scope (via api, as acme/shop CI" in entry.change_message
    OidcTrustRule.objects.update(enabled=False)
    refused(start(ci.mint()), "no OIDC trust rule is configured")


def test_of_two_rules_that_trust_a_token_the_first_by_name_decides(ci):
    # Created after shop-main-e2e, ranked before it by name, read-only: its scopes decide.
    shop_rule = OidcTrustRule.objects.get()
    readers = OidcTrustRule.objects.create(
        name="a-shop-readers",
        repository_ids=shop_rule.repository_ids,
        scopes=["runs:read"],
        created_by=shop_rule.created_by,
    )
    assert_problem(start(ci.mint()), 403, "forbidden")
    entry = LogEntry.objects.get(object_id=str(readers.pk))
    assert "(OIDC rule a-shop-readers)" in entry.change_message
    OidcTrustRule.objects.filter(name="a-shop-readers").update(name="z-shop-readers")
    assert start(ci.mint()).status_code == 201


def test_key_rotation_reads_the_key_set_again_once(ci, settings):
    settings.AMTP_OIDC_JWKS_COOLDOWN_S = 0
    assert start(ci.mint()).status_code == 201
    assert ci.jwks_fetches == 1
    ci.rotate()  # the issuer signs with a key the cached set does not hold
    assert start(ci.mint()).status_code == 201
    assert ci.jwks_fetches == 2
    assert start(ci.mint()).status_code == 201  # from the cache again
    assert ci.jwks_fetches == 2


def test_unknown_kids_within_the_cooldown_do_not_read_the_key_set(ci):
    assert start(ci.mint()).status_code == 201
    for _ in range(3):
        refused(start(_foreign_key(ci)), "kid:")
    assert ci.jwks_fetches == 1


def test_without_an_issuer_a_jwt_is_just_not_a_credential(ci, settings):
    settings.AMTP_OIDC_ISSUER = ""
    body = assert_problem(start(ci.mint()), 401, "unauthenticated")
    assert body["detail"].startswith("send 'Authorization: Bearer <token>'")


def test_an_issuer_whose_document_names_another_issuer_is_unavailable(ci, settings):
    settings.AMTP_OIDC_ISSUER = ci.url + "/"  # the document says ci.url: not this issuer
    assert_problem(start(ci.mint(iss=ci.url + "/")), 503, "oidc-issuer-unavailable")
    # An issuer nobody answers for (port 9, discard): the same, and nothing is started.
    settings.AMTP_OIDC_ISSUER = "http://127.0.0.1:9"
    body = assert_problem(start(ci.mint(iss="http://127.0.0.1:9")), 503, "oidc-issuer-unavailable")
    assert body["detail"] == oidc.ISSUER_DOWN
    assert Run.objects.count() == 0


def test_only_superusers_configure_rules_in_the_admin_and_it_is_audited(ci):
    shop = RepositoryFactory(full_name="acme/web")
    data = {
        "name": "web-any",
        "repositories": [shop.pk],
        "ref": "refs/tags/*",
        "workflow_ref": "",
        "environment": "",
        "scopes": ["runs:write"],
        "enabled": "on",
    }
    staff = User.objects.create_user("ops", is_staff=True)
    for perm in ("add_oidctrustrule", "view_oidctrustrule"):
        staff.user_permissions.add(Permission.objects.get(codename=perm))
    client = Client()
    client.force_login(staff)
    assert client.post(reverse("admin:runs_oidctrustrule_add"), data).status_code == 403
    assert not OidcTrustRule.objects.filter(name="web-any").exists()
    client.force_login(User.objects.get(username="root"))
    hostile = {**data, "ref": "refs/heads/\x00main"}
    response = client.post(reverse("admin:runs_oidctrustrule_add"), hostile)
    assert response.status_code == 200 and "ref" in response.context["adminform"].form.errors
    response = client.post(reverse("admin:runs_oidctrustrule_add"), data)
    assert response.status_code == 302, response.content
    rule = OidcTrustRule.objects.get(name="web-any")
    assert rule.repository_ids == [shop.pk] and rule.created_by.username == "root"
    entry = LogEntry.objects.get(object_id=str(rule.pk))
    assert "scopes runs:write, on acme/web (via admin, as root)" in entry.change_message
    tag = ci.mint("acme/web", ref="refs/tags/v1", workflow_ref="acme/web/.github/workflows/x.yml@x")
    assert start(tag, "acme/web").status_code == 201


def test_without_an_audience_no_token_is_accepted(ci, settings):
    settings.AMTP_OIDC_AUDIENCE = ""
    body = assert_problem(start(ci.mint(aud="")), 503, "oidc-issuer-unavailable")
    assert "AMTP_OIDC_AUDIENCE" in body["detail"]
