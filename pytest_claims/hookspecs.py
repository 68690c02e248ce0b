"""The hooks the claims framework offers a suite (registered with ``pytest_addhooks``).

The framework knows no evidence and no paper: a suite registers its evidence kinds and, where
it has them, its report notes, the sections of its catalogue whose
printed numbers are listed apart, and the packages whose versions a run records. Each is
optional; a suite with one kind and no other hook gets plain reports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_claims.kinds import EvidenceKind
    from pytest_claims.row import ClaimResult

__all__ = [
    "pytest_claims_environment",
    "pytest_claims_evidence_kinds",
    "pytest_claims_report_notes",
    "pytest_claims_report_sections",
]


@pytest.hookspec
def pytest_claims_evidence_kinds() -> list[EvidenceKind]:
    """The evidence kinds this suite's claims take (``evidence=("<kind>", ...)``).

    Each is a :class:`pytest_claims.kinds.EvidenceKind`; add its flags in
    ``pytest_addoption`` with :func:`pytest_claims.add_kind_options`.
    """
    raise NotImplementedError  # a spec: implementations return their kinds


@pytest.hookspec
def pytest_claims_report_notes(
    config: pytest.Config, results: list[ClaimResult]
) -> list[tuple[str, str]]:
    """``(label, text)`` lines every report opens with: which data was judged (a release
    verified, or the files that differ), how trained evidence was made."""
    raise NotImplementedError


@pytest.hookspec
def pytest_claims_report_sections() -> dict[str, str]:
    """Catalogue section -> title: the failed prints of its claims are listed apart from the
    source's own slips (an article's numbers, a companion paper's)."""
    raise NotImplementedError


@pytest.hookspec
def pytest_claims_environment() -> dict[str, str]:
    """Name -> version: what claims.json records besides Python and the platform."""
    raise NotImplementedError
