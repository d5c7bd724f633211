"""The fake GitHub's draft pull requests and issue labels, as strict as GitHub.

Drafts: ``draft`` must be a boolean (the REST schema's "Invalid request" otherwise); a draft is
refused with 422 "Draft pull requests are not supported in this repository." where the plan has
no drafts (the body GitHub sends: SWE-agent/SWE-agent#179; availability: "Draft pull requests
are available in public repositories with GitHub Free ..., and in public and private
repositories with GitHub Team and GitHub Enterprise Cloud", docs.github.com/rest/pulls/
pulls#create-a-pull-request). ``no_drafts(repo)`` switches a repository to such a plan.

Labels: POST /repos/{owner}/{repo}/issues/{number}/labels (docs.github.com/rest/issues/
labels#add-labels-to-an-issue; a pull request is an issue there). The body is ``{"labels":
[...]}`` (recommended), or the list itself, or one name; items are names or ``{"name": ...}``.
It answers 200 with every label of the issue; a name already on it is not added twice (names
ignore case); a name the repository does not have yet is created, colour ``ededed``, no
description (github/docs#35718); a name over 50 characters is 422 (semantic-release/github#518);
an empty list removes every label (the REST description says so). It needs an installation's
``issues: write`` or ``pull_requests: write`` (github_rules).
"""

from __future__ import annotations

DOCS = "https://docs.github.com/rest"
ADD_LABELS_DOC = f"{DOCS}/issues/labels#add-labels-to-an-issue"
CREATE_PULL_DOC = f"{DOCS}/pulls/pulls#create-a-pull-request"
DRAFTS_UNSUPPORTED = "Draft pull requests are not supported in this repository."
NEW_LABEL_COLOR = "ededed"
MAX_LABEL_NAME = 50


class LabelsAndDrafts:
    """Mixed into FakeGitHub: needs its ``repo()``, ``_lock`` and ``Reply``."""

    def no_drafts(self, full_name: str) -> None:
        """The repository's plan has no draft pull requests (a private repository on Free)."""
        self.repo(full_name).drafts_supported = False

    def labels_of(self, full_name: str, number: int) -> list[str]:
        """The label names of pull request ``number``, in the order they were added."""
        with self._lock:
            return list(self._pull(self.repo(full_name), number)["labels"])

    def _draft_rule(self, repo, body: dict) -> bool:
        """Whether the new pull request is a draft, or GitHub's refusal."""
        draft = body.get("draft", False)
        if not isinstance(draft, bool):
            said = f"For 'properties/draft', {draft!r} is not a boolean."
            raise self.Reply(422, f"Invalid request.\n\n{said}", doc=CREATE_PULL_DOC)
        if draft and not repo.drafts_supported:
            raise self.Reply(422, DRAFTS_UNSUPPORTED, doc=CREATE_PULL_DOC)
        return draft

    def _add_labels(self, repo, number: str, body, **_) -> tuple:
        pr = self._pull(repo, int(number))
        names = _label_names(body)
        if names is None:
            said = "For 'links/0/schema', the body is not a list of label names."
            raise self.Reply(422, f"Invalid request.\n\n{said}", doc=ADD_LABELS_DOC)
        for name in names:
            if not name or len(name) > MAX_LABEL_NAME:
                error = {"value": name, "resource": "Label", "field": "name", "code": "invalid"}
                raise self.Reply(422, "Validation Failed", errors=[error], doc=ADD_LABELS_DOC)
        if not names:
            pr["labels"] = []
        for name in names:
            known = repo.labels.setdefault(name.casefold(), name)
            if known.casefold() not in {n.casefold() for n in pr["labels"]}:
                pr["labels"].append(known)
        return 200, [repo.label_json(name) for name in pr["labels"]]

    def _pull(self, repo, number: int) -> dict:
        for pr in repo.pulls:
            if pr["number"] == number:
                return pr
        raise self.Reply(404, "Not Found", doc=ADD_LABELS_DOC)


def _label_names(body) -> list[str] | None:
    """The names in any body shape GitHub takes, or None for a shape it refuses."""
    if isinstance(body, dict) and set(body) == {"labels"}:
        body = body["labels"]
    if isinstance(body, str):
        body = [body]
    if not isinstance(body, list):
        return None
    names = [item.get("name") if isinstance(item, dict) else item for item in body]
    return names if all(isinstance(name, str) for name in names) else None
