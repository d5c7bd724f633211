"""The approval queue and decisions in the admin (the worker-backed ones are in
test_admin_launch.py): who may decide, CSRF, and what the service refuses."""

import pytest
from django.urls import reverse
from django.utils import timezone

from approvals import admin as approvals_admin
from approvals.services import ALREADY_DECIDED, REJECT_NEEDS_COMMENT
from tests.admin_helpers import (
    APPROVALS,
    VIEW,
    change_url,
    client_for,
    csrf_post,
    flashed,
    listed,
    staff,
)
from tests.factories import ApprovalFactory

pytestmark = pytest.mark.django_db


def test_the_approval_list_is_the_pending_queue_by_default(admin_client):
    pending = ApprovalFactory()
    decided = ApprovalFactory(decision="rejected", decided_at=timezone.now(), decided_by="bob")
    assert listed(admin_client.get(APPROVALS)) == {pending.pk}
    assert listed(admin_client.get(APPROVALS, {"decision": "rejected"})) == {decided.pk}
    assert listed(admin_client.get(APPROVALS, {"decision": "all"})) == {pending.pk, decided.pk}
    assert "Pending approvals (1)" in admin_client.get(reverse("admin:index")).content.decode()


def test_only_approvers_see_decision_buttons_and_others_get_403():
    approval = ApprovalFactory()
    decide = reverse("admin:approvals_approval_decide", args=[approval.pk])
    viewer = client_for(staff(*VIEW))
    for page in (change_url(approval), change_url(approval.run)):
        assert ">Approve<" not in viewer.get(page).content.decode()
    assert viewer.post(decide, {"decision": "approved"}).status_code == 403
    approver = client_for(staff(*VIEW, "approvals.decide_approval"))
    for page in (change_url(approval), change_url(approval.run)):
        body = approver.get(page).content.decode()
        assert ">Approve<" in body and ">Reject<" in body and decide in body
    approval.refresh_from_db()
    assert approval.decision == "pending"


def test_deciding_enforces_csrf():
    approval = ApprovalFactory()
    client = client_for(staff(*VIEW, "approvals.decide_approval"), csrf=True)
    decide = reverse("admin:approvals_approval_decide", args=[approval.pk])
    assert client.post(decide, {"decision": "approved"}).status_code == 403
    approval.refresh_from_db()
    assert approval.decision == "pending"


def test_rejecting_needs_a_comment():
    approval = ApprovalFactory()
    client = client_for(staff(*VIEW, "approvals.decide_approval"), csrf=True)
    decide = reverse("admin:approvals_approval_decide", args=[approval.pk])
    data = {"decision": "rejected", "next": "https://evil.example/"}
    response = csrf_post(client, change_url(approval), decide, data)
    assert response.status_code == 302
    assert response["Location"] == change_url(approval), "no redirect off the site"
    assert flashed(response) == [
        approvals_admin.INVALID_DECISION.format(errors=REJECT_NEEDS_COMMENT)
    ]
    approval.refresh_from_db()
    assert approval.decision == "pending"


def test_an_already_decided_approval_is_refused_with_the_service_message():
    approval = ApprovalFactory(decision="approved", decided_by="alice", decided_at=timezone.now())
    client = client_for(staff(*VIEW, "approvals.decide_approval"), csrf=True)
    decide = reverse("admin:approvals_approval_decide", args=[approval.pk])
    response = csrf_post(
        client, change_url(approval), decide, {"decision": "rejected", "comment": "too late"}
    )
    assert response.status_code == 302
    assert flashed(response) == [
        ALREADY_DECIDED.format(approval_id=approval.pk, decision="approved", by="alice")
    ]
    approval.refresh_from_db()
    assert approval.decision == "approved" and approval.decision_comment == ""


def test_a_decision_that_cannot_reach_the_workflow_stays_pending():
    """No workflow behind this approval (nothing started it): the signal fails, the approval
    goes back to pending so it can be decided again, and the operator is told, not a 500."""
    approval = ApprovalFactory()
    user = staff(*VIEW, "approvals.decide_approval")
    client = client_for(user, csrf=True)
    decide = reverse("admin:approvals_approval_decide", args=[approval.pk])
    response = csrf_post(
        client,
        change_url(approval.run),
        decide,
        {"decision": "rejected", "comment": "not now", "next": change_url(approval.run)},
    )
    assert response.status_code == 302 and response["Location"] == change_url(approval.run)
    approval.refresh_from_db()
    assert (approval.decision, approval.decided_by, approval.decided_at) == ("pending", "", None)
    assert "still pending" in flashed(response)[0]
