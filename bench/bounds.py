"""Issue 24: work per request grows with the input, never its square.

    .venv/bin/python -m bench.bounds [--repeat N] [--old]

1. A refused edit (its `closest_match` hint) on documents of 1 KB to 4 MiB,
   against a floor measured in the same run: one `str.find` of the needle
   plus one `lower()` of the document (the least a case-insensitive search
   costs).
2. The dashboard's line diff for 1k to 100k lines (a change every ~100 lines,
   every other line changed, and a full rewrite with no common line), against a floor: the
   two `splitlines()` and a set of the lines.
The last column compares each step with the one before: time ratio over size
ratio; about 1 is linear, and n log n stays well under 2. `--old` also times
difflib's whole-document diff (what the dashboard used) up to 10k lines.
"""
from __future__ import annotations

import argparse
import difflib
import random
from types import SimpleNamespace

from bench._common import median_cpu, ms, print_header, print_table, ratio

SIZES = [1_000, 16_000, 256_000, 1024 * 1024, 4 * 1024 * 1024]
LINES = [1_000, 10_000, 100_000]


def _document(size: int) -> str:
    rng = random.Random(size)
    words = ["quarterly", "report", "revenue", "<p>", "</p>", "growth", "the", "of", "margin", "team"]
    parts, total = [], 0
    while total < size:
        word = rng.choice(words) + str(rng.randrange(1000))
        parts.append(word)
        total += len(word) + 1
    return " ".join(parts)[:size]




def refused_edits(repeat: int) -> None:
    from chalicelib.domain.edits import apply_edits_utf8
    from chalicelib.errors import EditNotFound

    needle = "the quarterly revenue grew by a third in the last period, says the team"
    edit = SimpleNamespace(old_string=needle, new_string="x", replace_all=False)
    rows, previous = [], None
    for size in SIZES:
        data = _document(size).encode("utf-8")

        def refused():
            try:
                apply_edits_utf8(data, [edit])
            except EditNotFound:
                return
            raise AssertionError("the edit was expected to fail")

        def floor():
            text = data.decode("utf-8")
            text.find(needle)
            text.lower().find(needle.lower())

        t_floor, t_edit = median_cpu(floor, repeat), median_cpu(refused, repeat)
        growth = "" if previous is None else f"{(t_edit / previous[1]) / (size / previous[0]):.2f}"
        rows.append([f"{size:,} B", ms(t_floor), ms(t_edit), ratio(t_edit, t_floor), growth])
        previous = (size, t_edit)
    print_table(["document", "floor (find + lower)", "refused edit", "vs floor", "growth vs size"], rows)


KINDS = {"sparse": "1 change per 97 lines", "dense": "every other line changed", "rewrite": "rewritten"}


def _versions(lines: int, kind: str) -> tuple[str, str]:
    rng = random.Random(lines)
    old = [f"<p>line {i} {rng.randrange(10**6)} of the report</p>" for i in range(lines)]
    if kind == "rewrite":
        new = [f"<li>item {i} {rng.randrange(10**6)}</li>" for i in range(lines)]
    else:
        new = list(old)
        for index in range(0, lines, 97 if kind == "sparse" else 2):
            new[index] = new[index].replace("report", "summary")
        new[lines // 2:lines // 2] = ["<p>inserted</p>"] * 5
    return "\n".join(old), "\n".join(new)


def diffs(repeat: int, old_too: bool) -> None:
    from chalicelib.domain.diffs import line_diff

    rows, previous = [], {}
    for rewrite in KINDS:
        for lines in LINES:
            old, new = _versions(lines, rewrite)

            def floor():
                a, b = old.splitlines(), new.splitlines()
                set(a) & set(b)

            t_floor, t_diff = median_cpu(floor, repeat), median_cpu(lambda: line_diff(old, new), repeat)
            before = previous.get(rewrite)
            growth = "" if before is None else f"{(t_diff / before[1]) / (lines / before[0]):.2f}"
            previous[rewrite] = (lines, t_diff)
            t_old = ""
            if old_too and lines <= 10_000:
                a, b = old.splitlines(), new.splitlines()
                t_old = ms(median_cpu(lambda: list(difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3)), 1))
            result = line_diff(old, new)
            kind = KINDS[rewrite]
            rows.append([f"{lines:,} lines, {kind}", ms(t_floor), ms(t_diff), ratio(t_diff, t_floor), growth,
                         f"+{result.added} −{result.removed}{' (cut)' if result.truncated else ''}"] +
                        ([t_old] if old_too else []))
    print_table(["versions", "floor (split + set)", "line_diff", "vs floor", "growth vs size", "result"] +
                (["difflib (old)"] if old_too else []), rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--old", action="store_true", help="also time the old difflib diff (slow)")
    args = parser.parse_args()
    print_header("Refused edit (closest_match hint), CPU time, median")
    refused_edits(args.repeat)
    print_header("Dashboard line diff, CPU time, median")
    diffs(args.repeat, args.old)


if __name__ == "__main__":
    main()
