"""What an evidence kind declares: its options, the pieces it offers a claim, its sets, its label.

A kind is data plus two functions, with no pytest in it: the claims plugin turns each
:class:`Offer` into a test parameter (id, marks, skip) and each :class:`Option` into a
command-line flag (:mod:`qkcore.pytest_plugin.evidence`). The built-in kinds - ``paper``,
``weights``, ``toy`` - are :data:`qkcore.evidence.params.BUILTIN_KINDS`; a suite adds its own
through the plugin's ``pytest_claims_evidence_kinds`` hook.

Example (a kind serving one table)::

    def offers(options: EvidenceOptions, request: EvidenceRequest) -> list[Offer]:
        ref = EvidenceRef("mine", "my-model", "rope")
        return [Offer(ref, MyPiece(ref))]          # MyPiece: head_table(), build_tasks()

    MINE = EvidenceKind("mine", "my tables", offers, id_format="mine:<model>")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from qkcore.errors import QKError
from qkcore.evidence.refs import SCHEME_FAMILY, EvidenceRef

__all__ = ["FLAG_PREFIX", "EvidenceKind", "EvidenceRequest", "Offer", "Option", "Tolerance"]


#: Every flag of the plugin and of the kinds it serves starts with this, so none can collide
#: with another plugin's or a conftest's (``--claims-paper-data``, ``--claims-toy-seeds``).
FLAG_PREFIX = "--claims-"


@dataclass(frozen=True)
class Option:
    """A command-line flag a kind owns: ``flag`` (``--claims-...``) and its argparse keywords.

    ``dest`` is argparse's (``--claims-toy-seeds`` -> ``claims_toy_seeds``); ``name`` is the
    key the kind reads it by in :class:`~qkcore.evidence.options.EvidenceOptions` (the dest
    without ``claims_``: ``toy_seeds``, or ``options.extra["const_scale"]`` for a suite's kind).
    """

    flag: str
    keywords: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not self.flag.startswith(FLAG_PREFIX) or len(self.flag) == len(FLAG_PREFIX):
            raise QKError(
                f"evidence flag {self.flag!r} must start with {FLAG_PREFIX!r} so it cannot "
                f"collide with another plugin's: name it {FLAG_PREFIX}{self.flag.lstrip('-')}"
            )

    @property
    def dest(self) -> str:
        return str(self.keywords.get("dest", self.flag.lstrip("-").replace("-", "_")))

    @property
    def name(self) -> str:
        return self.dest.removeprefix("claims_")


@dataclass(frozen=True)
class EvidenceRequest:
    """What a claim asks of a kind (the keywords of ``evidence`` / ``@claim``).

    ``schemes``: only pieces with one of these positional schemes; ``models``: only these
    models; ``columns``: the per-head table columns the claim reads (a piece without one is
    skipped, named); ``checkpoints``: models with a released checkpoint series instead.
    """

    schemes: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    columns: tuple[str, ...] = ()
    checkpoints: bool = False

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> EvidenceRequest:
        unknown = sorted(set(keywords) - set(cls.__dataclass_fields__))
        if unknown:
            raise QKError(
                f"evidence keywords {unknown} are not known; use {sorted(cls.__dataclass_fields__)}"
            )

        def names(key: str) -> tuple[str, ...] | None:
            value = keywords.get(key)
            if value is None:
                return None
            return (value,) if isinstance(value, str) else tuple(value)

        return cls(
            schemes=names("schemes"),
            models=names("models"),
            columns=names("columns") or (),
            checkpoints=bool(keywords.get("checkpoints", False)),
        )

    @property
    def declares_columns(self) -> bool:
        return bool(self.columns)


@dataclass(frozen=True)
class Offer:
    """One parameter a kind offers a claim test.

    ``piece`` is what the test receives (``None`` when nothing can be served); ``skip``, when
    set, is the exact reason the parameter is skipped (weights not on this machine, a column the
    table lacks, an opt-in run not asked for). ``families`` are the scheme families it carries
    (its markers: ``-m rope``, ``-k rope``); a single piece's is its own.
    """

    ref: EvidenceRef
    piece: Any = None
    skip: str = ""
    families: tuple[str, ...] | None = None

    @property
    def marked_families(self) -> tuple[str, ...]:
        found = (self.ref.family,) if self.families is None else self.families
        return tuple(sorted(f for f in set(found) if f != "unknown"))


@dataclass(frozen=True)
class Tolerance:
    """``|new - old| <= rtol * max(1, |old|, |new|)``: how far a deterministic value may move
    from rounding alone - relative for large values, absolute below 1 (most checked values are
    fractions, percentiles, correlations and p-values)."""

    rtol: float
    derivation: str

    def bound(self, old: float, new: float) -> float:
        return self.rtol * max(1.0, abs(old), abs(new))


@dataclass(frozen=True)
class EvidenceKind:
    """An evidence kind: everything the plugin needs to parametrize, build and report it.

    ``name``: the word in ``evidence("paper", ...)``, the pytest marker and the id's head.
    ``label``: its column in the reports. ``offers``: the pieces for one claim's request.
    ``sets``: ``evidence_set`` names -> the one parameter holding every piece (``toy`` also
    serves ``toy-grid``). ``options``: its command-line flags. ``id_format``: its ids, for
    help texts. ``tolerance``: for deterministic evidence, how far a value may move from
    rounding (``None``: a kind of seeds, judged by counts). Build tasks are the pieces' own
    (``piece.build_tasks()``).
    """

    name: str
    label: str
    offers: Callable[[Any, EvidenceRequest], list[Offer]]
    sets: Mapping[str, Callable[[Any], Offer]] = field(default_factory=dict)
    options: tuple[Option, ...] = ()
    id_format: str = ""
    tolerance: Tolerance | None = None

    def __post_init__(self) -> None:
        EvidenceRef(self.name, "-")  # the same rule as a ref's kind: one error, named


def set_families(refs: tuple[EvidenceRef, ...] | list[EvidenceRef]) -> tuple[str, ...]:
    """The scheme families a set of pieces carries (its markers)."""
    return tuple(sorted({SCHEME_FAMILY[r.scheme] for r in refs}))
