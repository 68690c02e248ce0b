"""Mutations of the paper's released tables: the copy of :class:`PaperData` a mutation run reads.

The grammar and the change of one table are the claims framework's
(:mod:`pytest_claims.mutations`); here they meet the release: which tables a mutation names
(``main`` is the per-head table, ``head_full``; ``ckpt_analysis``, ``ckpt_summary``,
``kernel_curves``, ``run``), the order the loader puts each in (a file-layout control applies
before it), and the columns that name a head table's rows (``layer``, ``head``: never shuffled
as unread).

Example::

    spec = parse_mutation({"name": "no-prev", "op": "shuffle", "column": "prev"})
    data = MutatedPaperData.of(PaperData.discover("paper-data"), (spec,))
    data.head_table("gpt2")["prev"]          # GPT-2's prev scores, permuted across heads
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pytest_claims.mutations import (
    FILE_LAYOUT,
    MAIN_TABLE,
    Mutation,
    MutationError,
    apply_mutation,
)
from qkcore.evidence.paper_data import PaperData

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TABLES", "MutatedPaperData", "check_tables", "mutated_tables"]

#: the released tables a mutation may name (``main``: the per-head table)
TABLES = ("head_full", "ckpt_analysis", "ckpt_summary", "kernel_curves", "run")
#: the columns that name a head table's rows: never shuffled as "unread"
_ROW_KEYS = {"head_full": ("layer", "head")}


def _table(mutation: Mutation) -> str:
    """The released table a mutation names (``main`` is the per-head table)."""
    table = "head_full" if mutation.table == MAIN_TABLE else mutation.table
    if table not in TABLES and table != "*":
        raise MutationError(
            f"{mutation.name}: table {mutation.table!r} is not one of the release's: "
            f"{(MAIN_TABLE, *TABLES)}"
        )
    return table


@dataclass(frozen=True)
class MutatedPaperData(PaperData):
    """The released tables as read, with mutations applied to every table they match: a copy
    in memory, never the files."""

    mutations: tuple[Mutation, ...] = ()

    @classmethod
    def of(cls, data: PaperData, mutations: tuple[Mutation, ...]) -> MutatedPaperData:
        return cls(data.root, tuple(mutations))

    def _as_read(self, kind: str, key: str, frame: pd.DataFrame) -> pd.DataFrame:
        # a change of the file's own layout (row and column order) happens before the loader
        # puts the table in its kind's order: what a claim may rely on is that order
        return self._mutated(frame, kind, key, file_layout=True)

    def _as_loaded(self, kind: str, key: str, frame: pd.DataFrame) -> pd.DataFrame:
        return self._mutated(frame, kind, key, file_layout=False)

    def _mutated(
        self, frame: pd.DataFrame, table: str, key: str, *, file_layout: bool
    ) -> pd.DataFrame:
        for mutation in self.mutations:
            named = replace(mutation, table=_table(mutation))
            if named.applies_to(table, key) and (mutation.op in FILE_LAYOUT) == file_layout:
                keys = _ROW_KEYS.get(table, ()) if mutation.op == "shuffle_unread" else ()
                frame = apply_mutation(frame, replace(named, reads=(*named.reads, *keys)))
        return frame


def check_tables(mutations: tuple[Mutation, ...]) -> None:
    """Every mutation names a table of the release: otherwise one error, at collection."""
    for mutation in mutations:
        _table(mutation)


def mutated_tables(data: PaperData, mutations: tuple[Mutation, ...]) -> MutatedPaperData:
    """``data`` (released, or already a mutated copy) with ``mutations`` added."""
    check_tables(mutations)
    return MutatedPaperData.of(data, (*getattr(data, "mutations", ()), *mutations))
