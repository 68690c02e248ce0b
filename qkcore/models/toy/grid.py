"""The §10 constrained-training grid: its five arms and the runs of each.

Arms (paper §10): APE free, RoPE free, RoPE with Im(M_t) suppressed, RoPE with M forced
symmetric, APE with M forced symmetric; penalty weight ``lam = 10``; ``n = 5`` seeds per arm.
The runs are ordinary :class:`~qkcore.models.toy.model.ToyConfig` runs, cached like any other, so
the
free arms share their runs with the free toy evidence of the same seeds.

Example::

    configs = grid_configs(seeds=5)            # {arm name: [ToyConfig, ...]}
    configs["rope-imag"][0].label              # 'rope-imag-s0'
"""

from __future__ import annotations

from dataclasses import dataclass

from qkcore.models.toy.model import ToyConfig

__all__ = ["GRID_ARMS", "GRID_SEEDS", "GridArm", "grid_configs"]

#: Seeds per arm in the paper's grid; fewer only behind an explicit option.
GRID_SEEDS = 5


@dataclass(frozen=True)
class GridArm:
    """One arm: a positional scheme and a constraint with its penalty weight."""

    scheme: str
    constraint: str
    lam: float

    @property
    def name(self) -> str:
        return f"{self.scheme}-{self.constraint}"

    def config(self, seed: int, **overrides) -> ToyConfig:
        return ToyConfig(
            scheme=self.scheme, constraint=self.constraint, lam=self.lam, seed=seed, **overrides
        )


GRID_ARMS: tuple[GridArm, ...] = (
    GridArm("ape", "free", 0.0),
    GridArm("rope", "free", 0.0),
    GridArm("rope", "imag", 10.0),
    GridArm("rope", "sym", 10.0),
    GridArm("ape", "sym", 10.0),
)


def grid_configs(seeds: int = GRID_SEEDS, **overrides) -> dict[str, list[ToyConfig]]:
    """Configs of every arm for seeds ``0 .. seeds-1`` (``overrides`` go to every config)."""
    return {arm.name: [arm.config(seed, **overrides) for seed in range(seeds)] for arm in GRID_ARMS}
