"""The registry of evidence kinds: for each, the ``pytest.param`` s a claim test is run over.

A claim test declares what can bear on it::

    @pytest.mark.evidence("paper", "weights", schemes=("rope",), columns=("prev", "D_head"))
    @pytest.mark.evidence_set("paper", "weights", "toy", "toy-grid")

:data:`KINDS` maps each kind to the function that turns such a marker and the run's
:class:`EvidenceOptions` into parameters (one per piece; ``evidence_set`` gives one per kind
holding every piece). A piece the claim is about but that cannot serve it (data folder absent,
a needed column missing, weights not on this machine, an opt-in run not asked for) still appears,
as a skipped parameter whose reason says exactly what is missing: nothing is parametrized away
silently, and a damaged input errors only in its own rows.

Why one module: the registry is the list of kinds; each builder is a dozen lines sharing the
options, the skip conventions and the per-process probe of weights.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from qkcore.errors import QKError
from qkcore.evidence.options import EvidenceOptions
from qkcore.evidence.paper_data import PaperData, resolve_paper_data
from qkcore.evidence.pieces import (
    ModelSet,
    PaperEvidence,
    PaperEvidenceSet,
    ToyEvidence,
    ToyGridEvidence,
    WeightsEvidence,
)
from qkcore.evidence.refs import SCHEME_FAMILY, EvidenceRef, evidence_params
from qkcore.models import PACKAGED, PAPER_MODELS, resolve_source

__all__ = [
    "KINDS",
    "SET_KINDS",
    "evidence_parameters",
    "evidence_set_parameters",
    "paper_data",
]

#: Free toy runs: one per scheme and seed.
TOY_SCHEMES = ("ape", "rope", "alibi")


def paper_data(option: str | None) -> tuple[PaperData | None, str]:
    """The released tables (``None`` when absent) and, then, the reason why.

    ``$QK_PAPER_DATA`` is read on every call and the tables are cached by the folder it
    resolves to, so a changed environment is never answered from an earlier call.
    """
    try:
        root = resolve_paper_data(option)
    except QKError as exc:
        return None, str(exc)
    if root is None:
        return None, (
            "paper data not given: pass --paper-data PATH or set QK_PAPER_DATA to the folder "
            "of the released tables (make sets it to ../shared/paper-data; "
            "python -m qkcore.evidence.fetch gets them)"
        )
    return _discover(root), ""


@cache
def _discover(root: Path) -> PaperData:
    return PaperData.discover(root)


def _skipped(value: Any, evidence_id: str, kind: str, reason: str) -> Any:
    return pytest.param(
        value, id=evidence_id, marks=[getattr(pytest.mark, kind), pytest.mark.skip(reason=reason)]
    )


def paper_params(options: EvidenceOptions, kwargs: Mapping[str, Any]) -> list:
    """``paper:<model>`` per model with a per-head table (``checkpoints=True``: with a released
    checkpoint series instead), filtered by ``schemes`` / ``models``; a missing ``columns``
    entry skips the model with the column named."""
    data, reason = paper_data(options.paper_data)
    if data is None:
        ref = EvidenceRef("paper", "unavailable", "unknown")
        return [_skipped(ref, ref.evidence_id, "paper", reason)]
    schemes, models = kwargs.get("schemes"), kwargs.get("models")
    columns = kwargs.get("columns", ())
    checkpoints = kwargs.get("checkpoints", False)
    if checkpoints and not data.checkpoint_models:
        ref = EvidenceRef("paper", "no-checkpoint-series", "unknown")
        why = f"{data.root} holds no <model>_ckpt_analysis.parquet: no checkpoint series to read"
        return [_skipped(ref, ref.evidence_id, "paper", why)]
    params = []
    for model in data.checkpoint_models if checkpoints else data.models:
        if models is not None and model not in models:
            continue
        scheme = data.scheme(model)
        if schemes is not None and scheme not in schemes:
            continue
        ref = EvidenceRef("paper", model, scheme)
        (param,) = evidence_params([ref])
        broken = data.checkpoint_problem(model) if checkpoints else data.problem(model)
        missing = (
            []
            if checkpoints or broken
            else [c for c in columns if c not in data.head_table(model).columns]
        )
        marks = list(param.marks)
        if checkpoints and not data.has_table("ckpt_analysis", model):
            broken = ""  # absent, not damaged: a skip, not an error
            marks.append(
                pytest.mark.skip(
                    reason=f"{ref.evidence_id}: only a checkpoint summary is released for it "
                    f"(no {model}_ckpt_analysis.parquet): no natural history to read"
                )
            )
        if missing:
            marks.append(
                pytest.mark.skip(
                    reason=f"{ref.evidence_id}: the published table has no column "
                    f"{', '.join(missing)} - this model's data cannot bear on the claim"
                )
            )
        params.append(
            pytest.param(PaperEvidence(ref, data, broken), id=ref.evidence_id, marks=marks)
        )
    return params


@dataclass(frozen=True)
class _Probed:
    """What collection needs to know of one weights spec, read once per process (a GGUF's
    metadata - its whole vocabulary - takes seconds to parse)."""

    spec: str
    name: str = ""
    scheme: str = "unknown"
    unresolved: str = ""  # resolve_source's message: the weights are not on this machine
    broken: str = ""  # the file is there but damaged: its own tests error
    available: bool = False
    reason: str = ""


@cache
def _probe(spec: str) -> _Probed:
    from qkcore.models.schemes import PAPER_MODEL_SCHEME, probe_scheme

    try:
        source = resolve_source(spec)
    except QKError as exc:
        scheme = PAPER_MODEL_SCHEME.get(spec, "unknown")
        return _Probed(spec, spec, scheme, unresolved=str(exc))
    broken = ""
    try:
        scheme = probe_scheme(source)
    except QKError as exc:  # a damaged file: its own tests error, never the session
        scheme, broken = "unknown", f"weights:{source.name}: {exc}"
    ok, reason = source.available()
    return _Probed(spec, source.name, scheme, broken=broken, available=ok, reason=reason)


def weights_params(options: EvidenceOptions, kwargs: Mapping[str, Any]) -> list:
    """Packaged models, the paper's seven (skipped with the fetch command when not cached) and
    every ``--model``; filtered by the marker's ``schemes``."""
    schemes = kwargs.get("schemes")
    params = []
    for spec in dict.fromkeys([*PACKAGED, *PAPER_MODELS, *options.models]):
        probed = _probe(spec)
        if probed.unresolved:
            if spec in options.models:
                raise pytest.UsageError(f"--model {spec}: {probed.unresolved}")
            ref = EvidenceRef("weights", spec, probed.scheme)
            piece = WeightsEvidence(
                ref, spec, options.weights_sweeps, available=False, forward=options.model_forward
            )
            params.append(_skipped(piece, ref.evidence_id, "weights", probed.unresolved))
            continue
        scheme, broken, ok = probed.scheme, probed.broken, probed.available
        if schemes is not None and scheme not in schemes and not broken and scheme != "unknown":
            continue
        ref = EvidenceRef("weights", probed.name, scheme)
        (param,) = evidence_params([ref])
        marks = list(param.marks)
        if not ok:
            marks.append(pytest.mark.skip(reason=f"{ref.evidence_id}: {probed.reason}"))
        elif scheme == "unknown" and not broken and schemes is not None:
            marks.append(
                pytest.mark.skip(
                    reason=f"{ref.evidence_id}: its positional scheme could not be read from its "
                    "config (architecture not in qkcore.models.architectures.ARCHITECTURES), so "
                    "it cannot bear on a scheme-specific claim"
                )
            )
        swept = [c for c in kwargs.get("columns", ()) if c.startswith(("dInd", "dICL"))]
        if ok and swept and not options.weights_sweeps:
            marks.append(
                pytest.mark.skip(
                    reason=f"{ref.evidence_id}: {', '.join(swept)} needs the per-head ablation "
                    "sweep - pass --weights-sweeps (SmolLM2: ~26 min more cold)"
                )
            )
        piece = WeightsEvidence(
            ref,
            spec,
            options.weights_sweeps,
            broken,
            available=ok,
            forward=options.model_forward,
            columns=tuple(kwargs["columns"]) if "columns" in kwargs else None,
        )
        params.append(pytest.param(piece, id=ref.evidence_id, marks=marks))
    return params


