"""The paper's positional schemes and the families ``-m``/``-k`` select them by.

A piece of this suite's evidence names its positional scheme in its ref's ``scheme`` (a field
the claims framework leaves to the kinds); partial RoPE is RoPE's family::

    family("rope-partial")                 # 'rope'
    scheme_marks(EvidenceRef("paper", "gpt2", "ape"))    # ('ape',): the marker its rows carry
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pytest_claims.refs import EvidenceRef
from qkcore.errors import QKError

__all__ = [
    "FAMILIES",
    "SCHEME_FAMILY",
    "Scheme",
    "SchemeFamily",
    "family",
    "scheme_marks",
    "set_families",
]

Scheme = Literal["ape", "alibi", "rope", "rope-partial", "unknown"]
SchemeFamily = Literal["ape", "alibi", "rope", "unknown"]
#: Positional scheme -> the family that ``-k`` and the scheme markers select by.
SCHEME_FAMILY: dict[str, SchemeFamily] = {
    "ape": "ape",
    "alibi": "alibi",
    "rope": "rope",
    "rope-partial": "rope",
    "unknown": "unknown",
}
#: the families that are markers (``unknown`` is not)
FAMILIES: tuple[str, ...] = ("ape", "alibi", "rope")


def family(scheme: str) -> SchemeFamily:
    """The family of a positional scheme (a scheme this suite does not know is an error)."""
    if scheme not in SCHEME_FAMILY:
        raise QKError(f"positional scheme must be one of {tuple(SCHEME_FAMILY)}; got {scheme!r}.")
    return SCHEME_FAMILY[scheme]


def scheme_marks(ref: EvidenceRef) -> tuple[str, ...]:
    """The scheme markers a piece's rows carry (none for an unknown scheme)."""
    found = family(ref.scheme)
    return () if found == "unknown" else (found,)


def set_families(refs: Iterable[EvidenceRef]) -> tuple[str, ...]:
    """The scheme markers a set of pieces carries: every member's family."""
    return tuple(sorted({family(r.scheme) for r in refs} - {"unknown"}))
