"""Evidence references and the pytest parametrization that names them.

A claim test is parametrized over evidence; the id says which: ``paper:<model>`` (the paper's
released tables), ``weights:<model>`` (recomputed from weights), ``toy-<regime>:<scheme>-s<seed>``
(trained here in a named regime, :mod:`qkcore.models.toy.regimes`). Each parameter also
carries marks for its kind and positional scheme, so ``pytest -k rope`` selects every RoPE
piece of evidence (``paper:pythia-410m`` included) and ``-k paper`` every published-data check.

Example::

    @pytest.mark.parametrize("ref", evidence_params([EvidenceRef("paper", "gpt2", "ape")]))
    def test_something(ref): ...          # id: test_something[paper:gpt2], marks: paper, ape
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from qkcore.errors import QKError

__all__ = ["EVIDENCE_KINDS", "SCHEME_FAMILIES", "SCHEME_FAMILY", "EvidenceRef", "evidence_params"]

#: Positional scheme tag -> the family that ``-k`` selects by (partial RoPE is RoPE).
SCHEME_FAMILY = {
    "ape": "ape",
    "alibi": "alibi",
    "rope": "rope",
    "rope-partial": "rope",
    "unknown": "unknown",
}
#: The kinds of evidence (each with its parametrization in :mod:`qkcore.evidence.params`).
EVIDENCE_KINDS = ("paper", "weights", "toy")
#: The families ``-k`` selects by (every known scheme belongs to one).
SCHEME_FAMILIES = tuple(sorted(set(SCHEME_FAMILY.values()) - {"unknown"}))


@dataclass(frozen=True)
class EvidenceRef:
    """Which evidence: kind, name (model, or ``<scheme>-s<seed>`` for toys), positional scheme
    and, for toys, the training regime (part of the id: ``toy-cpu:rope-s0``)."""

    kind: str
    name: str
    scheme: str
    regime: str = ""

    def __post_init__(self) -> None:
        if self.kind not in EVIDENCE_KINDS:
            raise QKError(f"evidence kind must be one of {EVIDENCE_KINDS}; got {self.kind!r}.")
        if self.scheme not in SCHEME_FAMILY:
            raise QKError(
                f"positional scheme of {self.kind}:{self.name} must be one of "
                f"{tuple(SCHEME_FAMILY)}; got {self.scheme!r}."
            )

    @property
    def evidence_id(self) -> str:
        kind = f"{self.kind}-{self.regime}" if self.regime else self.kind
        return f"{kind}:{self.name}"

    @property
    def family(self) -> str:
        return SCHEME_FAMILY[self.scheme]

    def __str__(self) -> str:
        return self.evidence_id


def evidence_params(refs: Iterable[EvidenceRef]) -> list:
    """``pytest.param`` per reference, id ``kind:name``, marked with its kind and scheme family."""
    params = []
    for ref in refs:
        marks = [getattr(pytest.mark, ref.kind)]
        if ref.family != "unknown":
            marks.append(getattr(pytest.mark, ref.family))
        params.append(pytest.param(ref, id=ref.evidence_id, marks=marks))
    return params
