"""A webhook secret per repository: pushes for a repository are checked against its own secret
(the global one is only the fallback of repositories without one), and the secret is
write-only in admin."""

import json
import logging

import pytest
from django.urls import reverse

from repositories import services as repository_services
from repositories.models import Repository
from runs.models import Run
from tests import api_support, webhook_support
from tests.admin_helpers import change_url
from tests.api_support import assert_problem
from tests.factories import RepositoryFactory
from tests.test_admin import _repository_form
from tests.webhook_support import SECRET, deliver, push
from triggers import api as webhooks
from triggers.models import WebhookDelivery

pytestmark = pytest.mark.django_db
api_env, hub = api_support.api_env, webhook_support.hub  # shared fixtures

SHOP_SECRET = "shop-" + "s" * 30
BLOG_SECRET = "blog-" + "b" * 30


@pytest.fixture
def repos(settings, hub):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    shop = RepositoryFactory(
        full_name="acme/shop", webhook_enabled=True, webhook_secret=SHOP_SECRET
    )
    blog = RepositoryFactory(
        full_name="acme/blog", webhook_enabled=True, webhook_secret=BLOG_SECRET
    )
    RepositoryFactory(full_name="acme/plain", webhook_enabled=True)  # no secret of its own
    return shop, blog


def nothing_recorded():
    return not WebhookDelivery.objects.exists() and not Run.objects.exists()


def test_a_push_signed_with_the_repositorys_own_secret_starts_a_run(client, repos, api_env):
    response = deliver(client, push(), secret=SHOP_SECRET)
    assert response.status_code == 201, response.content
    assert Run.objects.get().repo_full_name == "acme/shop"


@pytest.mark.parametrize(
    "secret",
    [BLOG_SECRET, SECRET, "guessed-" + "x" * 30],
    ids=["another-repositorys", "the-global-one", "a-guess"],
)
def test_a_push_signed_with_any_other_secret_is_refused(client, repos, secret):
    response = deliver(client, push(), secret=secret)
    detail = assert_problem(response, 403, "bad-signature")["detail"]
    assert detail == webhooks.SIGNATURE_MISMATCH  # says nothing of whose secret it wanted
    assert nothing_recorded()


def test_unsigned_and_other_body_signatures_are_refused(client, repos):
    unsigned = deliver(client, push(), signature=False)
    assert assert_problem(unsigned, 403, "bad-signature")["detail"] == webhooks.SIGNATURE_MISSING
    other_body = json.dumps(push("release")).encode()
    forged = webhooks.signature_for(SHOP_SECRET, other_body)  # signed, but another body
    assert_problem(deliver(client, push(), signature=forged), 403, "bad-signature")
    assert nothing_recorded()


def test_a_repository_without_its_own_secret_takes_the_global_one(client, repos):
    assert deliver(client, push(repo="acme/plain"), secret=SECRET).status_code == 200
    refused = deliver(client, push(repo="acme/plain"), secret=SHOP_SECRET)
    assert_problem(refused, 403, "bad-signature")


def test_an_unknown_repository_is_judged_by_the_global_secret(client, repos, settings):
    signed_by_shop = deliver(client, push(repo="acme/unknown"), secret=SHOP_SECRET)
    assert_problem(signed_by_shop, 403, "bad-signature")
    ignored = deliver(client, push(repo="acme/unknown"), secret=SECRET)
    assert ignored.json()["status"] == "ignored" and "not registered" in ignored.json()["note"]
    settings.GITHUB_WEBHOOK_SECRET = ""  # no global: nothing can vouch for it
    response = deliver(client, push(repo="acme/unknown"), secret=SHOP_SECRET)
    assert assert_problem(response, 503, "webhook-secret-missing")["detail"] == webhooks.NO_SECRET


def test_without_a_global_secret_repositories_with_their_own_still_work(
    client, repos, settings, api_env
):
    settings.GITHUB_WEBHOOK_SECRET = ""
    assert deliver(client, push(), secret=SHOP_SECRET).status_code == 201
    assert_problem(deliver(client, push(repo="acme/plain"), secret=SECRET), 503)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"repository": "acme/shop"}',
        b'{"repository": {"full_name": 5}}',
        b'{"repository": {"full_name": "' + b"x" * 300 + b'"}}',
        b"[1, 2]",
    ],
)
def test_bodies_that_name_no_repository_are_checked_against_the_global_secret(client, repos, body):
    """The signature comes before any complaint about the body: a body that names no
    repository must carry the global secret's signature, or it is a 403, not a 400."""
    assert_problem(deliver(client, body, secret=SHOP_SECRET), 403, "bad-signature")
    assert_problem(deliver(client, body, secret=SECRET), 400, "bad-webhook")
    assert nothing_recorded()


