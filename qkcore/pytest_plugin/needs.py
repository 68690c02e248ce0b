"""What the selected tests wait on: builds named by their stamps, from items or test ids.

In one process the items' parameters give the pieces (:func:`pieces_of_item`). Under xdist the
controller has no items: each worker writes, for every test, the stamps of the builds it waits
on and each build's label, cost and memory (:func:`write_needs`) to a folder the controller
names, and the controller reads the first worker's file (:func:`read_needs`) - so it can plan
and schedule at once without importing what the builds compute. Its build thread later finds
the builds themselves from the test ids (:func:`pieces_for_ids`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from qkcore.engine import stamp_key

__all__ = [
    "Planned",
    "build_name",
    "pieces_for_ids",
    "pieces_of_id",
    "pieces_of_item",
    "read_needs",
    "write_needs",
]

_PARAM_ID = re.compile(r"\[(?P<id>.*)\]$")


@dataclass(frozen=True)
class Planned:
    """A build as the controller plans it: named by its stamp, without its function."""

    key: str
    label: str
    cost: float
    memory_gb: float


def pieces_for_ids(ids: Iterable[str], pieces: dict[str, Any]) -> list[Any]:
    """The pieces (``pieces``: by evidence id) that collected test ids name.

    A test id's parameter part is looked up whole (``test_x[toy-cpu:rope-s1]``); a test with
    several parameters joins their ids with "-", so an evidence id is also found as one of its
    "-"-delimited runs. Evidence ids are only compared, never taken apart.
    """
    return [piece for node_id in ids for piece in pieces_of_id(node_id, pieces)]


def pieces_of_id(node_id: str, pieces: dict[str, Any]) -> list[Any]:
    match = _PARAM_ID.search(node_id)
    if match is None:
        return []
    found = pieces.get(match["id"])
    if found is not None:
        return [found]
    joined = f"-{match['id']}-"
    return [piece for eid, piece in pieces.items() if f"-{eid}-" in joined]


def pieces_of_item(item: pytest.Item) -> list[Any]:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return []
    return [v for v in callspec.params.values() if hasattr(v, "build_tasks")]


def build_name(task: Any) -> str:
    """A build's name: a :class:`Planned` build's key, else its stamp."""
    return task.key if isinstance(task, Planned) else stamp_key(task)


def write_needs(
    folder: Path, worker: str, needs: dict[str, frozenset[str]], todo: dict[str, Any]
) -> None:
    """What each test waits on, and each build (``todo``: by stamp) with its label, cost and
    memory, as JSON (written to a private name, then renamed: the controller never reads half a
    file)."""
    builds = {
        key: {"label": task.label, "cost": task.cost, "mem": task.memory_gb}
        for key, task in todo.items()
    }
    payload = {"needs": {k: sorted(v) for k, v in needs.items()}, "builds": builds}
    path = folder / f"{worker}.json"
    private = path.with_suffix(f".{os.getpid()}.tmp")
    private.write_text(json.dumps(payload))
    private.replace(path)


def read_needs(folder: Path, worker: str, needs: dict[str, frozenset[str]]) -> dict[str, Planned]:
    """Fill ``needs`` from a worker's file; the builds it names."""
    payload = json.loads((folder / f"{worker}.json").read_text())
    needs.update({k: frozenset(v) for k, v in payload["needs"].items()})
    return {
        key: Planned(key, info["label"], float(info["cost"]), float(info["mem"]))
        for key, info in payload["builds"].items()
    }
