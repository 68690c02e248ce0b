"""Evidence: the paper's released tables and the references that name each piece of evidence.

Layer 4 of qkcore. It may import every layer below (analyses, models, the core) and pytest's
parametrization; nothing below imports it.

- :mod:`~qkcore.evidence.paper_data` - the released tables: discovery from file names, checks
- :mod:`~pytest_claims.refs`       - ``EvidenceRef`` and the ``pytest.param`` that names it
- :mod:`~qkcore.evidence.pieces`     - the ``Evidence`` protocol, each kind's pieces and the
  ``BuildTask`` s that prepare them
- :mod:`~qkcore.evidence.params`     - the registry of kinds: markers -> parameters
- :mod:`~qkcore.evidence.options`    - each kind's command-line options and their checks
- :mod:`~qkcore.evidence.fetch`      - the paper's tables from its repository, verified
"""
