"""The built-in evidence kinds - ``paper``, ``weights``, ``toy`` - and what each offers a claim.

A claim declares what can bear on it (``@claim("S6a", evidence=("paper", "weights"),
schemes=("rope",), columns=("prev", "D_head"))``); for each kind it names, the kind's
``offers`` turn that :class:`~pytest_claims.kinds.EvidenceRequest` and the run's
:class:`~qkcore.evidence.options.EvidenceOptions` into one :class:`~pytest_claims.kinds.Offer`
per piece, and its ``sets`` into one offer holding every piece (``evidence_set``). A piece the
claim is about but that cannot serve it (data folder absent, a needed column missing, weights
not on this machine, an opt-in run not asked for) is still offered, with the exact reason it
is skipped: nothing is parametrized away silently, and a damaged input errors only in its own
rows. :data:`BUILTIN_KINDS` is the one list of the kinds this package ships.

Why one module: each kind's offers are a dozen lines sharing the options, the skip conventions
and the per-process probe of weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_claims.kinds import EvidenceKind, EvidenceRequest, Offer, Option, Tolerance
from pytest_claims.refs import ALL_MODELS, EvidenceRef
from qkcore.errors import QKError
from qkcore.evidence.families import scheme_marks
from qkcore.evidence.families import set_families as _families
from qkcore.evidence.options import EvidenceOptions, folder, grid_seeds, positive_int, torch_device

if TYPE_CHECKING:
    from qkcore.evidence.paper_data import PaperData

# The kinds are declared on import (their flags are added when pytest starts); what their
# offers compute with - pandas, torch, the pieces, the model sources - is imported only when a
# claim asks for evidence, so loading the plugin stays light.

__all__ = [
    "BUILTIN_KINDS",
    "PAPER",
    "TOY",
    "WEIGHTS",
    "paper_data",
    "paper_offers",
    "toy_offers",
    "weights_offers",
]

#: Free toy runs: one per scheme and seed.
TOY_SCHEMES = ("ape", "rope", "alibi")

_F32_UNIT = 2.0**-24
_F64_UNIT = 2.0**-53


def paper_data(option: str | None) -> tuple[PaperData | None, str]:
    """The released tables (``None`` when absent) and, then, the reason why.

    ``$QK_PAPER_DATA`` is read on every call and the tables are cached by the folder it
    resolves to, so a changed environment is never answered from an earlier call.
    """
    from qkcore.evidence.paper_data import resolve_paper_data

    try:
        root = resolve_paper_data(option)
    except QKError as exc:
        return None, str(exc)
    if root is None:
        return None, (
            "paper data not given: pass --claims-paper-data PATH or set QK_PAPER_DATA to the "
            "folder of the released tables (make sets it to ../shared/paper-data; "
            "python -m qkcore.evidence.fetch gets them)"
        )
    return _discover(root), ""


@cache
def _discover(root: Path) -> PaperData:
    from qkcore.evidence.paper_data import PaperData

    return PaperData.discover(root)


def paper_offers(options: EvidenceOptions, request: EvidenceRequest) -> list[Offer]:
    """``paper:<model>`` per model with a per-head table (``checkpoints``: with a released
    checkpoint series instead), filtered by ``schemes`` / ``models``; a missing ``columns``
    entry skips the model with the column named."""
    from qkcore.evidence.pieces import PaperEvidence

    data, reason = paper_data(options.paper_data)
    if data is None:
        return [Offer(EvidenceRef("paper", "unavailable"), skip=reason)]
    if request.checkpoints and not data.checkpoint_models:
        why = f"{data.root} holds no <model>_ckpt_analysis.parquet: no checkpoint series to read"
        return [Offer(EvidenceRef("paper", "no-checkpoint-series"), skip=why)]
    offers = []
    for model in data.checkpoint_models if request.checkpoints else data.models:
        if request.models is not None and model not in request.models:
            continue
        scheme = data.scheme(model)
        if request.schemes is not None and scheme not in request.schemes:
            continue
        ref = EvidenceRef("paper", model, scheme)
        broken = data.checkpoint_problem(model) if request.checkpoints else data.problem(model)
        missing = (
            []
            if request.checkpoints or broken
            else [c for c in request.columns if c not in data.head_table(model).columns]
        )
        skip = ""
        if request.checkpoints and not data.has_table("ckpt_analysis", model):
            broken = ""  # absent, not damaged: a skip, not an error
            skip = (
                f"{ref.evidence_id}: only a checkpoint summary is released for it "
                f"(no {model}_ckpt_analysis.parquet): no natural history to read"
            )
        if missing:
            skip = (
                f"{ref.evidence_id}: the published table has no column "
                f"{', '.join(missing)} - this model's data cannot bear on the claim"
            )
        offers.append(Offer(ref, PaperEvidence(ref, data, broken), skip=skip))
    return offers


def paper_set(options: EvidenceOptions) -> Offer:
    """``paper:all-models``: every model with a readable published per-head table."""
    from qkcore.evidence.pieces import PaperEvidenceSet

    ref = EvidenceRef("paper", ALL_MODELS)
    data, reason = paper_data(options.paper_data)
    if data is None:
        return Offer(ref, skip=reason)
    # a table that cannot be read is left out of the set (its own tests say why)
    readable = [m for m in data.models if not data.problem(m)]
    refs = tuple(EvidenceRef("paper", m, data.scheme(m)) for m in readable)
    return Offer(ref, PaperEvidenceSet(refs, data, ref), marks=_families(refs))


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
    from qkcore.models.sources import resolve_source

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


def weights_offers(options: EvidenceOptions, request: EvidenceRequest) -> list[Offer]:
    """Packaged models, the paper's seven (skipped with the fetch command when not cached) and
    every ``--claims-model``; filtered by the request's ``schemes``."""
    from qkcore.evidence.pieces import WeightsEvidence
    from qkcore.models.sources import PACKAGED, PAPER_MODELS

    schemes = request.schemes
    offers = []
    for spec in dict.fromkeys([*PACKAGED, *PAPER_MODELS, *options.models]):
        probed = _probe(spec)
        if probed.unresolved:
            if spec in options.models:
                raise QKError(f"--claims-model {spec}: {probed.unresolved}")
            ref = EvidenceRef("weights", spec, probed.scheme)
            piece = WeightsEvidence(
                ref, spec, options.weights_sweeps, available=False, forward=options.model_forward
            )
            offers.append(Offer(ref, piece, skip=probed.unresolved))
            continue
        scheme, broken, ok = probed.scheme, probed.broken, probed.available
        if schemes is not None and scheme not in schemes and not broken and scheme != "unknown":
            continue
        ref = EvidenceRef("weights", probed.name, scheme)
        skip = ""
        swept = [c for c in request.columns if c.startswith(("dInd", "dICL"))]
        if not ok:
            skip = f"{ref.evidence_id}: {probed.reason}"
        elif scheme == "unknown" and not broken and schemes is not None:
            skip = (
                f"{ref.evidence_id}: its positional scheme could not be read from its config "
                "(architecture not in qkcore.models.architectures.ARCHITECTURES), so it cannot "
                "bear on a scheme-specific claim"
            )
        elif swept and not options.weights_sweeps:
            skip = (
                f"{ref.evidence_id}: {', '.join(swept)} needs the per-head ablation sweep - "
                "pass --claims-weights-sweeps (SmolLM2: ~26 min more cold)"
            )
        piece = WeightsEvidence(
            ref,
            spec,
            options.weights_sweeps,
            broken,
            available=ok,
            forward=options.model_forward,
            columns=request.columns if request.declares_columns else None,
        )
        offers.append(Offer(ref, piece, skip=skip))
    return offers


