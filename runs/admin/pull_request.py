"""The run's pull request on the run page, for every host: title, body (Markdown rendered
safely), a link when the host has a web page for it, and copyable git commands to get its
head branch (a local repository's pull request lives only in git and ``amtp/pulls.json``)."""

from __future__ import annotations

import shlex

from runs import selectors
from runs.admin import display as show
from runs.admin.markdown import render
from runs.models import Run

NO_BODY = "This run's pull request was opened before AMTP kept its body; see it on the host."


def pull_request(run: Run) -> dict | None:
    """What the run page shows of the run's pull request, or None when it has none."""
    content = selectors.pull_request(run)
    if content is None:
        return None
    head, base = content["head_branch"], content["base_branch"]
    local = content["host"] == "local"
    where = shlex.quote(run.repository.local_path if local else "origin")
    get = f"git fetch {where} {shlex.quote(f'{head}:{head}')} && git switch {shlex.quote(head)}"
    commands = [("check it out in a clone", get)]
    if local:  # the pull request lives in that repository: it can be read in place
        read = f"git -C {where} log --stat {shlex.quote(base)}..{shlex.quote(head)}"
        commands.insert(0, ("read it in place", read))
    body = content.get("body")
    return {
        "number": content["number"],
        "host": content["host"],
        "link": show.pull_request(content["number"], content["url"]),
        "title": content.get("title", ""),
        "body": render(body) if body is not None else None,
        "no_body": NO_BODY,
        "head_branch": head,
        "base_branch": base,
        "files": content["files"],
        "commands": commands,
        "updated": content.get("updated", False),
    }
