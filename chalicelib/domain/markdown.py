"""Markdown → a complete, typeset HTML page (contract 7b).

CommonMark plus GFM tables, strikethrough, task lists and autolinks
(markdown-it-py's "gfm-like" preset + mdit-py-plugins), fenced code highlighted
by Pygments, headings with anchors. Raw HTML passes through as CommonMark says:
the page is served sandboxed like any document, so it is not "sanitised" here.

The page around it is the template templates/content/markdown.html
(services/content.render_markdown, through the one environment chalicelib/rendering.py): a readable
measure on a desktop, full width on a phone, code blocks and tables that scroll
sideways instead of widening the page.

The work is bounded by the page, not only by the 4 MiB source (`render_body(source,
max_bytes)`): while the block structure is parsed, a lower bound of the page's size
(`_BlockBudget`) refuses a source of countless tiny blocks; then the inline stage and the
renderer run a window of block tokens at a time and stop as soon as the page passes the
limit. Task lists and heading anchors are linear re-implementations of the two plugins.
The output is byte for byte what markdown-it and the plugins make
(tests/unit/test_markdown_bounds.py; figures in docs/performance.md).

The work is bounded by CPU time too (`WorkBudget`, issue 33): markdown-it-py is linear but
costs up to ~13 µs a byte on some sources (floods of `![`: each bracket looks ahead for its
label through up to 20 nested levels), so 4 MiB of them would take a minute. The budget is
read every few hundred steps of the block stage, of the inline stage (inside one paragraph:
a rule first in line that only counts) and of each window; past it, `TooComplex`.
"""
from __future__ import annotations

import functools
import gc
import html as html_lib
import re
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Optional, Sequence, cast

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML
    from markdown_it.token import Token

# Pygments is not linear: several lexers (Java, make, systemd, AspectJ, Thrift… of the 500-odd)
# are quadratic on crafted code (`" a" * n` in Java: 20 KB took 6 s of CPU), and a lexer's
# regular expression cannot be stopped part-way (the WorkBudget is read between blocks). A
# block longer than this is shown plain: the worst lexer found takes ~1 s on it (issue 33).
HIGHLIGHT_BLOCK_CHARS = 8_000
# Highlighting costs more than parsing the code it colours (bench/content.py): past this much
# code in one document, the rest is shown plain, so a large source renders near the
# parser's own speed.
HIGHLIGHT_TOTAL_CHARS = 256 * 1024


