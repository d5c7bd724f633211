"""The fake GitHub's check runs, as strict as GitHub (docs.github.com/rest/checks/runs).

- POST /repos/{o}/{r}/check-runs (create-a-check-run): ``name`` and ``head_sha`` required;
  ``head_sha`` must be a commit of the repository (422 otherwise); ``status`` one of
  ``queued``, ``in_progress``, ``completed`` (and ``waiting``, ``requested``, ``pending``,
  which "only GitHub Actions can set"; an App is refused: 422); a ``conclusion`` makes the
  status ``completed``, and ``completed`` needs one ("Required if you provide
  completed_at or a status of completed"); ``conclusion`` one of ``action_required``,
  ``cancelled``, ``failure``, ``neutral``, ``success``, ``skipped``, ``timed_out``
  (``stale`` "can only be set by GitHub"). A conclusion sent with a status that is not
  ``completed`` (``queued``, ``in_progress``) is refused, naming ``status``: "Providing
  conclusion will automatically set the status parameter to completed", so such a request
  asks for two states at once (GitHub's answer to it is not documented; refusing it keeps
  AMTP from relying on either). ``action_required`` needs a ``details_url``, sent or set
  earlier ("When the conclusion is action_required, additional details should be provided
  on the site specified by details_url"; without one GitHub links the App's homepage, where
  there is nothing to act on): refused otherwise, naming ``details_url``. 201 with the check
  run.
- PATCH /repos/{o}/{r}/check-runs/{id} (update-a-check-run): the same rules; 200.
- ``output``: ``title`` and ``summary`` required whenever ``output`` is sent, ``summary`` at
  most 65535 characters; ``annotations`` at most 50 per request ("The Checks API limits the
  number of annotations to a maximum of 50 per API request. To create more than 50
  annotations, you have to make multiple requests to the Update a check run endpoint. Each
  time you update the check run, annotations are appended to the list of annotations that
  already exist"); each needs ``path``, ``start_line``, ``end_line``, ``annotation_level``
  (``notice``, ``warning``, ``failure``) and ``message``; ``start_column``/``end_column``
  only when the lines are equal. Any refusal is 422 Validation Failed naming the field.
- GET /repos/{o}/{r}/commits/{ref}/check-runs (list-check-runs-for-a-git-reference):
  ``check_name`` filters by name; ``{"total_count", "check_runs"}``.
- GET /repos/{o}/{r}/check-runs/{id}/annotations (list-check-run-annotations).
- Permission: ``checks: write`` for writes, ``checks: read`` for reads (github_rules).

``rerequest_payload(full_name, id)`` is the ``check_run`` delivery GitHub sends with action
``rerequested`` when someone clicks "Re-run" (webhook-events-and-payloads#check_run).
``deployment_status_payload(full_name, ...)`` is the ``deployment_status`` delivery (action
``created``) GitHub sends when a deployment's status is created
(webhook-events-and-payloads#deployment_status): ``deployment`` with ``sha``, ``ref``,
``environment``; ``deployment_status`` with ``state`` (error, failure, inactive, in_progress,
queued, pending, success: rest/deployments/statuses#create-a-deployment-status),
``environment_url`` (only when the status was given one) and ``target_url`` ("" unless given).
"""

from __future__ import annotations

import time

DOCS = "https://docs.github.com/rest/checks/runs"
STATUSES = ("queued", "in_progress", "completed")
ACTIONS_ONLY = ("waiting", "requested", "pending")
CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "timed_out",
)
LEVELS = ("notice", "warning", "failure")
MAX_ANNOTATIONS = 50
MAX_SUMMARY = 65535


