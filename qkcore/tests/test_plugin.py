"""The claims plugin, driven through pytester in subprocesses (as a user or CI would run it)."""

from __future__ import annotations

import json

import pytest

CLAIM_TESTS = '''
import pytest
from pytest_claims.refs import EvidenceRef
from pytest_claims.evidence import evidence_params
from qkcore.evidence.families import scheme_marks

REFS = [
    EvidenceRef("paper", "gpt2", "ape"),
    EvidenceRef("paper", "pythia-410m", "rope-partial"),
    EvidenceRef("toy", "alibi", "alibi", seed=0),
]
VALUES = {"paper:gpt2": 0.21, "paper:pythia-410m": 0.89, "toy:alibi-s0": 0.95}


@pytest.mark.claims_claim("S6a", section="6", statement="strongest prev heads are rotational")
@pytest.mark.parametrize("ref", evidence_params(REFS, scheme_marks))
def test_rotational(ref, claims_recorder):
    """Median D_head percentile of the top-5 prev heads >= 0.8."""
    value = VALUES[ref.evidence_id]
    claims_recorder.check("median pct", value, ">=", 0.8, kind="statement", paper=0.89, n=5)
    claims_recorder.check("median pct as printed", value, "==", "0.89", kind="number")
    claims_recorder.plot("pct by scheme", ref.scheme, ref.scheme, value, kind="strip")


@pytest.mark.claims_claim("F4", section="3", statement="null")
def test_unavailable(claims_recorder):
    pytest.skip("paper data not found: set QK_PAPER_DATA")
'''


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "qkcore.pytest_plugin", "-p", "no:cacheprovider", *args
    )


def report(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "reports/latest/claims.json").read_text())


def verdicts(pytester: pytest.Pytester) -> dict[str, str]:
    return {r["nodeid"]: r["verdict"] for r in report(pytester)["results"]}


def test_marker_recorder_and_report(pytester: pytest.Pytester):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    data = report(pytester)
    assert data["schema"] == "qk-claims/2"
    assert set(data["environment"]) >= {"python", "torch", "transformer_lens", "platform"}
    by_evidence = {r["evidence"]: r for r in data["results"]}
    gpt2 = by_evidence["paper:gpt2"]
    assert gpt2["claim"] == "S6a" and gpt2["section"] == "6" and gpt2["verdict"] == "refuted"
    assert gpt2["evidence_kind"] == "paper" and gpt2["margin"] == pytest.approx(0.21 - 0.8)
    statement = gpt2["checks"][0]
    assert {k: statement[k] for k in ("name", "kind", "value", "comparison", "threshold")} == {
        "name": "median pct",
        "kind": "statement",
        "value": 0.21,
        "comparison": ">=",
        "threshold": 0.8,
    }
    assert statement["outcome"] == "fail" and statement["paper"] == 0.89 and statement["n"] == 5
    assert by_evidence["paper:pythia-410m"]["verdict"] == "supported"
    # the alibi toy's 0.95 does not print as the paper's 0.89: an erratum, not a refutation
    assert by_evidence["toy:alibi-s0"]["verdict"] == "supported"
    assert [(e["evidence"], e["printed"], e["measured"]) for e in data["errata"]] == [
        ("paper:gpt2", "0.89", 0.21),
        ("toy:alibi-s0", "0.89", 0.95),
    ]
    assert data["summary"] == [
        {
            "claim": "F4",
            "statement": "null",
            "nature": "finding",
            "verdicts": {"simulation": {"skipped": 1}},
        },
        {
            "claim": "S6a",
            "statement": "strongest prev heads are rotational",
            "nature": "finding",
            # one seed of alibi is a detail; its population (toy:alibi-n1) lacks power
            "verdicts": {"paper": {"refuted": 1, "supported": 1}, "toy": {"inconclusive": 1}},
        },
    ]
    skipped = next(r for r in data["results"] if r["claim"] == "F4")
    assert skipped["verdict"] == "skipped" and "QK_PAPER_DATA" in skipped["reason"]
    md = (pytester.path / "reports/latest/claims.md").read_text()
    summary_line = (
        "| S6a | strongest prev heads are rotational | 1 refuted, 1 supported | - "
        "| 1 inconclusive |"
    )
    assert summary_line in md
    assert md.index("## Which claims hold") < md.index("## Errata") < md.index("## Rows that")
    # escaped for markdown (markdown.cell): renders as ">="
    assert "median pct: 0.21 &gt;= 0.8 (statement fails; paper 0.89, n = 5)" in md
    html = (pytester.path / "reports/latest/claims.html").read_text()
    assert "data:image/png;base64," in html and "pct by scheme" in html
    result.stdout.fnmatch_lines(
        [
            "*claims*",
            "S6a*1 supported, 1 refuted, 1 inconclusive*",
            "total: 1 supported, 1 refuted, 1 inconclusive, 1 skipped (1 seed rows*",
            "report: *reports/runs/*/claims.md*",
            "latest: *reports/latest/claims.md",
        ]
    )


