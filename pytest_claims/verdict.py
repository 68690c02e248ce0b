"""A row's verdict: the one type, and every order and name the plugin shows it by.

Decided verdicts say something about the claim (``undecidable``: that no evidence of this
size could support it - inconclusive by construction, not by its values); the other two say
the evidence was absent (``skipped``) or the test broke (``error``)::

    at_least_as_bad("refuted", "supported")  # True: a later phase can only make a row worse
    SHORT["not-applicable"]                  # 'n/a', in the findings tables
    TERMINAL["refuted"]                      # ('R', 'REFUTED', {'red': True}) in pytest's progress

Every module that lists, orders or shows verdicts reads them here.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["DECIDED", "REPORT_ORDER", "SHORT", "TERMINAL", "VERDICTS", "Verdict", "at_least_as_bad"]

#: A row's verdict: decided (the first four), or no verdict (skipped, error).
Verdict = Literal[
    "supported", "refuted", "inconclusive", "undecidable", "not-applicable", "skipped", "error"
]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
#: Verdicts that say something about the claim (the others say the evidence was absent or broke).
DECIDED: tuple[Verdict, ...] = VERDICTS[:5]
#: The reports' order: what needs a reader first (refuted, broken, undecided) before the rest.
REPORT_ORDER: tuple[Verdict, ...] = (
    "refuted",
    "error",
    "inconclusive",
    "undecidable",
    "not-applicable",
    "supported",
    "skipped",
)
#: A verdict's word in the reports' narrow columns.
SHORT: dict[Verdict, str] = {v: v for v in VERDICTS} | {"not-applicable": "n/a"}
#: How a decided row shows as it comes in: its letter in the progress line, and its word and
#: colour under -v. Only the display changes: pytest's categories (passed, xfailed, failed)
#: and so its counts and exit code stay as they were.
TERMINAL: dict[Verdict, tuple[str, str, dict[str, bool]]] = {
    "supported": (".", "SUPPORTED", {"green": True}),
    "refuted": ("R", "REFUTED", {"red": True}),
    "inconclusive": ("?", "INCONCLUSIVE", {"yellow": True}),
    "undecidable": ("u", "UNDECIDABLE", {"yellow": True}),
    "not-applicable": ("n", "NOT-APPLICABLE", {"yellow": True}),
}
# How bad a verdict is, for folding a test's phases: error beats refuted beats supported.
_RANK: dict[Verdict | None, int] = {
    None: 0,
    "skipped": 1,
    "supported": 2,
    "not-applicable": 3,
    "undecidable": 4,
    "inconclusive": 5,
    "refuted": 6,
    "error": 7,
}


def at_least_as_bad(verdict: Verdict | None, than: Verdict | None) -> bool:
    """Whether ``verdict`` is at least as bad as ``than`` (a later phase's then replaces it)."""
    return _RANK[verdict] >= _RANK[than]
