"""pytest-claims: a paper's claims as tests, judged into verdicts and reported.

A claim is an entry of the suite's catalogue (``catalogue.toml``: its sentence, thresholds and
printed numbers) and a test decorated with :func:`claim`, run over every piece of evidence the
suite's kinds offer; the test judges through the ``judge`` fixture (:class:`Claim`: statement,
premise, power, absence, printed, consistency), and each row's verdict - supported, refuted,
inconclusive, undecidable, not-applicable - is reported in claims.md, claims.html, claims.json
and errata.md, compared with a baseline, and proven by mutation runs to be about its evidence.

Installed, it is a pytest plugin in every session, and changes nothing in one that collects no
claim test. A suite registers its evidence kinds through the ``pytest_claims_evidence_kinds``
hook (:mod:`~pytest_claims.hookspecs`); the framework ships none and imports no numerical
package until a claim needs one.

A verdict's walk, from the claim test to claims.json: ``author`` (the check) -> ``recorder``
-> ``checks`` (the verdict its checks imply) -> ``row`` (the phase's row, the baseline's
rules) -> ``session`` (rows gathered from workers) -> ``finish`` (populations, drift) ->
``reports`` (the files).

- :mod:`~pytest_claims.author`    - ``@claim`` and the ``judge`` fixture: the author's API
- :mod:`~pytest_claims.catalogue` - the claims catalogue
- :mod:`~pytest_claims.kinds`     - what an evidence kind declares (``EvidenceKind``, ``Offer``)
- :mod:`~pytest_claims.refs`      - ``EvidenceRef``: which evidence a row is about
- :mod:`~pytest_claims.hookspecs` - the hooks a suite implements
- :mod:`~pytest_claims.plugin`    - the hooks and fixtures, each handing off
- :mod:`~pytest_claims.checks`    - checks, and the verdict a row's checks imply
- :mod:`~pytest_claims.stats`     - the judging rules: equivalence, printed precision,
  uncertainty models
- :mod:`~pytest_claims.mutations` + :mod:`~pytest_claims.harness` - the mutation run
- :mod:`~pytest_claims.reports`   - claims.json, claims.md, claims.html, errata.md,
  mutations.md, figures and the terminal summary
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_claims.author import Claim, PremiseUnmet, claim
    from pytest_claims.checks import Comparison
    from pytest_claims.errors import ClaimsError, EvidenceUnavailable
    from pytest_claims.evidence import add_kind_options
    from pytest_claims.kinds import EvidenceKind, EvidenceRequest, Offer, Option, Tolerance
    from pytest_claims.refs import EvidenceRef

#: public name -> the module that defines it: imported on first use, so loading the plugin
#: (which imports this package) costs only what the session uses
_HOMES = {
    "Claim": "author",
    "PremiseUnmet": "author",
    "claim": "author",
    "Comparison": "checks",
    "ClaimsError": "errors",
    "EvidenceUnavailable": "errors",
    "add_kind_options": "evidence",
    "EvidenceKind": "kinds",
    "EvidenceRequest": "kinds",
    "Offer": "kinds",
    "Option": "kinds",
    "Tolerance": "kinds",
    "EvidenceRef": "refs",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pytest_claims' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"pytest_claims.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Claim",
    "ClaimsError",
    "Comparison",
    "EvidenceKind",
    "EvidenceRef",
    "EvidenceRequest",
    "EvidenceUnavailable",
    "Offer",
    "Option",
    "PremiseUnmet",
    "Tolerance",
    "add_kind_options",
    "claim",
]
