"""The secret corpus (tests/secret_corpus.py): every leak redacted, every secret file refused,
and nothing a repository map is made of (ordinary code, UUIDs, commit SHAs, lockfile
integrity hashes, source files named after secrets) touched."""

import pytest

from repositories import secrets
from tests.secret_corpus import LEAKS, NEAR_MISSES, READABLE_PATHS, SECRET_PATHS


@pytest.mark.parametrize("case,text,value", LEAKS, ids=[case for case, _, _ in LEAKS])
def test_every_leak_is_redacted(case, text, value):
    redacted = secrets.redact(text)
    assert value not in redacted
    assert "[REDACTED:" in redacted
    assert secrets.redact(redacted) == redacted  # idempotent: a cached text is already clean


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_what_only_resembles_a_secret_is_left_alone(text):
    assert secrets.redact(text) == text


@pytest.mark.parametrize("path", SECRET_PATHS)
def test_every_secret_file_is_refused(path):
    assert secrets.is_secret_path(path)


@pytest.mark.parametrize("path", READABLE_PATHS)
def test_source_and_docs_named_after_secrets_stay_readable(path):
    assert not secrets.is_secret_path(path)


def test_one_text_holding_the_whole_corpus():
    """All at once, between lines of non-ASCII text: the rules run on UTF-8 bytes, so each
    marker must land on the secret's characters, not on its byte offsets. The key cut before
    its END line comes last: it is redacted to the end of the text."""
    filler = "\n// café — ✓ 日本語\n"
    leaks = sorted(LEAKS, key=lambda leak: leak[0] == "private-key-cut")
    text = filler.join([*(t for _, t, _ in leaks[:-1]), *NEAR_MISSES, leaks[-1][1]])
    redacted = secrets.redact(text)
    assert [case for case, _, value in LEAKS if value in redacted] == []
    assert all(line in redacted for line in NEAR_MISSES)
    assert redacted.count(filler) == text.count(filler)
    assert secrets.redact(redacted) == redacted
