"""Evidence for the claim tests: which pieces exist on this machine, and their fixtures.

A claim test declares what can bear on it and receives one piece per parametrization::

    @pytest.mark.claim("S6a", section="6", statement="...")
    @pytest.mark.evidence("paper", schemes=("rope", "rope-partial"), columns=("prev", "D_head"))

``models=`` restricts to named models, for a claim whose numbers are one model's (S4a: GPT-2);
``checkpoints=True`` takes the models with a released checkpoint series instead (§9).
    def test_...(evidence, claim_record):
        table = evidence.head_table()

Evidence is discovered when tests are collected (published tables from ``--paper-data`` or
``$QK_PAPER_DATA``). A model that the claim is about but whose table lacks a needed column, or
an absent data folder, still appears - as a skipped parameter whose reason says exactly what
is missing - so nothing is parametrized away silently.

``@pytest.mark.evidence_set("paper", "weights", "toy", "toy-grid")`` instead gives one test
over all models of a kind (multi-model claims: S6c, S6d), as ``evidence_set`` with ids
``paper:all-models``, ``weights:all-models`` (the weights on this machine), ``toy:all-models``
(the free toy runs) - and ``toy:grid-n5``, the §10 grid trained here (opt-in, ``--toy-grid``).

Why one module: pytest reads one conftest per folder, and every evidence kind's
parametrization is defined here, beside the fixture that hands it to a test.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pandas as pd
import pytest

from qkcore.analysis.headtable import TableSpec
from qkcore.errors import QKError
from qkcore.evidence.paper_data import PaperData, resolve_paper_data
from qkcore.evidence.refs import SCHEME_FAMILY, EvidenceRef, evidence_params
from qkcore.models import PACKAGED, PAPER_MODELS, LoadedModel, load_model, resolve_source
from qkcore.models.toy.model import ToyConfig


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "evidence(*kinds, schemes=None, models=None, columns=()): evidence a claim test takes",
    )
    config.addinivalue_line(
        "markers", "evidence_set(*kinds, schemes=None, columns=()): all models of a kind at once"
    )


@dataclass(frozen=True)
class PaperEvidence:
    """One model's published tables."""

    ref: EvidenceRef
    data: PaperData
    broken: str = ""  # why the table cannot be read: only this evidence's tests error

    def head_table(self) -> pd.DataFrame:
        if self.broken:
            raise QKError(self.broken)
        return self.data.head_table(self.ref.name)

    def history(self) -> pd.DataFrame:
        """The released checkpoint series in the common form (:mod:`qkcore.analysis.history`)."""
        from qkcore.analysis.history import paper_history

        return paper_history(self.data.checkpoint_table(self.ref.name, "ckpt_analysis"))


@dataclass(frozen=True)
class PaperEvidenceSet:
    """Every model with a published per-head table (multi-model claims)."""

    refs: tuple[EvidenceRef, ...]
    data: PaperData
    evidence_id: str = "paper:all-models"

    def tables(self) -> dict[EvidenceRef, pd.DataFrame]:
        return {ref: self.data.head_table(ref.name) for ref in self.refs}

    def grid(self) -> dict:
        """Main cells of the released §10 grid: ``{arm: [GridRun]}``."""
        return _paper_grid(self.data)


@cache
def _paper_grid(data: PaperData) -> dict:
    from qkcore.analysis.gridruns import paper_grid

    return paper_grid(data)


@dataclass(frozen=True)
class ToyGridEvidence:
    """The §10 grid trained here at the CPU default scale (``--toy-grid``), ``seeds`` per arm."""

    seeds: int
    device: str = "cpu"

    @property
    def evidence_id(self) -> str:
        return f"toy:grid-n{self.seeds}"

    def grid(self) -> dict:
        return _toy_grid(self.seeds, self.device)


@cache
def _toy_grid(seeds: int, device: str) -> dict:
    from qkcore.analysis.gridruns import toy_grid
    from qkcore.models.toy.grid import grid_configs

    return toy_grid(grid_configs(seeds), device=device)


