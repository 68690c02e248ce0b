"""The framework's own flags (``--claims-*``) and ini values (``claims_*``): baseline, reports,
drift, comparison, mutation runs. (An evidence kind declares its own flags.)"""

from __future__ import annotations

import pytest

__all__ = ["add_claims_options"]


def add_claims_options(parser: pytest.Parser) -> None:
    parser.addini(
        "claims_catalogue",
        default="catalogue.toml",
        help="the file name of a claims catalogue, beside the claim tests or above them",
    )
    parser.addini(
        "claims_order",
        type="args",
        default=[],
        help="claim ID prefixes in the order the reports list them (others follow, A-Z)",
    )
    group = parser.getgroup("claims", "claims report and verdict baseline")
    group.addoption(
        "--claims-baseline",
        default="reports/baseline.json",
        help="expected verdict per test id (relative to rootdir); 'none' disables the check. "
        "Default: reports/baseline.json",
    )
    group.addoption(
        "--claims-update-baseline",
        action="store_true",
        help="rewrite the baseline with this run's verdicts (merged into the existing file)",
    )
    group.addoption(
        "--claims-report-dir",
        default=None,
        help="where this run's claims.json, claims.md and claims.html go (relative to rootdir). "
        "Default: reports/runs/<UTC time>-<pid>/; a run over the whole default selection also "
        "becomes reports/latest",
    )
    group.addoption(
        "--claims-drift",
        choices=("verdicts", "numbers"),
        default="verdicts",
        help="what fails the run against the baseline: verdicts (default; a population of "
        "seeds only when its counts differ beyond chance) or numbers (also any check value of "
        "a deterministic kind that moved beyond the kind's rounding tolerance)",
    )
    group.addoption(
        "--claims-compare",
        default=None,
        metavar="OTHER/claims.json",
        help="compare this run with another run's claims.json row by row and write "
        "comparison.md beside this run's report (the same as qk-claims-compare OTHER NEW)",
    )
    group.addoption(
        "--claims-mutations",
        action="store_true",
        help="the mutation run: every released row of a claim also runs on copies of the "
        "tables - each declared mutation applied (id '~name'; a lever's amount searched), and "
        "the negative controls - and mutations.md beside the report says which checks "
        "reacted, where each verdict moved and what would decide the undecidable rows; a "
        "problem (a check reacting to none, a lever or a control out of place) fails the run",
    )
    group.addoption(
        "--claims-controls",
        choices=("together", "each"),
        default="together",
        help="a mutation run's negative controls: together (default: one copy per row with all "
        "of them) or each (one copy per control - to name the one that moved a verdict)",
    )
    group.addoption(
        "--claims-report-latest",
        action="store_true",
        help="make this run reports/latest even when it selects only part of the suite",
    )
