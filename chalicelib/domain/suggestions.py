"""A suggested edit as one literal edit of a document's source (contract 7e): pure, no I/O.

The suggestion's anchor is a W3C TextQuoteSelector taken from the page a viewer
saw; accepting it replaces the quote where it occurs in the document's source
(HTML as published, or the Markdown source as written). Where the quote occurs
more than once, its prefix and suffix choose: the occurrence whose surroundings
match the most characters of them wins, and a tie is `edit_ambiguous`. The
chosen occurrence is then widened with the source around it until it is unique,
so the edit engine (domain/edits.py) applies it exactly once, with its own
errors (edit_not_found with closest_match, 413, no_change).
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from chalicelib.errors import EditAmbiguous

# Occurrences of a quote looked at to choose among repeats; more than this is ambiguous
# unless the prefix and suffix pick one among the first ones (a quote that common is
# a word or two: the viewer's selection should be longer).
MAX_OCCURRENCES = 1000
_SPACES = re.compile(r"[ \t\n\r\f]+")  # HTML's whitespace (a no-break space is text)


@dataclass(frozen=True)
class LiteralEdit:
    """One edit for the engine (domain/edits.Edit)."""
    old_string: str
    new_string: str
    replace_all: bool = False


def _context_score(source: str, at: int, quote: str, prefix: str, suffix: str) -> int:
    score = 0
    for i in range(1, len(prefix) + 1):
        if at - i < 0 or source[at - i] != prefix[-i]:
            break
        score += 1
    after = at + len(quote)
    for i, char in enumerate(suffix):
        if after + i >= len(source) or source[after + i] != char:
            break
        score += 1
    return score


def occurrences(source: str, quote: str, limit: int = MAX_OCCURRENCES) -> list[int]:
    """Where `quote` starts in `source` (overlapping occurrences too), at most `limit`."""
    found: list[int] = []
    at = source.find(quote)
    while at >= 0 and len(found) < limit:
        found.append(at)
        at = source.find(quote, at + 1)
    return found


def _html_spans(source: str, quote: str, limit: int) -> list[tuple[int, int]]:
    """Where an HTML page's source writes the text `quote`: with `&`, `<` and `>` escaped
    (`Fish &amp; Chips`) and any run of whitespace where the quote has one (a sentence the
    source wraps over lines: a browser shows, and a viewer selects, one space). Linear: one
    RE2 (no backtracking) regex of literal pieces joined by whitespace runs."""
    import re2

    words = [word for word in _SPACES.split(html.escape(quote, quote=False)) if word]
    if not words:
        return []
    pattern = re2.compile(r"\s+".join(re2.escape(word) for word in words))
    found: list[tuple[int, int]] = []
    for match in pattern.finditer(source):
        found.append(match.span())
        if len(found) >= limit:
            break
    return found


def choose(source: str, anchor: Mapping[str, Any], page: bool = False) -> Optional[tuple[int, int]]:
    """The span of the occurrence of anchor.quote its prefix/suffix choose; None when the
    quote is not in `source`. EditAmbiguous when several fit equally well. `page`: an HTML
    page, where a quote not found as is is looked for as HTML writes that text."""
    quote = anchor["quote"]
    spans = [(at, at + len(quote)) for at in occurrences(source, quote, MAX_OCCURRENCES + 1)]
    if not spans and page:
        spans = _html_spans(source, quote, MAX_OCCURRENCES + 1)
    if not spans:
        return None
    if len(spans) == 1:
        return spans[0]
    prefix, suffix = anchor.get("prefix") or "", anchor.get("suffix") or ""
    scores = [_context_score(source, start, source[start:end], prefix, suffix) for start, end in spans[:MAX_OCCURRENCES]]
    best = max(scores)
    if scores.count(best) > 1 or len(spans) > MAX_OCCURRENCES and best == 0:
        raise EditAmbiguous(
            f"The suggestion's passage occurs {len(spans)} times in the document and its surrounding text "
            "does not tell which one is meant; edit the document instead (edit_document), or ask for a "
            "suggestion on a longer passage",
            {"edit_index": 0, "match_count": len(spans)})
    return spans[scores.index(best)]


def literal_edit(source: str, anchor: Mapping[str, Any], replacement: str, page: bool = False) -> LiteralEdit:
    """The one edit that replaces the chosen occurrence of the quote by `replacement`.
    A quote not in the source becomes an edit of the bare quote, so the engine answers
    its edit_not_found (with closest_match) exactly as `POST .../edit` does. `page`: an
    HTML page, whose quote may be found as HTML writes it and whose replacement is text
    (escaped: "A & B <c>" is `A &amp; B &lt;c&gt;`); Markdown takes both as written."""
    quote = anchor["quote"]
    if page:
        replacement = html.escape(replacement, quote=False)
    chosen = choose(source, anchor, page)
    if chosen is None:
        return LiteralEdit(quote, replacement)
    at, end = chosen
    quote = source[at:end]
    before = after = 0
    step = 16
    old = quote
    while _more_than_once(source, old):  # overlapping repeats count too: the engine takes the first
        before, after = min(at, before + step), min(len(source) - end, after + step)
        old = source[at - before:end + after]
        step *= 2
        if before == at and after == len(source) - end:
            break
    return LiteralEdit(old, source[at - before:at] + replacement + source[end:end + after])


def _more_than_once(source: str, needle: str) -> bool:
    first = source.find(needle)
    return first >= 0 and source.find(needle, first + 1) >= 0
