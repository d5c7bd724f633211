"""Two vendored real apps (tests/fixtures/realworld) as local git repositories, each with the
recipe that boots it: for the BootApp tests. The recipes are written out here as the recipe
finder (verification/boot/recipe.py) would give them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.gitrepo import make_git_repo
from tests.realworld_apps import app_repository
from verification.boot.recipe import AppRecipe

# examples/mvc ran on the Express repository's own devDependencies at the vendored commit
# (the same versions scripts/realworld.py installs).
EXPRESS_MVC_PACKAGE = {
    "name": "express-mvc",
    "private": True,
    "scripts": {"start": "node index.js"},
    "dependencies": {
        "express": "5.2.1",
        "ejs": "3.1.10",
        "hbs": "4.2.1",
        "express-session": "1.18.2",
        "method-override": "3.0.0",
        "morgan": "1.11.0",
    },
}

RECIPES = {
    "express-mvc": AppRecipe(
        source="package.json scripts.start",
        start="npm start",
        port=3000,
        install=("npm install --no-audit --no-fund --loglevel=error",),
        lock_files=("package.json",),
    ),
    "flaskr": AppRecipe(
        source="Flask (pyproject.toml)",
        start="flask --app flaskr run --host 127.0.0.1 --port 5000",
        port=5000,
        # `python` is the venv the box makes for a Python recipe (verification/boot/app.py)
        install=("python -m pip install --quiet flask==3.1.3",),
        seed="flask --app flaskr init-db",
        lock_files=("pyproject.toml",),
    ),
}


def app_git_repo(name: str, path: Path) -> str:
    """The vendored app ``name`` committed to a git repository at ``path`` (with the
    package.json express-mvc's folder of the Express repository lacks)."""
    files = app_repository(name)
    if name == "express-mvc":
        files["package.json"] = json.dumps(EXPRESS_MVC_PACKAGE, indent=2) + "\n"
    return make_git_repo(path, files)
