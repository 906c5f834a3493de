"""The literal find/replace engine: a pure function, no I/O.

Edits apply in order; each sees the result of the ones before. Matching is
literal and case-sensitive. The batch is atomic: the input string is never
modified (str is immutable), and any failing edit raises before a result exists.
"""
from __future__ import annotations

import difflib
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Protocol

from chalicelib.domain.limits import MAX_HTML_BYTES, too_large
from chalicelib.errors import EditAmbiguous, EditNotFound, InvalidJson, NoChange

CLOSEST_MATCH_MAX_CHARS = 200
# The hint's work is bounded whatever the document's size (issue 24: a refused
# edit on 100,000 characters once cost 50 s of CPU, and a refused edit uses no
# write slot). A few short pieces of the needle are looked up with str.find (a
# linear scan each), and only the passages where they occur are scored, at most
# HINT_MAX_CANDIDATES of them, within HINT_BUDGET_SECONDS; whatever is not found
# by then is left out (the hint is optional). bench/bounds.py measures it.
HINT_MAX_NEEDLE = CLOSEST_MATCH_MAX_CHARS * 5
HINT_PIECES = 8
HINT_OCCURRENCES_PER_PIECE = 6
HINT_MAX_CANDIDATES = 32
HINT_BUDGET_SECONDS = 0.2
# What an edit_not_found adds on a Markdown document: its edits change the source.
MARKDOWN_NOT_FOUND = ("'s Markdown source (old_string is matched against the Markdown as published, "
                      "not the rendered HTML; matching is literal and case-sensitive)")


class Edit(Protocol):
    old_string: str
    new_string: str
    replace_all: bool


@dataclass(frozen=True)
class EditOutcome:
    html: Any  # str, or bytes for apply_edits_utf8
    edits_applied: int
    replacements: int


def apply_edits(html: str, edits: Iterable[Edit], markdown: bool = False) -> EditOutcome:
    return _apply(html, edits, utf8=False, size_bytes=len(_utf8(html)), markdown=markdown)


# Above this many edits a non-ASCII document is decoded first (see below).
MAX_EDITS_ON_BYTES = 8


def apply_edits_utf8(data: bytes, edits: Iterable[Edit], max_edits_on_bytes: int = MAX_EDITS_ON_BYTES,
                     markdown: bool = False) -> EditOutcome:
    """apply_edits on the UTF-8 bytes of a stored document: the same result
    (encoded), counts and errors, by the cheaper of two equivalent routes.

    Matching the encoded strings in the bytes is exact (UTF-8 is
    self-synchronising: a match always falls on character boundaries, and the
    non-overlapping occurrences are the same) and skips a decode and an encode
    of up to 4 MiB (~17 ms for Japanese). But each edit then scans bytes, not
    characters: 2.6x more units in CJK text, ~1.3 ms more per edit on 4 MiB. So
    ASCII documents and short batches stay on bytes; long batches on non-ASCII
    text are decoded, edited as str, and encoded (bench/edit_engine.py).

    `markdown`: `data` is a Markdown document's source, and a missing old_string
    says so (the caller may have copied it from the rendered HTML)."""
    edits = list(edits)
    if len(edits) <= max_edits_on_bytes or data.isascii():
        return _apply(data, edits, utf8=True, markdown=markdown)
    outcome = _apply(data.decode("utf-8"), edits, utf8=False, size_bytes=len(data), markdown=markdown)
    return EditOutcome(_utf8(outcome.html), outcome.edits_applied, outcome.replacements)