def test_a_ping_for_a_repository_is_verified_with_its_own_secret(client, repos):
    ping = {"zen": "Speak like a human.", "hook_id": 7, "repository": {"full_name": "acme/shop"}}
    assert deliver(client, ping, event="ping", secret=SHOP_SECRET).json()["status"] == "pong"
    assert_problem(deliver(client, ping, event="ping", secret=SECRET), 403)


# --- admin: write-only ----------------------------------------------------------------------


def test_admin_never_shows_the_secret_and_blank_keeps_it(admin_client, tmp_path):
    from tests.gitrepo import make_git_repo

    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    add = reverse("admin:repositories_repository_add")
    form = _repository_form(local_path=path, webhook_secret=SHOP_SECRET)
    response = admin_client.post(add, form)
    assert response.status_code == 302
    # an error report of this request (DEBUG page, error e-mail) would mask the field
    assert "webhook_secret" in response.wsgi_request.sensitive_post_parameters
    repo = Repository.objects.get(full_name="acme/local")
    assert repo.webhook_secret == SHOP_SECRET
    page = admin_client.get(change_url(repo)).content.decode()
    assert SHOP_SECRET not in page and "A secret is set (never shown)" in page

    assert admin_client.post(change_url(repo), _repository_form(local_path=path)).status_code == 302
    repo.refresh_from_db()
    assert repo.webhook_secret == SHOP_SECRET  # left blank: kept
    replaced = _repository_form(local_path=path, webhook_secret=BLOG_SECRET)
    assert admin_client.post(change_url(repo), replaced).status_code == 302
    repo.refresh_from_db()
    assert repo.webhook_secret == BLOG_SECRET
    cleared = _repository_form(local_path=path, clear_webhook_secret="on")
    assert admin_client.post(change_url(repo), cleared).status_code == 302
    repo.refresh_from_db()
    assert repo.webhook_secret == ""
    assert (
        "Not set: pushes are checked against the global"
        in admin_client.get(change_url(repo)).content.decode()
    )


def test_a_weak_secret_is_refused_without_being_echoed(admin_client, tmp_path, caplog):
    from tests.gitrepo import make_git_repo

    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    add = reverse("admin:repositories_repository_add")
    caplog.set_level(logging.DEBUG)
    for weak, rule in [
        ("hunter2-short", repository_services.WEBHOOK_SECRET_SHORT),
        ("with a space in it, long enough", repository_services.WEBHOOK_SECRET_SPACES),
    ]:
        response = admin_client.post(add, _repository_form(local_path=path, webhook_secret=weak))
        assert response.status_code == 200
        assert response.context["adminform"].form.errors["webhook_secret"] == [rule]
        assert weak not in response.content.decode() and weak not in caplog.text
    assert not Repository.objects.exists()


def test_the_secret_is_not_in_the_admin_history(admin_client, tmp_path):
    from django.contrib.admin.models import LogEntry

    from tests.gitrepo import make_git_repo

    path = make_git_repo(tmp_path / "repo", {"README.md": "hi\n"})
    add = reverse("admin:repositories_repository_add")
    admin_client.post(add, _repository_form(local_path=path, webhook_secret=SHOP_SECRET))
    repo = Repository.objects.get()
    admin_client.post(
        change_url(repo), _repository_form(local_path=path, webhook_secret=BLOG_SECRET)
    )
    messages = " ".join(entry.change_message for entry in LogEntry.objects.all())
    assert SHOP_SECRET not in messages and BLOG_SECRET not in messages
    history = admin_client.get(change_url(repo) + "history/").content.decode()
    assert SHOP_SECRET not in history and BLOG_SECRET not in history


def test_an_error_report_of_the_receiver_hides_the_secret(rf, repos, monkeypatch):
    """Django's error reports (the DEBUG page, error e-mails) show each frame's locals."""
    from django.http import HttpResponse
    from django.views.debug import ExceptionReporter

    def broken(**kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(webhooks, "webhook_delivery_receive", broken)
    body = json.dumps(push()).encode()
    request = rf.post(
        "/api/webhooks/github",
        body,
        content_type="application/json",
        headers={
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": "d-1",
            "X-Hub-Signature-256": webhooks.signature_for(SHOP_SECRET, body),
        },
    )
    with pytest.raises(RuntimeError) as caught:
        webhooks.github_webhook(request, HttpResponse())
    reporter = ExceptionReporter(request, caught.type, caught.value, caught.tb, is_email=True)
    frames = {frame["function"]: dict(frame["vars"]) for frame in reporter.get_traceback_frames()}
    assert frames["github_webhook"]["secret"] == "*" * 20
    assert SHOP_SECRET not in repr(frames) and SHOP_SECRET not in reporter.get_traceback_html()
