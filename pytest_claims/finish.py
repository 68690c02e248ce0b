"""The end of a claims session: populations, drift, reports, comparison, baseline, exit code.

Runs once, in the controller, after every row has arrived (``pytest_sessionfinish``); what it
returns is what the terminal summary shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_claims.baseline import BaselineChanges, write_baseline
from pytest_claims.catalogue import catalogue_for
from pytest_claims.compare import write_comparison
from pytest_claims.drift import Drift, compare_with_baseline, fails_the_run, judged_rows
from pytest_claims.evidence import kinds_of
from pytest_claims.populations import add_populations
from pytest_claims.reports import (
    ReportSetup,
    mark_run,
    publish_latest,
    run_report_dir,
    write_reports,
)
from pytest_claims.reports.mutations import (
    MutationSummary,
    summarize_mutations,
    write_mutations,
)
from pytest_claims.row import ClaimResult
from pytest_claims.session import SessionState

__all__ = ["Finished", "finish_session", "report_setup", "stopped_early"]


@dataclass
class Finished:
    """What the session wrote and found, for the terminal summary."""

    paths: list[Path] = field(default_factory=list)
    #: reports/latest when it was replaced; why not, when it was someone else's; None otherwise
    latest: Path | str | None = None
    drift: Drift = field(default_factory=Drift)
    baseline_changes: BaselineChanges | None = None
    #: why the run ended before every selected test ran ("" when it ran them all)
    stopped: str = ""
    #: the suite's notes on the evidence judged, ``(label, text)``: the reports' first lines
    notes: list[tuple[str, str]] = field(default_factory=list)
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
    """Populations, drift, the reports (``--claims-report-dir`` or ``reports/runs/<stamp>``,
    ``reports/latest``, the baseline when asked), and turn the run red on a change.

    A run that stopped early still writes its report, marked partial, but never becomes
    ``reports/latest`` and never writes the baseline: neither may describe a run that did
    not happen."""
    config = session.config
    state.results.update(add_populations(state.results))
    setup = report_setup(config, list(state.results.values()))
    drift = compare_with_baseline(state, setup.tolerances)
    stopped = stopped_early(session, exitstatus)
    state_summary = drift.to_json() | {"baseline": state.baseline_label, "stopped": stopped}
    report_dir = run_report_dir(config, state)
    results = list(state.results.values())
    paths = write_reports(results, report_dir, state_summary, setup)
    if state.report_dir is None:  # reports/runs/<stamp>: a folder the plugin made
        mark_run(report_dir)
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
        notes=setup.notes,
        mutation_problems=problems,
    )


def report_setup(config: pytest.Config, results: list[ClaimResult]) -> ReportSetup:
    """What the suite contributes to its reports (:class:`ReportSetup`), from its registry of
    kinds and its hooks."""
    registry = kinds_of(config)
    hook = config.hook
    sections: dict[str, str] = {}
    for found in hook.pytest_claims_report_sections():
        sections.update(found)
    environment: dict[str, str] = {}
    for found in hook.pytest_claims_environment():
        environment.update(found)
    return ReportSetup(
        columns=registry.columns(),
        notes=[
            note
            for found in hook.pytest_claims_report_notes(config=config, results=results)
            for note in found
        ],
        sections=sections,
        primary=tuple(kind.name for kind in registry if kind.primary),
        environment=environment,
        tolerances=registry.tolerances(),
        rerun={kind.name: kind.rerun for kind in registry if kind.rerun},
    )


def _mutation_summary(state: SessionState, results: list[ClaimResult]) -> MutationSummary:
    """Mutated rows against their originals, with each claim's catalogue entry."""
    entries = {}
    for result in results:
        if result.claim and result.claim not in entries:
            test_file = state.rootdir / result.nodeid.split("::")[0]
            entries[result.claim] = catalogue_for(test_file).entry(result.claim)
    return summarize_mutations(results, entries)
