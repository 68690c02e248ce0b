"""The cached random-matrix nulls: the cache gives back the draw's own bits, keyed by every
argument, and the Wishart stand-ins have the Ginibre law's exact moment."""

from __future__ import annotations

import numpy as np
import pytest

from qkcore.analysis import ginibre
from qkcore.analysis.ginibre import ginibre_median_band, wishart_head_pool
from qkcore.diskcache import CACHE_ENV
from qkcore.linalg.rope import RotaryInfo


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_band_read_back_is_the_drawn_band_bit_for_bit(empty_cache, monkeypatch):
    arguments = dict(d=32, k=8, n_heads=8, centred=True, rotary=RotaryInfo(8, 10000.0), draws=200)
    drawn = ginibre.ginibre_median_band(**arguments)  # type: ignore[arg-type]
    direct = ginibre._draw_band(32, 8, 8, True, RotaryInfo(8, 10000.0), 200, 0, 0.99)
    assert drawn == {row.metric: (row.low, row.median, row.high) for row in direct.itertuples()}

    def no_draw(*args, **kwargs):
        raise AssertionError("drew again: the cache was not used")

    monkeypatch.setattr(ginibre, "_draw_band", no_draw)
    assert ginibre_median_band(**arguments) == drawn  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "changed", [dict(seed=1), dict(n_heads=9), dict(centred=False), dict(coverage=0.9)]
)
def test_every_argument_is_part_of_the_key(empty_cache, changed):
    base = dict(d=24, k=6, n_heads=8, centred=True, draws=300)
    assert ginibre_median_band(**{**base, **changed}) != ginibre_median_band(**base)  # type: ignore[arg-type]


def test_the_head_pool_is_cached_and_has_the_ginibre_second_moment(empty_cache, monkeypatch):
    """E[dir_frac^2] = (d - 1) / (2 d) for iid Gaussian factors of width d (the antisymmetric
    share of a Ginibre-like M): the stand-ins must match it within 4 Monte Carlo sd."""
    d_eff, draws = 40, 4000
    pool = wishart_head_pool(d_eff, 4, draws=draws, seed=3)
    squares = pool["dir_frac"].to_numpy() ** 2
    exact = (d_eff - 1) / (2 * d_eff)
    assert abs(squares.mean() - exact) < 4 * squares.std(ddof=1) / np.sqrt(draws)
    monkeypatch.setattr(ginibre, "_draw_heads", lambda *a: pytest.fail("drew again"))
    assert wishart_head_pool(d_eff, 4, draws=draws, seed=3).equals(pool)
