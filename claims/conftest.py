"""Evidence for the claim tests: the markers a claim declares and the fixture that serves them.

A claim test declares what can bear on it and receives one piece per parametrization::

    @pytest.mark.claim("S6a", section="6", statement="...")
    @pytest.mark.evidence("paper", schemes=("rope", "rope-partial"), columns=("prev", "D_head"))
    def test_...(evidence, claim_record):
        table = evidence.head_table()

``models=`` restricts to named models, for a claim whose numbers are one model's (S4a: GPT-2);
``checkpoints=True`` takes the models with a released checkpoint series instead (§9).
``@pytest.mark.evidence_set("paper", "weights", "toy", "toy-grid")`` gives one test over all
models of a kind (``paper:all-models``, ``weights:all-models``, ``toy-cpu:all-models``,
``toy-cpu:grid-n5``).

The kinds, their pieces and their parametrization live in :mod:`qkcore.evidence`
(:mod:`~qkcore.evidence.params` is the registry); this file only connects them to pytest.
"""

from __future__ import annotations

import pytest

from qkcore.evidence.options import EvidenceOptions
from qkcore.evidence.paper_data import PaperData
from qkcore.evidence.params import (
    evidence_parameters,
    evidence_set_parameters,
)
from qkcore.evidence.params import (
    paper_data as discover_paper_data,
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "evidence(*kinds, schemes=None, models=None, columns=(), checkpoints=False): "
        "evidence a claim test takes, one piece per parameter",
    )
    config.addinivalue_line(
        "markers", "evidence_set(*kinds, schemes=None, columns=()): all models of a kind at once"
    )


@pytest.fixture(scope="session")
def paper_data(request: pytest.FixtureRequest) -> tuple[PaperData | None, str]:
    """The paper's released tables (``None`` when absent) and, then, the reason why."""
    return discover_paper_data(request.config.getoption("--paper-data"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    options = EvidenceOptions.from_config(metafunc.config)
    marker = metafunc.definition.get_closest_marker("evidence")
    if marker is not None and "evidence" in metafunc.fixturenames:
        metafunc.parametrize("evidence", evidence_parameters(options, marker))
    set_marker = metafunc.definition.get_closest_marker("evidence_set")
    if set_marker is not None and "evidence_set" in metafunc.fixturenames:
        metafunc.parametrize("evidence_set", evidence_set_parameters(options, set_marker))
