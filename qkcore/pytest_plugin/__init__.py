"""The claims pytest plugin: register with ``pytest_plugins = ["qkcore.pytest_plugin"]``.

Layer: the top of qkcore. It may import every layer below; nothing in qkcore imports it.

A verdict's walk, from the claim test to claims.json: ``author`` (the check) -> ``recorder``
-> ``checks`` (the verdict its checks imply) -> ``row`` (the phase's row and the baseline's
rules) -> ``session`` (rows gathered from workers) -> ``finish`` (populations, drift) ->
``reports`` (the files).

- :mod:`~qkcore.pytest_plugin.author`    - ``@claim`` and the ``claim`` fixture: the author's API
- :mod:`~qkcore.pytest_plugin.catalogue` - the claims catalogue (claims/catalogue.toml)
- :mod:`~qkcore.pytest_plugin.hooks`     - the hooks and fixtures, each handing off
- :mod:`~qkcore.pytest_plugin.hookspecs` - the hook a suite implements to add evidence kinds
- :mod:`~qkcore.pytest_plugin.kinds`     - the registry of evidence kinds (the extension point)
- :mod:`~qkcore.pytest_plugin.evidence`  - evidence flags, markers and parameters
- :mod:`~qkcore.pytest_plugin.options`   - the plugin's own flags
- :mod:`~qkcore.pytest_plugin.recorder`  - what a claim test records
- :mod:`~qkcore.pytest_plugin.checks`    - checks, and the verdict a row's checks imply
- :mod:`~qkcore.pytest_plugin.verdict`   - the one ``Verdict`` type, its orders and names
- :mod:`~qkcore.pytest_plugin.row`       - one row: a phase's verdict, the baseline's rules
- :mod:`~qkcore.pytest_plugin.session`   - the session's state, phases to rows, xdist gathering
- :mod:`~qkcore.pytest_plugin.populations` - a toy recipe's seeds judged as one population
- :mod:`~qkcore.pytest_plugin.prepare`   - the preparation phase: evidence built before tests
- :mod:`~qkcore.pytest_plugin.finish`    - the session's end: populations, drift, reports
- :mod:`~qkcore.pytest_plugin.baseline`  - the baseline: verdicts and the evidence behind them
- :mod:`~qkcore.pytest_plugin.drift`     - what moved: population counts, deterministic numbers
- :mod:`~qkcore.pytest_plugin.compare`   - two runs compared as markdown (qk-claims-compare)
- :mod:`~qkcore.pytest_plugin.reports`   - claims.json, claims.md, claims.html, errata.md,
  mutations.md, figures and the terminal summary
"""

from qkcore.pytest_plugin.author import Claim, claim
from qkcore.pytest_plugin.checks import Comparison
from qkcore.pytest_plugin.evidence import add_kind_options
from qkcore.pytest_plugin.hooks import (
    claim_fixture,
    claim_record,
    paper_data,
    pytest_addhooks,
    pytest_addoption,
    pytest_collection,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_generate_tests,
    pytest_itemcollected,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)

__all__ = [
    "Claim",
    "Comparison",
    "add_kind_options",
    "claim",
    "claim_fixture",
    "claim_record",
    "paper_data",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collection",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_itemcollected",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]