def _apply(html: Any, edits: Iterable[Edit], utf8: bool, size_bytes: Optional[int] = None,
           markdown: bool = False) -> EditOutcome:
    """`size_bytes` is the UTF-8 size of `html` (its length when `utf8`): every
    edit's result size is computed from it before the result is built, so no
    string over the limit is ever made (peak memory stays a few times 4 MiB)."""
    current = html
    size: int = len(html) if utf8 else (size_bytes if size_bytes is not None else len(_utf8(html)))
    replacements = 0
    applied = 0
    for index, edit in enumerate(edits):
        old: Any = edit.old_string
        new: Any = edit.new_string
        if utf8:
            old, new = _utf8(old), _utf8(new)
            growth = len(new) - len(old)
        else:
            growth = len(_utf8(new)) - len(_utf8(old))
        result, count = _replace(current, old, new, edit.replace_all,
                                 max_count=(MAX_HTML_BYTES - size) // growth if growth > 0 else None)
        if count == 0:
            details: dict[str, Any] = {"edit_index": index}
            hint = _closest_utf8(current, edit.old_string) if utf8 else closest_match(current, old)
            if hint is not None:
                details["closest_match"] = hint
            raise EditNotFound(
                f"edits[{index}].old_string was not found in the document"
                + (MARKDOWN_NOT_FOUND if markdown else " (matching is literal and case-sensitive)")
                + (f"; the closest passage is {hint!r}" if hint else ""),
                details,
            )
        if count > 1 and not edit.replace_all:
            raise EditAmbiguous(
                f"edits[{index}].old_string matches {count} times; add surrounding text "
                "to make it unique, or set replace_all to true",
                {"edit_index": index, "match_count": count},
            )
        if result is None:  # it would pass the limit: stop here, nothing larger is built
            raise too_large(size + count * growth, index)
        size += count * growth
        current = result
        replacements += count
        applied += 1
    if current == html:
        raise NoChange("The edits leave the document unchanged.")
    return EditOutcome(html=current, edits_applied=applied, replacements=replacements)


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # The HTTP layer leaves these fields to us (entrypoints/http.py); same error as there.
        raise InvalidJson("The request body contains an unpaired UTF-16 surrogate.") from None


def _closest_utf8(data: bytes, needle: str) -> Optional[str]:
    # One decode (~17 ms for 4 MiB of Japanese) keeps the hint identical to the str engine's.
    return closest_match(data.decode("utf-8", "replace"), needle)


def _replace(text: Any, old: Any, new: Any, replace_all: bool, max_count: Optional[int] = None) -> tuple[Any, int]:
    """(text with the replacement made, number of non-overlapping matches).

    The result is None when the edit must fail (no match, several without
    replace_all, or more than `max_count` matches: the result would be over the
    size limit, so it is never built); the count is then exact. Each path scans the text about once
    and copies it once, like a bare `str.replace` (bench/edit_engine.py):
    - replace_all: replace, and derive the count from the change in length
      (a separate count() pass only when old and new have the same length);
    - otherwise: find the first match and look for a second non-overlapping one
      after it (the same test as count() > 1), then replace just the first.
    """
    if replace_all:
        # Growing edits that could pass the limit count first (one more scan);
        # all others derive the count from the change in length.
        if len(old) != len(new) and (max_count is None or len(text) // len(old) <= max_count):
            result = text.replace(old, new)
            return result, (len(result) - len(text)) // (len(new) - len(old))
        count = text.count(old)
        if max_count is not None and count > max_count:
            return None, count
        return (text.replace(old, new) if count else None), count
    first = text.find(old)
    if first < 0:
        return None, 0
    if text.find(old, first + len(old)) >= 0:
        count = text.count(old)
        if count > 1:
            return None, count
    if max_count is not None and max_count < 1:
        return None, 1
    return text.replace(old, new, 1), 1


def closest_match(text: str, needle: str, budget_seconds: float = HINT_BUDGET_SECONDS,
                  clock: Callable[[], float] = time.monotonic) -> Optional[str]:
    """The passage of `text` most like `needle`, to help an agent correct itself;
    None when nothing close enough is found within the work budget.

    Cost: a few linear scans of `text` plus at most HINT_MAX_CANDIDATES scorings
    of a passage about as long as the needle (and never past the time budget),
    so it grows linearly with the document, never with document x needle."""
    if not text or not needle or len(needle) > HINT_MAX_NEEDLE:
        return None
    deadline = clock() + budget_seconds
    # A case slip is the most common one, and one linear scan finds it. (lower()
    # can change a string's length, e.g. "İ"; then positions would not line up.)
    lowered = text.lower()
    aligned = len(lowered) == len(text)
    lowered_needle = needle.lower()
    if aligned:
        hit = lowered.find(lowered_needle)
        if hit >= 0 and len(lowered_needle) == len(needle):
            return text[hit:hit + len(needle)][:CLOSEST_MATCH_MAX_CHARS]
    haystack, pattern = (lowered, lowered_needle) if aligned and len(lowered_needle) == len(needle) else (text, needle)
    # Candidate passages: where short pieces of the needle occur, shifted back
    # by the piece's offset in the needle.
    piece = max(3, min(24, len(needle) // 4))
    last = max(0, len(pattern) - piece)
    offsets = sorted({round(i * last / (HINT_PIECES - 1)) for i in range(HINT_PIECES)}) if last else [0]
    candidates: dict[int, None] = {}
    for offset in offsets:
        chunk = pattern[offset:offset + piece]
        position, seen = haystack.find(chunk), 0
        while position >= 0 and seen < HINT_OCCURRENCES_PER_PIECE and len(candidates) < HINT_MAX_CANDIDATES:
            candidates.setdefault(max(0, position - offset))
            seen += 1
            position = haystack.find(chunk, position + 1)
        if len(candidates) >= HINT_MAX_CANDIDATES or clock() > deadline:
            break
    slack = max(4, len(needle) // 4)
    best_ratio, best = 0.0, None
    folded_needle = _fold(needle)
    scorer = difflib.SequenceMatcher(autojunk=False)
    scorer.set_seq2(folded_needle)
    for start in candidates:
        if clock() > deadline:
            break
        low = max(0, start - slack)
        window = text[low:start + len(needle) + slack]
        folded = _fold(window)
        blocks = [b for b in difflib.SequenceMatcher(None, folded, folded_needle, autojunk=False)
                  .get_matching_blocks() if b.size]
        if not blocks:
            continue
        passage = window[blocks[0].a:blocks[-1].a + blocks[-1].size]
        scorer.set_seq1(folded[blocks[0].a:blocks[-1].a + blocks[-1].size])
        if scorer.real_quick_ratio() <= best_ratio or scorer.quick_ratio() <= best_ratio:
            continue
        ratio = scorer.ratio()
        if ratio > best_ratio:
            best_ratio, best = ratio, passage
    if best is None or best_ratio < 0.6:
        return None
    return best[:CLOSEST_MATCH_MAX_CHARS]


def _fold(text: str) -> str:
    """Lowercase when that keeps every position (a case slip then costs nothing)."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text
