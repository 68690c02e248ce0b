"""This suite's plugin: the paper's evidence, builds and report sections, given to the claims
framework (:mod:`pytest_claims`) through its hooks - as a second team registers its own.

Loaded by this repository's ``conftest.py`` (``pytest_plugins = ["qkcore.pytest_plugin"]``),
never by the framework's entry point, so a suite that installs the framework meets none of it.
It registers:

- the evidence kinds ``paper``, ``weights``, ``toy`` (:data:`qkcore.evidence.params.
  BUILTIN_KINDS`) with their flags, their settings (checked once) and the scheme
  markers ``ape``, ``alibi``, ``rope`` their rows carry;
- the build stage (:mod:`~qkcore.pytest_plugin.prepare`: plan, ``qk-claims-build``, each test
  waiting for its builds) and its flags, and ``--claims-only-scheme``;
- the report's parts: which paper data was judged (the pinned release, verified) and the toy
  regime, the press and companion sections of errata, torch's and TransformerLens's versions;
- the compute threads of a claim test in an xdist worker (threadpoolctl), and the
  ``paper_data`` fixture.
"""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING

import pytest

from pytest_claims.evidence import CLAIM_MARK, evidence_options
from pytest_claims.kinds import EvidenceKind
from pytest_claims.row import ClaimResult
from qkcore.compute_threads import cores, limit_loaded_pools
from qkcore.evidence.families import FAMILIES
from qkcore.evidence.params import BUILTIN_KINDS
from qkcore.evidence.params import paper_data as discover_paper_data
from qkcore.pytest_plugin.options import add_suite_options
from qkcore.pytest_plugin.prepare import PreparePhase

if TYPE_CHECKING:
    from qkcore.evidence.paper_data import PaperData

__all__ = [
    "paper_data",
    "pytest_addoption",
    "pytest_claims_environment",
    "pytest_claims_evidence_kinds",
    "pytest_claims_report_notes",
    "pytest_claims_report_sections",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_setup",
]

#: The catalogue sections whose prints are listed apart from the paper's own slips.
SECTIONS = {
    "press": "Press mismatches (not the paper's)",
    "companion": "The companion paper's print",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    from pytest_claims.evidence import add_kind_options

    for kind in BUILTIN_KINDS:
        add_kind_options(parser, kind)
    add_suite_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for family in FAMILIES:
        config.addinivalue_line("markers", f"{family}: evidence with positional scheme {family}")
    config.pluginmanager.register(PreparePhase(config), "qk-claims-prepare")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _share_cores_among_workers(item)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    _share_cores_among_workers(item)  # again: the test's fixtures may have loaded a library


def _share_cores_among_workers(item: pytest.Item) -> None:
    """A claim test in an xdist worker computes on the worker's share of the cores
    (``cores // workers`` threads, one with ``-n 2`` on two), unless the user set the thread
    variables: the pools loaded so far are limited (:func:`~qkcore.compute_threads.
    limit_loaded_pools`), the environment untouched. A session without claim tests, or
    without workers, is left as it is."""
    workerinput = getattr(item.config, "workerinput", None)
    if workerinput is None or item.get_closest_marker(CLAIM_MARK) is None:
        return
    workers = max(1, int(workerinput.get("workercount", 1)))
    limit_loaded_pools(max(1, cores() // workers))


def pytest_claims_evidence_kinds() -> list[EvidenceKind]:
    return list(BUILTIN_KINDS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--claims-only-scheme rope``: the rows whose evidence carries RoPE and no other scheme."""
    family = config.getoption("--claims-only-scheme", None)
    if family is None:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        carried = {mark.name for mark in item.iter_markers() if mark.name in FAMILIES}
        (keep if carried == {family} else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_claims_report_notes(
    config: pytest.Config, results: list[ClaimResult]
) -> list[tuple[str, str]]:
    """Which paper data was judged (the pinned release, every file verified, or the files that
    differ; a mutation run says it is one), and how the toys judged were trained."""
    notes = []
    if any(r.ref is not None and r.ref.kind == "paper" for r in results):
        from qkcore.evidence.fetch import describe_release

        data, why = discover_paper_data(evidence_options(config, "paper").paper_data)
        said = describe_release(data.root) if data is not None else f"the paper's tables: {why}"
        notes.append(("Which evidence was judged:", said))
        if config.getoption("--claims-mutations", False):
            notes.append(
                (
                    "A mutation run:",
                    "besides each released row, rows judged on mutated copies of the tables "
                    "(their ids end in ~<mutation>), by design not the paper's data",
                )
            )
    regimes = {r.ref.regime for r in results if r.ref is not None and r.ref.kind == "toy"}
    if regimes:  # reading a regime imports the toy model (torch): only where toys were judged
        from qkcore.models.toy.regimes import toy_regime

        regime = toy_regime(config.getoption("--claims-toy-regime", default="cpu"))
        if regime.name in regimes:
            notes.append(
                ("Toy regime", f"{regime.describe()}. Toy verdicts are about toys trained so.")
            )
    return notes


def pytest_claims_report_sections() -> dict[str, str]:
    return dict(SECTIONS)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def pytest_claims_environment() -> dict[str, str]:
    return {"torch": _version("torch"), "transformer_lens": _version("transformer_lens")}


@pytest.fixture(scope="session")
def paper_data(request: pytest.FixtureRequest) -> tuple[PaperData | None, str]:
    """The paper's released tables (``None`` when absent) and, then, the reason why."""
    return discover_paper_data(evidence_options(request.config, "paper").paper_data)