def toy_params(options: EvidenceOptions, kwargs: Mapping[str, Any]) -> list:
    """``toy-<regime>:<scheme>-s<seed>``: ``--toy-seeds`` free runs per scheme, trained here in
    the ``--toy-regime``."""
    from qkcore.models.toy.regimes import toy_regime

    regime = toy_regime(options.toy_regime)
    schemes = kwargs.get("schemes")
    params = []
    for scheme in TOY_SCHEMES:
        if schemes is not None and scheme not in schemes:
            continue
        for seed in range(options.toy_seeds):
            ref = EvidenceRef("toy", f"{scheme}-s{seed}", scheme, regime.name)
            (param,) = evidence_params([ref])
            piece = ToyEvidence(ref, regime.config(scheme, seed), options.device)
            params.append(pytest.param(piece, id=ref.evidence_id, marks=param.marks))
    return params


#: kind -> parameters of ``@pytest.mark.evidence(kind, ...)``.
KINDS: dict[str, Callable[[EvidenceOptions, Mapping[str, Any]], list]] = {
    "paper": paper_params,
    "weights": weights_params,
    "toy": toy_params,
}


def _model_set_param(options: EvidenceOptions, kind: str) -> Any:
    members, absent, families = [], [], set()
    for piece in KINDS[kind](options, {}):
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


