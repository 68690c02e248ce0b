"""This suite's one evidence kind: the data sets of a CSV file, one piece per set.

Registered through the claims framework's hooks, the way this repository's paper suite registers
its tables, models and toys (qkcore/pytest_plugin); nothing here imports more than the standard
library, so the suite runs on the light install (pip install qkcore: pytest alone).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from pytest_claims import EvidenceKind, EvidenceRef, Offer, Option, add_kind_options

SHIPPED = Path(__file__).with_name("anscombe.csv")


@dataclass(frozen=True)
class DataSet:
    """One data set of the file: what a claim test receives as ``evidence``."""

    ref: EvidenceRef
    x: tuple[float, ...]
    y: tuple[float, ...]

    def build_tasks(self) -> list[object]:
        return []  # nothing slow to build before the tests


def read_sets(path: Path) -> dict[str, DataSet]:
    """The file's rows grouped by ``dataset``, in the file's order."""
    columns: dict[str, tuple[list[float], list[float]]] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            xs, ys = columns.setdefault(row["dataset"], ([], []))
            xs.append(float(row["x"]))
            ys.append(float(row["y"]))
    return {
        name: DataSet(EvidenceRef("csv", name), tuple(xs), tuple(ys))
        for name, (xs, ys) in columns.items()
    }


def offers(settings, request) -> list[Offer]:
    return [Offer(piece.ref, piece) for piece in read_sets(Path(settings.csv)).values()]


CSV = EvidenceKind(
    "csv",
    "the four data sets",
    offers,
    id_format="csv:<data set>",
    options=(
        Option(
            "--claims-csv",
            {"default": str(SHIPPED), "metavar": "PATH", "help": "the data sets (dataset,x,y)"},
        ),
    ),
)


def pytest_addoption(parser):
    add_kind_options(parser, CSV)


def pytest_claims_evidence_kinds():
    return [CSV]
