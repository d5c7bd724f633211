"""The verification report as the pull request sees it: a summary line, the per-test table
(passed / healed / quarantined / flaky) and how to run the suite locally."""

from __future__ import annotations

import html
import re

from repositories.login import Recipe
from schemas.errors import ContractViolation
from verification.amtp_header import with_amtp_header
from verification.box_text import code as _code
from verification.box_text import line, markdown
from verification.heals import REFUSED_LEAD
from verification.login import SETUP_FILE, SignUp, login_section, setup_source

# With the cell limits below, the table and the heals stay under GitHub's 65,536 characters.
MAX_ROWS = 100
HEALS_CHARS = 10_000
MARK = {
    "passed": "✅ passed",
    "healed": "🩹 healed",
    "flaky": "⚠️ flaky",
    "quarantined": "🚧 quarantined",
    "failed": "❌ failed",
    "skipped": "⏭️ not run",
}
UNVERIFIED_TITLE = "[unverified] "
ALL_DROPPED = (
    "every generated test failed against the app and was dropped (the repository drops failing "
    "tests): there is nothing to open a pull request with; see the verification report"
)


def _cell(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _headline(report: dict) -> str:
    totals, status = report["totals"], report["status"]
    if status == "skipped":
        return f"**Not run** — {report['reason']}."
    if status == "not_executed":
        return f"**Not executed** — {report['reason']}. No flow is reported as passed."
    if status == "unverified":
        return f"**⚠️ Unverified** — the tests could not be run: {report['reason']}"
    counts = " · ".join(
        f"{totals[k]} {k}"
        for k in ("passed", "healed", "flaky", "quarantined", "failed")
        if totals[k]
    )
    versions = report["tool_versions"]
    tools = f"Playwright Test {versions.get('@playwright/test', '?')}"
    if versions.get("chromium"):
        tools += f" on {versions['chromium']}"
    settings = report["settings"]
    return (
        f"Ran {totals['tests']} test(s) against {report['target_url']} with {tools} "
        f"(retries {settings['retries']}, {settings['heal_rounds']} healing round(s)) in "
        f"{report['timings']['duration_ms'] / 1000:.1f} s: **{counts or 'nothing to run'}**."
    )


NOT_SANDBOXED = (
    "**⚠️ Not sandboxed** — the operator's `AMTP_VERIFY_UNSANDBOXED` override ran these "
    "generated tests with the worker's own rights."
)


def pr_section(report: dict, test_dir: str, how_to_run: list[str] | None = None) -> str:
    """The body's verification section; ``how_to_run``: the run instructions that agree with
    the files the pull request adds (runs.pr_harness), instead of the generic ones."""
    lines = ["", "## Verification", "", _headline(report), ""]
    if not report.get("sandbox", {}).get("isolated", True):
        lines += [NOT_SANDBOXED, ""]
    if blocked := report.get("sandbox", {}).get("blocked"):
        shown = ", ".join(_code(line(b, 80)) for b in blocked[:10])
        lines += [f"Connections the network rule refused: {shown}.", ""]
    lines += test_data_lines(report)
    tests = report["tests"]
    if report["status"] == "verified" and tests:
        lines += ["| test | file | result | notes |", "| --- | --- | --- | --- |"]
        for test in tests[:MAX_ROWS]:
            note = test["heal"] or test["reason"] or test["error"]
            lines.append(
                f"| {markdown(test['title'], 120)} | {_code(_cell(test['file'], 100))} | "
                f"{MARK[test['status']]} | {markdown(note, 200)} |"
            )
        if len(tests) > MAX_ROWS:
            lines.append(f"| … {len(tests) - MAX_ROWS} more in the verification report | | | |")
        lines.append("")
        lines += heals_section(tests)
        if report["totals"]["quarantined"]:
            lines.append(
                "Quarantined tests failed against the app after healing: "
                + (
                    "they are dropped from this pull request (listed above)."
                    if report["settings"]["failing_tests"] == "drop"
                    else "they are kept as `test.fixme(...)` with the reason in a comment above "
                    "each; remove `.fixme` once the app is fixed."
                )
            )
            lines.append("")
    if how_to_run:
        lines += how_to_run
    elif report["framework"] == "playwright":
        lines += [
            "Run the suite locally against your app:",
            "",
            "```sh",
            "npm install --save-dev @playwright/test && npx playwright install chromium",
            f"BASE_URL=http://localhost:3000 npx playwright test {test_dir}",
            "```",
        ]
    return "\n".join(lines) + "\n"


def heals_section(tests: list[dict]) -> list[str]:
    """Each heal, taken or refused, as its diff (folded), up to HEALS_CHARS in all."""
    healed = [t for t in tests if t.get("diff")]
    if not healed:
        return []
    lines = [
        "### Heals",
        "",
        "What the healing round changed in each test. A heal may change how a test finds "
        "things, never what it expects; a refused heal is not applied (the test stays as "
        "written and is quarantined).",
        "",
    ]
    used = 0
    for shown, test in enumerate(healed):
        refused = test["reason"].startswith(REFUSED_LEAD)
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", test["diff"])), default=0))
        title = html.escape(line(test["title"], 120))
        block = [
            f"<details><summary>{'🛑 heal refused' if refused else MARK[test['status']]}: "
            f"{title}</summary>",
            "",
            f"{fence}diff",
            test["diff"],
            fence,
            "",
            heal_evidence(test, refused),
            "",
            "</details>",
            "",
        ]
        size = sum(len(line) + 1 for line in block)
        if used + size > HEALS_CHARS:
            lines += [f"… {len(healed) - shown} more heal(s) in the verification report.", ""]
            break
        lines += block
        used += size
    return lines


EVIDENCE_WHERE = "Evidence (files on this run's page in AMTP, under Verification)"


def heal_evidence(test: dict, refused: bool) -> str:
    """The heal's before/after evidence, named: the files are served by AMTP's run page, which
    has no address a pull request could link to for everyone."""
    said = []
    for phase in ("before", "after"):
        items = [item for item in test.get("evidence", []) if item.get("heal") == phase]
        names = ", ".join(f"{item['kind']} {_code(_cell(item['path'], 100))}" for item in items)
        if not names:
            names = (
                "not run (the heal was refused)" if refused and phase == "after" else "none kept"
            )
        said.append(f"{phase}: {names}")
    return f"{EVIDENCE_WHERE}: {'; '.join(said)}."


PHASES = {"setup": "set-up", "teardown": "tear-down"}


def test_data_lines(report: dict) -> list[str]:
    """One line on the repository's test data calls (none: nothing)."""
    calls = report.get("test_data") or []
    said = []
    for call in calls:
        text = f"{PHASES[call['phase']]} {_code(_cell(call['call'], 120))} {_cell(call['detail'])}"
        text += f" in {call['duration_ms'] / 1000:.1f} s"
        if call["status"] != "passed" and call["phase"] == "teardown":
            text += " ⚠️ (the data it should remove may remain)"
        said.append(text)
    return [f"Test data: {'; '.join(said)}.", ""] if said else []


def totals_note(report: dict) -> str:
    """e.g. "6 tests: 3 passed, 2 healed, 1 quarantined" (the stage's note)."""
    totals = report["totals"]
    parts = [f"{totals[k]} {k}" for k in MARK if totals[k]]
    return f"{totals['tests']} tests: {', '.join(parts) or 'none ran'}"


MODEL_WRITTEN = (
    "> 🤖 **The specs in this pull request were written by a model (AMTP).** {verdict} Read "
    "them before any CI runs them."
)
RAN_SANDBOXED = "They ran in a sandbox against {target} before the pull request was opened."
RAN_UNSANDBOXED = "They ran against {target} **without a sandbox** (the operator's override)."
NOT_VERIFIED = "They were **not verified**: {reason}."
NO_REPORT = "no verification report (the run predates verification)"


def provenance(report: dict | None) -> str:
    """The body's first line: model-written, and whether and how the specs were run."""
    if report is None:
        verdict = NOT_VERIFIED.format(reason=NO_REPORT)
    elif report["status"] != "verified":
        reason = _cell(report["reason"] or "no reason recorded", 300).rstrip(".")
        verdict = NOT_VERIFIED.format(reason=reason)
    elif report.get("sandbox", {}).get("isolated", True):
        verdict = RAN_SANDBOXED.format(target=report["target_url"])
    else:
        verdict = RAN_UNSANDBOXED.format(target=report["target_url"])
    return MODEL_WRITTEN.format(verdict=verdict)


COVERAGE_TABLE_ROWS = 30  # a larger map is on the run page, not in the body


def _route_code(text: str) -> str:
    """A route as inline code a hostile path cannot break out of (no backticks, no pipes)."""
    return "`" + _cell(text.replace("`", "'"), 100) + "`"


_NOT_COVERED = {
    "empty_write": "not covered (written to with an empty body only)",
    "anonymous_write": "not covered (written to without signing in only)",
    "login_redirect": "not covered (only the login seen)",
    "not_found": "not covered (404)",
}


def coverage_section(coverage: dict | None) -> str:
    """The coverage map in the body: its headline, and a folded table when it is small."""
    if not coverage:
        return ""
    totals, rows = coverage["totals"], coverage["rows"]
    line = f"**{totals['covered']} of {totals['routes']} routes covered**"
    if missing := coverage["not_covered"]:
        line += "; not covered: " + ", ".join(_route_code(r) for r in missing[:10])
        if totals["not_covered"] > len(missing[:10]):
            line += f", … ({totals['not_covered'] - len(missing[:10])} more)"
    lines = ["", "## Coverage", "", line + ".", ""]
    if rows and totals["routes"] <= COVERAGE_TABLE_ROWS:
        lines += [
            "<details><summary>Routes: found in source × reached live × exercised by</summary>",
            "",
            "| route | in source | reached live | exercised by |",
            "| --- | --- | --- | --- |",
        ]
        for row in rows:
            live = (
                f"{row['live_status']} {_route_code(row['live_path'])}" if row["live_path"] else "—"
            )
            if row.get("live_state") == "login_redirect":
                live = f"the login, at {_route_code(row['live_path'])}"
            why = _NOT_COVERED.get(row.get("state", ""), "not covered")
            tests = ", ".join(html.escape(_cell(t, 80)) for t in row["tests"]) or f"**{why}**"
            label = (
                _route_code(row["route"]) if row["route"] else html.escape(_cell(row["name"], 80))
            )
            lines.append(
                f"| {label} | {row['kind'] if row['in_source'] else 'no'} | {live} | "
                f"{_cell(tests, 400)} |"
            )
        lines += ["", "</details>", ""]
    return "\n".join(lines) + "\n"


def pull_request_contents(
    code: dict,
    report: dict | None,
    test_dir: str,
    coverage: dict | None = None,
    login: Recipe | SignUp | None = None,
    harness: tuple[list[dict], list[str]] | None = None,
) -> tuple[list, str, str]:
    """(files, title, body) of the pull request: the Test Engineer's, with the verification's
    files (healed, quarantined, dropped) and its section in the body when there is a report,
    and the coverage map's section when there is one; the body opens with the provenance
    line. With a ``login`` recipe, the AMTP-written ``auth.setup.ts`` goes with the tests and
    the body says how to wire and feed it. Every Playwright spec opens with AMTP's header
    comment (``verification.amtp_header``). ``harness``: the files AMTP adds so the tests run on their
    own and the instructions that go with them (runs.pr_harness)."""
    added, how_to_run = harness or ([], None)
    files, title, body = _contents(code, report, test_dir, coverage, how_to_run)
    files = with_amtp_header(files) + added  # maintenance tells AMTP's own specs by it
    if login is None or code["framework"] != "playwright":
        return files, title, body
    setup = {"path": f"{test_dir.strip('/')}/{SETUP_FILE}", "contents": setup_source(login)}
    return (
        [*files, setup],
        title,
        body.rstrip("\n") + "\n\n" + "\n".join(login_section(login, test_dir)),
    )


def _contents(
    code: dict, report: dict | None, test_dir: str, coverage: dict | None, how_to_run=None
) -> tuple[list, str, str]:
    if report is None:  # a run started before VerifyTests existed
        section = coverage_section(coverage) + "\n".join(["", *how_to_run] if how_to_run else [])
        body = code["pr_body"].rstrip("\n") + "\n" + section if section else code["pr_body"]
        body = provenance(None) + "\n\n" + body
        return code["files"], code["pr_title"], body
    title = code["pr_title"]
    if report["status"] == "unverified":
        title = (UNVERIFIED_TITLE + title)[:256]
    if not report["files"]:
        raise ContractViolation(ALL_DROPPED)
    body = code["pr_body"].rstrip("\n") + "\n" + coverage_section(coverage)
    body += pr_section(report, test_dir, how_to_run)
    return report["files"], title, provenance(report) + "\n\n" + body