def test_keyword_selection_by_scheme_and_kind(pytester: pytest.Pytester):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    run(pytester, "-k", "rope").assert_outcomes(passed=1)  # paper:pythia-410m is RoPE
    run(pytester, "-k", "paper").assert_outcomes(passed=1, failed=1)
    run(pytester, "-k", "alibi").assert_outcomes(passed=1)


def test_xdist_gives_the_same_report(pytester: pytest.Pytester):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    run(pytester, "-n", "0")
    serial = report(pytester)["results"]
    run(pytester, "-n", "2")
    parallel = report(pytester)["results"]
    strip = lambda rs: [{k: v for k, v in r.items() if k != "duration_s"} for r in rs]  # noqa: E731
    assert strip(serial) == strip(parallel)


def test_baseline_known_refuted_passes_and_drift_fails(pytester: pytest.Pytester):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    run(pytester, "--claims-update-baseline")
    baseline = json.loads((pytester.path / "reports/baseline.json").read_text())
    assert baseline["schema"] == "qk-baseline/2"
    assert baseline["verdicts"]["test_claims.py::test_rotational[paper:gpt2]"] == "refuted"
    kept = baseline["rows"]["test_claims.py::test_rotational[paper:gpt2]"]
    assert kept["kind"] == "paper" and kept["evidence"] == "paper:gpt2"
    assert [(c["name"], c["value"], c["threshold"]) for c in kept["checks"]] == [
        ("median pct", 0.21, 0.8),
        ("median pct as printed", 0.21, "0.89"),
    ]

    known = run(pytester)
    known.assert_outcomes(passed=2, xfailed=1, skipped=1)
    assert known.ret == 0

    # The evidence changes: gpt2 now supports the claim, pythia no longer does.
    pytester.makepyfile(
        test_claims=CLAIM_TESTS.replace('"paper:gpt2": 0.21', '"paper:gpt2": 0.91').replace(
            '"paper:pythia-410m": 0.89', '"paper:pythia-410m": 0.05'
        )
    )
    drift = run(pytester)
    assert drift.ret == 1
    drift.stdout.fnmatch_lines(
        [
            "VERDICT CHANGES against reports/baseline.json (2):",
            "*test_rotational?paper:gpt2?: refuted -> supported",
            "*test_rotational?paper:pythia-410m?: supported -> refuted",
        ]
    )

    accepted = run(pytester, "--claims-update-baseline")
    accepted.stdout.fnmatch_lines(
        [
            "baseline reports/baseline.json: 2 changed, 0 added, 1 refused",
            "  changed *paper:gpt2*: refuted -> supported",
            "  changed *paper:pythia-410m*: supported -> refuted",
            "  refused 1 skipped rows the baseline does not know (not written)",
        ]
    )
    assert run(pytester).ret == 0


def test_new_tests_are_reported_as_new(pytester: pytest.Pytester):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    result = run(pytester, "-k", "pythia")
    result.stdout.fnmatch_lines(["new claim tests not in reports/baseline.json: 1"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ('{"schema": "other", "verdicts": {}}', "is not a 'qk-baseline/2' file"),
        ('{"schema": "qk-baseline/2", "verdicts": {}, "rows": []}', "'rows' must map node ids"),
        ("[]", "it holds a JSON list"),
        ("null", "it holds null"),
        ('{"schema": "qk-baseline/1", "verdicts": {"t::x": "maybe"}}', "verdict 'maybe' of t::x"),
    ],
)
def test_corrupt_baseline_is_one_clear_error(pytester: pytest.Pytester, content, message):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    (pytester.path / "reports").mkdir()
    (pytester.path / "reports/baseline.json").write_text(content)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])
    assert "Traceback" not in result.stderr.str()


def test_missing_explicit_baseline(pytester: pytest.Pytester):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    result = run(pytester, "--claims-baseline", "elsewhere.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*elsewhere.json does not exist*--claims-update-baseline*"])


