"""The app recipe: found in a repository's own files, in order, each source named; the
repository's settings override any field; what AMTP cannot run is named, with the settings
to fill in. The layouts follow real projects' files (each cites where its shape comes from);
nothing of them is run."""

import pytest

from repositories.boot_settings import RepositoryBootSettings
from repositories.hosts.local import LocalGitHost
from tests.gitrepo import make_git_repo
from verification.boot.errors import RecipeNotFound, RecipeUnsupported
from verification.boot.playwright_config import web_servers
from verification.boot.recipe import AppRecipe, find_recipe, recipe_at, recipe_paths

# Shape of vercel/next.js examples/with-playwright/playwright.config.ts: a typed const config,
# `port: process.env.PORT || 3000`, exported at the end.
NEXT_CONFIG = """import { PlaywrightTestConfig, devices } from '@playwright/test'
import path from 'path'
const config: PlaywrightTestConfig = {
  timeout: 30 * 1000,
  testDir: path.join(__dirname, 'e2e'),
  webServer: {
    command: 'npm run dev',
    port: process.env.PORT || 3000,
    timeout: 120 * 1000,
    reuseExistingServer: !process.env.CI,
  },
  projects: [{ name: 'Desktop Chrome', use: { ...devices['Desktop Chrome'] } }],
}
export default config
"""
# Shape of `npm init playwright`'s template (microsoft/playwright, create-playwright): the
# defineConfig form, the url with a template string and a const port, an env block.
INIT_CONFIG = """import { defineConfig, devices } from '@playwright/test';
const PORT = Number(process.env.PORT ?? 4000);
export default defineConfig({
  testDir: './tests',
  use: { baseURL: `http://127.0.0.1:${PORT}` },
  webServer: [{
    command: "npm run start:e2e",
    url: `http://127.0.0.1:${PORT}/health`,
    cwd: "../server",
    env: { NODE_ENV: "test", FEATURE_X: `on` },
    reuseExistingServer: !process.env.CI,
  }, { command: "npm run mock", port: 4010 }],
});
"""
NODE_PACKAGE = '{"name": "shop", "scripts": {"start": "node server.js", "test": "jest"}}'
# Shape of a Vite app's package.json (vitejs/vite create-vite template-react).
VITE_PACKAGE = (
    '{"scripts": {"dev": "vite", "build": "tsc -b && vite build", "lint": "eslint .", '
    '"preview": "vite preview"}}'
)
# Shape of the devcontainers/templates javascript-node-postgres template: JSONC comments,
# tabs, a commented-out forwardPorts, postCreateCommand "npm install".
DEVCONTAINER_NODE = """// For format details, see https://aka.ms/devcontainer.json.
{
\t"name": "Node.js & PostgreSQL",
\t"dockerComposeFile": "docker-compose.yml",
\t"service": "app",
\t// "forwardPorts": [3000, 5432],
\t"postCreateCommand": "npm install",
\t"customizations": { "vscode": { "extensions": ["dbaeumer.vscode-eslint",] } },
}
"""
# Shape of simonw's Django Codespaces set-up (pillarpointstewards): the server started by
# postAttachCommand as an object, forwardPorts [8000].
DEVCONTAINER_DJANGO = """{
  "postCreateCommand": "pip install -r requirements.txt",
  "postAttachCommand": {"server": "python manage.py runserver"},
  "forwardPorts": [8000]
}"""


def test_playwright_web_server_wins_and_resolves_env_defaults():
    recipe = find_recipe(
        {"playwright.config.ts": NEXT_CONFIG, "package.json": NODE_PACKAGE, "Procfile": "web: x"},
        None,
    )
    assert recipe.source == "from playwright.config.ts webServer"
    assert (recipe.start, recipe.port, recipe.workdir) == ("npm run dev", 3000, ".")
    assert recipe.install == ("npm install",)


def test_playwright_config_in_a_folder_runs_from_its_cwd():
    files = {
        "e2e/playwright.config.ts": INIT_CONFIG,
        "server/package.json": NODE_PACKAGE,
        "server/package-lock.json": "{}",
    }
    recipe = find_recipe(files, None)
    assert recipe.source == "from e2e/playwright.config.ts webServer (the first of 2)"
    assert (recipe.start, recipe.port, recipe.ready_path) == ("npm run start:e2e", 4000, "/health")
    assert recipe.workdir == "server"
    assert recipe.env == (("NODE_ENV", "test"), ("FEATURE_X", "on"))
    assert recipe.install == ("npm ci",)
    assert recipe.lock_files == ("server/package-lock.json",)


