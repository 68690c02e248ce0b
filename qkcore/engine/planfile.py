"""A plan on disk: what a selection of tests waits on, and how to build it - the file between
collecting (``pytest --collect-only --claims-plan-out``) and building (``qk-claims-build``).

The file is JSON (``schema`` 1)::

    {"schema": 1, "code": "<code digest>",
     "tests": {"claims/test_x.py::test_y[toy-cpu:rope-s0]": ["prepared-3f1c..."]},
     "builds": {"prepared-3f1c...": {"label": "toy-cpu:rope-s0 run, table and history",
                "cost": 110.0, "memory_gb": 1.0, "device": "cpu",
                "fn": "qkcore.evidence.pieces:build_toy",
                "args": [{"dataclass": "qkcore.models.toy.model:ToyConfig", "fields": {...}},
                         "cpu"]}}}

A build is named by its stamp (:func:`~qkcore.engine.stamps.stamp_key`) and carries its
function by import path and its arguments in a small typed encoding (JSON scalars, lists,
``{"tuple": [...]}``, ``{"dataclass": "module:Name", "fields": {...}}``), so the builder needs
no pytest and the file can be read and diffed. ``code`` is the code digest the plan was made
with: a plan made by other code names other stamps, so building it is refused. A plan names
functions to import and run: like a conftest, it is code - build only plans you made.

Example::

    plan = Plan.from_tasks({"t[toy-cpu:rope-s0]": [task]})
    plan.write(Path("plan.json"))
    Plan.read(Path("plan.json")).tasks() == [task]     # the same BuildTask back
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qkcore.diskcache import code_digest
from qkcore.engine.stamps import stamp_key
from qkcore.errors import QKError
from qkcore.evidence.tasks import BuildTask

__all__ = ["PLAN_SCHEMA", "Plan"]

PLAN_SCHEMA = 1


@dataclass(frozen=True)
class Plan:
    """Tests and the builds they wait on (module docstring); ``builds`` by stamp."""

    code: str
    tests: Mapping[str, tuple[str, ...]]
    builds: Mapping[str, Mapping[str, Any]]

    @classmethod
    def from_tasks(cls, by_test: Mapping[str, list[BuildTask]]) -> Plan:
        builds: dict[str, dict[str, Any]] = {}
        tests: dict[str, tuple[str, ...]] = {}
        for node_id, tasks in by_test.items():
            keys = []
            for task in tasks:
                key = stamp_key(task)
                keys.append(key)
                if key not in builds:
                    builds[key] = _describe(task)
            tests[node_id] = tuple(dict.fromkeys(keys))
        return cls(code=code_digest(), tests=tests, builds=builds)

    def write(self, path: Path) -> None:
        """Write the plan as JSON; the file appears whole (written privately, then renamed)."""
        payload = {
            "schema": PLAN_SCHEMA,
            "code": self.code,
            "tests": {node: list(keys) for node, keys in self.tests.items()},
            "builds": dict(self.builds),
        }
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        private = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        private.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
        private.replace(path)

    @classmethod
    def read(cls, path: Path) -> Plan:
        """The plan in ``path``; :class:`~qkcore.errors.QKError` naming what is wrong and the
        fix when the file is missing, not a plan, or of another schema."""
        remake = "make it again: pytest <tests> --collect-only --claims-plan-out " + str(path)
        try:
            payload = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise QKError(f"no plan at {path}: {remake}") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise QKError(f"{path} is not a readable plan ({exc}): {remake}") from None
        if not isinstance(payload, dict) or payload.get("schema") != PLAN_SCHEMA:
            found = payload.get("schema") if isinstance(payload, dict) else type(payload).__name__
            raise QKError(f"{path} is not a plan of schema {PLAN_SCHEMA} (found {found}): {remake}")
        try:
            tests = {str(node): tuple(map(str, keys)) for node, keys in payload["tests"].items()}
            builds = {str(key): dict(build) for key, build in payload["builds"].items()}
            plan = cls(code=str(payload["code"]), tests=tests, builds=builds)
        except (KeyError, AttributeError, TypeError, ValueError) as exc:
            raise QKError(
                f"{path} is a damaged plan (missing or malformed {exc}): {remake}"
            ) from None
        unknown = sorted({key for keys in tests.values() for key in keys} - set(builds))
        if unknown:
            raise QKError(
                f"{path} is a damaged plan: tests wait on builds it does not describe "
                f"({', '.join(unknown[:3])}): {remake}"
            )
        return plan

    def check_code(self, path: Path | str = "the plan") -> None:
        """Refuse a plan made by other code: its stamps are not this code's."""
        if self.code != code_digest():
            raise QKError(
                f"{path} was made by other code (digest {self.code}, this code {code_digest()}):"
                " the builds it names are not the ones this code's tests wait on. Make the plan "
                "again with this checkout: pytest <tests> --collect-only --claims-plan-out PATH"
            )

    def tasks(self) -> list[BuildTask]:
        """The builds as :class:`~qkcore.evidence.tasks.BuildTask` s, each checked to carry
        the stamp it is filed under (a plan edited by hand cannot rename a build)."""
        out = []
        for key, build in self.builds.items():
            task = _task(key, build)
            if stamp_key(task) != key:
                raise QKError(
                    f"plan build {build.get('label', key)!r} is filed under {key} but its "
                    f"arguments name {stamp_key(task)}: the plan was edited; make it again"
                )
            out.append(task)
        return out


def _describe(task: BuildTask) -> dict[str, Any]:
    fn = task.fn
    path = f"{fn.__module__}:{fn.__qualname__}"
    if "<" in fn.__qualname__:  # a lambda or a local function cannot be imported back
        raise QKError(
            f"build {task.label!r} runs {path}, which cannot be imported by name: a build's "
            "function must be a module-level function to be planned"
        )
    return {
        "label": task.label,
        "cost": task.cost,
        "memory_gb": task.memory_gb,
        "device": task.device,
        "fn": path,
        "key": _encode(task.key),
        "args": _encode(task.args),
    }


def _task(key: str, build: Mapping[str, Any]) -> BuildTask:
    try:
        return BuildTask(
            key=_decode(build["key"]),
            label=str(build["label"]),
            fn=_imported(str(build["fn"])),
            args=_decode(build["args"]),
            cost=float(build["cost"]),
            memory_gb=float(build["memory_gb"]),
            device=str(build["device"]),
        )
    except KeyError as exc:
        raise QKError(f"plan build {key} lacks {exc}: make the plan again") from None


def _imported(path: str) -> Any:
    module, _, name = path.partition(":")
    try:
        found: Any = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise QKError(
            f"the plan names {path}, which this installation cannot import ({exc}): make the "
            "plan again with the code that will build it"
        ) from None
    return found


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_encode(item) for item in value]}
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        fields = {
            f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init
        }
        return {"dataclass": f"{kind.__module__}:{kind.__qualname__}", "fields": fields}
    raise QKError(
        f"a build argument of type {type(value).__name__} cannot be planned: build arguments "
        "must be JSON scalars, tuples, lists or dataclasses of them"
    )


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if isinstance(value, dict):
        if set(value) == {"tuple"}:
            return tuple(_decode(item) for item in value["tuple"])
        if set(value) == {"dataclass", "fields"}:
            kind = _imported(str(value["dataclass"]))
            return kind(**{name: _decode(item) for name, item in value["fields"].items()})
        raise QKError(f"plan holds an argument it cannot read: {json.dumps(value)[:80]}")
    return value
