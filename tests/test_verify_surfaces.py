"""Where people give a target URL and see the verification: the repository's preview URL, the
run's target_url (API, launch form, ``launch_run``), the run page's report with its evidence
downloads, and the API's totals."""

import copy
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

import schemas
from repositories.models import Repository
from repositories.targets import TARGET_URL_CREDENTIALS, TARGET_URL_INVALID, TARGET_URL_PRIVATE
from runs import transitions
from runs.models import Run
from tests import api_support
from tests.admin_helpers import VIEW, change_url, client_for, staff
from tests.api_support import assert_problem, post
from tests.contract_examples import VERIFICATION_REPORT
from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory
from tests.test_admin import _repository_form
from tests.test_admin_launch import LAUNCH, form_data, launcher  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

api_env, make_token, client, repo = (
    api_support.api_env,
    api_support.make_token,
    api_support.client,
    api_support.repo,
)


def test_the_api_takes_a_target_url_and_refuses_a_bad_one(client, repo, api_env):
    body = {"repo_full_name": "acme/shop", "target_url": "https://preview.acme.test/app"}
    created = post(client, "/api/runs", body).json()
    assert created["target_url"] == "https://preview.acme.test/app"
    assert Run.objects.get().target_url == "https://preview.acme.test/app"
    for bad, message in [
        ("ftp://acme.test", TARGET_URL_INVALID),
        ("https://me:pw@acme.test", TARGET_URL_CREDENTIALS),
    ]:
        problem = assert_problem(post(client, "/api/runs", {**body, "target_url": bad}), 422)
        assert problem["errors"][0]["field"] == "target_url"
        assert message in problem["errors"][0]["detail"]
    assert Run.objects.count() == 1


def test_the_api_shows_the_verification_totals_and_each_stage_note(client):
    run = RunFactory(status="passed")
    transitions.create_stages(run)
    run.stages.filter(name="verify_tests").update(status="skipped", note="no target URL: ...")
    ArtifactFactory(run=run, kind="verification_report", content=VERIFICATION_REPORT)
    body = client.get(f"/api/runs/{run.run_id}").json()
    assert body["verification"] == {
        "status": "verified",
        "reason": "",
        "target_url": "https://preview.acme.test",
        "totals": VERIFICATION_REPORT["totals"],
    }
    notes = {s["name"]: s["note"] for s in body["stages"]}
    assert notes["verify_tests"] == "no target URL: ..." and notes["crawl_repo"] == ""
    context = client.get(f"/api/runs/{run.run_id}/context").json()
    assert context["test_results"] == {"total": 2, "passing": 2, "failing": 0}
    fresh = RunFactory()
    assert client.get(f"/api/runs/{fresh.run_id}").json()["verification"] is None


def test_the_repository_preview_url_is_checked_by_the_one_rule(admin_client):
    add = reverse("admin:repositories_repository_add")
    data = _repository_form(host="github", local_path="", preview_url="preview.acme.test")
    response = admin_client.post(add, data)
    assert response.context["adminform"].form.errors["preview_url"] == [TARGET_URL_INVALID]
    data["preview_url"] = "https://preview.acme.test"
    assert admin_client.post(add, data).status_code == 302
    assert Repository.objects.get(full_name="acme/local").preview_url == data["preview_url"]


def test_the_launch_form_takes_a_target_url(launcher, tmp_path, api_env):  # noqa: F811
    repository = RepositoryFactory(full_name="acme/launch", preview_url="https://preview.test")
    browser = client_for(launcher)
    page = browser.get(LAUNCH).content.decode()
    assert 'name="target_url"' in page and "https://preview.test" in page  # the default
    bad = form_data(browser, repository=repository.pk, target_url="javascript:alert(1)")
    response = browser.post(LAUNCH, bad)
    assert response.context["form"].errors["target_url"] == [TARGET_URL_INVALID]
    good = form_data(browser, repository=repository.pk, target_url="http://127.0.0.1:5000")
    refused = browser.post(LAUNCH, good).context["form"].errors["target_url"]
    assert refused == [TARGET_URL_PRIVATE.format(host="127.0.0.1", kind="loopback")]
    repository.allowed_hosts = ["127.0.0.1:5000"]
    repository.save()
    assert browser.post(LAUNCH, good).status_code == 302
    assert Run.objects.get().target_url == "http://127.0.0.1:5000"


def test_launch_run_takes_a_target_url_and_refuses_a_bad_one(api_env):
    RepositoryFactory(full_name="acme/cli")
    with pytest.raises(CommandError, match="--target-url: leave user names"):
        call_command("launch_run", "acme/cli", "--target-url", "https://u:p@x.test")
    assert not Run.objects.exists()
    call_command("launch_run", "acme/cli", "--target-url", "https://x.test", stdout=StringIO())
    assert Run.objects.get().target_url == "https://x.test"


