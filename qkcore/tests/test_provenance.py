"""Every number of the claims catalogue shows where it comes from.

A bar the suite judges by is the paper's only when the text it cites says it. For every
vocabulary term, claim margin and claim threshold, one of:

- the cited text shows the number (``0.05``, ``.05``, ``5%``, ``10^{-3}``), or the number is
  the edge of a printed number's precision (22.5 for a printed "22%", 0.455 for "0.46");
- the entry quotes ``words`` the cited text uses, which name the number by a fixed
  dictionary ("top-quintile" -> 0.8, "bottom quartile" -> 0.25, "majority" -> 0.5);
- the entry says ``ours`` and why (a convention of the suite the paper does not state).

The cited text is the source line and its two neighbours each side (a sentence wraps), and for
a threshold also the claim's quoted sentence. A source outside the paper's folders (a file this
machine lacks) skips, naming it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.catalogue import Catalogue, threshold_provenance

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
FOLDERS = (SHARED / "paper-source", SHARED)
CATALOGUE = Catalogue.read(REPO / "claims" / "catalogue.toml")

#: words that name a number, and the numbers they name
WORDS: dict[str, tuple[float, ...]] = {
    "quintile": (0.8, 0.2),
    "quartile": (0.25, 0.75),
    "decile": (0.9, 0.1),
    "third": (1 / 3, 2 / 3, 0.333, 0.667),
    "median": (0.5,),
    "half": (0.5,),
    "majority": (0.5,),
    "most": (0.5,),
    "usually": (0.5,),
    "chance": (0.5,),
    "positive": (0.0,),
    "negative": (0.0,),
    "sign": (0.0,),
    "zero": (0.0,),
    "all": (1.0,),
    "separat": (0.0,),
}
#: a number; its sign only where a dash cannot be a range's ("4--22%" is 4 to 22)
_NUMBER = re.compile(r"(?<![\d.^{])(?:(?<![\d-])[-+−])?\d*\.?\d+(?:[eE][-+]?\d+)?")


def _text(source: str) -> str | None:
    """The cited line and two each side, or None where the file is not on this machine."""
    name, _, line = source.partition(":")
    path = next((folder / name for folder in FOLDERS if (folder / name).is_file()), None)
    if path is None or not line.split("-")[0].isdigit():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    first = int(line.split("-")[0])
    last = int(line.split("-")[-1]) if "-" in line else first
    return "\n".join(lines[max(0, first - 3) : last + 2])


def _printed_numbers(text: str) -> list[tuple[float, int]]:
    """Every number the text prints, with its decimals; a percentage also as a fraction."""
    out = []
    for match in _NUMBER.finditer(text.replace("−", "-")):
        printed = match.group().lstrip("+")
        decimals = (
            len(printed.split(".")[1]) if "." in printed and "e" not in printed.lower() else 0
        )
        number = float(printed)
        out.append((number, decimals))
        after = text[match.end() : match.end() + 2]
        if after.startswith("%") or after == "\\%":
            out.append((number / 100, decimals + 2))
    for match in re.finditer(r"10\^\{?(-?\d+)\}?", text):
        out.append((10.0 ** int(match.group(1)), max(0, -int(match.group(1)))))
    return out


def _shows(text: str, value: float) -> bool:
    """The text prints the number, or a number whose printed precision gives it: the edge
    of its last digit (22.5 for "22%"), or one unit or half a unit of it (0.01, 0.0005)."""
    for number, decimals in _printed_numbers(text):
        unit = 10.0**-decimals
        candidates = (number, number - unit / 2, number + unit / 2)
        if any(math.isclose(value, c, rel_tol=1e-9, abs_tol=1e-12) for c in candidates):
            return True
        if decimals and any(math.isclose(value, u, rel_tol=1e-9) for u in (unit, unit / 2)):
            return True
    return False


def _plain(text: str) -> str:
    """Text as words compare: lower case, dashes (LaTeX's ``--``, en dashes) as ``-``."""
    return text.lower().replace("--", "-").replace("–", "-").replace("—", "-")


def _named_by(words: str, text: str, value: float) -> str:
    """Why ``words`` do not name ``value`` in ``text`` ("" when they do): the text has the
    words, and they name the number (by the dictionary, or by printing it)."""
    if _plain(words) not in _plain(text):
        return f"the words {words!r} are not in the cited text"
    named = [n for word, ns in WORDS.items() if word in words.lower() for n in ns]
    named += [n for n, _ in _printed_numbers(words.replace("-", " "))]
    if not any(math.isclose(value, n, abs_tol=1e-3) for n in named):
        return f"the words {words!r} name {named or 'no number'}, not {value}"
    return ""


def _problem(value: Any, provenance: dict[str, str], text: str) -> str:
    """Why a number's provenance fails ("" when it holds)."""
    if provenance.get("ours", "").strip():
        return ""
    numbers = [value] if not isinstance(value, list | tuple) else list(value)
    words = provenance.get("words", "")
    if isinstance(value, list | tuple) and not words:
        # a one-sided range: one end is the bar, the other the quantity's own bound (-1 for a
        # rho, 0 for a percentile): the bar must show
        shown = [_shows(text, float(n)) for n in numbers if isinstance(n, int | float)]
        return "" if any(shown) else f"neither end of {value} is in the cited text"
    for number in numbers:
        if isinstance(number, bool) or not isinstance(number, int | float):
            continue
        if words:
            problem = _named_by(words, text, float(number))
            if problem and not (isinstance(value, list | tuple) and abs(number) in (0, 1, 2)):
                return problem
        elif not _shows(text, float(number)) and not math.isinf(float(number)):
            return f"{number} is not in the cited text, and no words or 'ours' say why"
    return ""


def _terms() -> list[Any]:
    terms = [
        pytest.param(term, id=f"vocabulary.{term.name}") for term in CATALOGUE.vocabulary.values()
    ]
    for claim_id, entry in CATALOGUE.entries.items():
        terms += [
            pytest.param(term, id=f"{claim_id}.margins.{name}")
            for name, term in entry.margins.items()
        ]
    return terms


@pytest.mark.parametrize("term", _terms())
def test_a_shared_bar_or_margin_shows_its_number(term):
    for said in (term.source, term.means):
        if said.startswith("ours"):
            assert len(said) > len("ours: ") + 10, f"{term.name}: 'ours' needs its reason"
            return
    text = _text(term.source)
    if text is None:
        pytest.skip(f"{term.source}: not on this machine")
    problem = _problem(term.value, {"words": term.words}, text)
    assert not problem, f"{term.name} (value {term.value}, source {term.source}): {problem}"


def _thresholds() -> list[Any]:
    return [
        pytest.param(claim_id, name, id=f"{claim_id}.thresholds.{name}")
        for claim_id, entry in CATALOGUE.entries.items()
        for name in entry.thresholds
    ]


@pytest.mark.parametrize(("claim_id", "name"), _thresholds())
def test_a_claims_threshold_shows_its_number(claim_id, name):
    entry = CATALOGUE.entries[claim_id]
    value, provenance = threshold_provenance(entry, name)
    cited = _text(entry.source) if entry.source else None
    text = "\n".join(t for t in (entry.sentence, entry.statement, cited) if t)
    problem = _problem(value, provenance, text)
    assert not problem, f"{claim_id} threshold {name} = {value} ({entry.source}): {problem}"


def test_the_rule_reads_a_print_and_its_precision():
    """The checker itself: printed forms, precision edges, words, and what it refuses."""
    assert _shows("q<10^{-3}", 1e-3) and _shows("p=0.05", 0.05) and _shows("5\\%", 0.05)
    assert _shows("barely attenuates (4--22\\%)", 22.5)
    assert _shows("content_pos_frac 0.46--0.57", 0.455)
    assert not _shows("dir_frac 0.004--0.006", 0.1)
    assert _named_by("top-quintile", "versus top-quintile under RoPE", 0.8) == ""
    assert _named_by("top-quintile", "versus top-quintile under RoPE", 0.5)
    assert _problem(0.8, {"ours": "a convention"}, "") == ""
