"""The offline provider's rules on sample repositories of every supported stack.

Pure functions only (no Django): detect → crawler output → cases at each depth → files, each
checked against the contract schemas, tree-sitter, YAML and the Test Engineer's file policy.
"""

from __future__ import annotations

import json

import pytest

from agents.offline import DEPTHS, MAX_READS, detect, generate_cases, generate_files, plan_reads
from schemas.errors import ContractViolation
from tests.offline_checks import (
    EVIL,
    EXPECTED,
    HOSTILE,
    MOBILE,
    ORDER,
    RANK,
    REPOS,
    RUN_ID,
    TEST_DIR,
    WEB,
    assert_valid,
    check_maestro,
    commands_of,
    crawl,
    engineer_input,
    joined,
    playwright_files,
)

# --- Repo Crawler -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REPOS))
def test_detect_finds_the_expected_stack(name: str) -> None:
    repo, want = REPOS[name], EXPECTED[name]
    output = crawl(repo)
    assert_valid("repo_crawler/output", output)
    stack = output["detected_stack"]
    assert {e["path"] for e in output["entry_points"]} <= set(repo)
    assert len(output["entry_points"]) >= 3
    routes = {(r["method"], r["path"]) for r in stack["routes"]}
    assert want.get("routes", set()) <= routes, want.get("routes", set()) - routes
    pages = {p["route"] for p in stack["pages"]}
    assert want.get("pages", set()) <= pages, want.get("pages", set()) - pages
    screens = {s["name"] for s in stack["screens"]}
    assert want.get("screens", set()) <= screens, want.get("screens", set()) - screens
    assert want["frameworks"] <= set(stack["frameworks"])
    mobile = name in MOBILE
    assert stack["platform"] == ("mobile" if mobile else "web")
    assert stack["suggested_framework"] == ("maestro" if mobile else "playwright")
    assert stack.get("app_id") == want.get("app_id")
    for item in stack["routes"] + stack["pages"] + stack["screens"]:
        assert item["file"] in repo


def test_detect_specific_details() -> None:
    express = crawl(EXPRESS := REPOS["express"])["detected_stack"]
    assert not [r for r in express["routes"] if "rates" in r["path"]]  # axios.get is a client call
    kinds = {e["path"]: e["kind"] for e in crawl(EXPRESS)["entry_points"]}
    assert kinds["src/routes/users.js"] == "api_route" and kinds["package.json"] == "config"
    assert kinds["test/users.test.js"] == "test_fixture"
    react = crawl(REPOS["react"])["detected_stack"]
    assert "/api/stats" not in {p["route"] for p in react["pages"]}
    assert {"route": "/about", "file": "src/pages/About.tsx", "heading": "About the dashboard"} in (
        react["pages"]
    )
    nextjs = crawl(REPOS["nextjs"])["detected_stack"]
    assert {p["route"]: p.get("heading") for p in nextjs["pages"]}["/"] == "Welcome to Acme"
    assert not [p for p in nextjs["pages"] if "_app" in p["file"] or "_components" in p["file"]]
    expo = {s["name"]: s for s in crawl(REPOS["expo"])["detected_stack"]["screens"]}
    assert expo["Cart"]["deep_link"] == "acmeshop://cart" and expo["Cart"]["tab_label"] == "Cart"
    assert expo["Home"]["root"] is True and expo["Product detail"]["route"] == "/product/{id}"
    android = {s["name"]: s for s in crawl(REPOS["android"])["detected_stack"]["screens"]}
    assert android["Main"]["root"] is True
    assert android["Note detail"]["deep_link"] == "acmenotes://note"
    assert android["Settings"]["title"] == "Settings"
    ios = {s["name"]: s for s in crawl(REPOS["ios"])["detected_stack"]["screens"]}
    assert ios["Content"]["root"] is True and ios["Todo list"]["tab_label"] == "Todos"
    assert "Todo row" not in ios  # row sub-views are not screens


def test_plan_reads_is_bounded_and_prefers_manifests() -> None:
    big = [f"src/routes/r{i}.js" for i in range(500)] + [
        f"node_modules/x/{i}.js" for i in range(50)
    ]
    big += ["package.json", "README.md", "docs/guide.md", "backend/requirements.txt"]
    reads = plan_reads(big)
    assert len(reads) == MAX_READS and reads[0] == "package.json"
    assert "backend/requirements.txt" in reads
    assert not [p for p in reads if p.startswith("node_modules/")] and "README.md" not in reads
    for repo in REPOS.values():
        reads = plan_reads(sorted(repo))
        assert set(reads) <= set(repo) and len(reads) <= MAX_READS


def test_detect_ignores_reads_outside_the_tree() -> None:
    entry_points, stack = detect(["package.json"], {"src/app.js": "app.get('/x', h)"})
    assert {e["path"] for e in entry_points} <= {"package.json"} and stack["routes"] == []


