"""Secret and PII scanning of what is published (contract 7g), before anything is stored.

The rules are gitleaks' default rule list (secret_rules/gitleaks.toml, vendored as
published, MIT licence beside it; docs/scanning.md says which commit and how to update
it) plus Docpub's own (secret_rules/docpub.toml: `dpk_` API keys), read with gitleaks'
semantics: `keywords` (any of them, case-insensitive, must occur), `regex`,
`secretGroup` (else the first non-empty group), `entropy` (Shannon entropy of the
secret above it), the global and each rule's `allowlists` (regexes on the secret, the
match or the line; stopwords; paths; OR/AND). Documentation example keys are what
gitleaks allows: `AKIAIOSFODNN7EXAMPLE` (any AWS key ending in EXAMPLE) is not a finding.

Linear time: the regexes are RE2 (google-re2: no backtracking; gitleaks' rules are
written for Go's regexp, which is RE2), run on UTF-8 bytes, and each rule only on
windows around its keywords' occurrences (found with bytes.find, skipping ahead so a
keyword flood costs at most one find per window step), merged so no rule reads a byte
twice. bench/scanning.py measures it, keyword floods included.
"""
from __future__ import annotations

import math
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import re2

RULES_DIR = Path(__file__).with_name("secret_rules")
RULE_FILES = ("gitleaks.toml", "docpub.toml")
# A rule's regex runs from this many bytes before a keyword occurrence to this many after
# (gitleaks' patterns reach at most ~50 characters before their keyword; a private key
# block runs for kilobytes after its BEGIN line).
BEFORE = 256
AFTER = 2048
LONG_AFTER = {"private-key": 64 * 1024}
# At most this many findings are reported (and the scan stops looking once it has them).
MAX_FINDINGS = 50
# An allowlist's `line` target: at most this many bytes either side of the match.
LINE_CONTEXT = 1024

# How findings are named in words (messages for people and agents); other rules read as
# their id ("a stripe access token").
LABELS = {
    "aws-access-token": "an AWS access key",
    "private-key": "a private key",
    "jwt": "a JSON Web Token",
    "generic-api-key": "a secret assigned in the text",
    "docpub-api-key": "a Docpub API key",
    "github-pat": "a GitHub personal access token",
    "github-fine-grained-pat": "a GitHub personal access token",
    "github-oauth": "a GitHub OAuth token",
    "github-app-token": "a GitHub app token",
    "gitlab-pat": "a GitLab personal access token",
    "slack-bot-token": "a Slack bot token",
    "slack-user-token": "a Slack user token",
    "slack-webhook-url": "a Slack webhook URL",
    "stripe-access-token": "a Stripe API key",
    "openai-api-key": "an OpenAI API key",
    "anthropic-api-key": "an Anthropic API key",
    "gcp-api-key": "a Google Cloud API key",
    "email": "an email address",
    "phone-number": "a phone number",
    "card-number": "a card number",
    "iban": "an IBAN",
}


@dataclass(frozen=True)
class Finding:
    rule: str
    kind: str  # "secret" | "pii"
    line: int
    column: int
    preview: str
    path: Optional[str] = None

    @property
    def label(self) -> str:
        return LABELS.get(self.rule) or "a " + self.rule.replace("-", " ")

    def as_dict(self, with_kind: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule}
        if self.path is not None:
            out["path"] = self.path
        out.update(line=self.line, column=self.column, preview=self.preview)
        if with_kind:
            out["kind"] = self.kind
        return out

    def place(self) -> str:
        where = f"line {self.line}, column {self.column}"
        return f"{where} of {self.path}" if self.path else f"on {where}"


@dataclass
class _Allowlist:
    target: str  # secret | match | line
    regexes: Optional[Any]  # one RE2 alternation
    stopwords: Optional[Any]
    paths: Optional[Any]
    condition_and: bool

    def allows(self, secret: bytes, match: bytes, line: bytes, path: Optional[str]) -> bool:
        target = match if self.target == "match" else line if self.target == "line" else secret
        if not self.condition_and:  # OR (gitleaks: regexes or stopwords; paths are checked per rule)
            return bool((self.regexes is not None and target and self.regexes.search(target) is not None)
                        or (self.stopwords is not None and self.stopwords.search(secret.lower()) is not None))
        checks = []
        if self.paths is not None:
            checks.append(path is not None and self.paths.search(path) is not None)
        if self.regexes is not None:
            checks.append(bool(target) and self.regexes.search(target) is not None)
        if self.stopwords is not None:
            checks.append(bool(secret) and self.stopwords.search(secret.lower()) is not None)
        return bool(checks) and all(checks)


