"""Which evidence a claim row is about: one typed identity, formatted in one place.

An :class:`EvidenceRef` names a piece of evidence by its fields - kind, model, positional
scheme, training regime, seed, population size - and :attr:`EvidenceRef.evidence_id` is the
only formatter of the string form that test ids and reports show::

    EvidenceRef("paper", "gpt2", "ape").evidence_id                       # 'paper:gpt2'
    EvidenceRef("toy", "rope", "rope", regime="cpu", seed=3).evidence_id  # 'toy-cpu:rope-s3'
    EvidenceRef("toy", "rope", "rope", regime="cpu", population=8)        # 'toy-cpu:rope-n8'
    EvidenceRef("toy", ALL_MODELS, "unknown", regime="cpu")               # 'toy-cpu:all-models'

Nothing parses the string back: the fields travel with the row (``to_json`` / ``from_json``,
the ``evidence_ref`` of every claims.json row), so code that needs the kind, the seed or the
regime reads the field.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, get_args

from qkcore.errors import QKError

__all__ = ["ALL_MODELS", "SCHEME_FAMILY", "EvidenceRef", "Scheme", "SchemeFamily"]

Scheme = Literal["ape", "alibi", "rope", "rope-partial", "unknown"]
SchemeFamily = Literal["ape", "alibi", "rope", "unknown"]

#: Positional scheme -> the family that ``-k`` and the scheme markers select by (partial RoPE
#: is RoPE).
SCHEME_FAMILY: dict[str, SchemeFamily] = {
    "ape": "ape",
    "alibi": "alibi",
    "rope": "rope",
    "rope-partial": "rope",
    "unknown": "unknown",
}
#: The ``model`` of a set of pieces: every model of a kind at once (``weights:all-models``).
ALL_MODELS = "all-models"
# A kind becomes a pytest marker and the head of an id: a plain lower-case word.
_KIND = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class EvidenceRef:
    """One piece of evidence, by field.

    ``kind``: the evidence kind (``paper``, ``weights``, ``toy``, or one a suite registers).
    ``model``: the model's name; for a toy, its scheme's recipe (``rope``); ``all-models`` for
    a set; ``grid`` for the §10 grid. ``scheme``: its positional scheme (``unknown`` when it
    cannot be read, or for a set of mixed schemes). ``regime``: how it was trained, for toys
    (``cpu``, ``paper``, ``custom``). ``seed``: one training seed. ``population``: how many
    seeds a population row (or each arm of a grid) holds.
    """

    kind: str
    model: str
    scheme: str = "unknown"
    regime: str = ""
    seed: int | None = None
    population: int | None = None
    #: the declared mutation applied to a copy of this evidence (mutation runs only,
    #: :mod:`qkcore.evidence.mutations`): the id gains ``~<mutation>``
    mutation: str = ""

    def __post_init__(self) -> None:
        if not _KIND.match(self.kind):
            raise QKError(
                f"evidence kind must be a lower-case word (it becomes a pytest marker); "
                f"got {self.kind!r}."
            )
        if self.scheme not in SCHEME_FAMILY:
            raise QKError(
                f"positional scheme of {self.kind}:{self.model} must be one of "
                f"{tuple(get_args(Scheme))}; got {self.scheme!r}."
            )
        if self.seed is not None and self.population is not None:
            raise QKError(f"{self.kind}:{self.model} is a seed or a population, not both.")

    @property
    def evidence_id(self) -> str:
        """The string form (the one formatter):
        ``kind[-regime]:model[-s<seed>|-n<size>][~mutation]``."""
        head = f"{self.kind}-{self.regime}" if self.regime else self.kind
        tail = f"~{self.mutation}" if self.mutation else ""
        return f"{head}:{self.name}{tail}"

    @property
    def name(self) -> str:
        """The id's part after the kind, for labels: ``gpt2``, ``rope-s3``, ``rope-n8``."""
        if self.seed is not None:
            return f"{self.model}-s{self.seed}"
        if self.population is not None:
            return f"{self.model}-n{self.population}"
        return self.model

    @property
    def family(self) -> SchemeFamily:
        return SCHEME_FAMILY[self.scheme]

    @property
    def is_seed(self) -> bool:
        """One training seed of a recipe: judged only through its population."""
        return self.seed is not None

    @property
    def recipe(self) -> EvidenceRef:
        """What a seed was drawn from: the same ref with neither seed nor population."""
        return replace(self, seed=None, population=None)

    def population_of(self, n: int) -> EvidenceRef:
        """The population row that ``n`` seeds of this recipe make (``rope-s3`` -> ``rope-n8``)."""
        return replace(self, seed=None, population=n)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvidenceRef:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def __str__(self) -> str:
        return self.evidence_id
