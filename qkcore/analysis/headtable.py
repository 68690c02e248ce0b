"""The per-head table of a model, with the paper's column names, cached by content.

Columns (one row per head, sorted by layer and head):

- ``layer, head, rank`` - rank is the numerical rank of M (singular values above
  ``1e-10 * max``);
- spectral metrics of :data:`qkcore.linalg.spectra.METRICS`;
- ``<m>_null_mean, <m>_null_std, <m>_z`` for m in :data:`qkcore.linalg.nulls.NULL_METRICS`
  (matched-Sigma null, ``null_draws`` draws, seed 0);
- behaviour ``prev, dup, ind`` (:mod:`qkcore.analysis.behaviour`);
- ``copying``: share of the OV circuit's nonzero eigenvalues with positive real part - the
  eigenvalues of ``W_E W_V W_O W_U`` are those of the k x k ``W_O (W_U W_E) W_V``;
- ``self_match``: for 2000 vocabulary tokens (seeded, from id ``min(1000, V/10)``), embeddings
  normalised as the model's first norm would (centred for LayerNorm, unit RMS), the mean over
  tokens of the row z-score of the diagonal of ``E M E^T``: how much a token's query prefers
  its own key over other tokens' keys;
- RoPE models: ``rope_imag_frac, freq_centroid, hi_freq_dir``;
- with ``TableSpec(ablations=True)``: ``dInd_rope`` (RoPE) or ``dICL_sym`` / ``dICL_anti``
  (others): the change of induction loss when the head's Im(M_t) terms, M_A or M_S are
  removed (:mod:`qkcore.analysis.ablation`); with a screen, ``<column>_sequences`` too.

Model-level numbers (induction loss, ICL proxy) go to ``table.attrs``. Tables are cached on
disk keyed by the model's content key, the parameters and the source of the modules that
compute them, so a code change rebuilds them and nothing stale is reused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from qkcore.analysis.behaviour import BehaviourSpec, model_behaviour, token_range
from qkcore.diskcache import cached_frame, source_digest
from qkcore.linalg.nulls import NULL_METRICS, matched_sigma_null, singular_values
from qkcore.linalg.rope import phase_features
from qkcore.linalg.spectra import spectral_metrics

__all__ = [
    "COMPARE_TOLERANCE",
    "TableSpec",
    "cached_head_table",
    "code_version",
    "compare_tables",
    "copying_scores",
    "head_table",
    "self_match_scores",
]

#: Modules whose source shapes a table's numbers (part of its cache key).
_SOURCES = (
    "linalg/kernels",
    "linalg/operators",
    "linalg/spectra",
    "linalg/nulls",
    "linalg/rope",
    "models/hooks",
    "models/loaded",
    "models/pretrained",
    "models/toy/view",
    "analysis/behaviour",
    "analysis/ablation",
    "analysis/headtable",
)


def code_version() -> str:
    """Hash of the source of every module that shapes a table's numbers."""
    return source_digest(*_SOURCES)


@dataclass(frozen=True)
class TableSpec:
    null_draws: int = 300
    null_seed: int = 0
    self_match_tokens: int = 2000
    behaviour: BehaviourSpec = field(default_factory=BehaviourSpec)
    #: Per-head ablation sweeps on the induction task (one forward pass per head and kind):
    #: cheap for toys, minutes to hours for pretrained models, so off unless asked for.
    ablations: bool = False
    ablation_sequences: int = 50
    #: None: every head ablated on all ``ablation_sequences``. An int n: every head on the
    #: first n sequences, then the 10 largest effects again on all of them
    #: (:func:`qkcore.analysis.ablation.screened_sweep`; a ``<column>_sequences`` column says
    #: which).
    ablation_screen_sequences: int | None = None

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


def _numerical_rank(ops) -> np.ndarray:
    s = singular_values(ops)
    return (s > 1e-10 * s[..., :1]).sum(axis=-1)


