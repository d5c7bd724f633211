"""Single sign-on for the admin (amtp_site.sso) against a real OpenID provider:
django-oauth-toolkit's, in its own process (tests/oidc_provider/). In Chromium a person signs
in through it, lands in the admin with exactly the rights of their groups, loses a right when
the provider drops their group (at the next sign-in, and at the re-check of a running session),
and signs out of both. Hostile: a state or nonce that is not the sign-in's, a replayed callback,
an open redirect in ``next``, a local account's name. The provider down: a clear page, and
the break-glass password still works."""

import threading
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth.models import Group, Permission, User
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.test import Client
from playwright.sync_api import expect, sync_playwright

from repositories import access
from repositories.models import RepositoryGrant
from tests.factories import RepositoryFactory, RunFactory
from tests.oidc_provider import Provider
from tests.test_browser import CHROMIUM_ARGS, PAGE_TIMEOUT_MS, chromium_path

GROUP_MAP = {"shop-operators": ("Shop operators",), "other-viewers": ("Other viewers",)}
TESTSERVER = "http://testserver"


@pytest.fixture(scope="module")
def provider(live_server):
    """One provider for the module; AMTP is its client at the live server (Chromium) and at
    Django's test client (``testserver``)."""
    callbacks = f"{live_server.url}/oidc/callback/ {TESTSERVER}/oidc/callback/"
    after_logout = f"{live_server.url}/admin/login/ {TESTSERVER}/admin/login/"
    with Provider(callbacks, after_logout) as running:
        yield running


@pytest.fixture
def sso_on(settings, provider):
    settings.AMTP_SSO_ISSUER = provider.issuer
    settings.OIDC_RP_CLIENT_ID = provider.client_id
    settings.OIDC_RP_CLIENT_SECRET = provider.client_secret
    settings.AMTP_SSO_GROUP_MAP = GROUP_MAP
    settings.AMTP_SSO_NAME = "Example IdP"
    settings.AMTP_SSO_PASSWORD_LOGIN = False
    return provider


@pytest.fixture
def repositories():
    """Grants on Django groups: "Shop operators" operate acme/shop, "Other viewers" see
    acme/other; acme/secret is nobody's. "admins" holds a global right but is not mapped: a
    provider group of that name must give nothing."""
    shop, other = (
        RepositoryFactory(full_name="acme/shop"),
        RepositoryFactory(full_name="acme/other"),
    )
    secret = RepositoryFactory(full_name="acme/secret")
    for repository in (shop, other, secret):
        RunFactory(repository=repository, status="passed")
    RepositoryGrant.objects.create(
        repository=shop, group=Group.objects.create(name="Shop operators"), role="operator"
    )
    RepositoryGrant.objects.create(
        repository=other, group=Group.objects.create(name="Other viewers"), role="viewer"
    )
    admins = Group.objects.create(name="admins")
    admins.permissions.add(Permission.objects.get(codename="add_run"))
    return shop, other, secret


def at_provider(provider, username: str) -> requests.Session:
    """A browser signed in at the provider (its own login form, CSRF and all)."""
    browser = requests.Session()
    browser.get(f"{provider.url}/login/", timeout=30).raise_for_status()
    answer = browser.post(
        f"{provider.url}/login/",
        data={
            "username": username,
            "password": "pw",
            "csrfmiddlewaretoken": browser.cookies["provider_csrf"],
        },
        allow_redirects=False,
        timeout=30,
    )
    assert answer.status_code == 302, answer.text
    return browser


def to_callback(client: Client, browser: requests.Session, next_url: str | None = None) -> str:
    """Start a sign-in at AMTP and let the provider answer it: the callback path AMTP gets."""
    start = client.get("/oidc/authenticate/", {"next": next_url} if next_url else {})
    assert start.status_code == 302, start.content
    query = parse_qs(urlsplit(start["Location"]).query)
    # The authorization code flow with PKCE (S256), a state and a nonce.
    assert query["response_type"] == ["code"] and query["code_challenge_method"] == ["S256"]
    assert query["state"][0] and query["nonce"][0] and query["code_challenge"][0]
    answer = browser.get(start["Location"], allow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text
    assert answer.headers["Location"].startswith(f"{TESTSERVER}/oidc/callback/?")
    return answer.headers["Location"].removeprefix(TESTSERVER)


def signed_in(client: Client) -> User | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id) if user_id else None


# --- in-process: the hostile cases, each through the real provider --------------------------


