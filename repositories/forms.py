"""The repository settings form of the admin: the service's rules, shown on their fields."""

from __future__ import annotations

import re

from django import forms

from repositories.errors import RepositoryInvalid
from repositories.models import Repository
from repositories.services import FIELDS, repository_validate


class TextListField(forms.CharField):
    """A JSON list (``webhook_branches``, ``allowed_hosts``) as comma-separated text: nobody
    wants to type JSON brackets and quotes into an admin form."""

    def prepare_value(self, value):
        if isinstance(value, list):
            return ", ".join(value)
        return value

    def to_python(self, value):
        text = super().to_python(value)
        return [part for part in re.split(r"[,\s]+", text) if part]


class RepositoryForm(forms.ModelForm):
    webhook_branches = TextListField(
        required=False,
        help_text="Comma-separated branch names whose pushes start a run (empty: the default "
        "branch only).",
    )
    allowed_hosts = TextListField(
        required=False,
        label="Allowed hosts",
        help_text=Repository._meta.get_field("allowed_hosts").help_text,
    )

    class Meta:
        model = Repository
        fields = "__all__"

    def clean(self):
        """The service checks what it will check again when saving (RepositoryAdmin); its
        problems are shown on their fields, next to the form's own (a missing value, say)."""
        cleaned = super().clean()
        fields = {name: value for name, value in cleaned.items() if name in FIELDS}
        try:
            values = repository_validate(repository=self.instance, **fields)
            cleaned.update({name: values[name] for name in fields})  # normalised
        except RepositoryInvalid as exc:
            for field, messages in exc.errors.items():
                if field not in self.errors:  # a value the form refused: its error is shown
                    self.add_error(field if field in self.fields else None, messages)
        return cleaned
