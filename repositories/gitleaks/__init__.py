"""gitleaks' secret rules, vendored as data, run with RE2 (the engine they are written for).

``gitleaks.toml`` is gitleaks' default configuration, unchanged (``VERSION`` and ``LICENSE``
beside it): a maintained set of ~220 provider token formats (GitHub, Stripe, Hugging Face,
SendGrid, DigitalOcean, Grafana, PyPI, ...) and a generic ``key = value`` rule, each with
its keywords, entropy floor and allowlists. Updating it is copying a newer release's file
over it and its version into ``VERSION``; tests/test_secret_corpus.py says whether the update
still catches every case we hold and still leaves ordinary code alone.

The patterns are Go RE2 syntax and are compiled by ``google-re2``: no translation, and
matching stays linear in the text (``re`` backtracks: the same patterns cost it seconds on a
minified bundle). A finding follows gitleaks' own steps (detect/detect.go): a rule runs only
where one of its keywords occurs (one pass of a keyword set over the text); the secret is
the rule's ``secretGroup``, else the first non-empty group, else the whole match; it must
have more than the rule's entropy; the global and the rule's allowlists may then let it go.
Path allowlists are not applied: no finding is let go because of the file it is in.
Everything runs on UTF-8 bytes and answers byte offsets.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import re2

HERE = Path(__file__).parent
VERSION = (HERE / "VERSION").read_text().split()[0]


def entropy(value: bytes) -> float:
    """Shannon entropy per character, in bits, as gitleaks computes it."""
    text = value.decode("utf-8", errors="replace")
    counts = {c: text.count(c) for c in set(text)}
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


@dataclass(frozen=True)
class Allowlist:
    target: str  # what the regexes look at: "secret", "match" or "line"
    regexes: tuple
    stopwords: tuple[bytes, ...]
    every: bool  # condition = "AND": every criterion given must hold
    unmet: bool  # AND with paths or commits, which a text has not: never lets a finding go

    @classmethod
    def load(cls, raw: dict) -> Allowlist:
        every = raw.get("condition", "OR").upper() == "AND"
        return cls(
            target=raw.get("regexTarget", "secret"),
            regexes=tuple(re2.compile(r) for r in raw.get("regexes", ())),
            stopwords=tuple(w.lower().encode() for w in raw.get("stopwords", ())),
            every=every,
            unmet=every and bool(raw.get("paths") or raw.get("commits")),
        )

    def allows(self, secret: bytes, match: bytes, line: bytes) -> bool:
        target = {"match": match, "line": line}.get(self.target, secret)
        by_regex = any(r.search(target) for r in self.regexes)
        lowered = secret.lower()
        by_stopword = any(w in lowered for w in self.stopwords)
        if not self.every:
            return by_regex or by_stopword
        checks = [by_regex] * bool(self.regexes) + [by_stopword] * bool(self.stopwords)
        return not self.unmet and all(checks)


@dataclass(frozen=True)
class Rule:
    id: str
    regex: object  # a compiled re2 pattern
    secret_group: int
    entropy: float
    keywords: tuple[bytes, ...]
    allowlists: tuple[Allowlist, ...]

    def secret_span(self, match) -> tuple[int, int]:
        if self.secret_group:
            return match.span(self.secret_group)
        for group in range(1, len(match.groups()) + 1):
            if match.group(group):
                return match.span(group)
        return match.span()


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    allowlists: tuple[Allowlist, ...]  # the global ones
    keywords: tuple[bytes, ...]
    keyword_set: object  # an re2.Set of the keywords: one pass says which occur

    @classmethod
    def load(cls, path: Path = HERE / "gitleaks.toml") -> RuleSet:
        """The content rules of ``path`` (path-only rules left out), its global allowlists."""
        config = tomllib.loads(path.read_text())
        rules = tuple(
            Rule(
                id=raw["id"],
                regex=re2.compile(raw["regex"]),
                secret_group=raw.get("secretGroup", 0),
                entropy=raw.get("entropy", 0.0),
                keywords=tuple(k.lower().encode() for k in raw.get("keywords", ())),
                allowlists=tuple(Allowlist.load(a) for a in raw.get("allowlists", ())),
            )
            for raw in config["rules"]
            if "regex" in raw
        )
        lists = [*config.get("allowlists", ()), config.get("allowlist")]
        keywords = tuple(sorted({k for rule in rules for k in rule.keywords}))
        keyword_set = re2.Set.SearchSet(re2.Options())
        for keyword in keywords:
            keyword_set.Add(re2.escape(keyword))
        keyword_set.Compile()
        return cls(rules, tuple(Allowlist.load(a) for a in lists if a), keywords, keyword_set)

    def applicable(self, data: bytes) -> list[Rule]:
        """The rules with a keyword in ``data`` (all rules without keywords)."""
        present = {self.keywords[i] for i in self.keyword_set.Match(data.lower()) or ()}
        return [r for r in self.rules if not r.keywords or present.intersection(r.keywords)]

    def findings(self, data: bytes) -> Iterator[tuple[int, int, str]]:
        """``(start, end, rule id)``, in bytes, of each secret the rules find in ``data``."""
        for rule in self.applicable(data):
            for match in rule.regex.finditer(data):
                start, end = rule.secret_span(match)
                secret = data[start:end].strip(b"\n")
                if not secret or (rule.entropy and entropy(secret) <= rule.entropy):
                    continue
                line = _line(data, *match.span())
                if not any(
                    a.allows(secret, match.group(0), line)
                    for a in (*self.allowlists, *rule.allowlists)
                ):
                    yield start, end, rule.id


def _line(data: bytes, start: int, end: int) -> bytes:
    stop = data.find(b"\n", end)
    return data[data.rfind(b"\n", 0, start) + 1 : len(data) if stop < 0 else stop]


RULES = RuleSet.load()
