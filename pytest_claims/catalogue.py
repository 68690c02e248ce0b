"""The claims catalogue: every claim's place in the paper, its thresholds and printed numbers.

One TOML file beside the claim tests (``claims/catalogue.toml``) holds, per claim ID::

    [S6a]
    section = "6"
    source = "qk_spectral.tex:306"                 # file:line of the sentence tested
    sentence = "... top-quintile under RoPE (medians 0.89/0.85/0.79) ..."
    statement = "RoPE top-5 prev heads sit high in their model's D_head distribution"
    thresholds = { side = 0.5 }                    # declared once; the docstring quotes them
    [S6a.printed]                                  # the paper's numbers, as printed
    "median D_head percentile" = { pythia-410m = "0.89", gpt2 = "0.21" }

One reserved table, ``[vocabulary]``, holds the bars more than one claim uses (what
"symmetric", "a strong head", alpha mean), each with its justifying sentence::

    [vocabulary.symmetric]
    value = 0.1
    means = "dir_frac <= 0.1, i.e. ||M_A||^2/||M||^2 <= 0.01"
    source = "qk_spectral.tex:494"

A claim reads a term by name like its own thresholds (``judge.threshold("symmetric")``); a
claim that declares a threshold of the same name is an error, so two claims cannot disagree
on what a shared word means.

Another, ``[printed]``, holds the paper's numbers that more than one claim judges (Table 3's
medians, read by S6a-S6d), shaped like a claim's ``printed``; a claim reads them as its own, and
a claim that prints a number of the same name is an error (one text per printed number)::

    [printed]
    "median D_head percentile of the top-5 prev heads" = { gpt2 = "0.21", pythia-410m = "0.89" }

An absence claim judges its effect against a margin (:meth:`Claim.absence`), and a margin
always names its source: a vocabulary term, or one of the claim's own ``margins``, shaped
like a term::

    [S7f.margins.attenuates_nothing]
    value = 22.5
    means = "attenuation % at which the paper's recipe 'finds nothing' (placebo, 4-22%)"
    source = "qk_spectral.tex:391"

``mutations`` (:mod:`pytest_claims.mutations`) declare the changes of the claim's deciding
evidence that must move it, and ``unmutated`` says, per check name (or ``"*"``), why a check
cannot react to any (an identity, a printed number).

``nature = "identity"`` marks a claim that checks a mathematical identity on random operators,
reported apart from empirical findings.

Tests read it through :func:`~pytest_claims.author.claim`; the report shows the sentence
and its source; docs/claims.md's catalogue table is generated from it.

Why one module: reading the TOML and validating every claim's fields against the shared
vocabulary are one step (an error names the file, the claim and the fix in one place).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from pytest_claims.checks import CheckError

__all__ = [
    "CATALOGUE_FILE",
    "NATURES",
    "SHARED_PRINTED",
    "VOCABULARY",
    "Catalogue",
    "ClaimEntry",
    "Term",
    "catalogue_for",
    "catalogue_table",
    "check_catalogues",
    "is_claims_catalogue",
    "readme_with_block",
    "readme_with_table",
    "threshold_provenance",
    "use_catalogue_name",
]

CATALOGUE_FILE = "catalogue.toml"
#: the reserved table of shared terms
VOCABULARY = "vocabulary"
#: the reserved table of printed numbers more than one claim judges
SHARED_PRINTED = "printed"
#: what a claim's "supported" means: an empirical finding, or an identity verified on
#: random operators (true by construction, reported apart)
NATURES = ("finding", "identity")
_FIELDS = {
    "nature",
    "section",
    "source",
    "sentence",
    "statement",
    "thresholds",
    "printed",
    "restates",
    "tests",
    "margins",
    "mutations",
    "unmutated",
}


@dataclass(frozen=True)
class Term:
    """A shared bar of the vocabulary: its value, what it means, and the sentence behind it."""

    name: str
    value: Any
    means: str
    source: str
    #: the words of the source that name the value ("top-quintile"), where it prints none
    words: str = ""


@dataclass(frozen=True)
class ClaimEntry:
    """One claim of the catalogue."""

    id: str
    section: str
    statement: str
    nature: str = "finding"
    source: str = ""
    sentence: str = ""
    restates: str = ""  # press claims: the paper's sentence they restate (file:line)
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    printed: Mapping[str, Any] = field(default_factory=dict)
    #: per test function, what differs for it (a claim tested from two sides: F2's scores
    #: rebuilt from factors and from frequency operators)
    tests: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: the claim's own margins of absence (each with its source, like a vocabulary term)
    margins: Mapping[str, Term] = field(default_factory=dict)
    #: the changes of its evidence that must move it (:mod:`pytest_claims.mutations`)
    mutations: tuple[Mapping[str, Any], ...] = ()
    #: per check name (or "*"), why the check cannot react to a mutation
    unmutated: Mapping[str, str] = field(default_factory=dict)
    #: per threshold given as a table, where its number comes from: the source's ``words``
    #: that name it, or ``ours`` and why (a threshold given as a number must be in the text)
    provenance: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    vocabulary: Mapping[str, Term] = field(default_factory=dict, compare=False, repr=False)
    shared_printed: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def for_test(self, name: str) -> ClaimEntry:
        """The entry as one test function sees it (its ``tests`` overrides applied)."""
        own = dict(self.tests.get(name, {}))
        unknown = set(own) - (_FIELDS - {"tests"})
        if unknown:
            raise CheckError(f"[{self.id}.tests.{name}] has unknown keys {sorted(unknown)}")
        return replace(self, **own, tests={}) if own else self

    def threshold(self, name: str) -> Any:
        """A declared threshold (or a vocabulary term) by name; a name declared in neither is a
        bug in the claim test."""
        if name in self.vocabulary:
            value = self.vocabulary[name].value
        elif name in self.thresholds:
            value = self.thresholds[name]
        else:
            raise CheckError(
                f"claim {self.id}: threshold {name!r} is not declared in the catalogue; add it "
                f"under [{self.id}] thresholds (declared: {sorted(self.thresholds)}; shared "
                f"terms: {sorted(self.vocabulary)})"
            )
        return tuple(value) if isinstance(value, list) else value

    def margin(self, name: str) -> Term:
        """A margin of absence by name: the claim's own, or a vocabulary term."""
        if name in self.margins:
            return self.margins[name]
        if name in self.vocabulary:
            return self.vocabulary[name]
        raise CheckError(
            f"claim {self.id}: margin {name!r} is not declared; add [{self.id}.margins.{name}] "
            "with value, means and source (the sentence that gives the margin), or use a "
            f"vocabulary term (declared: {sorted(self.margins)}; shared: {sorted(self.vocabulary)})"
        )

    def printed_value(self, name: str, key: str | None) -> str | None:
        """The paper's printed text for ``name`` (per model, or per ``key``, when the entry is a
        table): the claim's own print, or the shared ``[printed]`` table's."""
        found = self._print(name)
        if isinstance(found, Mapping):
            found = None if key is None else found.get(key)
        return None if found is None else str(found)

    def printed_table(self, name: str) -> dict[str, str]:
        """Every printed text of a per-key print (``{"gpt2": "0.21", ...}``, a new dict); a name
        that is not a table of prints is a bug in the claim test."""
        found = self._print(name)
        if not isinstance(found, Mapping):
            raise CheckError(
                f"claim {self.id}: printed {name!r} is not a table of prints in the catalogue; "
                f'declare it under [{self.id}.printed] as "{name}" = {{ key = "text", ... }} '
                f"(declared: {sorted(set(self.printed) | set(self.shared_printed))})"
            )
        return {key: str(text) for key, text in found.items()}

    def _print(self, name: str) -> Any:
        """The claim's own print of ``name``, else the shared ``[printed]`` table's."""
        return self.printed.get(name, self.shared_printed.get(name))


