"""GitHub deliveries for the webhook tests: a signed ``deliver``, ``push`` and
``pull_request`` payloads, and the fake GitHub that the receiver asks whether the pushed SHA
is the branch's head."""

import json
import uuid

import pytest

from tests.fakes.github_api import FakeGitHub
from triggers import api as webhooks

SECRET = "webhook-test-secret"
FILES = {"README.md": "# shop\n"}
# The fake's commits have fixed dates, so a repository seeded the same way has this head in
# every test (the fixture below checks it).
SHA = FakeGitHub().create_repo("acme/shop", FILES)


def push(branch="main", repo="acme/shop", **extra) -> dict:
    return {
        "ref": f"refs/heads/{branch}",
        "before": "b" * 40,
        "after": SHA,
        "repository": {"full_name": repo},
        "sender": {"login": "octocat"},
        **extra,
    }


def pull_request(sha=SHA, action="opened", **pull) -> dict:
    """A ``pull_request`` delivery of acme/shop's PR #7 from its own branch ``feature`` by a
    member; ``pull`` overrides fields of ``pull_request`` (``draft``, ``author_association``)."""
    return {
        "action": action,
        "pull_request": {
            "number": 7,
            "head": {"sha": sha, "ref": "feature", "repo": {"full_name": "acme/shop"}},
            "author_association": "MEMBER",
            **pull,
        },
        "repository": {"full_name": "acme/shop"},
        "sender": {"login": "octocat"},
    }


def deliver(client, payload, event="push", delivery=None, secret=SECRET, signature=None, **kw):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4())}
    if signature is not False:
        headers["X-Hub-Signature-256"] = signature or webhooks.signature_for(secret, body)
    return client.post(
        "/api/webhooks/github",
        body,
        content_type=kw.pop("content_type", "application/json"),
        headers=headers,
    )


@pytest.fixture
def hub(settings):
    """acme/shop on a fake GitHub whose main is at SHA; the github host is pointed at it."""
    with FakeGitHub() as gh:
        assert gh.create_repo("acme/shop", FILES) == SHA
        settings.GITHUB_API_URL, settings.GITHUB_TOKEN = gh.url, gh.token
        settings.GITHUB_APP_ID = settings.GITHUB_APP_PRIVATE_KEY = ""
        settings.GITHUB_SECONDS_BETWEEN_WRITES = 0
        yield gh
        assert gh.errors == []
