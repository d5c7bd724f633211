"""Approvals admin: the queue of held runs, and Approve / Reject for the people allowed to.

Deciding needs ``approvals.decide_approval`` (which also lets one see the queue); everyone
else sees the approvals without buttons and gets 403 if they post anyway. The decision goes
through ``approval_decide``, the same service as the API: it records who, when and why, then
signals the waiting workflow. Approval rows are otherwise read-only.

Per repository (``repositories.access``): the queue holds only the approvals of repositories
the user may see, and the buttons ask for the decide right on the run's repository.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.decorators import method_decorator
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import Truncator
from django.views.decorators.http import require_POST

from amtp_site import rows
from amtp_site.audit import Actor
from amtp_site.lists import EstimatedCountPaginator, PrefixSearchMixin
from approvals.errors import ApprovalAlreadyDecided, ApprovalDecisionInvalid, SelfApprovalRefused
from approvals.models import Approval, Decision
from approvals.selectors import run_approvals
from approvals.services import MAX_COMMENT_CHARS, approval_decide
from repositories import access
from runs.admin import display as show
from runs.errors import OrchestratorUnavailable

DECIDE_PERMISSION = "approvals.decide_approval"
SEE_PERMISSIONS = ("approvals.view_approval", "approvals.change_approval", DECIDE_PERMISSION)
DECIDED = "Approval {approval_id} {decision} by {user}."
INVALID_DECISION = "The decision was not recorded: {errors}"


class DecisionForm(forms.Form):
    """The buttons and the comment box; the rules (a reject needs a comment, the comment's
    limit) are approval_decide's, so the admin and the API refuse the same decisions."""

    decision = forms.ChoiceField(
        choices=[(Decision.APPROVED, "Approve"), (Decision.REJECTED, "Reject")]
    )
    comment = forms.CharField(
        required=False,
        widget=forms.Textarea(
            attrs={
                "rows": 2,
                "cols": 60,
                "placeholder": "Comment",
                "maxlength": MAX_COMMENT_CHARS,  # a hint to the browser; the service decides
            }
        ),
    )


def can_decide(request, obj=None) -> bool:
    """May decide: on ``obj``'s repository (an approval or a run), or somewhere without one."""
    return request.user.has_perm(DECIDE_PERMISSION, obj)


def decision_form(approval: Approval) -> DecisionForm:
    # One form per pending approval; distinct ids keep labels right when a page has several.
    return DecisionForm(auto_id=f"id_%s_{approval.pk}")


def approval_rows(request, run) -> list[dict]:
    """The approvals of a run for its page, each with a decision form where one may decide."""
    allowed = can_decide(request, run)
    return [
        {
            "approval": approval,
            "badge": show.badge(approval.decision),
            "form": decision_form(approval)
            if allowed and approval.decision == Decision.PENDING
            else None,
        }
        for approval in run_approvals(run)
    ]


class DecisionFilter(admin.SimpleListFilter):
    """Pending by default: the list is first of all the queue of runs waiting for someone."""

    title = "decision"
    parameter_name = "decision"
    ALL = "all"

    def lookups(self, request, model_admin):
        return [*Decision.choices, (self.ALL, "All")]

    def choices(self, changelist):
        current = self.value() or Decision.PENDING
        for value, label in self.lookup_choices:
            yield {
                "selected": current == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request, queryset):
        value = self.value() or Decision.PENDING
        return queryset if value == self.ALL else queryset.filter(decision=value)


@admin.register(Approval)
class ApprovalAdmin(show.RunColumns, PrefixSearchMixin, admin.ModelAdmin):
    change_form_template = "admin/approvals/approval/change_form.html"
    list_display = (
        "short_id",
        "decision_badge",
        "run_link",
        "repository",
        "approver",
        "held_because",
        "created_at",
        "decided_by",
        "decided_at",
    )
    list_filter = (DecisionFilter, "approver")
    search_fields = ("run__repo_full_name", "decided_by")
    uuid_search_fields = ("approval_id", "run_id")
    search_help_text = "Start of an approval id, run id, repository (owner/name) or decider."
    list_select_related = ("run",)
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    list_per_page = 50  # as the run list: each row costs a few ms to render
    fields = (
        "decision_badge",
        "run_link",
        "stage",
        "approver",
        "comment",
        "created_at",
        "decided_by",
        "decided_at",
        "decision_comment",
    )

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in rows.fields(Approval)] + ["decision_badge", "run_link"]

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or can_decide(request)

    def get_queryset(self, request):
        approvals = super().get_queryset(request)
        return access.restrict(approvals, request.user, SEE_PERMISSIONS, via="run__repository")

    def has_add_permission(self, request):
        return False  # the workflow holds runs; people only decide

    def has_change_permission(self, request, obj=None):
        return False  # decided through the buttons (approval_decide), never edited

    def has_delete_permission(self, request, obj=None):
        return False

    short_id = show.short_id_column("approval_id", "approval")
    decision_badge = show.badge_column("decision")

    @admin.display(description="held because")
    def held_because(self, approval):
        return Truncator(approval.comment).chars(80)

    def get_urls(self):
        decide = self.admin_site.admin_view(self.decide_view)
        return [
            path("<path:object_id>/decide/", decide, name="approvals_approval_decide"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        approval = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        pending = approval is not None and approval.decision == Decision.PENDING
        if pending and can_decide(request, approval):
            extra["decide_form"] = decision_form(approval)
        return super().change_view(request, object_id, form_url, extra)

    @method_decorator(require_POST)
    def decide_view(self, request, object_id):
        if not can_decide(request):
            raise PermissionDenied
        approval = self.get_object(request, unquote(object_id))
        if approval is None:
            raise Http404("no such approval")
        if not can_decide(request, approval):
            rule = access.refusal(
                "deciding approvals", approval.run.repo_full_name, [DECIDE_PERMISSION]
            )
            raise PermissionDenied(rule)
        form = DecisionForm(request.POST)
        if not form.is_valid():
            errors = "; ".join(e for errs in form.errors.values() for e in errs)
            self.message_user(request, INVALID_DECISION.format(errors=errors), messages.ERROR)
        else:
            self._decide(request, approval, **form.cleaned_data)
        return HttpResponseRedirect(self._next_url(request, approval))

    def _decide(self, request, approval: Approval, decision: str, comment: str) -> None:
        user = request.user.get_username()
        try:
            approval_decide(
                approval=approval,
                decision=decision,
                decided_by=user,
                comment=comment.strip(),
                actor=Actor.admin(request),
                decider=f"user:{request.user.pk}",
            )
        except ApprovalDecisionInvalid as exc:
            message = INVALID_DECISION.format(errors=exc.message)
            self.message_user(request, message, messages.ERROR)
        except (ApprovalAlreadyDecided, SelfApprovalRefused) as exc:
            self.message_user(request, str(exc), messages.ERROR)
        except OrchestratorUnavailable as exc:  # the service put the approval back to pending
            self.message_user(request, exc.message, messages.ERROR)
        else:
            self.message_user(
                request, DECIDED.format(approval_id=approval.pk, decision=decision, user=user)
            )

    def _next_url(self, request, approval: Approval) -> str:
        """Back where the decision was made (the run page or the approval page)."""
        target = request.POST.get("next", "")
        if url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            return target
        return reverse("admin:approvals_approval_change", args=[approval.pk])
