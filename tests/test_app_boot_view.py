"""The run's own app as BootApp left it, on the run page and in the API: the recipe used and
where it came from, install and boot times, the scrubbed log tail; or the bad recipe's error
(a boot failure that ended the run stores no artifact: its stage's error is shown)."""

import pytest

from runs import transitions
from runs.models import Stage
from tests import api_support
from tests.admin_helpers import VIEW, XSS, change_url, client_for, staff
from tests.factories import ArtifactFactory, RunFactory
from verification.boot.recipe import AppRecipe

pytestmark = pytest.mark.django_db
make_token, client = api_support.make_token, api_support.client

RECIPE = AppRecipe(
    source="from playwright.config.ts webServer",
    start="npm run start",
    port=3000,
    install=("npm ci",),
    secret_env=("API_TOKEN",),
    services=("postgres",),
    lock_files=("package-lock.json",),
)
BOOTED = {
    "status": "booted",
    "recipe": RECIPE.as_config(),
    "install_s": 12.34,
    "boot_s": 1.5,
    "dependencies_from_cache": True,
    "log_tail": f"listening on 3000\n{XSS}",
}
FAILED_MESSAGE = (
    "start command `npm run start` (exit code 1): ended before answering on port 3000; "
    "last lines of its log:\nError: Cannot find module 'missing.js'"
)


def _booted_run():
    run = RunFactory(status="passed")
    ArtifactFactory(run=run, kind="app_boot", schema_id="boot/app_boot", content=BOOTED)
    return run


def _failed_run():
    run = RunFactory(status="failed", error_type="AppExited", error_message=FAILED_MESSAGE)
    transitions.create_stages(run)
    Stage.objects.filter(run=run, name="boot_app").update(
        status="failed", error_type="AppExited", error_message=FAILED_MESSAGE
    )
    return run


def _section(run) -> str:
    page = client_for(staff(*VIEW)).get(change_url(run)).content.decode()
    if 'id="amtp-app-boot"' not in page:
        return ""
    start = page.index('id="amtp-app-boot"')
    return page[start : page.index('<div class="amtp-section"', start)]


def test_the_page_shows_the_recipe_its_source_times_and_the_escaped_log():
    section = _section(_booted_run())
    assert "recipe from playwright.config.ts webServer" in section
    assert "<code>npm run start</code>" in section and "on port 3000" in section
    assert "installed in 12.3 s (dependencies from the cache)" in section
    assert "ready in 1.5 s" in section and "<code>npm ci</code>" in section
    assert "<code>API_TOKEN</code> (secret)" in section and "postgres" in section
    assert XSS not in section and "&lt;script&gt;" in section


def test_a_bad_recipe_error_is_on_the_page():
    section = _section(_failed_run())
    assert "<strong>AppExited</strong>" in section
    assert "start command `npm run start` (exit code 1)" in section
    assert "Cannot find module" in section


def test_a_run_with_a_target_url_has_no_boot_section():
    run = RunFactory(status="passed", target_url="http://app.test/")
    transitions.create_stages(run)
    assert _section(run) == ""


def test_the_api_gives_the_recipe_and_the_bad_recipe_error(client):
    booted = client.get(f"/api/runs/{_booted_run().run_id}").json()["app_recipe"]
    assert booted["status"] == "booted" and booted["source"] == RECIPE.source
    assert booted["recipe"]["start"] == "npm run start" and booted["recipe"]["port"] == 3000
    assert (booted["install_s"], booted["boot_s"]) == (12.34, 1.5)
    assert booted["dependencies_from_cache"] is True and booted["log_tail"].endswith(XSS)
    assert (booted["error"], booted["message"]) == ("", "")
    failed = client.get(f"/api/runs/{_failed_run().run_id}").json()["app_recipe"]
    assert (failed["status"], failed["error"], failed["message"]) == (
        "failed",
        "AppExited",
        FAILED_MESSAGE,
    )
    assert failed["recipe"] is None and failed["source"] == ""
    plain = RunFactory(status="passed", target_url="http://app.test/")
    assert client.get(f"/api/runs/{plain.run_id}").json()["app_recipe"] is None