def toy_offers(options: EvidenceOptions, request: EvidenceRequest) -> list[Offer]:
    """``toy-<regime>:<scheme>-s<seed>``: ``--claims-toy-seeds`` free runs per scheme, trained
    here in the ``--claims-toy-regime``."""
    from qkcore.evidence.pieces import ToyEvidence
    from qkcore.models.toy.regimes import toy_regime

    regime = toy_regime(options.toy_regime)
    offers = []
    for scheme in TOY_SCHEMES:
        if request.schemes is not None and scheme not in request.schemes:
            continue
        for seed in range(options.toy_seeds):
            ref = EvidenceRef("toy", scheme, scheme, regime=regime.name, seed=seed)
            offers.append(Offer(ref, ToyEvidence(ref, regime.config(scheme, seed), options.device)))
    return offers


def _model_set(kind: str, offers: list[Offer], regime: str = "") -> Offer:
    """Every offered piece of a kind that is there and readable, as one set."""
    from qkcore.evidence.pieces import ModelSet

    members, absent = [], []
    for offer in offers:
        if offer.skip or getattr(offer.piece, "broken", ""):
            absent.append(offer.ref.evidence_id)  # absent or unreadable: not a member
            continue
        members.append(offer.piece)
    ref = EvidenceRef(kind, ALL_MODELS, regime=regime if members else "")
    families = _families([m.ref for m in members])
    return Offer(ref, ModelSet(ref, tuple(members), tuple(absent)), marks=families)


