"""Shared pieces of the admin tests: staff users with chosen permissions, CSRF-honest posts."""

import uuid

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

VIEW = (
    "runs.view_run",
    "runs.view_artifact",
    "repositories.view_repository",
    "approvals.view_approval",
)
XSS = '<script>alert("pwned")</script>'


def staff(*perms: str):
    """A new staff user holding exactly ``perms`` ("app.codename")."""
    user = get_user_model().objects.create_user(
        username=f"staff-{uuid.uuid4().hex[:8]}", password="pw", is_staff=True
    )
    for perm in perms:
        app, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app, codename=codename)
        )
    return get_user_model().objects.get(pk=user.pk)  # a fresh permission cache


def client_for(user, csrf=False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def csrf_post(client: Client, page: str, url: str, data: dict):
    """POST as a browser does: load the page that holds the form, send its CSRF token back."""
    assert client.get(page).status_code == 200
    return client.post(url, {**data, "csrfmiddlewaretoken": client.cookies["csrftoken"].value})


def flashed(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def listed(response) -> set:
    return {obj.pk for obj in response.context["cl"].result_list}


def change_url(obj) -> str:
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])


RUNS = reverse("admin:runs_run_changelist")
APPROVALS = reverse("admin:approvals_approval_changelist")
ARTIFACTS = reverse("admin:runs_artifact_changelist")
