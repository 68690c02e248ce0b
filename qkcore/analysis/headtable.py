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
disk keyed by the model's content key and the parameters; the cache adds
:func:`qkcore.diskcache.code_digest`, so a code change rebuilds them and nothing stale is
reused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from qkcore.analysis.behaviour import BehaviourSpec, model_behaviour, token_range
from qkcore.diskcache import cached_frame
from qkcore.linalg.nulls import NULL_METRICS, matched_sigma_null, singular_values
from qkcore.linalg.rope import phase_features
from qkcore.linalg.spectra import METRICS, spectral_metrics

__all__ = [
    "FORWARD_COLUMNS",
    "TableSpec",
    "cached_head_table",
    "copying_scores",
    "forward_column",
    "head_table",
    "self_match_scores",
    "weight_columns",
]


#: Columns that need a forward pass: behaviour, and the ablation sweeps (``<column>_sequences``
#: too). A model whose forward door is closed has a table without them.
FORWARD_COLUMNS = (
    "prev",
    "dup",
    "ind",
    "dInd_rope",
    "dICL_sym",
    "dICL_anti",
    "dCE_sym",
    "dCE_anti",
)


def forward_column(name: str) -> bool:
    """Whether column ``name`` needs a forward pass."""
    return name.removesuffix("_sequences") in FORWARD_COLUMNS


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


