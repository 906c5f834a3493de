"""Server-rendered SVG charts for the dashboard: readable without JavaScript.

Every chart is an `<svg role="img">` with a `<title>` and a `<desc>` that say
what it shows in words (screen readers read those), a `<title>` per bar (a
tooltip on hover), and the same numbers as text in the page: a table next to
the day chart, a caption with the total for sparklines. Colours come from
dashboard.css classes (the dashboard's CSP forbids inline styles).
"""
from __future__ import annotations

import html
from typing import Sequence

from markupsafe import Markup


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _plural(n: int, word: str = "view") -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def bar_chart(chart_id: str, title: str, points: Sequence[tuple[str, int]], label_every: int = 7,
              width: int = 720, height: int = 180) -> Markup:
    """Vertical bars, one per point (label, value), oldest first; an axis with the
    maximum, the first and every `label_every`-th label; a visible caption says
    the total and the busiest point in words."""
    values = [v for _, v in points]
    top = max(values, default=0)
    total = sum(values)
    left, bottom, top_pad = 36, 22, 10
    plot_w, plot_h = width - left - 4, height - bottom - top_pad
    slot = plot_w / max(len(points), 1)
    bar_w = min(48.0, max(1.0, slot * 0.72))
    busiest = max(points, key=lambda p: p[1]) if points and top else None
    desc = (f"{_plural(total)} in total" + (f"; the most on {busiest[0]} ({_plural(busiest[1])})" if busiest else "")
            + ".")
    parts = [f'<figure class="chart"><svg class="chart" id="{_e(chart_id)}" role="img" viewBox="0 0 {width} {height}" '
             f'aria-labelledby="{_e(chart_id)}-title {_e(chart_id)}-desc" xmlns="http://www.w3.org/2000/svg">',
             f'<title id="{_e(chart_id)}-title">{_e(title)}</title>',
             f'<desc id="{_e(chart_id)}-desc">{_e(desc)}</desc>',
             f'<line class="axis" x1="{left}" y1="{top_pad + plot_h}" x2="{width - 4}" y2="{top_pad + plot_h}"/>',
             f'<text class="tick" x="{left - 6}" y="{top_pad + 4}" text-anchor="end">{top:,}</text>',
             f'<text class="tick" x="{left - 6}" y="{top_pad + plot_h}" text-anchor="end">0</text>']
    for index, (label, value) in enumerate(points):
        h = 0 if not top else plot_h * value / top
        x = left + index * slot + (slot - bar_w) / 2
        y = top_pad + plot_h - h
        parts.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{max(h, 0):.1f}">'
                     f'<title>{_e(label)}: {_e(_plural(value))}</title></rect>')
        last = len(points) - 1
        if index == last or (index % label_every == 0 and last - index >= max(1, label_every // 2)):
            parts.append(f'<text class="tick" x="{left + index * slot + slot / 2:.1f}" y="{height - 6}" '
                         f'text-anchor="middle">{_e(label[5:] if len(label) == 10 else label)}</text>')
    parts.append(f'</svg><figcaption class="muted">{_e(title)}: {_e(desc)}</figcaption></figure>')
    return Markup("".join(parts))


def data_table(caption: str, head: tuple[str, str], points: Sequence[tuple[str, int]]) -> Markup:
    rows = "".join(f"<tr><td>{_e(label)}</td><td class=\"num\">{value:,}</td></tr>" for label, value in points)
    return Markup(f'<table class="list data"><caption>{_e(caption)}</caption>'
                  f'<thead><tr><th scope="col">{_e(head[0])}</th><th scope="col">{_e(head[1])}</th></tr></thead>'
                  f"<tbody>{rows}</tbody></table>")


def sparkline(values: Sequence[int], labels: Sequence[str], what: str = "last 7 days",
              width: int = 84, height: int = 22) -> Markup:
    """A tiny bar sparkline with its numbers in words (aria-label and title),
    followed by the total as visible text."""
    top = max(values, default=0)
    total = sum(values)
    words = f"{_plural(total)} in the {what}: " + ", ".join(
        f"{label[5:] if len(label) == 10 else label} {value}" for label, value in zip(labels, values))
    slot = width / max(len(values), 1)
    bars = []
    for index, value in enumerate(values):
        h = 1 if not top else max(1.0, (height - 2) * value / top)
        bars.append(f'<rect class="{"bar" if value else "bar zero"}" x="{index * slot + 1:.1f}" '
                    f'y="{height - h:.1f}" width="{max(slot - 2, 1):.1f}" height="{h:.1f}"/>')
    return Markup(f'<svg class="sparkline" role="img" aria-label="{_e(words)}" viewBox="0 0 {width} {height}" '
                  f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{_e(words)}</title>'
                  + "".join(bars) + f'</svg><span class="spark-total">{total:,}</span>')