def copying_scores(model) -> np.ndarray:
    """Share of eigenvalues of ``W_O W_U W_E W_V`` (per head, k x k) with positive real part."""
    import torch

    bridge = model.bridge
    with torch.no_grad():
        W_E = bridge.W_E.double()
        W_U = bridge.W_U.double()
        UE = (W_U @ W_E).numpy()  # [d, d]
        W_V = bridge.W_V.double().numpy()  # [L, H_kv, d, k]
        W_O = bridge.W_O.double().numpy()  # [L, H, k, d]
    W_V = np.repeat(W_V, model.n_heads // W_V.shape[1], axis=1)
    core = W_O @ UE @ W_V  # [L, H, k, k]
    eig = np.linalg.eigvals(core)
    radius = np.abs(eig).max(axis=-1, keepdims=True)
    nonzero = np.abs(eig) > 1e-10 * radius
    return ((eig.real > 0) & nonzero).sum(axis=-1) / nonzero.sum(axis=-1)


def self_match_scores(model, n_tokens: int, seed: int) -> np.ndarray:
    import torch

    rng = np.random.default_rng(seed)
    low, _ = token_range(model)
    ids = rng.choice(
        np.arange(low, model.d_vocab), size=min(n_tokens, model.d_vocab - low), replace=False
    )
    with torch.no_grad():
        E = model.bridge.W_E.double().numpy()[ids]
    if model.norm == "ln":
        E = E - E.mean(axis=1, keepdims=True)
    E = E / np.sqrt((E**2).mean(axis=1, keepdims=True))
    ops = model.factors
    S = (E @ ops.A) @ np.swapaxes(E @ ops.B, -1, -2)  # [L, H, n, n]
    diag = np.diagonal(S, axis1=-2, axis2=-1)
    z = (diag - S.mean(axis=-1)) / S.std(axis=-1)
    return z.mean(axis=-1)


def _ablation_columns(model, spec: TableSpec) -> dict[str, np.ndarray]:
    """``dInd_rope`` (RoPE: Im(M_t) dropped) or ``dICL_sym`` / ``dICL_anti`` (M_A / M_S removed):
    change of the induction loss on ``ablation_sequences`` ``[BOS, r, r]`` sequences."""
    from qkcore.analysis.ablation import ablation_sweep, screened_sweep
    from qkcore.analysis.behaviour import repeated_random_tokens

    b = spec.behaviour
    low, vocab = token_range(model)
    bos = getattr(model.tokenizer, "bos_token_id", None)
    tokens = repeated_random_tokens(
        spec.ablation_sequences, b.length, vocab, bos, b.seed + 1, low=low
    )
    if model.rotary is not None:
        wanted = {"dInd_rope": "drop_imag"}
    else:
        wanted = {"dICL_sym": "keep_sym", "dICL_anti": "keep_antisym"}  # M_A / M_S removed
    columns: dict[str, np.ndarray] = {}
    for column, kind in wanted.items():
        if spec.ablation_screen_sequences is None:
            columns[column] = ablation_sweep(model, kind, tokens, b.length)
        else:
            delta, sequences = screened_sweep(
                model, kind, tokens, b.length, screen_sequences=spec.ablation_screen_sequences
            )
            columns[column] = delta
            columns[f"{column}_sequences"] = sequences
    return columns


def head_table(model, spec: TableSpec = TableSpec()) -> pd.DataFrame:
    """Build the per-head table of a loaded model (uncached; see :func:`cached_head_table`)."""
    ops = model.factors
    L, H = ops.batch_shape
    layer, head = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
    columns: dict[str, np.ndarray] = {"layer": layer, "head": head, "rank": _numerical_rank(ops)}
    metrics = spectral_metrics(ops)
    columns.update(metrics)
    null = matched_sigma_null(ops, n_draws=spec.null_draws, seed=spec.null_seed)
    for name in NULL_METRICS:
        columns[f"{name}_null_mean"] = null[name].mean
        columns[f"{name}_null_std"] = null[name].std
        columns[f"{name}_z"] = null[name].z(metrics[name])
    behaviour = model_behaviour(model, spec.behaviour)
    for name in ("prev", "dup", "ind"):
        columns[name] = behaviour[name]
    columns["copying"] = copying_scores(model)
    columns["self_match"] = self_match_scores(model, spec.self_match_tokens, spec.null_seed)
    if model.rotary is not None:
        columns.update(phase_features(ops.A, ops.B, model.rotary))
    if spec.ablations and model.causal:
        columns.update(_ablation_columns(model, spec))
    table = pd.DataFrame({k: np.asarray(v).reshape(-1) for k, v in columns.items()})
    table.attrs = {
        "model": model.name,
        "scheme": model.scheme,
        "norm": model.norm,
        **{k: float(v) for k, v in behaviour.items() if np.ndim(v) == 0},
    }
    return table


def cached_head_table(model, spec: TableSpec = TableSpec()) -> pd.DataFrame:
    """:func:`head_table`, cached on disk by (model content, spec, code version)."""
    key = f"table-{model.content_key}-{spec.key()}-{code_version()}"
    return cached_frame(key, lambda: head_table(model, spec))


#: Column -> largest absolute difference that still counts as "the same table" when a published
#: table is recomputed from the same weights. Deterministic spectral columns: float32 weights
#: analysed in float64 agree to ~1e-6, so 1e-3 only absorbs bf16 storage. Behaviour columns are
#: means over 200 x 64 attention weights on different random tokens: their Monte Carlo spread
#: is ~0.01, so 0.05 is 5 of those. Null means are over 300 draws with another seed: 0.01.
COMPARE_TOLERANCE = {
    "dir_frac": 1e-3,
    "D_head": 1e-3,
    "imag_mass": 1e-3,
    "henrici": 1e-3,
    "content_pos_frac": 1e-3,
    "spectral_radius": 1e-3,
    "rope_imag_frac": 1e-3,
    "freq_centroid": 1e-3,
    "hi_freq_dir": 1e-3,
    "prev": 0.05,
    "dup": 0.05,
    "ind": 0.05,
    "dir_frac_null_mean": 0.01,
    "D_head_null_mean": 0.01,
}


def compare_tables(published: pd.DataFrame, recomputed: pd.DataFrame) -> pd.DataFrame:
    """Column-by-column agreement of two per-head tables of one model (heads matched on
    layer/head): n, max absolute difference, Spearman rho, tolerance and whether it holds."""
    import scipy.stats

    merged = published.merge(recomputed, on=["layer", "head"], suffixes=("_pub", "_new"))
    rows = []
    for column, tol in COMPARE_TOLERANCE.items():
        if f"{column}_pub" not in merged or f"{column}_new" not in merged:
            continue
        a, b = merged[f"{column}_pub"].to_numpy(), merged[f"{column}_new"].to_numpy()
        diff = float(np.nanmax(np.abs(a - b)))
        rho = float(scipy.stats.spearmanr(a, b).statistic) if len(a) > 2 else float("nan")
        rows.append(
            {
                "column": column,
                "n": len(a),
                "max_abs_diff": diff,
                "spearman": rho,
                "tolerance": tol,
                "agrees": diff <= tol,
            }
        )
    return pd.DataFrame(rows)