@dataclass
class _Rule:
    id: str
    regex: Any
    keywords: tuple[bytes, ...]
    secret_group: int
    entropy: float
    allowlists: list[_Allowlist]
    after: int
    path: Optional[Any] = None  # the rule applies only to files whose path matches (gitleaks' `path`)
    groups: int = 0
    needs_line: bool = False  # an allowlist (the rule's or the global one) looks at the line


def _alternation(patterns: Sequence[str]) -> Optional[Any]:
    if not patterns:
        return None
    return re2.compile("|".join(f"(?:{p})" for p in patterns))


def _words(words: Sequence[str]) -> Optional[Any]:
    return _alternation([re2.escape(w.lower()) for w in words]) if words else None


def _allowlist(spec: dict[str, Any]) -> _Allowlist:
    return _Allowlist(target=spec.get("regexTarget", "secret"), regexes=_alternation(spec.get("regexes", [])),
                      stopwords=_words(spec.get("stopwords", [])), paths=_alternation(spec.get("paths", [])),
                      condition_and=str(spec.get("condition", "OR")).upper() == "AND")


# gitleaks ends most values at a quote, a backquote, whitespace, `;`, an escaped newline or the
# end: `(?:[\x60'"\s;]|\\[nr]|$)`. Published pages are HTML, where a tag (`<`) or an entity
# (`&`) ends a value as well: `<code>sk_live_…</code>`. The one adaptation of gitleaks' rules.
GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
HTML_END = r"""(?:[\x60'"\s;<&]|\\[nr]|$)"""


def for_html(regex: str) -> str:
    return regex.replace(GITLEAKS_END, HTML_END)


@dataclass
class RuleSet:
    rules: list[_Rule]
    global_allow: _Allowlist
    keywords: list[bytes]
    keyword_set: Any  # re2.Set of every keyword: which occur at all, in one pass

    def present(self, lower: bytes) -> set[bytes]:
        return {self.keywords[i] for i in (self.keyword_set.Match(lower) or ())}


@lru_cache(maxsize=1)
def rule_set() -> RuleSet:
    """The rules, compiled once per process (~0.1 s)."""
    rules: list[_Rule] = []
    global_allow = None
    for name in RULE_FILES:
        config = tomllib.loads((RULES_DIR / name).read_text("utf-8"))
        if "allowlist" in config and global_allow is None:
            global_allow = _allowlist(config["allowlist"])
        for spec in config.get("rules", []):
            if not spec.get("regex"):
                continue  # path-only rules (a .p12 file by its name): not content
            rules.append(_Rule(
                id=spec["id"], regex=re2.compile(for_html(spec["regex"])),
                keywords=tuple(k.lower().encode() for k in spec.get("keywords", [])),
                secret_group=int(spec.get("secretGroup", 0)), entropy=float(spec.get("entropy", 0.0)),
                allowlists=[_allowlist(a) for a in spec.get("allowlists", [])],
                after=LONG_AFTER.get(spec["id"], AFTER),
                path=re2.compile(spec["path"]) if spec.get("path") else None))
            rules[-1].groups = rules[-1].regex.groups
    assert global_allow is not None
    # Only the global allowlist's regexes and stopwords are about content (its paths are
    # repository files: lock files, vendored code).
    global_allow.paths = None
    for rule in rules:
        rule.needs_line = any(a.target == "line" for a in [global_allow, *rule.allowlists])
    keywords = sorted({k for rule in rules for k in rule.keywords})
    keyword_set = re2.Set.SearchSet()
    for word in keywords:
        keyword_set.Add(re2.escape(word))
    keyword_set.Compile()
    return RuleSet(rules, global_allow, keywords, keyword_set)


def rule_count() -> int:
    return len(rule_set().rules)


