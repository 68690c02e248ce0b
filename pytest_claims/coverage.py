"""Which claim judges each finding of the paper: the findings map beside the catalogue.

``claims/findings.toml`` holds one ``[[finding]]`` per finding sentence (or clause) of the
paper, in tex order, mapped to the catalogue claims that judge it - or to the reason nothing
here can::

    [[finding]]
    lines = "52-54"                  # tex line(s) of the sentence
    where = "abstract"
    finding = "zeroing Im(M_t) eliminates induction on a pre-identified prev head"
    claims = ["S8c", "S8b"]
    note = "S8c judges 'eliminates', S8b the head's identity"

    [[finding]]
    lines = "458-459"
    where = "§9"
    finding = "the same steps and waypoint in both Pythia models"
    claims = []
    not_testable = "needs the Pythia-160m checkpoint tables, not in the released data"

docs/claims.md's findings table is generated from it (``qk-claims-catalogue --into
docs/claims.md``), and :func:`findings_problems` holds the map, the catalogue and the paper
together.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_claims.catalogue import Catalogue, readme_with_block
from pytest_claims.checks import CheckError

__all__ = [
    "FINDINGS_FILE",
    "README_FINDINGS_END",
    "README_FINDINGS_START",
    "Finding",
    "findings_problems",
    "findings_table",
    "read_findings",
    "readme_with_findings",
]

FINDINGS_FILE = "findings.toml"
_LINES = re.compile(r"^(\d+)(?:-(\d+))?$")
_KEYS = {"lines", "where", "finding", "claims", "not_testable", "note"}


@dataclass(frozen=True)
class Finding:
    """One finding sentence of the paper and what judges it."""

    lines: str
    where: str
    finding: str
    claims: tuple[str, ...] = ()
    not_testable: str = ""
    note: str = ""
    span: tuple[int, int] = field(default=(0, 0), compare=False)

    @property
    def testable(self) -> bool:
        return bool(self.claims)


def read_findings(path: Path) -> list[Finding]:
    """The findings map; a malformed row is one :class:`CheckError` naming it and the fix."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CheckError(f"{path}: cannot read the findings map ({exc})") from None
    rows = data.get("finding", [])
    findings = []
    for i, row in enumerate(rows, start=1):
        where = f"{path}: [[finding]] #{i} (lines {row.get('lines', '?')})"
        unknown = set(row) - _KEYS
        if unknown:
            raise CheckError(f"{where} has unknown keys {sorted(unknown)}; keys: {sorted(_KEYS)}")
        match = _LINES.match(str(row.get("lines", "")))
        if match is None:
            raise CheckError(f'{where}: lines must be "L" or "L1-L2"')
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        claims = tuple(row.get("claims", ()))
        reason = str(row.get("not_testable", ""))
        if bool(claims) == bool(reason):
            raise CheckError(
                f"{where}: give either claims (the IDs that judge it) or not_testable (why "
                "nothing here can), not both or neither"
            )
        findings.append(
            Finding(
                lines=row["lines"],
                where=str(row.get("where", "")),
                finding=str(row.get("finding", "")),
                claims=claims,
                not_testable=reason,
                note=str(row.get("note", "")),
                span=(first, last),
            )
        )
    return findings


def findings_problems(
    findings: Sequence[Finding], catalogue: Catalogue, paper_lines: int | None = None
) -> list[str]:
    """What is wrong between the map, the catalogue and the paper (empty when they agree):
    an ID the catalogue lacks, a paper claim no finding names, a line past the paper's end."""
    problems = []
    named = {c for f in findings for c in f.claims}
    for f in findings:
        for c in f.claims:
            if c not in catalogue.entries:
                problems.append(f"lines {f.lines}: claim {c} is not in the catalogue")
        first, last = f.span
        if first > last or (paper_lines is not None and last > paper_lines):
            problems.append(f"lines {f.lines}: not a range of the paper's {paper_lines} lines")
    for entry in catalogue.entries.values():
        paper = entry.source.startswith("qk_spectral.tex") and entry.section != "press"
        if paper and entry.id not in named:
            problems.append(f"claim {entry.id} ({entry.source}) judges no finding of the map")
    return problems


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def findings_table(findings: Sequence[Finding]) -> str:
    """README's findings table: a count, then one row per finding in tex order."""
    judged = sum(f.testable for f in findings)
    rows = [
        f"{len(findings)} finding sentences: {judged} judged by a claim, "
        f"{len(findings) - judged} not testable here.",
        "",
        "| tex lines | where | finding | judged by |",
        "|---|---|---|---|",
    ]
    for f in sorted(findings, key=lambda f: f.span):
        judge = ", ".join(f.claims) if f.claims else f"not testable here: {f.not_testable}"
        if f.note:
            judge += f" ({f.note})"
        rows.append(f"| {f.lines} | {_cell(f.where)} | {_cell(f.finding)} | {_cell(judge)} |")
    return "\n".join(rows) + "\n"


#: README's findings table sits between these lines (rewritten by ``qk-claims-catalogue``).
README_FINDINGS_START = "<!-- findings table: qk-claims-catalogue writes it -->"
README_FINDINGS_END = "<!-- end of findings table -->"


def readme_with_findings(readme: str, table: str) -> str:
    """README's text with its findings table replaced by ``table``."""
    return readme_with_block(readme, README_FINDINGS_START, README_FINDINGS_END, table)