def test_claim_test_that_records_nothing_is_an_error(pytester: pytest.Pytester):
    pytester.makepyfile(
        test_empty="""
import pytest

@pytest.mark.claims_claim("S5a", section="5", statement="x")
def test_asserts_nothing(claims_recorder):
    assert True

@pytest.mark.claims_claim("S5b", section="5", statement="y")
def test_crashes(claims_recorder):
    claims_recorder.measure("v", 1.0)
    raise RuntimeError("weights file truncated")

@pytest.mark.claims_claim("S5c", section="5", statement="z")
def test_bare_assert_only(claims_recorder):
    claims_recorder.measure("v", 0.1)
    assert 0.1 > 0.5
"""
    )
    result = run(pytester)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*claim test judged nothing*"])
    by_claim = {r["claim"]: r for r in report(pytester)["results"]}
    assert by_claim["S5a"]["verdict"] == "error"
    assert by_claim["S5b"]["verdict"] == "error"
    assert "RuntimeError: weights file truncated" in by_claim["S5b"]["reason"]
    assert by_claim["S5c"]["verdict"] == "error" and "bare assert" in by_claim["S5c"]["reason"]


def test_non_claim_runs_write_no_report(pytester: pytest.Pytester):
    pytester.makepyfile(test_plain="def test_x():\n    assert 1\n")
    run(pytester).assert_outcomes(passed=1)
    assert not (pytester.path / "reports").exists()


KINDS_TESTS = """
import pytest


@pytest.mark.claims_claim("S9b", section="9", statement="premise fails")
def test_premise(claims_recorder):
    claims_recorder.check("induction heads present", 0, ">=", 1, kind="premise")
    claims_recorder.check("statistic", 0.1, ">=", 0.5, kind="statement")


@pytest.mark.claims_claim("S6c", section="6", statement="power fails")
def test_power(claims_recorder):
    claims_recorder.check(
        "power against rho = 0.47", 0.3, ">=", 0.8, kind="power", effect="rho 0.47"
    )
    claims_recorder.check("p", 0.5, "<=", 0.05, kind="statement")


@pytest.mark.claims_claim("S5c", section="5", statement="interval straddles")
def test_interval(claims_recorder):
    claims_recorder.check("rho", -0.2, "<", 0.0, kind="statement", interval=(-0.4, 0.1))


@pytest.mark.claims_claim("S9c", section="9", statement="print differs, statement holds")
def test_number_only(claims_recorder):
    claims_recorder.check("timing", 1000, "==", 1000, kind="statement")
    claims_recorder.check("behaviour at formation", 0.957, "==", "0.95", kind="number")


@pytest.mark.claims_claim("S7", section="7", statement="bare assert")
def test_bare_assert(claims_recorder):
    claims_recorder.check("x", 1.0, ">", 0.0, kind="statement")
    assert 1.0 < 0.0


@pytest.mark.claims_claim("S8a", section="8", statement="no statement")
def test_no_statement(claims_recorder):
    claims_recorder.check("x", 1.0, "==", "1.0", kind="number")
"""


def test_verdicts_follow_from_check_kinds(pytester: pytest.Pytester):
    """premise -> not-applicable, power -> inconclusive, an interval across the threshold ->
    inconclusive, a failed number check -> erratum only, a bare assert beside checks or no
    statement check -> error."""
    pytester.makepyfile(test_kinds=KINDS_TESTS)
    result = run(pytester)
    by_claim = {r["claim"]: r for r in report(pytester)["results"]}
    assert {claim: r["verdict"] for claim, r in by_claim.items()} == {
        "S9b": "not-applicable",
        "S6c": "inconclusive",
        "S5c": "inconclusive",
        "S9c": "supported",
        "S7": "error",
        "S8a": "error",
    }
    assert "induction heads present: 0 >= 1" in by_claim["S9b"]["reason"]
    assert "bare assert" in by_claim["S7"]["reason"]
    errata = report(pytester)["errata"]
    assert [(e["claim"], e["measured"], e["printed"]) for e in errata] == [("S9c", 0.957, "0.95")]
    result.assert_outcomes(passed=4, failed=2)


def test_check_called_wrongly_is_a_test_error(pytester: pytest.Pytester):
    pytester.makepyfile(
        test_wrong="""
import pytest

@pytest.mark.claims_claim("F1", section="3", statement="x")
def test_number_without_text(claims_recorder):
    claims_recorder.check("v", 0.5, "==", 0.5, kind="number")
"""
    )
    run(pytester).assert_outcomes(failed=1)
    (row,) = report(pytester)["results"]
    assert row["verdict"] == "error" and "as the source prints it" in row["reason"]


