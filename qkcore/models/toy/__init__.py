"""Toy attention-only transformers trained here, in the manner of nanoGPT.

- :mod:`~qkcore.models.toy.model` - ``ToyConfig`` (one dataclass: everything a run depends on)
  and ``ToyTransformer``
- :mod:`~qkcore.models.toy.train` - the §10 task, the spectral penalties, the training loop,
  ``TrainedRun``
- :mod:`~qkcore.models.toy.cache` - runs cached on disk by config and training code
- :mod:`~qkcore.models.toy.grid`  - the five arms of the §10 constrained-training grid
- :mod:`~qkcore.models.toy.view`  - ``loaded_toy(run, step)``: the analysis view of a run, the
  only door from a run to the analyses

Imports run one way: model <- train <- cache <- view (grid needs only the model).
"""