def _toy_grid_param(config: pytest.Config) -> object:
    from qkcore.models.toy.grid import GRID_SEEDS

    seeds = config.getoption("--toy-grid-seeds")
    wanted = config.getoption("--toy-grid") or seeds is not None
    seeds = GRID_SEEDS if seeds is None else seeds
    if seeds < 2:
        raise pytest.UsageError(f"--toy-grid-seeds must be >= 2 (rank tests); got {seeds}.")
    evidence = ToyGridEvidence(seeds, config.getoption("--device"))
    marks = [pytest.mark.toy]
    if not wanted:
        marks.append(
            pytest.mark.skip(
                reason="toy:grid is opt-in: pass --toy-grid (5 arms x 5 seeds; ~1 h cold on "
                "2 cores, cached after) or --toy-grid-seeds N"
            )
        )
    return pytest.param(evidence, id=evidence.evidence_id, marks=marks)


@dataclass(frozen=True)
class ModelSet:
    """Every available piece of one evidence kind (``weights`` or free ``toy`` runs) as a set:
    the unit of a multi-model claim. ``absent`` names the pieces this machine lacks."""

    kind: str
    members: tuple
    absent: tuple[str, ...] = ()

    @property
    def evidence_id(self) -> str:
        return f"{self.kind}:all-models"

    def tables(self) -> dict[EvidenceRef, pd.DataFrame]:
        return {member.ref: member.head_table() for member in self.members}


def _model_set_param(config: pytest.Config, kind: str) -> object:
    bare = pytest.mark.evidence().mark
    pieces = _weights_params(config, bare) if kind == "weights" else _toy_params(config, bare)
    members, absent, families = [], [], set()
    for piece in pieces:
        evidence = piece.values[0]
        if any(m.name == "skip" for m in piece.marks) or getattr(evidence, "broken", ""):
            absent.append(evidence.ref.evidence_id)  # absent or unreadable: not a member
            continue
        members.append(evidence)
        families.add(SCHEME_FAMILY.get(evidence.ref.scheme, "unknown"))
    model_set = ModelSet(kind, tuple(members), tuple(absent))
    marks = [
        getattr(pytest.mark, kind),
        *(getattr(pytest.mark, f) for f in sorted(families) if f != "unknown"),
    ]
    return pytest.param(model_set, id=model_set.evidence_id, marks=marks)


@cache
def _paper_data(option: str | None) -> tuple[PaperData | None, str]:
    try:
        root = resolve_paper_data(option)
    except QKError as exc:
        return None, str(exc)
    if root is None:
        return None, (
            "paper data not given: pass --paper-data PATH or set QK_PAPER_DATA to the folder "
            "of the released tables (make sets it to ../shared/paper-data)"
        )
    return PaperData.discover(root), ""


@pytest.fixture(scope="session")
def paper_data(request: pytest.FixtureRequest) -> tuple[PaperData | None, str]:
    """The paper's released tables (``None`` when absent) and, then, the reason why."""
    return _paper_data(request.config.getoption("--paper-data"))


def _paper_params(config: pytest.Config, marker: pytest.Mark) -> list:
    data, reason = _paper_data(config.getoption("--paper-data"))
    if data is None:
        ref = EvidenceRef("paper", "unavailable", "unknown")
        return [
            pytest.param(
                ref, id=ref.evidence_id, marks=[pytest.mark.paper, pytest.mark.skip(reason=reason)]
            )
        ]
    schemes = marker.kwargs.get("schemes")
    columns = marker.kwargs.get("columns", ())
    models = marker.kwargs.get("models")
    checkpoints = marker.kwargs.get("checkpoints", False)
    if checkpoints and not data.checkpoint_models:
        ref = EvidenceRef("paper", "no-checkpoint-series", "unknown")
        why = f"{data.root} holds no <model>_ckpt_analysis.parquet: no checkpoint series to read"
        return [
            pytest.param(
                ref, id=ref.evidence_id, marks=[pytest.mark.paper, pytest.mark.skip(reason=why)]
            )
        ]
    params = []
    for model in data.checkpoint_models if checkpoints else data.models:
        if models is not None and model not in models:
            continue
        scheme = data.scheme(model)
        if schemes is not None and scheme not in schemes:
            continue
        ref = EvidenceRef("paper", model, scheme)
        (param,) = evidence_params([ref])
        broken = "" if checkpoints else data.problem(model)
        missing = (
            []
            if checkpoints or broken
            else [c for c in columns if c not in data.head_table(model).columns]
        )
        evidence = PaperEvidence(ref, data, broken)
        marks = list(param.marks)
        if missing:
            marks.append(
                pytest.mark.skip(
                    reason=f"{ref.evidence_id}: the published table has no column "
                    f"{', '.join(missing)} - this model's data cannot bear on the claim"
                )
            )
        params.append(pytest.param(evidence, id=ref.evidence_id, marks=marks))
    return params


