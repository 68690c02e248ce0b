"""Evidence in pytest: the kinds' flags and markers, and the parameters a claim test runs over.

A claim test declares what can bear on it and receives one piece per parameter::

    @claim("X1", evidence=("csv",), columns=("score",))
    def test_x(evidence, judge): ...                      # test_x[csv:table-a], ...

    @pytest.mark.claims_evidence("csv", models=("a",))    # the same, as a bare marker
    @pytest.mark.claims_evidence_set("csv")               # one parameter: every piece of a kind

Each kind a suite registers (:mod:`~pytest_claims.registry`) offers its pieces
(:class:`~pytest_claims.kinds.Offer`); here each offer becomes a ``pytest.param`` with the
evidence id, a marker for its kind and the marks the kind gives it (``-m <mark>``), and a skip
with the kind's reason. The flags' values reach a kind's offers as the object its ``settings``
builds (default: the values by name, as attributes), once per session.

Under ``--claims-mutations`` a piece that can be changed (its ``mutated`` method,
:mod:`~pytest_claims.mutations`) is offered again per declared mutation of its claim, and once
more with the negative controls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_claims.checks import CheckError
from pytest_claims.errors import ClaimsError
from pytest_claims.kinds import EvidenceKind, EvidenceRequest, Offer
from pytest_claims.refs import EvidenceRef
from pytest_claims.registry import KindRegistry

__all__ = [
    "CLAIM_MARK",
    "EVIDENCE_MARK",
    "SET_MARK",
    "add_kind_options",
    "evidence_options",
    "evidence_params",
    "evidence_ref",
    "generate_evidence",
    "kinds_of",
    "mutated",
    "pieces_by_id",
    "register_evidence",
]

#: The markers the framework owns (the ``@claim`` decorator writes them).
CLAIM_MARK = "claims_claim"
EVIDENCE_MARK = "claims_evidence"
SET_MARK = "claims_evidence_set"

_registry_key = pytest.StashKey[KindRegistry]()
_options_key = pytest.StashKey[dict[str, Any]]()


def add_kind_options(parser: pytest.Parser, kind: EvidenceKind) -> None:
    """Add the flags a kind declares (call from ``pytest_addoption``)."""
    group = parser.getgroup("claims-evidence", "evidence kinds of the claims suite")
    for option in kind.options:
        group.addoption(option.flag, **option.keywords)


def register_markers(config: pytest.Config) -> None:
    """The framework's own markers, prefixed (a suite's stray marker stays strict)."""
    config.addinivalue_line(
        "markers", f"{CLAIM_MARK}(id, section, statement, entry): a test of one catalogue claim"
    )
    config.addinivalue_line(
        "markers",
        f"{EVIDENCE_MARK}(*kinds, schemes=None, models=None, columns=(), checkpoints=False): "
        "evidence a claim test takes, one piece per parameter",
    )
    config.addinivalue_line("markers", f"{SET_MARK}(*sets): every piece of a kind as one parameter")


def register_evidence(config: pytest.Config) -> KindRegistry:
    """Build the session's registry of the kinds the suite registers, their markers, and their
    options object (checked once: a bad value is one usage error, never one per test)."""
    registry = KindRegistry()
    try:
        for kinds in config.hook.pytest_claims_evidence_kinds():
            for kind in kinds:
                registry.register(kind)
    except CheckError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_registry_key] = registry
    for kind in registry:
        config.addinivalue_line(
            "markers", f"{kind.name}: evidence of kind '{kind.name}', {kind.id_format}"
        )
    values = _option_values(config, registry)
    built: dict[Any, Any] = {}  # kinds sharing a ``settings`` share its object
    settings: dict[str, Any] = {}
    for kind in registry:
        if kind.settings not in built:
            try:
                built[kind.settings] = (
                    kind.settings(values) if kind.settings else SimpleNamespace(**values)
                )
            except ClaimsError as exc:
                raise pytest.UsageError(str(exc)) from None
        settings[kind.name] = built[kind.settings]
    config.stash[_options_key] = settings
    return registry


def _option_values(config: pytest.Config, registry: KindRegistry) -> dict[str, Any]:
    values = {}
    for kind in registry:
        for option in kind.options:
            try:
                values[option.name] = config.getoption(option.dest)
            except ValueError:  # a suite's kind whose flags its plugin did not add
                raise pytest.UsageError(
                    f"evidence kind {kind.name!r} declares {option.flag}, but no plugin added it: "
                    "call pytest_claims.add_kind_options(parser, kind) in pytest_addoption"
                ) from None
    return values


def kinds_of(config: pytest.Config) -> KindRegistry:
    """The session's registry of evidence kinds."""
    return config.stash[_registry_key]


def evidence_options(config: pytest.Config, kind: str) -> Any:
    """What ``kind``'s offers receive this session (its ``settings``, built once)."""
    return config.stash[_options_key][kind]


def to_param(offer: Offer, kind: EvidenceKind | None = None) -> Any:
    """An offer as a test parameter: its id, its kind's marker and its marks, its skip."""
    names = offer.marks if offer.marks is not None else kind.marks(offer.ref) if kind else ()
    marks: list[Any] = [getattr(pytest.mark, offer.ref.kind)]
    marks += [getattr(pytest.mark, name) for name in sorted(set(names))]
    if offer.skip:
        marks.append(pytest.mark.skip(reason=offer.skip))
    value = offer.piece if offer.piece is not None else offer.ref
    return pytest.param(value, id=offer.ref.evidence_id, marks=marks)


