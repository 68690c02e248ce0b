"""Pieces of evidence: what a claim test receives, and what must be built before it can run.

Every piece answers the :class:`~qkcore.evidence.tasks.Evidence` protocol - an id
(``paper:gpt2``, ``weights:smollm2-135m``, ``toy-cpu:rope-s1``, ``toy-cpu:all-models``, ...),
its kind and regime - and gives what it can (``head_table()``, ``history()``, ``model()``,
``grid()``, ``tables()``). Each piece also lists its :class:`~qkcore.evidence.tasks.BuildTask` s:
the slow, cached computations (a dequantized model and its table, a toy run, its table and
history) that the preparation phase runs before the tests, so that tests only read caches.

Loads are memoised per process: every test of one xdist worker shares one loaded model.

Why one module: the six kinds of piece share the protocol, the build-task type and the
per-process memo of loaded models and tables; split, each would import the others' memos.

Example::

    piece = WeightsEvidence(EvidenceRef("weights", "smollm2-135m", "rope"), "smollm2-135m")
    [task.label for task in piece.build_tasks()]   # ['weights:smollm2-135m table']
    piece.head_table()                             # DataFrame, 270 rows (cached on disk)
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import pandas as pd

from pytest_claims.mutations import HARNESS_OPS, Mutation
from pytest_claims.refs import ALL_MODELS, EvidenceRef
from qkcore.analysis.headtable import TableSpec, forward_column
from qkcore.errors import ForwardUnavailable, QKError
from qkcore.evidence.mutations import check_tables, mutated_tables
from qkcore.evidence.paper_data import PaperData
from qkcore.evidence.tasks import BuildTask
from qkcore.models import LoadedModel, load_model
from qkcore.models.toy.model import ToyConfig

__all__ = [
    "WEIGHTS_TABLE",
    "WEIGHTS_TABLE_WITH_SWEEPS",
    "ModelSet",
    "PaperEvidence",
    "PaperEvidenceSet",
    "ToyEvidence",
    "ToyGridEvidence",
    "WeightsEvidence",
]


@dataclass(frozen=True)
class PaperEvidence:
    """One model's published tables (nothing to build: they are read as released)."""

    ref: EvidenceRef
    data: PaperData
    broken: str = ""  # why the table cannot be read: only this evidence's tests error

    regime = "paper"

    @property
    def evidence_id(self) -> str:
        return self.ref.evidence_id

    def head_table(self) -> pd.DataFrame:
        if self.broken:
            raise QKError(self.broken)
        return self.data.head_table(self.ref.model)

    def history(self) -> pd.DataFrame:
        """The released checkpoint series in the common form (:mod:`qkcore.analysis.history`):
        ``ckpt_analysis``, with what it lacks read from ``ckpt_summary`` where that has it;
        columns neither has are named in ``attrs["missing"]``."""
        from qkcore.analysis.history import paper_history

        tables = {
            kind: self.data.checkpoint_table(self.ref.model, kind)
            for kind in ("ckpt_analysis", "ckpt_summary")
            if self.data.has_table(kind, self.ref.model)
        }
        return paper_history(tables.get("ckpt_analysis"), tables.get("ckpt_summary"))

    def build_tasks(self) -> list[BuildTask]:
        return []

    def mutated(self, *mutations: Mutation, name: str = "") -> PaperEvidence | None:
        """This model's tables changed by ``mutations`` (:mod:`pytest_claims.mutations`),
        marked ``~name``; None where none of them touches this model. No mutations: the tables
        as they are, re-marked; a lever: marked, its tables left to the harness."""
        if mutations and not any(
            m.table != "run" and fnmatch.fnmatchcase(self.ref.model, m.match) for m in mutations
        ):
            check_tables(mutations)
            return None
        return _mutated(self, mutations, name)


@dataclass(frozen=True)
class PaperEvidenceSet:
    """Every model with a readable published per-head table (multi-model claims)."""

    refs: tuple[EvidenceRef, ...]
    data: PaperData
    ref: EvidenceRef = EvidenceRef("paper", ALL_MODELS)  # noqa: RUF009 - frozen, immutable

    regime = "paper"

    @property
    def evidence_id(self) -> str:
        return self.ref.evidence_id

    def tables(self) -> dict[EvidenceRef, pd.DataFrame]:
        return {ref: self.data.head_table(ref.model) for ref in self.refs}

    def grid(self) -> dict:
        """Main cells of the released §10 grid: ``{arm: [GridRun]}``."""
        return _paper_grid(self.data)

    def build_tasks(self) -> list[BuildTask]:
        return []

    def mutated(self, *mutations: Mutation, name: str = "") -> PaperEvidenceSet:
        """Every model's tables changed by ``mutations`` (each where it matches), marked
        ``~name``."""
        return _mutated(self, mutations, name)


