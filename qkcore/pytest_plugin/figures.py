"""Report figures: points recorded by claim tests (``claim_record.plot``), drawn as PNG.

Tests naming the same figure share its axes; ``kind`` is ``scatter``, ``line`` or ``strip``
(categories on x). matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

import base64
import io
from collections import defaultdict
from typing import Any

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
                    "claims": set(),
                },
            )
            xs, ys = fig["series"][point["series"]]
            xs.extend(point["x"])
            ys.extend(point["y"])
            fig["claims"].add(r["claim"])
    return figures


def figure_png(title: str, spec: dict[str, Any]) -> str:
    """One figure as a base64 PNG (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=90)
    categories: list[str] = []
    for i, (name, (xs, ys)) in enumerate(sorted(spec["series"].items())):
        ys_f = [float(y) if isinstance(y, int | float) else float("nan") for y in ys]
        if spec["kind"] == "strip":
            for x in xs:
                if str(x) not in categories:
                    categories.append(str(x))
            pos = [categories.index(str(x)) + (i - 1) * 0.08 for x in xs]
            ax.scatter(pos, ys_f, label=name, s=28, alpha=0.8)
        elif spec["kind"] == "line":
            xs_f = [float(x) for x in xs]
            ax.plot(xs_f, ys_f, marker=".", label=name)
        else:
            xs_f = [float(x) for x in xs]
            ax.scatter(xs_f, ys_f, label=name, s=14, alpha=0.7)
    if categories:
        ax.set_xticks(range(len(categories)), categories, rotation=20)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(spec["xlabel"])
    ax.set_ylabel(spec["ylabel"])
    ax.set_xscale(spec.get("xscale", "linear"))
    if len(spec["series"]) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")
