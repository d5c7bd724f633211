"""What the GitHub fake enforces on GitHub Apps, in one place: the permission each route needs
of an installation token, and the window an App JWT must fall in."""

from __future__ import annotations

# The permission each route needs of an installation token ("Permissions required for GitHub
# Apps", docs.github.com/rest/authentication/permissions-required-for-github-apps): metadata
# (always granted) for the repository and its rules, contents for git data, pull_requests for
# pulls; reads need "read" or "write", writes "write"; a tuple of pairs: any one of them.
# Anything else: 403.
ROUTE_PERMISSIONS = {
    **dict.fromkeys(("repo", "branch_rules"), ("metadata", "read")),
    **dict.fromkeys(
        ("branch", "get_ref", "matching_refs", "get_commit", "get_tree", "get_blob", "get_tag"),
        ("contents", "read"),
    ),
    "contents": ("contents", "read"),
    **dict.fromkeys(
        ("create_ref", "update_ref", "delete_ref", "create_commit", "create_tree", "create_blob"),
        ("contents", "write"),
    ),
    **dict.fromkeys(("list_pulls", "get_pull"), ("pull_requests", "read")),
    **dict.fromkeys(("create_pull", "update_pull"), ("pull_requests", "write")),
    # Either one will do ("at least one of the following permission sets", add-labels-to-an-
    # issue): a pull request's labels are the issue's.
    "add_labels": (("issues", "write"), ("pull_requests", "write")),
    # checks: write for the writes, checks: read for the reads (docs.github.com/rest/checks/runs).
    **dict.fromkeys(("create_check_run", "update_check_run"), ("checks", "write")),
    **dict.fromkeys(("list_ref_check_runs", "check_annotations"), ("checks", "read")),
}
JWT_LIFETIME = 600  # exp at most 10 minutes after iat (docs: "Generating a JWT for a GitHub App")
# An iat in the future, as GitHub words it (probot/probot#967, Expensify/App#32069: clock drift).
BAD_IAT = (
    "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was "
    "issued"
)


def permitted(granted: dict[str, str] | None, route: str) -> bool:
    """Whether a token with ``granted`` (an installation's permissions; None: a user's token,
    judged by its scopes instead) may take ``route``."""
    if granted is None:
        return True
    needs = ROUTE_PERMISSIONS[route]
    for permission, level in needs if isinstance(needs[0], tuple) else (needs,):
        has = "read" if permission == "metadata" else granted.get(permission)
        if has == "write" or (has == "read" and level == "read"):
            return True
    return False
