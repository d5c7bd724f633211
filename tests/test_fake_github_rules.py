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


# --- draft pull requests and labels (tests/fakes/github_labels.py) ------------------------------


def open_pull(gh, token, **extra):
    gh.push(REPO, "feature", {"new.txt": "new\n"})
    body = {"title": "t", "head": "feature", "base": "main", **extra}
    return call(gh, "POST", f"/repos/{REPO}/pulls", token, json=body)


def test_drafts_are_refused_where_the_plan_has_none(gh):
    assert open_pull(gh, gh.token, draft="yes").status_code == 422  # not a boolean
    gh.no_drafts(REPO)
    refused = open_pull(gh, gh.token, draft=True)
    assert refused.status_code == 422
    assert refused.json()["message"] == "Draft pull requests are not supported in this repository."
    assert gh.pulls(REPO) == []
    plain = open_pull(gh, gh.token, draft=False)
    assert plain.status_code == 201 and plain.json()["draft"] is False


def test_labels_are_added_once_created_when_new_and_listed_whole(gh):
    number = open_pull(gh, gh.token, draft=True).json()["number"]
    url = f"/repos/{REPO}/issues/{number}/labels"
    first = call(gh, "POST", url, gh.token, json={"labels": ["amtp", "model-written"]})
    assert first.status_code == 200
    assert [label["name"] for label in first.json()] == ["amtp", "model-written"]
    assert first.json()[0]["color"] == "ededed" and first.json()[0]["description"] is None
    for body in (["AMTP"], "amtp", [{"name": "model-written"}], {"labels": [{"name": "x"}]}):
        assert call(gh, "POST", url, gh.token, json=body).status_code == 200
    assert gh.labels_of(REPO, number) == ["amtp", "model-written", "x"]  # no repeats
    pull = call(gh, "GET", f"/repos/{REPO}/pulls/{number}", gh.token).json()
    assert [label["name"] for label in pull["labels"]] == ["amtp", "model-written", "x"]


@pytest.mark.parametrize(
    "body, status",
    [
        ({"labels": ["y" * 51]}, 422),  # GitHub's label names stop at 50 characters
        ({"labels": [1]}, 422),
        ({"names": ["amtp"]}, 422),
        ({}, 422),
    ],
)
def test_label_bodies_github_refuses(gh, body, status):
    number = open_pull(gh, gh.token).json()["number"]
    answer = call(gh, "POST", f"/repos/{REPO}/issues/{number}/labels", gh.token, json=body)
    assert answer.status_code == status and gh.labels_of(REPO, number) == []
    missing = call(gh, "POST", f"/repos/{REPO}/issues/99/labels", gh.token, json=["amtp"])
    assert missing.status_code == 404


def test_labels_need_issues_or_pull_requests_write(gh):
    number = open_pull(gh, gh.token).json()["number"]
    url, body = f"/repos/{REPO}/issues/{number}/labels", {"labels": ["amtp"]}
    perms = [
        ({"contents": "write"}, 403),
        ({"issues": "read", "pull_requests": "read"}, 403),
        ({"issues": "write"}, 200),
        ({"pull_requests": "write"}, 200),
    ]
    for app_id, (permissions, status) in enumerate(perms, start=21):
        token = gh.installation_token(gh.install_app(app_id, rsa_pair()[1], [REPO], permissions))
        assert call(gh, "POST", url, token, json=body).status_code == status, permissions


def test_a_held_request_waits_others_go_on_and_it_is_carried_out_once_released(gh):
    """The fake's ``hold`` (tests/upgrade_release.py): a write kept waiting, every other
    request answered meanwhile; released after its client gave up, it is still made."""
    held = gh.hold("POST", r"/git/refs$")
    ref = {"ref": "refs/heads/slow", "sha": gh.base}
    with pytest.raises(requests.Timeout):  # the client gives up, as a killed worker would
        requests.post(
            gh.url + f"/repos/{REPO}/git/refs",
            json=ref,
            headers={"Authorization": f"token {gh.token}"},
            timeout=1,
        )
    assert held.arrived.is_set()
    assert call(gh, "GET", f"/repos/{REPO}/git/ref/heads/main", gh.token).status_code == 200
    assert "refs/heads/slow" not in gh.refs(REPO)
    held.release()
    deadline = time.monotonic() + 5
    while "refs/heads/slow" not in gh.refs(REPO) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gh.refs(REPO)["refs/heads/slow"] == gh.base
    # Released, the hold is over: this one is answered at once.
    again = call(
        gh, "POST", f"/repos/{REPO}/git/refs", gh.token, json={**ref, "ref": "refs/heads/b"}
    )
    assert again.status_code == 201
