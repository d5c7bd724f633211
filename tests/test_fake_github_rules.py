"""The GitHub fake enforces what GitHub enforces on Apps (issue 28): the installation's
permissions and the JWT's iat/exp window. Both fail against the fake of before."""

from __future__ import annotations

import time

import jwt
import pytest
import requests

from tests.fakes.github_api import FakeGitHub
from tests.test_github_host import rsa_pair

REPO = "acme/web"


@pytest.fixture
def gh():
    with FakeGitHub() as fake:
        fake.base = fake.create_repo(REPO, files={"README.md": "hi\n"})
        yield fake


def app_jwt(private: str, app_id: int, *, iat: float, exp: float) -> str:
    claims = {"iat": int(iat), "exp": int(exp), "iss": str(app_id)}
    return jwt.encode(claims, private, algorithm="RS256")


def call(gh, method, path, token, scheme="token", **kwargs):
    headers = {"Authorization": f"{scheme} {token}", "Accept": "application/vnd.github+json"}
    return requests.request(method, gh.url + path, headers=headers, timeout=5, **kwargs)


def test_an_installation_token_can_do_only_what_the_installation_grants(gh):
    private, public = rsa_pair()
    reader = gh.installation_token(gh.install_app(11, public, [REPO], {"contents": "read"}))
    assert call(gh, "GET", f"/repos/{REPO}", reader).status_code == 200  # metadata: always
    assert call(gh, "GET", f"/repos/{REPO}/git/ref/heads/main", reader).status_code == 200
    ref = {"ref": "refs/heads/x", "sha": gh.base}
    denied = call(gh, "POST", f"/repos/{REPO}/git/refs", reader, json=ref)
    assert denied.status_code == 403
    assert denied.json()["message"] == "Resource not accessible by integration"
    assert call(gh, "GET", f"/repos/{REPO}/pulls", reader).status_code == 403  # no pull_requests
    writer = gh.installation_token(gh.install_app(12, rsa_pair()[1], [REPO]))
    assert call(gh, "POST", f"/repos/{REPO}/git/refs", writer, json=ref).status_code == 201


@pytest.mark.parametrize(
    "iat, exp, words",
    [
        (+120, +300, "'Issued at' claim ('iat') must be an Integer"),  # a clock ahead
        (-600, +300, "'Expiration time' claim ('exp') is too far in the future"),  # 15 min
        (-60, +660, "'Expiration time' claim ('exp') is too far in the future"),
    ],
)
def test_an_app_jwt_outside_githubs_window_is_refused(gh, iat, exp, words):
    private, public = rsa_pair()
    gh.install_app(13, public, [REPO])
    now = time.time()
    token = app_jwt(private, 13, iat=now + iat, exp=now + exp)
    answer = call(gh, "GET", f"/repos/{REPO}/installation", token, scheme="Bearer")
    assert answer.status_code == 401 and words in answer.json()["message"]
    good = app_jwt(private, 13, iat=now - 60, exp=now + 300)  # GitHub's own recommendation
    assert call(gh, "GET", f"/repos/{REPO}/installation", good, scheme="Bearer").status_code == 200
