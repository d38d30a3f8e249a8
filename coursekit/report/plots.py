"""Score distributions as charts the page draws as inline SVG (report.html.j2's `chart` macro).

A chart is a histogram: BINS bars below full marks and one bar for full marks, a little apart.
Its geometry is computed here, in the SVG's own pixels; the template only writes the elements.
Matplotlib drew the same charts in 0.21 s each (0.14 s with one figure reused and a fixed layout),
after 2 s to import, on the shared 2-core machine: a course page has 29 charts, and the page of
1,000 notebooks must take less than 10 s (benchmarks/report.py). These take a millisecond or two.
"""

from dataclasses import dataclass

import numpy as np

BINS = 10  # bars below full marks; full marks get a bar of their own
WIDTH, HEIGHT = 420, 170  # the chart, in pixels
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 40  # margins around the plotting area, in pixels
GAP = 0.1  # of a bar's slot, left empty between bars
Y_TICKS = 3  # at most this many labelled counts above 0


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    count: int
    what: str  # the scores it counts, e.g. "1.5 to 1.8 points" or "full marks"
    full: bool


@dataclass(frozen=True)
class Chart:
    label: str  # the x axis's
    bars: tuple
    x_ticks: tuple  # (x, text)
    y_ticks: tuple  # (y, text)
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    bottom: float = HEIGHT - BOTTOM  # the x axis's y
    right: int = WIDTH - RIGHT


def _count_ticks(top):
    """Counts from 0 in a round step (1, 2 or 5 times a power of ten), at most Y_TICKS above 0,
    the last at least `top`."""
    power = 1
    while True:
        for step in (power, 2 * power, 5 * power):
            if step * Y_TICKS >= top:
                return [step * i for i in range(-(-top // step) + 1)]
        power *= 10


def distribution(scores, max_points, label):
    """The Chart of `scores` out of `max_points`."""
    scores = np.asarray(scores, dtype=float)
    full = scores >= max_points
    edges = np.linspace(0.0, max_points, BINS + 1)
    counts = [int(c) for c in np.histogram(scores[~full], bins=edges)[0]] + [int(full.sum())]
    slot = (WIDTH - LEFT - RIGHT) / (BINS + 1.5)  # the full-marks bar sits half a slot apart
    ticks = _count_ticks(max(1, max(counts)))
    scale = (HEIGHT - TOP - BOTTOM) / ticks[-1] if ticks[-1] else 0.0
    base = HEIGHT - BOTTOM
    bars = []
    for i, count in enumerate(counts):
        x = LEFT + slot * (i + (0.5 if i == BINS else 0))
        what = "full marks" if i == BINS else f"{edges[i]:.3g} to {edges[i + 1]:.3g} points"
        bars.append(Bar(round(x + slot * GAP / 2, 1), round(base - count * scale, 1), round(slot * (1 - GAP), 1),
                        round(count * scale, 1), count, what, i == BINS))
    x_ticks = ((LEFT, "0"), (round(LEFT + slot * BINS / 2, 1), f"{max_points / 2:g}"),
               (round(LEFT + slot * (BINS + 1), 1), "full"))
    return Chart(label, tuple(bars), x_ticks, tuple((round(base - t * scale, 1), str(t)) for t in ticks))
