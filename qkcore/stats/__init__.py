"""Statistics of head populations: exact tests, percentiles, the formation criterion.

Layer 1 of qkcore, beside :mod:`qkcore.linalg`. It imports numpy, scipy and pandas, and
:mod:`qkcore.errors`; never a model, torch or pytest.

- :mod:`~qkcore.stats.inference`  - percentiles r/n, exact permutation and Mann-Whitney tests,
  BH, partial Spearman, layer-clustered bootstrap, Hodges-Lehmann, exact Spearman
- :mod:`~qkcore.stats.population` - the same on per-head tables: top-k heads, within-model
  percentiles, partial rho with its CI, the printed-precision rule ``rounds_to``
- :mod:`~qkcore.stats.formation`  - the §10 formation criterion on a loss curve
"""

from typing import TYPE_CHECKING

from qkcore.lazy import lazy_exports

if TYPE_CHECKING:
    from qkcore.stats.formation import formation_step, formation_threshold
    from qkcore.stats.inference import (
        PartialSpearman,
        benjamini_hochberg,
        exact_permutation_test,
        hodges_lehmann_shift,
        layer_clustered_bootstrap_ci,
        mann_whitney_exact,
        mann_whitney_permutation,
        partial_spearman,
        percentile_rank,
        rank_biserial,
        spearman_exact,
        spearman_rhos,
    )

__all__ = [
    "PartialSpearman",
    "benjamini_hochberg",
    "exact_permutation_test",
    "formation_step",
    "formation_threshold",
    "hodges_lehmann_shift",
    "layer_clustered_bootstrap_ci",
    "mann_whitney_exact",
    "mann_whitney_permutation",
    "partial_spearman",
    "percentile_rank",
    "rank_biserial",
    "spearman_exact",
    "spearman_rhos",
]

# Lazy: the claims plugin reads pytest_claims.stats.equivalence and .printed (pure Python) on every
# pytest start; scipy comes in only with the tests that compute.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "formation_step": "qkcore.stats.formation",
        "formation_threshold": "qkcore.stats.formation",
        "PartialSpearman": "qkcore.stats.inference",
        "benjamini_hochberg": "qkcore.stats.inference",
        "exact_permutation_test": "qkcore.stats.inference",
        "hodges_lehmann_shift": "qkcore.stats.inference",
        "layer_clustered_bootstrap_ci": "qkcore.stats.inference",
        "mann_whitney_exact": "qkcore.stats.inference",
        "mann_whitney_permutation": "qkcore.stats.inference",
        "partial_spearman": "qkcore.stats.inference",
        "percentile_rank": "qkcore.stats.inference",
        "rank_biserial": "qkcore.stats.inference",
        "spearman_exact": "qkcore.stats.inference",
        "spearman_rhos": "qkcore.stats.inference",
    },
)