def _paper_set_param(options: EvidenceOptions) -> Any:
    data, reason = paper_data(options.paper_data)
    if data is None:
        return _skipped(None, "paper:all-models", "paper", reason)
    # a table that cannot be read is left out of the set (its own tests say why)
    readable = [m for m in data.models if not data.problem(m)]
    refs = tuple(EvidenceRef("paper", m, data.scheme(m)) for m in readable)
    families = {SCHEME_FAMILY[r.scheme] for r in refs}
    marks = [
        pytest.mark.paper,
        *(getattr(pytest.mark, f) for f in sorted(families) if f != "unknown"),
    ]
    return pytest.param(PaperEvidenceSet(refs, data), id="paper:all-models", marks=marks)


def _toy_grid_param(options: EvidenceOptions) -> Any:
    from qkcore.models.toy.grid import GRID_SEEDS

    seeds = options.toy_grid_seeds
    wanted = options.toy_grid or seeds is not None
    seeds = GRID_SEEDS if seeds is None else seeds
    if seeds < 2:
        raise pytest.UsageError(f"--toy-grid-seeds must be >= 2 (rank tests); got {seeds}.")
    evidence = ToyGridEvidence(seeds, options.device, wanted=wanted, regime_spec=options.toy_regime)
    marks = [pytest.mark.toy]
    if not wanted:
        marks.append(
            pytest.mark.skip(
                reason="the toy grid is opt-in: pass --toy-grid (5 arms x 5 seeds, trained in "
                "the --toy-regime and cached) or --toy-grid-seeds N"
            )
        )
    elif evidence.left_out:
        why = "; ".join(f"{arm} {reason}" for arm, reason in evidence.left_out.items())
        marks.append(
            pytest.mark.skip(
                reason=f"{evidence.regime}: the §10 grid is paper-scale only in this regime, where "
                f"its constrained arms do not form as the paper's all did - {why} (measured: "
                f"{evidence.left_out_measured_by}). Every grid "
                "claim reads one of them, so nothing is trained: run --toy-grid --toy-regime "
                "paper (add --device cuda on a GPU)"
            )
        )
    return pytest.param(evidence, id=evidence.evidence_id, marks=marks)


#: kind -> the one parameter of ``@pytest.mark.evidence_set(kind, ...)``.
SET_KINDS: dict[str, Callable[[EvidenceOptions], Any]] = {
    "paper": _paper_set_param,
    "weights": lambda options: _model_set_param(options, "weights"),
    "toy": lambda options: _model_set_param(options, "toy"),
    "toy-grid": _toy_grid_param,
}


def _builder(registry: Mapping[str, Callable], kind: str, marker: str) -> Callable:
    if kind not in registry:
        raise pytest.UsageError(
            f"@pytest.mark.{marker}: kind {kind!r} is not one of {sorted(registry)} "
            "(the registry: qkcore.evidence.params)"
        )
    return registry[kind]


def evidence_parameters(options: EvidenceOptions, mark: pytest.Mark) -> list:
    """Parameters of an ``evidence`` marker: every kind it names, in order."""
    return [
        param
        for kind in mark.args
        for param in _builder(KINDS, kind, "evidence")(options, mark.kwargs)
    ]


def evidence_set_parameters(options: EvidenceOptions, mark: pytest.Mark) -> list:
    """Parameters of an ``evidence_set`` marker: one set per kind it names."""
    return [_builder(SET_KINDS, kind, "evidence_set")(options) for kind in mark.args]
