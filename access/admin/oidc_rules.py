"""Admin for OIDC trust rules (access.oidc): which CI tokens act as whom. Superusers only, as
for service tokens: a rule lets a CI act with its scopes on repositories, without a person.

A rule names its repositories (the token reaches only the one its ``repository`` claim
names) and optional patterns for the ``ref``, ``workflow_ref`` and ``environment`` claims.
Adding and changing a rule are in the audit trail, and so are the tokens it refused.

Imported by ``runs/admin/__init__.py`` so the registration happens at admin autodiscovery.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin

from access.models import OidcTrustRule, Scope
from amtp_site import audit
from repositories.models import Repository

PATTERN_RULE = "a pattern is printable text without control characters"


class OidcTrustRuleForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(choices=Scope.choices, widget=forms.CheckboxSelectMultiple)
    repositories = forms.ModelMultipleChoiceField(
        queryset=Repository.objects.order_by("full_name"),
        help_text="The repositories whose CI the rule trusts; each token reaches only its own.",
    )

    class Meta:
        model = OidcTrustRule
        fields = ("name", "repositories", "ref", "workflow_ref", "environment", "scopes", "enabled")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["repositories"] = list(self.instance.repository_ids)

    def clean(self):
        data = super().clean()
        for field in ("ref", "workflow_ref", "environment"):
            if any(not ch.isprintable() for ch in data.get(field) or ""):
                self.add_error(field, PATTERN_RULE)
        return data

    def save(self, commit=True):
        rule = super().save(commit=False)
        rule.repository_ids = sorted(r.pk for r in self.cleaned_data["repositories"])
        rule.scopes = sorted(self.cleaned_data["scopes"])
        if commit:
            rule.save()
        return rule


@admin.register(OidcTrustRule)
class OidcTrustRuleAdmin(admin.ModelAdmin):
    form = OidcTrustRuleForm
    list_display = ("name", "repository_list", "ref", "workflow_ref", "environment", "enabled")
    list_filter = ("enabled",)
    search_fields = ("name",)

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return self.has_module_permission(request)

    has_add_permission = has_change_permission = has_delete_permission = has_view_permission

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    def log_addition(self, request, obj, message):
        what = f"Added, scopes {', '.join(obj.scopes)}, on {self.repository_list(obj)}"
        audit.record(audit.Actor.admin(request), obj, what, flag=audit.ADDITION)

    def log_change(self, request, obj, message):
        what = f"Changed: scopes {', '.join(obj.scopes)}, on {self.repository_list(obj)}, "
        what += f"ref {obj.ref or '*'}, workflow_ref {obj.workflow_ref or '*'}, "
        what += f"environment {obj.environment or 'any'}, enabled {obj.enabled}"
        audit.record(audit.Actor.admin(request), obj, what)

    @admin.display(description="repositories")
    def repository_list(self, rule: OidcTrustRule) -> str:
        names = Repository.objects.filter(pk__in=rule.repository_ids).order_by("full_name")
        return ", ".join(names.values_list("full_name", flat=True)) or "none"