@dataclass(frozen=True)
class Catalogue:
    """Every entry of one catalogue file, by claim ID."""

    path: Path
    entries: Mapping[str, ClaimEntry]
    vocabulary: Mapping[str, Term] = field(default_factory=dict)

    def entry(self, claim_id: str) -> ClaimEntry:
        if claim_id not in self.entries:
            raise CheckError(
                f"claim {claim_id!r} is not in {self.path}; add a [{claim_id}] table with its "
                "section, source, sentence and statement"
            )
        return self.entries[claim_id]

    @classmethod
    def read(cls, path: Path) -> Catalogue:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise CheckError(f"{path}: cannot read the claims catalogue ({exc})") from None
        vocabulary = _vocabulary(path, data.pop(VOCABULARY, {}))
        shared_printed = data.pop(SHARED_PRINTED, {})
        _check_prints(f"{path}: [{SHARED_PRINTED}]", shared_printed)
        entries = {}
        for claim_id, table in data.items():
            unknown = set(table) - _FIELDS
            missing = {"section", "statement"} - set(table)
            if unknown or missing:
                raise CheckError(
                    f"{path}: [{claim_id}] has unknown keys {sorted(unknown)} or lacks "
                    f"{sorted(missing)}; the keys are {sorted(_FIELDS)}"
                )
            if table.get("nature", "finding") not in NATURES:
                raise CheckError(f"{path}: [{claim_id}] nature must be one of {NATURES}")
            own = [dict(table.get("thresholds", {}))]
            own += [dict(t.get("thresholds", {})) for t in table.get("tests", {}).values()]
            shadowed = sorted({name for t in own for name in t} & set(vocabulary))
            if shadowed:
                raise CheckError(
                    f"{path}: [{claim_id}] redeclares the shared term(s) {shadowed}; use "
                    f"[{VOCABULARY}.{shadowed[0]}] (one meaning for every claim) or a new name"
                )
            _check_prints(f"{path}: [{claim_id}.printed]", table.get("printed", {}))
            reprinted = sorted(set(table.get("printed", {})) & set(shared_printed))
            if reprinted:
                raise CheckError(
                    f"{path}: [{claim_id}.printed] redeclares the shared print(s) {reprinted}; "
                    f"keep them in [{SHARED_PRINTED}] only (one text per printed number)"
                )
            table = dict(table)
            table["thresholds"], table["provenance"] = _thresholds(
                f"{path}: [{claim_id}.thresholds]", table.get("thresholds", {})
            )
            where = f"{path}: [{claim_id}.margins]"
            table["margins"] = _terms(where, table.get("margins", {}))
            table["mutations"] = _mutations(path, claim_id, table.get("mutations", []))
            unmutated = table.get("unmutated", {})
            if not isinstance(unmutated, Mapping) or not all(
                isinstance(v, str) and v.strip() for v in unmutated.values()
            ):
                raise CheckError(
                    f"{path}: [{claim_id}.unmutated] maps a check name (or '*') to the reason it "
                    "cannot react to a mutation of its evidence, as text"
                )
            entries[claim_id] = ClaimEntry(
                id=claim_id, **table, vocabulary=vocabulary, shared_printed=shared_printed
            )
        return cls(path, entries, vocabulary)


