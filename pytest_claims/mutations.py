"""Mutations of a claim's evidence tables: proof that a verdict is about its own evidence.

A check that gives the same outcome whatever its evidence holds decides nothing. Each claim
declares, in its catalogue, the changes of its deciding evidence that must move it; the
mutation run (``--claims-mutations``) judges every such claim again on a *copy* of the tables
with the change applied, and ``mutations.md`` says which checks reacted. The grammar and the
changes of a table (a pandas DataFrame, imported where a change is applied) are here; a piece of
evidence that can be mutated says which tables it has (its ``mutated`` method).

A mutation is one operation on one column of one kind of table::

    [[S8h.mutations]]
    name = "dInd-is-prev"             # slug: the row's evidence id gains "~dInd-is-prev"
    op = "copy"                       # see OPERATIONS
    column = "dInd_rope"
    source = "prev"                   # copy: the column becomes this one
    table = "main"                    # which of the piece's tables (default: its main one)
    match = "llama-3-8b"              # glob on the piece's model (or a table's own key)
    where = "prev > 0.5"              # rows changed (a pandas query), default every row
    expect = "the rho reaches 1: refuted"   # what it must do to the claim, in words

Operations (``column`` always; a cell holding a JSON list is changed element-wise; ``top =
"prev:5"`` selects the 5 rows with the largest ``prev``, alone or with ``where``; a lever's
``cells`` limits it to some cells of a parametrized test, by a glob on the parameter id):

=================  ===========================================================================
``shuffle``        permute the column (seeded ``seed``, default 0); ``within``: inside groups
``copy``           the column becomes ``source``
``negate``         ``-x``
``scale``          ``x * by``
``shift``          ``x + by``
``set``            ``value``
``swap_extremes``  exchange the values at the column's largest and smallest row
``keep``           keep the first ``rows`` rows after a seeded shuffle (smaller n, same design)
``cross``          a *lever*: ``via`` (``shift`` by a, or ``scale`` by 1 + a) of the column on
                   the selected rows, by an amount a the harness finds (its module
                   :mod:`pytest_claims.harness`): the smallest that carries the
                   statement ``check`` (a name glob) across its
                   threshold - the sentence's own boundary, since the threshold is the
                   catalogue's - and the largest that does not
=================  ===========================================================================

Generated for every row of mutable evidence, never declared: the negative controls
(``CONTROLS``) - the rows of every table permuted as its file holds them (``FILE_LAYOUT``: a
piece's loader may then put them in its own order, which a claim may rely on), its columns
permuted, the columns of the main table the claim does not declare shuffled (a piece keeps the
columns that name its rows), every non-integer float scaled by 1 + 1e-9 - which must move no
verdict.

Every declared mutation has a class (:func:`mutation_class`): ``meaningful`` - a realistic
change of the deciding evidence (a shuffle within a model's table, a subsample, a change of
selected rows, a lever); ``blunt`` - a whole-column change (a model's ranks reversed, a whole
column shifted or scaled by less than 10x); ``trivial`` - a column copied or set wholesale, or
scaled by 10x or more.

Example::

    spec = parse_mutation({"name": "no-prev", "op": "shuffle", "column": "prev"})
    apply_mutation(table, spec)["prev"]      # the prev scores, permuted across rows
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_claims.errors import ClaimsError

if TYPE_CHECKING:
    import pandas as pd

# numpy and pandas are imported where a mutation is applied: the catalogue parses its
# mutations when the plugin reads it, and the plugin loads light.

__all__ = [
    "CLASSES",
    "CONTROLS",
    "FILE_LAYOUT",
    "HARNESS_OPS",
    "MAIN_TABLE",
    "OPERATIONS",
    "Mutation",
    "MutationError",
    "apply_mutation",
    "controls",
    "mutation_class",
    "parse_mutation",
]

OPERATIONS = (
    "shuffle",
    "copy",
    "negate",
    "scale",
    "shift",
    "set",
    "swap_extremes",
    "keep",
    "cross",
)
#: the negative controls, generated for every released row (module docstring)
CONTROLS = ("permute_rows", "permute_columns", "shuffle_unread", "rescale")
#: controls that change a file's layout, applied before a loader orders its table
FILE_LAYOUT = ("permute_rows", "permute_columns")
#: operations the harness runs itself (a lever's search): the row's piece is the original,
#: marked with the mutation's name
HARNESS_OPS = ("cross",)
#: the table a mutation changes unless it names another: a piece's main table
MAIN_TABLE = "main"
CLASSES = ("meaningful", "blunt", "trivial")
#: keys each operation needs besides name, op, column
_NEEDS = {
    "copy": {"source"},
    "scale": {"by"},
    "shift": {"by"},
    "set": {"value"},
    "keep": {"rows"},
    "cross": {"check"},
}
_KEYS = {"name", "op", "column", "table", "match", "where", "expect", "seed", "within"}
_KEYS |= {"source", "by", "value", "rows", "check", "via", "top", "cells"}
_SLUG = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_TOP = re.compile(r"^(?P<column>[^:]+):(?P<k>[1-9][0-9]*)$")


class MutationError(ClaimsError):
    """A mutation the catalogue declares wrongly, or one its table cannot take."""


@dataclass(frozen=True)
class Mutation:
    """One declared change of a released table (module docstring)."""

    name: str
    op: str
    column: str
    table: str = MAIN_TABLE
    match: str = "*"
    where: str = ""
    expect: str = ""
    seed: int = 0
    within: str = ""
    source: str = ""
    by: float = 0.0
    value: Any = None
    rows: int = 0
    #: cross: the statement (a name glob) whose threshold the lever carries its value across
    check: str = ""
    #: cross: how the lever moves the column (shift or scale)
    via: str = "shift"
    #: rows selected as the k largest of a column, "column:k" (with ``where``: both hold)
    top: str = ""
    #: shuffle_unread: the columns the claim reads, left as they are
    reads: tuple[str, ...] = ()
    #: cross: the cells of a parametrized test the lever is for (a glob on the parameter id,
    #: e.g. "*dir_frac~*"); the others are not probed
    cells: str = ""

    def applies_to(self, table: str, key: str) -> bool:
        return self.table in (table, "*") and fnmatch.fnmatchcase(key, self.match)

    def at(self, amount: float) -> Mutation:
        """A lever (``cross``) moved by ``amount``: the concrete mutation it stands for - a
        shift by ``amount``, or a scale by ``1 + amount`` (0 leaves the table as released)."""
        by = float(amount) if self.via == "shift" else 1.0 + float(amount)
        return replace(self, op=self.via, by=by, check="", expect="")

    def describe(self) -> str:
        """``shuffle prev (head_full of *)``: the operation in a few words."""
        arg = {
            "copy": f" := {self.source}",
            "scale": f" x {self.by:g}",
            "shift": f" + {self.by:g}",
            "set": f" := {self.value!r}",
            "keep": f" ({self.rows} rows)",
            "shuffle": f" within {self.within}" if self.within else "",
            "cross": f" by {self.via} until '{self.check}' crosses its threshold",
            "shuffle_unread": f" (all but {', '.join(self.reads)})" if self.reads else "",
            "rescale": f" x (1 + {self.by:g})",
        }.get(self.op, "")
        where = f" where {self.where}" if self.where else ""
        if self.top:
            where += f" (the top {self.top.split(':')[1]} by {self.top.split(':')[0]})"
        return f"{self.op} {self.column}{arg}{where} ({self.table} of {self.match})"


def mutation_class(mutation: Mutation) -> str:
    """``meaningful``, ``blunt`` or ``trivial`` (module docstring)."""
    subset = bool(mutation.where or mutation.top)
    op = mutation.op
    if op in ("keep", "shuffle", "cross", "swap_extremes") or (subset and op != "scale"):
        return "meaningful"
    if op == "scale":
        big = abs(mutation.by) >= 10 or (mutation.by != 0 and abs(mutation.by) <= 0.1)
        if big or mutation.by == 0:
            return "trivial"
        return "meaningful" if subset else "blunt"
    if op in ("negate", "shift"):
        return "blunt"
    return "trivial"  # copy, set: a column replaced wholesale


def controls(reads: tuple[str, ...] | None, identity: bool, seed: int = 0) -> tuple[Mutation, ...]:
    """The negative controls for one row (module docstring): ``reads`` - the columns the claim
    declares it reads (None: it declares none, so no column can be called unread); ``identity``
    - the claim asserts an exact identity, which a 1e-9 scaling may rightly break."""
    out = [
        Mutation("rows-permuted", "permute_rows", "*", table="*", seed=seed),
        Mutation("columns-permuted", "permute_columns", "*", table="*", seed=seed),
    ]
    if reads is not None:
        out.append(
            Mutation("unread-shuffled", "shuffle_unread", "*", table=MAIN_TABLE, reads=reads)
        )
    if not identity:
        out.append(Mutation("scaled-1e-9", "rescale", "*", table="*", by=1e-9))
    return tuple(out)


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
    table = spec.get("table", MAIN_TABLE)
    if not (isinstance(table, str) and _SLUG.match(table.replace("_", "-"))):
        raise MutationError(f"{spec['name']}: table {table!r} must name one of the piece's tables")
    _check_arguments(spec["name"], op, spec)
    return Mutation(**{**spec, "by": float(spec.get("by", 0.0))})


def _check_arguments(name: str, op: str, spec: Mapping[str, Any]) -> None:
    """The arguments an operation takes, each of its type (one message per mistake)."""
    if op == "keep" and not (isinstance(spec["rows"], int) and spec["rows"] > 0):
        raise MutationError(f"{name}: keep needs rows, a positive integer")
    if op in ("scale", "shift") and not isinstance(spec["by"], int | float):
        raise MutationError(f"{name}: {op} needs by, a number")
    if op == "cross" and spec.get("via", "shift") not in ("shift", "scale"):
        raise MutationError(f"{name}: a lever moves by 'shift' or 'scale', not {spec['via']!r}")
    if op == "cross" and "by" in spec:
        raise MutationError(f"{name}: a lever's amount is found, not given: drop 'by'")
    if "top" in spec and not (isinstance(spec["top"], str) and _TOP.match(spec["top"])):
        raise MutationError(
            f"{name}: top is 'column:k' (the k rows with the largest column), not {spec['top']!r}"
        )


def _selected(frame: pd.DataFrame, mutation: Mutation) -> pd.Index:
    rows = frame.index
    if mutation.where:
        try:
            rows = frame.query(mutation.where).index
        except Exception as exc:  # pandas raises many types for a bad expression
            raise MutationError(
                f"{mutation.name}: where {mutation.where!r} cannot be evaluated on this table "
                f"({type(exc).__name__}: {exc})"
            ) from None
    if mutation.top:
        match = _TOP.match(mutation.top)
        assert match is not None  # parse_mutation checked it
        column, k = match["column"], int(match["k"])
        if column not in frame.columns:
            raise MutationError(f"{mutation.name}: top names no column of this table: {column!r}")
        # the same stable order as qkcore.stats.population.top_k_heads: ties keep table order
        ranked = frame.loc[rows].iloc[_stable_descending(frame.loc[rows, column])]
        rows = ranked.index[:k]
    return rows


def _stable_descending(values: pd.Series) -> Any:
    """Positions of ``values`` from largest to smallest, ties in their table order."""
    import numpy as np

    return np.argsort(-values.astype(float).to_numpy(), kind="stable")


def _control(frame: pd.DataFrame, mutation: Mutation) -> pd.DataFrame:
    """A negative control (``CONTROLS``) applied to a copy of ``frame``."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(mutation.seed)
    op = mutation.op
    if op == "permute_rows":
        return frame.iloc[rng.permutation(len(frame))]
    if op == "permute_columns":
        return frame[[frame.columns[i] for i in rng.permutation(len(frame.columns))]]
    out = frame.copy()
    if op == "shuffle_unread":
        for column in out.columns:
            if column not in mutation.reads:
                out[column] = rng.permutation(out[column].to_numpy())
        return out
    for column in out.columns:  # rescale: non-integer floats only (indices stay indices)
        values = out[column]
        if pd.api.types.is_float_dtype(values):
            finite = values[np.isfinite(values)]
            if len(finite) and not np.all(finite == np.round(finite)):
                out[column] = values * (1 + mutation.by)
    return out


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

    if mutation.op in CONTROLS:
        return _control(frame, mutation)
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