@pytest.mark.django_db(transaction=True)
def test_a_sign_in_maps_the_provider_groups_and_nothing_else(sso_on, repositories):
    shop, other, _ = repositories
    sub = sso_on.user("carol", groups=["shop-operators", "admins", "unmapped"])
    client = Client()
    landed = client.get(to_callback(client, at_provider(sso_on, "carol")))
    assert landed.status_code == 302 and landed["Location"] == "/admin/"
    carol = signed_in(client)
    assert carol.username == f"sso-{sub}" and not carol.has_usable_password()
    assert (carol.email, carol.first_name, carol.is_staff) == ("carol@example.test", "Carol", True)
    assert [g.name for g in carol.groups.all()] == ["Shop operators"]  # not "admins"
    assert access.repository_ids(carol, access.LAUNCH) == {shop.pk}
    assert access.repository_ids(carol, access.VIEW) == {shop.pk}

    sso_on.user("carol", groups=["other-viewers"])  # moved to another team
    client = Client()
    client.get(to_callback(client, at_provider(sso_on, "carol")))
    carol = signed_in(client)
    assert access.repository_ids(carol, access.LAUNCH) == set()
    assert access.repository_ids(carol, access.VIEW) == {other.pk}


@pytest.mark.django_db(transaction=True)
def test_a_state_or_nonce_that_is_not_this_sign_ins_is_refused(sso_on, repositories):
    sso_on.user("mallory", groups=["shop-operators"])
    browser = at_provider(sso_on, "mallory")

    client = Client()
    callback = to_callback(client, browser)
    forged = callback.replace("state=", "state=x")
    answer = client.get(forged)
    assert answer.status_code == 400 and signed_in(client) is None
    assert "Sign-in through Example IdP refused" in answer.content.decode()

    client = Client()  # a link anyone can send: the provider's "words" are not shown
    answer = client.get("/oidc/callback/?error=access_denied&error_description=Call+555-0100")
    assert answer.status_code == 403 and "555-0100" not in answer.content.decode()
    assert "a sign-in this browser did not start" in answer.content.decode()

    client = Client()  # a callback in a browser that started no sign-in
    answer = client.get(to_callback(Client(), browser))
    assert answer.status_code == 403 and signed_in(client) is None

    client = Client()
    callback = to_callback(client, browser)
    state = parse_qs(urlsplit(callback).query)["state"][0]
    session = client.session
    session["oidc_states"][state]["nonce"] = "another-sign-ins-nonce"
    session.save()
    answer = client.get(callback)
    assert answer.status_code == 400 and signed_in(client) is None
    assert "nonce is not this sign-in" in answer.content.decode()

    client = Client()
    callback = to_callback(client, browser)
    assert client.get(callback).status_code == 302 and signed_in(client) is not None
    client.logout()
    replayed = client.get(callback)  # the state was used up
    assert replayed.status_code == 403 and signed_in(client) is None


@pytest.mark.django_db(transaction=True)
def test_next_keeps_a_path_of_this_site_and_nothing_else(sso_on, repositories):
    sso_on.user("nina", groups=["shop-operators"])
    browser = at_provider(sso_on, "nina")
    for hostile in (
        "https://evil.example/admin/",
        "//evil.example/admin/",
        "/\\evil.example/admin/",
        "https:evil.example",
        "javascript:alert(1)",
        "http://testserver.evil.example/",
    ):
        client = Client()
        landed = client.get(to_callback(client, browser, next_url=hostile))
        assert landed.status_code == 302 and landed["Location"] == "/admin/", hostile
    client = Client()
    landed = client.get(to_callback(client, browser, next_url="/admin/runs/run/?o=1"))
    assert landed["Location"] == "/admin/runs/run/?o=1"


@pytest.mark.django_db(transaction=True)
def test_a_provider_subject_never_signs_in_to_a_local_account(sso_on, repositories):
    sub = sso_on.user("olaf", groups=["shop-operators"])
    User.objects.create_user(f"sso-{sub}", password="local-password", is_staff=True)
    client = Client()
    answer = client.get(to_callback(client, at_provider(sso_on, "olaf")))
    assert answer.status_code == 403 and signed_in(client) is None
    assert "is a local account with a password" in answer.content.decode()
    assert User.objects.get(username=f"sso-{sub}").groups.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_stale_session_changes_nothing_and_a_provider_gone_mid_sign_in_says_so(
    sso_on, repositories, settings
):
    sso_on.user("sam", groups=["shop-operators"])
    browser = at_provider(sso_on, "sam")
    client = Client()
    client.get(to_callback(client, browser))
    assert signed_in(client) is not None
    session = client.session
    session["oidc_id_token_expiration"] = 0  # the re-check is due
    session.save()
    launch = client.post("/launch/", {"repository": repositories[0].pk})
    assert launch.status_code == 403 and b"reload the page" in launch.content
    recheck = client.get("/admin/runs/run/")  # a page load goes to the provider, no prompt
    assert recheck.status_code == 302
    assert parse_qs(urlsplit(recheck["Location"]).query)["prompt"] == ["none"]

    client = Client()
    callback = to_callback(client, browser)
    settings.AMTP_SSO_ISSUER = "http://127.0.0.1:1/o"  # gone before the code is exchanged
    answer = client.get(callback)
    assert answer.status_code == 503 and signed_in(client) is None
    assert "Example IdP cannot be reached" in answer.content.decode()


