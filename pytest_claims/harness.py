"""The two-sided harness: a claim test run again, in its own process, on changed evidence.

A mutation run (``--claims-mutations``) proves more than "every check can fail". A claim's
**lever** (``op = "cross"``, :mod:`pytest_claims.mutations`) gains a row the harness drives
itself, calling the claim test several times with a private ``claim`` each: the lever moves its
column on the selected rows (``shift`` or ``scale``) by the amount the harness finds - outward
from zero, doubling, then bisecting - that first changes the outcome of the statement it names.
That statement's threshold is the catalogue's, the sentence's own boundary (its provenance is
tested), so the pair of amounts around the change is the smallest realistic change that
carries the deciding value across the boundary (``across``), and the largest that stays inside
(``inside``). Where the statement decides the row, the verdict must move at ``across`` and must
not at ``inside`` (unless another statement's nearer boundary moved it first: noted).

The row pytest records is the claim test on the tables as released (the search starts from
its checks); what the harness found travels with it as ``probes``, which ``mutations.md``
reads (:mod:`~pytest_claims.reports.mutations`). The negative controls need no driving
(plain mutated copies, judged there against the released row); the *support* side needs no
re-run: every statement on an interval answers it when it is judged
(:mod:`pytest_claims.stats.uncertainty`).

Example (what a lever's probe holds)::

    {"kind": "boundary", "mutation": "top5-dhead", "check": "median D_head ...",
     "threshold": 0.8, "original": {"verdict": "supported", "outcome": "pass", ...},
     "inside": {"by": -0.0123, "verdict": "supported", ...},
     "across": {"by": -0.0125, "verdict": "refuted", ...}, "deciding": true, "problem": ""}
"""

from __future__ import annotations

import fnmatch
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from pytest_claims.author import Claim, PremiseUnmet
from pytest_claims.checks import Check, verdict_of
from pytest_claims.evidence import CLAIM_MARK, mutated
from pytest_claims.recorder import ClaimRecorder

__all__ = ["EVALUATIONS", "Run", "harness_mutation", "run_harness"]

#: The most runs a lever's search may take: 2 to find the direction, up to 12 doublings each
#: way, then bisection until the bracket is within 1/8 of the amount (at most 10 halvings).
EVALUATIONS = 2 + 2 * 12 + 10
_DOUBLINGS = 12
_BISECTIONS = 10
_PRECISION = 8


@dataclass(frozen=True)
class Run:
    """One run of a claim test: its checks, its verdict, or why it broke."""

    checks: tuple[Check, ...]
    verdict: str
    error: str = ""

    def target(self, pattern: str) -> Check | None:
        """The first statement whose name matches ``pattern`` (a glob)."""
        return next(
            (
                c
                for c in self.checks
                if c.kind == "statement" and fnmatch.fnmatchcase(c.name, pattern)
            ),
            None,
        )

    def summary(self, pattern: str = "", by: float | None = None) -> dict[str, Any]:
        check = self.target(pattern) if pattern else None
        out: dict[str, Any] = {"verdict": self.verdict}
        if by is not None:
            out["by"] = by
        if check is not None:
            out |= {"outcome": check.outcome, "value": check.value}
        if self.error:
            out["error"] = self.error
        return out


def harness_mutation(item: pytest.Item) -> Any:
    """The lever this row is the search of, or None."""
    from pytest_claims.mutations import HARNESS_OPS, parse_mutation

    ref = _piece(item)[1]
    name = getattr(getattr(ref, "ref", None), "mutation", "")
    if not name:
        return None
    entry = _entry(item)
    for spec in getattr(entry, "mutations", ()):
        if spec.get("name") == name and spec.get("op") in HARNESS_OPS:
            return parse_mutation(spec)
    return None


def _entry(item: pytest.Item) -> Any:
    marker = item.get_closest_marker(CLAIM_MARK)
    return marker.kwargs.get("entry") if marker is not None else None


def _piece(item: pytest.Item) -> tuple[str, Any]:
    """``(argument name, piece)`` of the row's evidence."""
    funcargs = getattr(item, "funcargs", {})
    for name in ("evidence", "evidence_set"):
        if name in funcargs:
            return name, funcargs[name]
    return "", None


