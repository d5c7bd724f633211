"""Problem types: every ``type`` the API answers with resolves on AMTP itself to a page that
says what it means and what to do."""

import re
from pathlib import Path

import pytest

from amtp_site.problems import PROBLEM_TYPES, TYPE_BASE
from tests.api_support import PROBLEM, client, make_token  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parent.parent
# A literal slug handed to anything that makes a problem (status first, request before it).
ANSWERED = re.compile(
    r"(?:Problem|problem_response|problem_document|_simple)\(\s*(?:request,\s*)?"
    r"(?:\w+|\d+),\s*\"([a-z-]+)\"",
)


def _answered_slugs() -> set[str]:
    found = set()
    for app in ("amtp_site", "runs", "repositories", "approvals", "agents"):
        for path in (ROOT / app).rglob("*.py"):
            found |= set(ANSWERED.findall(path.read_text()))
    return found


def test_every_problem_the_code_answers_with_is_documented():
    answered = _answered_slugs()
    assert {"validation-error", "not-found", "internal-error", "unauthenticated"} <= answered
    assert answered - set(PROBLEM_TYPES) == set()
    assert TYPE_BASE == "/api/problems/"  # a path on this AMTP, not a host we do not own


@pytest.mark.django_db
def test_a_problem_type_resolves_to_a_page_that_says_what_to_do(client):  # noqa: F811
    refused = client.post("/api/runs", data="{", content_type="application/json")
    problem = refused.json()
    page = client.get(problem["type"])  # the relative reference, resolved on this host
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    assert PROBLEM_TYPES["invalid-json"].split(":")[0] in page.content.decode()

    unknown = client.get(TYPE_BASE + "no-such-problem")
    assert unknown.status_code == 404 and unknown["Content-Type"] == PROBLEM
    assert client.get(TYPE_BASE + "%3Cscript%3E").status_code == 404
