"""Template tags of the admin: how many runs wait for a human, and a run's approvals."""

from django import template

from approvals.models import Approval, Decision

register = template.Library()


@register.simple_tag
def pending_approvals_count() -> int:
    return Approval.objects.filter(decision=Decision.PENDING).count()


@register.simple_tag(takes_context=True)
def run_approval_rows(context, run) -> list[dict]:
    """The approvals of a run for its admin page, with a decision form where one may decide.

    A template tag so the runs admin shows approvals without importing the app above it."""
    from approvals.admin import approval_rows

    return approval_rows(context["request"], run)
