"""Premises that more than one claim test checks, written once so they read the same."""

from __future__ import annotations

__all__ = ["history_columns", "sum_of_frequency_terms"]


def sum_of_frequency_terms(model, claim) -> bool:
    """Premise of every rebuild from {M_t, theta_t}: the scores are a sum of M_t terms, which
    per-token QK-norm (q / rms(q), k / rms(k) before rotation) breaks.

    Recorded as a premise (through ``claim.record``) and returned - whether it held - without
    ending the test, so each caller decides what follows a failed premise."""
    return claim.record.check(
        "per-token QK-norm (scores then are not a sum of M_t terms)",
        "present" if model.qk_norm is not None else "absent",
        "==",
        "absent",
        kind="premise",
    )


def history_columns(claim, history, needed) -> None:
    """Premise of every claim read on a checkpoint series: the series carries the columns the
    claim's statement reads (a released series may carry fewer; its sibling table's names are
    already read by :func:`qkcore.analysis.history.paper_history`). Ends the test as
    not-applicable, naming what is missing."""
    __tracebackhide__ = True
    missing = [c for c in needed if c not in history.columns]
    claim.premise(
        f"checkpoint columns this claim reads (missing: {', '.join(missing) or 'none'})",
        len(missing),
        "==",
        0,
    )