@pytest.mark.parametrize(
    ("server", "field"),
    [
        ("command: os.platform() === 'win32' ? 'a.cmd' : 'a', port: 3000", "command"),
        ("command: getCommand(), port: 3000", "command"),
        ("command: 'npm start', port: ports.web", "port"),
        ("command: 'npm start', url: base + '/x'", "url"),
        ("command: 'npm start'", "url or port"),
        ("command: 'npm start', url: 'http://localhost:99999'", "url or port"),
        ("command: 'npm start', url: 'http://[::1'", "url or port"),
        ("command: 'npm start', url: 'http://localhost/'", "url or port"),
        ("command: 'npm start', port: 80", "url or port"),
        ("command: 'npm start', port: 3000, cwd: '../../elsewhere'", "cwd"),
    ],
)
def test_a_web_server_that_needs_running_is_named_by_field(server, field):
    config = f"export default defineConfig({{ webServer: {{ {server} }} }})"
    with pytest.raises(RecipeUnsupported) as caught:
        find_recipe({"playwright.config.ts": config}, None)
    assert f"webServer.{field}" in caught.value.message
    assert caught.value.details["fields"] == ["boot_start", "boot_port"]


def test_a_config_without_web_server_falls_through_to_the_next_source():
    config = "export default defineConfig({ testDir: './e2e', use: { baseURL: 'http://x' } })"
    recipe = find_recipe({"playwright.config.ts": config, "package.json": NODE_PACKAGE}, None)
    assert recipe.source == "from package.json scripts.start"


def test_the_config_is_parsed_not_run():
    hostile = """import { execSync } from 'child_process';
execSync('touch /tmp/amtp-recipe-ran');
export default { webServer: { command: `${execSync('id')}`, port: 3000 } };"""
    assert web_servers(hostile)[0].unreadable == ("command",)


def test_devcontainer_gives_install_and_port_and_the_next_source_the_start():
    files = {
        ".devcontainer/devcontainer.json": DEVCONTAINER_NODE.replace(
            '// "forwardPorts', '"forwardPorts'
        ),
        "package.json": VITE_PACKAGE,
    }
    recipe = find_recipe(files, None)
    assert recipe.source == (
        "from .devcontainer/devcontainer.json postCreateCommand, forwardPorts; start from "
        "package.json scripts.build + preview"
    )
    assert recipe.install == ("npm install",)
    assert (recipe.start, recipe.port, dict(recipe.env)["PORT"]) == (
        "npm run preview",
        3000,
        "3000",
    )


def test_devcontainer_start_command_and_jsonc():
    recipe = find_recipe({".devcontainer/devcontainer.json": DEVCONTAINER_DJANGO}, None)
    assert recipe.source == (
        "from .devcontainer/devcontainer.json postCreateCommand, forwardPorts, postAttachCommand"
    )
    assert (recipe.start, recipe.port) == ("python manage.py runserver", 8000)


def test_devcontainer_without_a_start_anywhere_says_so():
    with pytest.raises(RecipeUnsupported) as caught:
        find_recipe({".devcontainer/devcontainer.json": DEVCONTAINER_NODE}, None)
    assert "postCreateCommand" in caught.value.message
    assert caught.value.details["fields"] == ["boot_start"]


def test_procfile_web_line_with_heroku_port():
    # Shape of heroku/python-getting-started's Procfile.
    files = {
        "Procfile": "release: ./manage.py migrate --no-input\nweb: gunicorn gettingstarted.wsgi\n",
        "requirements.txt": "django\ngunicorn\n",
        "manage.py": "",
    }
    recipe = find_recipe(files, None)
    assert recipe.source == "from Procfile web"
    assert (recipe.start, recipe.port, recipe.env) == (
        "gunicorn gettingstarted.wsgi",
        5000,
        (("PORT", "5000"),),
    )
    assert recipe.install == ("python -m pip install -r requirements.txt",)