def _check_prints(where: str, prints: Any) -> None:
    """Each print is the paper's text, or a table of texts by key: a dotted bare key
    (``pythia-1.4b = "0.85"`` is ``pythia-1`` -> ``4b``) would nest a table one level deeper."""
    if not isinstance(prints, Mapping):
        raise CheckError(
            f"{where} maps a printed number's name to its text, or to a table of texts by key "
            '("name" = { gpt2 = "0.21" })'
        )
    for name, text in prints.items():
        texts = text.values() if isinstance(text, Mapping) else (text,)
        bad = [t for t in texts if not isinstance(t, str)]
        if bad:
            raise CheckError(
                f'{where} {name!r}: a print is the paper\'s text (a string, e.g. "0.85") or a '
                f"table of texts by key; got {bad[0]!r} - quote a key with a dot in it "
                '("pythia-1.4b" = "0.85")'
            )


def _vocabulary(path: Path, data: Mapping[str, Any]) -> dict[str, Term]:
    return _terms(f"{path}: [{VOCABULARY}]", data)


def _mutations(path: Path, claim_id: str, data: Any) -> tuple[Mapping[str, Any], ...]:
    """The claim's declared mutations, each checked against the operations' grammar now, so a
    typo is one error at collection, not a crash inside the mutation run."""
    from pytest_claims.mutations import MutationError, parse_mutation

    if not isinstance(data, list):
        raise CheckError(
            f"{path}: [{claim_id}] mutations is an array of tables ([[{claim_id}.mutations]])"
        )
    for spec in data:
        try:
            parse_mutation(spec)
        except MutationError as exc:
            raise CheckError(f"{path}: [[{claim_id}.mutations]] {exc}") from None
    return tuple(dict(spec) for spec in data)


def _terms(where: str, data: Mapping[str, Any]) -> dict[str, Term]:
    terms = {}
    for name, term in data.items():
        keys = set(term) if isinstance(term, Mapping) else set()
        if not {"value", "means", "source"} <= keys <= {"value", "means", "source", "words"}:
            raise CheckError(
                f"{where}.{name} must have value, means and source (the sentence that justifies "
                "the bar, or 'ours: why'), and may quote the source's words that name the value"
            )
        value = term["value"]
        terms[name] = Term(
            name,
            tuple(value) if isinstance(value, list) else value,
            term["means"],
            term["source"],
            str(term.get("words", "")),
        )
    return terms


_PROVENANCE = ("words", "ours")


def _thresholds(
    where: str, data: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """A claim's thresholds as values, and where the table-form ones come from: ``{value,
    words}`` (the source's words naming it) or ``{value, ours}`` (the suite's, and why)."""
    values: dict[str, Any] = {}
    provenance: dict[str, dict[str, str]] = {}
    for name, raw in data.items():
        if not isinstance(raw, Mapping):
            values[name] = raw
            continue
        said = set(raw) & set(_PROVENANCE)
        if "value" not in raw or len(said) != 1 or set(raw) - {"value", *_PROVENANCE}:
            raise CheckError(
                f"{where}.{name}: a threshold is a number, or a table with value and one of "
                "words (the source's words that name it) or ours (why it is the suite's)"
            )
        values[name] = raw["value"]
        (key,) = said
        provenance[name] = {key: str(raw[key])}
    return values, provenance


def threshold_provenance(entry: ClaimEntry, name: str) -> tuple[Any, dict[str, str]]:
    """``(value, {"words": ...} or {"ours": ...} or {})`` of one of a claim's thresholds."""
    return entry.thresholds[name], dict(entry.provenance.get(name, {}))


@cache
def _read(path: Path) -> Catalogue:
    return Catalogue.read(path)


_NAME = [CATALOGUE_FILE]


def use_catalogue_name(name: str) -> None:
    """The file name catalogues have in this session (the ``claims_catalogue`` ini value)."""
    _NAME[0] = name


def catalogue_for(test_file: str | Path, name: str | None = None) -> Catalogue:
    """The catalogue of the suite a test file belongs to: the nearest claims catalogue (a file
    of the session's catalogue name that is one) in its folder or a parent."""
    name = name or _NAME[0]
    folder = Path(test_file).resolve().parent
    for candidate in (folder, *folder.parents):
        path = candidate / name
        if path.is_file() and is_claims_catalogue(path):
            return _read(path)
    raise CheckError(
        f"no claims catalogue ({name}) beside {test_file} or above it: a @claim test needs its "
        "suite's catalogue (pytest_claims.catalogue)"
    )


def is_claims_catalogue(path: Path) -> bool:
    """Whether a file of the catalogue's name is a claims catalogue: TOML with a
    ``[vocabulary]`` or a table holding a ``section`` and a ``statement``. A file that does not
    parse counts as one (its owner learns why); another tool's TOML does not."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
    except tomllib.TOMLDecodeError:
        return True
    return VOCABULARY in data or any(
        isinstance(table, Mapping) and {"section", "statement"} <= set(table)
        for table in data.values()
    )


def check_catalogues(paths: Iterable[Path], name: str = CATALOGUE_FILE) -> None:
    """Read the claims catalogue each path's claims use (the nearest one in its folder or
    above, and those one level below a folder): a :class:`CheckError` names the first problem.
    A file of the catalogue's name that is not a claims catalogue is not ours: left alone."""
    seen: set[Path] = set()
    for path in paths:
        folder = path.resolve() if path.is_dir() else path.resolve().parent
        above = (p / name for p in (folder, *folder.parents))
        found = [p for p in above if p.is_file() and is_claims_catalogue(p)][:1]
        below = sorted(folder.glob(f"*/{name}")) if path.is_dir() else []
        found += [p for p in below if is_claims_catalogue(p)]
        for catalogue in found:
            if catalogue not in seen:
                seen.add(catalogue)
                _read(catalogue)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def catalogue_table(catalogue: Catalogue) -> str:
    """README's table of the catalogue (``qk-claims-catalogue``)."""

    def order(claim_id: str) -> tuple[int, str, int, str]:
        # the paper's claims (F, S) first, then the companion's (R) and the press's (P)
        digits = "".join(c for c in claim_id[1:] if c.isdigit())
        rank = {"F": 0, "S": 1, "R": 2, "P": 3}.get(claim_id[0], 4)
        return (rank, claim_id[0], int(digits or 0), claim_id)

    rows = ["| ID | section | source (file:line) | statement |", "|---|---|---|---|"]
    for claim_id in sorted(catalogue.entries, key=order):
        entry = catalogue.entries[claim_id]
        source = entry.source or "-"
        if entry.restates:
            source += f" (restates {entry.restates})"
        rows.append(f"| {claim_id} | {entry.section} | {source} | {_cell(entry.statement)} |")
    return "\n".join(rows) + "\n"


#: README's catalogue table sits between these lines (rewritten by ``qk-claims-catalogue``).
README_START = "<!-- catalogue table: qk-claims-catalogue writes it -->"
README_END = "<!-- end of catalogue table -->"


def readme_with_block(readme: str, start_marker: str, end_marker: str, text: str) -> str:
    """README's text with the generated block between two marker lines replaced by ``text``."""
    start, end = readme.find(start_marker), readme.find(end_marker)
    if start < 0 or end < start:
        raise CheckError(f"README has no '{start_marker}' ... '{end_marker}' block")
    return readme[: start + len(start_marker)] + "\n\n" + text + "\n" + readme[end:]


def readme_with_table(readme: str, table: str) -> str:
    """README's text with its catalogue table replaced by ``table``."""
    return readme_with_block(readme, README_START, README_END, table)