def _mutated(piece: Any, mutations: tuple[Mutation, ...], name: str) -> Any:
    """``piece`` marked ``~name`` on its tables changed by ``mutations`` (a lever, whose amount
    the harness searches, leaves them as they are)."""
    ref = replace(piece.ref, mutation=name or (mutations[0].name if mutations else ""))
    if not mutations or mutations[0].op in HARNESS_OPS:
        return replace(piece, ref=ref)
    return replace(piece, ref=ref, data=mutated_tables(piece.data, mutations))


@cache
def _paper_grid(data: PaperData) -> dict:
    from qkcore.analysis.gridruns import paper_grid

    return paper_grid(data)


#: Pretrained tables without the ablation sweep by default; with ``--claims-weights-sweeps`` they
#: carry the full exact sweep: every head on all 50 sequences (SmolLM2: ~26 min on 2 cores with the
#: suffix engine - ``python benchmarks/bench_sweep.py``; too long for the default run). No
#: screen: a 4-sequence estimate's noise sits at S8b's 0.01 cut.
WEIGHTS_TABLE = TableSpec()
WEIGHTS_TABLE_WITH_SWEEPS = TableSpec(ablations=True)


@dataclass(frozen=True)
class WeightsEvidence:
    """A model whose weights are on this machine; loaded once per process on first use."""

    ref: EvidenceRef
    spec: str
    sweeps: bool = False  # --claims-weights-sweeps: the table carries the per-head ablation sweep
    broken: str = ""  # why the weights cannot be read: only this evidence's tests error
    available: bool = True  # False: skipped (not on this machine); nothing to build
    forward: str = "auto"  # the forward door asked for (load_model's ``forward``)
    #: the columns the claim declared (None: undeclared) - a table without its forward
    #: columns (forward door closed) serves only a claim that declared weight columns alone
    columns: tuple[str, ...] | None = None

    regime = "pretrained"

    @property
    def evidence_id(self) -> str:
        return self.ref.evidence_id

    def model(self) -> LoadedModel:
        if self.broken:
            raise QKError(self.broken)
        return _load(self.spec, self.forward)

    def head_table(self) -> pd.DataFrame:
        """The recomputed per-head table (paper's columns), cached on disk by content.

        With the forward door closed the table has the weight columns only; a claim that reads
        forward columns, or does not declare its columns, is then refused with the reason
        (:class:`~qkcore.errors.ForwardUnavailable`: reported as skipped)."""
        if self.broken:
            raise QKError(self.broken)
        table = _table(self.spec, self.sweeps, self.forward)
        closed = table.attrs.get("forward_closed")
        if closed:
            if self.columns is None:
                why = "this claim does not declare the columns it reads (a forward pass may be one)"
            else:
                needed = [c for c in self.columns if forward_column(c)]
                why = f"this claim reads {', '.join(needed)}, from a forward pass" if needed else ""
            if why:
                raise ForwardUnavailable(f"{closed}; {why}")
        return table

    def build_tasks(self) -> list[BuildTask]:
        if self.broken or not self.available:
            return []
        # a model not measured (_TABLE_SECONDS) is guessed at SmolLM2's cost (2.6 GiB alone,
        # benchmarks/bench_table_memory.py); the full sweep adds ~1600 s (SmolLM2,
        # benchmarks/bench_sweep.py)
        cost = _TABLE_SECONDS.get(self.ref.model, _TABLE_SECONDS["smollm2-135m"])
        cost += 1600.0 if self.sweeps else 0.0
        return [
            BuildTask(
                key=("weights-table", self.spec, self.sweeps, self.forward),
                label=f"{self.evidence_id} table",
                fn=build_weights_table,
                args=(self.spec, self.sweeps, self.forward),
                cost=cost,
                memory_gb=3.0,
            )
        ]


# Expected seconds of a build, for the order and the tail rule (qkcore/engine/order.py) and the
# progress line's estimate: their ratios matter more than their scale, so all are one cold
# `make report`'s wall seconds, two builds at a time beside the tests (821b821, 2026-12-07,
# benchmarks/cold_profile.py; the VM's clock has varied up to 2.5x, the ratios far less).

#: a toy build (run, table and history) by scheme: measured RoPE 46-61, APE 35-49, ALiBi 27-32
#: (the first two ALiBi 64-74 beside the tests' start)
_TOY_SECONDS = {"rope": 55.0, "ape": 40.0, "alibi": 30.0}

#: a packaged model's per-head table: measured SmolLM2 188, MiniLM 31
_TABLE_SECONDS = {"smollm2-135m": 190.0, "minilm-l6": 31.0}


@cache
def _load(spec: str, forward: str = "auto") -> LoadedModel:
    return load_model(spec, forward=forward)


@cache
def _table(spec: str, sweeps: bool, forward: str = "auto") -> pd.DataFrame:
    from qkcore.analysis.headtable import cached_head_table

    spec_ = WEIGHTS_TABLE_WITH_SWEEPS if sweeps else WEIGHTS_TABLE
    return cached_head_table(_load(spec, forward), spec_)


