"""Small server-rendered SVG charts for the stats page: no JavaScript, no CDN, no plotting library.

Four shapes cover what patrollers ask of the numbers: horizontal bars (citations per verdict
level, and dismissal reasons), a stacked histogram (score distribution by level, with the
supported cut drawn on it), a bar series over days (flagged per day, by level), and a ring
(share of suggestions accepted). Every count of verdicts is a count by level, each level in
its own colour (``bar-<level>``, as the level badges). Colours come from CSS classes
(``static/dashboard.css``), so the charts follow the page's light or dark theme; every bar has
a ``<title>`` (hover tooltip, read by screen readers) and every chart an ``aria-label``.

Every word and number a chart shows is in the page's language: the functions take the request's
:class:`~side.messages.Messages` (``side-dashboard-chart-*`` keys; numbers with its decimal
separator), English when none is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from markupsafe import Markup, escape

from side.messages import FALLBACK, Catalog, Messages

#: English, for a chart drawn without the request's messages (the dashboard's own catalogue).
_ENGLISH = Catalog(Path(__file__).resolve().parent / "i18n").messages(FALLBACK)

#: Drawing units of the bar charts; the SVG scales to its card, so these set the text size.
WIDTH, HEIGHT = 960, 280
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 44, 12, 16, 40


@dataclass(frozen=True)
class Series:
    """One stacked layer: a name for the legend and tooltips, values, and a CSS class."""

    name: str
    values: Sequence[float]
    css: str


def nice_max(value: float) -> float:
    """A round axis maximum at or above ``value`` (1, 2, 5 x 10^n)."""
    if value <= 0:
        return 1.0
    exponent = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * exponent:
            return float(step * exponent)
    return float(10 * exponent)


def _fmt(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"


def _frame(label: str, body: list[str]) -> Markup:
    return Markup(f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
                  f'aria-label="{escape(label)}" preserveAspectRatio="xMidYMid meet">'
                  + "".join(body) + "</svg>")


def _tick_count(top: float) -> int:
    """Grid lines that land on whole numbers when ``top`` is one (counts are never 0.25)."""
    for ticks in (4, 5, 2, 1):
        if float(top / ticks).is_integer():
            return ticks
    return 4


def _y_axis(top: float) -> list[str]:
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    ticks = _tick_count(top)
    out = []
    for n in range(ticks + 1):
        value = top * n / ticks
        y = HEIGHT - MARGIN_BOTTOM - plot_h * n / ticks
        out.append(f'<line class="grid" x1="{MARGIN_LEFT}" x2="{WIDTH - MARGIN_RIGHT}" y1="{y:.1f}" '
                   f'y2="{y:.1f}"/><text class="tick" x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" '
                   f'text-anchor="end">{_fmt(value)}</text>')
    return out


def _text(text: Messages | None) -> Messages:
    return text if text is not None else _ENGLISH


def _legend(series: Sequence[Series]) -> list[str]:
    out, x = [], MARGIN_LEFT
    for s in series:
        out.append(f'<rect class="{s.css}" x="{x}" y="{HEIGHT - 12}" width="10" height="10" rx="2"/>'
                   f'<text class="legend" x="{x + 14}" y="{HEIGHT - 3}">{escape(s.name)}</text>')
        x += 24 + 7 * len(s.name)
    return out


def _x_labels(labels: Sequence[str], slot: float, at_edges: bool, every: int) -> list[str]:
    """Category names under the bars, or bin edges between them (histograms)."""
    offset = 0.0 if at_edges else slot / 2
    return [f'<text class="tick" x="{MARGIN_LEFT + i * slot + offset:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 16}" '
            f'text-anchor="middle">{escape(label)}</text>' for i, label in enumerate(labels) if i % every == 0]


def stacked_bars(label: str, categories: Sequence[str], series: Sequence[Series],
                 markers: Sequence[tuple[float, str]] = (), tick_every: int = 1,
                 edges: Sequence[str] | None = None, text: Messages | None = None) -> Markup:
    """Vertical bars, one per category, layers stacked bottom-up in ``series`` order.

    ``markers`` are vertical lines at fractional positions of the x axis (0 = left edge,
    1 = right edge) with a label, e.g. the flag threshold on a score axis; ``edges`` labels
    the bin boundaries instead of the bars (one more label than bars).
    """
    n = max(len(categories), 1)
    totals = [sum(s.values[i] for s in series) for i in range(len(categories))]
    top = nice_max(max(totals, default=0))
    plot_w, plot_h = WIDTH - MARGIN_LEFT - MARGIN_RIGHT, HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    slot = plot_w / n
    body = _y_axis(top)
    for i, category in enumerate(categories):
        x, base = MARGIN_LEFT + i * slot + slot * 0.1, HEIGHT - MARGIN_BOTTOM
        for s in series:
            height = plot_h * s.values[i] / top
            if height > 0:
                tip = _text(text)("side-dashboard-chart-bar-tip", category, _fmt(s.values[i]), s.name)
                body.append(f'<rect class="{s.css}" x="{x:.1f}" y="{base - height:.1f}" width="{slot * 0.8:.1f}" '
                            f'height="{height:.1f}" rx="2"><title>{escape(tip)}</title></rect>')
                base -= height
    body += _x_labels(edges if edges is not None else categories, slot, edges is not None, tick_every)
    for position, text in markers:
        x = MARGIN_LEFT + plot_w * position
        body.append(f'<line class="marker" x1="{x:.1f}" x2="{x:.1f}" y1="{MARGIN_TOP}" '
                    f'y2="{HEIGHT - MARGIN_BOTTOM}"/><text class="marker-label" x="{x + 5:.1f}" '
                    f'y="{MARGIN_TOP + 12}">{escape(text)}</text>')
    return _frame(label, body + _legend(series))


def level_css(level: str) -> str:
    """The CSS class of a level's bars: ``bar-not-supported``..."""
    return "bar-" + level.replace("_", "-")


