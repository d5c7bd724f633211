"""Admin for API tokens: create (the secret is shown once, on the page after saving), list,
revoke. A token never changes after creation; revocation is the only edit.

Imported by ``runs/admin/__init__.py`` so the registration happens at admin autodiscovery.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponse
from django.template import engines
from django.utils import timezone

from runs.auth import api_token_create, api_token_revoke
from runs.models_api import ApiToken, Scope

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

    class Meta:
        model = ApiToken
        fields = ("name", "user", "scopes", "expires_at")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = (
        "name",
        "key_prefix",
        "user",
        "scope_list",
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
            "key_prefix",
            "created_at",
            "last_used_at",
            "expires_at",
            "revoked_at",
        )

    def get_fields(self, request, obj=None):
        return self.get_readonly_fields(request, obj) if obj else ApiTokenForm.Meta.fields

    @admin.display(description="scopes")
    def scope_list(self, token: ApiToken) -> str:
        return ", ".join(token.scopes)

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
            user=obj.user,
            expires_at=obj.expires_at,
        )
        obj.__dict__.update({k: v for k, v in token.__dict__.items() if k != "_state"})
        obj._state.adding = False
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

    @admin.action(description="Revoke selected tokens")
    def revoke_selected(self, request, queryset):
        tokens = list(queryset.filter(revoked_at__isnull=True))
        for token in tokens:
            api_token_revoke(token=token)
        self.message_user(request, REVOKED.format(count=len(tokens)), messages.SUCCESS)
