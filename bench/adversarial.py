"""Adversarial inputs (issue 33): what the worst page, Markdown source, card title or
refused edit a stranger can send costs, at 256 KiB, 1 MiB and 4 MiB.

    .venv/bin/python -m bench.adversarial [--sizes 256K,1M,4M] [--families md-images,...] [--no-floor]

Every family is an input generator (unclosed openers, repeated openers, long words,
deep nesting, huge tables, entity floods...) filled to each size and run once through
the code a request runs:

- `html-*`: DocumentService.publish of the page with no title (so the title is looked
  for), on the embedded store (a temporary folder), a new Pro workspace each time;
- `md-*`: the same publish with `format: markdown`; the floor is markdown-it-py alone
  (`MarkdownIt("gfm-like").render`) on the same source, in the same run;
- `card-*`: the preview card of a document with that title (domain/cards.render_card;
  a stored title is at most 500 characters, the card must not care);
- `edit-*`: the edit engine on the stored bytes with an edit that does not match
  (`apply_edits_utf8`: the refusal looks for the closest passage).

CPU time is `process_time` (what a Lambda is billed and limited by). "growth" is the
4 MiB time over the 1 MiB time: linear work is about 4x, quadratic 16x. The contract's
bound (section 4, "Bounds, second pass"): every family under 10 s at 4 MiB, growth at
most 5x. An outcome of 413 or 422 is a refusal (page too large, or "too complex to
render"): nothing stored, the work up to the refusal counted.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from types import SimpleNamespace
from typing import Callable

from bench._common import print_header, print_table

KIB = 1024
MIB = 1024 * KIB
BUDGET_SECONDS = 10.0
MAX_GROWTH = 5.0


def _fill(unit: str, size: int, head: str = "", tail: str = "") -> str:
    body = size - len(head) - len(tail)
    return head + (unit * (body // len(unit) + 1))[:max(0, body)] + tail


def _scan_keywords() -> str:
    from chalicelib.domain import scanning

    return " = ".join(sorted({k.decode() for rule in scanning.rule_set().rules for k in rule.keywords})) + "\n"


def _runs(char: str, size: int) -> str:
    out, total, k = [], 0, 1
    while total < size:
        out.append(char * k + " ")
        total += k + 1
        k += 1
    return "".join(out)[:size]


# Each generator: size in bytes -> text of about that many bytes (ASCII unless said).
HTML: dict[str, Callable[[int], str]] = {
    "html-prose": lambda n: _fill("<p>Plain prose with <b>tags</b> &amp; entities.</p>\n", n, "<title>T</title>"),
    "html-comments": lambda n: _fill("<!--", n),  # the finding: unclosed comment openers
    "html-titles": lambda n: _fill("<title>", n),
    "html-headings": lambda n: _fill("<h1>", n),
    "html-angles": lambda n: _fill("<", n),
    "html-open-tags": lambda n: _fill("<a ", n),
    "html-title-of-tags": lambda n: _fill("<", n, "<title>", "</title>"),
    "html-title-entities": lambda n: _fill("&amp;", n, "<title>", "</title>"),
    "html-closers": lambda n: _fill("</title ", n, "<title>"),
    # the secret scan (issue 36): every rule's keyword, and allowlisted example keys
    "html-scan-keywords": lambda n: _fill(_scan_keywords(), n, "<title>t</title>"),
    "html-scan-example-keys": lambda n: _fill("aws_key = AKIAIOSFODNN7EXAMPLE\n", n, "<title>t</title>"),
}

MARKDOWN: dict[str, Callable[[int], str]] = {
    "md-prose": lambda n: _fill("A sentence with a [link](https://example.com/p), *emphasis* and `code`. ", n, "# T\n\n"),
    "md-images": lambda n: _fill("![", n, "# t\n\n"),  # the finding
    "md-brackets": lambda n: _fill("[", n, "# t\n\n"),
    "md-brackets-closed": lambda n: _fill("[", n, "# t\n\n", "]"),
    "md-images-closed": lambda n: _fill("![", n, "# t\n\n", "]"),
    "md-link-openers": lambda n: _fill("[a](", n, "# t\n\n"),
    "md-nested-links": lambda n: _fill("[a", n, "# t\n\n", "](b)"),
    "md-angles": lambda n: _fill("<", n, "# t\n\n"),
    "md-open-tags": lambda n: _fill("<a ", n, "# t\n\n"),
    "md-comments": lambda n: _fill("<!--", n, "# t\n\n"),
    "md-backticks": lambda n: "# t\n\n" + _runs("`", n - 5),  # runs of 1, 2, 3... backticks: none closes
    "md-emphasis": lambda n: _fill("*_", n, "# t\n\n"),
    "md-emphasis-words": lambda n: _fill("*a ", n, "# t\n\n"),
    "md-strikethrough": lambda n: _fill("~~a ", n, "# t\n\n"),
    "md-entities": lambda n: _fill("&amp;", n, "# t\n\n"),
    "md-escapes": lambda n: _fill("\\*", n, "# t\n\n"),
    "md-autolinks": lambda n: _fill("<http://a", n, "# t\n\n"),
    "md-linkify": lambda n: _fill("www.a.b ", n, "# t\n\n"),
    "md-linkify-long": lambda n: _fill("a.", n, "# t\n\nhttp://"),
    "md-emails": lambda n: _fill("a@b.", n, "# t\n\n"),
    "md-nested-lists": lambda n: _fill("- ", n, "# t\n\n", "x\n"),
    "md-nested-quotes": lambda n: _fill("> ", n, "# t\n\n", "x\n"),
    "md-deep-list-items": lambda n: _fill("".join("  " * i + "- x\n" for i in range(200)), n, "# t\n\n"),
    "md-table": lambda n: _fill("| x | y |\n", n, "# t\n\n| a | b |\n|---|---|\n"),
    "md-wide-table": lambda n: "# t\n\n" + "".join(row * ((n - 16) // 6) + "|\n" for row in ("|a", "|-", "|x")),
    "md-long-line": lambda n: _fill("word ", n, "# t\n\n"),
    "md-headings": lambda n: _fill("# a\n", n),
    "md-references": lambda n: _fill("[a]: b\n", n, "# t\n\n"),
    "md-reference-uses": lambda n: _fill("[a] ", n, "# t\n\n[a]: /u\n\n"),
    "md-fences": lambda n: _fill("```\n", n, "# t\n\n"),
    # Pygments' Java lexer is quadratic on this: blocks just under the highlighting cap.
    "md-code-quadratic": lambda n: _fill("```java\n" + " a" * 3990 + "\n```\n", n, "# t\n\n"),
    "md-html-blocks": lambda n: _fill("<div>\n", n, "# t\n\n"),
    "md-hard-breaks": lambda n: _fill("a  \n", n, "# t\n\n"),
}

CARDS: dict[str, Callable[[int], str]] = {
    "card-long-word": lambda n: _fill("W", n),  # the finding (500 characters cost 6.2 s)
    "card-words": lambda n: _fill("Quarterly ", n),
    "card-wide-glyphs": lambda n: _fill("\u7e41", n // 3),  # CJK: 3 bytes each
}

EDITS: dict[str, Callable[[int], str]] = {
    "edit-near-misses": lambda n: _fill("the quarterly revenue grew by a third ", n),
    "edit-one-letter": lambda n: _fill("a", n),
    "edit-markup": lambda n: _fill("<p>x</p>", n),
}
FAMILIES = {**HTML, **MARKDOWN, **CARDS, **EDITS}


class Publisher:
    """DocumentService.publish on a temporary embedded store, a new Pro workspace (no caps)
    per call, the clock moved on a minute each time (no rate limit in the way)."""

    def __init__(self) -> None:
        os.environ["DOCPUB_STORAGE"] = "sqlite"
        os.environ["DOCPUB_DATA_DIR"] = tempfile.mkdtemp(prefix="docpub-bench-adversarial-")
        from chalicelib.services.documents import DocumentService
        from chalicelib.services.workspaces import WorkspaceService
        from chalicelib.wiring import new_context

        self.now = 1_795_000_000.0
        self.ctx = new_context(clock=lambda: self.now)
        self.ctx.backoff = lambda attempt: None
        self.documents, self.workspaces = DocumentService(self.ctx), WorkspaceService(self.ctx)

    def __call__(self, text: str, fmt: str) -> str:
        from chalicelib.errors import DocpubError
        from chalicelib.models import PublishRequest
        from chalicelib.services.auth import credentials_from_headers

        self.now += 120
        _ws, key = self.workspaces.create_workspace("Bench", "pro")
        who = credentials_from_headers({"x-api-key": key.api_key})
        request = PublishRequest.model_validate({"html": text, "format": fmt})
        try:
            self.documents.publish(who, request)
            return "200"
        except DocpubError as exc:
            return f"{exc.status} {exc.code}"


def _run(family: str, text: str, publisher: Publisher) -> tuple[float, str]:
    """(CPU seconds, outcome) of the family's request path on `text`."""
    start = time.process_time()
    if family.startswith("html-"):
        outcome = publisher(text, "html")
    elif family.startswith("md-"):
        outcome = publisher(text, "markdown")
    elif family.startswith("card-"):
        from chalicelib.domain.cards import render_card

        render_card(text, "Bench")
        outcome = "png"
    else:
        from chalicelib.domain.edits import apply_edits_utf8
        from chalicelib.errors import DocpubError

        needle = ("the quarterly revenue grew by a fourth " * 26)[:1000]
        try:
            apply_edits_utf8(text.encode(), [SimpleNamespace(old_string=needle, new_string="x",
                                                             replace_all=False)])
            outcome = "applied"
        except DocpubError as exc:
            outcome = f"{exc.status} {exc.code}"
    return time.process_time() - start, outcome