class CheckRuns:
    """Mixed into FakeGitHub: needs its ``repo()``, ``_lock``, ``url`` and ``Reply``."""

    def check_runs(self, full_name: str) -> list[dict]:
        with self._lock:
            return [dict(run) for run in self.repo(full_name).check_runs]

    def rerequest_payload(self, full_name: str, check_run_id: int, sender="octocat") -> dict:
        with self._lock:
            run = self._check_run(self.repo(full_name), check_run_id)
            return {
                "action": "rerequested",
                "check_run": {
                    "id": run["id"],
                    "name": run["name"],
                    "head_sha": run["head_sha"],
                    "external_id": run["external_id"],
                    "pull_requests": [],
                },
                "repository": {"full_name": self.repo(full_name).full_name},
                "sender": {"login": sender},
            }

    def deployment_status_payload(
        self,
        full_name: str,
        ref: str,
        *,
        sha: str | None = None,
        state: str = "success",
        environment_url: str | None = None,
        target_url: str = "",
        environment: str = "preview",
        sender="vercel[bot]",
    ) -> dict:
        with self._lock:
            repo = self.repo(full_name)
            sha = sha or repo.resolve(ref)
            status = {"id": 1, "state": state, "environment": environment}
            status["target_url"] = target_url
            if environment_url is not None:
                status["environment_url"] = environment_url
            deployment = {"id": 1, "sha": sha, "ref": ref, "environment": environment}
            return {
                "action": "created",
                "deployment": {**deployment, "url": f"{repo.url}/deployments/1"},
                "deployment_status": status,
                "repository": {"full_name": repo.full_name},
                "sender": {"login": sender},
            }

    def _create_check_run(self, repo, body: dict, **_) -> tuple:
        for field in ("name", "head_sha"):
            if not isinstance(body.get(field), str) or not body[field]:
                self._check_invalid(field, "missing_field", "create-a-check-run")
        if repo.objects.get(body["head_sha"], ("",))[0] != "commit":
            self._check_invalid("head_sha", "invalid", "create-a-check-run")
        run = {
            "id": len(self._all_check_runs()) + 1,
            "name": body["name"],
            "head_sha": body["head_sha"],
            "external_id": str(body.get("external_id", "")),
            "details_url": body.get("details_url"),
            "status": "queued",
            "conclusion": None,
            "output": {"title": None, "summary": None, "annotations_count": 0},
            "annotations": [],
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self._apply_check(run, body, "create-a-check-run")
        repo.check_runs.append(run)
        return 201, self._check_json(repo, run)

    def _update_check_run(self, repo, check_run_id: str, body: dict, **_) -> tuple:
        run = self._check_run(repo, int(check_run_id))
        self._apply_check(run, body, "update-a-check-run")
        return 200, self._check_json(repo, run)

    def _list_ref_check_runs(self, repo, ref: str, query: dict, **_) -> tuple:
        sha = repo.resolve(ref)
        runs = [
            self._check_json(repo, r)
            for r in repo.check_runs
            if r["head_sha"] == sha and query.get("check_name") in (None, r["name"])
        ]
        return 200, {"total_count": len(runs), "check_runs": runs}

    def _check_annotations(self, repo, check_run_id: str, **_) -> tuple:
        return 200, list(self._check_run(repo, int(check_run_id))["annotations"])

    def _apply_check(self, run: dict, body: dict, doc: str) -> None:
        """Validate everything first, then change the run (a refusal changes nothing)."""
        status, conclusion = body.get("status"), body.get("conclusion")
        if status is not None and status not in STATUSES:
            self._check_invalid("status", "invalid", doc)  # ACTIONS_ONLY too: not an App's
        if conclusion is not None and conclusion not in CONCLUSIONS:
            self._check_invalid("conclusion", "invalid", doc)
        if status == "completed" and conclusion is None and run["conclusion"] is None:
            self._check_invalid("conclusion", "missing_field", doc)
        if conclusion is not None and status not in (None, "completed"):
            self._check_invalid("status", "invalid", doc)  # a conclusion completes the run
        details_url = body.get("details_url", run["details_url"])
        if conclusion == "action_required" and not details_url:
            self._check_invalid("details_url", "missing_field", doc)
        output = body.get("output")
        annotations = self._check_output(output, doc) if output is not None else []
        if output is not None:
            run["output"].update(title=output["title"], summary=output["summary"])
            run["annotations"] += annotations
            run["output"]["annotations_count"] = len(run["annotations"])
        if status is not None:
            run["status"] = status
        if conclusion is not None:
            run["status"], run["conclusion"] = "completed", conclusion
        if "details_url" in body:
            run["details_url"] = body["details_url"]

    def _check_output(self, output, doc: str) -> list[dict]:
        if not isinstance(output, dict):
            self._check_invalid("output", "invalid", doc)
        for field in ("title", "summary"):
            if not isinstance(output.get(field), str):
                self._check_invalid(f"output.{field}", "missing_field", doc)
        if len(output["summary"]) > MAX_SUMMARY:
            self._check_invalid("output.summary", "too_long", doc)
        annotations = output.get("annotations", [])
        if not isinstance(annotations, list) or len(annotations) > MAX_ANNOTATIONS:
            self._check_invalid("output.annotations", "too_many", doc)
        for item in annotations:
            self._check_annotation(item, doc)
        return [dict(item) for item in annotations]

    def _check_annotation(self, item, doc: str) -> None:
        if not isinstance(item, dict):
            self._check_invalid("output.annotations", "invalid", doc)
        for field in ("path", "message"):
            if not isinstance(item.get(field), str) or not item[field]:
                self._check_invalid(f"output.annotations.{field}", "missing_field", doc)
        for field in ("start_line", "end_line"):
            if not isinstance(item.get(field), int) or item[field] < 1:
                self._check_invalid(f"output.annotations.{field}", "missing_field", doc)
        if item.get("annotation_level") not in LEVELS:
            self._check_invalid("output.annotations.annotation_level", "invalid", doc)
        if ("start_column" in item or "end_column" in item) and item["start_line"] != item[
            "end_line"
        ]:
            self._check_invalid("output.annotations.start_column", "invalid", doc)

    def _check_run(self, repo, check_run_id: int) -> dict:
        for run in repo.check_runs:
            if run["id"] == check_run_id:
                return run
        raise self.Reply(404, "Not Found")

    def _all_check_runs(self) -> list[dict]:
        return [run for repo in self._repos.values() for run in repo.check_runs]

    def _check_json(self, repo, run: dict) -> dict:
        shown = {k: v for k, v in run.items() if k != "annotations"}
        return {
            **shown,
            "output": dict(run["output"]),
            "url": f"{repo.url}/check-runs/{run['id']}",
            "html_url": f"{self.url}/{repo.full_name}/runs/{run['id']}",
        }

    def _check_invalid(self, field: str, code: str, doc: str) -> None:
        error = {"resource": "CheckRun", "field": field, "code": code}
        raise self.Reply(422, "Validation Failed", errors=[error], doc=f"{DOCS}#{doc}")