def _runner(item: pytest.Item) -> Callable[[Any], Run]:
    """Run the claim test on another piece, with a private claim and recorder."""
    entry = _entry(item)
    argument, _ = _piece(item)
    function = item.obj  # type: ignore[attr-defined]
    names = list(inspect.signature(function).parameters)

    def run(piece: Any) -> Run:
        recorder = ClaimRecorder()
        args = {**item.funcargs, argument: piece}  # type: ignore[attr-defined]
        args["judge"] = Claim(entry, piece.ref, recorder)  # the fixture, private to this run
        args["claims_recorder"] = recorder
        try:
            function(**{name: args[name] for name in names})
        except PremiseUnmet:
            pass
        except Exception as exc:  # the row's own run shows the traceback; here, one line
            return Run((), "error", f"{type(exc).__name__}: {exc}"[:300])
        if not recorder.checks:
            return Run((), "error", "the test judged nothing")
        return Run(tuple(recorder.checks), verdict_of(recorder.checks)[0])

    return run


def _base(piece: Any) -> Any:
    """The piece as released: its mark removed (a lever's row carries the released tables)."""
    return mutated(piece, name="")


def run_harness(item: pytest.Item, lever: Any, recorder: ClaimRecorder) -> None:
    """Search a lever from the row pytest has just judged (its checks are ``recorder``'s, the
    tables as released) and record what it found as the row's probe (module docstring)."""
    _, piece = _piece(item)
    cell = getattr(getattr(item, "callspec", None), "id", "")
    if lever.cells and not fnmatch.fnmatchcase(cell, lever.cells):
        # a lever of one cell of a parametrized test: the other cells are not searched
        recorder.probes.append(
            {"kind": "boundary", "mutation": lever.name, "skipped": f"not in {lever.cells}"}
        )
        return
    checks = tuple(recorder.checks)
    original = Run(checks, verdict_of(list(checks))[0]) if checks else Run((), "error", "no checks")
    recorder.probes.append(_boundary(lever, _base(piece), original, _runner(item)))


def _boundary(lever: Any, base: Any, original: Run, run: Callable[[Any], Run]) -> dict[str, Any]:
    """The lever's search (module docstring)."""
    probe: dict[str, Any] = {
        "kind": "boundary",
        "mutation": lever.name,
        "check": lever.check,
        "lever": lever.describe(),
        "original": original.summary(lever.check),
        "problem": "",
    }
    target = original.target(lever.check)
    if original.verdict == "error":
        probe["problem"] = f"the row itself broke: {original.error}"
        return probe
    if target is None:
        probe["problem"] = f"the lever names no statement of this row: {lever.check!r}"
        return probe
    probe |= {
        "statement": target.name,
        "threshold": target.threshold,
        "comparison": target.comparison,
    }
    evaluations = 0

    def at(amount: float) -> Run:
        nonlocal evaluations
        evaluations += 1
        return run(mutated(base, lever.at(amount), name=lever.name))

    found = _search(lever, original, target, at)
    probe["evaluations"] = evaluations
    if isinstance(found, str):
        probe["problem"] = found
        return probe
    (inside_by, inside), (across_by, across) = found
    probe["inside"] = inside.summary(lever.check, inside_by)
    probe["across"] = across.summary(lever.check, across_by)
    moved = across.target(lever.check)
    probe["deciding"] = deciding = _decides(original, target, moved)
    problems = []
    first = _other_crossing(original, inside, lever.check)
    if first:
        probe["note"] = f"another statement crossed first, inside this one's boundary: {first}"
    elif inside.verdict != original.verdict:
        problems.append(
            f"a change that stays inside its boundary moved the verdict {original.verdict} -> "
            f"{inside.verdict}"
        )
    if deciding and across.verdict == original.verdict:
        problems.append(
            f"carrying '{target.name}' across its boundary ({target.comparison} "
            f"{target.threshold}) left the verdict {original.verdict}"
        )
    if across.verdict == "error" or inside.verdict == "error":
        problems.append(f"a run broke: {across.error or inside.error}")
    probe["problem"] = "; ".join(problems)
    return probe


def _other_crossing(original: Run, changed: Run, pattern: str) -> str:
    """The first statement other than the lever's whose outcome the change moved ("" if none):
    two boundaries can lie on one path, and the nearer one moves the verdict first."""
    target = original.target(pattern)
    before = {(c.kind, c.name): c.outcome for c in original.checks if c is not target}
    for check in changed.checks:
        key = (check.kind, check.name)
        if check.kind == "statement" and key in before and before[key] != check.outcome:
            return f"'{check.name}' ({before[key]} -> {check.outcome})"
    return ""


def _decides(original: Run, target: Check, moved: Check | None) -> bool:
    """Whether the target's new outcome alone changes the row's verdict (other statements
    may already decide it: then crossing this one cannot move it)."""
    if moved is None:
        return False
    checks = [replace(c, outcome=moved.outcome) if c is target else c for c in original.checks]
    return verdict_of(checks)[0] != original.verdict


