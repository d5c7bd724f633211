"""Target URLs at submit: every surface refuses what the verifier's proxy would refuse (a
loopback, link-local, private or other non-public address the repository does not allow-list),
naming the field and the rule, and changes nothing; once the repository's allowed hosts name
the host, the same URL is accepted. The rule itself is ``repositories.targets``'."""

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from repositories.errors import RepositoryInvalid
from repositories.hosts.local import LocalGitHost
from repositories.models import Repository
from repositories.services import (
    ALLOW_HOSTS_NOT_A_LIST,
    TOO_MANY_ALLOW_HOSTS,
    repository_update,
)
from repositories.targets import (
    ALLOW_HOST_INVALID,
    MAX_ALLOW_HOSTS,
    TARGET_URL_CREDENTIALS,
    TARGET_URL_INVALID,
    TARGET_URL_PRIVATE,
)
from runs.demo import _git, ensure_demo_repositories
from runs.errors import RunInputInvalid
from runs.models import Run
from runs.services import PREVIEW_URL_REFUSED, run_again, run_create
from tests import api_support, webhook_support
from tests.admin_helpers import client_for
from tests.api_support import assert_problem, post
from tests.factories import RepositoryFactory
from tests.test_admin import _repository_form
from tests.test_admin_launch import LAUNCH, form_data, launcher  # noqa: F401  (fixture)
from tests.webhook_support import SECRET, deliver, push
from triggers.models import WebhookDelivery
from triggers.services import TARGET_REFUSED
from verification.boot.recipe import recipe_at

pytestmark = pytest.mark.django_db
hub = webhook_support.hub  # shared fixture: the fake GitHub the webhook asks for heads

api_env, make_token, client = api_support.api_env, api_support.make_token, api_support.client

