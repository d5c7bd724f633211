"""The run page tells the truth at a glance: one verdict line, neutral notes, the pull request
(title, body rendered safely, link or checkout commands) for every host."""

import copy

import pytest
from django.utils import timezone

from runs import transitions
from runs.admin.markdown import render
from runs.admin.verdict import ATTENTION, FAILED, OK, RUNNING, verdict
from runs.models import Stage
from tests.admin_helpers import VIEW, XSS, change_url, client_for, staff
from tests.contract_examples import PULL_REQUEST, VERIFICATION_REPORT
from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory
from verification.errors import TargetAnswersErrors
from verification.exploration.service import stop_if_errors_only

pytestmark = pytest.mark.django_db


def _report(**counts) -> dict:
    """A verified report with ``counts`` tests per status, each titled by its status."""
    report = copy.deepcopy(VERIFICATION_REPORT)
    tests = []
    for status, n in counts.items():
        for i in range(n):
            reason = "button “Save” never enabled" if status == "quarantined" else ""
            tests.append({**report["tests"][0], "title": f"{status} {i}", "status": status})
            tests[-1].update(reason=reason, heal="", diff="", evidence=[])
    totals = {k: counts.get(k, 0) for k in report["totals"] if k != "tests"}
    report.update(tests=tests, totals={"tests": len(tests), **totals})
    return report


def _page(run) -> str:
    return client_for(staff(*VIEW)).get(change_url(run)).content.decode()


def _verdict_line(page: str) -> str:
    start = page.index('id="amtp-verdict"')
    return page[start : page.index("</p>", start)]


# --- the verdict line --------------------------------------------------------------------


def test_a_clean_pass_is_green_with_its_counts():
    run = RunFactory(status="passed")
    shown = verdict(run, [], _report(passed=16, healed=1))
    assert (shown.level, shown.text) == (OK, "passed: 17 tests, 1 healed")


def test_a_pass_with_a_quarantined_test_needs_attention_and_names_it():
    run = RunFactory(status="passed")
    shown = verdict(run, [], _report(passed=17, quarantined=1))
    assert shown.level == ATTENTION
    assert shown.text == (
        "passed: 18 tests, 1 quarantined (quarantined 0: button “Save” never enabled)"
    )
    many = verdict(run, [], _report(passed=1, quarantined=4)).text
    assert many.endswith(
        "(quarantined 0: button “Save” never enabled; quarantined 1: "
        "button “Save” never enabled; … 2 more)"
    )


def test_tests_never_run_against_the_app_are_not_green():
    run = RunFactory(status="passed")
    report = _report(skipped=3)
    report.update(status="skipped", reason="no target URL: set the repository's preview URL")
    shown = verdict(run, [], report)
    assert shown.level == ATTENTION
    assert shown.text.startswith("passed: 3 tests written, not run against an app (no target")


def test_a_failed_run_names_its_stage_and_error_first():
    run = RunFactory(
        status="failed",
        error_type="TargetAnswersErrors",
        error_message="target answers errors only: every page …\nsecond line",
    )
    stages = transitions.create_stages(run)
    Stage.objects.filter(run=run, name="explore_app").update(status="failed")
    shown = verdict(run, list(run.stages.order_by("position")), None)
    assert shown.level == FAILED and len(stages) > 1
    assert shown.text == (
        "failed at Explore App: TargetAnswersErrors: target answers errors only: every page …"
    )


def test_a_running_run_says_where_it_is():
    run = RunFactory(status="running", started_at=timezone.now())
    transitions.create_stages(run)
    Stage.objects.filter(run=run, name="crawl_repo").update(status="running")
    shown = verdict(run, list(run.stages.order_by("position")), None)
    assert (shown.level, shown.text) == (RUNNING, "running at Crawl Repo")


def test_a_run_waiting_for_a_person_asks_for_attention():
    run = RunFactory(status="running", started_at=timezone.now())
    transitions.create_stages(run)
    Stage.objects.filter(run=run, name="create_pull_request").update(status="awaiting_approval")
    shown = verdict(run, list(run.stages.order_by("position")), None)
    assert (shown.level, shown.text) == (ATTENTION, "awaiting approval at Create Pull Request")


def test_the_page_names_the_run_once_and_heads_it_with_the_verdict():
    run = RunFactory(status="passed", repository=RepositoryFactory(full_name="acme/books"))
    ArtifactFactory(run=run, kind="verification_report", content=_report(passed=2, quarantined=1))
    page = _page(run)
    content = page[page.index('id="content"') :]
    assert content.count("acme/books@main") == 1, "the title is shown once in the content"
    line = _verdict_line(page)
    assert "amtp-verdict-attention" in line and ">passed</span>" in line
    assert "3 tests, 1 quarantined (quarantined 0: button “Save” never enabled)" in line


def test_successful_stage_notes_are_remarks_and_failures_warn():
    run = RunFactory(status="passed")
    transitions.create_stages(run)
    Stage.objects.filter(run=run, name="explore_app").update(
        status="passed", note="6 page(s), 2 form(s)"
    )
    Stage.objects.filter(run=run, name="generate_test_cases").update(
        status="passed", note="8 page(s), 0 form(s), 2 answered an error"
    )
    Stage.objects.filter(run=run, name="verify_tests").update(
        status="failed",
        error_type="TargetUnreachable",
        note="the pull request is opened anyway, marked unverified",
    )
    page = _page(run)
    assert '<div class="amtp-remark">6 page(s), 2 form(s)</div>' in page
    assert '<div class="amtp-note">the pull request is opened anyway' in page
    assert '<div class="amtp-note">8 page(s), 0 form(s), 2 answered an error</div>' in page


