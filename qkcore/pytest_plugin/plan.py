"""What a selection will build, and why: the lines printed before the first build starts.

Builds are grouped by the rows that wait on them - a row named by its claim and evidence, a
toy's seed folded into ``-s*`` - so the 8 seeds of one toy recipe are one line, and a build that
only set rows need says so::

    prepare: 312 selected tests; 121 need no build and run first. 26 builds (about 18 min on 2
    processes) release the rest as each is ready:
      1 build, weights:smollm2-135m table (~4 min): 40 rows - S1, S2 ... on weights:smollm2-135m
      8 builds, toy-cpu:rope-s* run, table and history (~12 min): 74 rows - S9b ... on
        toy-cpu:rope-s*
      16 builds, toy-cpu:alibi-s* ..., toy-cpu:ape-s* ... (~21 min): only the toy-cpu:all-models
        rows of S6c, S6d, P6
    One scheme's rows only: -m rope (or ape, alibi); -m paper builds nothing.

Claim IDs come from the ``@claim("ID", ...)`` decorators of the test files (read with
:mod:`ast`: xdist's controller has the collected ids but no test items).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["claim_ids_from_sources", "plan_lines"]

_SEED = re.compile(r"-s\d+\b")
_NODE = re.compile(r"^(?P<file>[^:]+)::(?P<func>[^\[]+)(?:\[(?P<param>.*)\])?$")
_SET_MARK = "all-models"


def _minutes(seconds: float) -> str:
    return f"~{max(1, round(seconds / 60))} min"


@cache
def _claims_in(path: Path) -> dict[str, str]:
    """Test function name -> claim ID, from the ``@claim("ID", ...)`` decorators of a file."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for deco in node.decorator_list:
            if (
                isinstance(deco, ast.Call)
                and getattr(deco.func, "id", getattr(deco.func, "attr", "")) == "claim"
                and deco.args
                and isinstance(deco.args[0], ast.Constant)
            ):
                out[node.name] = str(deco.args[0].value)
    return out


def claim_ids_from_sources(node_ids: list[str], rootdir: Path) -> dict[str, str]:
    """Node id -> claim ID (the test function's name where no ``@claim`` names one)."""
    out = {}
    for node_id in node_ids:
        match = _NODE.match(node_id)
        if match is None:
            continue
        func = match["func"].split("::")[-1]
        out[node_id] = _claims_in(rootdir / match["file"]).get(func, func)
    return out


def _evidence_of(node_id: str) -> str:
    match = _NODE.match(node_id)
    param = (match["param"] if match else None) or "-"
    return _SEED.sub("-s*", param)


def _joined(names: list[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def plan_lines(
    needs: Mapping[str, frozenset[str]],
    tasks: list[Any],
    claim_of: Mapping[str, str],
    workers: int,
    where: str,
    name: Callable[[Any], str] = lambda task: task.key,
) -> list[str]:
    """The plan (module docstring): ``needs`` maps each selected test to the builds it waits on
    (stamps of builds not yet done); ``tasks`` are those builds (``label``, ``cost``), each
    named as ``needs`` names it by ``name`` (its stamp), run ``workers`` at a time on ``where``
    (the executor's description)."""
    by_key = {name(task): task for task in tasks}
    free = sum(1 for keys in needs.values() if not keys)
    waiting_on: dict[str, set[tuple[str, str]]] = defaultdict(set)
    rows_of: dict[str, set[str]] = defaultdict(set)
    for node_id, keys in needs.items():
        reason = (_evidence_of(node_id), claim_of.get(node_id, node_id))
        for key in keys:
            waiting_on[key].add(reason)
            rows_of[key].add(node_id)
    groups: dict[frozenset[tuple[str, str]], list[Any]] = defaultdict(list)
    for key, task in by_key.items():
        groups[frozenset(waiting_on[key])].append(task)
    wall = _minutes(sum(task.cost for task in tasks) / max(1, workers))[1:]
    lines = [
        f"prepare: {len(needs)} selected tests; {free} need no build and run first. "
        f"{len(tasks)} build{'s' * (len(tasks) != 1)} (about {wall} on {where}) "
        "release the rest as each is ready:"
    ]
    ordered = sorted(groups.items(), key=lambda kv: -sum(t.cost for t in kv[1]))
    for reasons, group in ordered:
        labels = sorted({_SEED.sub("-s*", task.label) for task in group})
        rows = set().union(*(rows_of[name(task)] for task in group))
        by_evidence: dict[str, set[str]] = defaultdict(set)
        for evidence, claim_id in reasons:
            by_evidence[evidence].add(claim_id)
        parts = [
            f"{_joined(sorted(claims))} on {evidence}"
            for evidence, claims in sorted(by_evidence.items())
        ]
        only_sets = bool(by_evidence) and all(_SET_MARK in e for e in by_evidence)
        what = "only the " if only_sets else ""
        lines.append(
            f"  {len(group)} build{'s' * (len(group) != 1)}, {', '.join(labels)} "
            f"({_minutes(sum(t.cost for t in group))} of work): {what}{len(rows)} "
            f"row{'s' * (len(rows) != 1)} - " + "; ".join(parts)
        )
    if tasks:
        lines.append(
            "  (one scheme's rows only: -m rope, -m ape or -m alibi; -m paper builds nothing)"
        )
    return lines
