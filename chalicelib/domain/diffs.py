"""Line diff between two versions' HTML: a pure function, bounded work.

The result is data (kinds, line numbers, text); the dashboard's template
escapes the text, so a diff never renders a document's markup.

Work grows with the input's size, never its square (issue 24: difflib took
17.6 s on two 10,000-line versions). The algorithm is a patience diff:
1. the common head and tail are cut off (one linear pass);
2. lines that occur exactly once on each side anchor the middle: the longest
   run of them in the same order (patience sorting, n log n) is kept as
   unchanged, and each stretch between two anchors is diffed the same way;
3. a stretch with no unique line left is diffed with difflib only when it is
   small (at most EXACT_CELLS line pairs); a larger one is shown as removed
   then added, which is correct, only less minimal, and says so (`approximate`).
bench/bounds.py measures it for 1k to 100k lines.
"""
from __future__ import annotations

import bisect
import difflib
from dataclasses import dataclass, field
from typing import Any

MAX_DIFF_LINES = 200_000     # per side; beyond this the page says "too many lines"
MAX_OUTPUT_LINES = 5_000     # rows shown; the rest is cut (and said so)
MAX_ROW_CHARS = 2_000        # one very long (minified) line is cut for display
EXACT_CELLS = 250_000        # a stretch without anchors gets difflib only up to n*m this big
Opcode = tuple[str, int, int, int, int]  # (tag, i1, i2, j1, j2), as difflib's
WORK_FACTOR = 16             # lines visited, at most this many times the input's lines


@dataclass(frozen=True)
class DiffRow:
    kind: str  # "same", "added", "removed" or "gap"
    old_number: int | None
    new_number: int | None
    text: str


@dataclass
class LineDiff:
    rows: list[DiffRow] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    identical: bool = False
    too_large: bool = False
    truncated: bool = False
    approximate: bool = False  # a large stretch without anchors was shown as removed + added


def line_diff(old: str, new: str, context: int = 3) -> LineDiff:
    if old == new:
        return LineDiff(identical=True)
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if len(old_lines) > MAX_DIFF_LINES or len(new_lines) > MAX_DIFF_LINES:
        return LineDiff(too_large=True)
    result = LineDiff()
    opcodes = diff_opcodes(old_lines, new_lines, result)
    for group_index, group in enumerate(grouped(opcodes, context)):
        if group_index or group[0][1] > 0 or group[0][3] > 0:
            result.rows.append(DiffRow("gap", None, None, ""))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for offset, line in enumerate(old_lines[i1:i2]):
                    _add(result, DiffRow("same", i1 + offset + 1, j1 + offset + 1, line))
                continue
            if tag in ("replace", "delete"):
                result.removed += i2 - i1
                for offset, line in enumerate(old_lines[i1:i2]):
                    _add(result, DiffRow("removed", i1 + offset + 1, None, line))
            if tag in ("replace", "insert"):
                result.added += j2 - j1
                for offset, line in enumerate(new_lines[j1:j2]):
                    _add(result, DiffRow("added", None, j1 + offset + 1, line))
    return result


def diff_opcodes(a: list[str], b: list[str], notes: LineDiff | None = None) -> list[Opcode]:
    """difflib-style opcodes (tag, i1, i2, j1, j2) turning `a` into `b`."""
    matches: list[tuple[int, int, int]] = []  # (i, j, size), increasing
    _match(a, b, 0, len(a), 0, len(b), matches, notes)
    opcodes: list[Opcode] = []
    i = j = 0
    for mi, mj, size in matches + [(len(a), len(b), 0)]:
        tag = ("replace" if i < mi and j < mj else "delete" if i < mi else "insert" if j < mj else None)
        if tag:
            opcodes.append((tag, i, mi, j, mj))
        if size:
            if opcodes and opcodes[-1][0] == "equal" and opcodes[-1][2] == mi:
                opcodes[-1] = ("equal", opcodes[-1][1], mi + size, opcodes[-1][3], mj + size)
            else:
                opcodes.append(("equal", mi, mi + size, mj, mj + size))
        i, j = mi + size, mj + size
    return opcodes or [("equal", 0, 0, 0, 0)]


