"""The package's architecture, checked from its source: layers, cycles, privacy, module size.

Every ``import`` of every qkcore module is read from its syntax tree - module-level, inside
functions and under ``TYPE_CHECKING`` alike, since a hidden import is still a dependency - and
held against the layer table of :mod:`qkcore` (its docstring). Nothing is imported or run.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the qkcore package folder
REPO = ROOT.parent
FRAMEWORK = REPO / "pytest_claims"  # the claims framework: knows no paper, no numerics
#: What the framework may import at module level besides the standard library and itself: it
#: loads light in every pytest session (numerical packages only inside the functions that use
#: them: pandas for a mutation, scipy for a population's drift, matplotlib for a figure).
FRAMEWORK_THIRD_PARTY = {"pytest", "pluggy"}
#: The framework's modules with no pytest in them: the judging rules, the identity of a piece
#: of evidence, what a kind declares, the mutation grammar, the one atomic write - what this
#: suite's computing layers may use.
FRAMEWORK_PURE = (
    "pytest_claims.errors",
    "pytest_claims.stats",
    "pytest_claims.refs",
    "pytest_claims.kinds",
    "pytest_claims.mutations",
    "pytest_claims.files",
)

#: Layer of each top-level part of qkcore; an import may only point to a lower layer or stay
#: inside its own part.
LAYERS = {
    "qkcore.errors": 0,
    "qkcore.lazy": 0,  # PEP 562 lazy exports for package facades
    "qkcore.compute_threads": 0,  # how wide a process's torch and BLAS pools start
    "qkcore.diskcache": 1,
    "qkcore.linalg": 1,
    "qkcore.stats": 1,
    "qkcore.models": 2,
    "qkcore.testing": 3,  # tiny models of every family: reads the architecture table
    "qkcore.analysis": 3,
    "qkcore.evidence": 4,
    "qkcore.engine": 5,  # runs the evidence's builds; computes nothing (keeps the cache)
    "qkcore.pytest_plugin": 6,
}
#: ``import qkcore`` stays cheap and model-free: the facade re-exports the core only.
FACADE_MAX_LAYER = 1
#: Third-party packages the numerical core may import at module level.
CORE_THIRD_PARTY = {
    "qkcore.linalg": {"numpy", "scipy"},
    "qkcore.stats": {"numpy", "scipy", "pandas"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def library_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in sorted(ROOT.rglob("*.py"))
        if "tests" not in path.relative_to(ROOT).parts
    }


def imports_of(path: Path, name: str) -> Iterator[tuple[str, list[str], bool]]:
    """``(imported module, names taken from it, at module level)`` for every import."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], id(node) in top_level
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, [a.name for a in node.names], id(node) in top_level


def part_of(module: str) -> str | None:
    for part in sorted(LAYERS, key=len, reverse=True):
        if module == part or module.startswith(part + "."):
            return part
    return None


def internal_edges() -> dict[str, set[str]]:
    """Module -> the qkcore modules it imports (``from pkg import submodule`` resolved)."""
    modules = library_modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, names, _ in imports_of(path, name):
            if not target.startswith("qkcore"):
                continue
            for taken in names:
                if f"{target}.{taken}" in modules:
                    edges[name].add(f"{target}.{taken}")
            if target in modules:
                edges[name].add(target)
    return edges


def test_the_layer_table_covers_every_module():
    unplaced = [m for m in library_modules() if m != "qkcore" and part_of(m) is None]
    assert not unplaced, f"modules outside every layer of LAYERS: {unplaced}"


def test_imports_point_down():
    wrong = []
    for module, targets in internal_edges().items():
        for target in targets:
            there = part_of(target)
            assert there is not None, f"{target} is in no layer of LAYERS"
            if module == "qkcore":
                if LAYERS[there] > FACADE_MAX_LAYER:
                    wrong.append(f"qkcore (facade) -> {target}")
                continue
            here = part_of(module)
            assert here is not None, f"{module} is in no layer of LAYERS"
            if here != there and LAYERS[there] >= LAYERS[here]:
                wrong.append(f"{module} (layer {LAYERS[here]}) -> {target} (layer {LAYERS[there]})")
    assert not wrong, "imports that do not point down:\n" + "\n".join(sorted(wrong))


