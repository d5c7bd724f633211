"""The artifact viewer: bounded previews of multi-megabyte JSON, generated files as code, and
the raw download."""

import json
import time

import pytest
from django.urls import reverse

from tests.admin_helpers import VIEW, change_url, client_for, staff
from tests.factories import ArtifactFactory

pytestmark = pytest.mark.django_db


def _five_megabytes() -> dict:
    cases = [
        {
            "id": f"TC-{i:05d}",
            "title": f"case {i}",
            "steps": ["open the page"] * 8,
            "notes": "n" * 400,
        }
        for i in range(9_000)
    ]
    content = {"run_id": "r", "test_cases": cases, "summary": "s" * 50_000}
    assert len(json.dumps(content)) > 5_000_000
    return content


def test_a_5mb_artifact_renders_a_bounded_preview_quickly_and_downloads_whole(admin_client):
    content = _five_megabytes()
    artifact = ArtifactFactory(
        kind="test_case_generator_output",
        content=content,
        meta={"sanitizer_version": "v1.0.0", "model": "offline"},
    )
    # CPU seconds of this process (the view renders here): rendering all 5 MB would take far
    # longer, and a loaded machine does not fail a bounded preview.
    started = time.process_time()
    response = admin_client.get(change_url(artifact))
    elapsed = time.process_time() - started
    page = response.content.decode()
    assert response.status_code == 200
    assert elapsed < 3, f"viewer took {elapsed:.2f}s"
    assert len(response.content) < 1_000_000
    assert 'id="amtp-truncated"' in page and "Download the complete JSON" in page
    assert '<span class="nt">&quot;test_cases&quot;</span>' in page or "TC-00000" in page
    assert "TC-08999" not in page, "the preview is bounded"
    assert "sanitizer_version" in page and "v1.0.0" in page  # meta beside content
    assert page.count("<details") >= 3  # one collapsible section per top-level key

    download = admin_client.get(reverse("admin:runs_artifact_download", args=[artifact.pk]))
    assert download.status_code == 200
    assert download["Content-Type"].startswith("application/json")
    assert download["Content-Disposition"] == (
        f'attachment; filename="{artifact.run_id}-test_case_generator_output.json"'
    )
    assert json.loads(download.content) == content


def test_pathological_artifacts_stay_bounded(admin_client):
    deep: list = ["bottom"]
    for _ in range(200):
        deep = [deep]
    blob = ArtifactFactory(content={"blob": "x" * 3_000_000, "deep": deep})
    page = admin_client.get(change_url(blob)).content.decode()
    assert len(page) < 300_000 and "[2,998,000 more characters]" in page
    assert "nested deeper than the preview shows" in page
    wide = ArtifactFactory(kind="pull_request", content={f"k{i}": i for i in range(5_000)})
    page = admin_client.get(change_url(wide)).content.decode()
    assert len(page) < 500_000 and "4900 more top-level keys not listed" in page


def test_test_engineer_files_are_rendered_as_highlighted_code(admin_client):
    spec = "import { test, expect } from '@playwright/test';\n\ntest('home', async ({ page }) => {\n  await page.goto('/');\n});\n"
    flow = 'appId: com.acme.app\n---\n- launchApp\n- tapOn: "Sign in"\n'
    artifact = ArtifactFactory(
        kind="test_engineer_output",
        content={
            "run_id": "r",
            "framework": "playwright",
            "pr_title": "E2E",
            "pr_body": "body",
            "base_branch": "main",
            "head_branch": "amtp/r",
            "files": [
                {"path": "e2e/amtp/home.spec.ts", "contents": spec},
                {"path": "e2e/amtp/flows/login.yaml", "contents": flow},
            ],
        },
    )
    page = admin_client.get(change_url(artifact)).content.decode()
    assert "Generated files (2)" in page
    assert "e2e/amtp/home.spec.ts" in page and "TypeScript · 6 lines" in page
    assert '<span class="k">import</span>' in page and '<span class="nx">expect</span>' in page
    assert "e2e/amtp/flows/login.yaml" in page and "YAML" in page
    assert '<span class="nt">appId</span>' in page


def test_artifacts_need_view_permission():
    artifact = ArtifactFactory()
    client = client_for(staff("runs.view_run"))
    assert client.get(change_url(artifact)).status_code == 403
    download = reverse("admin:runs_artifact_download", args=[artifact.pk])
    assert client.get(download).status_code == 403
    assert client_for(staff(*VIEW)).get(download).status_code == 200