def weights_set(options: EvidenceOptions) -> Offer:
    """``weights:all-models``: every pretrained model this machine has."""
    return _model_set("weights", weights_offers(options, EvidenceRequest()))


def toy_set(options: EvidenceOptions) -> Offer:
    """``toy-<regime>:all-models``: every free toy run of the regime."""
    from qkcore.models.toy.regimes import toy_regime

    regime = toy_regime(options.toy_regime).name
    return _model_set("toy", toy_offers(options, EvidenceRequest()), regime)


def toy_grid(options: EvidenceOptions) -> Offer:
    """``toy-<regime>:grid-n<seeds>``: the §10 grid, opt-in (``--claims-toy-grid``)."""
    from qkcore.evidence.pieces import ToyGridEvidence
    from qkcore.models.toy.grid import GRID_SEEDS

    seeds = options.toy_grid_seeds
    wanted = options.toy_grid or seeds is not None
    seeds = GRID_SEEDS if seeds is None else seeds
    if seeds < 2:
        raise QKError(f"--claims-toy-grid-seeds must be >= 2 (rank tests); got {seeds}.")
    evidence = ToyGridEvidence(seeds, options.device, wanted=wanted, regime_spec=options.toy_regime)
    skip = ""
    if not wanted:
        skip = (
            "the toy grid is opt-in: pass --claims-toy-grid (5 arms x 5 seeds, trained in the "
            "--claims-toy-regime and cached) or --claims-toy-grid-seeds N"
        )
    elif evidence.left_out:
        why = "; ".join(f"{arm} {reason}" for arm, reason in evidence.left_out.items())
        skip = (
            f"{evidence.regime}: the §10 grid is paper-scale only in this regime, where its "
            f"constrained arms do not form as the paper's all did - {why} (measured: "
            f"{evidence.left_out_measured_by}). Every grid claim reads one of them, so nothing is "
            "trained: run --claims-toy-grid --claims-toy-regime paper (add --claims-device cuda "
            "on a GPU)"
        )
    return Offer(evidence.ref, evidence, skip=skip, marks=())


