"""What an evidence kind declares: its options, the pieces it offers a claim, its sets, its label.

A kind is data plus two functions, with no pytest in it: the claims plugin turns each
:class:`Offer` into a test parameter (id, marks, skip) and each :class:`Option` into a
command-line flag (:mod:`pytest_claims.evidence`). The framework ships no kind: a suite
registers its own through the ``pytest_claims_evidence_kinds`` hook (this repository's paper,
weights and toy kinds are ``qkcore.evidence.params.BUILTIN_KINDS``, registered by its plugin).

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

from pytest_claims.errors import ClaimsError
from pytest_claims.refs import EvidenceRef

__all__ = ["FLAG_PREFIX", "EvidenceKind", "EvidenceRequest", "Offer", "Option", "Tolerance"]


#: Every flag of the plugin and of the kinds it serves starts with this, so none can collide
#: with another plugin's or a conftest's (``--claims-paper-data``, ``--claims-toy-seeds``).
FLAG_PREFIX = "--claims-"


@dataclass(frozen=True)
class Option:
    """A command-line flag a kind owns: ``flag`` (``--claims-...``) and its argparse keywords.

    ``dest`` is argparse's (``--claims-toy-seeds`` -> ``claims_toy_seeds``); ``name`` is the
    key the kind reads it by in the options object its offers receive (the dest
    without ``claims_``: ``toy_seeds``, or ``settings.const_scale`` for a suite's kind).
    """

    flag: str
    keywords: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not self.flag.startswith(FLAG_PREFIX) or len(self.flag) == len(FLAG_PREFIX):
            raise ClaimsError(
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
            raise ClaimsError(
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
    table lacks, an opt-in run not asked for). ``marks``: the markers it carries besides its
    kind's (``-m <mark>``; None: its kind's ``marks`` of its ref).
    """

    ref: EvidenceRef
    piece: Any = None
    skip: str = ""
    marks: tuple[str, ...] | None = None


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
    rounding (``None``: a kind of seeds, judged by counts). ``marks``: the markers a piece
    carries besides its kind's, from its ref (a suite registers them as pytest markers).
    ``primary``: the source's prints are about it; ``rerun``: the arguments re-running a row
    needs. ``settings``: builds the object its offers receive from the values of every kind's
    flags, by argparse ``dest`` (checked once: raise :class:`~pytest_claims.errors.ClaimsError`
    naming a bad value; kinds with the same ``settings`` share one object); default, the
    values as attributes (``settings.claims_const_scale``... by dest: ``const_scale``). Build
    tasks are the pieces' own (``piece.build_tasks()``).
    """

    name: str
    label: str
    offers: Callable[[Any, EvidenceRequest], list[Offer]]
    sets: Mapping[str, Callable[[Any], Offer]] = field(default_factory=dict)
    options: tuple[Option, ...] = ()
    id_format: str = ""
    tolerance: Tolerance | None = None
    marks: Callable[[EvidenceRef], tuple[str, ...]] = lambda ref: ()
    #: whether the source's prints are about this evidence (a failed print on another kind -
    #: an analogue: other models, toys - is not an erratum of the source)
    primary: bool = True
    #: the arguments a command re-running one of its rows needs (``--claims-data DIR``)
    rerun: str = ""
    settings: Callable[[Mapping[str, Any]], Any] | None = None

    def __post_init__(self) -> None:
        EvidenceRef(self.name, "-")  # the same rule as a ref's kind: one error, named
