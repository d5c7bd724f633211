"""The repository settings form of the admin: validation an operator gets before saving."""

from __future__ import annotations

import os
import re

from django import forms

from amtp_site.errors import RepositoryAccessError
from repositories.hosts.local import LocalGitHost, path_problem
from repositories.models import Host, Repository
from repositories.refnames import ref_problem

FULL_NAME_INVALID = "use the form owner/name (letters, digits, '.', '-' and '_' only)"
LOCAL_PATH_REQUIRED = "a repository on the 'local' host needs the path of its git repository"
LOCAL_PATH_NOT_ABSOLUTE = "give an absolute path"
LOCAL_PATH_UNUSED = "only repositories on the 'local' host have a local path; leave it empty"
TEST_DIR_FORBIDDEN = "generated files may not go under .github/"
AT_LEAST_ONE = "must be at least 1"
MAX_WEBHOOK_BRANCHES = 50
TOO_MANY_BRANCHES = f"at most {MAX_WEBHOOK_BRANCHES} branches"

# GitHub's own alphabet for owners and repository names.
_FULL_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class BranchListField(forms.CharField):
    """The JSON list of ``webhook_branches`` as comma-separated text: nobody wants to type
    JSON brackets and quotes into an admin form."""

    def prepare_value(self, value):
        if isinstance(value, list):
            return ", ".join(value)
        return value

    def to_python(self, value):
        text = super().to_python(value)
        return [part for part in re.split(r"[,\s]+", text) if part]

    def validate(self, value):
        super().validate(value)
        if len(value) > MAX_WEBHOOK_BRANCHES:
            raise forms.ValidationError(TOO_MANY_BRANCHES)
        problems = [p for p in map(ref_problem, value) if p]
        if problems:
            raise forms.ValidationError(problems)


class RepositoryForm(forms.ModelForm):
    webhook_branches = BranchListField(
        required=False,
        help_text="Comma-separated branch names whose pushes start a run (empty: the default "
        "branch only).",
    )

    class Meta:
        model = Repository
        fields = "__all__"

    def clean_full_name(self):
        full_name = self.cleaned_data["full_name"].strip()
        if not _FULL_NAME.match(full_name):
            raise forms.ValidationError(FULL_NAME_INVALID)
        return full_name

    def clean_default_branch(self):
        branch = self.cleaned_data["default_branch"].strip()
        problem = ref_problem(branch)
        if problem:
            raise forms.ValidationError(problem)
        return branch

    def clean_test_dir(self):
        test_dir = self.cleaned_data["test_dir"].strip().rstrip("/")
        problem = path_problem(test_dir)
        if problem:
            raise forms.ValidationError(problem)
        if test_dir.split("/")[0].casefold() == ".github":
            raise forms.ValidationError(TEST_DIR_FORBIDDEN)
        return test_dir

    def _at_least_one(self, name: str) -> int:
        value = self.cleaned_data[name]
        if value < 1:
            raise forms.ValidationError(AT_LEAST_ONE)
        return value

    def clean_max_concurrent_runs(self):
        return self._at_least_one("max_concurrent_runs")

    def clean_rate_limit_runs(self):
        return self._at_least_one("rate_limit_runs")

    def clean_rate_limit_window_seconds(self):
        return self._at_least_one("rate_limit_window_seconds")

    def clean(self):
        cleaned = super().clean()
        host, path = cleaned.get("host"), (cleaned.get("local_path") or "").strip()
        cleaned["local_path"] = path
        if host == Host.LOCAL:
            self._check_local_repository(cleaned, path)
        elif path:
            self.add_error("local_path", LOCAL_PATH_UNUSED)
        return cleaned

    def _check_local_repository(self, cleaned: dict, path: str) -> None:
        if not path:
            self.add_error("local_path", LOCAL_PATH_REQUIRED)
            return
        if not os.path.isabs(path):
            self.add_error("local_path", LOCAL_PATH_NOT_ABSOLUTE)
            return
        branch = cleaned.get("default_branch")
        if not branch or not cleaned.get("full_name"):
            return  # their own errors are already shown
        # The host the workers will use, asked the question they will ask first: is this a
        # git repository, and does the default branch name a commit?
        try:
            LocalGitHost(cleaned["full_name"], path).resolve_ref(branch)
        except RepositoryAccessError as exc:
            self.add_error("local_path", str(exc))
