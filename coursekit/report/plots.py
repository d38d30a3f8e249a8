"""Score distributions as inline SVG (Matplotlib, no pyplot state, no network)."""

import io
import re

import numpy as np

BINS = 10  # bars below full marks; full marks get a bar of their own
FULL_COLOUR, PART_COLOUR = "#2e7d32", "#c62828"
SIZE = (4.2, 1.7)  # inches
# Fixed margins (figure fractions) that fit the labels: constrained layout measured every text
# twice and took half of each chart's time.
MARGINS = {"left": 0.13, "right": 0.98, "bottom": 0.27, "top": 0.95}
UNREFERENCED_ID = re.compile(r' id="[A-Za-z0-9.]+_\d+"')


def distribution(scores, max_points, label, salt):
    """An SVG bar chart of `scores` out of `max_points`: BINS bars below full marks, one for them.
    `salt` makes the SVG's element ids unique in a page that holds many charts."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    scores = np.asarray(scores, dtype=float)
    full = scores >= max_points
    edges = np.linspace(0.0, max_points, BINS + 1)
    counts, _ = np.histogram(scores[~full], bins=edges)
    width = max_points / BINS
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": salt, "font.size": 8}):
        figure = Figure(figsize=SIZE)
        figure.subplots_adjust(**MARGINS)
        axes = figure.subplots()
        # one call: the bars below full marks, then the full-marks bar a little apart
        axes.bar([*edges[:-1], max_points + width * 0.2], [*counts, int(full.sum())], width=width * 0.9,
                 align="edge", color=[PART_COLOUR] * BINS + [FULL_COLOUR])
        axes.set_xlim(-width * 0.2, max_points + width * 1.3)
        axes.set_xticks([0, max_points / 2, max_points + width * 0.65], ["0", f"{max_points / 2:g}", "full"])
        axes.set_ylim(0, max(1, counts.max(initial=0), full.sum()) * 1.1)
        axes.yaxis.set_major_locator(MaxNLocator(3, integer=True))
        axes.set_xlabel(label)
        axes.set_ylabel("students")
        axes.spines[["top", "right"]].set_visible(False)
        buffer = io.StringIO()
        # No metadata block (a creator's URL, a date): the page is the same for the same class.
        figure.savefig(buffer, format="svg", metadata=dict.fromkeys(("Creator", "Date", "Format", "Type")))
    text = buffer.getvalue()
    # Inline: no XML prolog or doctype, and none of Matplotlib's element ids (figure_1, patch_3...),
    # which every chart of the page would repeat; the ids it refers to are salted hashes.
    return UNREFERENCED_ID.sub("", text[text.index("<svg"):])