@functools.lru_cache(maxsize=1)
def _parser() -> "MarkdownIt":
    """markdown-it's "gfm-like" preset. Task lists and heading anchors are this module's own
    steps (`_TaskLists`, `_Anchors`): the same output as mdit-py-plugins' tasklists and anchors
    plugins, in linear time (theirs look for a list's parent and a free slug from scratch each
    time: 64 KiB of repeated headings took 17 s), and run a window at a time (`render_body`)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("gfm-like", {"highlight": None})
    # Rules that only count work against the render's WorkBudget (they never match): one
    # before every block rule (run once per block, including blocks that make no token, such
    # as link reference definitions), one after `text` in the inline chain (run at every
    # position `text` does not take: each bracket, mark or tag, and every look-ahead step).
    md.block.ruler.before(md.block.ruler.__rules__[0].name, "docpub_budget", _block_budget)
    md.inline.ruler.after("text", "docpub_budget", _inline_budget)
    return md


class TooComplex(Exception):
    """Rendering passed its WorkBudget (services/content answers 422 "too complex to render")."""


BUDGET_KEY = "docpub_budget"  # where a render's WorkBudget is in markdown-it's env
CHECK_EVERY = 256  # steps between two readings of the clock (a reading costs about a step)


# Tokens one render may hold (block tokens and every inline child): each takes ~400 bytes of
# memory, and all of them live until the page is done. 4 MiB of prose makes ~410,000 and a
# source dense enough to render a 4 MiB page ~260,000; 4 MiB of `[a] ` (reference links) made
# millions: 1.5 GB before the CPU budget stopped it (bench/adversarial.py).
MAX_TOKENS = 1_000_000


class WorkBudget:
    """`seconds` of `clock` (the rendering thread's CPU time) and `max_tokens` tokens for one
    render; `tick` counts a step and reads the clock every CHECK_EVERY of them, `check` reads
    it now, `add_tokens` counts tokens made. Tests give it a clock of their own."""

    __slots__ = ("clock", "deadline", "steps", "tokens", "max_tokens")

    def __init__(self, seconds: float, clock: Callable[[], float] = time.thread_time,
                 max_tokens: int = MAX_TOKENS) -> None:
        self.clock = clock
        self.deadline = clock() + seconds
        self.steps = 0
        self.tokens = 0
        self.max_tokens = max_tokens

    def tick(self) -> None:
        self.steps += 1
        if self.steps % CHECK_EVERY == 0:
            self.check()

    def add_tokens(self, count: int) -> None:
        self.tokens += count
        if self.tokens > self.max_tokens:
            raise TooComplex()

    def check(self) -> None:
        if self.clock() > self.deadline:
            raise TooComplex()


def _block_budget(state: Any, _start: int, _end: int, _silent: bool) -> bool:
    budget = state.env.get(BUDGET_KEY)
    if budget is not None:
        budget.tick()
    return False


def _inline_budget(state: Any, _silent: bool) -> bool:
    budget = state.env.get(BUDGET_KEY)
    if budget is not None:
        budget.tick()
        made = len(state.tokens)  # the tokens this paragraph (or label) made since the last call
        seen = getattr(state, "docpub_seen", 0)
        if made > seen:
            state.docpub_seen = made
            budget.add_tokens(made - seen)
    return False


@functools.lru_cache(maxsize=1)
def code_css() -> str:
    from pygments.formatters import HtmlFormatter

    rules = HtmlFormatter(style="default").get_style_defs(".hl").splitlines()
    # Token colours only: the page's own rules set pre's spacing and background.
    return "\n".join(r for r in rules if r.startswith(".hl .") and "/*" not in r.split("}")[0])



@functools.lru_cache(maxsize=1)
def _formatter() -> Any:
    """One formatter for every block: building one makes its whole style sheet (bench/content.py
    measured that as the largest part of highlighting when made per block). Its state is
    read-only once made, so threads share it."""
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="hl", wrapcode=True)


@functools.lru_cache(maxsize=256)
def _lexer(name: str) -> Any:
    """The lexer for a fence's language, or None (looked up once per name: the lookup scans
    every lexer's aliases). A lexer keeps no state between calls."""
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


class _Highlighter:
    """markdown-it's `highlight` option with a budget across one document (and the render's
    WorkBudget read before each block)."""

    def __init__(self, work: "Optional[WorkBudget]" = None) -> None:
        self.left = HIGHLIGHT_TOTAL_CHARS
        self.work = work

    def __call__(self, code: str, lang: str, _attrs: Any) -> str:
        if self.work is not None:
            self.work.check()
        if not lang or len(code) > HIGHLIGHT_BLOCK_CHARS or len(code) > self.left:
            return ""  # markdown-it escapes and wraps it itself
        from pygments import highlight

        name = lang.split()[0].lower()
        lexer = _lexer(name) if len(name) <= 40 else None
        if lexer is None:
            return ""
        self.left -= len(code)
        # <div class="hl"><pre><code>…</code></pre></div>: Pygments escapes the code itself.
        return str(highlight(code, lexer, _formatter()))


def _heading_text(stream: Sequence["Token"], start: int) -> str:
    """Plain text of the inline token after a heading_open: text and code only."""
    inline = stream[start + 1]
    parts = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "html_inline":
            continue
    return " ".join("".join(parts).split())


def first_heading(stream: Sequence["Token"]) -> Optional[str]:
    for index, item in enumerate(stream):  # markdown-it "tokens": parse nodes, nothing secret
        if item.type == "heading_open":
            text = _heading_text(stream, index)
            if text:
                return text
    return None


class Rendered:
    __slots__ = ("html", "title")

    def __init__(self, html: str, title: Optional[str]):
        self.html = html
        self.title = title


class PageTooLarge(Exception):
    """Rendering stopped because the page's body already passes the limit: `size_bytes` is the
    body's size when it stopped (the whole page would be larger)."""

    def __init__(self, size_bytes: int) -> None:
        super().__init__(size_bytes)
        self.size_bytes = size_bytes


# The inline stage and the renderer run over about this many block tokens at a time, so a
# page that passes the limit is refused after at most one window more than the limit's worth
# of work. A window ends after a closing or leaf block token (a heading stays whole).
WINDOW_TOKENS = 512
_TODO = re.compile(r"\[[ xX]][ \t\n\v\f\r]+")  # mdit-py-plugins tasklists' GFM whitespace


class _TaskLists:
    """GFM task lists, as mdit-py-plugins' tasklists plugin (enabled=False, no label) makes
    them: `mark` runs once over the block tokens (classes on the item and its list, found with
    a running index of the last token seen at each level instead of a backward scan per item),
    `todoify` on each window once its inline tokens are parsed, before linkify."""

    def __init__(self, stream: list["Token"]) -> None:
        self.todo: set[int] = set()
        last_at_level: dict[int, int] = {}
        seen = 0
        for i in range(2, len(stream) - 1):
            if not _is_todo(stream, i):
                continue
            for j in range(seen, i - 2):
                last_at_level[stream[j].level] = j
            seen = max(seen, i - 2)
            self.todo.add(i)
            stream[i - 2].attrSet("class", "task-list-item")
            stream[last_at_level.get(stream[i - 2].level - 1, -1)].attrSet("class", "contains-task-list")

    def todoify(self, stream: list["Token"], start: int, end: int) -> None:
        from markdown_it.token import Token

        for i in range(start, end):
            if i not in self.todo:
                continue
            item = stream[i]
            assert item.children is not None
            item.children.insert(0, Token("html_inline", "", 0, content=_checkbox(item.content)))
            item.children[1].content = item.children[1].content[3:]
            item.content = item.content[3:]


class _Anchors:
    """Heading ids and a "#" permalink after the text, as mdit-py-plugins' anchors plugin makes
    them (levels 1 to 6, its GitHub-like slugify, "-1", "-2"... on a repeat), but a repeated
    slug resumes from the last number it was given instead of counting again from 1."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.next_number: dict[str, int] = {}

    def unique(self, slug: str) -> str:
        found = slug
        if found in self.taken:
            number = self.next_number.get(slug, 1)
            found = f"{slug}-{number}"
            while found in self.taken:
                number += 1
                found = f"{slug}-{number}"
            self.next_number[slug] = number + 1
        self.taken.add(found)
        return found

    def apply(self, stream: list["Token"], start: int, end: int) -> None:
        from markdown_it.token import Token
        from mdit_py_plugins.anchors.index import slugify

        for index in range(start, end):
            item = stream[index]
            if item.type != "heading_open":
                continue
            inline = stream[index + 1]
            assert inline.children is not None
            title = "".join(child.content for child in inline.children
                            if child.type in ("text", "code_inline"))
            slug = item.attrGet("id")
            if not slug:
                slug = self.unique(slugify(title))
                item.attrSet("id", slug)
            link_open = Token("link_open", "a", 1)
            link_open.attrSet("class", "header-anchor")
            link_open.attrSet("href", f"#{slug}")
            inline.children.extend([Token("text", "", 0, content=" "), link_open,
                                    Token("html_block", "", 0, content="#"), Token("link_close", "a", -1)])


# What a heading adds to its tags, at the least: ` id=""` and the permalink (`_Anchors`).
_HEADING_EXTRA = len(' id=""') + len(' <a class="header-anchor" href="#">#</a>')
_PRE = len("<pre></pre>")
_TASK_ITEM = len(' class="task-list-item"')


def _is_todo(stream: Sequence["Token"], index: int) -> bool:
    """mdit-py-plugins tasklists' test: a list item's first paragraph starting "[ ] " or "[x] "."""
    return (stream[index].type == "inline" and stream[index - 1].type == "paragraph_open"
            and stream[index - 2].type == "list_item_open" and _TODO.match(stream[index].content) is not None)


def _checkbox(content: str) -> str:
    if content.startswith("[ ] "):
        return '<input class="task-list-item-checkbox" disabled="disabled" type="checkbox">'
    if content.startswith(("[x] ", "[X] ")):
        return '<input class="task-list-item-checkbox" checked="checked" disabled="disabled" type="checkbox">'
    return ""


class _BlockBudget:
    """A lower bound of the page's size from the block tokens made so far, kept while the block
    structure is parsed (`_BudgetedBlocks.push`): every block token renders at least its tag
    (`<li>`, `</li>`), a heading its id and permalink, a task its checkbox, code and raw HTML
    blocks their content. Inline text and paragraph tags count nothing (entities and escapes
    shrink; a tight list hides its paragraphs). So a source of a million tiny blocks (or one
    table of a million rows) is refused once this passes the limit, long before it is parsed
    whole. tests/unit/test_markdown_bounds.py checks it never exceeds the page rendered."""

    __slots__ = ("max_bytes", "size", "seen")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.seen = 0

    def count(self, stream: Sequence["Token"], upto: int) -> None:
        """Count tokens[seen:upto] (a token's content is set after it is pushed)."""
        size = self.size
        for index in range(self.seen, upto):
            size += least_bytes(stream, index)
        self.seen = max(self.seen, upto)
        self.size = size
        if size > self.max_bytes:
            raise PageTooLarge(size)


def least_bytes(stream: Sequence["Token"], index: int) -> int:
    """The fewest bytes tokens[index] (a block token, before the inline stage) renders to."""
    item = stream[index]
    kind = item.type
    if kind == "inline":
        return _TASK_ITEM + len(_checkbox(item.content)) if index >= 2 and _is_todo(stream, index) else 0
    if kind in ("paragraph_open", "paragraph_close"):
        return 0
    if kind in ("fence", "code_block"):
        return _PRE + len(item.content)
    if kind == "html_block":
        return len(item.content)
    if item.nesting == -1:
        return len(item.tag) + 3
    return len(item.tag) + 2 + (_HEADING_EXTRA if kind == "heading_open" else 0)


@functools.lru_cache(maxsize=1)
def _budgeted_state() -> Any:
    """markdown-it's StateBlock, counting a `_BlockBudget` on every block token pushed (a
    token's content is set after its push: each push counts the tokens before it)."""
    from markdown_it.rules_block import StateBlock

    class BudgetedState(StateBlock):
        budget: _BlockBudget

        def push(self, ttype: str, tag: str, nesting: Literal[-1, 0, 1]) -> "Token":
            made = super().push(ttype, tag, nesting)
            self.budget.count(self.tokens, len(self.tokens) - 1)
            work = self.env.get(BUDGET_KEY)
            if work is not None:  # a table's rows are one block: count its cells
                work.tick()
                work.add_tokens(1)
            return made

    return BudgetedState


def _parse_blocks(md: "MarkdownIt", src: str, env: dict[str, Any], stream: list["Token"],
                  budget: Optional[_BlockBudget]) -> None:
    """markdown-it's block stage (`ParserBlock.parse`), counting `budget` on every token made
    (and ticking the env's WorkBudget)."""
    if budget is None and BUDGET_KEY not in env:
        md.block.parse(src, md, env, stream)
        return
    if not src:
        return
    state = _budgeted_state()(src, md, env, stream)
    state.budget = budget if budget is not None else _BlockBudget(1 << 62)
    md.block.tokenize(state, state.line, state.lineMax)
    state.budget.count(stream, len(stream))


def _windows(stream: Sequence["Token"]) -> Iterator[tuple[int, int]]:
    start = 0
    for index, item in enumerate(stream):
        if index + 1 - start >= WINDOW_TOKENS and item.nesting <= 0 and item.type != "inline":
            yield start, index + 1
            start = index + 1
    if start < len(stream):
        yield start, len(stream)


def _render(renderer: "RendererHTML", stream: Sequence["Token"], start: int, end: int, options: Any,
            env: dict[str, Any]) -> str:
    """`RendererHTML.render` for tokens[start:end], seeing the whole stream (a block token's
    line break depends on its neighbours, e.g. a tight list's hidden paragraphs)."""
    out: list[str] = []
    for index in range(start, end):
        item = stream[index]
        if item.type == "inline":
            if item.children:
                out.append(renderer.renderInline(item.children, options, env))
        elif item.type in renderer.rules:
            out.append(renderer.rules[item.type](stream, index, options, env))
        else:
            out.append(renderer.renderToken(stream, index, options, env))
    return "".join(out)


_GC_LOCK = threading.Lock()
_GC_PAUSED = {"renders": 0, "was_enabled": False}


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a render runs (on again when the last
    render of the process ends). A render makes hundreds of thousands of tokens that hold no
    cycles, and each full collection walks all of them: a 1 MiB table took 4.9 s with it on,
    2.2 s off, and four times the source cost six times the CPU (docs/performance.md)."""
    with _GC_LOCK:
        if _GC_PAUSED["renders"] == 0:
            _GC_PAUSED["was_enabled"] = gc.isenabled()
            gc.disable()
        _GC_PAUSED["renders"] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSED["renders"] -= 1
            if _GC_PAUSED["renders"] == 0 and _GC_PAUSED["was_enabled"]:
                gc.enable()


def render_body(source: str, max_bytes: Optional[int] = None,
                work: Optional[WorkBudget] = None) -> tuple[str, Optional[str]]:
    """`_render_body` with the garbage collector paused (`_collector_paused`)."""
    with _collector_paused():
        return _render_body(source, max_bytes, work)


def _render_body(source: str, max_bytes: Optional[int] = None,
                work: Optional[WorkBudget] = None) -> tuple[str, Optional[str]]:
    """(HTML fragment, first heading as plain text or None). With `max_bytes`, raises
    PageTooLarge as soon as the fragment passes it; with `work`, TooComplex as soon as the
    render passes that budget (read in every stage). The block structure is parsed whole
    (link references may be defined after their use), then the inline stage, task lists,
    linkify, anchors and the renderer run a window of block tokens at a time and stop there.
    The output is markdown-it's own (`MarkdownIt.render` with the two plugins), which
    tests/unit/test_markdown_bounds.py checks on a corpus."""
    from markdown_it.rules_core import StateCore
    from markdown_it.utils import OptionsDict

    md = _parser()
    # This render's own options (its highlight budget): the shared parser is never changed,
    # so threads of `make run` render at once safely.
    settings: dict[str, Any] = {**md.options, "highlight": _Highlighter(work)}
    options = OptionsDict(settings)  # type: ignore[arg-type]  # the parser's own options, one changed
    env: dict[str, Any] = {} if work is None else {BUDGET_KEY: work}
    rules = [(rule.name, rule.fn) for rule in md.core.ruler.__rules__ if rule.enabled]
    names = [name for name, _fn in rules]
    split = names.index("block") + 1
    assert names[:split] == ["normalize", "block"]
    state = StateCore(source, md, env)
    rules[0][1](state)  # normalize
    _parse_blocks(md, state.src, env, state.tokens, None if max_bytes is None else _BlockBudget(max_bytes))
    stream = state.tokens
    tasks, anchors = _TaskLists(stream), _Anchors()
    renderer = cast("RendererHTML", md.renderer)
    parts: list[str] = []
    size = 0
    for start, end in _windows(stream):
        window = StateCore(state.src, md, env, stream[start:end])
        for name, fn in rules[split:]:  # inline, linkify, replacements, smartquotes, text_join
            fn(window)
            if name == "inline":  # where the tasklists plugin puts its rule
                tasks.todoify(stream, start, end)
        anchors.apply(stream, start, end)  # the anchors plugin's rule comes last
        part = _render(renderer, stream, start, end, options, env)
        parts.append(part)
        if work is not None:
            work.check()
        if max_bytes is not None:
            size += len(part.encode("utf-8"))
            if size > max_bytes:
                raise PageTooLarge(size)
    return "".join(parts), first_heading(stream)


def _strip_tags(fragment: str) -> str:
    """Each `<…>` as one space, as `re.sub(r"<[^>]*>", " ", fragment)` does, in one pass: a
    `<` with no `>` after it ends the search (the pattern rescanned the rest for each one)."""
    out: list[str] = []
    done = 0
    while True:
        opener = fragment.find("<", done)
        closer = fragment.find(">", opener + 1) if opener >= 0 else -1
        if closer < 0:
            break
        out.append(fragment[done:opener])
        out.append(" ")
        done = closer + 1
    out.append(fragment[done:])
    return "".join(out)


def _plain(fragment: str) -> str:
    return " ".join(html_lib.unescape(_strip_tags(fragment)).split())


def _without_comments(page: str) -> str:
    """The page less every `<!--…-->` (the shortest each time, as `<!--.*?-->` does), in one
    pass: an unclosed `<!--` keeps the rest as it is (no later comment can close either)."""
    out: list[str] = []
    done = 0
    while True:
        opener = page.find("<!--", done)
        closer = page.find("-->", opener + 4) if opener >= 0 else -1
        if closer < 0:
            break
        out.append(page[done:opener])
        done = closer + 3
    out.append(page[done:])
    return "".join(out)


# An element's start and end tags, as `<title\b[^>]*>(.*?)</title\s*>` (IGNORECASE, DOTALL)
# found them, but searched once each: if the first start tag has no `>` after it, or no end
# tag follows that `>`, no later start tag has either, so the first decides. Each search is
# linear (a literal opener; `\s*` backtracks only over its own run of spaces).
_ELEMENTS = [(re.compile("<" + name + r"\b", re.IGNORECASE), re.compile("</" + name + r"\s*>", re.IGNORECASE))
             for name in ("title", "h1")]


def _element_text(page: str, start_tag: "re.Pattern[str]", end_tag: "re.Pattern[str]") -> Optional[str]:
    found = start_tag.search(page)
    if found is None:
        return None
    inside = page.find(">", found.end())
    if inside < 0:
        return None
    end = end_tag.search(page, inside + 1)
    return None if end is None else page[inside + 1:end.start()]


def html_title(page: str) -> Optional[str]:
    """A page's <title>, else its first <h1>, as plain text (None when neither has text).
    Linear in the page: a few `find`s and one pass per step (issue 33: lazy patterns over
    the whole page made each unclosed `<!--`, `<title>` or `<h1>` rescan the rest)."""
    page = _without_comments(page) if "<!--" in page else page
    for start_tag, end_tag in _ELEMENTS:
        inner = _element_text(page, start_tag, end_tag)
        if inner is not None:
            text = _plain(inner)
            if text:
                return text
    return None