@pytest.mark.parametrize(
    ("scripts", "start", "install", "port"),
    [
        (
            '{"start": "next start -p 4100", "build": "next build", "dev": "next dev"}',
            "npm run start",
            ("npm run build",),
            4100,
        ),
        (VITE_PACKAGE.split(":", 1)[1][:-1], "npm run preview", ("npm run build",), 4173),
        ('{"dev": "vite --port 5200"}', "npm run dev", (), 5200),
        ('{"dev": "astro dev"}', "npm run dev", (), 4321),
    ],
)
def test_package_json_scripts_in_order(scripts, start, install, port):
    files = {"package.json": f'{{"scripts": {scripts}}}', "yarn.lock": ""}
    recipe = find_recipe(files, None)
    run = start.replace("npm run", "yarn")
    assert (recipe.start, recipe.port) == (run, port)
    assert recipe.install == (
        "yarn install --frozen-lockfile",
        *(c.replace("npm run", "yarn") for c in install),
    )
    assert recipe.lock_files == ("yarn.lock",)


def test_django_migrates_then_runs_with_postgres_when_it_depends_on_psycopg():
    files = {"manage.py": "", "requirements.txt": "Django==5.2\npsycopg[binary]\nredis\n"}
    recipe = find_recipe(files, None)
    assert recipe.source == "from manage.py (Django)"
    assert recipe.seed == "python manage.py migrate --noinput"
    assert recipe.start == "python manage.py runserver 127.0.0.1:8000 --noreload"
    assert recipe.services == ("postgres", "valkey")


@pytest.mark.parametrize(
    ("path", "source", "deps", "start", "port"),
    [
        # pallets/flask examples/tutorial: an app factory in flaskr/__init__.py
        (
            "flaskr/__init__.py",
            "def create_app(test_config=None):\n    app = Flask(__name__)\n",
            "flask",
            "flask --app flaskr run --host 127.0.0.1 --port 5000",
            5000,
        ),
        (
            "app.py",
            "from flask import Flask\napp = Flask(__name__)\n",
            "Flask>=3",
            "flask --app app:app run --host 127.0.0.1 --port 5000",
            5000,
        ),
        # tiangolo's FastAPI layout: app/main.py with `app = FastAPI()`
        (
            "app/main.py",
            "from fastapi import FastAPI\napp = FastAPI()\n",
            "fastapi[standard]",
            "uvicorn app.main:app --host 127.0.0.1 --port 8000",
            8000,
        ),
        (
            "main.py",
            "from starlette.applications import Starlette\napi = Starlette(routes=r)\n",
            "starlette\nuvicorn",
            "uvicorn main:api --host 127.0.0.1 --port 8000",
            8000,
        ),
    ],
)
def test_python_apps_with_their_dependency_files(path, source, deps, start, port):
    recipe = find_recipe({path: source, "requirements.txt": deps}, None)
    assert (recipe.start, recipe.port) == (start, port)
    assert recipe.install == ("python -m pip install -r requirements.txt",)


def test_an_app_object_without_its_dependency_declared_is_not_a_recipe():
    with pytest.raises(RecipeNotFound):
        find_recipe({"app.py": "app = Flask(__name__)\n"}, None)


@pytest.mark.parametrize("name", ["docker-compose.yml", "compose.yaml", "Dockerfile"])
def test_containers_are_named_as_unsupported(name):
    with pytest.raises(RecipeUnsupported) as caught:
        find_recipe({name: "services: {}"}, None)
    assert caught.value.message.startswith(f"the app is declared in {name}")
    assert "boot_start" in caught.value.details["fields"]


def test_nothing_found_lists_what_was_looked_for():
    with pytest.raises(RecipeNotFound) as caught:
        find_recipe({"README.md": "hello"}, None)
    assert "playwright.config.* webServer" in caught.value.message
    assert caught.value.retryable is False


def test_settings_override_any_field_and_say_so():
    overrides = RepositoryBootSettings(port=4500, seed="npm run seed", secret_env=("API_KEY",))
    recipe = find_recipe({"package.json": NODE_PACKAGE}, overrides)
    assert recipe.source == (
        "from package.json scripts.start; port, seed, secret_env from repository settings"
    )
    assert (recipe.port, recipe.seed, recipe.secret_env) == (4500, "npm run seed", ("API_KEY",))
    assert dict(recipe.env)["PORT"] == "4500"
    assert recipe.start == "npm run start"


