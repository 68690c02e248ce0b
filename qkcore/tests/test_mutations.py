"""Mutations of released tables, and the mutation run that proves each check can fail.

The operations are checked as data transformations (what changes, what never does: the input
frame, the other columns, the rows outside ``where``); the run is checked from the outside, as
a suite with a catalogue that declares mutations: a live check reacts, a dead one fails the run
unless the catalogue says why.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_claims.mutations import MutationError, apply_mutation, parse_mutation
from qkcore.evidence.mutations import MutatedPaperData, check_tables
from qkcore.evidence.paper_data import PaperData
from qkcore.tests.test_author import run_suite

pytest_plugins = ["pytester"]

values = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=40)


def _frame(x: list[float]) -> pd.DataFrame:
    n = len(x)
    return pd.DataFrame(
        {"layer": np.arange(n) // 4, "head": np.arange(n) % 4, "x": x, "y": np.arange(n, 0, -1.0)}
    )


@given(values, st.integers(0, 2**16))
def test_shuffle_permutes_the_column_and_touches_nothing_else(x, seed):
    frame = _frame(x)
    before = frame.copy()
    out = apply_mutation(
        frame, parse_mutation({"name": "s", "op": "shuffle", "column": "x", "seed": seed})
    )
    pd.testing.assert_frame_equal(frame, before)  # the input is never changed
    assert sorted(out["x"]) == sorted(x)
    pd.testing.assert_frame_equal(out.drop(columns="x"), before.drop(columns="x"))


@given(values)
def test_shuffle_within_groups_keeps_each_group_multiset(x):
    frame = _frame(x)
    spec = {"name": "w", "op": "shuffle", "column": "x", "within": "layer", "seed": 3}
    out = apply_mutation(frame, parse_mutation(spec))
    for layer, group in frame.groupby("layer"):
        assert sorted(out.loc[out["layer"] == layer, "x"]) == sorted(group["x"])


@given(values)
def test_swap_extremes_exchanges_the_largest_and_smallest(x):
    out = apply_mutation(
        _frame(x), parse_mutation({"name": "e", "op": "swap_extremes", "column": "x"})
    )
    hi, lo = int(np.argmax(x)), int(np.argmin(x))
    assert out["x"].iloc[hi] == x[lo] and out["x"].iloc[lo] == x[hi]
    assert sorted(out["x"]) == sorted(x)


@given(values, st.floats(-10, 10, allow_nan=False))
def test_affine_ops_change_only_the_rows_where_selects(x, by):
    frame = _frame(x)
    spec = {"name": "a", "op": "shift", "column": "x", "by": by, "where": "layer == 0"}
    out = apply_mutation(frame, parse_mutation(spec))
    first = frame["layer"] == 0
    np.testing.assert_allclose(out.loc[first, "x"], frame.loc[first, "x"] + by)
    np.testing.assert_array_equal(out.loc[~first, "x"], frame.loc[~first, "x"])


def test_copy_keep_negate_and_scale():
    frame = _frame([1.0, 2.0, 3.0, 4.0, 5.0])
    copied = apply_mutation(
        frame, parse_mutation({"name": "c", "op": "copy", "column": "x", "source": "y"})
    )
    np.testing.assert_array_equal(copied["x"], frame["y"])
    kept = apply_mutation(
        frame, parse_mutation({"name": "k", "op": "keep", "column": "x", "rows": 3})
    )
    assert len(kept) == 3 and set(kept["x"]) <= set(frame["x"])
    negated = apply_mutation(frame, parse_mutation({"name": "n", "op": "negate", "column": "x"}))
    np.testing.assert_array_equal(negated["x"], -frame["x"])
    scaled = apply_mutation(
        frame, parse_mutation({"name": "m", "op": "scale", "column": "x", "by": 2})
    )
    np.testing.assert_array_equal(scaled["x"], 2 * frame["x"])


def test_a_json_list_column_is_changed_element_wise():
    frame = pd.DataFrame({"kernels": [json.dumps([[1.0, -2.0], [0.5, 0.0]])], "step": [1]})
    out = apply_mutation(frame, parse_mutation({"name": "j", "op": "negate", "column": "kernels"}))
    assert json.loads(out["kernels"].iloc[0]) == [[-1.0, 2.0], [-0.5, -0.0]]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"name": "x", "op": "explode", "column": "x"}, "not one of"),
        ({"name": "Bad Name", "op": "negate", "column": "x"}, "slug"),
        ({"name": "x", "op": "copy", "column": "x"}, "needs \\['source'\\]"),
        ({"name": "x", "op": "negate", "column": "x", "colour": 1}, "unknown keys"),
        ({"name": "x", "op": "keep", "column": "x", "rows": 0}, "positive integer"),
    ],
)
def test_a_wrong_declaration_is_one_error_naming_the_key(spec, message):
    with pytest.raises(MutationError, match=message):
        parse_mutation(spec)


def test_a_table_the_release_lacks_is_an_error_naming_the_release_tables():
    """The grammar takes any table name (a suite's pieces name their own tables); the paper's
    pieces refuse one the release does not have, naming those it has."""
    spec = parse_mutation({"name": "x", "op": "negate", "column": "x", "table": "weights"})
    with pytest.raises(MutationError, match=r"'weights' is not one of the release's.*head_full"):
        check_tables((spec,))


def test_a_column_or_expression_the_table_lacks_is_an_error():
    with pytest.raises(MutationError, match="no column 'z'"):
        apply_mutation(
            _frame([1.0, 2.0]), parse_mutation({"name": "z", "op": "negate", "column": "z"})
        )
    spec = {"name": "q", "op": "negate", "column": "x", "where": "nope >"}
    with pytest.raises(MutationError, match="cannot be evaluated"):
        apply_mutation(_frame([1.0, 2.0]), parse_mutation(spec))


def test_mutated_data_changes_only_the_matching_model(tmp_path: Path):
    table = _frame([1.0, 2.0, 3.0]).assign(dir_frac=0.5, D_head=0.6, prev=0.1)
    table.to_parquet(tmp_path / "gpt2_head_full.parquet")
    table.to_parquet(tmp_path / "opt-1.3b_head_full.parquet")
    spec = parse_mutation({"name": "n", "op": "negate", "column": "x", "match": "gpt2"})
    data = MutatedPaperData.of(PaperData.discover(tmp_path), (spec,))
    assert list(data.head_table("gpt2")["x"]) == [-1.0, -2.0, -3.0]
    assert list(data.head_table("opt-1.3b")["x"]) == [1.0, 2.0, 3.0]
    assert list(PaperData.discover(tmp_path).head_table("gpt2")["x"]) == [1.0, 2.0, 3.0]


CATALOGUE = """
[vocabulary.null_rho]
value = 0.15
means = "a null correlation"
source = "qk_spectral.tex:265"

[X1]
section = "6"
statement = "the top prev head sits below the median D_head percentile"
thresholds = { side = 0.5 }

[[X1.mutations]]
name = "prev-reversed"
op = "negate"
column = "prev"
expect = "the top prev head becomes the bottom one: refuted"

[[X1.mutations]]
name = "top-lever"
op = "cross"
check = "D_head percentile*"
column = "D_head"
top = "prev:1"
expect = "the top prev head's D_head raised until its percentile reaches the median: refuted"

[X2]
section = "6"
statement = "a check that never looks at its evidence"

[[X2.mutations]]
name = "prev-reversed"
op = "negate"
column = "prev"
"""

CLAIMS = """
from pytest_claims import claim
from qkcore.stats.population import top_k_percentile


@claim("X1", evidence=("paper",), columns=("prev", "D_head"))
def test_live(evidence, judge):
    value = top_k_percentile(evidence.head_table(), "D_head", by="prev", k=1)
    judge.statement("D_head percentile of the top prev head", value, "<", "side")


@claim("X2", evidence=("paper",), models=("gpt2",))
def test_dead(evidence, judge):
    judge.statement("one is one", 1, "==", 1)
"""

# a claim whose test reads a column by its place: its verdict depends on the file's layout
ORDER_BOUND = """
from pytest_claims import claim


@claim("X1", evidence=("paper",), columns=("prev", "D_head"))
def test_fifth_column(evidence, judge):
    first = float(evidence.head_table().iloc[0, 4])  # prev, in the file as released
    judge.statement("first value of the table's fifth column", first, ">", "side")
"""


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("released")
    heads = {"layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "dir_frac": [0.1, 0.2, 0.3, 0.4]}
    table = heads | {"D_head": [0.1, 0.5, 0.7, 0.9], "prev": [0.9, 0.1, 0.0, 0.2]}
    pd.DataFrame(table).to_parquet(root / "gpt2_head_full.parquet")
    return root


def test_the_mutation_run_names_live_and_dead_checks(pytester, released):
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x=CLAIMS)
    result, rows = run_suite(pytester, released, "--claims-mutations", report_dir="mut")
    assert set(rows) == {
        "paper:gpt2",
        "paper:gpt2~prev-reversed",
        "paper:gpt2~top-lever",
        "paper:gpt2~controls",
    }
    text = (pytester.path / "mut" / "mutations.md").read_text()
    # X1's statement flipped: supported on the tables, refuted on the copy
    assert r"test_live\[paper:gpt2\]: supported -> refuted" in text  # a markdown cell
    # X2's statement never looks at the evidence: a problem, and the run is red
    assert "X2: statement 'one is one' reacted to none of its mutations" in text
    assert "X2: mutation 'prev-reversed' moved no verdict" in text
    assert "X2: no meaningful mutation" in text  # a whole-column negation is blunt
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["*mutation harness: * problem(s)*", "*X2: statement 'one is one'*"]
    )


def test_a_lever_finds_the_boundary_and_the_verdict_moves_there(pytester, released):
    """The top prev head (D_head 0.1, percentile 1/4) against the median: its D_head raised by
    just under 0.4 stays below the next head's 0.5 (supported), by just over it ties or passes
    it (percentile >= 0.5: refuted)."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x=CLAIMS)
    _, rows = run_suite(pytester, released, "--claims-mutations", report_dir="mut")
    (probe,) = rows["paper:gpt2~top-lever"]["probes"]
    assert probe["kind"] == "boundary" and probe["problem"] == "" and probe["deciding"]
    assert probe["inside"]["verdict"] == "supported" and probe["across"]["verdict"] == "refuted"
    assert 0.3 < probe["inside"]["by"] <= probe["across"]["by"] <= 0.41
    # the row is the test on the released table; the search ran from it
    assert rows["paper:gpt2~top-lever"]["verdict"] == "supported"


def test_a_negative_control_catches_a_verdict_that_hangs_on_the_files_layout(pytester, released):
    """The fifth column is prev (0.9 in the first row, against 0.5); permuting the columns puts
    another there. Together the controls move the verdict; each alone names the one that did.
    Permuting the rows moves nothing: the loader orders a head table by (layer, head), an
    order a claim may rely on."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x=ORDER_BOUND)
    result, rows = run_suite(pytester, released, "--claims-mutations", report_dir="mut")
    assert rows["paper:gpt2~controls"]["verdict"] == "refuted"
    text = (pytester.path / "mut" / "mutations.md").read_text()
    assert "a negative control (together) moved the verdict supported -&gt; refuted" in text
    assert result.ret == 1
    result, rows = run_suite(
        pytester, released, "--claims-mutations", "--claims-controls=each", report_dir="each"
    )
    moved = {e for e, r in rows.items() if "~control." in e and r["verdict"] != "supported"}
    assert moved == {"paper:gpt2~control.columns-permuted"}
    text = (pytester.path / "each" / "mutations.md").read_text()
    assert "a negative control (columns-permuted) moved the verdict supported -&gt; refuted" in text


def test_a_reason_in_the_catalogue_exempts_a_check(pytester, released):
    exempt = CATALOGUE + '\n[X2.unmutated]\n"*" = "an identity: true whatever the evidence"\n'
    pytester.makefile(".toml", catalogue=exempt)
    pytester.makepyfile(test_x=CLAIMS)
    result, _ = run_suite(pytester, released, "--claims-mutations", report_dir="mut")
    text = (pytester.path / "mut" / "mutations.md").read_text()
    assert "0 problem(s)" in text and "exempt: an identity" in text
    assert result.ret == 0


def test_mutated_rows_never_reach_the_report_outside_a_mutation_run(pytester, released):
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x=CLAIMS)
    _, rows = run_suite(pytester, released)
    assert set(rows) == {"paper:gpt2"}


def test_the_report_says_which_tables_it_judged(pytester, released):
    """Tables that are not the pinned release are named in the report's first lines, and a
    mutation run says that is what it is."""
    pytester.makefile(".toml", catalogue=CATALOGUE)
    pytester.makepyfile(test_x=CLAIMS)
    run_suite(pytester, released)
    head = (pytester.path / "rep" / "claims.md").read_text().splitlines()[:8]
    assert any(
        "NOT the pinned release" in line and "gpt2_head_full.parquet" in line for line in head
    )
    run_suite(pytester, released, "--claims-mutations", report_dir="mut")
    head = (pytester.path / "mut" / "claims.md").read_text().splitlines()[:10]
    assert any("a mutation run" in line.lower() for line in head)
