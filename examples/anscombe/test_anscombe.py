"""Anscombe's quartet, claim by claim: what its four data sets share, and what they do not.

Each test runs once per data set (``test_...[csv:I]`` ... ``[csv:IV]``); a claim holds for the
quartet when it is supported on all four.
"""

from __future__ import annotations

from statistics import linear_regression, mean, median

from pytest_claims import Claim, claim


@claim("A1", evidence=("csv",))
def test_the_sets_share_the_mean_of_y(evidence, judge: Claim):
    """The mean of y is the printed 7.50 at its two decimals: |mean - 7.5| <= 0.005 (same2)."""
    average = mean(evidence.y)
    judge.statement("|mean of y - 7.5|", abs(average - 7.5), "<=", "same2")
    judge.printed("mean of y", average)


@claim("A2", evidence=("csv",))
def test_the_sets_share_the_fitted_line(evidence, judge: Claim):
    """The least-squares slope is the printed 0.500 at three decimals: |slope - 0.5| <= 0.0005
    (same3); the intercept is 3.00 at two: |intercept - 3| <= 0.005 (same2)."""
    fit = linear_regression(evidence.x, evidence.y)
    judge.plot("the four data sets", evidence.ref.model, list(evidence.x), list(evidence.y))
    judge.statement("|slope - 0.5|", abs(fit.slope - 0.5), "<=", "same3")
    judge.statement("|intercept - 3|", abs(fit.intercept - 3.0), "<=", "same2")
    judge.printed("slope", fit.slope)


@claim("A3", evidence=("csv",))
def test_the_sets_share_the_median_of_y(evidence, judge: Claim):
    """The median of y is the printed 7.58 at two decimals: |median - 7.58| <= 0.005 (same2)."""
    middle = median(evidence.y)
    judge.statement("|median of y - 7.58|", abs(middle - 7.58), "<=", "same2")
    judge.printed("median of y", middle)
