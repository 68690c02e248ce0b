"""Mutations of the paper's released tables: proof that a check can react to its evidence.

A check that gives the same outcome whatever its evidence holds decides nothing. Each claim
declares, in the catalogue, the changes of its deciding evidence that must move it; the
mutation run (``--claims-mutations``) judges every such claim again on a *copy* of the tables
with the change applied, and ``mutations.md`` says which checks reacted.

A mutation is one operation on one column of one kind of table::

    [[S8h.mutations]]
    name = "dInd-is-prev"             # slug: the row's evidence id gains "~dInd-is-prev"
    op = "copy"                       # see OPERATIONS
    column = "dInd_rope"
    source = "prev"                   # copy: the column becomes this one
    table = "head_full"               # head_full (default) | ckpt_analysis | ckpt_summary |
                                      # kernel_curves | run (a trainB run)
    match = "llama-3-8b"              # glob on the table's model (a run: its file stem)
    where = "prev > 0.5"              # rows changed (a pandas query), default every row
    expect = "the rho reaches 1: refuted"   # what it must do to the claim, in words

Operations (``column`` always; a cell holding a JSON list is changed element-wise):

=================  ===========================================================================
``shuffle``        permute the column (seeded ``seed``, default 0); ``within``: inside groups
``copy``           the column becomes ``source``
``negate``         ``-x``
``scale``          ``x * by``
``shift``          ``x + by``
``set``            ``value``
``swap_extremes``  exchange the values at the column's largest and smallest row
``keep``           keep the first ``rows`` rows after a seeded shuffle (smaller n, same design)
=================  ===========================================================================

Example::

    spec = parse_mutation({"name": "no-prev", "op": "shuffle", "column": "prev"})
    data = MutatedPaperData.of(PaperData.discover("paper-data"), (spec,))
    data.head_table("gpt2")["prev"]          # GPT-2's prev scores, permuted across heads
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from qkcore.errors import QKError
from qkcore.evidence.paper_data import PaperData, TrainingRun

if TYPE_CHECKING:
    import pandas as pd

# numpy and pandas are imported where a mutation is applied: the catalogue parses its
# mutations when the plugin reads it, and the plugin loads light.

__all__ = [
    "OPERATIONS",
    "TABLES",
    "MutatedPaperData",
    "Mutation",
    "MutationError",
    "apply_mutation",
    "mutated_piece",
    "parse_mutation",
]

OPERATIONS = ("shuffle", "copy", "negate", "scale", "shift", "set", "swap_extremes", "keep")
TABLES = ("head_full", "ckpt_analysis", "ckpt_summary", "kernel_curves", "run")
#: keys each operation needs besides name, op, column
_NEEDS = {"copy": {"source"}, "scale": {"by"}, "shift": {"by"}, "set": {"value"}, "keep": {"rows"}}
_KEYS = {"name", "op", "column", "table", "match", "where", "expect", "seed", "within"}
_KEYS |= {"source", "by", "value", "rows"}
_SLUG = re.compile(r"^[a-z0-9][a-z0-9.-]*$")


class MutationError(QKError):
    """A mutation the catalogue declares wrongly, or one its table cannot take."""


@dataclass(frozen=True)
class Mutation:
    """One declared change of a released table (module docstring)."""

    name: str
    op: str
    column: str
    table: str = "head_full"
    match: str = "*"
    where: str = ""
    expect: str = ""
    seed: int = 0
    within: str = ""
    source: str = ""
    by: float = 0.0
    value: Any = None
    rows: int = 0

    def applies_to(self, table: str, key: str) -> bool:
        return table == self.table and fnmatch.fnmatchcase(key, self.match)

    def describe(self) -> str:
        """``shuffle prev (head_full of *)``: the operation in a few words."""
        arg = {
            "copy": f" := {self.source}",
            "scale": f" x {self.by:g}",
            "shift": f" + {self.by:g}",
            "set": f" := {self.value!r}",
            "keep": f" ({self.rows} rows)",
            "shuffle": f" within {self.within}" if self.within else "",
        }.get(self.op, "")
        where = f" where {self.where}" if self.where else ""
        return f"{self.op} {self.column}{arg}{where} ({self.table} of {self.match})"


def parse_mutation(spec: Mapping[str, Any]) -> Mutation:
    """A catalogue entry as a :class:`Mutation`; a wrong one is a :class:`MutationError`
    naming the key to fix."""
    if not isinstance(spec, Mapping):
        raise MutationError(f"a mutation is a table of keys; got {spec!r}")
    unknown = set(spec) - _KEYS
    if unknown:
        raise MutationError(f"unknown keys {sorted(unknown)}; the keys are {sorted(_KEYS)}")
    for key in ("name", "op", "column"):
        if not isinstance(spec.get(key), str) or not spec[key]:
            raise MutationError(f"needs {key} (text): {dict(spec)}")
    if not _SLUG.match(spec["name"]):
        raise MutationError(f"name {spec['name']!r} must be a slug: lower case, digits, '-', '.'")
    op = spec["op"]
    if op not in OPERATIONS:
        raise MutationError(f"{spec['name']}: op {op!r} is not one of {OPERATIONS}")
    missing = _NEEDS.get(op, set()) - set(spec)
    if missing:
        raise MutationError(f"{spec['name']}: op {op!r} needs {sorted(missing)}")
    table = spec.get("table", "head_full")
    if table not in TABLES:
        raise MutationError(f"{spec['name']}: table {table!r} is not one of {TABLES}")
    if op == "keep" and not (isinstance(spec["rows"], int) and spec["rows"] > 0):
        raise MutationError(f"{spec['name']}: keep needs rows, a positive integer")
    if op in ("scale", "shift") and not isinstance(spec["by"], int | float):
        raise MutationError(f"{spec['name']}: {op} needs by, a number")
    return Mutation(**{**spec, "by": float(spec.get("by", 0.0))})


def _selected(frame: pd.DataFrame, mutation: Mutation) -> pd.Index:
    if not mutation.where:
        return frame.index
    try:
        return frame.query(mutation.where).index
    except Exception as exc:  # pandas raises many types for a bad expression
        raise MutationError(
            f"{mutation.name}: where {mutation.where!r} cannot be evaluated on this table "
            f"({type(exc).__name__}: {exc})"
        ) from None


def _elementwise(series: pd.Series, change: Any) -> pd.Series:
    """``change`` on a numeric column, or on every JSON list a text column holds."""
    import numpy as np
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(series) and series.map(lambda v: isinstance(v, str)).all():
        return series.map(
            lambda v: json.dumps(
                np.asarray(change(np.asarray(json.loads(v), dtype=float))).tolist()
            )
        )
    return change(series.astype(float))


def apply_mutation(frame: pd.DataFrame, mutation: Mutation) -> pd.DataFrame:
    """A copy of ``frame`` with ``mutation`` applied (the input is never changed)."""
    import numpy as np

    out = frame.copy()
    column = mutation.column
    if column not in out.columns:
        raise MutationError(
            f"{mutation.name}: the table has no column {column!r} (columns: "
            f"{', '.join(map(str, out.columns))})"
        )
    rows = _selected(out, mutation)
    rng = np.random.default_rng(mutation.seed)
    op = mutation.op
    if op == "keep":
        keep = np.sort(rng.permutation(len(out))[: mutation.rows])
        return out.iloc[keep].reset_index(drop=True)
    if op == "shuffle":
        if mutation.within:
            for _, group in out.loc[rows].groupby(mutation.within):
                out.loc[group.index, column] = rng.permutation(group[column].to_numpy())
        else:
            out.loc[rows, column] = rng.permutation(out.loc[rows, column].to_numpy())
        return out
    if op == "swap_extremes":
        values = out.loc[rows, column].astype(float)
        high, low = values.idxmax(), values.idxmin()
        out.loc[[high, low], column] = [values[low], values[high]]
        return out
    if op == "copy":
        if mutation.source not in out.columns:
            raise MutationError(f"{mutation.name}: the table has no column {mutation.source!r}")
        out.loc[rows, column] = out.loc[rows, mutation.source]
        return out
    change = {
        "negate": lambda x: -x,
        "scale": lambda x: x * mutation.by,
        "shift": lambda x: x + mutation.by,
        "set": lambda x: x * 0 + mutation.value,
    }[op]
    out.loc[rows, column] = _elementwise(out.loc[rows, column], change)
    return out


@dataclass(frozen=True)
class MutatedPaperData(PaperData):
    """The released tables as read, with mutations applied to every table they match: a copy
    in memory, never the files."""

    mutations: tuple[Mutation, ...] = ()

    @classmethod
    def of(cls, data: PaperData, mutations: tuple[Mutation, ...]) -> MutatedPaperData:
        return cls(data.root, tuple(mutations))

    def _mutated(self, frame: pd.DataFrame, table: str, key: str) -> pd.DataFrame:
        for mutation in self.mutations:
            if mutation.applies_to(table, key):
                frame = apply_mutation(frame, mutation)
        return frame

    def head_table(self, model: str) -> pd.DataFrame:
        return self._mutated(super().head_table(model), "head_full", model)

    def checkpoint_table(self, model: str, kind: str = "ckpt_analysis") -> pd.DataFrame:
        return self._mutated(super().checkpoint_table(model, kind), kind, model)

    def kernel_curves(self, model: str) -> pd.DataFrame:
        return self._mutated(super().kernel_curves(model), "kernel_curves", model)

    def run_table(self, run: TrainingRun) -> pd.DataFrame:
        return self._mutated(super().run_table(run), "run", run.path.stem)


def mutated_piece(piece: Any, mutation: Mutation) -> Any:
    """A released piece (one model's tables, or the set of every model) on a copy of its tables
    with ``mutation`` applied, its ref marked ``~name``; ``None`` for a piece the mutation does
    not touch (another model's tables) or one that is not released data (toys, weights)."""
    from qkcore.evidence.pieces import PaperEvidence, PaperEvidenceSet

    if not isinstance(piece, PaperEvidence | PaperEvidenceSet):
        return None
    if isinstance(piece, PaperEvidence) and (
        mutation.table == "run" or not fnmatch.fnmatchcase(piece.ref.model, mutation.match)
    ):
        return None
    data = MutatedPaperData.of(piece.data, (*getattr(piece.data, "mutations", ()), mutation))
    return replace(piece, ref=replace(piece.ref, mutation=mutation.name), data=data)