def test_the_verdict_escapes_hostile_titles_and_errors():
    run = RunFactory(status="failed", error_type="X", error_message=XSS)
    page = _page(run)
    assert XSS not in page and "&lt;script&gt;" in _verdict_line(page)


# --- an app that answers only errors stops at exploration ---------------------------------


def _app_map(*statuses: int) -> dict:
    pages = [{"path": f"/p{i}", "status": s} for i, s in enumerate(statuses)]
    return {"target_url": "http://127.0.0.1:5000/?token=secret", "pages": pages}


def test_exploration_of_an_app_answering_only_errors_stops_the_run():
    with pytest.raises(TargetAnswersErrors) as caught:
        stop_if_errors_only(_app_map(500, 502, 500))
    message = caught.value.message
    assert message.startswith("target answers errors only: every page the exploration visited")
    assert "(500, 502)" in message and "http://127.0.0.1:5000/" in message
    assert "secret" not in message, "the query string (tokens) is not printed"


@pytest.mark.parametrize("statuses", [(500, 200), (404, 500), (302,), ()])
def test_exploration_goes_on_when_any_page_is_not_a_server_error(statuses):
    stop_if_errors_only(_app_map(*statuses))  # raises nothing


# --- the pull request ---------------------------------------------------------------------

BODY = (
    "> 🤖 **Written by a model.**\n\n| test | result |\n|---|---|\n| lists users | ✅ |\n\n"
    "<details><summary>Heals</summary>\n\nnone\n\n</details>\n\n"
    "```sh\nnpx playwright test e2e/amtp\n```\n"
)


def _pull(run, **changes) -> dict:
    content = {**PULL_REQUEST, "run_id": str(run.run_id), **changes}
    ArtifactFactory(run=run, kind="pull_request", content=content)
    return content


def test_a_github_pull_request_is_a_link_with_its_title_and_rendered_body():
    run = RunFactory(status="passed", pr_number=7, pr_url=PULL_REQUEST["url"])
    _pull(run, title="Add 2 end-to-end tests", body=BODY)
    page = _page(run)
    section = page[page.index('id="amtp-pull-request"') :]
    assert 'href="https://github.com/acme/web/pull/7"' in section
    assert "Add 2 end-to-end tests" in section
    assert "<td>lists users</td>" in section and "<details><summary>Heals</summary>" in section
    assert "<strong>Written by a model.</strong>" in section
    assert "git fetch origin amtp/run-3f2b8c1e:amtp/run-3f2b8c1e &amp;&amp; git switch" in section


def test_a_local_pull_request_shows_its_branch_and_commands_to_read_it(tmp_path):
    repo = RepositoryFactory(full_name="me/shop", host="local", local_path=f"{tmp_path}/my shop")
    # A path is the operator's, yet quoted for the shell all the same: spaces, $(…), quotes.
    run = RunFactory(status="passed", repository=repo, pr_number=1)
    _pull(run, host="local", url=f"file://{tmp_path}/my shop#amtp%2Frun-3f2b8c1e", body=BODY)
    page = _page(run)
    section = page[page.index('id="amtp-pull-request"') :]
    assert 'href="file:' not in section, "a file URL is not a link"
    assert f"git -C &#x27;{tmp_path}/my shop&#x27; log --stat main..amtp/run-3f2b8c1e" in section
    assert (
        f"git fetch &#x27;{tmp_path}/my shop&#x27; amtp/run-3f2b8c1e:amtp/run-3f2b8c1e" in section
    )
    assert '<details class="amtp-pr-body" open>' in section
    assert "<li><code>e2e/amtp/users.spec.ts</code></li>" in section
    repo.local_path = "/srv/it's $(touch /tmp/pwned)"
    repo.save()
    section = _page(run)
    assert (
        "git -C &#x27;/srv/it&#x27;&quot;&#x27;&quot;&#x27;s $(touch /tmp/pwned)&#x27; log"
        in section
    )


def test_a_pull_request_recorded_without_its_body_says_so():
    run = RunFactory(status="passed", pr_number=7)
    _pull(run)
    assert "opened before AMTP kept its body" in _page(run)


def test_a_hostile_body_is_rendered_inert():
    hostile = (
        f"{XSS}\n\n<img src=x onerror=alert(1)>\n\n[click](javascript:alert(1)) "
        "![pixel](https://tracker.test/p.png) <details open ontoggle=alert(1)>"
        ' <a href="https://x.test">a</a>'
    )
    html = str(render(hostile))
    assert "<script" not in html and "<img" not in html and '<a href="https://x.test"' not in html
    assert 'href="javascript' not in html and "tracker.test/p.png" not in html
    assert "<details open" not in html and "&lt;details open ontoggle" in html
    run = RunFactory(status="passed", pr_number=7)
    _pull(run, title=XSS, body=hostile)
    page = _page(run)
    assert XSS not in page and "onerror=alert(1)>" not in page


def test_links_in_a_body_open_elsewhere_without_a_referrer():
    html = str(render("[docs](https://playwright.dev/docs/intro)"))
    assert html == (
        '<p><a href="https://playwright.dev/docs/intro" rel="nofollow noopener noreferrer" '
        'target="_blank">docs</a></p>\n'
    )
