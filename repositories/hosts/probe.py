"""The GitHub half of ``manage.py check_providers``: one cheap real call with the configured
credential (GET /user for a token, GET /app and /app/installations for a GitHub App), and what
is wrong in words a user can act on. Each finding is ``ok``, ``warning`` (runs may work) or
``error`` (runs on GitHub repositories will fail)."""

from __future__ import annotations

import requests
from django.conf import settings
from github import Auth, Github, GithubException, GithubIntegration

from amtp_site.findings import Finding
from repositories.hosts import github_errors as answers

NO_CREDENTIAL = (
    "GitHub: no credential configured, so only local repositories can be used; set "
    "GITHUB_TOKEN, or GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY (docs/github.md)"
)
HALF_APP = "GitHub: GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY go together; set both (docs/github.md)"
TOKEN_OK = "GitHub: the token works at {url}, as {login}{where}"
CLASSIC_NO_REPO = (
    "GitHub: the token is a classic token without the `repo` scope (it has: {scopes}); it "
    "cannot write to private repositories: create one with `repo`, or a fine-grained token "
    "with Contents and Pull requests read and write (docs/github.md)"
)
FINE_GRAINED = (
    "GitHub: a fine-grained token cannot be asked what it may do; make sure it has Contents "
    "and Pull requests read and write, and Metadata read, on the repositories AMTP opens PRs on"
)
APP_OK = "GitHub: App {slug!r} (id {app_id}) signs in at {url}{where}; installed on: {accounts}"
NOT_INSTALLED = (
    "GitHub: App {slug!r} (id {app_id}) is installed nowhere; install it on the repositories "
    "(its settings page, Install App) with Contents and Pull requests read and write"
)
TOKEN_REFUSED = (
    "GitHub refused GITHUB_TOKEN at {url} ({status}: {message}); create a new token "
    "(docs/github.md) and set GITHUB_TOKEN"
)
INSTALLATION_TOKEN = (
    "GitHub: GITHUB_TOKEN looks like a GitHub App installation token ({status}: {message}); "
    "those expire within an hour: set GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY instead"
)
APP_REFUSED = (
    "GitHub refused the App's signature at {url} ({status}: {message}); check GITHUB_APP_ID "
    "and that GITHUB_APP_PRIVATE_KEY is that App's private key (PEM)"
)
NOT_THE_API = (
    "GitHub: GITHUB_API_URL={url} answered {status} with a web page, not the REST API; for "
    "GitHub Enterprise Server set GITHUB_API_URL=https://HOSTNAME/api/v3"
)
UNREACHABLE = "GitHub: cannot reach GITHUB_API_URL={url} ({message}); check the URL and network"
RATE_LIMITED = "GitHub: rate limited at {url} ({message}); the credential could not be checked"
OTHER = "GitHub answered {status} at {url}: {message}"


def check_github() -> list[Finding]:
    token, app_id = settings.GITHUB_TOKEN, settings.GITHUB_APP_ID
    private_key = settings.GITHUB_APP_PRIVATE_KEY
    if not (token or app_id or private_key):
        return [Finding("warning", NO_CREDENTIAL)]
    if bool(app_id) != bool(private_key):
        return [Finding("error", HALF_APP)]
    url = settings.GITHUB_API_URL
    try:
        if app_id:
            return _check_app(url, app_id, private_key.replace("\\n", "\n"))
        return _check_token(url, token)
    except GithubException as exc:
        return [_explain(exc, url, app=bool(app_id))]
    except requests.RequestException as exc:
        return [Finding("error", UNREACHABLE.format(url=url, message=exc))]


def _options(url: str) -> dict:
    return {"base_url": url, "timeout": 15, "retry": None}


def _where(headers: dict) -> str:
    version = {k.lower(): v for k, v in headers.items()}.get("x-github-enterprise-version")
    return f" (GitHub Enterprise Server {version})" if version else ""


def _check_token(url: str, token: str) -> list[Finding]:
    client = Github(auth=Auth.Token(token), **_options(url))
    headers, user = client.requester.requestJsonAndCheck("GET", "/user")
    if not isinstance(user, dict) or "login" not in user:  # a web page answered 200
        return [Finding("error", NOT_THE_API.format(url=url, status=200))]
    found = [Finding("ok", TOKEN_OK.format(url=url, login=user["login"], where=_where(headers)))]
    scopes = {k.lower(): v for k, v in headers.items()}.get("x-oauth-scopes")
    if scopes is None:
        found.append(Finding("warning", FINE_GRAINED))
    elif "repo" not in [s.strip() for s in scopes.split(",")]:
        found.append(Finding("warning", CLASSIC_NO_REPO.format(scopes=scopes or "none")))
    return found


def _check_app(url: str, app_id: str, private_key: str) -> list[Finding]:
    integration = GithubIntegration(auth=Auth.AppAuth(app_id, private_key), **_options(url))
    app = integration.get_app()
    if not app.slug:  # a web page answered 200
        return [Finding("error", NOT_THE_API.format(url=url, status=200))]
    accounts = sorted({i.account.login for i in integration.get_installations()})
    fields = {"slug": app.slug, "app_id": app_id, "url": url}
    if not accounts:
        return [Finding("error", NOT_INSTALLED.format(**fields))]
    where = _where(app.raw_headers or {})
    return [Finding("ok", APP_OK.format(accounts=", ".join(accounts), where=where, **fields))]


def _explain(exc: GithubException, url: str, *, app: bool) -> Finding:
    fields = {"url": url, "status": exc.status, "message": answers.message(exc)}
    if answers.is_not_the_api(exc):
        return Finding("error", NOT_THE_API.format(**fields))
    if answers.is_rate_limited(exc):
        return Finding("warning", RATE_LIMITED.format(**fields))
    if exc.status == 401:
        return Finding("error", (APP_REFUSED if app else TOKEN_REFUSED).format(**fields))
    if exc.status == 403 and not app:
        return Finding("error", INSTALLATION_TOKEN.format(**fields))
    return Finding("error", OTHER.format(**fields))
