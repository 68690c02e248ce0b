"""The registry of evidence kinds: the plugin's one extension point for evidence.

The framework ships no kind: it registers every kind a suite returns from the
``pytest_claims_evidence_kinds`` hook; parametrization, tolerances and the reports' columns
all loop over it, so a kind is listed once.

Example (a suite's conftest or plugin)::

    from pytest_claims import add_kind_options

    def pytest_addoption(parser):
        add_kind_options(parser, MINE)     # the flags MINE declares

    def pytest_claims_evidence_kinds():
        return [MINE]                      # claims can now say evidence=("mine",)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pytest_claims.checks import CheckError
from pytest_claims.kinds import EvidenceKind, Offer, Tolerance

__all__ = ["SIMULATION", "KindRegistry", "columns_of"]

#: The report column of a row with no evidence parameter (a simulation on random operators).
SIMULATION = ("simulation", "other")


class KindRegistry:
    """Evidence kinds by name, in registration order (the reports' column order)."""

    def __init__(self, kinds: Iterable[EvidenceKind] = ()) -> None:
        self._kinds: dict[str, EvidenceKind] = {}
        for kind in kinds:
            self.register(kind)

    def register(self, kind: EvidenceKind) -> None:
        if not isinstance(kind, EvidenceKind):
            raise CheckError(
                f"an evidence kind must be a pytest_claims.kinds.EvidenceKind; got {kind!r}"
            )
        if kind.name in self._kinds and self._kinds[kind.name] is not kind:
            raise CheckError(
                f"evidence kind {kind.name!r} is registered twice; give the second another name"
            )
        self._kinds[kind.name] = kind

    def __iter__(self) -> Iterator[EvidenceKind]:
        return iter(self._kinds.values())

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def kind(self, name: str) -> EvidenceKind:
        if name not in self._kinds:
            raise CheckError(
                f"evidence kind {name!r} is not one of {sorted(self._kinds)}; a suite adds kinds "
                "through the pytest_claims_evidence_kinds hook (pytest_claims.registry)"
            )
        return self._kinds[name]

    def set_builder(self, name: str) -> Callable[[Any], Offer]:
        """The builder of ``evidence_set(name)`` (``toy-grid`` is the ``toy`` kind's)."""
        return self.set_kind(name).sets[name]

    def set_kind(self, name: str) -> EvidenceKind:
        """The kind that serves ``evidence_set(name)``."""
        for kind in self._kinds.values():
            if name in kind.sets:
                return kind
        names = sorted(s for kind in self._kinds.values() for s in kind.sets)
        raise CheckError(f"evidence set {name!r} is not one of {names}")

    def columns(self) -> list[tuple[str, str]]:
        """``(kind, report label)`` of every kind, then the rows without evidence."""
        return [(kind.name, kind.label) for kind in self._kinds.values()] + [SIMULATION]

    def tolerances(self) -> dict[str, Tolerance]:
        """Rounding tolerance of every deterministic kind."""
        return {k.name: k.tolerance for k in self._kinds.values() if k.tolerance is not None}


def columns_of(kinds: Iterable[str]) -> list[tuple[str, str]]:
    """Report columns for rows read outside a session (a compared claims.json): each kind
    its own label, in the order first seen, then the rows without evidence."""
    seen = list(dict.fromkeys(k for k in kinds if k != SIMULATION[0]))
    return [(kind, kind) for kind in seen] + [SIMULATION]