# --- Test Case Generator ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REPOS))
def test_cases_scale_with_depth(name: str) -> None:
    crawler = crawl(REPOS[name])
    by_depth = {}
    for depth in ORDER:
        assert_valid("test_case_generator/input", {**crawler, "depth_level": depth})
        output = generate_cases({**crawler, "depth_level": depth}, depth)
        assert_valid("test_case_generator/output", output)
        assert output["run_id"] == RUN_ID and "rule-based" in output["coverage_notes"]
        cases = output["test_cases"]
        allowed, cap = DEPTHS[depth]
        assert 1 <= len(cases) <= cap
        assert {c["priority"] for c in cases} <= set(allowed)
        assert len({c["id"] for c in cases}) == len(cases)
        assert [RANK[c["priority"]] for c in cases] == sorted(RANK[c["priority"]] for c in cases)
        by_depth[depth] = {c["id"]: c for c in cases}
    for small, large in zip(ORDER, ORDER[1:], strict=False):
        assert set(by_depth[small]) <= set(by_depth[large])  # stable ids, nested selections
        assert all(by_depth[small][i] == by_depth[large][i] for i in by_depth[small])
    assert len(by_depth["smoke"]) < len(by_depth["deep"])
    assert {"critical", "low"} <= {c["priority"] for c in by_depth["deep"].values()}


def test_case_contents_are_concrete() -> None:
    cases = {c["id"]: c for c in generate_cases(crawl(REPOS["express"]), "deep")["test_cases"]}
    assert cases["tc_api_get_users"]["steps"] == ["Send GET /api/users"]
    assert cases["tc_api_get_users"]["priority"] == "critical"
    assert "2xx" in cases["tc_api_get_users"]["expected"]
    assert cases["tc_api_get_users_id"]["steps"] == ["Send GET /api/users/1"]
    assert cases["tc_api_delete_users_id"]["steps"] == ["Send DELETE /api/users/999999999"]
    pages = {c["id"]: c for c in generate_cases(crawl(REPOS["nextjs"]), "smoke")["test_cases"]}
    assert pages["tc_page_home"]["steps"] == ["Open /"]
    assert '"Welcome to Acme"' in pages["tc_page_home"]["expected"]
    assert any(i.startswith("tc_api_") for i in pages)  # a capped smoke run still mixes APIs in


def test_nothing_detected_still_gives_a_smoke_case() -> None:
    for repo in ({"README.md": "# empty"}, {}):
        crawler = crawl(repo)
        assert_valid("repo_crawler/output", crawler)
        output = generate_cases(crawler, "smoke")
        assert_valid("test_case_generator/output", output)
        assert [c["id"] for c in output["test_cases"]] == ["tc_page_home"]
        playwright_files(output)
        check_maestro(
            generate_files(engineer_input(output, "maestro"), test_dir=TEST_DIR, app_id=None), None
        )
    with pytest.raises(ValueError):
        generate_cases(crawl({}), "exhaustive")


# --- Test Engineer ------------------------------------------------------------------------


@pytest.mark.parametrize("name", WEB)
def test_playwright_files_parse_and_pass_the_policy(name: str) -> None:
    for depth in ("smoke", "deep"):
        cases = generate_cases(crawl(REPOS[name]), depth)
        files = playwright_files(cases)
        text = joined(files)
        for case in cases["test_cases"]:
            assert json.dumps(case["id"])[:-1] in text  # every case is a test
        assert "test.fixme(" not in text  # every rule-made step is machine-readable
        assert_valid(
            "test_engineer/output",
            {
                "run_id": RUN_ID,
                "framework": "playwright",
                "files": files,
                "pr_title": "Add tests",
                "pr_body": "",
                "base_branch": "main",
                "head_branch": "amtp/x",
            },
        )


def test_playwright_code_shape() -> None:
    cases = generate_cases(crawl(REPOS["nextjs"]), "deep")
    files = {
        f["path"]: f["contents"]
        for f in generate_files(
            engineer_input(cases, "playwright"),
            test_dir=TEST_DIR,
            app_id=None,
            base_url_env="APP_URL",
        )
    }
    api = files[f"{TEST_DIR}/api-products.spec.ts"]
    assert (
        'await request.get("/api/products");' in api
        and "expect(response.ok()).toBeTruthy();" in api
    )
    assert 'await request.delete("/api/products/999999999");' in api
    assert "await response.json();" in api and "process.env.APP_URL" in api
    home = files[f"{TEST_DIR}/pages-home.spec.ts"]
    assert 'await page.goto("/");' in home and "page.on('pageerror'" in home
    assert "getByRole('heading', { name: \"Welcome to Acme\", exact: true })" in home
    assert "toBe(404)" in home and "toHaveTitle" in home
    # the home page test fails on a redirect (to a login page): it must see its own page
    assert (
        "expect((await page.evaluate(() => location.pathname)).replace(/\\/+$/, ''), "
        "'the page it opened, not a redirect').toBe(\"\");" in home
    )
    # page errors count unless another origin's request did not load (a refused CDN)
    assert "expect(unloaded.length ? [] : errors, 'uncaught page errors')" in home
    with pytest.raises(ValueError):
        generate_files(
            engineer_input(cases, "playwright"),
            test_dir=TEST_DIR,
            app_id=None,
            base_url_env="X;alert(1)",
        )


