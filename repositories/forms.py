"""The repository settings form of the admin: the service's rules, shown on their fields."""

from __future__ import annotations

import re

from django import forms

from repositories.boot_settings import BOOT_ENV
from repositories.errors import RepositoryInvalid
from repositories.login import CREDENTIALS
from repositories.models import Repository
from repositories.services import FIELDS, repository_validate


class TextListField(forms.CharField):
    """A JSON list (``webhook_branches``, ``allowed_hosts``) as comma-separated text: nobody
    wants to type JSON brackets and quotes into an admin form. Blank is the empty list."""

    def __init__(self, **kwargs):
        super().__init__(required=False, **kwargs)

    def prepare_value(self, value):
        if isinstance(value, list):
            return ", ".join(value)
        return value

    def to_python(self, value):
        text = super().to_python(value)
        return [part for part in re.split(r"[,\s]+", text) if part]


class LabelListField(TextListField):
    """Label names as comma-separated text: split on commas only, as a label may hold spaces."""

    def to_python(self, value):
        text = forms.CharField.to_python(self, value)
        return [part.strip() for part in text.split(",") if part.strip()]


class ArgvField(forms.JSONField):
    """A command as its JSON list of arguments (the way it runs: no shell splits it); blank is
    no command. What is not a list of strings is the service's to name."""

    def __init__(self, **kwargs):
        super().__init__(required=False, **kwargs)
        self.widget.attrs.update(rows=2, placeholder='["node", "-e", "…"]')

    def to_python(self, value):
        return [] if value in self.empty_values else super().to_python(value)


class SecretField(forms.CharField):
    """Write-only: the value is never rendered back; blank keeps the one stored."""

    widget = forms.PasswordInput(render_value=False)

    def __init__(self, **kwargs):
        super().__init__(required=False, strip=False, **kwargs)

    def has_changed(self, initial, data):
        return bool(data)  # blank keeps it: not a change, whatever is stored


class ClearField(forms.BooleanField):
    """The tick box that removes a stored secret: a blank secret field keeps it."""

    def __init__(self, what: str, **kwargs):
        super().__init__(required=False, label=f"Remove the {what}", **kwargs)


FIELD_NAMES = {field.name for field in Repository._meta.fields}
SECRET_SET = "A secret is set (never shown). Type a new one to replace it; leave blank to keep it."
SECRET_NOT_SET = (
    "Not set: pushes are checked against the global GITHUB_WEBHOOK_SECRET, which every "
    "repository shares. Set one here, and the same value in the GitHub webhook."
)

CREDENTIAL_SET = "Stored encrypted (never shown). Type a new one to replace it; blank keeps it."
CREDENTIAL_NOT_SET = (
    "Not stored. Type it to store it encrypted, or name a worker environment variable below."
)


class RepositoryForm(forms.ModelForm):
    webhook_branches = TextListField(
        help_text="Comma-separated branch names whose pushes start a run (empty: the default "
        "branch only).",
    )
    allowed_hosts = TextListField(label="Allowed hosts")

    pull_request_labels = LabelListField(label="Pull request labels")
    test_data_setup_command = ArgvField(label="Test data set-up command")
    test_data_teardown_command = ArgvField(label="Test data tear-down command")
    test_data_timeout_s = forms.IntegerField(
        required=False,  # blank: the default
        label="Test data timeout (s)",
    )
    notify_emails = TextListField(label="Notification emails")
    notify_email_events = TextListField(label="Emailed events")
    notify_webhook_events = TextListField(label="Webhook events")
    webhook_secret = SecretField(label="Webhook secret")
    clear_webhook_secret = ClearField(
        "webhook secret",
        help_text="Pushes are then checked against the global GITHUB_WEBHOOK_SECRET.",
    )

    boot_services = TextListField(label="Services")
    boot_env_worker = TextListField(label="Environment from the worker")
    boot_env = SecretField(
        label="App environment (stored encrypted)",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "NAME=value, one a line"}),
    )
    clear_boot_env = ClearField("stored app environment")
    login_username = SecretField(label="Login user name")
    login_password = SecretField(label="Login password")
    clear_login_credentials = ClearField(
        "stored login credentials", help_text="Both the user name and the password."
    )

    class Meta:
        model = Repository
        fields = "__all__"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in self.declared_fields:  # a field declared here says what its column says
            if not self.fields[name].help_text and name in FIELD_NAMES:
                self.fields[name].help_text = Repository._meta.get_field(name).help_text
        self.initial.pop("webhook_secret", None)  # nothing on the page carries the value
        is_set = bool(self.instance.pk and self.instance.webhook_secret)
        self.fields["webhook_secret"].help_text = SECRET_SET if is_set else SECRET_NOT_SET
        for name in CREDENTIALS:
            stored = bool(self.instance.pk and getattr(self.instance, f"{name}_token"))
            self.fields[name].help_text = CREDENTIAL_SET if stored else CREDENTIAL_NOT_SET
        names = self.instance.boot_env_names if self.instance.pk else []
        self.fields[BOOT_ENV].help_text = (
            f"Stored encrypted: {', '.join(names)} (values never shown). Typing replaces them all; "
            "blank keeps them."
            if names
            else "NAME=value lines the app gets (e.g. SECRET_KEY=...), stored encrypted."
        )

    def clean(self):
        """The service checks what it will check again when saving (RepositoryAdmin); its
        problems are shown on their fields, next to the form's own (a missing value, say)."""
        cleaned = super().clean()
        if cleaned.pop("clear_webhook_secret", False):
            cleaned["webhook_secret"] = ""
        elif not cleaned.get("webhook_secret"):  # blank: the stored secret stays
            cleaned["webhook_secret"] = self.instance.webhook_secret if self.instance.pk else ""
        if cleaned.get("test_data_timeout_s", 0) is None:
            cleaned["test_data_timeout_s"] = Repository._meta.get_field(
                "test_data_timeout_s"
            ).default
        clear = cleaned.pop("clear_login_credentials", False)
        for name in CREDENTIALS:  # None keeps the stored value, "" removes it
            cleaned[name] = "" if clear else cleaned.get(name) or None
        cleaned[BOOT_ENV] = (
            "" if cleaned.pop("clear_boot_env", False) else cleaned.get(BOOT_ENV) or None
        )
        fields = {name: value for name, value in cleaned.items() if name in FIELDS}
        typed = {name: cleaned[name] for name in (*CREDENTIALS, BOOT_ENV)}
        try:
            values = repository_validate(repository=self.instance, **fields, **typed)
            cleaned.update({name: values[name] for name in fields})  # normalised
        except RepositoryInvalid as exc:
            for field, messages in exc.errors.items():
                if field not in self.errors:  # a value the form refused: its error is shown
                    self.add_error(field if field in self.fields else None, messages)
        return cleaned
