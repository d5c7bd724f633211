"""Template tags of the admin: how many runs wait for a human (the admin index)."""

from django import template

from approvals.models import Approval, Decision

register = template.Library()


@register.simple_tag
def pending_approvals_count() -> int:
    return Approval.objects.filter(decision=Decision.PENDING).count()
