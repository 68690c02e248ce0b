"""Premises and power checks that more than one claim test makes, written once so they read
the same."""

from __future__ import annotations

__all__ = [
    "history_columns",
    "null_rank_correlation",
    "rho_fisher_interval",
    "rho_power",
    "sum_of_frequency_terms",
]


def sum_of_frequency_terms(model, judge) -> bool:
    """Premise of every rebuild from {M_t, theta_t}: the scores are a sum of M_t terms, which
    per-token QK-norm (q / rms(q), k / rms(k) before rotation) breaks.

    Recorded as a premise (``end=False``) and returned - whether it held - without
    ending the test, so each caller decides what follows a failed premise."""
    return judge.premise(
        "per-token QK-norm (scores then are not a sum of M_t terms)",
        "present" if model.qk_norm is not None else "absent",
        "==",
        "absent",
        text=True,
        end=False,
    )


def history_columns(judge, history, needed) -> None:
    """Premise of every claim read on a checkpoint series: the series carries the columns the
    claim's statement reads (a released series may carry fewer; its sibling table's names are
    already read by :func:`qkcore.analysis.history.paper_history`). Ends the test as
    not-applicable, naming what is missing."""
    __tracebackhide__ = True
    missing = [c for c in needed if c not in history.columns]
    judge.premise(
        f"checkpoint columns this claim reads (missing: {', '.join(missing) or 'none'})",
        len(missing),
        "==",
        0,
    )


def rho_power(
    judge, n: int, level: float, *, guards: str, sides: int = 2, effect: float | None = None
) -> bool:
    """Power check of a Spearman test over ``n`` units at ``level``: power >= the
    vocabulary's ``min_power`` against ``effect`` (default: the vocabulary's ``effect_rho``,
    0.47 - Table 1's smallest FDR-significant |rho|, tex:238). ``guards``: "supported" for an
    absence claim ("no X predicts"), "refuted" for a presence claim. Below 4 units no rank
    test can see anything: power 0."""
    from qkcore.stats.power import spearman_power

    rho = judge.threshold("effect_rho") if effect is None else effect
    source = (
        "the vocabulary's effect_rho, Table 1's smallest FDR-significant |rho| (tex:238)"
        if effect is None
        else "the paper's own reported effect"
    )
    side = "one-sided" if sides == 1 else "two-sided"
    return judge.power(
        f"power to detect rho = {rho:g} ({side}, level {level:.3g}, n = {n})",
        spearman_power(rho, n, level, sides=sides) if n > 3 else 0.0,
        ">=",
        "min_power",
        effect=f"rho = {rho:g}, {source}",
        guards=guards,
        n=n,
    )


def rho_fisher_interval(rho: float, n: int) -> tuple[float, float]:
    """95% interval of a Spearman rho over ``n`` units: Fisher z with Fieller's variance
    1.06 / (n - 3)."""
    import math

    half = 1.959964 * math.sqrt(1.06 / (n - 3))
    return math.tanh(math.atanh(rho) - half), math.tanh(math.atanh(rho) + half)


def null_rank_correlation(
    judge, name: str, rho: float, n: int, family: int = 1, controls: int = 0
) -> None:
    """A Spearman rho said to be null, one of ``family`` such: its 90% Fisher-z interval over
    ``n`` heads (:class:`pytest_claims.stats.uncertainty.FisherZ`, the scale of the paper's own
    p-values) against the vocabulary's ``null_rho`` margin, Bonferroni-widened over the family
    (docs/judging.md, "Absence is an equivalence"). Where even a true null could not land
    inside the margin at this n, the row is undecidable and says the n that would decide."""
    from pytest_claims.stats.uncertainty import FisherZ

    judge.absence(name, rho, FisherZ(n, controls), "null_rho", family=family, n=n)