def test_update_never_writes_undecided_verdicts_and_keeps_unselected_rows(
    pytester: pytest.Pytester,
):
    """A broken or evidence-less run cannot damage the baseline: skipped and error rows are
    refused, decided rows it did not select keep their verdicts."""
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    run(pytester, "--claims-update-baseline")
    path = pytester.path / "reports/baseline.json"
    before = json.loads(path.read_text())["verdicts"]
    assert "skipped" not in before.values()
    # the evidence breaks: every S6a row errors
    pytester.makepyfile(
        test_claims=CLAIM_TESTS.replace("value = VALUES", "value = 1 / 0 or VALUES")
    )
    broken = run(pytester, "--claims-update-baseline")
    broken.stdout.fnmatch_lines(["baseline reports/baseline.json: 0 changed, 0 added, 4 refused"])
    assert json.loads(path.read_text())["verdicts"] == before
    # a partial selection updates only what it selected
    pytester.makepyfile(test_claims=CLAIM_TESTS.replace('"paper:gpt2": 0.21', '"paper:gpt2": 0.91'))
    run(pytester, "--claims-update-baseline", "-k", "gpt2")
    after = json.loads(path.read_text())["verdicts"]
    assert after.pop("test_claims.py::test_rotational[paper:gpt2]") == "supported"
    assert before.pop("test_claims.py::test_rotational[paper:gpt2]") == "refuted"
    assert after == before


def test_partial_run_keeps_latest_and_says_where_its_report_went(pytester: pytest.Pytester):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    run(pytester)
    full = report(pytester)
    partial = run(pytester, "-k", "gpt2")
    partial.stdout.fnmatch_lines(
        [
            "report: *reports/runs/*/claims.md (and claims.html, claims.json, errata.md)",
            "latest: not replaced (a partial selection)*",
        ]
    )
    assert report(pytester) == full  # latest still the full run
    forced = run(pytester, "-k", "gpt2", "--claims-report-latest")
    forced.stdout.fnmatch_lines(["latest: *reports/latest/claims.md"])
    assert len(report(pytester)["results"]) == 1


SEED_TESTS = """
import pytest
from pytest_claims.refs import EvidenceRef
from pytest_claims.evidence import evidence_params
from qkcore.evidence.families import scheme_marks

# rope: 8 of 8 seeds support; ape: 6 of 8 (7 are needed at n = 8)
VALUES = {f"toy:rope-s{i}": 0.9 for i in range(8)} | {"toy:rope-s1": 0.85}
VALUES |= {f"toy:ape-s{i}": 0.9 for i in range(8)} | {"toy:ape-s1": 0.1, "toy:ape-s5": 0.2}
REFS = [EvidenceRef("toy", scheme, scheme, seed=i) for scheme in ("rope", "ape") for i in range(8)]


@pytest.mark.claims_claim("S6a", section="6", statement="rotational")
@pytest.mark.parametrize("ref", evidence_params(REFS, scheme_marks))
def test_seed(ref, claims_recorder):
    claims_recorder.check("pct", VALUES[ref.evidence_id], ">=", 0.8, kind="statement")
"""


def test_toy_seeds_are_judged_as_populations(pytester: pytest.Pytester):
    """Seed rows are details: a refuted seed does not fail the run, and one population row per
    scheme carries the verdict (7 of 8 seeds agreeing) into the baseline."""
    pytester.makepyfile(test_seeds=SEED_TESTS)
    result = run(pytester, "--claims-update-baseline")
    result.assert_outcomes(passed=14, xfailed=2)
    assert result.ret == 0
    rows = {r["evidence"]: r for r in report(pytester)["results"]}
    assert rows["toy:rope-n8"]["verdict"] == "supported"
    assert rows["toy:ape-n8"]["verdict"] == "inconclusive"
    assert "disagree" in rows["toy:ape-n8"]["reason"]
    baseline = json.loads((pytester.path / "reports/baseline.json").read_text())["verdicts"]
    assert baseline == {
        "test_seeds.py::test_seed[toy:ape-n8]": "inconclusive",
        "test_seeds.py::test_seed[toy:rope-n8]": "supported",
    }
    # one seed changing sides leaves 7 of 8: the population stands
    one = SEED_TESTS.replace('"toy:rope-s1": 0.85', '"toy:rope-s1": 0.5')
    pytester.makepyfile(test_seeds=one)
    assert run(pytester).ret == 0
    # a second one leaves 6 of 8: the verdict moves, but 8/8 -> 6/8 is within chance
    two = one.replace("\nREFS", '\nVALUES["toy:rope-s2"] = 0.5\nREFS')
    pytester.makepyfile(test_seeds=two)
    moved = run(pytester)
    assert moved.ret == 0
    moved.stdout.fnmatch_lines(
        ["unstable populations (1)*", "*test_seed?toy:rope-n8?: supported -> inconclusive*"]
    )


