"""The claims pytest plugin: register with ``pytest_plugins = ["qkcore.pytest_plugin"]``.

Layer: the top of qkcore. It may import every layer below; nothing in qkcore imports it.

- :mod:`~qkcore.pytest_plugin.author`    - ``@claim`` and the ``claim`` fixture: the author's API
- :mod:`~qkcore.pytest_plugin.catalogue` - the claims catalogue (claims/catalogue.toml)
- :mod:`~qkcore.pytest_plugin.hooks`     - the hooks and fixtures, each handing off
- :mod:`~qkcore.pytest_plugin.hookspecs` - the hook a suite implements to add evidence kinds
- :mod:`~qkcore.pytest_plugin.kinds`     - the registry of evidence kinds (the extension point)
- :mod:`~qkcore.pytest_plugin.evidence`  - evidence flags, markers and parameters
- :mod:`~qkcore.pytest_plugin.options`   - the plugin's own flags
- :mod:`~qkcore.pytest_plugin.recorder`  - what a claim test records
- :mod:`~qkcore.pytest_plugin.checks`    - checks, and the verdict a row's checks imply
- :mod:`~qkcore.pytest_plugin.rows`      - one phase of a claim test to its row
- :mod:`~qkcore.pytest_plugin.verdicts`  - a phase's verdict, the baseline's rules for one test
- :mod:`~qkcore.pytest_plugin.state`     - the session's options, baseline and results
- :mod:`~qkcore.pytest_plugin.session`   - xdist aggregation in the controller
- :mod:`~qkcore.pytest_plugin.prepare`   - the preparation phase: evidence built before tests
- :mod:`~qkcore.pytest_plugin.finish`    - the session's end: populations, drift, reports
- :mod:`~qkcore.pytest_plugin.baseline`  - the baseline: verdicts and the evidence behind them
- :mod:`~qkcore.pytest_plugin.drift`     - what moved: population counts, deterministic numbers
- :mod:`~qkcore.pytest_plugin.compare`   - two runs compared as markdown (qk-claims-compare)
- :mod:`~qkcore.pytest_plugin.terminal`  - the claims section of the terminal summary
- :mod:`~qkcore.pytest_plugin.report`    - claims.json, claims.md, claims.html
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
