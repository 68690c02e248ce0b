"""The library tests' own fixtures (the repository's conftest.py brings the plugin and the
hypothesis profiles)."""

from __future__ import annotations

import pytest

from qkcore.engine.buildlog import BUILD_LOG_ENV


@pytest.fixture(autouse=True)
def _builds_of_test_runs_are_not_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs these tests start (pytester, subprocesses) do not append to ``$QK_BUILD_LOG``:
    that log is the outer run's profile (.ci/run prints it), which their tiny, sleeping and
    deliberately failing builds would fill - 100 builds, 6 of them failed, in a CI log of 26.
    A test of the log sets its own."""
    monkeypatch.delenv(BUILD_LOG_ENV, raising=False)