def build_weights_table(spec: str, sweeps: bool, forward: str = "auto") -> None:
    """Preparation: load (dequantize) a model and build its per-head table into the cache."""
    _table(spec, sweeps, forward)


@dataclass(frozen=True)
class ToyEvidence:
    """A free toy run trained here (cached by config and code); loaded on first use."""

    ref: EvidenceRef
    config: ToyConfig
    device: str = "cpu"

    @property
    def evidence_id(self) -> str:
        return self.ref.evidence_id

    @property
    def regime(self) -> str:
        return f"toy-{self.ref.regime}"

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
        return _toy_table(self.config, self.device)

    def build_tasks(self) -> list[BuildTask]:
        return [
            BuildTask(
                key=("toy", self.config, self.device),
                label=f"{self.evidence_id} run, table and history",
                fn=build_toy,
                args=(self.config, self.device),
                cost=_TOY_SECONDS[self.config.scheme],
                memory_gb=1.0,
                device=self.device,
            )
        ]


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


@cache
def _toy_table(config: ToyConfig, device: str) -> pd.DataFrame:
    from qkcore.analysis.headtable import cached_head_table

    return cached_head_table(_toy_loaded(config, device), TableSpec(ablations=True))


def build_toy(config: ToyConfig, device: str) -> None:
    """Preparation: train (or read) a toy run, then its table and natural history."""
    _toy_table(config, device)
    _toy_history(config, device)


@dataclass(frozen=True)
class ModelSet:
    """Every available piece of one evidence kind (``weights`` or free ``toy`` runs) as a set:
    the unit of a multi-model claim. ``absent`` names the pieces this machine lacks."""

    ref: EvidenceRef  # kind:all-models (toys: of the run's one regime)
    members: tuple
    absent: tuple[str, ...] = ()

    @property
    def evidence_id(self) -> str:
        return self.ref.evidence_id

    @property
    def regime(self) -> str:
        regimes = sorted({m.regime for m in self.members})
        return "+".join(regimes) or "none"

    def tables(self) -> dict[EvidenceRef, pd.DataFrame]:
        """Each member's table; a weights model whose forward door is closed is left out (the
        set claims compare behaviour across models), unless every member is: then the set is
        refused with the reasons."""
        tables, closed = {}, []
        for member in self.members:
            try:
                tables[member.ref] = member.head_table()
            except ForwardUnavailable as exc:
                closed.append(str(exc))
        if closed and not tables:
            raise ForwardUnavailable("; ".join(closed))
        return tables

    def build_tasks(self) -> list[BuildTask]:
        return [task for member in self.members for task in member.build_tasks()]


@dataclass(frozen=True)
class ToyGridEvidence:
    """The §10 grid trained here (``--claims-toy-grid``) in the ``--claims-toy-regime``,
    ``seeds`` per arm."""

    seeds: int
    device: str = "cpu"
    wanted: bool = True  # False: opt-in and not asked for (skipped; nothing to build)
    regime_spec: str = "cpu"

    @property
    def regime(self) -> str:
        return _regime(self.regime_spec).evidence_prefix

    @property
    def ref(self) -> EvidenceRef:
        name = _regime(self.regime_spec).name
        return EvidenceRef("toy", "grid", regime=name, population=self.seeds)

    @property
    def evidence_id(self) -> str:
        return self.ref.evidence_id

    @property
    def left_out(self) -> dict[str, str]:
        """Arms this regime leaves to the paper's scale, each with the measurement why."""
        return dict(_regime(self.regime_spec).grid_left_out)

    @property
    def left_out_measured_by(self) -> str:
        return _regime(self.regime_spec).grid_measured_by

    def configs(self) -> dict[str, list[ToyConfig]]:
        from qkcore.models.toy.grid import grid_configs

        return grid_configs(self.seeds, **_regime(self.regime_spec).overrides)

    def grid(self) -> dict:
        return _toy_grid(self)

    def build_tasks(self) -> list[BuildTask]:
        if not self.wanted or self.left_out:  # skipped: see _toy_grid_param
            return []
        return [
            BuildTask(
                key=("toy-run", config, self.device),  # the run only: not a free toy's task
                label=f"{self.regime}:grid {config.label}",
                fn=build_grid_run,
                args=(config, self.device),
                cost=400.0,
                memory_gb=1.0,
                device=self.device,
            )
            for configs in self.configs().values()
            for config in configs
        ]


def _regime(spec: str):
    from qkcore.models.toy.regimes import toy_regime

    return toy_regime(spec)


@cache
def _toy_grid(evidence: ToyGridEvidence) -> dict:
    from qkcore.analysis.gridruns import toy_grid

    return toy_grid(evidence.configs(), device=evidence.device)


def build_grid_run(config: ToyConfig, device: str) -> None:
    """Preparation: train (or read) one run of the §10 grid."""
    _toy_run(config, device)
