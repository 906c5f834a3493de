"""Line diff between two versions' HTML: a pure function over difflib.

The result is data (kinds, line numbers, text); the dashboard's template
escapes the text, so a diff never renders a document's markup.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

MAX_DIFF_LINES = 50_000      # per side; beyond this difflib gets slow, so refuse
MAX_OUTPUT_LINES = 5_000     # rows shown; the rest is cut (and said so)
MAX_ROW_CHARS = 2_000        # one very long (minified) line is cut for display


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


def line_diff(old: str, new: str, context: int = 3) -> LineDiff:
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if old == new:
        return LineDiff(identical=True)
    if len(old_lines) > MAX_DIFF_LINES or len(new_lines) > MAX_DIFF_LINES:
        return LineDiff(too_large=True)
    result = LineDiff()
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines)
    for group_index, group in enumerate(matcher.get_grouped_opcodes(context)):
        if group_index or group[0][1] > 0 or group[0][3] > 0:
            result.rows.append(DiffRow("gap", None, None, ""))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for offset, line in enumerate(old_lines[i1:i2]):
                    _add(result, DiffRow("same", i1 + offset + 1, j1 + offset + 1, line))
                continue
            if tag in ("replace", "delete"):
                for offset, line in enumerate(old_lines[i1:i2]):
                    result.removed += 1
                    _add(result, DiffRow("removed", i1 + offset + 1, None, line))
            if tag in ("replace", "insert"):
                for offset, line in enumerate(new_lines[j1:j2]):
                    result.added += 1
                    _add(result, DiffRow("added", None, j1 + offset + 1, line))
    return result


def _add(result: LineDiff, row: DiffRow) -> None:
    if len(result.rows) >= MAX_OUTPUT_LINES:
        result.truncated = True
        return
    if len(row.text) > MAX_ROW_CHARS:
        row = DiffRow(row.kind, row.old_number, row.new_number, row.text[:MAX_ROW_CHARS] + " …")
    result.rows.append(row)