PAPER = EvidenceKind(
    name="paper",
    settings=EvidenceOptions.checked,
    label="paper data",
    offers=paper_offers,
    sets={"paper": paper_set},
    options=(
        Option(
            "--claims-paper-data",
            dict(
                default=None,
                type=folder,
                help="folder of the paper's released tables (default: $QK_PAPER_DATA); "
                "without it the paper: tests skip",
            ),
        ),
    ),
    id_format="paper:<model>",
    tolerance=Tolerance(
        rtol=32 * 2**17 * _F64_UNIT,
        derivation="the released tables are read as float64 and every statistic is a sum or "
        "rank over at most 2^17 terms: a reordered sum moves by at most n u64 relative "
        "(u64 = 2^-53), times 32 for the p(n) factors of BLAS bounds -> 4.7e-10",
    ),
    rerun="--claims-paper-data ../shared/paper-data",
    marks=scheme_marks,
)
WEIGHTS = EvidenceKind(
    name="weights",
    settings=EvidenceOptions.checked,
    label="recomputed weights",
    offers=weights_offers,
    sets={"weights": weights_set},
    options=(
        Option(
            "--claims-model",
            dict(
                action="append",
                dest="claims_models",
                default=[],
                metavar="SPEC",
                help="add a model (hub name, local folder or .gguf path; repeatable) to every "
                "claim that takes weights evidence",
            ),
        ),
        Option(
            "--claims-model-forward",
            dict(
                default="auto",
                choices=("auto", "transformer-lens", "transformers-hooks", "none"),
                help="forward door of the weights models: auto (TransformerBridge where it "
                "boots, else hooks on the transformers model), one of them, or none (weights "
                "door only: the spectral claims run, the forward-pass claims skip)",
            ),
        ),
        Option(
            "--claims-weights-sweeps",
            dict(
                action="store_true",
                help="give pretrained per-head tables the exact per-head ablation sweep (every "
                "head on all 50 sequences): dInd_rope / dICL_* columns (SmolLM2: ~26 min more "
                "cold); off by default",
            ),
        ),
    ),
    id_format="weights:<model>",
    tolerance=Tolerance(
        rtol=2 * 30 * 576 * _F32_UNIT,
        derivation="behaviour columns come from a float32 forward pass whose kernels depend on "
        "the CPU (AVX-512, AVX2, default): each of L layers adds at most d u32 relative "
        "(first-order bound of a d-term dot product, u32 = 2^-24), L d = 30 x 576 for SmolLM2, "
        "the deepest default model, times 2 for the softmax and the statistic on top -> 2.1e-3",
    ),
    primary=False,
    marks=scheme_marks,
)
TOY = EvidenceKind(
    name="toy",
    settings=EvidenceOptions.checked,
    label="toys",
    offers=toy_offers,
    sets={"toy": toy_set, "toy-grid": toy_grid},
    options=(
        Option(
            "--claims-toy-regime",
            dict(
                default="cpu",
                metavar="SPEC",
                help="training regime of the toys: 'cpu' (default, the measured CPU regime), "
                "'paper' (the §10 protocol; ~30 min of one core per run on CPU), or either with "
                "changed fields, e.g. 'cpu:lr=0.003,d_model=128,d_head=32'; evidence ids carry "
                "it (toy-cpu:rope-s0)",
            ),
        ),
        Option(
            "--claims-toy-seeds",
            dict(
                type=positive_int,
                default=8,
                help="seeds per scheme of the free toy runs (toy-<regime>:<scheme>-s<seed>), "
                "judged as one population per scheme (7 of 8 must agree); default 8",
            ),
        ),
        Option(
            "--claims-toy-grid",
            dict(
                action="store_true",
                help="train (or read from the cache) the §10 grid on toys: 5 arms x 5 seeds "
                "(toy-<regime>:grid-n5 evidence), off by default; the cpu regime leaves its "
                "constrained arms to paper scale, so use it with --claims-toy-regime paper (~9 h "
                "on 2 CPU cores; --claims-device cuda on a GPU)",
            ),
        ),
        Option(
            "--claims-toy-grid-seeds",
            dict(
                type=grid_seeds,
                default=None,
                metavar="N",
                help="seeds per arm of the toy grid (implies --claims-toy-grid); default 5, the "
                "paper's n",
            ),
        ),
        Option(
            "--claims-device",
            dict(
                default="cpu",
                type=torch_device,
                help="torch device for toy training (e.g. cuda where present); default cpu",
            ),
        ),
    ),
    id_format="toy-<regime>:<scheme>-s<seed> (population: -n<seeds>)",
    primary=False,
    marks=scheme_marks,
)
#: The kinds this package ships, in report order (the one list of them).
BUILTIN_KINDS: tuple[EvidenceKind, ...] = (PAPER, WEIGHTS, TOY)
