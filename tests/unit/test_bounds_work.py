"""Issue 24: work per request is bounded by the input's size, not its square.

The findings were measured in seconds (a refused edit's hint: 50 s on 100,000
characters; the dashboard diff: 17.6 s on two 10,000-line versions). Tests
do not time things (bench/bounds.py does): they count the work the quadratic
part was given, which the old code made grow with document x needle."""
from __future__ import annotations

import difflib
import random
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.domain import diffs, edits
from chalicelib.domain.edits import apply_edits, apply_edits_utf8, closest_match
from chalicelib.errors import EditNotFound


def E(old, new, replace_all=False):
    return SimpleNamespace(old_string=old, new_string=new, replace_all=replace_all)


class CountingMatcher(difflib.SequenceMatcher):
    """difflib's matcher, counting the cells (len(a) x len(b)) it is asked to compare."""
    cells = 0

    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):
        ahi = len(self.a) if ahi is None else ahi
        bhi = len(self.b) if bhi is None else bhi
        CountingMatcher.cells += (ahi - alo) * (bhi - blo)
        return super().find_longest_match(alo, ahi, blo, bhi)


@pytest.fixture
def counted(monkeypatch):
    CountingMatcher.cells = 0
    monkeypatch.setattr(difflib, "SequenceMatcher", CountingMatcher)
    return CountingMatcher


def _prose(chars: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    words = ["quarterly", "report", "revenue", "<p>", "</p>", "growth", "the", "of", "margin", "team"]
    out, size = [], 0
    while size < chars:
        word = rng.choice(words) + str(rng.randrange(1000))
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:chars]


# ------------------------------------------------------------------ edit hints

@pytest.mark.parametrize("chars", [100_000, 4 * 1024 * 1024])
def test_refused_edit_hint_work_does_not_grow_with_the_document(counted, chars):
    """Finding: a refused edit on 100,000 characters cost 50 s computing
    closest_match. The fuzzy part now scores a fixed number of passages."""
    html = _prose(chars)
    needle = "the quarterly revenue grew by a third in the last period " * 3
    with pytest.raises(EditNotFound):
        apply_edits(html, [E(needle, "x")])
    # At most HINT_MAX_CANDIDATES passages, each (needle + slack)^2 twice.
    bound = edits.HINT_MAX_CANDIDATES * 2 * (len(needle) * 1.5 + 8) ** 2
    assert counted.cells <= bound, counted.cells


def test_refused_edit_on_stored_bytes_gives_a_hint_at_any_size():
    """The bytes route used to give up above 1.6 MB; now the hint is the same at any size."""
    html = _prose(3 * 1024 * 1024) + " <h1>Quarterly Report</h1>"
    with pytest.raises(EditNotFound) as info:
        apply_edits_utf8(html.encode(), [E("quarterly report</h1>", "x")])
    assert info.value.details["closest_match"] == "Quarterly Report</h1>"


def test_hint_respects_its_time_budget():
    """With the budget spent before scoring starts, nothing is scored: no hint."""
    ticks = iter([0.0] + [10.0] * 100)
    assert closest_match("<p>The colour is red</p>", "The color is red", clock=lambda: next(ticks)) is None
    assert "colour is red" in closest_match("<p>The colour is red</p>", "The color is red")


def test_hint_finds_near_misses_far_into_a_large_document():
    html = _prose(1_000_000) + " <p>The total revenue for 2026 was 4.2 million</p> " + _prose(1000, 3)
    hint = closest_match(html, "The total revenue for 2025 was 4.2 million")
    assert hint == "The total revenue for 2026 was 4.2 million"


def test_hint_with_a_case_changing_lowercase():
    # "İ".lower() is two characters: positions in the lowered text shift.
    html = "İİİİ <p>Quarterly Report</p>"
    assert closest_match(html, "quarterly report") == "Quarterly Report"


# ------------------------------------------------------------------ diff

def _lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"<p>line {seed}.{rng.randrange(10**9)} of the report</p>" for _ in range(count)]


def test_diff_of_two_10k_line_versions_is_not_quadratic(counted):
    """Finding: 17.6 s for two 10,000-line versions (difflib over all lines).
    Every line differs here, the worst case for difflib."""
    old, new = _lines(10_000, 1), _lines(10_000, 2)
    result = diffs.line_diff("\n".join(old), "\n".join(new))
    assert counted.cells <= diffs.EXACT_CELLS + 20_000, counted.cells
    assert result.removed == 10_000 and result.added == 10_000
    assert result.truncated  # the page shows the first MAX_OUTPUT_LINES rows and says so


def test_diff_with_scattered_changes_is_exact_and_linear(counted):
    old = _lines(100_000, 3)
    new = list(old)
    for index in range(0, 100_000, 997):
        new[index] = new[index].replace("report", "summary")
    del new[500:510]
    new.insert(40_000, "<p>inserted</p>")
    result = diffs.line_diff("\n".join(old), "\n".join(new))
    changed = len(range(0, 100_000, 997))
    assert result.added == changed + 1
    assert result.removed == changed + 10
    assert counted.cells <= diffs.EXACT_CELLS


def test_diff_past_its_budget_is_cut_with_a_note(counted, monkeypatch):
    monkeypatch.setattr(diffs, "EXACT_CELLS", 10)
    old = ["a", "b"] * 20
    new = ["b", "a"] * 20  # no line is unique: no anchors
    result = diffs.line_diff("\n".join(old), "\n".join(new))
    assert result.approximate and result.removed == 40 and result.added == 40


lines = st.lists(st.sampled_from(["a", "b", "c", "<p>", "</p>", ""]), max_size=40)


@settings(max_examples=400, deadline=None)
@given(lines, lines, st.integers(min_value=0, max_value=3))
def test_diff_rows_rebuild_both_versions(old, new, context):
    """Whatever the input, the opcodes turn the old lines into the new ones."""
    rebuilt = []
    for tag, i1, i2, j1, j2 in diffs.diff_opcodes(old, new):
        if tag == "equal":
            assert old[i1:i2] == new[j1:j2]
        rebuilt.extend(new[j1:j2])
    assert rebuilt == new
    assert [i1 for _, i1, _, _, _ in diffs.diff_opcodes(old, new)] == sorted(
        i1 for _, i1, _, _, _ in diffs.diff_opcodes(old, new))
    result = diffs.line_diff("\n".join(old), "\n".join(new), context)
    if "\n".join(old) != "\n".join(new):
        old_lines, new_lines = "\n".join(old).splitlines(), "\n".join(new).splitlines()
        # The counts agree with the lengths, and every shown row is a real line of its side.
        assert result.added - result.removed == len(new_lines) - len(old_lines)
        for row in result.rows:
            if row.kind in ("same", "removed"):
                assert old_lines[row.old_number - 1] == row.text
            if row.kind in ("same", "added"):
                assert new_lines[row.new_number - 1] == row.text
