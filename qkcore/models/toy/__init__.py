"""Toy attention-only transformers trained here, in the manner of nanoGPT.

- :mod:`~qkcore.models.toy.model` - ``ToyConfig`` (one dataclass: everything a run depends on)
  and ``ToyTransformer``
- :mod:`~qkcore.models.toy.native` - the toys' training arithmetic in C (``causal_attention.c``,
  ``toy_step.c``): compiled into the cache on first use, the same bits on every machine, and
  its AdamW
- :mod:`~qkcore.models.toy.causal_attention` - the native attention kernel as an autograd
  function (the model's training path where the whole native step does not apply)
- :mod:`~qkcore.models.toy.step` - ``NativeStep``: a model's whole training step in C
- :mod:`~qkcore.models.toy.train` - the §10 task, the spectral penalties, the training loop,
  ``TrainedRun``
- :mod:`~qkcore.models.toy.cache` - runs cached on disk by config and training code
- :mod:`~qkcore.models.toy.grid`  - the five arms of the §10 constrained-training grid
- :mod:`~qkcore.models.toy.view`  - ``loaded_toy(run, step)``: the analysis view of a run, the
  only door from a run to the analyses

Imports run one way: native <- causal_attention <- model <- step <- train <- cache <- view (grid
needs only the model).

How the free APE toys solve the task (measured on the CPU regime's ape-s0, 2026-11-30): not
with the classic circuit. On ``[r, r]`` (|r| = 16) their layer-1 heads put 0.66-0.76 of their
attention at offset ``i - j = L - 4`` and ~0.01 at the induction target ``L - 1``, and the
layer-0 heads attend at fixed offsets: one at 1 (0.99), the others at 3 and 5 (0.67 / 0.31).
So key ``j`` holds the tokens 1, 3 and 5 back; a second-copy query ``i`` (holding ``x_{i-1}``)
matches the key whose 5-back token equals its own previous token, ``j = i - L + 4``, and reads
from it the token 3 back, ``x_{j-3} = x_{i-L+1}``: the answer. An induction circuit shifted by
fixed offsets that learned absolute positions make cheap - which is why the APE toys reach a
low second-copy loss (1.1-1.2 nats at |r| = 8-16) with an "induction score" of 0.01, and why the
classic-circuit premise fails on them. The RoPE toys do attend at the target (0.80-0.83 at
``L - 1``). On the training task tokens recur at a median distance of 7 (a random map's walk
falls into short cycles), far shorter than the 64-token copies behaviour is scored on.
"""