@pytest.mark.django_db
def test_the_provider_down_is_a_clear_page_and_break_glass_still_works(settings):
    settings.AMTP_SSO_ISSUER = "http://127.0.0.1:1/o"  # nothing listens on port 1
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = "amtp", "secret"
    settings.AMTP_SSO_GROUP_MAP = GROUP_MAP
    settings.AMTP_SSO_NAME = "Example IdP"
    settings.AMTP_SSO_PASSWORD_LOGIN = False
    User.objects.create_superuser("breakglass", password="glass-pw")
    User.objects.create_user("local-staff", password="staff-pw", is_staff=True)

    login_page = Client().get("/admin/login/").content.decode()
    assert "Sign in with Example IdP" in login_page and 'id="break-glass"' in login_page

    down = Client().get("/oidc/authenticate/")
    page = down.content.decode()
    assert down.status_code == 503
    assert "Example IdP cannot be reached" in page
    assert "http://127.0.0.1:1/o/.well-known/openid-configuration did not answer" in page
    assert "break-glass password below" in page and 'id="login-form"' in page

    staff = Client()
    refused = staff.post("/admin/login/", {"username": "local-staff", "password": "staff-pw"})
    assert refused.status_code == 200 and signed_in(staff) is None  # passwords are off
    root = Client()
    answer = root.post("/admin/login/", {"username": "breakglass", "password": "glass-pw"})
    assert answer.status_code == 302 and signed_in(root).username == "breakglass"
    assert root.get("/admin/").status_code == 200


# --- Chromium: the whole path of a person -----------------------------------------------------


def in_thread(work):
    """ORM work while Playwright's sync API holds an event loop on this thread (Django refuses
    ORM calls from such a thread)."""
    found = []
    thread = threading.Thread(target=lambda: found.append(work()))
    thread.start()
    thread.join(60)
    return found[0]


@pytest.mark.django_db(transaction=True)
def test_a_person_signs_in_works_with_their_groups_rights_and_signs_out(
    live_server, sso_on, repositories
):
    sub = sso_on.user("alice", groups=["shop-operators", "other-viewers"])
    username = f"sso-{sub}"
    runs_list = f"{live_server.url}/admin/runs/run/"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)

        def sign_in(*, at_provider_too: bool) -> None:
            page.goto(f"{live_server.url}/admin/runs/run/")
            page.get_by_role("link", name="Sign in with Example IdP").click()
            if at_provider_too:
                expect(page.get_by_role("heading")).to_have_text("Example Identity Provider")
                page.fill("#id_username", "alice")
                page.fill("#id_password", "pw")
                page.get_by_role("button", name="Sign in to the provider").click()
            expect(page.locator("#user-tools")).to_contain_text("Alice")
            assert page.url == runs_list  # back where the admin's ?next= said

        def rows() -> set[str]:
            return set(page.locator("#result_list tbody tr").all_inner_texts())

        def repositories_in_list() -> set[str]:
            names = {"acme/shop", "acme/other", "acme/secret"}
            return {name for name in names if any(name in row for row in rows())}

        # 1. Both groups: runs of acme/shop and acme/other, launching on acme/shop only.
        sign_in(at_provider_too=True)
        assert repositories_in_list() == {"acme/shop", "acme/other"}
        page.goto(f"{live_server.url}/launch/")
        expect(page.locator("#id_repository option[value]:not([value=''])")).to_have_text(
            ["acme/shop"]
        )

        # 2. Sign out: AMTP's session and the provider's end.
        page.goto(runs_list)
        page.locator("#logout-form button, #logout-form input[type=submit]").click()
        expect(page.locator("#login-form")).to_be_attached()
        assert page.url.startswith(f"{live_server.url}/admin/login/")
        page.goto(sso_on.url)
        expect(page.locator("body")).to_have_text("provider home: signed out")

        # 3. The provider drops shop-operators: at the next sign-in (a password again at the
        # provider, whose session ended) acme/shop is gone.
        sso_on.user("alice", groups=["other-viewers"])
        sign_in(at_provider_too=True)
        assert repositories_in_list() == {"acme/other"}
        assert page.goto(f"{live_server.url}/launch/").status == 403

        # 4. Alice leaves: at the re-check of her running session (no prompt at the provider),
        # AMTP signs her out with the reason.
        sso_on.user("alice", groups=[])

        def make_due():
            due = 0
            for row in Session.objects.all():
                store = SessionStore(row.session_key)
                user_id = store.get("_auth_user_id")
                if user_id and User.objects.get(pk=user_id).username == username:
                    store["oidc_id_token_expiration"] = 0
                    store.save()
                    due += 1
            return due

        assert in_thread(make_due) == 1
        page.goto(runs_list)
        expect(page.locator("#sso-problem")).to_contain_text(
            "none of your groups at the identity provider (none) gives access to AMTP"
        )
        page.goto(runs_list)
        expect(page.locator("#login-form")).to_be_attached()  # signed out
        browser.close()

    alice = in_thread(lambda: User.objects.get(username=username))
    assert not alice.is_staff
    assert in_thread(lambda: list(alice.groups.all())) == []
