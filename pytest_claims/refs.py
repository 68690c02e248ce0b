"""Which evidence a claim row is about: one typed identity, formatted in one place.

An :class:`EvidenceRef` names a piece of evidence by its fields - kind, model, a variant the
kind may use (this repository's: a positional scheme), the regime it was made in, a seed or a
population size - and :attr:`EvidenceRef.evidence_id` is the only formatter of the string form
that test ids and reports show::

    EvidenceRef("csv", "table-a").evidence_id                             # 'csv:table-a'
    EvidenceRef("toy", "rope", "rope", regime="cpu", seed=3).evidence_id  # 'toy-cpu:rope-s3'
    EvidenceRef("toy", "rope", "rope", regime="cpu", population=8)        # 'toy-cpu:rope-n8'
    EvidenceRef("toy", ALL_MODELS, regime="cpu")                          # 'toy-cpu:all-models'

Nothing parses the string back: the fields travel with the row (``to_json`` / ``from_json``,
the ``evidence_ref`` of every claims.json row), so code that needs the kind, the seed or the
regime reads the field.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from pytest_claims.errors import ClaimsError

__all__ = ["ALL_MODELS", "EvidenceRef"]

#: The ``model`` of a set of pieces: every model of a kind at once (``weights:all-models``).
ALL_MODELS = "all-models"
# A kind becomes a pytest marker and the head of an id: a plain lower-case word.
_KIND = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class EvidenceRef:
    """One piece of evidence, by field.

    ``kind``: the evidence kind a suite registered (this repository's ``paper``, ``weights``,
    ``toy``). ``model``: the model's or table's name; for trained pieces, their recipe;
    ``all-models`` for a set. ``scheme``: a variant of it the kind names (this repository's
    positional scheme; ``unknown`` when none). ``regime``: how it was made (its id's head gains
    ``-<regime>``). ``seed``: one training seed (judged only through its population).
    ``population``: how many seeds a population row holds.
    """

    kind: str
    model: str
    scheme: str = "unknown"
    regime: str = ""
    seed: int | None = None
    population: int | None = None
    #: the declared mutation applied to a copy of this evidence (mutation runs only,
    #: :mod:`pytest_claims.mutations`): the id gains ``~<mutation>``
    mutation: str = ""

    def __post_init__(self) -> None:
        if not _KIND.match(self.kind):
            raise ClaimsError(
                f"evidence kind must be a lower-case word (it becomes a pytest marker); "
                f"got {self.kind!r}."
            )
        if self.seed is not None and self.population is not None:
            raise ClaimsError(f"{self.kind}:{self.model} is a seed or a population, not both.")

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