def test_population_rule():
    from pytest_claims.populations import population_verdict

    assert population_verdict(dict.fromkeys("abcde", "refuted"))[0] == "refuted"
    assert population_verdict(dict.fromkeys("abcd", "supported"))[0] == "inconclusive"
    seven_of_eight = dict.fromkeys("abcdefg", "refuted") | {"h": "supported"}
    assert population_verdict(seven_of_eight)[0] == "refuted"
    six_of_eight = seven_of_eight | {"g": "inconclusive"}  # an inconclusive seed is no vote
    assert population_verdict(six_of_eight)[0] == "inconclusive"
    verdict, reason = population_verdict(
        {"a": "not-applicable", "b": "not-applicable", "c": "supported"}
    )
    assert verdict == "not-applicable" and "premise" in reason
    assert population_verdict({"a": "supported", "b": "error", "c": "supported"})[0] == "error"
    every = population_verdict(dict.fromkeys("abcdefgh", "inconclusive"))
    assert every == ("inconclusive", "every applicable seed is inconclusive (8 inconclusive)")
    five = population_verdict(dict.fromkeys("abcde", "supported"))
    assert "P(X >= 5 | 5, 1/2) = 0.0312" in five[1]
    assert "too little power" in population_verdict(dict.fromkeys("abc", "inconclusive"))[1]


@pytest.mark.parametrize("n", range(1, 40))
def test_agreement_needed_is_the_smallest_count_whose_binomial_tail_is_below_alpha(n):
    from scipy.stats import binom

    from pytest_claims.populations import ALPHA, agreement_needed, binomial_tail

    needed = agreement_needed(n)
    tails = {k: binom.sf(k - 1, n, 0.5) for k in range(n + 1)}
    assert all(abs(binomial_tail(k, n) - tails[k]) < 1e-12 for k in tails)
    if needed is None:
        assert tails[n] > ALPHA
    else:
        assert tails[needed] <= ALPHA < tails[needed - 1] and needed > n / 2


