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


PAPER_PLUGIN = "qkcore.pytest_plugin"


@pytest.fixture(autouse=True)
def _suites_these_tests_start_use_the_paper_plugin(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suites a test writes with pytester are this paper's suites, so they run with its
    plugin (its evidence kinds, flags and notes), as the repository's conftest.py brings it
    here: the framework alone ships no kinds. ``PYTEST_PLUGINS`` reaches both in-process and
    subprocess runs. A test of the framework on its own marks itself ``framework_alone``."""
    alone = request.node.get_closest_marker("framework_alone") is not None
    if "pytester" in request.fixturenames and not alone:
        monkeypatch.setenv("PYTEST_PLUGINS", PAPER_PLUGIN)
