"""The controller's side of a claims session: results gathered from xdist workers.

Every phase of a test sends its result as JSON in ``report.user_properties`` (the one field
xdist serialises for us), so ``-n 2`` and ``-n 0`` produce the same results; the controller
merges phases (:func:`~qkcore.pytest_plugin.verdicts.merge_phase`).
"""

from __future__ import annotations

import json

import pytest

from qkcore.pytest_plugin.result import ClaimResult
from qkcore.pytest_plugin.state import SessionState
from qkcore.pytest_plugin.verdicts import merge_phase

__all__ = ["PROPERTY_KEY", "ClaimsSession"]

PROPERTY_KEY = "qk_claim"

#: How a decided row shows as it comes in: its letter in the progress line, and its word and
#: colour under -v. Only the display changes: pytest's categories (passed, xfailed, failed)
#: and so its counts and exit code stay as they were.
_SHOWN = {
    "supported": (".", "SUPPORTED", {"green": True}),
    "refuted": ("R", "REFUTED", {"red": True}),
    "inconclusive": ("?", "INCONCLUSIVE", {"yellow": True}),
    "not-applicable": ("n", "NOT-APPLICABLE", {"yellow": True}),
}


def _category(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    return report.outcome


class ClaimsSession:
    """Controller-side hooks, bound to one session's state (no module globals)."""

    def __init__(self, state: SessionState) -> None:
        self.state = state

    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        """A claim row's verdict as it is decided: ``R`` refuted, ``?`` inconclusive, ``n``
        not-applicable (``-v``: the word)."""
        if report.when != "call" or self.state.is_worker:
            return None
        for key, value in report.user_properties:
            if key == PROPERTY_KEY and isinstance(value, str):
                shown = _SHOWN.get(json.loads(value).get("verdict"))
                if shown is not None:
                    letter, word, markup = shown
                    return _category(report), letter, (word, markup)
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.state.is_worker:
            return
        for key, value in report.user_properties:
            if key == PROPERTY_KEY and isinstance(value, str):
                merge_phase(self.state.results, ClaimResult.from_json(json.loads(value)))
