"""Training regimes of the toys: named sets of :class:`ToyConfig` fields, and how far each sits
from the paper's §10 protocol.

A regime fixes everything about a run except its scheme, constraint and seed. Two are named:

- ``paper`` - :data:`~qkcore.models.toy.model.PAPER_PROTOCOL`, field for field (GPU-sized; on
  CPU about 30 min of one core per run);
- ``cpu`` - the default, chosen by measurement on the scale ladder
  (``benchmarks/toy_ladder.py``; the table and the reasons are in docs/measurements.md).

A regime may leave arms of the §10 grid to the paper's scale: those it was measured not to
form within the paper's 6000-step cap (``grid_left_out``, each with the measurement). A grid
missing an arm is not the paper's grid - every grid claim reads a constrained arm - so in
such a regime the ``--claims-toy-grid`` evidence is skipped with the measurement as its reason, and
nothing is trained for it. A changed (``custom``) regime is unmeasured and leaves nothing out.

A spec string names a regime and may change fields of it: ``"cpu"``, ``"paper"``,
``"cpu:lr=0.003,d_model=128,d_head=32"`` (a changed regime is called ``custom``). Evidence ids
carry the regime (``toy-cpu:rope-s0``), so ``pytest -k toy-paper`` selects it, and every report
says, for a regime other than the paper's, which fields depart from the protocol.

Example::

    regime = toy_regime("cpu")
    regime.config("rope", seed=2)        # ToyConfig(scheme="rope", seed=2, ...)
    regime.departures()                  # ["lr 0.003 (paper 0.001)", ...]; [] for "paper"
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from qkcore.errors import QKError
from qkcore.models.toy.grid import GRID_ARMS
from qkcore.models.toy.model import PAPER_PROTOCOL, ToyConfig

__all__ = ["TOY_REGIMES", "ToyRegime", "toy_regime"]

#: Fields a regime may not set: they name the run within the regime.
_PER_RUN = ("scheme", "constraint", "lam", "seed")


@dataclass(frozen=True)
class ToyRegime:
    """A named set of :class:`ToyConfig` fields (everything but scheme, constraint, seed)."""

    name: str
    fields: tuple[tuple[str, object], ...]
    #: (grid arm, why it is paper-scale only here: the measurement) - see the module docstring
    grid_left_out: tuple[tuple[str, str], ...] = ()
    #: the command that measured ``grid_left_out``
    grid_measured_by: str = ""

    def __post_init__(self) -> None:
        arms = {arm.name for arm in GRID_ARMS}
        for arm, _ in self.grid_left_out:
            if arm not in arms:
                raise QKError(
                    f"toy regime {self.name!r}: {arm!r} is not a grid arm {sorted(arms)}."
                )
        known = {f.name for f in _config_fields()}
        for key, _ in self.fields:
            if key in _PER_RUN or key not in known:
                settable = ", ".join(sorted(known - set(_PER_RUN)))
                raise QKError(
                    f"toy regime {self.name!r}: {key!r} is not a regime field ({settable})."
                )

    @property
    def overrides(self) -> dict[str, Any]:
        """``{field: value}`` for ToyConfig (names checked in ``__post_init__``)."""
        return dict(self.fields)

    def config(
        self, scheme: str, seed: int, constraint: str = "free", lam: float = 0.0
    ) -> ToyConfig:
        return ToyConfig(scheme=scheme, constraint=constraint, lam=lam, seed=seed, **self.overrides)

    def departures(self) -> list[str]:
        """``"<field> <ours> (paper <theirs>)"`` for every protocol field this regime changes."""
        ours = self.config("rope", 0)
        return [
            f"{key} {_show(getattr(ours, key))} (paper {_show(value)})"
            for key, value in PAPER_PROTOCOL.items()
            if getattr(ours, key) != value
        ]

    @property
    def evidence_prefix(self) -> str:
        """The kind part of its evidence ids: ``toy-cpu``, ``toy-paper``, ``toy-custom``."""
        return f"toy-{self.name}"

    def describe(self) -> str:
        """One line for reports: the regime and, outside the paper's, how it departs."""
        away = self.departures()
        if not away:
            return f"{self.evidence_prefix}: the paper's §10 protocol, field for field"
        return f"{self.evidence_prefix}: outside the paper's §10 protocol - " + ", ".join(away)


def _config_fields():
    return fields(ToyConfig)


def _show(value: object) -> str:
    if value is None:
        return "none (runs to its cap)"
    return f"{value:g}" if isinstance(value, float) else str(value)


#: The named regimes. ``cpu`` is the measured CPU default (see the module docstring).
TOY_REGIMES: dict[str, ToyRegime] = {
    # ToyConfig's defaults: d 64, d_k 16, sequences of 128, batch 32, lr 1e-2 after 100 warm-up
    # steps, stopped 500 steps after formation
    "cpu": ToyRegime(
        "cpu",
        (),
        # measured 2026-12-01 (lambda 10, cap 6000 steps); in the paper every constrained run
        # formed, at a mean step of 1280 / 1560 / 1740
        grid_left_out=(
            ("rope-imag", "formed in 0 of 5 seeds within the 6000-step cap"),
            ("rope-sym", "formed in 0 of 5 seeds within the 6000-step cap"),
            ("ape-sym", "formed in 3 of 5 seeds (at steps 2950-4750)"),
        ),
        grid_measured_by="python benchmarks/bench_toy.py --seeds 5 --grid",
    ),
    "paper": ToyRegime("paper", tuple(PAPER_PROTOCOL.items())),
}


def toy_regime(spec: str) -> ToyRegime:
    """The regime a spec names: ``NAME`` or ``NAME:field=value,field=value`` (module docstring)."""
    name, _, changes = spec.partition(":")
    if name not in TOY_REGIMES:
        raise QKError(
            f"unknown toy regime {name!r}; choose one of {sorted(TOY_REGIMES)}, optionally with "
            "changed fields, e.g. 'cpu:lr=0.003,d_model=128,d_head=32'."
        )
    base = TOY_REGIMES[name]
    if not changes:
        return base
    types = {f.name: f.type for f in _config_fields()}
    updated = base.overrides
    for item in changes.split(","):
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or key not in types or key in _PER_RUN:
            settable = ", ".join(sorted(set(types) - set(_PER_RUN)))
            raise QKError(
                f"toy regime {spec!r}: {item!r} is not 'field=value' for a regime field "
                f"({settable})."
            )
        updated[key] = _parse(key, text.strip(), str(types[key]), spec)
    return ToyRegime("custom", tuple(sorted(updated.items())))


def _parse(key: str, text: str, annotation: str, spec: str) -> object:
    if text.lower() == "none" and "None" in annotation:
        return None
    kind = float if annotation.startswith("float") else int if annotation.startswith("int") else str
    try:
        return kind(text)
    except ValueError:
        raise QKError(f"toy regime {spec!r}: {key}={text!r} is not a {kind.__name__}.") from None
