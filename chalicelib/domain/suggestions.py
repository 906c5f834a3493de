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

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from chalicelib.errors import EditAmbiguous

# Occurrences of a quote looked at to choose among repeats; more than this is ambiguous
# unless the prefix and suffix pick one among the first ones (a quote that common is
# a word or two: the viewer's selection should be longer).
MAX_OCCURRENCES = 1000


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


def choose(source: str, anchor: Mapping[str, Any]) -> Optional[int]:
    """The start of the occurrence of anchor.quote its prefix/suffix choose; None when the
    quote is not in `source`. EditAmbiguous when several fit equally well."""
    quote = anchor["quote"]
    found = occurrences(source, quote, MAX_OCCURRENCES + 1)
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    prefix, suffix = anchor.get("prefix") or "", anchor.get("suffix") or ""
    scores = [_context_score(source, at, quote, prefix, suffix) for at in found[:MAX_OCCURRENCES]]
    best = max(scores)
    if scores.count(best) > 1 or len(found) > MAX_OCCURRENCES and best == 0:
        raise EditAmbiguous(
            f"The suggestion's passage occurs {len(found)} times in the document and its surrounding text "
            "does not tell which one is meant; edit the document instead (edit_document), or ask for a "
            "suggestion on a longer passage",
            {"edit_index": 0, "match_count": len(found)})
    return found[scores.index(best)]


def literal_edit(source: str, anchor: Mapping[str, Any], replacement: str) -> LiteralEdit:
    """The one edit that replaces the chosen occurrence of the quote by `replacement`.
    A quote not in the source becomes an edit of the bare quote, so the engine answers
    its edit_not_found (with closest_match) exactly as `POST .../edit` does."""
    quote = anchor["quote"]
    at = choose(source, anchor)
    if at is None:
        return LiteralEdit(quote, replacement)
    end = at + len(quote)
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
