"""A generated Next.js monorepo of any size whose routes and pages are known: the 10k-file
end-to-end test and ``scripts/bench_scale.py`` measure against it.

Like a real Next.js monorepo: pages and API routes under ``src/pages`` (``ROUTES``: 20 pages,
10 API route files, some dynamic), ``next.config.js`` and a root ``package.json`` naming
``next``; the rest grows with the size asked for: 120 workspace packages nested 3-8 folders
deep (each with its own ``package.json``, and some ``api/`` and ``views/`` folders that look
like routes but are not the app's), tests, docs, ``node_modules``, build output and binaries.
The route count stays under the ``standard`` depth's cap of 40 test cases, so recall measures
what the bounded views lose, not the cap.
"""

from __future__ import annotations

import json
import random

from agents.offline.common import sample_path

# file under src/pages -> its route; API routes list the methods their handler answers.
ROUTES: dict[str, str] = {
    "index.tsx": "/",
    "about.tsx": "/about",
    "pricing.tsx": "/pricing",
    "contact.tsx": "/contact",
    "search.tsx": "/search",
    "login.tsx": "/login",
    "signup.tsx": "/signup",
    "help.tsx": "/help",
    "blog/index.tsx": "/blog",
    "blog/[slug].tsx": "/blog/{slug}",
    "account/settings.tsx": "/account/settings",
    "account/billing.tsx": "/account/billing",
    "orders/index.tsx": "/orders",
    "orders/[id].tsx": "/orders/{id}",
    "products/index.tsx": "/products",
    "products/[id].tsx": "/products/{id}",
    "guides/[...slug].tsx": "/guides/{slug}",
    "dashboard/index.tsx": "/dashboard",
    "dashboard/reports.tsx": "/dashboard/reports",
    "team/members.tsx": "/team/members",
    "api/health.ts": "/api/health",
    "api/orders/index.ts": "/api/orders",
    "api/orders/[id].ts": "/api/orders/{id}",
    "api/products.ts": "/api/products",
    "api/auth/login.ts": "/api/auth/login",
    "api/auth/logout.ts": "/api/auth/logout",
    "api/search.ts": "/api/search",
    "api/users/[id].ts": "/api/users/{id}",
    "api/webhooks/stripe.ts": "/api/webhooks/stripe",
    "api/metrics.ts": "/api/metrics",
}
AREAS = ["billing", "orders", "catalog", "search", "auth", "reports", "admin", "profile"]
PACKAGES = 120
BINARY = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256))


def _page(route: str) -> str:
    title = route.strip("/").replace("/", " ").replace("{", "").replace("}", "") or "home"
    return (
        "import Layout from '../components/Layout';\n\n"
        f"export default function Page() {{\n  return <Layout><h1>{title.title()}</h1></Layout>;\n}}\n"
    )


def _api(route: str) -> str:
    return (
        "export default function handler(req, res) {\n"
        "  if (req.method === 'GET') return res.status(200).json({ ok: true });\n"
        f"  res.status(405).json({{ route: '{route}' }});\n}}\n"
    )


def _module(path: str, rng: random.Random) -> str:
    name = path.rsplit("/", 1)[-1].split(".")[0]
    body = "".join(f"  const v{i} = {rng.randrange(1000)};\n" for i in range(rng.randrange(3, 12)))
    return f"// {path}\nexport function {name.replace('-', '_')}() {{\n{body}  return 0;\n}}\n"


def _fixed_files() -> dict[str, str]:
    files = {
        "package.json": json.dumps(
            {
                "name": "acme-shop",
                "private": True,
                "workspaces": ["packages/*"],
                "scripts": {"dev": "next dev", "build": "next build", "start": "next start"},
                "dependencies": {"next": "14.2.0", "react": "18.3.0", "react-dom": "18.3.0"},
            },
            indent=2,
        ),
        "next.config.js": "module.exports = { reactStrictMode: true };\n",
        "tsconfig.json": '{"compilerOptions": {"strict": true, "jsx": "preserve"}}\n',
        "README.md": "# Acme shop\n\npnpm install && pnpm dev\n",
        "pnpm-workspace.yaml": "packages:\n  - packages/*\n",
        "src/pages/_app.tsx": "export default function App({ Component, pageProps }) {\n"
        "  return <Component {...pageProps} />;\n}\n",
        "src/pages/_document.tsx": "export { default } from 'next/document';\n",
        "src/pages/404.tsx": "export default function NotFound() { return <h1>Not found</h1>; }\n",
        "src/components/Layout.tsx": "export default function Layout({ children }) {\n"
        "  return <main>{children}</main>;\n}\n",
    }
    for rel, route in ROUTES.items():
        files[f"src/pages/{rel}"] = _api(route) if rel.startswith("api/") else _page(route)
    for i in range(PACKAGES):
        files[f"packages/pkg-{i:03d}/package.json"] = json.dumps(
            {"name": f"@acme/pkg-{i:03d}", "version": "1.0.0", "main": "src/index.ts"}
        )
        files[f"packages/pkg-{i:03d}/src/index.ts"] = f"export * from './{AREAS[i % 8]}';\n"
    return files


def _grown_path(i: int, rng: random.Random) -> str:
    """The i-th generated file: mostly package sources, plus tests, docs and what crawls drop."""
    pkg = f"packages/pkg-{i % PACKAGES:03d}"
    area = AREAS[(i // PACKAGES) % len(AREAS)]
    kind = rng.random()
    if kind < 0.60:
        nest = "/".join(rng.choice(["lib", "ui", "core", "utils"]) for _ in range(rng.randrange(4)))
        return f"{pkg}/src/{area}/{nest + '/' if nest else ''}mod{i}.ts"
    if kind < 0.64:  # folders named like routes that are not the app's routes
        return rng.choice([f"{pkg}/src/api/client{i}.ts", f"{pkg}/src/views/View{i}.tsx"])
    if kind < 0.72:
        return rng.choice([f"{pkg}/src/__tests__/mod{i}.test.ts", f"e2e/{area}/flow{i}.spec.ts"])
    if kind < 0.75:
        return f"docs/{area}/guide{i}.md"
    if kind < 0.90:
        return f"node_modules/dep-{i % 300}/lib/file{i}.js"
    return rng.choice(
        [f"dist/assets/chunk{i}.js", f"{pkg}/dist/index{i}.js", f"public/images/photo{i}.png"]
    )


def generate(n_files: int, seed: int = 11) -> dict[str, str | bytes]:
    """``n_files`` files (at least the fixed ones), the same for the same arguments."""
    rng = random.Random(seed)
    files: dict[str, str | bytes] = dict(_fixed_files())
    i = 0
    while len(files) < n_files:
        path = _grown_path(i, rng)
        files[path] = BINARY if path.endswith(".png") else _module(path, rng)
        i += 1
    return files


def route_files() -> dict[str, str]:
    """Repository path → route, for every page and API route the generated app has."""
    return {f"src/pages/{rel}": route for rel, route in ROUTES.items()}


def recall(test_files: list[dict]) -> tuple[float, list[str]]:
    """(share of the route/page files whose route a generated test visits, the missed files).
    A route counts when its sample URL (or its does-not-exist variant) is quoted in a test."""
    text = "\n".join(f["contents"] for f in test_files)
    missed = [
        path
        for path, route in route_files().items()
        if f'"{sample_path(route)}"' not in text
        and f'"{sample_path(route, missing=True)}"' not in text
    ]
    return 1 - len(missed) / len(ROUTES), missed
