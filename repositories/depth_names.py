"""The file and folder names the depth rules (``repositories/depth.py``) look for.

All lower-case: the rules compare paths case-insensitively. Extensions are without the dot.
"""

from __future__ import annotations

SKIPPED_DIRS = frozenset(
    {
        # version control and editors
        ".git",
        ".hg",
        ".svn",
        ".idea",
        ".vscode",
        # dependencies
        "node_modules",
        "bower_components",
        "jspm_packages",
        "vendor",
        ".venv",
        "venv",
        "site-packages",
        ".yarn",
        ".pnpm-store",
        "pods",
        "carthage",
        ".bundle",
        "elm-stuff",
        ".dart_tool",
        ".pub-cache",
        ".terraform",
        # build output
        "dist",
        "build",
        "_build",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".output",
        ".vercel",
        ".turbo",
        ".expo",
        ".expo-shared",
        "target",
        ".gradle",
        ".cxx",
        "deriveddata",
        "storybook-static",
        # caches and reports
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".cache",
        ".parcel-cache",
        "coverage",
        ".nyc_output",
        "htmlcov",
        "playwright-report",
        "test-results",
    }
)
SKIPPED_DIR_SUFFIXES = (".egg-info",)
SKIPPED_FILES = frozenset({".ds_store", "thumbs.db", "desktop.ini"})

LOCKFILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lock",
        "bun.lockb",
        "poetry.lock",
        "pipfile.lock",
        "pdm.lock",
        "uv.lock",
        "gemfile.lock",
        "podfile.lock",
        "composer.lock",
        "cargo.lock",
        "go.sum",
        "mix.lock",
        "pubspec.lock",
        "packages.lock.json",
        "gradle.lockfile",
        "flake.lock",
        "package.resolved",
    }
)
GENERATED_SUFFIXES = (".min.js", ".min.css", ".map")

BINARY_EXTENSIONS = frozenset(
    {
        # images
        "png",
        "jpg",
        "jpeg",
        "gif",
        "bmp",
        "ico",
        "icns",
        "webp",
        "tif",
        "tiff",
        "psd",
        "heic",
        "heif",
        "avif",
        "raw",
        "xcf",
        "sketch",
        "fig",
        # fonts
        "ttf",
        "otf",
        "woff",
        "woff2",
        "eot",
        # archives and packages
        "zip",
        "tar",
        "gz",
        "tgz",
        "bz2",
        "xz",
        "zst",
        "7z",
        "rar",
        "jar",
        "war",
        "ear",
        "aar",
        "apk",
        "aab",
        "ipa",
        "dmg",
        "iso",
        "deb",
        "rpm",
        "whl",
        "egg",
        "nupkg",
        "lockb",
        # media
        "mp3",
        "mp4",
        "m4a",
        "m4v",
        "aac",
        "wav",
        "ogg",
        "oga",
        "flac",
        "mov",
        "avi",
        "mkv",
        "webm",
        "wmv",
        # compiled objects and executables
        "o",
        "obj",
        "a",
        "lib",
        "so",
        "dylib",
        "dll",
        "exe",
        "bin",
        "class",
        "pyc",
        "pyo",
        "pyd",
        "wasm",
        "node",
        "dex",
        "elf",
        # documents and data
        "pdf",
        "doc",
        "docx",
        "xls",
        "xlsx",
        "ppt",
        "pptx",
        "odt",
        "ods",
        "sqlite",
        "sqlite3",
        "db",
        "pkl",
        "npy",
        "npz",
        "h5",
        "parquet",
        "onnx",
        "pt",
        "pth",
        "ckpt",
        "safetensors",
        # keys and stores
        "keystore",
        "jks",
        "p12",
        "pfx",
        "der",
    }
)

