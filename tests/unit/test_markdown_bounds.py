"""Markdown rendering costs what its page is worth, and no more (issue 24's "left alone").

The finding: a dense Markdown source near the 4 MiB limit (tables, fenced code) cost up to
~26 s of CPU before it was refused because its page passed 4 MiB (API Gateway gives up at
29 s). On the way, two plugins turned out quadratic: 64 KiB of repeated headings took 17 s
(the anchors plugin counts "-1", "-2"... from 1 for every repeat) and task items scanned back
to their list each time. Tests do not time things (bench/content.py --only worst does): they
count the work done, which the old code made grow with the whole source or its square.
"""
from __future__ import annotations

import random
import sys
from typing import Any

import pytest

from chalicelib.domain import limits, markdown
from chalicelib.errors import DocumentTooLarge

# ------------------------------------------------------------------ the same output


def _plugins_render(source: str) -> tuple[str, Any]:
    """The renderer before this change: markdown-it's "gfm-like" with mdit-py-plugins' tasklists
    and anchors plugins (the options Docpub used), the same highlighter."""
    from markdown_it import MarkdownIt
    from markdown_it.utils import OptionsDict
    from mdit_py_plugins.anchors import anchors_plugin
    from mdit_py_plugins.tasklists import tasklists_plugin

    md = MarkdownIt("gfm-like", {"highlight": None})
    md.use(tasklists_plugin)
    md.use(anchors_plugin, min_level=1, max_level=6, permalink=True, permalinkSymbol="#", permalinkBefore=False)
    options = OptionsDict({**md.options, "highlight": markdown._Highlighter()})  # type: ignore[arg-type]
    env: dict[str, Any] = {}
    tokens = md.parse(source, env)
    return md.renderer.render(tokens, options, env), markdown.first_heading(tokens)


UNITS = ["# h\n", "## h\n", "# h-1\n", "- [ ] t\n", "- [x] done http://example.com\n", "- a\n", "  - [X] b\n",
         "    1. [ ] deep\n", "> q\n", "> - [ ] quoted\n", "text *e* **s** &amp; &#x41; \\*\n", "\n",
         "```python\nx = 1  # c\n```\n", "```nolang\nplain <b>\n```\n", "| a | b |\n|---|:-:|\n| [ ] | y |\n",
         "[r]: /u\n", "see [r] and [x][r]\n", "<div>\n# not a heading\n</div>\n", "    code\n", "1. one\n",
         "Head\n---\n", "www.example.org foo@bar.com\n", "- [ ]\ttab\n", "***\n", "# Title `code` <em>x</em>\n"]


def corpus() -> list[str]:
    from bench.content import markdown_source

    rng = random.Random(11)
    docs = [markdown_source(100_000)]
    for k in range(120):
        docs.append("".join(rng.choice(UNITS) for _ in range(rng.randint(1, 2000 if k % 40 == 0 else 60))))
    return docs


@pytest.mark.parametrize("window", [1, 3, getattr(markdown, "WINDOW_TOKENS", 512)])
def test_the_page_is_what_markdown_it_and_its_plugins_make(monkeypatch, window):
    """The windows, the linear task lists and anchors and the budget change no byte of a page
    (a window of 1 token puts a boundary everywhere one can go)."""
    monkeypatch.setattr(markdown, "WINDOW_TOKENS", window)
    for source in corpus():
        expected = _plugins_render(source)
        assert markdown.render_body(source) == expected
        assert markdown.render_body(source, 10 ** 9) == expected


def test_the_block_bound_never_exceeds_the_page():
    """The refusal while parsing blocks is sound: the bound is at most the page's size."""
    for source in corpus():
        budget = markdown._BlockBudget(10 ** 12)
        markdown._parse_blocks(markdown._parser(), source, {}, [], budget)
        page = markdown.render_body(source)[0].encode()
        assert budget.size <= len(page), source[:200]


# ------------------------------------------------------------------ the finding


