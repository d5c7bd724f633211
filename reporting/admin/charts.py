"""Bar charts as inline SVG, drawn on the server: no script, no CDN, nothing to vendor.

Each bar carries its series, label and value (``data-series``, ``data-label``,
``data-value``) and a ``<title>`` tooltip, so a reader hovering and a browser test see the
same figures. Every text goes through ``format_html``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 8, 24, 44
MAX_X_LABELS = 10
CHAR_W = 6.6  # px a character of the 11 px axis font takes, at most (DejaVu Sans, the widest)


def _lines(label: str, fits: int, x: float) -> SafeString:
    """An axis label in at most two lines of ``fits`` characters (cut with "…" beyond), so
    neighbours never run into each other ("Generate Test Cases" beside "Generate Test Code")."""
    lines, words = [""], label.split()
    for word in words:
        joined = f"{lines[-1]} {word}".strip()
        if len(joined) <= fits or not lines[-1]:
            lines[-1] = joined
        elif len(lines) < 2:
            lines.append(word)
        else:
            lines[-1] = joined
    lines = [line if len(line) <= fits else line[: fits - 1] + "…" for line in lines]
    return format_html_join(
        "",
        '<tspan x="{}" dy="{}">{}</tspan>',
        ((x, 0 if k == 0 else 13, line) for k, line in enumerate(lines)),
    )


@dataclass(frozen=True)
class Series:
    name: str
    colour: str
    values: Sequence[float | None]  # one per label; None: no bar


def _top(series: Sequence[Series], stacked: bool) -> float:
    if stacked:
        sums = [
            sum(v or 0 for v in column) for column in zip(*(s.values for s in series), strict=True)
        ]
        return max(sums, default=0) or 1
    return max((v or 0 for s in series for v in s.values), default=0) or 1


def _bars(labels, series, stacked: bool, top: float, fmt) -> list[tuple]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(labels), 1)
    width = slot * 0.8 / (1 if stacked else len(series))
    bars = []
    for i, label in enumerate(labels):
        base = 0.0
        for k, one in enumerate(series):
            value = one.values[i]
            if value is None:
                continue
            height = plot_h * value / top
            x = LEFT + i * slot + slot * 0.1 + (0 if stacked else k * width)
            y = TOP + plot_h - base - height
            base += height if stacked else 0
            tip = f"{label} · {one.name}: {fmt(value)}"
            bars.append(
                (f"{x:.1f}", f"{y:.1f}", f"{width:.1f}", f"{height:.1f}", one.colour)
                + (one.name, label, f"{value:g}", tip)
            )
    return bars


def bar_chart(
    chart_id: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    stacked: bool = False,
    fmt: Callable[[float], str] = lambda v: f"{v:g}",
    top: float | None = None,
) -> SafeString:
    """An SVG bar chart: one slot per label, the series stacked or side by side."""
    top = top or _top(series, stacked)
    bars = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" fill="{}" data-series="{}" '
        'data-label="{}" data-value="{}"><title>{}</title></rect>',
        _bars(labels, series, stacked, top, fmt),
    )
    plot_h = HEIGHT - TOP - BOTTOM
    ticks = format_html_join(
        "",
        '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#e5e7eb"/>'
        '<text x="{}" y="{}" text-anchor="end" font-size="11" fill="#6b7280">{}</text>',
        (
            (LEFT, WIDTH - RIGHT, y, y, LEFT - 6, y + 4, fmt(top * share))
            for share in (0, 0.5, 1)
            for y in [round(TOP + plot_h * (1 - share), 1)]
        ),
    )
    step = max(1, -(-len(labels) // MAX_X_LABELS))
    slot = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    fits = max(int(slot * step / CHAR_W), 4)  # characters a label may take on one line
    x_labels = format_html_join(
        "",
        '<text x="{}" y="{}" text-anchor="middle" font-size="11" fill="#374151">{}</text>',
        (
            (x, HEIGHT - BOTTOM + 16, _lines(label, fits, x))
            for i, label in enumerate(labels)
            if i % step == 0
            for x in [round(LEFT + (i + 0.5) * slot, 1)]
        ),
    )
    legend = format_html_join(
        "",
        '<rect x="{}" y="4" width="10" height="10" fill="{}"/>'
        '<text x="{}" y="13" font-size="11" fill="#374151">{}</text>',
        ((LEFT + k * 150, s.colour, LEFT + k * 150 + 14, s.name) for k, s in enumerate(series)),
    )
    return format_html(
        '<svg id="{}" class="amtp-chart" viewBox="0 0 {} {}" width="{}" height="{}" '
        'role="img" xmlns="http://www.w3.org/2000/svg">{}{}{}{}</svg>',
        chart_id,
        WIDTH,
        HEIGHT,
        WIDTH,
        HEIGHT,
        ticks,
        bars,
        x_labels,
        legend if len(series) > 1 else mark_safe(""),
    )