@dataclass(frozen=True)
class WeightsEvidence:
    """A model whose weights are on this machine; loaded once per worker on first use."""

    ref: EvidenceRef
    spec: str
    sweeps: bool = False  # --weights-sweeps: the table carries the per-head ablation sweep
    broken: str = ""  # why the weights cannot be read: only this evidence's tests error

    def model(self) -> LoadedModel:
        if self.broken:
            raise QKError(self.broken)
        return _load(self.spec)

    def head_table(self) -> pd.DataFrame:
        """The recomputed per-head table (paper's columns), cached on disk by content."""
        if self.broken:
            raise QKError(self.broken)
        return _table(self.spec, self.sweeps)


@cache
def _load(spec: str) -> LoadedModel:
    return load_model(spec)


#: Pretrained tables without the ablation sweep by default; with ``--weights-sweeps`` they carry
#: the screened sweep: every head exactly on 4 of the 50 sequences, the 10 largest again on all
#: 50 (a full sweep of SmolLM2 is ~2.1 h on 2 cores, the screened one ~12 min - measured by
#: ``python benchmarks/bench_table.py``; too long for the default run's 45-minute budget).
WEIGHTS_TABLE = TableSpec()
WEIGHTS_TABLE_WITH_SWEEPS = TableSpec(ablations=True, ablation_screen_sequences=4)


@cache
def _table(spec: str, sweeps: bool) -> pd.DataFrame:
    from qkcore.analysis.headtable import cached_head_table

    return cached_head_table(_load(spec), WEIGHTS_TABLE_WITH_SWEEPS if sweeps else WEIGHTS_TABLE)


def _weights_params(config: pytest.Config, marker: pytest.Mark) -> list:
    """Packaged models, the paper's seven (skipped with the fetch command when not cached) and
    every ``--model``; filtered by the marker's ``schemes``."""
    from qkcore.models.schemes import PAPER_MODEL_SCHEME, probe_scheme

    schemes = marker.kwargs.get("schemes")
    specs = [*PACKAGED, *PAPER_MODELS, *config.getoption("--model")]
    params = []
    for spec in dict.fromkeys(specs):
        try:
            source = resolve_source(spec)
        except QKError as exc:
            if spec in config.getoption("--model"):
                raise pytest.UsageError(f"--model {spec}: {exc}") from None
            ref = EvidenceRef("weights", spec, PAPER_MODEL_SCHEME.get(spec, "unknown"))
            params.append(
                pytest.param(
                    WeightsEvidence(ref, spec, config.getoption("--weights-sweeps")),
                    id=ref.evidence_id,
                    marks=[pytest.mark.weights, pytest.mark.skip(reason=str(exc))],
                )
            )
            continue
        broken = ""
        try:
            scheme = probe_scheme(source)
        except QKError as exc:  # a damaged file: its own tests error, never the session
            scheme, broken = "unknown", f"weights:{source.name}: {exc}"
        if schemes is not None and scheme not in schemes and not broken:
            if scheme != "unknown":
                continue
        ref = EvidenceRef("weights", source.name, scheme)
        (param,) = evidence_params([ref])
        marks = list(param.marks)
        ok, reason = source.available()
        if not ok:
            marks.append(pytest.mark.skip(reason=f"{ref.evidence_id}: {reason}"))
        elif scheme == "unknown" and not broken and schemes is not None:
            marks.append(
                pytest.mark.skip(
                    reason=f"{ref.evidence_id}: its positional scheme could not be read from its "
                    "config (architecture not in qkcore.models.schemes.ARCHITECTURE_SCHEME), so "
                    "it cannot bear on a scheme-specific claim"
                )
            )
        swept = [c for c in marker.kwargs.get("columns", ()) if c.startswith(("dInd", "dICL"))]
        if ok and swept and not config.getoption("--weights-sweeps"):
            marks.append(
                pytest.mark.skip(
                    reason=f"{ref.evidence_id}: {', '.join(swept)} needs the per-head ablation "
                    "sweep - pass --weights-sweeps (SmolLM2: ~12 min more cold)"
                )
            )
        params.append(
            pytest.param(
                WeightsEvidence(ref, spec, config.getoption("--weights-sweeps"), broken),
                id=ref.evidence_id,
                marks=marks,
            )
        )
    return params