def _match(a: list[str], b: list[str], alo: int, ahi: int, blo: int, bhi: int,
           out: list[tuple[int, int, int]], notes: LineDiff | None) -> None:
    """Append the matching runs of a[alo:ahi] and b[blo:bhi] to `out`, in order.
    An explicit stack instead of recursion: 100,000 anchors never nest deeply."""
    work: list[tuple[Any, ...]] = [("span", alo, ahi, blo, bhi)]
    budget = WORK_FACTOR * ((ahi - alo) + (bhi - blo)) + EXACT_CELLS
    while work:
        item = work.pop()
        if item[0] == "match":
            out.append(item[1:])
            continue
        _, alo, ahi, blo, bhi = item
        # common head and tail
        head = 0
        while alo + head < ahi and blo + head < bhi and a[alo + head] == b[blo + head]:
            head += 1
        tail = 0
        while ahi - tail > alo + head and bhi - tail > blo + head and a[ahi - tail - 1] == b[bhi - tail - 1]:
            tail += 1
        later: list[Any] = []
        if head:
            later.append(("match", alo, blo, head))
        ilo, ihi, jlo, jhi = alo + head, ahi - tail, blo + head, bhi - tail
        budget -= (ihi - ilo) + (jhi - jlo)
        if ilo < ihi and jlo < jhi and budget < 0:
            if notes is not None:
                notes.approximate = True
        elif ilo < ihi and jlo < jhi:
            anchors = _unique_common_in_order(a, b, ilo, ihi, jlo, jhi)
            if anchors:
                pi, pj = ilo, jlo
                for i, j in anchors:
                    later.append(("span", pi, i, pj, j))
                    later.append(("match", i, j, 1))
                    pi, pj = i + 1, j + 1
                later.append(("span", pi, ihi, pj, jhi))
            elif (ihi - ilo) * (jhi - jlo) <= EXACT_CELLS:
                matcher = difflib.SequenceMatcher(None, a[ilo:ihi], b[jlo:jhi], autojunk=False)
                for block in matcher.get_matching_blocks():
                    if block.size:
                        later.append(("match", ilo + block.a, jlo + block.b, block.size))
            elif notes is not None:
                notes.approximate = True
        if tail:
            later.append(("match", ahi - tail, bhi - tail, tail))
        work.extend(reversed(later))


def _unique_common_in_order(a: list[str], b: list[str], ilo: int, ihi: int, jlo: int, jhi: int
                            ) -> list[tuple[int, int]]:
    """Lines occurring exactly once in a[ilo:ihi] and once in b[jlo:jhi], the
    longest subsequence of them in the same order on both sides (patience sorting)."""
    count_a: dict[str, int] = {}
    for i in range(ilo, ihi):
        line = a[i]
        count_a[line] = -1 if line in count_a else i
    count_b: dict[str, int] = {}
    for j in range(jlo, jhi):
        line = b[j]
        if line in count_a and count_a[line] >= 0:
            count_b[line] = -1 if line in count_b else j
    pairs = [(count_a[line], j) for line, j in count_b.items() if j >= 0]
    if not pairs:
        return []
    pairs.sort()
    # Longest increasing subsequence of j (i already increasing).
    tops: list[int] = []          # smallest last j of a run of each length
    top_index: list[int] = []     # which pair ends it
    previous = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(tops, j)
        if at == len(tops):
            tops.append(j)
            top_index.append(k)
        else:
            tops[at] = j
            top_index[at] = k
        previous[k] = top_index[at - 1] if at else -1
    chain, k = [], top_index[-1]
    while k >= 0:
        chain.append(pairs[k])
        k = previous[k]
    chain.reverse()
    return chain


def grouped(opcodes: list[Opcode], n: int = 3) -> list[list[Opcode]]:
    """Change hunks with `n` lines of context (difflib's get_grouped_opcodes, on our opcodes)."""
    codes = list(opcodes)
    if not codes:
        codes = [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    nn = n + n
    groups, group = [], []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > nn:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _add(result: LineDiff, row: DiffRow) -> None:
    if len(result.rows) >= MAX_OUTPUT_LINES:
        result.truncated = True
        return
    if len(row.text) > MAX_ROW_CHARS:
        row = DiffRow(row.kind, row.old_number, row.new_number, row.text[:MAX_ROW_CHARS] + " …")
    result.rows.append(row)
