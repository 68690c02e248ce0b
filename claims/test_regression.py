"""The regression check: a published per-head table recomputed from the same model's weights.

Where a model has both ``paper:`` and ``weights:`` evidence (the paper's seven, when their
weights are in the local Hugging Face cache), every shared column must agree within
:data:`qkcore.analysis.headtable.COMPARE_TOLERANCE`; a change means the model, the library or the
paper's pipeline moved - the "a model update changed a verdict" alarm.
"""

from __future__ import annotations

import pytest

from pytest_claims import Claim, claim
from qkcore.analysis.tablecompare import compare_tables


@claim("REG", evidence=("weights",))
def test_recomputed_table_matches_published(evidence, judge: Claim, paper_data):
    """Source: the released per-head tables (paper-data, ``<model>_head_full.parquet``), the
    data behind every per-head number the paper prints for that model.

    Reading: the published table and the one recomputed here from the same model's weights,
    heads matched on (layer, head), agree column by column wherever both carry a column.

    Thresholds: statement, per shared column - max |published - recomputed| <= the column's
    tolerance in COMPARE_TOLERANCE (deterministic spectral columns 1e-3; behaviour 0.05; null
    means 0.01), fixed in qkcore before any comparison.

    Premises: at least one column both tables carry, and every published head matched by a
    recomputed one (otherwise the tables are not of the same model and cannot be compared).
    A model without a published table cannot bear on this (skipped). Power: not applicable
    (deterministic recomputation, no test)."""
    data, reason = paper_data
    name = evidence.ref.name.split("@")[0]
    if data is None or name not in data.models:
        pytest.skip(
            f"{evidence.ref.evidence_id}: no published table to compare with "
            f"({reason or 'the paper did not release one for this model'})"
        )
    published = data.head_table(name)
    result = compare_tables(published, evidence.head_table())
    # end=False: the statements below are recorded even after a failed premise
    judge.premise("columns both tables carry", len(result), ">=", 1, end=False)
    matched = int(result["n"].min()) if len(result) else 0
    judge.premise(
        "published heads matched on (layer, head)",
        matched,
        "==",
        len(published),
        end=False,
    )
    for row in result.itertuples():
        judge.statement(
            f"{row.column}: max |published - recomputed|",
            row.max_abs_diff,
            "<=",
            row.tolerance,
            n=row.n,
            note=f"Spearman {row.spearman:.4f}",
        )
