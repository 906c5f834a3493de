"""The one way to make HTML: jinja2 templates under chalicelib/templates, one environment.

Every page (site, dashboard, share links, OAuth errors), fragment and SVG chart
is a template rendered here, autoescaped: a value reaches the markup escaped
unless it is `Markup` (another rendered fragment, or a constant the code
marks safe). Nothing in chalicelib builds HTML in an f-string (a test checks).

- `page(name, **context) -> str`: a whole document.
- `fragment(name, **context) -> Markup`: a piece to put into another template
  (a chart, a table), safe to insert as is.
- Plain-text mail bodies (`*.txt`) are the only templates rendered without
  escaping: they are not HTML.

Templates are named from the templates folder (`dashboard/documents.html`,
`share/viewer.html`); inside a folder, `{% extends "base.html" %}` and
`{% from "macros.html" import … %}` mean that folder's own file. A surface's
globals (the dashboard's `url`, …) are given per template with `globals=`.
jinja2 is imported on the first render, so REST requests never pay for it.
"""
from __future__ import annotations

import functools
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, Optional

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _autoescape(name: Optional[str]) -> bool:
    return not (name or "").endswith(".txt")


@functools.lru_cache(maxsize=1)
def environment():
    import jinja2

    class Environment(jinja2.Environment):
        def join_path(self, template: str, parent: str) -> str:
            """`base.html` inside `dashboard/x.html` is `dashboard/base.html`."""
            if "/" in template or "/" not in parent:
                return template
            return parent.rsplit("/", 1)[0] + "/" + template

    env = Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=_autoescape,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(size=human_size, when=human_time, thousands=thousands, md=markdown)
    env.tests["said_in"] = said_in
    return env


def said_in(field: Mapping[str, Any], message: str) -> bool:
    """True when an error's summary already names this field's reason (shown once, not twice)."""
    return f"{field.get('field')}: {field.get('message')}" in (message or "")


def page(name: str, globals: Optional[Mapping[str, Any]] = None, **context: Any) -> str:
    return environment().get_template(name, globals=globals).render(**context)


def fragment(name: str, globals: Optional[Mapping[str, Any]] = None, **context: Any):
    from markupsafe import Markup

    return Markup(page(name, globals, **context).strip())


# ------------------------------------------------------------------ filters

def human_size(n: Optional[int]) -> str:
    if n is None:
        return ""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.2f} MiB"


def human_time(value: Optional[str]) -> str:
    if not value:
        return "never"
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return value


def thousands(n: int) -> str:
    return f"{n:,}"


@functools.lru_cache(maxsize=1)
def _markdown():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False})  # our own texts; raw HTML stays text


def markdown(text: str, inline: bool = True):
    """`|md`: CommonMark (`code`, **bold**, links) of our own texts (the OpenAPI
    document's descriptions); raw HTML in them is shown as text."""
    from markupsafe import Markup

    if not text:
        return Markup("")
    md = _markdown()
    return Markup(md.renderInline(text) if inline else md.render(text))
