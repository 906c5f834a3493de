"""The edit engine's single-pass replace (issue 10) behaves exactly like the
straightforward count-then-replace engine it replaced: same result, same counts,
same errors with the same details."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.domain.edits import _replace, apply_edits
from chalicelib.errors import EditAmbiguous, EditNotFound, NoChange


@dataclass(frozen=True)
class E:
    old_string: str
    new_string: str
    replace_all: bool = False


def reference(html: str, edits) -> tuple[str, int, int]:
    """The engine as first written: count() then replace() for every edit."""
    current, replacements = html, 0
    for index, edit in enumerate(edits):
        count = current.count(edit.old_string)
        if count == 0:
            raise EditNotFound("", {"edit_index": index})
        if count > 1 and not edit.replace_all:
            raise EditAmbiguous("", {"edit_index": index, "match_count": count})
        current = current.replace(edit.old_string, edit.new_string)
        replacements += count
    if current == html:
        raise NoChange("")
    return current, len(edits), replacements


def outcome(fn):
    try:
        return ("ok", fn())
    except (EditNotFound, EditAmbiguous, NoChange) as exc:
        details = dict(exc.details or {})
        details.pop("closest_match", None)  # the reference does not compute hints
        return (type(exc).__name__, details)


# A tiny alphabet makes matches, repeats and overlaps ("aaa" in "aaaa") common.
text = st.text(alphabet="ab\u00e9\u732b", max_size=40)
needle = st.text(alphabet="ab\u00e9\u732b", min_size=1, max_size=4)
edits = st.lists(st.builds(E, needle, st.text(alphabet="ab\u00e9\u732bx", max_size=5), st.booleans()),
                 min_size=1, max_size=6)


@settings(max_examples=600, deadline=None)
@given(text, edits)
def test_same_outcome_as_count_then_replace(html, batch):
    fast = outcome(lambda: (lambda o: (o.html, o.edits_applied, o.replacements))(apply_edits(html, batch)))
    assert fast == outcome(lambda: reference(html, batch))


@settings(max_examples=400, deadline=None)
@given(text, st.text(alphabet="ab\u00e9\u732b", max_size=4), st.text(alphabet="abx", max_size=4), st.booleans())
def test_replace_counts_non_overlapping_matches(html, old, new, replace_all):
    result, count = _replace(html, old, new, replace_all)
    assert count == html.count(old)
    if count == 1 or (count and replace_all):
        assert result == html.replace(old, new)
    else:
        assert result is None or count == 0


def test_overlapping_occurrences_are_not_ambiguous_when_they_overlap():
    # "aa" occurs at 0 and 1 in "aaa" but only once without overlap: unique.
    assert apply_edits("aaa", [E("aa", "b")]).html == "ba"
    with pytest.raises(EditAmbiguous) as info:
        apply_edits("aaaa", [E("aa", "b")])
    assert info.value.details["match_count"] == 2