@pytest.fixture
def inline_chars(monkeypatch):
    """Characters markdown-it's inline parser is given (a spy on the library, not on Docpub)."""
    from markdown_it.parser_inline import ParserInline

    seen = {"chars": 0}
    real = ParserInline.parse

    def counted(self, src, md, env, tokens):
        seen["chars"] += len(src)
        return real(self, src, md, env, tokens)

    monkeypatch.setattr(ParserInline, "parse", counted)
    return seen


def test_a_dense_source_near_4_mib_is_refused_after_about_a_page_of_work(inline_chars):
    """Finding: 4 MiB of headings, lists, tables and fenced code (bench/content.py's source)
    renders to a 4.4 times larger page; it was parsed and rendered whole (~26 s) before the
    413. Rendering now stops once the page passes 4 MiB: about a quarter of the inline text is
    parsed, and the 413 is the contract's."""
    from bench.content import markdown_source
    from chalicelib.services.content import markdown_content

    source = markdown_source(limits.MARKDOWN_BYTES)
    # The source repeats one block: a sixteenth of it holds a sixteenth of its inline text.
    sixteenth = markdown._parser().parse(markdown_source(limits.MARKDOWN_BYTES // 16))
    total = 16 * sum(len(t.content) for t in sixteenth if t.type == "inline")
    inline_chars["chars"] = 0
    with pytest.raises(DocumentTooLarge) as refused:
        markdown_content(source.encode(), "Dense")
    assert inline_chars["chars"] < total * 0.4, (inline_chars["chars"], total)
    error = refused.value
    assert error.status == 413 and error.code == "document_too_large"
    assert set(error.details) == {"limit_bytes", "size_bytes"}
    assert error.details["limit_bytes"] == limits.HTML_BYTES < error.details["size_bytes"] < limits.HTML_BYTES * 1.1
    assert "rendering stopped" in error.message


def test_a_million_tiny_blocks_are_refused_while_the_blocks_are_parsed(monkeypatch):
    """A source of many small blocks (one table of rows here) is refused by the block bound
    before it is parsed whole: its tags alone pass the budget."""
    from markdown_it.rules_block import StateBlock

    pushed = {"tokens": 0}
    real = StateBlock.push

    def counted(self, ttype, tag, nesting):
        pushed["tokens"] += 1
        return real(self, ttype, tag, nesting)

    monkeypatch.setattr(StateBlock, "push", counted)
    rows = 20_000
    table = "| a | b |\n|---|---|\n" + "| x | y |\n" * rows
    with pytest.raises(markdown.PageTooLarge) as refused:
        markdown.render_body(table, 64 * 1024)
    assert 64 * 1024 < refused.value.size_bytes < 65 * 1024
    assert pushed["tokens"] < rows * 8 * 0.2  # 8 block tokens a row: under a fifth of the rows


# ------------------------------------------------------------------ the quadratic plugins


def _lines_run(source: str) -> int:
    """Lines of Python run in the Markdown plugins and in domain/markdown.py while `source`
    renders: a count of work that does not depend on the machine's load."""
    watched = ("mdit_py_plugins", "domain/markdown.py")
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    def outer(frame, event, arg):
        return local if any(part in frame.f_code.co_filename for part in watched) else None

    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        markdown.render_body(source)
    finally:
        sys.settrace(previous)
    return count


@pytest.mark.parametrize("unit", ["# Results\n", "- [x] done\n"], ids=["repeated headings", "task items"])
def test_repeated_headings_and_task_items_cost_linear_work(unit):
    """Finding: 64 KiB of one repeated heading took 17 s (each repeat looked for a free
    "-N" from 1), and each task item scanned back to its list: four times the blocks cost
    sixteen times the work. Now four times the blocks cost about four times the work."""
    small, large = _lines_run(unit * 500), _lines_run(unit * 2000)
    assert large < small * 6, (small, large)


def test_repeated_slugs_resume_where_they_stopped():
    anchors = markdown._Anchors()
    assert [anchors.unique(s) for s in ["a", "a", "a-1", "a", "b", "a-3", "a"]] == [
        "a", "a-1", "a-1-1", "a-2", "b", "a-3", "a-4"]