def entropy(value: str) -> float:
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def preview(secret: str) -> str:
    """At most the first 4 and last 4 characters: `AKIA…MPLE`; fewer for short values
    (a quarter each side), so a preview never shows most of a secret."""
    keep = min(4, len(secret) // 4)
    return f"{secret[:keep]}…{secret[-keep:]}" if keep else "…"


def _windows(lower: bytes, keywords: Sequence[bytes], after: int) -> list[tuple[int, int]]:
    """Merged [start, end) byte windows around the keywords' occurrences. After an
    occurrence the search skips `step` bytes; the window reaches `step` further, so
    whatever a skipped occurrence would have opened is inside it."""
    n = len(lower)
    step = max(1, after // 4)
    spans: list[tuple[int, int]] = []
    for word in keywords:
        i = lower.find(word)
        while i != -1:
            spans.append((max(0, i - BEFORE), min(n, i + len(word) + after + step)))
            i = lower.find(word, i + step)
    if not spans:
        return []
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        last_start, last_end = merged[-1]
        if start <= last_end:
            if end > last_end:
                merged[-1] = (last_start, end)
        else:
            merged.append((start, end))
    return merged


def _secret_span(rule: _Rule, match: Any) -> tuple[int, int]:
    groups = rule.groups
    if rule.secret_group and rule.secret_group <= groups:
        start, end = match.span(rule.secret_group)
        return int(start), int(end)
    for g in range(1, groups + 1):
        start, end = match.span(g)
        if start != -1 and end > start:
            return int(start), int(end)
    start, end = match.span()
    return int(start), int(end)


def _line_around(data: bytes, start: int, end: int) -> bytes:
    left = data.rfind(b"\n", max(0, start - LINE_CONTEXT), start) + 1 or max(0, start - LINE_CONTEXT)
    right = data.find(b"\n", end, end + LINE_CONTEXT)
    return data[left:right if right != -1 else min(len(data), end + LINE_CONTEXT)]


class TooComplexToScan(Exception):
    """The scan took its CPU budget (`budget`): the caller refuses the write (nothing stored)."""


class Budget:
    """CPU seconds a write's scans may take together, read every CHECK_EVERY candidates and windows."""
    CHECK_EVERY = 64

    def __init__(self, seconds: float, clock: Any = time.process_time):
        self.clock = clock
        self.deadline = clock() + seconds
        self.ticks = 0

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks % self.CHECK_EVERY == 0 and self.clock() > self.deadline:
            raise TooComplexToScan()


def _verdict(rule: _Rule, rules: "RuleSet", data: bytes, s: int, e: int, m_start: int, m_end: int,
             path: Optional[str]) -> bool:
    """Whether a candidate is a finding: its rule's allowlists, the global one, its entropy
    (the order gitleaks gives them does not change the outcome; the cheapest first)."""
    secret = data[s:e]
    whole = data[m_start:m_end]
    line = _line_around(data, m_start, m_end) if rule.needs_line else b""
    if any(a.allows(secret, whole, line, path) for a in rule.allowlists):
        return False
    if rules.global_allow.allows(secret, whole, line, None):
        return False
    return not rule.entropy or entropy(secret.decode("utf-8", "replace")) > rule.entropy


def _candidates(data: bytes, path: Optional[str], per_rule: int,
                budget: Optional[Budget] = None) -> Iterator[tuple[int, int, str]]:
    """(start, end, rule id) of the first `per_rule` secrets of each rule, rule by rule.
    Identical candidates (a flood of the same line) are judged once."""
    rules = rule_set()
    judged: dict[tuple[int, bytes, bytes], bool] = {}
    lower = data.lower()  # ASCII only: the same length, so offsets agree
    present = rules.present(lower)
    for rule in rules.rules:
        keywords = [k for k in rule.keywords if k in present]
        if rule.keywords and not keywords:
            continue
        if rule.path is not None and (path is None or rule.path.search(path) is None):
            continue
        if rule.allowlists and path is not None and any(
                a.paths is not None and not a.condition_and and a.paths.search(path) for a in rule.allowlists):
            continue
        windows = _windows(lower, keywords, rule.after) if rule.keywords else [(0, len(data))]
        found = 0
        for start, end in windows:
            if budget is not None:
                budget.tick()
            if found >= per_rule:
                break
            for match in rule.regex.finditer(data, start, end):
                if budget is not None:
                    budget.tick()
                s, e = _secret_span(rule, match)
                m_start, m_end = match.span()
                # gitleaks trims newlines off the match
                while e > s and data[e - 1:e] == b"\n":
                    e -= 1
                if e <= s:
                    continue
                key = (id(rule), data[s:e], data[m_start:m_end])
                verdict = None if rule.needs_line else judged.get(key)
                if verdict is None:
                    verdict = _verdict(rule, rules, data, s, e, m_start, m_end, path)
                    if not rule.needs_line and len(judged) < 10_000:
                        judged[key] = verdict
                if not verdict:
                    continue
                yield s, e, rule.id
                found += 1
                if found >= per_rule:
                    break


# PII (opt-in warnings): RE2 as well, each over the whole text once.
_PII = {
    "email": re2.compile(r"\b[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.){1,8}[A-Za-z]{2,24}\b"),
    "phone-number": re2.compile(
        r"(?:^|[^\w+])(\+[1-9]\d{0,2}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){2,4}"
        r"|\(\d{3}\) ?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})(?:[^\w]|$)"),
    "card-number": re2.compile(r"(?:^|[^\w.-])((?:\d[ -]?){12,18}\d)(?:[^\w-]|$)"),
    "iban": re2.compile(r"\b([A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?)\b"),
}


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban_valid(value: str) -> bool:
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _pii_candidates(data: bytes) -> Iterator[tuple[int, int, str]]:
    for rule, regex in _PII.items():
        for match in regex.finditer(data):
            s, e = match.span(1) if regex.groups else match.span()
            value = data[s:e].decode("utf-8", "replace")
            if rule == "phone-number" and not 8 <= sum(c.isdigit() for c in value) <= 15:
                continue
            if rule == "card-number":
                digits = "".join(c for c in value if c.isdigit())
                if not 13 <= len(digits) <= 19 or not _luhn(digits) or len(set(digits)) < 2:
                    continue
            if rule == "iban" and not _iban_valid(value):
                continue
            yield s, e, rule


def scan(data: bytes, path: Optional[str] = None, secrets: bool = True, pii: bool = False,
         limit: int = MAX_FINDINGS, budget: Optional[Budget] = None) -> list[Finding]:
    """The findings in one text (UTF-8 bytes), in the order they occur, at most `limit`.
    A secret two rules find is reported once (a specific rule over generic-api-key).
    TooComplexToScan when `budget` runs out."""
    found: dict[tuple[int, int], tuple[str, str]] = {}
    if secrets:
        for s, e, rule in _candidates(data, path, 2 * limit, budget):
            known = found.get((s, e))
            if known is None or known[0] == "generic-api-key":
                found[(s, e)] = (rule, "secret")
    if pii:
        for s, e, rule in _pii_candidates(data):
            if budget is not None:
                budget.tick()
            found.setdefault((s, e), (rule, "pii"))
    spans = sorted(found)
    # a generic finding inside (or around) a specific one is the same secret
    kept: list[tuple[int, int]] = []
    for span in spans:
        if kept and span[0] < kept[-1][1]:
            prev = kept[-1]
            if found[prev][0] == "generic-api-key" and found[span][0] != "generic-api-key":
                kept[-1] = span
            continue
        kept.append(span)
    findings: list[Finding] = []
    line, line_start, pos = 1, 0, 0
    for s, e in kept[:limit]:
        newlines = data.count(b"\n", pos, s)
        if newlines:
            line += newlines
            line_start = data.rfind(b"\n", pos, s) + 1
        pos = s
        column = len(data[line_start:s].decode("utf-8", "replace")) + 1
        rule, kind = found[(s, e)]
        findings.append(Finding(rule=rule, kind=kind, line=line, column=column,
                                preview=preview(_shown(rule, data[s:e].decode("utf-8", "replace"))), path=path))
    return findings


def _shown(rule: str, secret: str) -> str:
    """What a preview is cut from: a private key block's body, not its dashes."""
    if rule == "private-key":
        body = "".join(secret.split("-----")[2:3]).strip()
        return body or secret
    return secret


def describe(findings: Sequence[Finding], limit: int = 3) -> str:
    """In words, for an error message: "an AWS access key on line 12, column 5 (AKIA…WXYZ)"."""
    parts = [f"{f.label} {f.place()} ({f.preview})" for f in findings[:limit]]
    more = len(findings) - limit
    if more > 0:
        parts.append(f"{more} more")
    return "; ".join(parts)