def test_invalid_baseline_with_update_is_refused_with_a_fix_that_works(pytester: pytest.Pytester):
    """The message must not send the user round in a circle (recommending the very flag that
    was just refused)."""
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    (pytester.path / "reports").mkdir()
    (pytester.path / "reports/baseline.json").write_text("[]")
    result = run(pytester, "--claims-update-baseline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    message = result.stderr.str()
    assert "git checkout -- reports/baseline.json" in message
    assert "--claims-baseline=none" in message
    assert (pytester.path / "reports/baseline.json").read_text() == "[]"  # untouched


def test_the_run_ends_with_the_claims_summary_and_report_paths(pytester: pytest.Pytester):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    lines = [line for line in run(pytester).outlines if line.strip()]
    summary = lines.index(next(line for line in lines if "short test summary info" in line))
    before = lines[:summary]
    assert before[-2].startswith("report: ") and before[-1].startswith("latest: ")
    claims_section = before[
        max(i for i, line in enumerate(before) if "claims" in line and "=" in line) :
    ]
    assert any(line.startswith("total: ") for line in claims_section)
    assert len(lines) - summary <= 3  # only failures and errors are listed after it


def test_a_closed_forward_door_skips_with_its_reason(pytester: pytest.Pytester):
    """A model that opens only its weights: a claim needing a forward pass is skipped with the
    door's reason (absent evidence), never an error row."""
    pytester.makepyfile(
        test_door="""
import pytest
from qkcore.errors import ForwardUnavailable

@pytest.mark.claims_claim("F2", section="3", statement="scores rebuild")
def test_scores(claims_recorder):
    raise ForwardUnavailable("weights:tiny: no forward door - bloom cannot be hooked")
"""
    )
    result = run(pytester)
    result.assert_outcomes(skipped=1)
    assert result.ret == 0
    (row,) = report(pytester)["results"]
    assert row["verdict"] == "skipped" and "no forward door - bloom" in row["reason"]


POPULATION_TESTS = """
import json, pathlib
import pytest
from pytest_claims.refs import EvidenceRef
from pytest_claims.evidence import evidence_params
from qkcore.evidence.families import scheme_marks

# each seed's verdict, from a file the test rewrites between runs
SIDES = json.loads(pathlib.Path("sides.json").read_text())
REFS = [EvidenceRef("toy", "rope", "rope", seed=i) for i in range(len(SIDES))]


@pytest.mark.claims_claim("P3", section="press", statement="a population")
@pytest.mark.parametrize("ref", evidence_params(REFS, scheme_marks))
def test_population(ref, claims_recorder):
    side = SIDES[ref.seed]
    value = {"supported": 0.9, "refuted": 0.1}.get(side, 0.5)
    claims_recorder.check("pct", value, ">=", 0.8, kind="statement",
                       interval=(0.7, 0.9) if side == "inconclusive" else None)
"""


def _sides(pytester: pytest.Pytester, supported: int, refuted: int, n: int = 8) -> None:
    sides = ["supported"] * supported + ["refuted"] * refuted
    sides += ["inconclusive"] * (n - len(sides))
    (pytester.path / "sides.json").write_text(json.dumps(sides))


def test_a_population_that_moves_within_chance_is_unstable_not_red(pytester: pytest.Pytester):
    """6 of 8 supporting (inconclusive) -> 7 of 8 (supported): the verdict crosses the cut,
    the counts do not differ beyond chance (p = 1): listed as unstable, the run is green."""
    pytester.makepyfile(test_pop=POPULATION_TESTS)
    _sides(pytester, supported=6, refuted=2)
    assert run(pytester, "--claims-update-baseline").ret == 0
    kept = json.loads((pytester.path / "reports/baseline.json").read_text())
    row = "test_pop.py::test_population[toy:rope-n8]"
    assert kept["verdicts"][row] == "inconclusive"
    assert kept["rows"][row]["seeds"] == {
        "supported": 6,
        "refuted": 2,
        "inconclusive": 0,
        "not-applicable": 0,
    }
    _sides(pytester, supported=7, refuted=1)
    moved = run(pytester)
    assert moved.ret == 0
    moved.stdout.fnmatch_lines(
        [
            "unstable populations (1)*",
            "*toy:rope-n8?: inconclusive -> supported (supported/refuted of n: 6/2 of 8 -> 7/1 "
            "of 8, p = 1)",
        ]
    )
    assert "VERDICT CHANGES" not in moved.stdout.str()
    summary = report(pytester)["baseline"]
    assert summary["drift"] == [] and [u["nodeid"] for u in summary["unstable"]] == [row]
    md = (pytester.path / "reports/latest/claims.md").read_text()
    assert "### Unstable: the population sits at the decision cut (1)" in md
    html = (pytester.path / "reports/latest/claims.html").read_text()
    assert "<h2>Unstable populations (not changes)</h2>" in html and "(p = 1)" in html


def test_a_population_that_collapses_is_red(pytester: pytest.Pytester):
    """8 of 8 refuting -> 2 of 8 (6 inconclusive): beyond chance (p = 0.0039 <= 0.01), red."""
    pytester.makepyfile(test_pop=POPULATION_TESTS)
    _sides(pytester, supported=0, refuted=8)
    assert run(pytester, "--claims-update-baseline").ret == 0
    _sides(pytester, supported=0, refuted=2)
    collapsed = run(pytester)
    assert collapsed.ret == 1
    collapsed.stdout.fnmatch_lines(
        [
            "VERDICT CHANGES against reports/baseline.json (1):",
            "*toy:rope-n8?: refuted -> inconclusive (supported/refuted of n: 0/8 of 8 -> 0/2 "
            "of 8, p = 0.0039)",
            "*seed counts differ beyond chance*",
        ]
    )


def test_counts_that_shift_beyond_chance_are_red_even_when_the_verdict_stands(
    pytester: pytest.Pytester,
):
    """7 supporting / 5 refuting of 12 -> 0 / 5 (7 inconclusive): inconclusive both times,
    but 7 of 12 seeds left the supporting side (p = 0.0027 <= 0.01): the recipe changed."""
    pytester.makepyfile(test_pop=POPULATION_TESTS)
    _sides(pytester, supported=7, refuted=5, n=12)
    assert run(pytester, "--claims-update-baseline").ret == 0
    _sides(pytester, supported=0, refuted=5, n=12)
    shifted = run(pytester)
    assert shifted.ret == 1
    shifted.stdout.fnmatch_lines(
        [
            "*toy:rope-n12?: inconclusive -> inconclusive (supported/refuted of n: 7/5 of 12 -> "
            "0/5 of 12, p = 0.0027)"
        ]
    )


DETERMINISTIC_TESTS = """
import json, pathlib
import pytest
from pytest_claims.refs import EvidenceRef
from pytest_claims.evidence import evidence_params
from qkcore.evidence.families import scheme_marks

VALUE = json.loads(pathlib.Path("value.json").read_text())


@pytest.mark.claims_claim("S6b", section="6", statement="a number")
@pytest.mark.parametrize(
    "ref", evidence_params([EvidenceRef("paper", "gpt2", "ape")], scheme_marks)
)
def test_number(ref, claims_recorder):
    claims_recorder.check("rho", VALUE, ">=", 0.3, kind="statement")
"""


@pytest.mark.parametrize(
    ("moved_by", "listed"),
    [(0.0, False), (1e-12, False), (1e-6, True), (0.1, True)],
)
def test_a_deterministic_value_is_listed_only_beyond_its_tolerance(
    pytester: pytest.Pytester, moved_by: float, listed: bool
):
    """Paper values tolerate 4.7e-10 (float64 sums over <= 2^17 terms): 1e-12 is rounding,
    1e-6 is not. Beyond it the value is listed, and red only under --claims-drift=numbers."""
    from qkcore.evidence.params import PAPER

    assert PAPER.tolerance is not None and 1e-12 < PAPER.tolerance.rtol < 1e-6
    pytester.makepyfile(test_det=DETERMINISTIC_TESTS)
    (pytester.path / "value.json").write_text(json.dumps(0.5))
    assert run(pytester, "--claims-update-baseline").ret == 0
    (pytester.path / "value.json").write_text(json.dumps(0.5 + moved_by))
    default = run(pytester)
    strict = run(pytester, "--claims-drift=numbers")
    numbers = report(pytester)["baseline"]["numbers"]
    assert default.ret == 0
    assert strict.ret == (1 if listed else 0)
    assert bool(numbers) is listed
    default.stdout.fnmatch_lines(
        [
            f"numbers against reports/baseline.json: 1 deterministic check values compared, "
            f"{int(0 < moved_by and not listed)} moved within their rounding tolerance, "
            f"{int(listed)} beyond it*"
        ]
    )
    if listed:
        (move,) = numbers
        assert (move["check"], move["old"], move["new"]) == ("rho", 0.5, 0.5 + moved_by)
        assert move["relative"] == pytest.approx(moved_by / 0.5)
        assert not move["verdict_moved"]


def test_a_schema_1_baseline_is_read_and_compared_by_verdict(pytester: pytest.Pytester):
    pytester.makepyfile(test_pop=POPULATION_TESTS)
    _sides(pytester, supported=6, refuted=2)
    (pytester.path / "reports").mkdir()
    row = "test_pop.py::test_population[toy:rope-n8]"
    (pytester.path / "reports/baseline.json").write_text(
        json.dumps({"schema": "qk-baseline/1", "verdicts": {row: "supported"}})
    )
    result = run(pytester)
    assert result.ret == 1  # no counts to test: a verdict change stays a change
    result.stdout.fnmatch_lines(["*no seed counts*schema 1*"])
    run(pytester, "--claims-update-baseline")
    rewritten = json.loads((pytester.path / "reports/baseline.json").read_text())
    assert rewritten["schema"] == "qk-baseline/2" and row in rewritten["rows"]


def test_two_runs_compared_as_markdown(pytester: pytest.Pytester):
    """The model-update workflow: two runs, different evidence names, paired and compared."""
    from pytest_claims.compare import main

    pytester.makepyfile(
        test_det=DETERMINISTIC_TESTS.replace('"paper", "gpt2"', '"weights", "m-q4"')
    )
    (pytester.path / "value.json").write_text(json.dumps(0.5))
    run(pytester, "--claims-report-dir", "old", "--claims-baseline=none")
    pytester.makepyfile(
        test_det=DETERMINISTIC_TESTS.replace('"paper", "gpt2"', '"weights", "m-f16"')
    )
    (pytester.path / "value.json").write_text(json.dumps(0.2))
    new = run(
        pytester,
        "--claims-report-dir",
        "new",
        "--claims-baseline=none",
        "--claims-compare",
        "old/claims.json",
    )
    new.stdout.fnmatch_lines(["comparison: */new/comparison.md"])
    md = (pytester.path / "new/comparison.md").read_text()
    assert md.startswith("# Claims comparison")
    assert "- evidence paired: `weights:m-q4` -> `weights:m-f16`" in md
    assert "**1** verdict changes" in md
    assert "| S6b | weights:m-f16 | rho | 0.5 | 0.2 | 0.6 |" in md
    out = pytester.path / "cmp.md"
    code = main(
        [
            str(pytester.path / "old"),
            str(pytester.path / "new"),
            "-o",
            str(out),
            "--fail-on",
            "changes",
        ]
    )
    cli = out.read_text()
    assert code == 1 and "| S6b | weights:m-f16 | rho | 0.5 | 0.2 | 0.6 |" in cli
    assert main([str(pytester.path / "nothing"), str(pytester.path / "new")]) == 2


def test_a_comparison_with_no_report_is_one_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile(test_claims=CLAIM_TESTS)
    result = run(pytester, "--claims-compare", "nowhere/claims.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--claims-compare: cannot read the claims report*nowhere*"])
    assert "Traceback" not in result.stderr.str()


