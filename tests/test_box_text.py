"""Text leaving a box: the one scrubber in every written form of a held secret, one line where
a line is expected, escaped where Markdown and HTML render it."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from repositories.secrets import also_scrubbed, written_forms
from verification.box_text import clean, code, line, markdown

SECRET = "Canary-Pass-8e2f1d"


@pytest.mark.parametrize("prefix", [b"", b"u", b"us", b"user:", b'{"password":"'])
def test_a_held_secret_is_scrubbed_in_every_written_form(prefix):
    encoded = [
        SECRET,
        SECRET.lower(),
        SECRET.upper(),
        quote(SECRET),
        SECRET.encode().hex(),
        SECRET.encode().hex().upper(),
        base64.b64encode(prefix + SECRET.encode() + b"!").decode(),
        base64.urlsafe_b64encode(prefix + SECRET.encode()).decode(),
    ]
    with also_scrubbed(["qa@example.com", SECRET]):
        for text in encoded:
            cleaned = clean(f"before {text} after", 1000)
            assert "[REDACTED:held-secret]" in cleaned, text
            assert SECRET.lower() not in cleaned.lower()


def test_short_values_add_no_short_encoded_forms():
    # a slice of a short value's base64 would scrub ordinary text
    assert written_forms("demo") == {"demo", "64656d6f", "64656D6F"}


@pytest.mark.parametrize(
    "breaker", ["\n", "\r", "\r\n", "\x0b", "\x85", "\u2028", "\u2029", "\x00"]
)
def test_a_line_stays_one_line(breaker):
    assert line(f"title{breaker}ok 1 - forged", 200) == "title ok 1 - forged"


def test_markdown_shows_text_as_text():
    hostile = "a`b <img src=x onerror=alert(1)> [click](https://evil.test) | *x* &amp;\n# h"
    shown = markdown(hostile, 500)
    assert "<img" not in shown and "&lt;img" in shown
    assert "\\`" in shown and "\\[click\\]" in shown and "\\|" in shown and "\\*x\\*" in shown
    assert "&amp;amp;" in shown and "\n" not in shown and "\\#" in shown


def test_a_code_span_holds_any_backticks():
    assert code("a`b") == "`` a`b ``"
    assert code("plain") == "`plain`"


def test_everything_is_bounded():
    assert len(line("x" * 5000, 100)) == 100 and line("x" * 5000, 100).endswith("…")


def test_a_loops_template_titles_are_listed_by_their_line():
    from agents import spec_blocks
    from verification.verdict import listed_tests

    source = """import { test } from '@playwright/test';
test('plain', async () => {});
for (const name of ['a', 'b']) {
  test(`each ${name}`, async () => {});
}
"""
    listed, dynamic = listed_tests([{"path": "x.spec.ts", "contents": source}])
    assert dict(listed) == {("x.spec.ts", "plain"): 1}
    assert (
        dynamic
        == {("x.spec.ts", 4)}
        == {("x.spec.ts", n) for n in spec_blocks.dynamic_lines(source)}
    )