ROOT_MANIFESTS = frozenset(
    {
        # JavaScript / TypeScript
        "package.json",
        "tsconfig.json",
        "deno.json",
        "deno.jsonc",
        "angular.json",
        "pnpm-workspace.yaml",
        "turbo.json",
        "nx.json",
        # Python
        "requirements.txt",
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "pipfile",
        "manage.py",
        # mobile
        "app.json",
        "app.config.js",
        "app.config.ts",
        "eas.json",
        "build.gradle",
        "build.gradle.kts",
        "settings.gradle",
        "settings.gradle.kts",
        "podfile",
        "pubspec.yaml",
        "package.swift",
        # other ecosystems
        "gemfile",
        "go.mod",
        "cargo.toml",
        "composer.json",
        "pom.xml",
        "mix.exs",
        # how the app is started (the Playwright webServer needs this)
        "dockerfile",
        "docker-compose.yml",
        "docker-compose.yaml",
        "compose.yml",
        "compose.yaml",
        "procfile",
        "makefile",
        "vercel.json",
        "netlify.toml",
        # what the project is
        "readme",
        "readme.md",
        "readme.rst",
        "readme.txt",
    }
)
CONFIG_STEMS = frozenset(
    {
        "next.config",
        "vite.config",
        "nuxt.config",
        "svelte.config",
        "astro.config",
        "remix.config",
        "vue.config",
        "webpack.config",
        "gatsby-config",
        "metro.config",
        "react-native.config",
        "playwright.config",
        "cypress.config",
    }
)
CONFIG_EXTENSIONS = frozenset({"js", "cjs", "mjs", "ts", "cts", "mts", "json"})

CODE_EXTENSIONS = frozenset(
    {
        "py",
        "js",
        "jsx",
        "ts",
        "tsx",
        "mjs",
        "cjs",
        "mts",
        "cts",
        "vue",
        "svelte",
        "astro",
        "go",
        "rb",
        "php",
        "dart",
        "kt",
        "java",
        "swift",
        "rs",
        "ex",
        "exs",
        "cs",
        "mdx",
    }
)
TEMPLATE_EXTENSIONS = frozenset({"html", "htm", "jinja", "jinja2", "j2", "erb", "hbs", "ejs"})
ENTRY_STEMS = frozenset(
    {
        "index",
        "main",
        "app",
        "server",
        "layout",
        "page",
        "_app",
        "_layout",
        "wsgi",
        "asgi",
        "urls",
        "routes",
        "router",
        "__main__",
        "manage",
    }
)
ROUTE_DIRS = frozenset(
    {
        "app",
        "pages",
        "routes",
        "route",
        "api",
        "views",
        "screens",
        "navigation",
        "navigators",
        "controllers",
        "handlers",
        "endpoints",
        "router",
        "routers",
        "blueprints",
    }
)
ROUTE_FILE_STEMS = frozenset(
    {"urls", "views", "routes", "router", "routing", "navigation", "navigator", "api"}
)
ROUTE_FILE_SUFFIXES = (".routes", "-routing.module", ".routing", "-routing", ".router")

TEST_DIRS = frozenset(
    {
        "test",
        "tests",
        "__tests__",
        "__mocks__",
        "__snapshots__",
        "spec",
        "specs",
        "e2e",
        "cypress",
        "playwright",
        ".maestro",
        "maestro",
        "testing",
        "androidtest",
    }
)
DOC_DIRS = frozenset({"docs", "doc", "documentation"})
# File-routing folders (Next.js pages and app routers): a docs folder inside one is part of
# the site (`pages/docs/intro.tsx` is the page /docs/intro), not its documentation.
FILE_ROUTE_DIRS = frozenset({"pages", "app"})
DOC_EXTENSIONS = frozenset({"md", "rst", "adoc", "asciidoc"})
DOC_STEMS = frozenset(
    {"license", "licence", "copying", "changelog", "changes", "authors", "notice", "contributing"}
)
ASSET_DIRS = frozenset({"assets", "static", "public", "images", "img", "fonts", "icons", "media"})
ASSET_DIR_SUFFIXES = (".xcassets", ".imageset")
ASSET_EXTENSIONS = frozenset({"svg", "csv", "tsv"})
