"""Admin for API tokens: create (the secret is shown once, on the page after saving), list,
revoke. A token never changes after creation; revocation is the only edit.

Least privilege: one mints only for oneself (superusers for anyone) and only the scopes one's
permissions allow, optionally limited to repositories one may see (a service token must name
them); revoking needs ``runs.change_apitoken``. The rules and the audit entries
are ``access.auth``'s services; this form only shows their answers next to the fields.

Imported by ``runs/admin/__init__.py`` so the registration happens at admin autodiscovery.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.template import engines
from django.utils import timezone

from access.auth import api_token_check, api_token_create, api_token_revoke, scopes_allowed
from access.models import ApiToken, Scope
from amtp_site.audit import Actor
from repositories import access
from repositories.models import Repository

REVOKED = "{count} token(s) revoked; requests with them are now refused (401)."
SHOWN_ONCE = engines["django"].from_string(
    """{% extends "admin/base_site.html" %}
{% block content %}
<p>API token <strong>{{ token.name }}</strong> created with scopes
  <code>{{ token.scopes|join:", " }}</code>.</p>
<p>Copy the secret now: it is stored only as a hash and
  <strong>will not be shown again</strong>.</p>
<p><input type="text" readonly size="60" value="{{ secret }}" onclick="this.select()"></p>
<p>Send it as <code>Authorization: Bearer &lt;token&gt;</code>.</p>
<p><a href="../">Back to the API tokens</a></p>
{% endblock %}"""
)


class ApiTokenForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(choices=Scope.choices, widget=forms.CheckboxSelectMultiple)
    repositories = forms.ModelMultipleChoiceField(
        queryset=Repository.objects.none(),
        required=False,
        help_text="Limit the token to these repositories (none: wherever its owner may act; "
        "a token without a user must name them).",
    )
    request = None  # set by ApiTokenAdmin.get_form: the rules depend on who mints

    class Meta:
        model = ApiToken
        fields = ("name", "user", "scopes", "repositories", "expires_at")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.request is None:
            return
        visible = access.restrict(
            Repository.objects.order_by("full_name"), self.request.user, access.VIEW, via="pk"
        )
        self.fields["repositories"].queryset = visible

    def repository_names(self) -> list[str]:
        return [r.full_name for r in self.cleaned_data.get("repositories") or ()]

    def owner(self):
        if self.request.user.is_superuser:
            return self.cleaned_data.get("user")
        return self.request.user  # everyone else mints for themselves

    def clean(self):
        data = super().clean()
        try:
            api_token_check(
                actor=Actor.admin(self.request),
                scopes=data.get("scopes") or [],
                user=self.owner(),
                repositories=self.repository_names(),
            )
        except (PermissionDenied, ValueError) as exc:
            field, _, message = str(exc).partition(": ")
            if field not in self.fields:
                field, message = "scopes", str(exc)
            self.add_error(field, message)
        return data


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Mint (the secret shown once), list and revoke; a saved token's page is read-only."""

    form = ApiTokenForm
    list_display = (
        "name",
        "key_prefix",
        "user",
        "scope_list",
        "repository_list",
        "state",
        "created_at",
        "last_used_at",
        "expires_at",
    )
    list_filter = ("revoked_at",)
    search_fields = ("name", "key_prefix", "user__username")
    actions = ["revoke_selected"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return (
            "name",
            "user",
            "scope_list",
            "repository_list",
            "key_prefix",
            "created_at",
            "last_used_at",
            "expires_at",
            "revoked_at",
        )

    def get_fields(self, request, obj=None):
        if obj:
            return self.get_readonly_fields(request, obj)
        if request.user.is_superuser:
            return ApiTokenForm.Meta.fields
        return tuple(f for f in ApiTokenForm.Meta.fields if f != "user")

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        allowed = scopes_allowed(request.user)
        choices = [(value, label) for value, label in Scope.choices if value in allowed]
        scopes = forms.MultipleChoiceField(
            choices=choices,
            widget=forms.CheckboxSelectMultiple,
            help_text="Only the scopes your permissions allow are offered.",
        )
        return type(form.__name__, (form,), {"request": request, "scopes": scopes})

    def has_change_permission(self, request, obj=None):
        # Tokens are immutable: the page of a token is read-only; "change" gates revoking.
        return obj is None and super().has_change_permission(request)

    def log_addition(self, request, obj, message):
        pass  # api_token_create records the mint (one home for the audit entry)

    @admin.display(description="scopes")
    def scope_list(self, token: ApiToken) -> str:
        return ", ".join(token.scopes)

    @admin.display(description="repositories")
    def repository_list(self, token: ApiToken) -> str:
        if token.repository_ids is None:
            return "its owner's"
        names = Repository.objects.filter(pk__in=token.repository_ids).order_by("full_name")
        return ", ".join(names.values_list("full_name", flat=True)) or "none"

    @admin.display(description="state")
    def state(self, token: ApiToken) -> str:
        if token.revoked_at:
            return "revoked"
        if token.expires_at and token.expires_at <= timezone.now():
            return "expired"
        return "active"

    def save_model(self, request, obj, form, change):
        if change:
            return  # tokens are immutable; revoke instead
        token, secret = api_token_create(
            name=obj.name,
            scopes=form.cleaned_data["scopes"],
            user=form.owner(),
            expires_at=obj.expires_at,
            actor=Actor.admin(request),
            repositories=form.repository_names(),
        )
        obj.pk = token.pk  # the admin goes on with ``obj``: make it the token created
        obj.refresh_from_db()
        obj._new_secret = secret

    def response_add(self, request, obj, post_url_continue=None):
        context = {
            **self.admin_site.each_context(request),
            "title": "API token created",
            "token": obj,
            "secret": obj._new_secret,
        }
        response = HttpResponse(SHOWN_ONCE.render(context, request))
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke_selected(self, request, queryset):
        tokens = list(queryset.filter(revoked_at__isnull=True))
        for token in tokens:
            api_token_revoke(token=token, actor=Actor.admin(request))
        self.message_user(request, REVOKED.format(count=len(tokens)), messages.SUCCESS)