def test_settings_alone_make_a_recipe_even_over_a_compose_file():
    overrides = RepositoryBootSettings(start="make serve", port=8080, services=("postgres",))
    recipe = find_recipe({"docker-compose.yml": ""}, overrides)
    assert recipe == AppRecipe(
        source="repository settings", start="make serve", port=8080, services=("postgres",)
    )
    with pytest.raises(RecipeUnsupported):
        find_recipe({"docker-compose.yml": ""}, RepositoryBootSettings(start="make serve"))


@pytest.mark.parametrize(
    "text",
    ["{not json", "[]", '{"scripts": []}', '{"scripts": {"start": 5}}', "null"],
)
def test_hostile_package_json_is_no_recipe(text):
    with pytest.raises(RecipeNotFound):
        find_recipe({"package.json": text}, None)


@pytest.mark.parametrize(
    "text", ['{"forwardPorts": "3000"}', "[1]", '{"forwardPorts": [22, true, "x:1"]}']
)
def test_hostile_devcontainer_is_no_recipe(text):
    with pytest.raises(RecipeNotFound):
        find_recipe({".devcontainer/devcontainer.json": text}, None)


def test_only_the_files_the_sources_read_are_fetched():
    tree = [
        "playwright.config.ts",
        "apps/web/playwright.config.ts",
        "node_modules/x/playwright.config.ts",
        "package.json",
        "web/package.json",
        "a/b/package.json",
        ".env",
        "settings/.env.production",
        "app.py",
        "src/deep/main.py",
        "app/main.py",
        "Procfile",
        "docs/index.md",
    ]
    assert recipe_paths(tree) == [
        "playwright.config.ts",
        "apps/web/playwright.config.ts",
        "package.json",
        "web/package.json",
        "app.py",
        "app/main.py",
        "Procfile",
    ]


def test_recipe_at_reads_through_the_host(tmp_path):
    files = {"package.json": NODE_PACKAGE, "package-lock.json": "{}", ".env": "SECRET=1"}
    host = LocalGitHost("acme/shop", make_git_repo(tmp_path / "repo", files))
    recipe = recipe_at(host, host.resolve_ref("main"), None)
    assert (recipe.start, recipe.install) == ("npm run start", ("npm ci",))


def test_a_node_server_file_without_start_script():
    # Shape of expressjs/express examples/mvc/index.js: no package.json of its own, and
    # `app.listen(3000)` at the end.
    source = "var express = require('express');\nvar app = module.exports = express();\n"
    recipe = find_recipe({"index.js": source + "app.listen(3000);\n"}, None)
    assert (recipe.source, recipe.start, recipe.port) == (
        "from index.js (.listen)",
        "node index.js",
        3000,
    )
    recipe = find_recipe({"server.js": "app.listen(process.env.PORT || 8080, () => {})"}, None)
    assert recipe.port == 8080


def test_a_web_server_behind_an_environment_switch_is_read_as_the_box_sees_it():
    # Shape of fastapi/full-stack-fastapi-template frontend/playwright.config.ts: no server when
    # PLAYWRIGHT_BASE_URL is set, else `bun run dev` on a const baseURL with a ?? default.
    config = """const baseURL = process.env.PLAYWRIGHT_BASE_URL ?? 'http://localhost:5173'
export default defineConfig({
  use: { baseURL },
  webServer: process.env.PLAYWRIGHT_BASE_URL
    ? undefined
    : { command: 'bun run dev', url: baseURL, reuseExistingServer: !process.env.CI },
});"""
    files = {
        "frontend/playwright.config.ts": config,
        "frontend/bun.lockb": "",
        "frontend/package.json": "{}",
    }
    recipe = find_recipe(files, None)
    assert (recipe.start, recipe.port, recipe.workdir) == ("bun run dev", 5173, "frontend")
    assert recipe.install == ("bun install --frozen-lockfile",)
    negated = "export default { webServer: !process.env.URL ? { command: 'a', port: 4000 } : null }"
    assert web_servers(negated)[0].command == "a"
    assert web_servers(negated.replace("!process", "process")) == []  # unset: no server
    ci = "export default { webServer: { command: process.env.CI ? 'start' : 'dev', port: 4000 } }"
    assert web_servers(ci)[0].command == "dev"  # the box is no CI


def test_test_and_docs_folders_are_not_the_app():
    files = {"tests/main.py": "app = FastAPI()\n", "requirements.txt": "fastapi\n"}
    with pytest.raises(RecipeNotFound):
        find_recipe({p: t for p, t in files.items() if p in recipe_paths(files)}, None)
