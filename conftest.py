"""Repository-wide pytest configuration: hypothesis profiles (the claims plugin brings the
evidence flags, markers and parameters itself).

``dev`` (default): random examples, ``deadline=None`` (linear algebra timing varies with load).
``thorough``: 2000 examples per property, for a long local run before changing a tolerance.
``ci``: derandomized - the same examples every run - so CI is deterministic; selected
automatically when ``CI`` is set, or with ``--hypothesis-profile=ci``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# The claims plugin (marker, recorder, report, baseline) and pytester for the plugin's own tests.
pytest_plugins = ["qkcore.pytest_plugin", "pytester"]

settings.register_profile(
    "dev", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=60,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))