@dataclass(frozen=True)
class ToyEvidence:
    """A free toy run trained here (cached by config and code); loaded on first use."""

    ref: EvidenceRef
    config: ToyConfig
    device: str = "cpu"

    def run(self):
        return _toy_run(self.config, self.device)

    def model(self) -> LoadedModel:
        return _toy_loaded(self.config, self.device)

    def history(self) -> pd.DataFrame:
        """Natural history over the run's checkpoints
        (:func:`qkcore.analysis.history.toy_history`)."""
        return _toy_history(self.config, self.device)

    def head_table(self) -> pd.DataFrame:
        """Per-head table with the ablation sweeps (8 heads: cheap on a toy)."""
        from qkcore.analysis.headtable import TableSpec, cached_head_table

        return cached_head_table(self.model(), TableSpec(ablations=True))


@cache
def _toy_run(config: ToyConfig, device: str):
    from qkcore.models.toy.cache import trained_run

    return trained_run(config, device=device)


@cache
def _toy_history(config: ToyConfig, device: str) -> pd.DataFrame:
    from qkcore.analysis.history import cached_toy_history

    return cached_toy_history(_toy_run(config, device))


@cache
def _toy_loaded(config: ToyConfig, device: str) -> LoadedModel:
    from qkcore.models.toy.view import loaded_toy

    return loaded_toy(_toy_run(config, device))


def _toy_params(config: pytest.Config, marker: pytest.Mark) -> list:
    schemes = marker.kwargs.get("schemes")
    params = []
    for scheme in ("ape", "rope", "alibi"):
        if schemes is not None and scheme not in schemes:
            continue
        for seed in range(config.getoption("--toy-seeds")):
            toy = ToyConfig(scheme=scheme, seed=seed)
            ref = EvidenceRef("toy", f"{scheme}-s{seed}", scheme)
            (param,) = evidence_params([ref])
            params.append(
                pytest.param(
                    ToyEvidence(ref, toy, config.getoption("--device")),
                    id=ref.evidence_id,
                    marks=param.marks,
                )
            )
    return params


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    config = metafunc.config
    marker = metafunc.definition.get_closest_marker("evidence")
    if marker is not None and "evidence" in metafunc.fixturenames:
        params = []
        for kind in marker.args:
            if kind == "paper":
                params += _paper_params(config, marker)
            elif kind == "weights":
                params += _weights_params(config, marker)
            elif kind == "toy":
                params += _toy_params(config, marker)
            else:
                raise pytest.UsageError(f"evidence kind {kind!r} has no source yet")
        metafunc.parametrize("evidence", params)
    set_marker = metafunc.definition.get_closest_marker("evidence_set")
    if set_marker is not None and "evidence_set" in metafunc.fixturenames:
        params = []
        for kind in set_marker.args:
            if kind == "toy-grid":
                params.append(_toy_grid_param(config))
                continue
            if kind in ("weights", "toy"):
                params.append(_model_set_param(config, kind))
                continue
            data, reason = _paper_data(config.getoption("--paper-data"))
            if kind != "paper":
                raise pytest.UsageError(f"evidence kind {kind!r} has no source yet")
            if data is None:
                params.append(
                    pytest.param(
                        None,
                        id="paper:all-models",
                        marks=[pytest.mark.paper, pytest.mark.skip(reason=reason)],
                    )
                )
                continue
            # a table that cannot be read is left out of the set (its own tests say why)
            readable = [m for m in data.models if not data.problem(m)]
            refs = tuple(EvidenceRef("paper", m, data.scheme(m)) for m in readable)
            families = {SCHEME_FAMILY[r.scheme] for r in refs if r.scheme in SCHEME_FAMILY}
            marks = [
                pytest.mark.paper,
                *(getattr(pytest.mark, f) for f in sorted(families) if f != "unknown"),
            ]
            params.append(
                pytest.param(PaperEvidenceSet(refs, data), id="paper:all-models", marks=marks)
            )
        metafunc.parametrize("evidence_set", params)