def copying_scores(model, vocab_chunk: int = 8192) -> np.ndarray:
    """Share of eigenvalues of ``W_O W_U W_E W_V`` (per head, k x k) with positive real part.

    ``W_U W_E`` (``[d, d]``) is summed over vocabulary chunks in float64 and the heads are taken
    one layer at a time, so no float64 copy of a whole embedding or of every ``W_O`` is made.
    """
    import torch

    bridge = model.bridge
    with torch.no_grad():
        W_E, W_U = bridge.W_E, bridge.W_U  # [V, d], [d, V]
        UE = np.zeros((W_U.shape[0], W_E.shape[1]))
        for start in range(0, W_E.shape[0], vocab_chunk):
            rows = slice(start, start + vocab_chunk)
            UE += (W_U[:, rows].double() @ W_E[rows].double()).numpy()
        scores = np.empty((model.n_layers, model.n_heads))
        for layer in range(model.n_layers):
            W_V = bridge.W_V[layer].double().numpy()  # [H_kv, d, k]
            W_O = bridge.W_O[layer].double().numpy()  # [H, k, d]
            W_V = np.repeat(W_V, model.n_heads // W_V.shape[0], axis=0)
            eig = np.linalg.eigvals(W_O @ UE @ W_V)  # [H, k]
            radius = np.abs(eig).max(axis=-1, keepdims=True)
            nonzero = np.abs(eig) > 1e-10 * radius
            scores[layer] = ((eig.real > 0) & nonzero).sum(axis=-1) / nonzero.sum(axis=-1)
    return scores


def self_match_scores(model, n_tokens: int, seed: int) -> np.ndarray:
    """Mean row z-score of the diagonal of ``S = E M E^T`` over ``n_tokens`` vocabulary tokens.

    Computed in factored form, never forming the ``n x n`` matrix ``S``: with per-head queries
    ``Q = E A`` and keys ``K = E B`` (``[n, k]`` each), ``S_ij = q_i . k_j``, so

        diag_i = q_i . k_i,   mean_i = q_i . k_bar,   var_i = q_i^T Cov(K) q_i,

    where ``k_bar`` and ``Cov(K) = (K - k_bar)^T (K - k_bar) / n`` are over the ``n`` keys (the
    population variance, as ``S.std(axis=-1)``). That is O(n k + k^2) memory per head instead of
    O(n^2), and one layer at a time: shape ``[L, H]``.
    """
    import torch

    rng = np.random.default_rng(seed)
    low, _ = token_range(model)
    ids = rng.choice(
        np.arange(low, model.d_vocab), size=min(n_tokens, model.d_vocab - low), replace=False
    )
    with torch.no_grad():
        E = model.bridge.W_E[torch.as_tensor(ids)].double().numpy()
    if model.norm == "ln":
        E = E - E.mean(axis=1, keepdims=True)
    E = E / np.sqrt((E**2).mean(axis=1, keepdims=True))
    ops = model.factors
    scores = np.empty(ops.batch_shape)
    for layer in range(ops.batch_shape[0]):
        Q = E @ ops.A[layer]  # [H, n, k]
        K = E @ ops.B[layer]
        diag = np.einsum("hnk,hnk->hn", Q, K)
        k_bar = K.mean(axis=1)  # [H, k]
        mean = np.einsum("hnk,hk->hn", Q, k_bar)
        centred = K - k_bar[:, None, :]
        cov = np.swapaxes(centred, -1, -2) @ centred / K.shape[1]  # [H, k, k]
        var = np.einsum("hnk,hkl,hnl->hn", Q, cov, Q)
        scores[layer] = ((diag - mean) / np.sqrt(var)).mean(axis=-1)
    return scores


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


def weight_columns(model, spec: TableSpec = TableSpec()) -> dict[str, np.ndarray]:
    """The columns that need only the weights (rank, spectra, null, RoPE phase, copying,
    self-match), ``[L, H]`` each, computed one layer at a time.

    Peak memory is the model's own arrays plus one layer's temporaries: the null shares one
    set of Haar overlaps over all heads (seeded by ``null_seed`` alone), so per-layer calls give
    the same numbers as one call over every head.
    """
    ops = model.factors
    per_layer: list[dict[str, np.ndarray]] = []
    for layer in range(ops.batch_shape[0]):
        sub = ops[layer]
        columns = {"rank": _numerical_rank(sub)}
        metrics = spectral_metrics(sub)
        columns.update(metrics)
        null = matched_sigma_null(sub, n_draws=spec.null_draws, seed=spec.null_seed)
        for name in NULL_METRICS:
            columns[f"{name}_null_mean"] = null[name].mean
            columns[f"{name}_null_std"] = null[name].std
            columns[f"{name}_z"] = null[name].z(metrics[name])
        rotary = model.rotary_at(layer)
        if rotary is not None:
            columns.update(phase_features(sub.A, sub.B, rotary))
        per_layer.append(columns)
    stacked = {name: np.stack([c[name] for c in per_layer]) for name in per_layer[0]}
    stacked["copying"] = copying_scores(model)
    stacked["self_match"] = self_match_scores(model, spec.self_match_tokens, spec.null_seed)
    return stacked


def head_table(model, spec: TableSpec = TableSpec()) -> pd.DataFrame:
    """Build the per-head table of a loaded model (uncached; see :func:`cached_head_table`).

    A model whose forward door is closed gets the weight columns only, and
    ``attrs["forward_closed"]`` says why (:data:`FORWARD_COLUMNS` are absent)."""
    closed = model.forward_door == "closed"
    L, H = model.factors.batch_shape
    layer, head = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
    columns: dict[str, np.ndarray] = {"layer": layer, "head": head}
    weights = weight_columns(model, spec)
    before_behaviour = ["rank", *METRICS]
    before_behaviour += [
        f"{m}_{part}" for m in NULL_METRICS for part in ("null_mean", "null_std", "z")
    ]
    columns.update({name: weights.pop(name) for name in before_behaviour})
    behaviour = {} if closed else model_behaviour(model, spec.behaviour)
    if not closed:
        for name in ("prev", "dup", "ind"):
            columns[name] = np.asarray(behaviour[name])
    columns["copying"] = weights.pop("copying")
    columns["self_match"] = weights.pop("self_match")
    columns.update(weights)  # RoPE phase features
    if spec.ablations and model.causal and not closed:
        columns.update(_ablation_columns(model, spec))
    table = pd.DataFrame({k: np.asarray(v).reshape(-1) for k, v in columns.items()})
    table.attrs = {
        "model": model.name,
        "scheme": model.scheme,
        "norm": model.norm,
        **{k: float(v) for k, v in behaviour.items() if np.ndim(v) == 0},
    }
    if closed:
        table.attrs["forward_closed"] = model.bridge.reason
    return table


def cached_head_table(model, spec: TableSpec = TableSpec()) -> pd.DataFrame:
    """:func:`head_table`, cached on disk by model content and spec (and the code digest)."""
    # the door is in the key: a closed door's table lacks the forward columns
    key = f"table-{model.content_key}-{model.forward_door}-{spec.key()}"
    return cached_frame(key, lambda: head_table(model, spec))