@pytest.fixture
def verified_run(tmp_path, settings):
    settings.AMTP_VERIFY_EVIDENCE_DIR = tmp_path / "evidence"
    run = RunFactory(status="passed")
    transitions.create_stages(run)
    report = copy.deepcopy(VERIFICATION_REPORT)
    report["tests"][0]["error"] = "<script>alert(1)</script>"
    ArtifactFactory(run=run, kind="verification_report", content=report)
    trace = tmp_path / "evidence" / str(run.run_id) / "run-1/users-lists/trace.zip"
    trace.parent.mkdir(parents=True)
    trace.write_bytes(b"PK trace")
    (tmp_path / "evidence" / str(run.run_id) / "secret.txt").write_text("not listed")
    return run


def test_the_run_page_shows_the_report_with_evidence_downloads(verified_run):
    browser = client_for(staff(*VIEW))
    page = browser.get(change_url(verified_run)).content.decode()
    assert 'id="amtp-verification"' in page and "amtp-badge-verified" in page
    assert "against <code>https://preview.acme.test</code>" in page
    assert "healed:</strong> GET /users answers HTML" in page
    assert "<script>alert(1)</script>" not in page  # the app's error text is escaped
    assert 'id="amtp-test-data"' in page and "after heal: <a href=" in page
    assert "<code>POST https://preview.acme.test/api/test-data/seed</code>" in page
    assert "amtp-badge-failed" in page and "exited 1" in page  # the failed tear-down
    url = reverse("admin:runs_run_evidence", args=[verified_run.pk, "run-1/users-lists/trace.zip"])
    assert url in page
    download = browser.get(url)
    assert download.status_code == 200 and b"".join(download.streaming_content) == b"PK trace"
    assert "attachment" in download["Content-Disposition"]
    for name in ("secret.txt", "../secret.txt", "run-1/../secret.txt"):
        evil = reverse("admin:runs_run_evidence", args=[verified_run.pk, "x"]).replace("x", name)
        assert browser.get(evil).status_code == 404, name
    assert client_for(staff()).get(url).status_code in (302, 403)


APP_MAP = {
    "target_url": "https://preview.acme.test",
    "settings": {"max_pages": 30, "max_depth": 3, "time_s": 120, "page_timeout_s": 15},
    "tool_versions": {"@playwright/test": "1.65.1"},
    "pages": [
        {
            "path": "/login",
            "depth": 0,
            "status": 200,
            "title": "<script>alert(1)</script>",
            "snapshot": '- heading "Sign in" [level=1]\n- textbox "Email"\n- button "Sign in"',
            "links": ["/"],
            "forms": [
                {
                    "action": "/session",
                    "method": "post",
                    "submit": "Sign in",
                    "fields": [
                        {"label": "Email", "name": "email", "type": "email", "required": True}
                    ],
                }
            ],
            "console_errors": [],
            "screenshot": "explore/0.jpeg",
            "error": "",
        }
    ],
    "stopped": "stopped at 1 pages",
    "unvisited": 3,
    "unknown_path_status": 404,
    "truncated": False,
    "sandbox": {"isolated": True, "blocked": []},
}


def test_the_run_page_shows_the_app_map_with_thumbnails(verified_run, tmp_path):
    schemas.validate("exploration/app_map", APP_MAP)
    ArtifactFactory(run=verified_run, kind="app_map", content=APP_MAP)
    shot = tmp_path / "evidence" / str(verified_run.run_id) / "explore/0.jpeg"
    shot.parent.mkdir(parents=True)
    shot.write_bytes(b"\xff\xd8\xff thumbnail")
    browser = client_for(staff(*VIEW))
    page = browser.get(change_url(verified_run)).content.decode()
    assert 'id="amtp-app-map"' in page and "<code>/login</code>" in page
    assert "1 heading, 1 textbox, 1 button" in page and "POST 1 field(s)" in page
    assert "stopped at 1 pages, 3 link(s) not visited" in page
    assert "<script>alert(1)</script>" not in page
    url = reverse("admin:runs_run_evidence", args=[verified_run.pk, "explore/0.jpeg"])
    assert f'<img src="{url}"' in page
    download = browser.get(url)
    assert b"".join(download.streaming_content) == b"\xff\xd8\xff thumbnail"
    unlisted = reverse("admin:runs_run_evidence", args=[verified_run.pk, "explore/1.jpeg"])
    assert browser.get(unlisted).status_code == 404