def _level_series(layers: Sequence[tuple[str, str, Sequence[int]]]) -> list[Series]:
    """One layer per (level, its text, values), worst level at the bottom of the stack."""
    return [Series(text, values, level_css(level)) for level, text, values in reversed(layers)]


def score_histogram(bins: Sequence[float], layers: Sequence[tuple[str, str, Sequence[int]]],
                    supported_cut: float, text: Messages | None = None) -> Markup:
    """Support scores of checked citations, stacked by level, the supported cut marked.

    ``layers`` are (level, its text, a count per bin), best supported first; a citation that
    could not be checked has no score and is not in any bin.
    """
    t = _text(text)
    categories = [f"{t.number(lo, 1)}–{t.number(hi, 1)}" for lo, hi in pairwise(bins)]
    return stacked_bars(t("side-dashboard-chart-scores"), categories, _level_series(layers),
                        edges=[t.number(b, 1) for b in bins],
                        markers=[(supported_cut, t("side-dashboard-chart-supported-from", t.number(supported_cut)))],
                        text=t)


def daily_bars(days: Sequence[tuple[str, int]], layers: Sequence[tuple[str, str, Sequence[int]]] = (),
               text: Messages | None = None) -> Markup:
    """Flagged citations per day, stacked by level when ``layers`` are given (else one series),
    dates as MM-DD, about eight labels whatever the span."""
    t = _text(text)
    categories = [day[5:] for day, _ in days]
    series = (_level_series(layers) if layers
              else [Series(t("side-dashboard-chart-flagged"), [n for _, n in days], "bar-flagged")])
    return stacked_bars(t("side-dashboard-chart-daily"), categories, series,
                        tick_every=max(1, math.ceil(len(days) / 8)), text=t)


def level_bars(label: str, items: Sequence[tuple[str, str, int]], text: Messages | None = None) -> Markup:
    """One bar per (level, its text, count), in the given order, each in its level's colour."""
    return horizontal_bars(label, [(name, n) for _, name, n in items], sort=False,
                           css=[level_css(level) for level, _, _ in items], width=WIDTH, text=text)


def ring(label: str, part: int, total: int, caption: str, text: Messages | None = None) -> Markup:
    """A ring showing ``part`` of ``total`` with the percentage in the middle."""
    part_of = _text(text)("side-dashboard-chart-part-of", part, total)
    size, radius, stroke = 180, 70, 22
    circumference = 2 * math.pi * radius
    share = part / total if total else 0.0
    centre = f"{share:.0%}" if total else "–"
    value = ""
    if part > 0:  # a zero-length arc would still draw its round cap as a dot
        value = (f'<circle class="ring-value" cx="90" cy="90" r="{radius}" stroke-width="{stroke}" fill="none" '
                 f'stroke-dasharray="{circumference * share:.1f} {circumference:.1f}" '
                 f'transform="rotate(-90 90 90)"><title>{escape(part_of)}</title></circle>')
    return Markup(f'<svg class="chart ring" viewBox="0 0 {size} {size}" role="img" aria-label="{escape(label)}">'
                  f'<circle class="ring-track" cx="90" cy="90" r="{radius}" stroke-width="{stroke}" fill="none">'
                  f'<title>{escape(part_of)}</title></circle>{value}'
                  f'<text class="ring-centre" x="90" y="96" text-anchor="middle">{centre}</text>'
                  f'<text class="ring-caption" x="90" y="118" text-anchor="middle">{escape(caption)}</text></svg>')


def horizontal_bars(label: str, items: Sequence[tuple[str, int]], sort: bool = True,
                    css: Sequence[str] = (), width: int = 520, text: Messages | None = None) -> Markup:
    """One labelled bar per item, longest first unless ``sort`` is false (dismissal reasons;
    levels keep their own order); ``css`` is each bar's class (``bar-dismissed`` by default);
    ``width`` in drawing units (a half-width card's default; :data:`WIDTH` for a wide card, so
    the text keeps its size)."""
    classes = list(css) or ["bar-dismissed"] * len(items)
    pairs = list(zip(items, classes, strict=True))
    if sort:
        pairs.sort(key=lambda pair: -pair[0][1])
    items = [item for item, _ in pairs]
    row, left = 28, 210
    height = max(row * len(items), row) + 8
    top = max((n for _, n in items), default=0) or 1
    body = []
    for i, ((name, n), bar) in enumerate(pairs):
        y, w = 4 + i * row, (width - left - 40) * n / top
        body.append(f'<text class="tick" x="{left - 8}" y="{y + 15}" text-anchor="end">{escape(name)}</text>'
                    f'<rect class="{bar}" x="{left}" y="{y + 3}" width="{w:.1f}" height="16" rx="3">'
                    f'<title>{escape(f"{name}: {n}")}</title></rect>'
                    f'<text class="value" x="{left + w + 6:.1f}" y="{y + 15}">{n}</text>')
    if not items:
        body.append(f'<text class="tick" x="{left}" y="20">{escape(_text(text)("side-dashboard-chart-no-dismissals"))}'
                    '</text>')
    return Markup(f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
                  + "".join(body) + "</svg>")
