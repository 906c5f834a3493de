"""The literal find/replace engine: a pure function, no I/O.

Edits apply in order; each sees the result of the ones before. Matching is
literal and case-sensitive. The batch is atomic: the input string is never
modified (str is immutable), and any failing edit raises before a result exists.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable, Optional, Protocol

from chalicelib.domain.limits import too_large
from chalicelib.errors import EditAmbiguous, EditNotFound, InvalidJson, NoChange
from chalicelib.models import MAX_HTML_BYTES

CLOSEST_MATCH_MAX_CHARS = 200
# Fuzzy search is quadratic-ish; only try it where it stays cheap.
CLOSEST_MATCH_MAX_DOCUMENT = 400_000


class Edit(Protocol):
    old_string: str
    new_string: str
    replace_all: bool


@dataclass(frozen=True)
class EditOutcome:
    html: str  # bytes for apply_edits_utf8
    edits_applied: int
    replacements: int


def apply_edits(html: str, edits: Iterable[Edit]) -> EditOutcome:
    return _apply(html, edits, utf8=False, size_bytes=len(_utf8(html)))


# Above this many edits a non-ASCII document is decoded first (see below).
MAX_EDITS_ON_BYTES = 8


def apply_edits_utf8(data: bytes, edits: Iterable[Edit], max_edits_on_bytes: int = MAX_EDITS_ON_BYTES
                     ) -> EditOutcome:
    """apply_edits on the UTF-8 bytes of a stored document: the same result
    (encoded), counts and errors, by the cheaper of two equivalent routes.

    Matching the encoded strings in the bytes is exact (UTF-8 is
    self-synchronising: a match always falls on character boundaries, and the
    non-overlapping occurrences are the same) and skips a decode and an encode
    of up to 4 MiB (~17 ms for Japanese). But each edit then scans bytes, not
    characters: 2.6x more units in CJK text, ~1.3 ms more per edit on 4 MiB. So
    ASCII documents and short batches stay on bytes; long batches on non-ASCII
    text are decoded, edited as str, and encoded (bench/edit_engine.py)."""
    edits = list(edits)
    if len(edits) <= max_edits_on_bytes or data.isascii():
        return _apply(data, edits, utf8=True)
    outcome = _apply(data.decode("utf-8"), edits, utf8=False, size_bytes=len(data))
    return EditOutcome(_utf8(outcome.html), outcome.edits_applied, outcome.replacements)


def _apply(html, edits: Iterable[Edit], utf8: bool, size_bytes: Optional[int] = None) -> EditOutcome:
    """`size_bytes` is the UTF-8 size of `html` (its length when `utf8`): every
    edit's result size is computed from it before the result is built, so no
    string over the limit is ever made (peak memory stays a few times 4 MiB)."""
    current = html
    size = len(html) if utf8 else size_bytes
    replacements = 0
    applied = 0
    for index, edit in enumerate(edits):
        old, new = edit.old_string, edit.new_string
        if utf8:
            old, new = _utf8(old), _utf8(new)
            growth = len(new) - len(old)
        else:
            growth = len(_utf8(new)) - len(_utf8(old))
        result, count = _replace(current, old, new, edit.replace_all,
                                 max_count=(MAX_HTML_BYTES - size) // growth if growth > 0 else None)
        if count == 0:
            details: dict = {"edit_index": index}
            hint = _closest_utf8(current, edit.old_string) if utf8 else closest_match(current, old)
            if hint is not None:
                details["closest_match"] = hint
            raise EditNotFound(
                f"edits[{index}].old_string was not found in the document "
                "(matching is literal and case-sensitive)"
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
    # closest_match gives up above CLOSEST_MATCH_MAX_DOCUMENT characters; a
    # character is at most 4 bytes, so decode only when it might not.
    if len(data) > CLOSEST_MATCH_MAX_DOCUMENT * 4:
        return None
    return closest_match(data.decode("utf-8", "replace"), needle)


def _replace(text, old, new, replace_all: bool, max_count: Optional[int] = None):
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


def closest_match(text: str, needle: str) -> Optional[str]:
    """The passage of `text` most like `needle`, to help an agent correct itself."""
    if not text or len(text) > CLOSEST_MATCH_MAX_DOCUMENT or len(needle) > CLOSEST_MATCH_MAX_CHARS * 5:
        return None
    # Case-insensitive exact hit is the most common slip and is cheap to find.
    lowered = text.lower().find(needle.lower())
    if lowered >= 0:
        return text[lowered:lowered + len(needle)]
    window = max(len(needle), 1)
    step = max(1, window // 4)
    best_ratio, best_start = 0.0, -1
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(needle)
    for start in range(0, max(1, len(text) - window + 1), step):
        matcher.set_seq1(text[start:start + window])
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_ratio, best_start = ratio, start
    if best_start < 0 or best_ratio < 0.6:
        return None
    return text[best_start:best_start + window][:CLOSEST_MATCH_MAX_CHARS]
