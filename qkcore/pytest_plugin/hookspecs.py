"""The hooks the claims plugin offers a suite (registered with ``pytest_addhooks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from qkcore.evidence.kinds import EvidenceKind

__all__ = ["pytest_claims_evidence_kinds"]


@pytest.hookspec
def pytest_claims_evidence_kinds() -> list[EvidenceKind]:
    """Evidence kinds this suite adds to the built-in ``paper``, ``weights`` and ``toy``.

    Each is a :class:`qkcore.evidence.kinds.EvidenceKind`; add its flags in
    ``pytest_addoption`` with :func:`qkcore.pytest_plugin.add_kind_options`.
    """
    raise NotImplementedError  # a spec: implementations return their kinds
