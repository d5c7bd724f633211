"""Repository settings have one home (repositories.services): every surface agrees with it.

The admin form, ``launch_run --local`` and the Test Engineer's gate refuse the same
owner/names and test directories, with the same messages; hostile input to the service
changes nothing.
"""

from __future__ import annotations

import unicodedata

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from agents.file_policy import check_generated_files, normalise_test_dir
from repositories import names, paths, services
from repositories.errors import RepositoryInvalid
from repositories.forms import RepositoryForm
from repositories.models import Repository
from repositories.services import repository_create, repository_update, repository_validate
from schemas.errors import ContractViolation
from tests.gitrepo import git, make_git_repo
from tests.test_file_policy import GOOD_SPEC

pytestmark = pytest.mark.django_db

ADD = "admin:repositories_repository_add"
GITHUB_FORM = {
    "full_name": "acme/settings",
    "host": "github",
    "local_path": "",
    "default_branch": "main",
    "default_depth_level": "core",
    "default_framework": "playwright",
    "test_dir": "e2e/amtp",
    "failing_tests": "fixme",
    "webhook_branches": "",
    "max_concurrent_runs": 2,
    "rate_limit_runs": 30,
    "rate_limit_window_seconds": 3600,
}
LONGEST_NAME = "n" * (paths.MAX_SEGMENT_BYTES - len(".spec.ts")) + ".spec.ts"


# --- test_dir: admin accepts exactly what the run accepts ---------------------------------

ODD_TEST_DIRS = [
    "e2e/amtp",
    "e2e/amtp/",
    "tests",
    "e2e/café",  # NFC
    unicodedata.normalize("NFD", "e2e/café"),  # stored, and used by the run, as NFC
    "е2е/amtp",  # Cyrillic look-alikes: another (legitimate) directory name
    "．git/x",  # fullwidth full stop: not .git on any file system
    ".gıthub/x",  # dotless i: not .github either
    "../x",
    "a/../b",
    "/abs",
    "//server/share",
    ".github/x",
    ".GitHub",
    ".git/x",
    "x/.git",
    ".git./x",
    "GIT~1/x",
    "a//b",
    "a/./b",
    "./a",
    "e2e//",
    "e2e\\x",
    "C:/x",
    "c:x",
    "e2e\x00x",
    "e2e/x\u200b",  # zero-width space
    "e2e/\u202eevil",  # right-to-left override
    "e2e/x\x7f",
    "",
    ".",
    "/",
    "a" * (paths.MAX_SEGMENT_BYTES + 1),
    "a/" * 49 + "a",  # 99 bytes: the longest test directory a file name fits under
    "a/" * 50 + "a",  # 101 bytes
    "é" * 50,  # 100 bytes in one segment, one byte too long to leave room for a file
    "a/" * 150,  # over the column's 200 characters
]


def admin_accepts(test_dir: str) -> tuple[bool, str]:
    """(accepted, the value saved) by the admin's repository form."""
    form = RepositoryForm(data={**GITHUB_FORM, "test_dir": test_dir})
    return form.is_valid(), form.cleaned_data.get("test_dir", "")


def run_accepts(test_dir: str) -> bool:
    """The Test Engineer's gate, given a file with the longest allowed name under the
    directory: the test directory is one the run can put files in."""
    directory = test_dir.removesuffix("/")
    files = [{"path": f"{directory}/{LONGEST_NAME}", "contents": GOOD_SPEC}]
    try:
        check_generated_files(files, framework="playwright", test_dir=test_dir)
    except ContractViolation:
        return False
    return True


@pytest.mark.parametrize("test_dir", ODD_TEST_DIRS)
def test_a_test_dir_admin_accepts_is_one_the_run_accepts(test_dir):
    accepted, saved = admin_accepts(test_dir)
    assert accepted == run_accepts(test_dir), (test_dir, saved)
    if accepted:  # what admin saves is what the run will use, unchanged
        assert run_accepts(saved) and normalise_test_dir(saved) == saved


