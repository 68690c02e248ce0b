"""Report figures: points recorded by claim tests (``claims_recorder.plot``), drawn as PNG.

Tests naming the same figure share its axes; ``kind`` is ``scatter``, ``line`` or ``strip``
(categories on x); series recorded with ``paper=True`` are the paper's printed values, drawn
over the measured ones. matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

import base64
import io
from collections import defaultdict
from typing import Any

from pytest_claims.optional import optional

__all__ = ["collect_figures", "figure_png"]


def collect_figures(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Points of every result, grouped by figure title and then by series."""
    figures: dict[str, dict[str, Any]] = {}
    for r in results:
        for point in r.get("figures", []):
            fig = figures.setdefault(
                point["figure"],
                {
                    "kind": point["kind"],
                    "xlabel": point["xlabel"],
                    "ylabel": point["ylabel"],
                    "xscale": point.get("xscale", "linear"),
                    "series": defaultdict(lambda: ([], [])),
                    "paper": set(),
                    "claims": set(),
                    "groups": {},
                    "hlines": set(),
                    "spans": set(),
                    "caption": "",
                },
            )
            fig["caption"] = fig["caption"] or point.get("caption", "")
            if point.get("group"):
                fig["groups"][point["series"]] = point["group"]
            fig["hlines"] |= {(float(y), str(label)) for y, label in point.get("hlines", [])}
            fig["spans"] |= {(float(a), float(b), str(t)) for a, b, t in point.get("spans", [])}
            xs, ys = fig["series"][point["series"]]
            xs.extend(point["x"])
            ys.extend(point["y"])
            if point.get("paper"):
                fig["paper"].add(point["series"])
            fig["claims"].add(r["claim"])
    return figures


#: One marker per series (with the colour cycle, no two series look alike up to 10 x 8); the
#: diamond is kept for the paper's printed values.
MARKERS = ("o", "s", "^", "v", "P", "X", "*", "h")


def _number(v: Any) -> float:
    return float(v) if isinstance(v, int | float) else float("nan")


def figure_png(title: str, spec: dict[str, Any]) -> str:
    """One figure as a base64 PNG (matplotlib, Agg backend).

    Each series has its own colour and marker; the paper's printed values (series recorded
    with ``paper=True``) are black and hollow, drawn last; the legend sits outside the axes;
    a strip figure's x axis is its category names.
    """
    matplotlib = optional("matplotlib", extra="figures", purpose="a figure of claims.html")
    matplotlib.use("Agg")
    plt = optional("matplotlib.pyplot", extra="figures", purpose="a figure of claims.html")

    fig, ax = plt.subplots(figsize=(8.0, 4.2), dpi=90)
    colours = [plt.get_cmap("tab10")(i) for i in range(10)]
    paper = spec.get("paper", set())
    names = sorted(n for n in spec["series"] if n not in paper) + sorted(paper)
    categories = _categories(spec, names)
    measured = [n for n in names if n not in paper]
    groups: dict[str, str] = spec.get("groups", {})
    group_names = sorted(set(groups.values()))
    within: dict[str, int] = defaultdict(int)  # a series' marker: its rank in its group
    for i, name in enumerate(names):
        group = groups.get(name)
        rank = within[group] if group else i
        if group:
            within[group] += 1
        if name in paper:
            colour: Any = "black"
        elif group:
            colour = colours[group_names.index(group) % len(colours)]
        else:
            colour = colours[i % len(colours)]
        offset = 0.0 if name in paper else (i - (len(measured) - 1) / 2) * 0.06
        style = _series_style(name, paper, group, rank)
        _draw_series(
            ax, spec["kind"], spec["series"][name], name in paper, categories, offset, colour, style
        )
    _draw_guides(ax, spec, group_names, colours)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(spec["xlabel"])
    ax.set_ylabel(spec["ylabel"])
    ax.set_xscale(spec.get("xscale", "linear"))  # before the ticks: a new scale resets them
    if categories:
        ax.set_xticks(range(len(categories)), categories, rotation=20)
    if len(names) > 1 or paper or spec.get("hlines") or spec.get("spans"):
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(_small_png(buf.getvalue())).decode("ascii")


def _categories(spec: dict[str, Any], names: list[str]) -> list[str]:
    """A strip figure's x categories, in the order the series first name them."""
    categories: list[str] = []
    if spec["kind"] == "strip":
        for name in names:
            for x in spec["series"][name][0]:
                if str(x) not in categories:
                    categories.append(str(x))
    return categories


def _series_style(name: str, paper: set[str], group: str | None, rank: int) -> dict[str, Any]:
    """A series' marker and legend label: the paper's values share one entry (told apart by
    position); grouped series are named by their group (proxy entries, :func:`_draw_guides`)."""
    reference = name in paper
    first_reference = reference and name == min(paper)
    if first_reference:
        label = "the source's printed value"
    elif reference or group:
        label = None
    else:
        label = name
    return {"marker": "D" if reference else MARKERS[rank % len(MARKERS)], "label": label}


def _draw_series(
    ax: Any,
    kind: str,
    series: tuple[list[Any], list[Any]],
    reference: bool,
    categories: list[str],
    offset: float,
    colour: Any,
    style: dict[str, Any],
) -> None:
    """One series as strip points (at its categories, ``offset`` apart), a line, or scatter
    points; the paper's values hollow and on top."""
    xs, ys = series
    ys_f = [_number(y) for y in ys]
    if kind == "strip":
        pos = [categories.index(str(x)) + offset for x in xs]
        if reference:
            ax.scatter(pos, ys_f, s=60, facecolors="none", edgecolors=colour, zorder=3, **style)
        else:
            ax.scatter(pos, ys_f, s=28, alpha=0.8, color=colour, **style)
        return
    xs_f = [_number(x) for x in xs]
    if kind == "line":
        line = "--" if reference else "-"
        ax.plot(xs_f, ys_f, linestyle=line, color=colour, markersize=4, **style)
    elif reference:
        ax.scatter(xs_f, ys_f, s=50, facecolors="none", edgecolors=colour, zorder=3, **style)
    else:
        ax.scatter(xs_f, ys_f, s=16, alpha=0.7, color=colour, **style)


def _draw_guides(ax: Any, spec: dict[str, Any], group_names: list[str], colours: list[Any]) -> None:
    """Horizontal reference lines, shaded spans (one legend entry per label) and one legend
    entry per group, in its colour."""
    for y, label in sorted(spec.get("hlines", set())):
        ax.axhline(y, color="grey", linestyle="--", linewidth=1, label=label)
    shaded: set[str] = set()
    for x0, x1, label in sorted(spec.get("spans", set())):
        if x1 > x0:  # one legend entry per label, however many runs shade it
            ax.axvspan(x0, x1, color="grey", alpha=0.12, label=None if label in shaded else label)
            shaded.add(label)
    for group in group_names:
        ax.scatter([], [], color=colours[group_names.index(group) % len(colours)], label=group)


#: Colours a figure's PNG keeps: ten series colours, greys, black and their antialiased edges
#: fit; the page then stays a few MB with every figure inline.
PALETTE_COLOURS = 64


def _small_png(png: bytes) -> bytes:
    """The PNG with an adaptive palette of :data:`PALETTE_COLOURS` colours (3-4x smaller)."""
    from PIL import Image  # matplotlib's own dependency

    image = Image.open(io.BytesIO(png)).convert("RGB")
    small = image.quantize(colors=PALETTE_COLOURS, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()
