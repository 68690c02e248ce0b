"""The end of a claims session: populations, drift, reports, comparison, baseline, exit code.

Runs once, in the controller, after every row has arrived (``pytest_sessionfinish``); what it
returns is what the terminal summary shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from qkcore.pytest_plugin.baseline import BaselineChanges, write_baseline
from qkcore.pytest_plugin.catalogue import catalogue_for
from qkcore.pytest_plugin.compare import write_comparison
from qkcore.pytest_plugin.drift import Drift, compare_with_baseline, fails_the_run, judged_rows
from qkcore.pytest_plugin.evidence import kinds_of
from qkcore.pytest_plugin.populations import add_populations
from qkcore.pytest_plugin.reports import publish_latest, run_report_dir, write_reports
from qkcore.pytest_plugin.reports.mutations import (
    MutationSummary,
    summarize_mutations,
    write_mutations,
)
from qkcore.pytest_plugin.row import ClaimResult
from qkcore.pytest_plugin.session import SessionState

__all__ = ["Finished", "finish_session", "stopped_early", "toy_regimes"]


@dataclass
class Finished:
    """What the session wrote and found, for the terminal summary."""

    paths: list[Path] = field(default_factory=list)
    latest: Path | None = None
    drift: Drift = field(default_factory=Drift)
    baseline_changes: BaselineChanges | None = None
    #: why the run ended before every selected test ran ("" when it ran them all)
    stopped: str = ""
    #: the toy regimes judged, each with how it departs from the paper (``toy_regimes``)
    regimes: dict[str, str] = field(default_factory=dict)
    #: a mutation run's problems (mutations.md), named in the terminal
    mutation_problems: list[str] = field(default_factory=list)


def stopped_early(session: pytest.Session, exitstatus: int) -> str:
    """Why the run ended before every selected test ran ("" when it ran them all): an
    interrupt (Ctrl-C, SIGTERM), an internal error, or -x / --maxfail."""
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        return "interrupted"
    if exitstatus == pytest.ExitCode.INTERNAL_ERROR:
        return "stopped by an internal error"
    reason = session.shouldfail or session.shouldstop
    return f"stopped early ({reason})" if reason else ""


def finish_session(session: pytest.Session, state: SessionState, exitstatus: int = 0) -> Finished:
    """Add population rows, compare with the baseline, write the reports (and a comparison,
    ``reports/latest``, the baseline when asked), and turn the run red on a change.

    A run that stopped early still writes its report, marked partial, but never becomes
    ``reports/latest`` and never writes the baseline: neither may describe a run that did
    not happen."""
    config = session.config
    registry = kinds_of(config)
    state.results.update(add_populations(state.results))
    drift = compare_with_baseline(state, registry.tolerances())
    stopped = stopped_early(session, exitstatus)
    state_summary = drift.to_json() | {"baseline": state.baseline_label, "stopped": stopped}
    state_summary["evidence_notes"] = evidence_notes(config, state.results.values())
    report_dir = run_report_dir(config, state)
    results = list(state.results.values())
    regimes = toy_regimes(config, results)
    paths = write_reports(results, report_dir, state_summary, regimes, registry.columns())
    other = config.getoption("--claims-compare", None)
    if other:
        paths.append(write_comparison(Path(other), paths[0], report_dir / "comparison.md"))
    problems: list[str] = []
    if config.getoption("--claims-mutations", False):
        summary = _mutation_summary(state, results)
        paths.append(write_mutations(summary, report_dir / "mutations.md"))
        problems = summary.problems
        if problems and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    latest = publish_latest(report_dir, state) if state.full_selection and not stopped else None
    changes = None
    if state.update_baseline and state.baseline_path is not None and not stopped:
        changes = write_baseline(state.baseline_path, state.baseline, judged_rows(state))
    elif fails_the_run(state, drift) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return Finished(
        paths,
        latest,
        drift,
        changes,
        stopped=stopped,
        regimes=regimes,
        mutation_problems=problems,
    )


def _mutation_summary(state: SessionState, results: list[ClaimResult]) -> MutationSummary:
    """Mutated rows against their originals, with each claim's catalogue entry."""
    entries = {}
    for result in results:
        if result.claim and result.claim not in entries:
            test_file = state.rootdir / result.nodeid.split("::")[0]
            entries[result.claim] = catalogue_for(test_file).entry(result.claim)
    return summarize_mutations(results, entries)


def evidence_notes(config: pytest.Config, results: Iterable[ClaimResult]) -> list[str]:
    """What the report's first lines say of the evidence: whether the paper's tables judged are
    the pinned release (every file verified against its manifest) or which files differ - and
    that a mutation run judges mutated copies of them."""
    judged = [r for r in results if r.ref is not None and r.ref.kind == "paper"]
    if not judged:
        return []
    from qkcore.evidence.fetch import describe_release
    from qkcore.evidence.params import paper_data
    from qkcore.pytest_plugin.evidence import evidence_options

    data, why = paper_data(evidence_options(config).paper_data)
    notes = [describe_release(data.root) if data is not None else f"the paper's tables: {why}"]
    if config.getoption("--claims-mutations", False):
        notes.append(
            "a mutation run: besides each released row, rows judged on mutated copies of the "
            "tables (their ids end in ~<mutation>), by design not the paper's data"
        )
    return notes


def toy_regimes(config: pytest.Config, results: Iterable[ClaimResult]) -> dict[str, str]:
    """``{"toy-cpu": <how the regime departs from the paper>}`` when toys of it were judged."""
    used = {r.ref.regime for r in results if r.ref is not None and r.ref.kind == "toy"}
    if not used:  # reading a regime imports the toy model (torch): only where toys were judged
        return {}
    from qkcore.models.toy.regimes import toy_regime

    regime = toy_regime(config.getoption("--claims-toy-regime", default="cpu"))
    return {regime.evidence_prefix: regime.describe()} if regime.name in used else {}
