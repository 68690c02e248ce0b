"""errata.md: the source's own slips, fit to send to its authors; other sources apart.

One file per report folder. It opens with a summary (how many slips, in which claims), then
each slip of the paper's print - a printed number its own released data do not reproduce, or
two of its own statements that disagree, under every reasonable reading the test recomputes -
with the sentence, its tex line, the printed value, the recomputation, the evidence and the
command that reproduces it. Reading-dependent mismatches follow apart, each with the reading
that reproduces the print: they are the suite's readings, not the paper's slips, and are not
meant for the authors. The sections a suite lists apart (this repository's: the press, a
companion paper) follow in their own lists; prints that analogue evidence does not reproduce
are named last as what they are (not errata: different evidence).

Example::

    text = render_errata(errata(results), created="2026-12-01T12:00:00+00:00")
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from typing import Any

from pytest_claims.reports.findings import ERRATA_CLASSES, claim_key, fmt
from pytest_claims.reports.markdown import cell, code
from pytest_claims.reports.setup import ReportSetup

__all__ = ["render_errata", "reproduce_command"]


def reproduce_command(erratum: dict[str, Any]) -> str:
    """The command that re-runs the row an erratum comes from (with the arguments its evidence
    kind needs, ``rerun``: this repository's paper rows name the released tables)."""
    command = f"pytest {shlex.quote(str(erratum['nodeid']))} -p no:cacheprovider"
    extra = str(erratum.get("rerun") or "")
    return f"{command} {extra}" if extra else command


def _printed(e: dict[str, Any]) -> str:
    comparison = e.get("comparison", "==")
    shown = fmt(e["printed"])
    return shown if comparison == "==" else f"{comparison} {shown}"


def _bar(e: dict[str, Any]) -> str:
    """What the recomputation is held to: the printed text itself (a number check), or the
    bar a consistency check compares it with (a label's range, the word's threshold)."""
    threshold = e.get("threshold")
    if threshold is None or str(threshold) == str(e["printed"]):
        return "as printed" if e.get("comparison", "==") == "==" else _printed(e)
    if isinstance(threshold, list | tuple) and len(threshold) == 2:
        return f"{e['comparison']} [{fmt(threshold[0])}, {fmt(threshold[1])}]"
    return f"{e['comparison']} {fmt(threshold)}"


def _slip_block(claim: str, slips: list[dict[str, Any]]) -> list[str]:
    first = slips[0]
    where = first.get("where") or "-"
    lines = [f"### {claim} ({where})", ""]
    if first.get("sentence"):
        lines += [f"> {cell(first['sentence'])}", ""]
    lines += [
        "| check | printed | held to | recomputed | evidence | kind |",
        "|---|---|---|---|---|---|",
    ]
    for e in slips:
        note = f" ({cell(e['note'])})" if e.get("note") else ""
        lines.append(
            f"| {cell(e['check'])}{note} | {cell(fmt(e['printed']))} | {cell(_bar(e))} | "
            f"{cell(fmt(e['measured']))} | {cell(e['evidence'] or '-')} | {e['kind']} |"
        )
    commands = dict.fromkeys(reproduce_command(e) for e in slips)
    lines += ["", "Reproduce: " + "; ".join(code(c) for c in commands), ""]
    return lines


def _reading_block(listed: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## Reading-dependent mismatches (not for the authors)",
        "",
        ERRATA_CLASSES["reading"][0].upper() + ERRATA_CLASSES["reading"][1:] + ".",
        "",
    ]
    if not listed:
        return [*lines, "None.", ""]
    lines += [
        "| claim | check | printed | our reading | the reading that reproduces it |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {e['claim']} | {cell(e['check'])} | {cell(_printed(e))} | "
        f"{cell(fmt(e['measured']))} | {cell(e['reading'])}: {cell(fmt(e['under_reading']))} |"
        for e in listed
    ]
    return [*lines, ""]


def render_errata(
    found: list[dict[str, Any]], created: str, setup: ReportSetup | None = None
) -> str:
    """errata.md for the errata of one run
    (:func:`~pytest_claims.reports.findings.errata`)."""
    sections = (setup or ReportSetup()).sections
    by_class: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in found:
        by_class[e.get("class", "slip")].append(e)
    slips = by_class["slip"]
    claims = sorted({e["claim"] for e in slips}, key=claim_key)
    out = [
        "# Errata",
        "",
        f"{created}. The source's own slips: {len(slips)} printed value(s) in {len(claims)} "
        f"claim(s) ({', '.join(claims) or 'none'}) that its released data, or its own other "
        "numbers, do not reproduce at the printed precision. "
        f"Reading-dependent mismatches (not sent): {len(by_class['reading'])}; "
        + "".join(f"{title.lower()}: {len(by_class[key])}; " for key, title in sections.items())
        + f"prints not reproduced on analogue evidence (not errata): "
        f"{len(by_class['analogue'])}.",
        "",
        "A printed number is reproduced when the recomputation, rounded to the printed digits, "
        "equals it (a printed bound: satisfies it). A slip is listed here only when no other "
        "reasonable reading the test recomputes (the authors' definitions in their code, "
        "medians for means, their rounding or test convention) reproduces it. The verdicts of "
        "the claims do not depend on these checks.",
        "",
        "## The source's slips",
        "",
    ]
    if not slips:
        out += ["None.", ""]
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in slips:
        grouped[e["claim"]].append(e)
    for claim in claims:
        out += _slip_block(claim, grouped[claim])
    out += _reading_block(by_class["reading"])
    listings = [(key, f"## {title}", f"The {title.lower()}.") for key, title in sections.items()]
    what = ERRATA_CLASSES["analogue"]
    listings.append(
        ("analogue", "## Not errata: prints on analogue evidence", what[0].upper() + what[1:] + ".")
    )
    for key, title, meaning in listings:
        listed = by_class[key]
        out += [title, "", meaning, ""]
        if not listed:
            out += ["None.", ""]
            continue
        out += ["| claim | check | printed | measured | evidence |", "|---|---|---|---|---|"]
        out += [
            f"| {e['claim']} | {cell(e['check'])} | {cell(_printed(e))} | "
            f"{cell(fmt(e['measured']))} | {cell(e['evidence'] or '-')} |"
            for e in listed
        ]
        out.append("")
    return "\n".join(out) + "\n"
