"""Premises that more than one claim test checks, written once so they read the same."""

from __future__ import annotations

__all__ = ["sum_of_frequency_terms"]


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