def evidence_params(
    refs: Iterable[EvidenceRef], marks: Callable[[EvidenceRef], tuple[str, ...]] | None = None
) -> list[Any]:
    """Parameters for bare references (tests of the framework itself): id and markers (the
    kind's, and ``marks`` of each ref), no piece."""
    return [to_param(Offer(ref, marks=marks(ref) if marks else ())) for ref in refs]


def _offers(config: pytest.Config, mark: pytest.Mark) -> list[Offer]:
    registry = kinds_of(config)
    try:
        request = EvidenceRequest.from_keywords(mark.kwargs)
        return [
            offer
            for name in mark.args
            for offer in registry.kind(name).offers(evidence_options(config, name), request)
        ]
    except (ClaimsError, CheckError) as exc:
        raise pytest.UsageError(f"@claim evidence {mark.args}: {exc}") from None


def _set_offers(config: pytest.Config, mark: pytest.Mark) -> list[Offer]:
    registry = kinds_of(config)
    try:
        kinds = [registry.set_kind(name) for name in mark.args]
        return [
            kind.sets[name](evidence_options(config, kind.name))
            for name, kind in zip(mark.args, kinds, strict=True)
        ]
    except (ClaimsError, CheckError) as exc:
        raise pytest.UsageError(f"@claim sets {mark.args}: {exc}") from None


def generate_evidence(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``evidence`` / ``evidence_set`` of a test from its markers (and, in a
    mutation run, each piece that can be changed once more per mutation of its claim)."""
    registry = kinds_of(metafunc.config)
    marker = metafunc.definition.get_closest_marker(EVIDENCE_MARK)
    if marker is not None and "evidence" in metafunc.fixturenames:
        offers = _with_mutations(metafunc, _offers(metafunc.config, marker))
        metafunc.parametrize("evidence", [to_param(o, _kind(registry, o.ref.kind)) for o in offers])
    marker = metafunc.definition.get_closest_marker(SET_MARK)
    if marker is not None and "evidence_set" in metafunc.fixturenames:
        offers = _with_mutations(metafunc, _set_offers(metafunc.config, marker))
        metafunc.parametrize(
            "evidence_set", [to_param(o, _kind(registry, o.ref.kind)) for o in offers]
        )


def _kind(registry: KindRegistry, name: str) -> EvidenceKind | None:
    return registry.kind(name) if name in registry else None


def mutated(piece: Any, *mutations: Any, name: str = "") -> Any:
    """``piece`` changed by ``mutations`` and marked ``~name`` (no mutations: the tables as
    they are, re-marked), or None where it cannot be changed or they do not touch it."""
    change = getattr(piece, "mutated", None)
    return change(*mutations, name=name) if callable(change) else None


def _with_mutations(metafunc: pytest.Metafunc, offers: list[Offer]) -> list[Offer]:
    """Under ``--claims-mutations``: each piece, then a copy of it for every mutation of the
    claim that touches its tables (:mod:`pytest_claims.mutations`; a lever's copy is searched
    by the harness, :mod:`~pytest_claims.harness`), then its negative controls."""
    if not metafunc.config.getoption("--claims-mutations", False):
        return offers
    marker = metafunc.definition.get_closest_marker(CLAIM_MARK)
    entry = marker.kwargs.get("entry") if marker is not None else None
    if entry is None:
        return offers
    from pytest_claims.mutations import MutationError, parse_mutation

    changes = [(spec["name"], (parse_mutation(spec),)) for spec in entry.mutations]
    changes += _controls(metafunc, entry)
    out: list[Offer] = []
    for offer in offers:
        out.append(offer)
        if offer.skip or offer.piece is None:
            continue
        for name, applied in changes:
            try:
                piece = mutated(offer.piece, *applied, name=name)
            except MutationError as exc:
                raise pytest.UsageError(f"{entry.id}: {exc}") from None
            if piece is not None:
                out.append(replace(offer, ref=piece.ref, piece=piece))
    return out


def _controls(metafunc: pytest.Metafunc, entry: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """The negative controls of a claim's rows (:func:`~pytest_claims.mutations.controls`):
    one copy with all of them (``controls``), or one per control (``control.<name>``). The
    columns a claim reads are those its evidence marker declares."""
    from pytest_claims.mutations import controls

    marker = metafunc.definition.get_closest_marker(EVIDENCE_MARK)
    declared = tuple(marker.kwargs.get("columns", ())) if marker is not None else ()
    applied = controls(declared or None, getattr(entry, "nature", "finding") == "identity")
    if metafunc.config.getoption("--claims-controls", "together") == "each":
        return [(f"control.{m.name}", (m,)) for m in applied]
    return [("controls", applied)]


def pieces_by_id(registry: KindRegistry, options: Any) -> dict[str, Any]:
    """Every piece with something to build that the kinds offer, by evidence id."""
    offers = [o for kind in registry for o in kind.offers(options, EvidenceRequest())]
    offers += [build(options) for kind in registry for build in kind.sets.values()]
    return {o.ref.evidence_id: o.piece for o in offers if hasattr(o.piece, "build_tasks")}


def evidence_ref(item: pytest.Item) -> EvidenceRef | None:
    """The evidence a collected test runs on (None: no evidence parameter)."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    for value in callspec.params.values():
        if isinstance(value, EvidenceRef):
            return value
        ref = getattr(value, "ref", None)
        if isinstance(ref, EvidenceRef):
            return ref
    return None