# (target URL, host as the rule names it, kind of address, the allow-list entry that admits it)
HOSTILE = [
    (
        "http://169.254.169.254/latest/meta-data/",
        "169.254.169.254",
        "link-local",
        "169.254.169.254",
    ),
    ("http://127.0.0.1:5432", "127.0.0.1", "loopback", "127.0.0.1:5432"),
    ("http://[::1]/", "::1", "loopback", "[::1]:80"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1", "loopback", "::ffff:127.0.0.1"),
    ("http://0.0.0.0/", "0.0.0.0", "unspecified", "0.0.0.0"),
    ("http://10.0.0.1/", "10.0.0.1", "private", "10.0.0.1:80"),
    ("http://[fd00::1]:8080/", "fd00::1", "private", "[fd00::1]:8080"),
    ("http://localhost/", "localhost", "loopback", "localhost"),
    ("http://LOCALHOST./app", "localhost", "loopback", "localhost"),
    # names the resolver reads as 127.0.0.1
    ("http://127.1:8000/", "127.1", "loopback", "127.1:8000"),
    ("http://2130706433/", "2130706433", "loopback", "2130706433"),
]
# Refused whatever the allow-list says: the URL itself breaks the rule.
MALFORMED = [
    ("http://user:pw@127.0.0.1/", TARGET_URL_CREDENTIALS),
    ("ftp://127.0.0.1/", TARGET_URL_INVALID),
]


def rule(host: str, kind: str) -> str:
    return TARGET_URL_PRIVATE.format(host=host, kind=kind)


@pytest.fixture
def shop():
    return RepositoryFactory(full_name="acme/shop")


def allow(repository: Repository, entry: str) -> None:
    repository.allowed_hosts = [entry]
    repository.save()


# --- the API -------------------------------------------------------------------------------


def test_the_api_refuses_each_private_target_with_a_422_naming_field_and_rule(
    client, shop, api_env
):
    for url, host, kind, _entry in HOSTILE:
        response = post(client, "/api/runs", {"repo_full_name": "acme/shop", "target_url": url})
        problem = assert_problem(response, 422, "validation-error")
        assert [(e["field"], e["detail"]) for e in problem["errors"]] == [
            ("target_url", f"target_url: {rule(host, kind)}")
        ], url
    for url, message in MALFORMED:
        allow(shop, "127.0.0.1")
        response = post(client, "/api/runs", {"repo_full_name": "acme/shop", "target_url": url})
        problem = assert_problem(response, 422)
        assert problem["errors"][0]["field"] == "target_url" and message in str(problem)
        assert not problem["errors"][0]["detail"].startswith("Value error"), url
    assert not Run.objects.exists()


def test_the_api_accepts_each_once_the_repository_allow_lists_it(client, shop, api_env):
    for url, _host, _kind, entry in HOSTILE:
        allow(shop, entry)
        response = post(client, "/api/runs", {"repo_full_name": "acme/shop", "target_url": url})
        assert response.status_code == 201, (url, response.json())
    assert Run.objects.count() == len(HOSTILE)


def test_an_allow_list_entry_with_a_port_admits_that_port_only(client, shop, api_env):
    allow(shop, "127.0.0.1:8000")
    other = {"repo_full_name": "acme/shop", "target_url": "http://127.0.0.1:5432/"}
    assert_problem(post(client, "/api/runs", other), 422)
    same = {**other, "target_url": "http://127.0.0.1:8000/"}
    assert post(client, "/api/runs", same).status_code == 201


def test_a_repository_preview_url_is_judged_again_when_a_run_uses_it(client, api_env):
    """DNS and the list may change after the preview URL was saved: the run is refused then."""
    RepositoryFactory(full_name="acme/shop", preview_url="http://localhost:3000")
    response = post(client, "/api/runs", {"repo_full_name": "acme/shop"})
    problem = assert_problem(response, 422, "validation-error")
    refusal = PREVIEW_URL_REFUSED.format(problem=rule("localhost", "loopback"))
    assert problem["errors"][0] == {**problem["errors"][0], "field": "target_url"}
    assert problem["detail"] == f"target_url: {refusal}"
    assert not Run.objects.exists()


# --- the launch form and launch_run --------------------------------------------------------


def test_the_launch_form_shows_the_rule_on_the_target_url_field(launcher, shop, api_env):  # noqa: F811
    browser = client_for(launcher)
    for launched, (url, host, kind, entry) in enumerate(HOSTILE):
        data = form_data(browser, repository=shop.pk, target_url=url)
        response = browser.post(LAUNCH, data)
        assert response.context["form"].errors["target_url"] == [rule(host, kind)], url
        assert Run.objects.count() == launched
        allow(shop, entry)
        assert browser.post(LAUNCH, data).status_code == 302, url
        shop.allowed_hosts = []
        shop.save()
    assert Run.objects.count() == len(HOSTILE)


def test_launch_run_refuses_a_private_target_and_allow_host_admits_it(shop, api_env):
    for url, host, kind, entry in HOSTILE:
        with pytest.raises(CommandError) as refused:
            call_command("launch_run", "acme/shop", "--target-url", url)
        assert str(refused.value) == f"--target-url: {rule(host, kind)}"
        out = StringIO()
        before = list(shop.allowed_hosts)
        call_command(
            "launch_run", "acme/shop", "--target-url", url, "--allow-host", entry, stdout=out
        )
        assert "allowed hosts of this run only" in out.getvalue(), url
        shop.refresh_from_db()
        assert shop.allowed_hosts == before  # the repository's list is not touched
        assert Run.objects.get(target_url=url).allowed_hosts, url
        allow(shop, "example.com")
    for url, message in MALFORMED:
        with pytest.raises(CommandError, match=re.escape(message)):
            call_command(
                "launch_run", "acme/shop", "--target-url", url, "--allow-host", "127.0.0.1"
            )
    assert Run.objects.count() == len(HOSTILE)


def test_launch_run_refuses_a_bad_allow_host_and_changes_nothing(shop, api_env):
    url = "http://127.0.0.1:8000/"
    with pytest.raises(CommandError) as refused:
        call_command("launch_run", "acme/shop", "--target-url", url, "--allow-host", "http://x/")
    assert str(refused.value) == "--allow-host: " + ALLOW_HOST_INVALID.format(entry="http://x/")
    # a valid entry that does not admit the target: neither the list nor a run is saved
    with pytest.raises(CommandError, match="--target-url: 127.0.0.1 is a loopback address"):
        call_command("launch_run", "acme/shop", "--target-url", url, "--allow-host", "10.0.0.1")
    shop.refresh_from_db()
    assert shop.allowed_hosts == [] and not Run.objects.exists()
    out = StringIO()
    call_command(
        "launch_run", "acme/shop", "--target-url", url, "--allow-host", "127.0.0.1:8000", stdout=out
    )
    assert "allowed hosts of this run only: 127.0.0.1:8000" in out.getvalue()
    shop.refresh_from_db()
    assert shop.allowed_hosts == []
    call_command(
        "launch_run",
        "acme/shop",
        "--target-url",
        url,
        "--allow-host",
        "127.0.0.1:8000",
        "--remember",
        stdout=out,
    )
    call_command("launch_run", "acme/shop", "--allow-host", "127.0.0.1:8000", stdout=out)
    assert "added 127.0.0.1:8000 (now 127.0.0.1:8000)" in out.getvalue()
    assert "already listed (now 127.0.0.1:8000)" in out.getvalue()
    assert [run.allowed_hosts for run in Run.objects.order_by("created_at")] == [
        ["127.0.0.1:8000"],
        [],
        [],
    ]


def test_a_runs_own_allowed_hosts_go_with_it_when_run_again(shop, api_env, admin_client):
    """--allow-host with --target-url is the run's: running it again reaches the same app,
    the repository never learns the host, and the run page says which app it verifies."""
    url = "http://127.0.0.1:8000/"
    call_command("launch_run", "acme/shop", "--target-url", url, "--allow-host", "127.0.0.1:8000")
    first = Run.objects.get()
    again = run_again(run=first, requested_by="ops")
    assert (again.target_url, again.allowed_hosts) == (url, ["127.0.0.1:8000"])
    shop.refresh_from_db()
    assert shop.allowed_hosts == []
    page = admin_client.get(f"/admin/runs/run/{again.pk}/change/").content.decode()
    assert f"<code>{url}</code> (this run&#x27;s target URL)" in page
    assert "this run may also reach <code>127.0.0.1:8000</code>" in page
    with pytest.raises(RunInputInvalid) as refused:
        run_create(repository=shop, target_url=url, allowed_hosts=["http://x/"])
    assert refused.value.field == "allowed_hosts"
    assert Run.objects.count() == 2


# --- repository settings: admin and the service --------------------------------------------


def test_the_admin_refuses_a_private_preview_url_unless_allowed_hosts_name_it(admin_client):
    add = reverse("admin:repositories_repository_add")
    for url, host, kind, entry in HOSTILE:
        data = _repository_form(host="github", preview_url=url, allowed_hosts="")
        errors = admin_client.post(add, data).context["adminform"].form.errors
        assert errors == {"preview_url": [rule(host, kind)]}, url
        assert admin_client.post(add, {**data, "allowed_hosts": entry}).status_code == 302, url
        assert Repository.objects.get(full_name="acme/local").preview_url == url
        Repository.objects.all().delete()


def test_the_admin_validates_each_allowed_host(admin_client):
    add = reverse("admin:repositories_repository_add")
    data = _repository_form(host="github", allowed_hosts="ok.example, http://x/, a b:99999")
    errors = admin_client.post(add, data).context["adminform"].form.errors["allowed_hosts"]
    assert errors == [
        ALLOW_HOST_INVALID.format(entry="http://x/"),
        ALLOW_HOST_INVALID.format(entry="b:99999"),
    ]
    many = ", ".join(f"h{n}.example" for n in range(MAX_ALLOW_HOSTS + 1))
    errors = admin_client.post(add, {**data, "allowed_hosts": many}).context["adminform"]
    assert errors.form.errors["allowed_hosts"] == [TOO_MANY_ALLOW_HOSTS]
    tidy = "LocalHost, [::1]:8080 127.0.0.1:80,localhost"
    assert admin_client.post(add, {**data, "allowed_hosts": tidy}).status_code == 302
    saved = Repository.objects.get(full_name="acme/local")
    assert saved.allowed_hosts == ["localhost", "[::1]:8080", "127.0.0.1:80"]
    change = reverse("admin:repositories_repository_change", args=[saved.pk])
    page = admin_client.get(change).content.decode()
    assert "Allowed hosts" in page and "localhost, [::1]:8080, 127.0.0.1:80" in page


def test_the_service_refuses_and_leaves_the_repository_untouched(shop):
    with pytest.raises(RepositoryInvalid) as refused:
        repository_update(repository=shop, preview_url="http://169.254.169.254/")
    assert refused.value.errors == {"preview_url": [rule("169.254.169.254", "link-local")]}
    with pytest.raises(RepositoryInvalid) as refused:
        repository_update(repository=shop, allowed_hosts="localhost")
    assert refused.value.errors == {"allowed_hosts": [ALLOW_HOSTS_NOT_A_LIST]}
    # removing the entry that admits the preview URL is refused too
    repository_update(repository=shop, preview_url="http://10.0.0.1/", allowed_hosts=["10.0.0.1"])
    with pytest.raises(RepositoryInvalid, match="preview_url: 10.0.0.1 is a private address"):
        repository_update(repository=shop, allowed_hosts=[])
    shop.refresh_from_db()
    assert (shop.preview_url, shop.allowed_hosts) == ("http://10.0.0.1/", ["10.0.0.1"])


# --- webhooks ------------------------------------------------------------------------------


def test_a_push_starts_no_run_against_a_preview_url_the_proxy_would_refuse(
    client, settings, api_env, hub
):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    repository = RepositoryFactory(
        full_name="acme/shop", webhook_enabled=True, preview_url="http://127.0.0.1:3000"
    )
    answer = deliver(client, push()).json()
    refusal = PREVIEW_URL_REFUSED.format(problem=rule("127.0.0.1", "loopback"))
    assert answer["status"] == "ignored"
    assert answer["note"] == TARGET_REFUSED.format(repo="acme/shop", rule=refusal)
    assert WebhookDelivery.objects.get().note == answer["note"] and not Run.objects.exists()
    allow(repository, "127.0.0.1:3000")
    assert deliver(client, push()).json()["status"] == "run_created"


# --- make run's demo -----------------------------------------------------------------------


def test_the_demo_boots_its_app_from_its_recipe_and_drops_an_old_stand_in(tmp_path, api_env):
    web = ensure_demo_repositories(tmp_path)["web"]
    host = LocalGitHost(web.full_name, web.local_path)
    recipe = recipe_at(host, host.resolve_ref("main"), None)
    assert recipe.source.startswith("from .devcontainer/devcontainer.json")
    assert recipe.install == ("npm install --no-audit --no-fund && npm run build",)
    assert (recipe.start, recipe.port) == ("npm start", 3000)
    # an earlier AMTP served a stand-in as the preview, allow-listed on loopback
    repository_update(
        repository=web,
        preview_url="http://127.0.0.1:41000",
        allowed_hosts=["127.0.0.1:41000", "api.test"],
    )
    _git(tmp_path / "web", "rm", "-q", ".devcontainer/devcontainer.json")  # older: no recipe
    _git(tmp_path / "web", "commit", "-q", "-m", "as an older AMTP made it")
    web = ensure_demo_repositories(tmp_path)["web"]
    assert (web.preview_url, web.allowed_hosts) == ("", ["api.test"])
    assert recipe_at(host, host.resolve_ref("main"), None).source == recipe.source
    assert run_create(repository=web, requested_by="make run").created
