"""Secrets never leave: secret-bearing files are neither listed nor readable, and secret-looking
values in every other file are redacted (marked in place) before they are cached or returned.
tests/test_secret_corpus.py holds the corpus of leaks, near misses and file names; here, which
rule names each kind, and the way through the MCP server."""

import pytest

from repositories import secrets
from tests import samples_hostile as hostile
from tests import secret_corpus as corpus
from tests.factories import RepositoryFactory
from tests.gitrepo import make_git_repo
from tests.mcp_client import call_tools


@pytest.mark.parametrize(
    "text,kind,value",
    [
        (f'const id = "{hostile.AWS_KEY_ID}";', "aws-access-token", hostile.AWS_KEY_ID),
        (f"aws_secret_access_key = {hostile.AWS_SECRET}", "generic-api-key", hostile.AWS_SECRET),
        (f"token = '{hostile.GITHUB_TOKEN}'", "github-pat", hostile.GITHUB_TOKEN),
        (f"t = github_pat_11ABCDEFG0_{'plantedFAKE' * 6}abcde", "github-fine-grained-pat", "_11A"),
        (f"stripe = {hostile.STRIPE_KEY}", "stripe-access-token", hostile.STRIPE_KEY),
        (f"{{ token: '{hostile.SLACK_TOKEN}' }}", "slack-legacy-bot-token", hostile.SLACK_TOKEN),
        (f"_authToken={hostile.NPM_TOKEN}", "npm-access-token", hostile.NPM_TOKEN),
        ("key=AIzaSyD-planted_FAKE0123456789abcdefghi", "gcp-api-key", "SyD-planted"),
        ("ANTHROPIC_API_KEY=sk-ant-api03-plantedFAKE0123456789", "secret-assignment", "api03"),
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlcGxh",
            "jwt",
            "eyJzdWIiOiJwbGFudGVkIn0",
        ),
        (
            f"mongodb://admin:{hostile.MONGO_PASSWORD}@mongo:27017/x",
            "url-password",
            hostile.MONGO_PASSWORD,
        ),
        (f'const jwtSecret = "{hostile.JWT_SECRET}";', "secret-assignment", hostile.JWT_SECRET),
        ('"password": "c0rrect-h0rse-B4ttery"', "secret-assignment", "c0rrect-h0rse"),
        (hostile.PRIVATE_KEY, "private-key", hostile.KEY_MATERIAL),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt", "private-key", "b3BlbnNz"),
        (f"x = '{corpus.HF_TOKEN}'", "huggingface-access-token", corpus.HF_TOKEN),
        (f"x = '{corpus.SENDGRID}'", "sendgrid-api-token", corpus.SENDGRID),
        (f"x = '{corpus.DO_TOKEN}'", "digitalocean-pat", corpus.DO_TOKEN),
        (f"x = '{corpus.GRAFANA}'", "grafana-service-account-token", corpus.GRAFANA),
        (f"x = '{corpus.PYPI}'", "pypi-upload-token", corpus.PYPI),
        (f"AccountKey={corpus.AZURE_KEY};", "generic-api-key", corpus.AZURE_KEY),
        (f"Authorization: Basic {corpus.BASIC}", "authorization-header", corpus.BASIC),
        (f"define('DB_PASSWORD', '{corpus.PHP_PASSWORD}');", "secret-assignment", "Pl4nted"),
    ],
)
def test_secret_values_are_replaced_by_a_marker_in_place(text, kind, value):
    redacted = secrets.redact(text)
    assert value not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert secrets.redact(redacted) == redacted  # idempotent: a cached text is already clean


def test_the_text_around_a_secret_is_kept():
    text = f"const a = 1;\nconst stripe = '{hostile.STRIPE_KEY}';\nconst b = 2;\n"
    assert secrets.redact(text) == (
        "const a = 1;\nconst stripe = '[REDACTED:stripe-access-token]';\nconst b = 2;\n"
    )
    url = f"postgres://app:{hostile.DB_PASSWORD}@db:5432/app"
    assert secrets.redact(url) == "postgres://app:[REDACTED:url-password]@db:5432/app"


# --- through the MCP server ------------------------------------------------------------------


@pytest.fixture
def hostile_repo(tmp_path, valkey, transactional_db):
    path = make_git_repo(tmp_path / "hostile", hostile.HOSTILE_WEB)
    RepositoryFactory(full_name="acme/hostile", host="local", local_path=str(path))
    return path


def test_the_mcp_server_hides_refuses_and_redacts(hostile_repo, valkey):
    calls = [
        ("repo.tree", {"repo": "acme/hostile", "ref": "main", "depth_level": "deep"}),
        *[
            ("repo.read_file", {"repo": "acme/hostile", "ref": "main", "path": path})
            for path in hostile.SECRET_FILES
        ],
        ("repo.read_file", {"repo": "acme/hostile", "ref": "main", "path": "server/index.js"}),
        ("repo.read_file", {"repo": "acme/hostile", "ref": "main", "path": "server/index.js"}),
    ]
    _, (tree_error, tree), *reads, (_, server), (_, cached) = call_tools(calls)
    assert not tree_error
    listed = {e["path"] for e in tree["entries"]}
    assert "server/index.js" in listed and not listed & set(hostile.SECRET_FILES)
    for (is_error, text), path in zip(reads, hostile.SECRET_FILES, strict=True):
        assert is_error and text.endswith(secrets.SECRET_FILE.format(path=path))
    content = server["content"]
    assert cached["content"] == content  # the second read came from the cache
    assert "app.listen" in content and "[REDACTED:stripe-access-token]" in content
    for marker in ("aws-access-token", "github-pat", "slack-legacy-bot-token", "url-password"):
        assert f"[REDACTED:{marker}]" in content
    assert "[REDACTED:private-key]" in content
    assert hostile.leaked(content) == []
    stored = hostile.valkey_text(valkey)
    assert "server/index.js" in stored  # the cache holds the file: redacted
    assert hostile.leaked(stored) == []


def test_redaction_is_linear_on_one_huge_line():
    """A minified bundle is one long token: the assignment rule once took quadratic time on it
    (60 kB: ~3 minutes, enough to time the crawler's MCP call out). Linear is milliseconds; the
    bound below is three orders of magnitude above that, and far below the quadratic time."""
    import time

    for text in ("x" * 200_000, "secret" * 40_000, "token:" + "x" * 200_000):
        started = time.monotonic()
        secrets.redact(text)
        assert time.monotonic() - started < 5, text[:20]
