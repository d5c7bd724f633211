"""A strict fake OpenID Connect issuer for CI tokens (GitHub Actions' shape), over real HTTP on
127.0.0.1: a discovery document, a JWKS endpoint, and ID tokens signed with its own RSA and EC
keys generated here with ``cryptography``.

    with FakeIssuer() as issuer:
        token = issuer.mint(repository="acme/shop")            # a valid GitHub Actions token
        issuer.rotate()                                        # a new key; the old one retired

Sources: GitHub's "About security hardening with OpenID Connect"
(https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/about-security-hardening-with-openid-connect)
for the claims and the issuer's discovery document (served at
https://token.actions.githubusercontent.com/.well-known/openid-configuration); RFC 7517 for
the key set, RFC 7519 for the registered claims, OpenID Connect Discovery 1.0 §4 for the
document. Only GET is answered (the endpoints are read-only), anything else is 405; an unknown
path is 404.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

AUDIENCE = "https://amtp.example.com"


class FakeIssuer(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.keys: dict[str, tuple[object, str]] = {}  # kid -> (private key, alg)
        self.jwks_fetches = 0
        self.add_key("RS256")
        self.add_key("ES256")

    @property
    def url(self) -> str:  # the issuer, as the ``iss`` claim and the document say
        return f"http://127.0.0.1:{self.server_address[1]}"

    def add_key(self, alg: str) -> str:
        kid = uuid.uuid4().hex[:16]
        if alg.startswith("ES"):
            key = ec.generate_private_key(ec.SECP256R1())
        else:  # 2048 bits, as GitHub's keys are
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.keys[kid] = (key, alg)
        return kid

    def rotate(self) -> str:
        """A new RSA key replaces every RSA key (the JWKS no longer lists the old ones)."""
        for kid in [k for k, (_, alg) in self.keys.items() if alg == "RS256"]:
            del self.keys[kid]
        return self.add_key("RS256")

    def kid(self, alg: str = "RS256") -> str:
        return next(k for k, (_, a) in self.keys.items() if a == alg)

    def claims(self, repository: str = "acme/shop", **override) -> dict:
        """GitHub Actions' claims for a push to main running .github/workflows/e2e.yml."""
        now = int(time.time())
        owner = repository.split("/")[0]
        workflow = f"{repository}/.github/workflows/e2e.yml@refs/heads/main"
        claims = {
            "jti": str(uuid.uuid4()),
            "sub": f"repo:{repository}:ref:refs/heads/main",
            "aud": AUDIENCE,
            "ref": "refs/heads/main",
            "sha": "a" * 40,
            "repository": repository,
            "repository_owner": owner,
            "repository_id": "74",
            "repository_visibility": "private",
            "run_id": "5",
            "run_attempt": "1",
            "actor": "octocat",
            "workflow": "e2e",
            "workflow_ref": workflow,
            "job_workflow_ref": workflow,
            "event_name": "push",
            "ref_type": "branch",
            "runner_environment": "github-hosted",
            "iss": self.url,
            "nbf": now - 5,
            "iat": now - 5,
            "exp": now + 300,
        }
        claims.update(override)
        return {k: v for k, v in claims.items() if v is not None}

    def sign(self, claims: dict, *, kid: str | None = None, alg: str = "RS256") -> str:
        kid = kid or self.kid(alg)
        key, _ = self.keys[kid]
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid, "typ": "JWT"})

    def mint(self, repository: str = "acme/shop", *, alg: str = "RS256", **override) -> str:
        return self.sign(self.claims(repository, **override), alg=alg)

    def jwks(self) -> dict:
        keys = []
        for kid, (key, alg) in self.keys.items():
            jwk = json.loads(jwt.algorithms.get_default_algorithms()[alg].to_jwk(key.public_key()))
            keys.append({**jwk, "kid": kid, "alg": alg, "use": "sig"})
        return {"keys": keys}

    def discovery(self) -> dict:
        return {
            "issuer": self.url,
            "jwks_uri": f"{self.url}/.well-known/jwks",
            "subject_types_supported": ["public", "pairwise"],
            "response_types_supported": ["id_token"],
            "claims_supported": ["sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid"],
        }

    def __enter__(self) -> FakeIssuer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: FakeIssuer

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/.well-known/openid-configuration":
            return self._json(self.server.discovery())
        if self.path == "/.well-known/jwks":
            self.server.jwks_fetches += 1
            return self._json(self.server.jwks())
        self.send_error(404)

    def _refuse(self):
        self.send_error(405)

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815

    def _json(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass
