"""Evidence in pytest: the kinds' flags and markers, and the parameters a claim test runs over.

A claim test declares what can bear on it and receives one piece per parameter::

    @claim("S6a", evidence=("paper", "weights"), schemes=("rope",), columns=("prev", "D_head"))
    def test_x(evidence, claim): ...                 # test_x[paper:pythia-410m], ...

    @pytest.mark.evidence("paper", models=("gpt2",))  # the same, as a bare marker
    @pytest.mark.evidence_set("paper", "toy-grid")    # one parameter per kind: every piece

Each kind (:mod:`~qkcore.pytest_plugin.kinds`) offers its pieces
(:class:`~qkcore.evidence.kinds.Offer`); here each offer becomes a ``pytest.param`` with the
evidence id, a marker for its kind and one per scheme family (``-m rope``, ``-k rope``), and a
skip with the kind's reason. Installed through the ``pytest11`` entry point, this is all a suite
needs: no conftest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from qkcore.errors import QKError
from qkcore.evidence.kinds import EvidenceKind, EvidenceRequest, Offer
from qkcore.evidence.options import EvidenceOptions, check_evidence_options
from qkcore.evidence.params import BUILTIN_KINDS
from qkcore.evidence.params import paper_data as discover_paper_data
from qkcore.evidence.refs import SCHEME_FAMILY, EvidenceRef
from qkcore.pytest_plugin.checks import CheckError
from qkcore.pytest_plugin.kinds import KindRegistry

if TYPE_CHECKING:
    from qkcore.evidence.paper_data import PaperData

__all__ = [
    "add_kind_options",
    "evidence_options",
    "evidence_params",
    "evidence_ref",
    "generate_evidence",
    "kinds_of",
    "paper_data",
    "pieces_by_id",
    "register_evidence",
]

_registry_key = pytest.StashKey[KindRegistry]()
_options_key = pytest.StashKey[EvidenceOptions]()


def add_kind_options(parser: pytest.Parser, kind: EvidenceKind) -> None:
    """Add the flags a kind declares (call from ``pytest_addoption``)."""
    group = parser.getgroup("evidence", "evidence sources of the claims suite")
    for option in kind.options:
        group.addoption(option.flag, **option.keywords)


def add_builtin_options(parser: pytest.Parser) -> None:
    for kind in BUILTIN_KINDS:
        add_kind_options(parser, kind)


def register_evidence(config: pytest.Config) -> KindRegistry:
    """Build the session's registry (built-in kinds, then the suite's), its markers, and check
    the evidence flags once: a bad value is one usage error, never one per test."""
    registry = KindRegistry(BUILTIN_KINDS)
    try:
        for kinds in config.hook.pytest_claims_evidence_kinds():
            for kind in kinds:
                registry.register(kind)
    except CheckError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_registry_key] = registry
    config.addinivalue_line(
        "markers",
        "evidence(*kinds, schemes=None, models=None, columns=(), checkpoints=False): "
        "evidence a claim test takes, one piece per parameter (qkcore plugin)",
    )
    config.addinivalue_line(
        "markers", "evidence_set(*sets): every piece of a kind as one parameter (qkcore plugin)"
    )
    for kind in registry:
        config.addinivalue_line(
            "markers", f"{kind.name}: evidence of kind '{kind.name}', {kind.id_format}"
        )
    for family in sorted(set(SCHEME_FAMILY.values()) - {"unknown"}):
        config.addinivalue_line("markers", f"{family}: evidence with positional scheme {family}")
    options = _read_options(config, registry)
    try:
        check_evidence_options(options)
    except QKError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_options_key] = options
    return registry


def _read_options(config: pytest.Config, registry: KindRegistry) -> EvidenceOptions:
    values = {}
    for kind in registry:
        for option in kind.options:
            try:
                values[option.name] = config.getoption(option.dest)
            except ValueError:  # a suite's kind whose flags its plugin did not add
                raise pytest.UsageError(
                    f"evidence kind {kind.name!r} declares {option.flag}, but no plugin added it: "
                    "call qkcore.pytest_plugin.add_kind_options(parser, kind) in pytest_addoption"
                ) from None
    return EvidenceOptions.from_values(values)


def kinds_of(config: pytest.Config) -> KindRegistry:
    """The session's registry of evidence kinds."""
    return config.stash[_registry_key]


def evidence_options(config: pytest.Config) -> EvidenceOptions:
    """The session's evidence flags."""
    return config.stash[_options_key]


def to_param(offer: Offer) -> Any:
    """An offer as a test parameter: its id, its kind's and families' markers, its skip."""
    marks: list[Any] = [getattr(pytest.mark, offer.ref.kind)]
    marks += [getattr(pytest.mark, family) for family in offer.marked_families]
    if offer.skip:
        marks.append(pytest.mark.skip(reason=offer.skip))
    value = offer.piece if offer.piece is not None else offer.ref
    return pytest.param(value, id=offer.ref.evidence_id, marks=marks)


def evidence_params(refs: Iterable[EvidenceRef]) -> list[Any]:
    """Parameters for bare references (tests of the plugin itself): id and markers, no piece."""
    return [to_param(Offer(ref)) for ref in refs]


def _offers(config: pytest.Config, mark: pytest.Mark) -> list[Offer]:
    registry, options = kinds_of(config), evidence_options(config)
    try:
        request = EvidenceRequest.from_keywords(mark.kwargs)
        return [o for name in mark.args for o in registry.kind(name).offers(options, request)]
    except (QKError, CheckError) as exc:
        raise pytest.UsageError(f"@pytest.mark.evidence{mark.args}: {exc}") from None


def _set_offers(config: pytest.Config, mark: pytest.Mark) -> list[Offer]:
    registry, options = kinds_of(config), evidence_options(config)
    try:
        return [registry.set_builder(name)(options) for name in mark.args]
    except (QKError, CheckError) as exc:
        raise pytest.UsageError(f"@pytest.mark.evidence_set{mark.args}: {exc}") from None


def generate_evidence(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``evidence`` / ``evidence_set`` of a test from its markers (and, in a
    mutation run, each released piece once more per mutation its claim declares)."""
    marker = metafunc.definition.get_closest_marker("evidence")
    if marker is not None and "evidence" in metafunc.fixturenames:
        offers = _with_mutations(metafunc, _offers(metafunc.config, marker))
        metafunc.parametrize("evidence", [to_param(o) for o in offers])
    marker = metafunc.definition.get_closest_marker("evidence_set")
    if marker is not None and "evidence_set" in metafunc.fixturenames:
        offers = _with_mutations(metafunc, _set_offers(metafunc.config, marker))
        metafunc.parametrize("evidence_set", [to_param(o) for o in offers])


def _with_mutations(metafunc: pytest.Metafunc, offers: list[Offer]) -> list[Offer]:
    """Under ``--claims-mutations``: each released piece, then a copy of it for every mutation
    of the claim that touches its tables (:mod:`qkcore.evidence.mutations`; a lever's copy is
    searched by the harness, :mod:`~qkcore.pytest_plugin.harness`), then its negative
    controls."""
    if not metafunc.config.getoption("--claims-mutations", False):
        return offers
    marker = metafunc.definition.get_closest_marker("claim")
    entry = marker.kwargs.get("entry") if marker is not None else None
    if entry is None:
        return offers
    from qkcore.evidence.mutations import mutated_piece, parse_mutation

    mutations = [(spec["name"], (parse_mutation(spec),)) for spec in entry.mutations]
    mutations += _controls(metafunc, entry)
    out: list[Offer] = []
    for offer in offers:
        out.append(offer)
        if offer.skip or offer.piece is None:
            continue
        for name, applied in mutations:
            piece = mutated_piece(offer.piece, *applied, name=name)
            if piece is not None:
                out.append(replace(offer, ref=piece.ref, piece=piece))
    return out


def _controls(metafunc: pytest.Metafunc, entry: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """The negative controls of a claim's rows (:func:`~qkcore.evidence.mutations.controls`):
    one copy with all of them (``controls``), or one per control (``control.<name>``). The
    columns a claim reads are those its evidence marker declares."""
    from qkcore.evidence.mutations import controls

    marker = metafunc.definition.get_closest_marker("evidence")
    declared = tuple(marker.kwargs.get("columns", ())) if marker is not None else ()
    applied = controls(declared or None, getattr(entry, "nature", "finding") == "identity")
    if metafunc.config.getoption("--claims-controls", "together") == "each":
        return [(f"control.{m.name}", (m,)) for m in applied]
    return [("controls", applied)]


def all_pieces(config: pytest.Config) -> dict[str, Any]:
    """Every piece any kind offers this run, by evidence id (the controller's view under
    xdist, where no test items exist: :mod:`~qkcore.pytest_plugin.prepare`)."""
    return pieces_by_id(kinds_of(config), evidence_options(config))


def pieces_by_id(registry: KindRegistry, options: EvidenceOptions) -> dict[str, Any]:
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


@pytest.fixture(scope="session")
def paper_data(request: pytest.FixtureRequest) -> tuple[PaperData | None, str]:
    """The paper's released tables (``None`` when absent) and, then, the reason why."""
    return discover_paper_data(evidence_options(request.config).paper_data)
