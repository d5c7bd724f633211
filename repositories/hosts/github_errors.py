"""What GitHub's answers mean, by GitHub's documentation and what its users report.

Each recogniser names its sources. They read GitHub's body as PyGithub hands it over
(``GithubException.data``: the JSON, or ``{"data": text}`` when the answer was not JSON).
"""

from __future__ import annotations

import json
from typing import Any

from github import GithubException

# Branch protection and rulesets refusing a write. The status varies (422 on git refs, 409 on
# contents, 405 on merges, 403 reported for required checks) and so does the wording:
# - rulesets, REST: 422 "Repository rule violations found\n\nChanges must be made through a
#   pull request." (satisfactory-factories/application#67, update-a-reference), nested
#   errors[] (github/github-mcp-server#3080, create_branch), and errors[] entries
#   {"field": "pre_receive", "message": "pre_receive Repository rule violations found\n\n
#   Cannot create ref due to creations being restricted.\n\n"} (softprops/action-gh-release's
#   tests, a tag creation refused by a ruleset);
# - rulesets, git push: "GH013: Repository rule violations found for refs/heads/x" then
#   "Cannot create ref due to creations being restricted." (dmf-mxl/mxl#356);
# - classic protection: "GH006: Protected branch update failed for refs/heads/x"
#   (kubeflow/pipelines#4384), 422 "3 of 3 required status checks are expected." with
#   documentation_url .../about-protected-branches (47degrees/sbt-org-policies#263), 405
#   "You're not authorized to push to this branch" (claroline/Distribution#457), "Cannot
#   force-push to this protected branch" (dependabot/dependabot-core#1911).
RULE_WORDING = (
    "repository rule violation",
    "push declined due to repository rule",
    "creations being restricted",
    "changes must be made through a pull request",
    "protected branch",
    "branch protection",
    "required status check",
    "not authorized to push to this branch",
)
PROTECTION_DOCS = "about-protected-branches"
# POST git/refs answers a bare 422 "Reference update failed" to valid requests now and then
# ("Sometimes it works, sometimes it fails": github/rest-api-description#4887; renovatebot/
# renovate#11481 with x-ratelimit-remaining 4971), and also when protection or a ruleset
# refuses to create the branch (actions/github-script#455 "when creating a protected branch";
# release-plz/action#518). Which one it was, only the branch's rules can tell.
REFERENCE_UPDATE_FAILED = "reference update failed"
# POST git/trees answers 422 "base_tree is not a valid tree oid" sporadically for a tree that
# exists, "constantly failing for a period of time (minutes to hours)" (PyGithub/PyGithub#1732).
BASE_TREE_INVALID = "base_tree is not a valid tree oid"
# POST pulls with draft: true where the plan has no drafts (a private repository on Free or
# Pro): 422 "Draft pull requests are not supported in this repository." (SWE-agent/SWE-agent#179).
DRAFTS_NOT_SUPPORTED = "draft pull requests are not supported"
# Rule types that never refuse creating a new branch: they guard deletions, updates of an
# existing ref, or merges (docs.github.com/rest/repos/rules; a required-status-checks rule does
# refuse creation unless do_not_enforce_on_create: artifact-keeper/artifact-keeper#3798).
RULES_NOT_ON_CREATE = frozenset(
    {"deletion", "non_fast_forward", "update", "pull_request", "required_linear_history"}
    | {"merge_queue", "required_deployments"}
)


def message(exc: GithubException) -> str:
    """GitHub's message and every errors[] message, in order."""
    data = exc.data if isinstance(exc.data, dict) else {"message": str(exc.data)}
    details = [
        e.get("message") or json.dumps(e) for e in data.get("errors") or [] if isinstance(e, dict)
    ]
    details += [e for e in data.get("errors") or [] if isinstance(e, str)]
    return " ".join(str(x) for x in [data.get("message"), *details] if x)


def text(exc: GithubException) -> str:
    return message(exc).lower()


def headers_of(exc: GithubException) -> dict[str, str]:
    return {k.lower(): str(v) for k, v in (exc.headers or {}).items()}


def is_rule_refusal(exc: GithubException) -> bool:
    """Branch protection or a ruleset refused the write, whatever the status and wording."""
    if exc.status in (401, 404, 429) or not 400 <= exc.status < 500:
        return False
    docs = exc.data.get("documentation_url", "") if isinstance(exc.data, dict) else ""
    return any(marker in text(exc) for marker in RULE_WORDING) or PROTECTION_DOCS in str(docs)


def is_rate_limited(exc: GithubException) -> bool:
    """docs.github.com rate-limits-for-the-rest-api: primary limits answer 403 or 429 with
    x-ratelimit-remaining 0; secondary limits 403 or 429 with a message that says so."""
    said = text(exc)
    limited = headers_of(exc).get("x-ratelimit-remaining") == "0" or "rate limit" in said
    return exc.status in (403, 429) and (limited or "abuse detection" in said)


def is_secondary(exc: GithubException) -> bool:
    """Not the hourly budget: "secondary rate limit" (formerly "abuse detection"), or a 429
    without x-ratelimit-remaining 0 (GitHub does not always send retry-after for these:
    hub4j/github-api#1805)."""
    said = text(exc)
    if "secondary rate limit" in said or "abuse" in said:
        return True
    return headers_of(exc).get("x-ratelimit-remaining") != "0"


def is_reference_update_failed(exc: GithubException) -> bool:
    return exc.status == 422 and text(exc).strip() == REFERENCE_UPDATE_FAILED


def is_base_tree_invalid(exc: GithubException) -> bool:
    return exc.status == 422 and BASE_TREE_INVALID in text(exc)


def is_not_the_api(exc: GithubException) -> bool:
    """A 404 that is not JSON: a web server (GHES's web UI without /api/v3, a proxy) answered,
    not the REST API, which answers every unknown path with JSON."""
    data = exc.data
    return exc.status == 404 and (
        not isinstance(data, dict) or set(data) == {"data"} or "message" not in data
    )


def blocking_rules(rules: Any) -> list[dict]:
    """The rules of GET rules/branches/{branch} that may refuse creating that branch."""
    found = []
    for rule in rules if isinstance(rules, list) else []:
        kind = rule.get("type") if isinstance(rule, dict) else None
        params = rule.get("parameters") or {}
        if not kind or kind in RULES_NOT_ON_CREATE:
            continue
        if kind == "required_status_checks" and params.get("do_not_enforce_on_create"):
            continue
        found.append(rule)
    return found


def refusal_body(exc: GithubException, rules: list[dict] | None = None) -> str:
    """GitHub's answer, with the rules that apply when the answer itself names none: the text
    an approver reads on the branch-protection hold."""
    body = dict(exc.data) if isinstance(exc.data, dict) else {"message": str(exc.data)}
    if rules:
        body["rules"] = [
            {k: r[k] for k in ("type", "ruleset_source", "ruleset_id") if k in r} for r in rules
        ]
        body["message"] = (
            f"{body.get('message') or ''} (repository rules for this branch: "
            + ", ".join(r["type"] for r in rules)
            + ")"
        ).strip()
    return json.dumps(body, sort_keys=True)