def test_no_import_cycles():
    edges = internal_edges()
    cycles = []

    def visit(node: str, stack: list[str], state: dict[str, int]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if nxt == "qkcore":  # the facade is imported by name only for its re-exports
                continue
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, stack, state)
        stack.pop()
        state[node] = 2

    state: dict[str, int] = {}
    for node in sorted(edges):
        if node not in state:
            visit(node, [], state)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_numerical_core_imports_no_model_machinery_at_module_level():
    wrong = []
    for name, path in library_modules().items():
        allowed = CORE_THIRD_PARTY.get(part_of(name) or "")
        if allowed is None:
            continue
        for target, _, module_level in imports_of(path, name):
            root = target.split(".")[0]
            known = allowed | {"qkcore", "pytest_claims", "__future__"} | sys.stdlib_module_names
            if module_level and root not in known:
                wrong.append(f"{name} imports {target}")
    assert not wrong, "\n".join(wrong)


def _python_files() -> Iterator[Path]:
    for folder in ("qkcore", "claims", "benchmarks"):
        yield from sorted((REPO / folder).rglob("*.py"))
    yield REPO / "conftest.py"


def test_no_private_name_crosses_a_module():
    wrong = []
    for path in _python_files():
        if not path.exists():
            continue
        name = module_name(path)
        for target, names, _ in imports_of(path, name):
            if not (target.startswith("qkcore") or target.startswith("claims")):
                continue
            for taken in names:
                if taken.startswith("_") and not taken.startswith("__"):
                    wrong.append(f"{path.relative_to(REPO)} imports {target}.{taken}")
    assert not wrong, "\n".join(wrong)


def test_only_the_plugin_imports_pytest():
    """The computing layers and the evidence layer know nothing of pytest: the plugin turns
    what they offer into parameters, so the library serves any other runner too."""
    allowed = ("qkcore.pytest_plugin", "qkcore.tests", "qkcore.testing")
    wrong = [
        name
        for name, path in library_modules().items()
        if not name.startswith(allowed)
        and any(target.split(".")[0] == "pytest" for target, _, _ in imports_of(path, name))
    ]
    assert not wrong, f"import pytest outside the plugin: {wrong}"


def test_nothing_imports_xdist_internals():
    """xdist is used through its public hooks only (``pytest_configure_node``,
    ``pytest_xdist_node_collection_finished``, ``workerinput``): no module imports from xdist's
    submodules (scheduler, dsession, workermanage, remote) or a private name of it, whose
    behaviour a new xdist release may change without notice."""
    wrong = []
    for path in _python_files():
        if not path.exists():
            continue
        for target, names, _ in imports_of(path, module_name(path)):
            if target.startswith("xdist.") or (
                target == "xdist" and any(n.startswith("_") for n in names)
            ):
                wrong.append(f"{path.relative_to(REPO)} imports {target} {names}")
    assert not wrong, "\n".join(wrong)


def framework_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in sorted(FRAMEWORK.rglob("*.py"))
        if "tests" not in path.relative_to(FRAMEWORK).parts
    }


def test_the_framework_knows_no_paper_and_loads_light():
    """pytest_claims imports nothing of this suite - no qkcore, no claims, at any depth of a
    function - and at module level nothing but the standard library, pytest and pluggy."""
    wrong = []
    for name, path in framework_modules().items():
        for target, _, module_level in imports_of(path, name):
            root = target.split(".")[0]
            if root in ("qkcore", "claims"):
                wrong.append(f"{name} imports {target}")
            elif module_level and root not in (
                FRAMEWORK_THIRD_PARTY | {"pytest_claims", "__future__"} | sys.stdlib_module_names
            ):
                wrong.append(f"{name} imports {target} at module level")
    assert not wrong, "\n".join(wrong)


def test_the_suite_computes_with_the_frameworks_pure_modules_only():
    """This suite's computing layers may use the framework's pure modules (the judging rules,
    an evidence ref, the mutation grammar); only its plugin and tests use the rest."""
    wrong = []
    for name, path in library_modules().items():
        if name.startswith("qkcore.pytest_plugin"):
            continue
        for target, _, _ in imports_of(path, name):
            if target.startswith("pytest_claims") and not target.startswith(FRAMEWORK_PURE):
                wrong.append(f"{name} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_the_frameworks_pure_modules_import_no_pytest():
    wrong = [
        name
        for name, path in framework_modules().items()
        if name.startswith(FRAMEWORK_PURE)
        and any(target.split(".")[0] == "pytest" for target, _, _ in imports_of(path, name))
    ]
    assert not wrong, f"pure framework modules importing pytest: {wrong}"