def _check(name, outcome_pass, kind, **kw):
    from pytest_claims.checks import judged_check

    value = 1.0 if outcome_pass else 0.0
    return judged_check(name, value, ">=", 0.5, kind=kind, **kw)


@pytest.mark.parametrize(
    ("guards", "statement_holds", "verdict"),
    [
        ("both", True, "inconclusive"),
        ("both", False, "inconclusive"),
        ("supported", True, "inconclusive"),  # an absence claim cannot be supported
        ("supported", False, "refuted"),  # ... but a failed statement refutes it
        ("refuted", True, "supported"),  # a presence claim that holds needs no power
        ("refuted", False, "inconclusive"),  # ... but cannot be refuted without it
    ],
)
def test_a_failed_power_check_withholds_only_what_it_guards(guards, statement_holds, verdict):
    from pytest_claims.checks import verdict_of

    checks = [
        _check("power", False, "power", effect="rho = 0.47", guards=guards),
        _check("statement", statement_holds, "statement"),
    ]
    assert verdict_of(checks)[0] == verdict


def test_a_reversed_effect_refutes_without_power():
    from pytest_claims.checks import verdict_of

    checks = [
        _check("power", False, "power", effect="rho = 0.47", guards="refuted"),
        _check("p of the claimed direction", False, "statement"),
        _check("reverse p (not significantly opposite)", False, "statement", opposite=True),
    ]
    verdict, reason = verdict_of(checks)
    assert verdict == "refuted" and "reverse p" in reason


