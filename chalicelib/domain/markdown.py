"""Markdown → a complete, typeset HTML page (contract 7b).

CommonMark plus GFM tables, strikethrough, task lists and autolinks
(markdown-it-py's "gfm-like" preset + mdit-py-plugins), fenced code highlighted
by Pygments, headings with anchors. Raw HTML passes through as CommonMark says:
the page is served sandboxed like any document, so it is not "sanitised" here.

The page around it is the template templates/content/markdown.html
(services/content.render_markdown, through the one environment chalicelib/rendering.py): a readable
measure on a desktop, full width on a phone, code blocks and tables that scroll
sideways instead of widening the page.
"""
from __future__ import annotations

import functools
import html as html_lib
import re
from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

# Pygments is linear but slow on pathological input: past these, code is shown plain.
HIGHLIGHT_BLOCK_CHARS = 200_000
# Highlighting costs more than parsing the code it colours (bench/content.py): past this much
# code in one document, the rest is shown plain, so a large source renders near the
# parser's own speed.
HIGHLIGHT_TOTAL_CHARS = 256 * 1024


@functools.lru_cache(maxsize=1)
def _parser() -> "MarkdownIt":
    from markdown_it import MarkdownIt
    from mdit_py_plugins.anchors import anchors_plugin
    from mdit_py_plugins.tasklists import tasklists_plugin

    md = MarkdownIt("gfm-like", {"highlight": None})
    md.use(tasklists_plugin)
    md.use(anchors_plugin, min_level=1, max_level=6, permalink=True, permalinkSymbol="#",
           permalinkBefore=False)
    return md


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
    """markdown-it's `highlight` option with a budget across one document."""

    def __init__(self) -> None:
        self.left = HIGHLIGHT_TOTAL_CHARS

    def __call__(self, code: str, lang: str, _attrs: Any) -> str:
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


def _heading_text(tokens: Sequence["Token"], start: int) -> str:
    """Plain text of the inline token after a heading_open: text and code only."""
    inline = tokens[start + 1]
    parts = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "html_inline":
            continue
    return " ".join("".join(parts).split())


def first_heading(tokens: Sequence["Token"]) -> Optional[str]:
    for index, item in enumerate(tokens):  # markdown-it "tokens": parse nodes, nothing secret
        if item.type == "heading_open":
            text = _heading_text(tokens, index)
            if text:
                return text
    return None


class Rendered:
    __slots__ = ("html", "title")

    def __init__(self, html: str, title: Optional[str]):
        self.html = html
        self.title = title


def render_body(source: str) -> tuple[str, Optional[str]]:
    """(HTML fragment, first heading as plain text or None)."""
    from markdown_it.utils import OptionsDict

    md = _parser()
    # This render's own options (its highlight budget): the shared parser is never changed,
    # so threads of `make run` render at once safely.
    settings: dict[str, Any] = {**md.options, "highlight": _Highlighter()}
    options = OptionsDict(settings)  # type: ignore[arg-type]  # the parser's own options, one changed
    env: dict[str, Any] = {}
    tokens = md.parse(source, env)
    body = md.renderer.render(tokens, options, env)
    return body, first_heading(tokens)


def _plain(fragment: str) -> str:
    text = re.sub(r"<[^>]*>", " ", fragment)
    return " ".join(html_lib.unescape(text).split())


_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_H1 = re.compile(r"<h1\b[^>]*>(.*?)</h1\s*>", re.IGNORECASE | re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def html_title(page: str) -> Optional[str]:
    """A page's <title>, else its first <h1>, as plain text (None when neither has text)."""
    page = _COMMENT.sub("", page) if "<!--" in page else page
    for pattern in (_TITLE, _H1):
        match = pattern.search(page)
        if match:
            text = _plain(match.group(1))
            if text:
                return text
    return None
