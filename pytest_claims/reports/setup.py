"""What a suite contributes to its reports, gathered once per session from its hooks.

The framework's reports know no paper: their columns are the evidence kinds the suite
registered, their first lines the notes it gives (which data was judged, how trained pieces
were made), the sections whose failed prints are listed apart (an article's numbers, a
companion paper's), the packages whose versions a run records, and the tolerances of its
deterministic kinds::

    ReportSetup(columns=[("csv", "the tables"), ("simulation", "other")],
                notes=[("Which evidence was judged", "tables at data/, as released")])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_claims.kinds import Tolerance

__all__ = ["ReportSetup"]


@dataclass(frozen=True)
class ReportSetup:
    """A suite's part of its reports (module docstring).

    ``columns``: ``(evidence kind, label)`` of the summary tables. ``notes``: ``(label, text)``
    lines every report opens with. ``sections``: catalogue section -> the title its failed
    prints are listed under, apart from the source's own slips. ``primary``: the evidence
    kinds the source's prints are about (a failed print on another kind - an analogue - is not
    an erratum); rows without evidence (simulations) always are. ``environment``: name ->
    version, recorded in claims.json. ``tolerances``: deterministic kinds' rounding bounds.
    ``rerun``: evidence kind -> the arguments a command re-running one of its rows needs.
    """

    columns: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    sections: dict[str, str] = field(default_factory=dict)
    primary: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    tolerances: dict[str, Tolerance] = field(default_factory=dict)
    rerun: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "notes": [list(n) for n in self.notes],
            "tolerances": {
                kind: {"rtol": t.rtol, "derivation": t.derivation}
                for kind, t in self.tolerances.items()
            },
        }