@pytest.mark.parametrize("test_dir", ["e2e/amtp\n", "\te2e/amtp", "e2e/amtp\r\n"])
def test_surrounding_whitespace_is_trimmed_by_the_form_to_a_dir_the_run_accepts(test_dir):
    # Every Django text field trims its input; the service (like the run) trims nothing.
    assert admin_accepts(test_dir) == (True, "e2e/amtp")
    assert not run_accepts(test_dir)
    with pytest.raises(RepositoryInvalid):
        repository_create(full_name="acme/ws", test_dir=test_dir)


def test_admin_shows_the_runs_own_rule_for_a_test_dir():
    form = RepositoryForm(data={**GITHUB_FORM, "test_dir": "a//b"})
    assert not form.is_valid()
    assert form.errors["test_dir"] == [paths.EMPTY_SEGMENT]
    with pytest.raises(ContractViolation) as caught:
        normalise_test_dir("a//b")
    assert paths.EMPTY_SEGMENT in caught.value.message


# --- owner/name: admin and launch_run refuse alike ---------------------------------------

BAD_FULL_NAMES = ["no-slash", "acme/x/y", "acme/..", "./x", "acme/x y", "acme/x;rm", "ac·me/x"]


@pytest.mark.parametrize("full_name", BAD_FULL_NAMES)
def test_a_full_name_admin_refuses_launch_run_refuses_with_the_same_message(
    full_name, admin_client, tmp_path
):
    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    form = {**GITHUB_FORM, "full_name": full_name, "host": "local", "local_path": path}
    response = admin_client.post(reverse(ADD), form)
    admin_errors = response.context["adminform"].form.errors["full_name"]
    assert admin_errors == [names.full_name_problem(full_name)]
    with pytest.raises(CommandError) as caught:
        call_command("launch_run", full_name, "--local", path)
    assert str(caught.value) == RepositoryInvalid({"full_name": admin_errors}).message
    assert str(caught.value).startswith("invalid repository settings: full_name: ")
    assert not Repository.objects.exists()


def test_launch_run_local_shows_the_service_errors_naming_the_field(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "--quiet", "--initial-branch=main")  # no commit: main names nothing
    with pytest.raises(
        CommandError, match="^invalid repository settings: local_path: .*does not name a commit"
    ):
        call_command("launch_run", "acme/empty", "--local", str(empty))
    assert not Repository.objects.exists()


# --- the service: hostile input is refused, naming the field, and changes nothing ----------

HOSTILE = [
    ("full_name", "../../etc"),
    ("full_name", "acme/.."),
    ("full_name", "acme/x\n"),
    ("full_name", "acme/x\x00"),
    ("full_name", "аcme/x"),  # Cyrillic a
    ("full_name", "a" * 100 + "/" + "b" * 100),
    ("full_name", None),
    ("full_name", ["acme/x"]),
    ("host", "gitlab"),
    ("local_path", "relative/path"),
    ("local_path", "/tmp/x\x00y"),
    ("local_path", None),
    ("default_branch", "-x"),
    ("default_branch", "a..b"),
    ("default_branch", "main\x00"),
    ("default_branch", ""),
    ("default_depth_level", "everything"),
    ("default_framework", "cypress"),
    ("test_dir", "../x"),
    ("test_dir", ".github/workflows"),
    ("test_dir", "e2e\x00"),
    ("webhook_branches", "main"),
    ("webhook_branches", [1]),
    ("webhook_branches", ["main", "bad..name"]),
    ("webhook_branches", [f"b{i}" for i in range(services.MAX_WEBHOOK_BRANCHES + 1)]),
    ("webhook_enabled", "maybe"),
    ("pr_checks_drafts", "maybe"),
    ("pr_checks_drafts", None),
    ("max_concurrent_runs", 0),
    ("max_concurrent_runs", -1),
    ("rate_limit_runs", "many"),
    ("rate_limit_window_seconds", 2**40),
]


