"""Operator admin for runs.

Runs and artifacts are read-only here: the workflow writes them, and a form save would write
every column and could move a finished run backwards. What an operator may do to a run goes
through the services every other surface uses: ``run_cancel`` (needs ``runs.change_run``) and
``run_again`` (needs ``runs.add_run``, the launch permission, see ``runs.admin.launch``).

Per repository (``repositories.access``): the list and every page show only the runs of
repositories the user may see (any other run reads as one that does not exist), and each
action asks ``user.has_perm(permission, run)``: the right on that run's repository.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_POST

from amtp_site import rows, tracing
from amtp_site.audit import Actor
from amtp_site.errors import AmtpError
from amtp_site.lists import EstimatedCountPaginator, PrefixSearchMixin
from repositories import access
from repositories.models import Repository
from runs import costs, selectors
from runs.admin import display as show
from runs.admin.launch import LAUNCH_PERMISSION
from runs.admin.pull_request import pull_request as pull_request_view
from runs.admin.render import highlighted, pretty_json, pygments_css
from runs.admin.verdict import note_warns, verdict
from runs.errors import RunError
from runs.models import Run
from runs.services import run_again, run_cancel
from verification.service import evidence_file

MAX_BULK_RUNS = 50
REFRESH_SECONDS = 5
CANCEL_REQUESTED = "Cancellation of run {run_id} requested; the workflow marks it cancelled."
RUN_AGAIN_STARTED = "Run {new_id} started with the inputs of run {run_id}."
TOO_MANY_SELECTED = f"Select at most {MAX_BULK_RUNS} runs for this action."
FINISHED_SKIPPED = "{count} finished run(s) skipped: there is nothing to cancel."
NOT_ALLOWED = "Run {run_id}: {rule}"
CANCEL = "runs.change_run"
EVIDENCE = "runs.view_artifact"
APPROVALS_SECTION = "admin/approvals/approval/_run_section.html"

RUN_REQUEST = (
    "run_id",
    "repository",
    "ref",
    "commit_sha",
    "base_branch",
    "base_sha",
    "depth_level",
    "target_framework",
    "trigger",
    "requested_by",
    "request_key",
)


class VisibleRepositoryFilter(admin.RelatedFieldListFilter):
    """The repository filter offers only the repositories the user may see."""

    def field_choices(self, field, request, model_admin):
        visible = access.restrict(Repository.objects.all(), request.user, access.VIEW, via="pk")
        return [(r.pk, str(r)) for r in visible.order_by("full_name").only("full_name")]


def refused(request, permission: str, run: Run, action: str) -> str | None:
    """Why ``request.user`` may not do ``action`` on ``run`` (None: they may)."""
    if request.user.has_perm(permission, run):
        return None
    return access.refusal(action, run.repo_full_name, [permission])


@admin.register(Run)
class RunAdmin(PrefixSearchMixin, admin.ModelAdmin):
    change_form_template = "admin/runs/run/change_form.html"
    change_list_template = "admin/runs/run/change_list.html"
    list_display = (
        "short_id",
        "status_badge",
        "repo_full_name",
        "ref",
        "request",
        "age",
        "duration",
        "pull_request",
    )
    list_filter = (
        "status",
        ("repository", VisibleRepositoryFilter),
        "target_framework",
        "trigger",
        "depth_level",
        "created_at",
    )
    # Each has an index (runs.models.Run.Meta.indexes), so a list page stays fast at 1M runs;
    # a date hierarchy would scan the whole table for its years (the created_at filter does not).
    search_fields = ("repo_full_name", "ref", "requested_by")
    uuid_search_fields = ("run_id",)
    search_help_text = "Start of a run id, repository (owner/name), ref or requester."
    # No COUNT(*) over the table: "(N total)" is off, N is estimated above 1,000 rows.
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    list_per_page = 50
    actions = ["cancel_selected", "run_again_selected"]
    fieldsets = [
        (None, {"fields": ("status_badge", "pull_request", "error_type", "error_message")}),
        ("Request", {"fields": RUN_REQUEST}),
        ("Timing", {"fields": ("created_at", "started_at", "finished_at", "duration")}),
        ("Pull request", {"fields": ("head_branch", "pr_number", "pr_url")}),
    ]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in rows.fields(Run)] + ["status_badge", "duration", "pull_request"]

    def get_queryset(self, request):
        runs = super().get_queryset(request)
        return access.restrict(runs, request.user, ("runs.view_run", "runs.change_run"))

    # --- permissions: the run page is read-only; "change" is what gates cancelling ------

    def has_add_permission(self, request):
        return False  # runs start from the launch form, the API or a webhook

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request, obj=None):
        if obj is None:
            return super().has_delete_permission(request)
        return request.user.has_perm("runs.delete_run", obj) and obj.is_terminal

    def has_launch_permission(self, request, obj=None):
        return request.user.has_perm(LAUNCH_PERMISSION, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # a bulk delete would take the audit trail with it
        return actions

    # --- columns -----------------------------------------------------------------------

    short_id = show.short_id_column("run_id", "run", ordering="run_id")
    status_badge = show.badge_column("status")

    @admin.display(description="request")
    def request(self, run):
        # One column (kind · depth · framework · trigger), not four: at 1280-1440 px the age,
        # duration and PR stay on screen.
        return " · ".join((run.kind, run.depth_level, run.target_framework, run.trigger))

    @admin.display(description="age", ordering="created_at")
    def age(self, run):
        return show.age(run.created_at)

    @admin.display(description="duration")
    def duration(self, run):
        return show.elapsed(run.started_at, run.finished_at, not run.is_terminal)

    @admin.display(description="PR", ordering="pr_number")
    def pull_request(self, run):
        return show.pull_request(run.pr_number, run.pr_url)

    # --- the run page ------------------------------------------------------------------

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/cancel/", wrap(self.cancel_view), name="runs_run_cancel"),
            path("<path:object_id>/run-again/", wrap(self.run_again_view), name="runs_run_again"),
            path(
                "<uuid:object_id>/evidence/<path:name>",
                wrap(self.evidence_view),
                name="runs_run_evidence",
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        extra = {"can_launch": self.has_launch_permission(request), **(extra_context or {})}
        return super().changelist_view(request, extra)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        run = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if run is not None:
            extra.update(self.run_page_context(request, run))
        return super().change_view(request, object_id, form_url, extra)

    def run_page_context(self, request, run: Run) -> dict:
        failure = selectors.failure_report(run)
        stages = selectors.run_stages(run)
        for stage in stages:
            stage.badge = show.badge(stage.status)
            stage.colour = show.STATUS_COLOURS.get(stage.status, show.STATUS_COLOURS["pending"])
            stage.status_label = stage.status.replace("_", " ")
            stage.elapsed = show.elapsed(
                stage.started_at, stage.finished_at, stage.status in stage.OPEN
            )
            stage.note_warns = note_warns(stage)
        report = selectors.verification_report(run)
        line = verdict(run, stages, report)
        return {
            "verdict": line,
            # The error box below the verdict only when the line had to shorten the message.
            "error_in_verdict": run.error_message.strip() in line.detail,
            "pull": pull_request_view(run),
            "run_elapsed": show.elapsed(run.started_at, run.finished_at, not run.is_terminal),
            "run_pr": show.pull_request(run.pr_number, run.pr_url),
            "run_trace_id": tracing.trace_id(run.traceparent),
            "run_app": selectors.run_app(run),
            "app_boot": selectors.app_boot(run),
            "stages": stages,
            "artifacts": selectors.run_artifacts(run),
            "failure_report": highlighted(pretty_json(failure, 20_000)[0]) if failure else None,
            "verification": show.verification(report),
            "app_map": show.app_map(selectors.app_map(run)),
            "coverage": show.coverage(selectors.coverage(run)),
            "cost": costs.run_costs(run),
            "pygments_css": pygments_css(),
            "can_cancel": not run.is_terminal and request.user.has_perm(CANCEL, run),
            "can_run_again": self.has_launch_permission(request, run),
            "auto_refresh": not run.is_terminal,
            "refresh_seconds": REFRESH_SECONDS,
            "run_sections": [section] if (section := _approvals_section(request, run)) else [],
        }

    def _run_or_404(self, request, object_id) -> Run:
        run = self.get_object(request, unquote(object_id))
        if run is None:
            raise Http404("no such run")
        return run

    def _allowed_run(self, request, object_id, allowed: bool, right, doing: str) -> Run:
        """The run a view acts on: the model permission (``allowed``), then the run (404 when
        the user may not see it), then ``right`` on its repository."""
        if not allowed:
            raise PermissionDenied
        run = self._run_or_404(request, str(object_id))
        if rule := refused(request, right, run, doing):
            raise PermissionDenied(rule)
        return run

    def _change_url(self, run: Run) -> str:
        return reverse("admin:runs_run_change", args=[run.pk])

    def _cancel(self, request, run: Run) -> bool:
        if rule := refused(request, CANCEL, run, "cancelling runs"):
            self.message_user(request, NOT_ALLOWED.format(run_id=run.pk, rule=rule), messages.ERROR)
            return False
        try:
            run_cancel(run=run, actor=Actor.admin(request))
        except RunError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return False
        return True

    def _run_again(self, request, run: Run) -> Run | None:
        if rule := refused(request, LAUNCH_PERMISSION, run, "starting runs"):
            self.message_user(request, NOT_ALLOWED.format(run_id=run.pk, rule=rule), messages.ERROR)
            return None
        try:
            new = run_again(
                run=run,
                requested_by=request.user.get_username(),
                requester=f"user:{request.user.pk}",
                trigger=Run.Trigger.FORM,
                actor=Actor.admin(request),
            )
        except AmtpError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return None
        self.message_user(request, RUN_AGAIN_STARTED.format(new_id=new.pk, run_id=run.pk))
        return new

    def evidence_view(self, request, object_id, name):
        """A trace or screenshot the verification kept, or an app map's screenshot, as a
        download: evidence is an artifact's, so it needs the artifact right on the run's
        repository."""
        allowed = self.has_view_permission(request)
        run = self._allowed_run(request, object_id, allowed, EVIDENCE, "downloading evidence")
        path = evidence_file(run, name, selectors.evidence_names(run))
        if path is None:
            raise Http404("no such evidence file")
        return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)

    @method_decorator(require_POST)
    def cancel_view(self, request, object_id):
        allowed = self.has_change_permission(request)
        run = self._allowed_run(request, object_id, allowed, CANCEL, "cancelling runs")
        if self._cancel(request, run):
            self.message_user(request, CANCEL_REQUESTED.format(run_id=run.pk))
        return HttpResponseRedirect(self._change_url(run))

    @method_decorator(require_POST)
    def run_again_view(self, request, object_id):
        allowed = self.has_launch_permission(request)
        run = self._allowed_run(request, object_id, allowed, LAUNCH_PERMISSION, "starting runs")
        new = self._run_again(request, run)
        return HttpResponseRedirect(self._change_url(new or run))

    # --- list actions ------------------------------------------------------------------

    def _bounded(self, request, queryset) -> list[Run] | None:
        runs = list(queryset[: MAX_BULK_RUNS + 1])
        if len(runs) > MAX_BULK_RUNS:
            self.message_user(request, TOO_MANY_SELECTED, messages.ERROR)
            return None
        return runs

    @admin.action(description="Cancel selected runs", permissions=["change"])
    def cancel_selected(self, request, queryset):
        runs = self._bounded(request, queryset)
        if runs is None:
            return
        finished = [run for run in runs if run.is_terminal]
        if finished:
            self.message_user(
                request, FINISHED_SKIPPED.format(count=len(finished)), messages.WARNING
            )
        for run in runs:
            if not run.is_terminal and self._cancel(request, run):
                self.message_user(request, CANCEL_REQUESTED.format(run_id=run.pk))

    @admin.action(description="Run again with the same inputs", permissions=["launch"])
    def run_again_selected(self, request, queryset):
        runs = self._bounded(request, queryset.select_related("repository"))
        for run in runs or []:
            self._run_again(request, run)


def _approvals_section(request, run: Run) -> dict | None:
    """The run page's approvals, each with a decision form where the user may decide."""
    # Imported here: approvals.admin imports runs.admin (display), so importing it at the top
    # would make the two admin modules' loading depend on which one is imported first.
    from approvals.admin import approval_rows

    found = approval_rows(request, run)
    return {"template": APPROVALS_SECTION, "rows": found} if found else None
