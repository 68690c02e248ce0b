"""``qk-claims-catalogue``: the generated tables of docs/claims.md - the catalogue, and the
findings map.

Example::

    qk-claims-catalogue                                # print the catalogue's table
    qk-claims-catalogue claims/catalogue.toml --into docs/claims.md   # rewrite its tables
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_claims.catalogue import Catalogue, catalogue_table, readme_with_table
from pytest_claims.checks import CheckError
from pytest_claims.coverage import (
    FINDINGS_FILE,
    findings_table,
    read_findings,
    readme_with_findings,
)

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``qk-claims-catalogue [CATALOGUE] [--into docs/claims.md]``: print the catalogue's table,
    or write it - and the findings map's table, when ``findings.toml`` sits beside the
    catalogue (:mod:`~pytest_claims.coverage`) - into that file's marked blocks."""
    parser = argparse.ArgumentParser(prog="qk-claims-catalogue", description=main.__doc__)
    parser.add_argument("catalogue", nargs="?", default="claims/catalogue.toml", type=Path)
    parser.add_argument(
        "--into",
        "--readme",  # its name when the tables stood in README
        dest="readme",
        type=Path,
        default=None,
        help="write the tables into this markdown file's marked blocks (docs/claims.md)",
    )
    args = parser.parse_args(argv)
    findings_path = args.catalogue.parent / FINDINGS_FILE
    try:
        table = catalogue_table(Catalogue.read(args.catalogue))
        if args.readme is None:
            print(table, end="")
            return 0
        text = readme_with_table(args.readme.read_text(encoding="utf-8"), table)
        if findings_path.is_file():
            text = readme_with_findings(text, findings_table(read_findings(findings_path)))
    except CheckError as exc:
        parser.error(str(exc))
    args.readme.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
