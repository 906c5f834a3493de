"""Server-rendered SVG charts for the dashboard: readable without JavaScript.

Every chart is an `<svg role="img">` with a `<title>` and a `<desc>` that say
what it shows in words (screen readers read those), a `<title>` per bar (a
tooltip on hover), and the same numbers as text in the page: a table next to
the day chart, a caption with the total for sparklines. Colours come from
dashboard.css classes (the dashboard's CSP forbids inline styles).

This module computes the geometry; the markup is templates/charts/ (rendered by
chalicelib.rendering, autoescaped), returned as `Markup` for the page templates.
"""
from __future__ import annotations

from typing import Sequence

from chalicelib import rendering


def _plural(n: int, word: str = "view") -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _short(label: str) -> str:
    """A day (YYYY-MM-DD) without its year; anything else as it is."""
    return label[5:] if len(label) == 10 else label


def bar_chart(chart_id: str, title: str, points: Sequence[tuple[str, int]], label_every: int = 7,
              width: int = 720, height: int = 180):
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
    bars = []
    last = len(points) - 1
    for index, (label, value) in enumerate(points):
        h = 0 if not top else plot_h * value / top
        ticked = index == last or (index % label_every == 0 and last - index >= max(1, label_every // 2))
        bars.append({"x": f"{left + index * slot + (slot - bar_w) / 2:.1f}", "y": f"{top_pad + plot_h - h:.1f}",
                     "width": f"{bar_w:.1f}", "height": f"{max(h, 0):.1f}", "label": label,
                     "views": _plural(value), "tick": _short(label) if ticked else None,
                     "tick_x": f"{left + index * slot + slot / 2:.1f}"})
    chart = {"id": chart_id, "title": title, "desc": desc, "width": width, "height": height, "left": left,
             "right": width - 4, "top_pad": top_pad, "baseline": top_pad + plot_h, "top": top, "bars": bars}
    return rendering.fragment("charts/bar_chart.svg", chart=chart)


def data_table(caption: str, head: tuple[str, str], points: Sequence[tuple[str, int]]):
    return rendering.fragment("charts/data_table.html", caption=caption, head=head, points=points)


def sparkline(values: Sequence[int], labels: Sequence[str], what: str = "last 7 days",
              width: int = 84, height: int = 22):
    """A tiny bar sparkline with its numbers in words (aria-label and title),
    followed by the total as visible text."""
    top = max(values, default=0)
    total = sum(values)
    words = f"{_plural(total)} in the {what}: " + ", ".join(
        f"{_short(label)} {value}" for label, value in zip(labels, values))
    slot = width / max(len(values), 1)
    bars = []
    for index, value in enumerate(values):
        h = 1 if not top else max(1.0, (height - 2) * value / top)
        bars.append({"cls": "bar" if value else "bar zero", "x": f"{index * slot + 1:.1f}",
                     "y": f"{height - h:.1f}", "width": f"{max(slot - 2, 1):.1f}", "height": f"{h:.1f}"})
    return rendering.fragment("charts/sparkline.svg", words=words, width=width, height=height, bars=bars,
                              total=total)
