"""The repository health chart: one stacked bar per ended run (passing, healed, quarantined,
failed, skipped: the bar's height is the run's tests), a mark under it for the run's kind.

Inline SVG drawn on the server, like ``charts.py``. Each run is a ``<g>`` carrying its figures
(``data-run``, ``data-kind``, ``data-finished``, ``data-tests``, ``data-passing``,
``data-healed``, ``data-quarantined``, ``data-failed``, ``data-skipped``) and a ``<title>``
tooltip; the ``<svg>`` has a title and a description, and the page repeats every figure in a
table for readers that do not see the picture.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from reporting.health import Point

WIDTH, HEIGHT = 760, 260
LEFT, RIGHT, TOP, BOTTOM = 48, 8, 24, 56
MAX_X_LABELS = 8
# (name shown, Point attribute, colour), bottom to top
PARTS = (
    ("passing", "passing", "#15803d"),
    ("healed", "healed", "#0f766e"),
    ("quarantined", "quarantined", "#b45309"),
    ("failed", "failed", "#b91c1c"),
    ("skipped", "skipped", "#94a3b8"),
)
# The mark under each bar: its shape tells the kind without relying on colour.
KINDS = {
    "generation": ("G", "#2563eb"),
    "maintenance": ("M", "#7c3aed"),
    "check": ("C", "#374151"),
}
CHART_ID = "amtp-chart-health"


def _bar(point: Point, x: float, width: float, top: int) -> SafeString:
    plot_h = HEIGHT - TOP - BOTTOM
    base, rects = TOP + plot_h, []
    for name, attr, colour in PARTS:
        value = getattr(point, attr)
        if not value:
            continue
        height = plot_h * value / top
        base -= height
        rects.append((f"{x:.1f}", f"{base:.1f}", f"{width:.1f}", f"{height:.1f}", colour, name))
    letter, colour = KINDS.get(point.kind, ("?", "#6b7280"))
    tip = (
        f"{point.finished_at:%Y-%m-%d %H:%M} UTC · {point.kind} run · {point.tests} tests: "
        f"{point.passing} passing, {point.healed} healed, {point.quarantined} quarantined, "
        f"{point.failed} failed, {point.skipped} skipped"
    )
    return format_html(
        '<g class="amtp-health-point" data-run="{}" data-kind="{}" data-finished="{}" '
        'data-tests="{}" data-passing="{}" data-healed="{}" data-quarantined="{}" '
        'data-failed="{}" data-skipped="{}"><title>{}</title>{}'
        '<text x="{}" y="{}" text-anchor="middle" font-size="10" font-weight="700" '
        'fill="{}">{}</text></g>',
        point.run_id,
        point.kind,
        point.finished_at.isoformat(),
        point.tests,
        point.passing,
        point.healed,
        point.quarantined,
        point.failed,
        point.skipped,
        tip,
        format_html_join(
            "",
            '<rect x="{}" y="{}" width="{}" height="{}" fill="{}" data-part="{}"/>',
            rects,
        ),
        f"{x + width / 2:.1f}",
        TOP + plot_h + 14,
        colour,
        letter,
    )


def _axes(points: Sequence[Point], top: int, slot: float) -> SafeString:
    plot_h = HEIGHT - TOP - BOTTOM
    ticks = format_html_join(
        "",
        '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#e5e7eb"/>'
        '<text x="{}" y="{}" text-anchor="end" font-size="11" fill="#6b7280">{}</text>',
        (
            (LEFT, WIDTH - RIGHT, y, y, LEFT - 6, y + 4, f"{top * share:g}")
            for share in (0, 0.5, 1)
            for y in [round(TOP + plot_h * (1 - share), 1)]
        ),
    )
    step = max(1, -(-len(points) // MAX_X_LABELS))
    dates = format_html_join(
        "",
        '<text x="{}" y="{}" text-anchor="middle" font-size="11" fill="#374151">{}</text>',
        (
            (round(LEFT + (i + 0.5) * slot, 1), HEIGHT - BOTTOM + 32, f"{p.finished_at:%m-%d}")
            for i, p in enumerate(points)
            if i % step == 0
        ),
    )
    legend_items = [(name, colour) for name, _, colour in PARTS]
    legend = format_html_join(
        "",
        '<rect x="{}" y="4" width="10" height="10" fill="{}"/>'
        '<text x="{}" y="13" font-size="11" fill="#374151">{}</text>',
        (
            (LEFT + k * 110, colour, LEFT + k * 110 + 14, name)
            for k, (name, colour) in enumerate(legend_items)
        ),
    )
    kinds = format_html_join(
        "",
        '<text x="{}" y="{}" font-size="11" font-weight="700" fill="{}">{}</text>'
        '<text x="{}" y="{}" font-size="11" fill="#374151">{}</text>',
        (
            (LEFT + k * 110, HEIGHT - 6, colour, letter, LEFT + k * 110 + 12, HEIGHT - 6, kind)
            for k, (kind, (letter, colour)) in enumerate(KINDS.items())
        ),
    )
    return ticks + dates + legend + kinds


def health_chart(points: Sequence[Point], description: str) -> SafeString:
    """The chart of ``points`` (oldest first); ``description`` says what it shows in words."""
    top = max((p.tests for p in points), default=0) or 1
    slot = (WIDTH - LEFT - RIGHT) / max(len(points), 1)
    width = max(slot * 0.7, 1.0)
    bars = format_html_join(
        "",
        "{}",
        (
            (_bar(p, LEFT + i * slot + (slot - width) / 2, width, top),)
            for i, p in enumerate(points)
        ),
    )
    return format_html(
        '<svg id="{}" class="amtp-chart" viewBox="0 0 {} {}" width="{}" height="{}" role="img" '
        'aria-labelledby="{}-title {}-desc" xmlns="http://www.w3.org/2000/svg">'
        '<title id="{}-title">Tests per ended run, by outcome</title><desc id="{}-desc">{}</desc>'
        "{}{}</svg>",
        CHART_ID,
        WIDTH,
        HEIGHT,
        WIDTH,
        HEIGHT,
        CHART_ID,
        CHART_ID,
        CHART_ID,
        CHART_ID,
        description,
        _axes(points, top, slot),
        bars,
    )