@pytest.mark.parametrize("name", MOBILE)
def test_maestro_flows_parse_and_pass_the_policy(name: str) -> None:
    crawler = crawl(REPOS[name])
    app_id = crawler["detected_stack"]["app_id"]
    for depth in ("smoke", "deep"):
        cases = generate_cases(crawler, depth)
        files = generate_files(engineer_input(cases, "maestro"), test_dir=TEST_DIR, app_id=app_id)
        check_maestro(files, app_id)
        text = joined(files)
        assert all(f"# Case {c['id']} " in text for c in cases["test_cases"])
        assert all(
            commands_of(f["contents"])[0] == {"launchApp": {"clearState": True}} for f in files
        )


def test_maestro_flow_shape() -> None:
    cases = generate_cases(crawl(REPOS["expo"]), "deep")
    files = {
        f["path"]: f["contents"]
        for f in generate_files(
            engineer_input(cases, "maestro"), test_dir=TEST_DIR, app_id="com.acme.shop"
        )
    }
    cart = commands_of(files[f"{TEST_DIR}/tc_screen_cart.yaml"])
    assert {"openLink": "acmeshop://cart"} in cart and {"assertVisible": "Cart"} in cart
    assert "scroll" in cart  # the scroll case joined the screen's flow
    product = commands_of(files[f"{TEST_DIR}/tc_screen_product_id.yaml"])
    assert {"openLink": "acmeshop://product/1"} in product
    unknown = generate_files(
        engineer_input(cases, "maestro"), test_dir=TEST_DIR, app_id="bad id; rm"
    )
    assert all("appId: ${APP_ID}" in f["contents"] for f in unknown)


# --- hostile input ------------------------------------------------------------------------


def test_hostile_repository_content_is_contained() -> None:
    crawler = crawl(HOSTILE)
    assert_valid("repo_crawler/output", crawler)
    for route in crawler["detected_stack"]["routes"] + crawler["detected_stack"]["pages"]:
        path = route.get("path") or route["route"]
        assert not set("\"'`$ \\") & set(path), path
    for depth in ORDER:
        cases = generate_cases(crawler, depth)
        assert_valid("test_case_generator/output", cases)
        playwright_files(cases)
        check_maestro(
            generate_files(engineer_input(cases, "maestro"), test_dir=TEST_DIR, app_id=None), None
        )


def test_hostile_cases_cannot_break_the_files() -> None:
    case = {
        "id": "tc_evil",
        "title": EVIL,
        "preconditions": [EVIL],
        "steps": [
            f'Open /a"b`${{x}}`/{EVIL}',
            f'Send POST /api/`x`/${{y}}/"z" with an empty JSON body {EVIL}',
            EVIL,
            f"Tap {json.dumps(EVIL)}",
            f"Open deep link {EVIL}",
            # Actionable steps with hostile URLs: they must land in escaped string literals.
            "Open /a\"b`${x}`/'q'\\*/<!--",
            "Send GET /x\"`${y}`'\\/*",
            'Send PUT /q"`${z}` with an empty JSON body',
        ],
        "expected": f"heading {json.dumps(EVIL)}; {json.dumps(EVIL)} is visible; crash {EVIL}",
        "priority": "high",
    }
    malformed = {
        **case,
        "steps": ['Tap "\\x"', 'Type "\\u12"', "Open /ok"],
        "expected": 'heading "\\x"; "\\q" is visible',
    }
    cases = {
        "test_cases": [case, {**case, "id": "tc_evil"}, {**case, "steps": [EVIL]}, malformed],
        "coverage_notes": EVIL,
    }
    web = playwright_files(cases)
    assert any("test.fixme(" in f["contents"] for f in web)
    text = joined(web)
    assert 'page.goto("/a\\"b`${x}`/\'q\'\\\\*/<!--")' in text
    assert 'request.put("/q\\"`${z}`", { data: {} })' in text
    mobile = generate_files(engineer_input(cases, "maestro"), test_dir=TEST_DIR, app_id="com.x.y")
    check_maestro(mobile, "com.x.y")
    assert len({f["path"] for f in mobile}) == len(mobile)


@pytest.mark.parametrize(
    "bad",
    [
        "../x",
        "/abs/e2e",
        ".github/workflows",
        "",
        ".",
        "e2e/../..",
        "C:/x",
        "a/.git/b",
        "e2e\\..\\x",
    ],
)
def test_unsafe_test_dir_is_refused(bad: str) -> None:
    cases = generate_cases(crawl(REPOS["express"]), "smoke")
    with pytest.raises(ContractViolation):
        generate_files(engineer_input(cases, "playwright"), test_dir=bad, app_id=None)


def test_everything_is_deterministic() -> None:
    for repo in (REPOS["nextjs"], REPOS["expo"], HOSTILE):
        first, second = crawl(repo), crawl(repo)
        assert first == second
        framework = first["detected_stack"]["suggested_framework"]
        a = generate_files(
            engineer_input(generate_cases(first, "deep"), framework), test_dir=TEST_DIR, app_id=None
        )
        b = generate_files(
            engineer_input(generate_cases(second, "deep"), framework),
            test_dir=TEST_DIR,
            app_id=None,
        )
        assert a == b
