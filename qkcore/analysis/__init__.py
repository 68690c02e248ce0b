"""Analyses that run models: behaviour, ablations, conventions, per-head tables, histories.

Layer 3 of qkcore. It may import :mod:`qkcore.models` and every layer below it; never the
evidence layer or pytest. An analysis reads a :class:`~qkcore.models.loaded.LoadedModel` and
never asks which source it came from.

- :mod:`~qkcore.analysis.behaviour`  - previous-token / duplicate / induction scores, losses
- :mod:`~qkcore.analysis.ablation`   - score-level ablations of one head and their sweeps
- :mod:`~qkcore.analysis.convention` - F2: scores rebuilt from the factors against the hooks
- :mod:`~qkcore.analysis.headtable`  - the per-head table with the paper's columns, cached
- :mod:`~qkcore.analysis.tablecompare` - two tables of one model, column by column
- :mod:`~qkcore.analysis.depth`      - attention on real inputs in the resolvent view
- :mod:`~qkcore.analysis.history`    - §9 natural history along a run's checkpoints
- :mod:`~qkcore.analysis.perhead`    - per-head results of a model, cached by its content
- :mod:`~qkcore.analysis.ginibre`    - random-matrix nulls of a shape (bands, head pools), cached
- :mod:`~qkcore.analysis.gridruns`   - §10 grid runs in one form (released or trained here)
- :mod:`~qkcore.analysis.circuit`    - whether a toy's circuit is the classic one
"""