@pytest.mark.parametrize(("field", "value"), HOSTILE)
def test_hostile_settings_are_refused_naming_the_field(field, value):
    with pytest.raises(RepositoryInvalid) as caught:
        repository_create(**{"full_name": "acme/target", field: value})
    assert field in caught.value.errors and all(caught.value.errors[field])
    assert f"{field}: " in caught.value.message
    assert caught.value.retryable is False
    assert not Repository.objects.exists()


@pytest.mark.parametrize(("field", "value"), HOSTILE)
def test_a_hostile_update_changes_nothing(field, value):
    repository = repository_create(full_name="acme/target")
    before = {name: getattr(repository, name) for name in services.FIELDS}
    with pytest.raises(RepositoryInvalid):
        repository_update(repository=repository, **{field: value})
    assert {name: getattr(repository, name) for name in services.FIELDS} == before
    repository.refresh_from_db()
    assert {name: getattr(repository, name) for name in services.FIELDS} == before


def test_every_problem_is_reported_at_once():
    with pytest.raises(RepositoryInvalid) as caught:
        repository_create(full_name="nope", test_dir="/abs", max_concurrent_runs=0)
    assert caught.value.errors == {
        "full_name": [names.FULL_NAME_INVALID],
        "test_dir": [paths.ABSOLUTE_PATH],
        "max_concurrent_runs": [services.AT_LEAST_ONE],
    }


def test_a_full_name_is_registered_once():
    repository_create(full_name="acme/once")
    with pytest.raises(RepositoryInvalid) as caught:
        repository_create(full_name="acme/once")
    assert list(caught.value.errors) == ["full_name"]
    assert Repository.objects.count() == 1


def test_unknown_settings_are_a_programming_error():
    with pytest.raises(TypeError, match="not repository settings: id"):
        repository_validate(full_name="acme/x", id=7)


def test_a_local_repository_is_checked_with_the_host_the_workers_use(tmp_path):
    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    with pytest.raises(RepositoryInvalid) as caught:
        repository_create(full_name="acme/l", host="local", local_path=path, default_branch="x")
    assert "does not name a commit" in caught.value.errors["local_path"][0]
    with pytest.raises(RepositoryInvalid) as caught:
        repository_create(full_name="acme/l", host="local")
    assert caught.value.errors == {"local_path": [services.LOCAL_PATH_REQUIRED]}
    repository = repository_create(full_name="acme/l", host="local", local_path=path)
    assert repository.default_branch == "main"


def test_saved_values_are_normalised_as_the_run_uses_them():
    nfd = unicodedata.normalize("NFD", "e2e/café/")
    repository = repository_create(full_name="acme/n", test_dir=nfd)
    assert repository.test_dir == "e2e/café" == normalise_test_dir(nfd)
    repository_update(repository=repository, test_dir="tests/")
    repository.refresh_from_db()
    assert repository.test_dir == "tests"


def test_the_demo_registers_its_repositories_through_the_service(tmp_path):
    from runs.demo import ensure_demo_repositories

    first = ensure_demo_repositories(tmp_path)
    again = ensure_demo_repositories(tmp_path)  # an update, by the same rules
    assert {k: r.pk for k, r in first.items()} == {k: r.pk for k, r in again.items()}
    assert again["web"].host == "local" and again["mobile"].default_framework == "maestro"


@pytest.mark.parametrize("full_name", [n for n in BAD_FULL_NAMES if 3 <= len(n) <= 200])
def test_the_api_refuses_a_full_name_with_the_rule_admin_uses(full_name):
    from access.auth import api_token_create
    from tests.api_support import bearer, token_owner

    token = api_token_create(name="test", scopes=["runs:write"], actor=None, user=token_owner())[1]
    response = bearer(token).post(
        "/api/runs", {"repo_full_name": full_name}, content_type="application/json"
    )
    assert response.status_code == 422
    problem = response.json()
    [error] = [e for e in problem["errors"] if e["field"].endswith("repo_full_name")]
    assert names.full_name_problem(full_name) in error["detail"]
