"""A real OpenID provider (django-oauth-toolkit) in a second process, for the sign-in tests.

with Provider(redirect_uri, logout_uri) as provider:
    provider.user("alice", groups=["shop-operators"])   # its directory, as its console would
    provider.issuer                                     # http://127.0.0.1:PORT/o
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

CONTROL_HEADER = "X-Provider-Control"
ROOT = Path(__file__).resolve().parent.parent.parent
START_TIMEOUT_S = 60


class Provider:
    def __init__(self, redirect_uri: str, logout_uri: str) -> None:
        self.redirect_uri, self.logout_uri = redirect_uri, logout_uri
        self.client_id = "amtp-" + secrets.token_hex(4)
        self.client_secret = secrets.token_urlsafe(32)
        self.control = secrets.token_urlsafe(16)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def issuer(self) -> str:
        return f"{self.url}/o"

    def __enter__(self) -> Provider:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        self._dir = tempfile.TemporaryDirectory(prefix="oidc-provider-")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
            "PROVIDER_SECRET_KEY": secrets.token_urlsafe(32),
            "PROVIDER_DB": str(Path(self._dir.name) / "provider.sqlite3"),
            "PROVIDER_RSA_KEY": pem,
            "PROVIDER_CLIENT_ID": self.client_id,
            "PROVIDER_CLIENT_SECRET": self.client_secret,
            "PROVIDER_CONTROL": self.control,
        }
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.oidc_provider.serve", self.redirect_uri, self.logout_uri],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self._process.stdout.readline()  # the port, once it listens
        if not line.strip().isdigit():
            self.__exit__()
            raise RuntimeError(f"the OpenID provider did not start: {line!r}")
        self.port = int(line)
        return self

    def __exit__(self, *exc) -> None:
        self._process.kill()
        self._process.wait(timeout=START_TIMEOUT_S)
        self._process.stdout.close()
        self._dir.cleanup()

    def user(self, username: str, *, groups: list[str], password: str = "pw") -> str:
        """Create or change a user at the provider; their ``sub``."""
        body = {"email": f"{username}@example.test", "given_name": username.title()}
        body.update(groups=groups, password=password)
        request = urllib.request.Request(
            f"{self.url}/directory/{username}",
            data=json.dumps(body).encode(),
            headers={CONTROL_HEADER: self.control, "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)["sub"]
