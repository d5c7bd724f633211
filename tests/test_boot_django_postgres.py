"""A Django app that needs PostgreSQL boots with its throwaway database and its migrations:
tests/fixtures/django-postgres (settings from DATABASE_URL through dj-database-url, a schema
and a data migration) committed to a local git repository, its recipe found in its own files
(no repository settings), installed through the registries' proxy and started in the real
sandbox. Its first install downloads Django and psycopg: ~30-60 s on the shared machine."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import pytest

from repositories.hosts.local import LocalGitHost
from tests.gitrepo import make_git_repo
from verification.boot.app import booted
from verification.boot.recipe import recipe_at

pytestmark = pytest.mark.skipif(
    not os.path.exists("/usr/bin/bwrap"), reason="bubblewrap is a requirement of the worker"
)
APP = Path(__file__).parent / "fixtures" / "django-postgres"


def _files() -> dict[str, bytes]:
    return {
        str(p.relative_to(APP)): p.read_bytes()
        for p in APP.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def _get(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as answer:
        assert answer.status == 200
        return answer.read().decode()


def test_a_django_app_on_postgres_boots_migrated_on_a_throwaway_database(tmp_path, settings):
    settings.AMTP_BOOT_CACHE_DIR = tmp_path / "cache"
    settings.AMTP_BOOT_READY_TIMEOUT_S = 60.0
    make_git_repo(tmp_path / "repo", _files())
    host = LocalGitHost("acme/shop", tmp_path / "repo")
    commit = host.resolve_ref("main")

    recipe = recipe_at(host, commit, None)
    assert recipe.source == "from manage.py (Django)"
    assert recipe.services == ("postgres",)
    assert recipe.seed == "python manage.py migrate --noinput"
    assert recipe.install == ("python -m pip install -r requirements.txt",)

    with booted(host, commit, recipe, {}) as app:
        page = _get(app.url + "/")
        # the data migration's products, read from PostgreSQL's jsonb-holding table
        assert "Espresso cup" in page and "Tea towel" in page
        assert "Served from PostgreSQL 16" in page, page[-400:]
        assert "Tags: kitchen, linen" in _get(app.url + "/products/2/")
        assert list(app.summary()["recipe"]["services"]) == ["postgres"]
        sockets = app.box.work / ".amtp-services"
        assert sockets.is_dir()
    assert not app.box.root.exists()  # the database's data went with the box