def _search(
    lever: Any, original_run: Run, target: Check, at: Callable[[float], Run]
) -> tuple[tuple[float, Run], tuple[float, Run]] | str:
    """``((inside amount, run), (across amount, run))`` around the first change of the target's
    outcome, or why none was found."""
    step = _first_step(lever, target)
    outcome = target.outcome

    def changed(result: Run) -> bool:
        moved = result.target(lever.check)
        return result.verdict == "error" or moved is None or moved.outcome != outcome

    # direction: up first; down first where up neither changes the outcome nor brings the
    # value nearer its threshold but down does; the other side after the first fails (a
    # statement need not move monotonically: a q can fall, then rise again)
    up = at(step)
    if changed(up):
        return _bisect(at, changed, (0.0, original_run), (step, up))
    start = _distance(original_run, lever, target)
    trials = {1.0: up}
    signs = [1.0, -1.0]  # the nearer side first; the other where it cannot cross
    if not _distance(up, lever, target) < start:
        trials[-1.0] = down = at(-step)
        if changed(down):
            return _bisect(at, changed, (0.0, original_run), (-step, down))
        if _distance(down, lever, target) < start:
            signs = [-1.0, 1.0]
    reached = 0.0
    for sign in signs:
        if sign not in trials:
            trials[sign] = at(sign * step)
            if changed(trials[sign]):
                return _bisect(at, changed, (0.0, original_run), (sign * step, trials[sign]))
        found = _outward(lever, at, changed, sign * step, trials[sign])
        if not isinstance(found, float):
            return found
        reached = max(reached, found)
    return (
        f"no {lever.via} of {lever.column} up to {reached:.3g} (2^{_DOUBLINGS} x the first step "
        f"{step:.3g}, {' and '.join('up' if s > 0 else 'down' for s in signs)}) changes "
        f"'{target.name}' from {outcome}: it cannot cross its boundary"
    )


def _outward(
    lever: Any,
    at: Callable[[float], Run],
    changed: Callable[[Run], bool],
    low: float,
    low_run: Run,
) -> tuple[tuple[float, Run], tuple[float, Run]] | float:
    """Double the amount outward from ``low`` (unchanged) until the outcome changes, then
    bisect; or the farthest amount reached."""
    for _ in range(_DOUBLINGS):
        high = _doubled(lever, low)
        if high == low:
            break  # a shrink has reached zero: beyond it the values change sign
        result = at(high)
        if changed(result):
            return _bisect(at, changed, (low, low_run), (high, result))
        low, low_run = high, result
    return abs(low)


def _doubled(lever: Any, amount: float) -> float:
    """The next amount out: double it - but a scale lever shrinks at most to zero (x 0,
    amount -1), where the doubling would otherwise jump past the values' vanishing."""
    if lever.via == "scale" and amount < 0:
        return max(2 * amount, -1.0)
    return 2 * amount


def _bisect(
    at: Callable[[float], Run],
    changed: Callable[[Run], bool],
    inside: tuple[float, Run],
    across: tuple[float, Run],
) -> tuple[tuple[float, Run], tuple[float, Run]]:
    low, low_run = inside
    high, high_run = across
    for _ in range(_BISECTIONS):
        if abs(high - low) <= abs(high) / _PRECISION:
            break
        middle = (low + high) / 2
        result = at(middle)
        if changed(result):
            high, high_run = middle, result
        else:
            low, low_run = middle, result
    return (low, low_run), (high, high_run)


def _first_step(lever: Any, target: Check) -> float:
    """The first amount tried: the target's distance to its threshold (a shift of the value's
    own scale), or a tenth (x 1.1 or x 0.9) for a scale lever or a value on its threshold."""
    if lever.via == "scale":
        return 0.1
    value = _number(target.value)
    if value is None:
        return 0.1
    threshold = target.threshold
    edges = threshold if isinstance(threshold, list | tuple) else [threshold]
    distances = [abs(value - float(e)) for e in edges if _number(e) is not None]
    distances = [d for d in distances if math.isfinite(d) and d > 0]
    return min(distances) if distances else 0.1


def _distance(result: Run, lever: Any, target: Check) -> float:
    """How far the run's target value sits from the nearest edge of its threshold."""
    moved = result.target(lever.check)
    value = _number(moved.value) if moved is not None else None
    if value is None:
        return math.inf
    edges = target.threshold if isinstance(target.threshold, list | tuple) else [target.threshold]
    numbers = [float(e) for e in edges if _number(e) is not None]
    return min((abs(value - e) for e in numbers), default=math.inf)


def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return float(x)
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
