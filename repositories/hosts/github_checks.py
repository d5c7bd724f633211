"""Check runs on GitHub (docs.github.com/rest/checks/runs): one per (head SHA, name, AMTP run).

Idempotent: the check run is found by head SHA, name and ``external_id`` (the AMTP run id)
before one is created, so a retry after a crash or a GitHub 5xx finds the earlier attempt's
instead of adding a second. Annotations go in requests of at most 50 ("The Checks API limits
the number of annotations to a maximum of 50 per API request", create-a-check-run); GitHub
appends each request's to the run's, so a retry skips the ``annotations_count`` already
there and sends the rest. The conclusion goes with the last request, so a check run shown
completed has all its annotations.

A check run can be shown before it has a result (:meth:`CheckRunWrites.show_check_run`:
``queued`` or ``in_progress`` with a title and summary, a held check run's), found and adopted
the same way; the report then completes that same check run.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

MAX_ANNOTATIONS_PER_REQUEST = 50


@dataclass(frozen=True)
class CheckRunResult:
    check_run_id: int
    url: str
    annotations: int


class CheckRunWrites:
    """Mixed into GitHubHost: needs its ``_repo()``, ``_github()`` and ``_errors()``."""

    def report_check_run(
        self,
        *,
        head_sha: str,
        name: str,
        external_id: str,
        conclusion: str,
        title: str,
        summary: str,
        annotations: list[dict],
        details_url: str = "",
    ) -> CheckRunResult:
        with self._errors(f"report check run {name!r} on {head_sha}"):
            found = self._find_check_run(head_sha, name, external_id)
            if found is not None and found["status"] == "completed":
                count = found["output"].get("annotations_count", 0)
                return CheckRunResult(found["id"], found["html_url"], count)
            if found is None:
                found = self._check_request(
                    "POST", "", _new(head_sha, name, external_id, details_url)
                )
            done = found["output"].get("annotations_count", 0) or 0
            output = {"title": title, "summary": summary}
            rest = annotations[done:]
            while True:
                batch, rest = rest[:MAX_ANNOTATIONS_PER_REQUEST], rest[MAX_ANNOTATIONS_PER_REQUEST:]
                body = {"output": {**output, "annotations": batch}}
                if not rest:
                    body.update(status="completed", conclusion=conclusion)
                    if details_url:  # action_required needs one; a shown run may predate it
                        body["details_url"] = details_url
                found = self._check_request("PATCH", f"/{found['id']}", body)
                if not rest:
                    return CheckRunResult(found["id"], found["html_url"], len(annotations))

    def show_check_run(
        self,
        *,
        head_sha: str,
        name: str,
        external_id: str,
        status: str,
        title: str,
        summary: str,
        details_url: str = "",
    ) -> CheckRunResult:
        """The check run with ``status`` (``queued`` or ``in_progress``: no result yet),
        ``title`` and ``summary``, found by external_id as :meth:`report_check_run` finds it,
        else created. One already completed is left as it is: its result stands (a report or
        a cancel's that came first)."""
        with self._errors(f"show check run {name!r} on {head_sha}"):
            found = self._find_check_run(head_sha, name, external_id)
            if found is None or found["status"] != "completed":
                body = {"status": status, "output": {"title": title, "summary": summary}}
                if details_url:
                    body["details_url"] = details_url
                if found is None:
                    new = _new(head_sha, name, external_id, details_url)
                    found = self._check_request("POST", "", {**new, **body})
                else:
                    found = self._check_request("PATCH", f"/{found['id']}", body)
            count = found["output"].get("annotations_count", 0) or 0
            return CheckRunResult(found["id"], found["html_url"], count)

    def _find_check_run(self, head_sha: str, name: str, external_id: str) -> dict | None:
        """GET commits/{ref}/check-runs?check_name= (list-check-runs-for-a-git-reference)."""
        url = f"{self._repo().url}/commits/{head_sha}/check-runs"
        _, answer = self._github().requester.requestJsonAndCheck(
            "GET", url, parameters={"check_name": name, "filter": "all", "per_page": 100}
        )
        for run in answer.get("check_runs", []):
            if run.get("external_id") == external_id:
                return run
        return None

    def _check_request(self, verb: str, suffix: str, body: dict) -> dict:
        url = f"{self._repo().url}/check-runs{quote(suffix)}"
        return self._github().requester.requestJsonAndCheck(verb, url, input=body)[1]


def _new(head_sha: str, name: str, external_id: str, details_url: str) -> dict:
    body = {"name": name, "head_sha": head_sha, "external_id": external_id}
    body["status"] = "in_progress"
    return {**body, "details_url": details_url} if details_url else body