def test_a_power_check_must_name_its_effect():
    from pytest_claims.checks import CheckError, judged_check

    with pytest.raises(CheckError, match="names no effect"):
        judged_check("smallest attainable p", 0.01, "<=", 0.05, kind="power")
    with pytest.raises(CheckError, match="guards"):
        judged_check("power", 0.9, ">=", 0.8, kind="power", effect="rho 0.47", guards="never")


def test_errata_md_lists_the_papers_slips_first_and_apart_from_press_and_analogues():
    from pytest_claims.checks import judged_check
    from pytest_claims.refs import EvidenceRef
    from pytest_claims.reports.errata import render_errata
    from pytest_claims.reports.findings import errata
    from pytest_claims.row import ClaimResult

    def row(claim, section, ref, value, printed):
        check = judged_check("median", value, "==", printed, kind="number")
        return ClaimResult(
            nodeid=f"claims/t.py::t[{ref.evidence_id}]",
            claim=claim,
            evidence=ref.evidence_id,
            ref=ref,
            section=section,
            source="qk_spectral.tex:284",
            sentence="... (medians 0.89/0.85/0.79) ...",
            checks=[check],
        )

    from pytest_claims.reports.setup import ReportSetup
    from qkcore.pytest_plugin import SECTIONS

    # what this suite's plugin gives the framework: its columns, press and companion apart,
    # its weights and toys analogues, and the arguments that re-run a paper row
    setup = ReportSetup(
        columns=[("paper", "paper data"), ("weights", "weights"), ("toy", "toys")],
        sections=SECTIONS,
        primary=("paper",),
        rerun={"paper": "--claims-paper-data ../shared/paper-data"},
    )
    paper = EvidenceRef(kind="paper", model="gpt2", scheme="ape")
    weights = EvidenceRef(kind="weights", model="smollm2-135m", scheme="rope")
    found = errata(
        [
            row("P1", "press", paper, 7, "8"),
            row("F2", "3", weights, 1.6e-5, "1e-6"),
            row("S6a", "6", paper, 0.79, "0.80"),
        ],
        setup,
    )
    assert [(e["claim"], e["class"]) for e in found] == [
        ("S6a", "slip"),
        ("F2", "analogue"),
        ("P1", "press"),
    ]
    text = render_errata(found, "2026-12-01", setup)
    slips = text[text.index("## The source's slips") : text.index("## Press mismatches")]
    assert "S6a (qk_spectral.tex:284)" in slips and "P1" not in slips and "F2" not in slips
    assert "--claims-paper-data ../shared/paper-data" in slips  # the command that reproduces it
    assert text.index("P1") > text.index("## Press mismatches")
    assert text.index("| F2 |") > text.index("## Not errata")


def test_a_list_compares_as_a_list():
    """A premise on names (the columns a series lacks) compares lists, not numbers."""
    from pytest_claims.checks import judged_check

    assert judged_check("missing columns", [], "==", [], kind="premise").outcome == "pass"
    assert judged_check("missing columns", ["ind_beh"], "==", [], kind="premise").outcome == "fail"
    assert judged_check("heads", ("5.2",), "==", ["5.2"], kind="statement").outcome == "pass"
    assert judged_check("heads", 3, "==", [3], kind="statement").outcome == "fail"
