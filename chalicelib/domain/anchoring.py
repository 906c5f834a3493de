"""Comments that follow the text (contract 7e): where an anchored comment's passage is
in a later version. Pure: no I/O.

An anchor is a W3C TextQuoteSelector taken from the text a viewer saw (the page's
text nodes, scripts and styles left out). In a version's text it is:

- `exact`: the quote occurs with its prefix and suffix (those that were sent);
- `moved`: the quote occurs as is, in other surroundings;
- `fuzzy`: no exact occurrence, but the single best passage is at least 80 %
  similar to the quote (normalised Levenshtein distance, rapidfuzz) and at least
  10 points ahead of any other passage; `quote_now` is that passage;
- `orphaned`: otherwise.

Precision over recall: a wrong place is worse than none. So a passage is only
taken where it cannot be another passage: an identical but short quote
(< SHORT_QUOTE characters) in other surroundings, and any fuzzy match, also need
the text around it to resemble the anchor's prefix or suffix (CONTEXT_SUPPORT),
unless the quote is long and the match very close (a moved and lightly edited
paragraph). Case changes count as changes (never `exact`), but are scored as
small ones: similarity is measured on case-folded text.

Cost is bounded whatever the document's size: candidate passages come from a few
linear scans (the prefix's end, the suffix's start, and short pieces of the quote,
each found at most PER_PIECE times), and only those are scored, the best few
precisely; so 100 comments on a 4 MiB version take well under a second
(bench/reanchor.py).
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

SIMILARITY = 80.0  # the least similarity of a fuzzy match (contract)
LEAD = 10.0  # points the best match must be ahead of any other (contract)
SHORT_QUOTE = 32  # shorter identical quotes in other surroundings need context support
CONTEXT_SUPPORT = 70.0  # how like the anchor's prefix or suffix the surroundings must be
CLOSE_MATCH = 90.0  # a long quote this close needs no context
MAX_OCCURRENCES = 100
PIECES = 8
PER_PIECE = 8
MAX_CANDIDATES = 64
PRECISE = 4  # candidates scored precisely (Levenshtein alignment), the best by a quick score
CONTEXT_PIECE = 24
MIN_CONTEXT_PIECE = 12
WORD_TOLERANCE = 3.0  # points of likeness a fuzzy passage may lose to end on whole words
MAX_REACH = 48  # how far a fuzzy match's ends move from the quick alignment's

Status = str  # "exact" | "moved" | "fuzzy" | "orphaned"


@dataclass(frozen=True)
class Found:
    status: Status
    quote_now: Optional[str] = None
    span: Optional[tuple[int, int]] = field(default=None, compare=False)  # where, in Text.text


class Text:
    """A version's text as the share page's frame sees it, with a case-folded copy
    (the same length, so positions line up) for finding case changes."""

    def __init__(self, text: str):
        self.text = text
        folded = text.lower()
        self.folded = folded if len(folded) == len(text) else text

    @classmethod
    def of_html(cls, page: str) -> "Text":
        return cls(page_text(page))


_BODY = re.compile(r"<body\b[^>]*>", re.IGNORECASE)
_SKIPPED_OPEN = re.compile(r"<(script|style|noscript|template|textarea|title)\b|<!--", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def page_text(page: str) -> str:
    """The text of an HTML page's body as its text nodes hold it (scripts, styles,
    comments and tags left out, character references decoded): what a viewer selects.
    Linear: each skipped element's end is looked up once from where it starts, and one
    that never ends takes the rest of the page with it (as a browser's parser does)."""
    body = _BODY.search(page)
    if body is not None:
        page = page[body.end():]
    lowered: Optional[str] = page.lower()
    if lowered is not None and len(lowered) != len(page):
        lowered = None
    kept: list[str] = []
    at = 0
    for opened in _SKIPPED_OPEN.finditer(page):
        if opened.start() < at:
            continue  # inside an element already skipped
        kept.append(page[at:opened.start()])
        closer = "-->" if opened.group(0) == "<!--" else "</" + opened.group(1).lower()
        if lowered is not None:
            end = lowered.find(closer, opened.end())
        else:  # lower() changes the length ("İ"): a case-blind search from here instead
            match = re.compile(re.escape(closer), re.IGNORECASE).search(page, opened.end())
            end = match.start() if match else -1
        if end < 0:
            at = len(page)
            break
        close = page.find(">", end)
        at = len(page) if close < 0 else close + 1
    kept.append(page[at:])
    return html.unescape(_TAG.sub("", "".join(kept)))


def _fold(text: str) -> str:
    folded = text.lower()
    return folded if len(folded) == len(text) else text


def _occurrences(text: str, needle: str, limit: int) -> list[int]:
    found: list[int] = []
    at = text.find(needle)
    while at >= 0 and len(found) < limit:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def _context(doc: Text, start: int, end: int, prefix: str, suffix: str) -> float:
    """How like the anchor's prefix or suffix (the better of the two) the text around
    [start, end) is, 0 to 100: each compared with the text right beside the passage and,
    when long enough to mean something (MIN_CONTEXT_PIECE), also found a little further
    off (an insertion between the context and the passage); found whole a few characters
    off, it counts in full."""
    best = 0.0
    if prefix:
        folded = _fold(prefix)
        before = doc.folded[max(0, start - len(prefix) - 8):start]
        if before:
            best = max(best, 100.0 if folded in before else fuzz.ratio(folded, before[-len(prefix):]))
            piece = folded[-CONTEXT_PIECE:]
            if len(piece) >= MIN_CONTEXT_PIECE:
                best = max(best, fuzz.partial_ratio(piece, before))
    if suffix:
        folded = _fold(suffix)
        after = doc.folded[end:end + len(suffix) + 8]
        if after:
            best = max(best, 100.0 if folded in after else fuzz.ratio(folded, after[:len(suffix)]))
            piece = folded[:CONTEXT_PIECE]
            if len(piece) >= MIN_CONTEXT_PIECE:
                best = max(best, fuzz.partial_ratio(piece, after))
    return best


def locate(doc: Text, anchor: Mapping[str, Any]) -> Found:
    """The anchor's state in `doc` (see the module's docstring)."""
    quote = anchor.get("quote") or ""
    prefix, suffix = anchor.get("prefix") or "", anchor.get("suffix") or ""
    if not quote:
        return Found("orphaned")
    text = doc.text
    occurrences = _occurrences(text, quote, MAX_OCCURRENCES)
    if occurrences:
        for at in occurrences:
            if not prefix or (at >= len(prefix) and text.startswith(prefix, at - len(prefix))):
                if not suffix or text.startswith(suffix, at + len(quote)):
                    return Found("exact", span=(at, at + len(quote)))
        # Where its context still is, the passage may stand edited, and an identical quote
        # elsewhere be another passage (a repeated sentence): the edited one is the anchor's.
        edited = _best(doc, quote, _fold(quote), prefix, suffix, _context_candidates(doc, quote, prefix, suffix))
        if edited.status == "fuzzy":
            return Found("moved", span=edited.span) if edited.quote_now == quote else edited
        scored = sorted(((_context(doc, at, at + len(quote), prefix, suffix), at) for at in occurrences), reverse=True)
        (best, at), second = scored[0], (scored[1][0] if len(scored) > 1 else None)
        if best >= CONTEXT_SUPPORT and (second is None or best - second >= LEAD):
            return Found("moved", span=(at, at + len(quote)))
        return Found("orphaned")  # an identical quote, but which one (or another passage) cannot be told
    return _fuzzy(doc, quote, prefix, suffix)


def _context_candidates(doc: Text, quote: str, prefix: str, suffix: str) -> list[int]:
    """Likely starts of the passage: right after the prefix's end, right before the suffix's start."""
    starts: dict[int, None] = {}
    if prefix:
        tail = _fold(prefix)[-CONTEXT_PIECE:]
        for at in _occurrences(doc.folded, tail, PER_PIECE):
            starts.setdefault(at + len(tail))
    if suffix:
        head = _fold(suffix)[:CONTEXT_PIECE]
        for at in _occurrences(doc.folded, head, PER_PIECE):
            starts.setdefault(max(0, at - len(quote)))
    return list(starts)


def _piece_candidates(doc: Text, folded_quote: str) -> list[int]:
    """Likely starts of the passage: where short pieces of the quote occur, shifted back
    by their offset in the quote."""
    starts: dict[int, None] = {}
    piece = max(4, min(24, len(folded_quote) // 4))
    last = max(0, len(folded_quote) - piece)
    offsets = sorted({round(i * last / (PIECES - 1)) for i in range(PIECES)}) if last else [0]
    for offset in offsets:
        chunk = folded_quote[offset:offset + piece]
        if not chunk.strip():
            continue
        for at in _occurrences(doc.folded, chunk, PER_PIECE):
            starts.setdefault(max(0, at - offset))
            if len(starts) >= MAX_CANDIDATES:
                return list(starts)
    return list(starts)


def _fuzzy(doc: Text, quote: str, prefix: str, suffix: str) -> Found:
    """First where the prefix and suffix still are (two scans): a passage there at least
    80 % like the quote, with its context, is that passage. Otherwise wherever pieces of
    the quote occur: the best passage, only if clearly ahead of every other."""
    folded_quote = _fold(quote)
    if prefix or suffix:
        found = _best(doc, quote, folded_quote, prefix, suffix, _context_candidates(doc, quote, prefix, suffix))
        if found.status == "fuzzy":
            return found
    return _best(doc, quote, folded_quote, prefix, suffix, _piece_candidates(doc, folded_quote))


def _best(doc: Text, quote: str, folded_quote: str, prefix: str, suffix: str, starts: list[int]) -> Found:
    pad = len(quote) // 2 + 8
    # Quick scores: the best window of each candidate region (overlapping regions are one passage).
    regions: list[tuple[float, int, int]] = []
    for start in sorted(starts):
        low = max(0, start - pad)
        window = doc.folded[low:start + len(quote) + pad]
        quick = fuzz.partial_ratio_alignment(folded_quote, window)
        if quick is None:
            continue
        begin, end = low + quick.dest_start, low + quick.dest_end
        if regions and begin < regions[-1][2] and end > regions[-1][1]:
            if quick.score > regions[-1][0]:
                regions[-1] = (quick.score, begin, end)
            continue
        regions.append((quick.score, begin, end))
    regions.sort(reverse=True)
    # Precise scores of the best few: the passage most like the quote around each region.
    matches: list[tuple[float, int, int]] = []
    for _score, begin, end in regions[:PRECISE]:
        similarity, a, b = _refine(doc.folded, folded_quote, begin, end)
        wide_a, wide_b = _whole_words(doc.folded, folded_quote, a, b)
        if (wide_a, wide_b) != (a, b):  # whole words, unless that costs more than a little likeness
            wide = Levenshtein.normalized_similarity(folded_quote, doc.folded[wide_a:wide_b]) * 100
            if wide >= similarity - WORD_TOLERANCE:
                similarity, a, b = wide, wide_a, wide_b
        if any(a < e and b > s for _sim, s, e in matches):
            continue  # the same passage, found from two regions
        matches.append((similarity, a, b))
    if not matches:
        return Found("orphaned")
    matches.sort(reverse=True)
    best, a, b = matches[0]
    # Any other region counts as a rival at its quick score when it was not scored precisely.
    rivals = [m[0] for m in matches[1:]] + [r[0] for r in regions[PRECISE:] if not (r[1] < b and r[2] > a)]
    if best < SIMILARITY or (rivals and best - max(rivals) < LEAD):
        return Found("orphaned")
    if (prefix or suffix) and not (len(quote) >= SHORT_QUOTE and best >= CLOSE_MATCH):
        if _context(doc, a, b, prefix, suffix) < CONTEXT_SUPPORT:
            return Found("orphaned")
    return Found("fuzzy", doc.text[a:b], (a, b))


def _whole_words(text: str, quote: str, a: int, b: int) -> tuple[int, int]:
    """The passage widened to whole words where the quote's own ends are whole words, and to
    a closing (or opening) punctuation mark the quote has too: normalised edit distance
    favours shorter passages ("Februar" over "February.")."""
    if quote[:1].isalnum():
        while a > 0 and text[a - 1].isalnum() and text[a].isalnum():
            a -= 1
    elif quote and a > 0 and text[a - 1] == quote[0] and text[a] != quote[0]:
        a -= 1
    if quote[-1:].isalnum():
        while b < len(text) and text[b].isalnum() and text[b - 1].isalnum():
            b += 1
    else:
        while b < len(text) and text[b].isalnum() and text[b - 1].isalnum():
            b += 1
        if quote and b < len(text) and text[b] == quote[-1] and text[b - 1] != quote[-1]:
            b += 1
    return a, b


def _refine(folded: str, quote: str, begin: int, end: int) -> tuple[float, int, int]:
    """(similarity, start, end) of the passage around [begin, end) most like `quote`:
    its start, then its end, moved within a few characters (a match of the quote's
    length, as partial_ratio_alignment finds it, is off by what the edit added or took)."""
    reach = min(MAX_REACH, max(4, len(quote) // 4))

    def score(a: int, b: int) -> float:
        return Levenshtein.normalized_similarity(quote, folded[a:b]) * 100 if b > a else 0.0

    best = (score(begin, end), begin, end)
    for _round in range(2):
        _sim, a, b = best
        for start in range(max(0, a - reach), min(b, a + reach + 1)):
            candidate = score(start, b)
            if candidate > best[0]:
                best = (candidate, start, b)
        _sim, a, b = best
        for stop in range(max(a + 1, b - reach), min(len(folded), b + reach) + 1):
            candidate = score(a, stop)
            if candidate > best[0]:
                best = (candidate, a, stop)
    return best