def _floor(text: str) -> float:
    from markdown_it import MarkdownIt

    start = time.process_time()
    MarkdownIt("gfm-like").render(text)
    return time.process_time() - start


def _size_name(size: int) -> str:
    return f"{size // MIB} MiB" if size % MIB == 0 else f"{size // KIB} KiB"


def _parse_size(text: str) -> int:
    text = text.strip().upper()
    for suffix, unit in (("K", KIB), ("M", MIB)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * unit)
    return int(text)


def bench(families: list[str], sizes: list[int], floor: bool) -> list[list[str]]:
    publisher = Publisher()
    _run("md-prose", MARKDOWN["md-prose"](4 * KIB), publisher)  # imports and caches warm
    _run("html-prose", HTML["html-prose"](4 * KIB), publisher)
    rows = []
    for family in families:
        times, outcome = [], ""
        for size in sizes:
            seconds, outcome = _run(family, FAMILIES[family](size), publisher)
            times.append(seconds)
        growth = times[-1] / times[-2] if len(times) > 1 and times[-2] > 0.005 else None
        floor_cell = ratio_cell = "-"
        if floor and family.startswith("md-"):
            floor_seconds = _floor(FAMILIES[family](sizes[-1]))
            floor_cell = f"{floor_seconds:.2f} s"
            ratio_cell = f"{times[-1] / floor_seconds:.2f}x" if floor_seconds > 0.005 else "-"
        verdict = "ok" if times[-1] < BUDGET_SECONDS and (growth is None or growth <= MAX_GROWTH) else "OVER"
        rows.append([family, *(f"{t:.2f} s" for t in times), f"{growth:.1f}x" if growth else "-",
                     floor_cell, ratio_cell, outcome, verdict])
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="256K,1M,4M", help="input sizes, comma-separated (K, M)")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated; a prefix (md-) selects many")
    parser.add_argument("--no-floor", action="store_true", help="skip markdown-it-py alone (slow on the worst)")
    args = parser.parse_args()
    sizes = [_parse_size(s) for s in args.sizes.split(",")]
    wanted = [f.strip() for f in args.families.split(",") if f.strip()]
    families = [name for name in FAMILIES if any(name == w or (w.endswith("-") and name.startswith(w))
                                                   for w in wanted)]
    print_header("Adversarial inputs: CPU per family and size (issue 33)")
    rows = bench(families, sizes, not args.no_floor)
    last = _size_name(sizes[-1])
    print()
    print_table(["family", *(_size_name(s) for s in sizes), f"growth to {last}",
                 f"markdown-it-py alone, {last}", "ratio", f"outcome at {last}", "bound"], rows)


if __name__ == "__main__":
    main()
