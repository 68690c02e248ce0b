"""The preparation phase in pytest: after collection, build what the selected tests need.

Which evidence the tests need is read from what was collected (``-k`` and deselection
included): in a plain run from the items' ``evidence`` / ``evidence_set`` parameters; under
xdist, in the controller, which has no items, by looking the parameter ids of the tests the
first worker collected up among the ids of every piece the kinds offer
(:func:`~qkcore.pytest_plugin.evidence.all_pieces`). The builds then run in a process pool
with progress on the terminal (:func:`qkcore.evidence.prepare.prepare`) while the workers
wait, and the tests read caches. Nothing is built for ``--collect-only`` or
``--claims-prepare=off`` (tests then build lazily, silently, as before).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pytest

from qkcore.evidence.pieces import BuildTask
from qkcore.pytest_plugin.evidence import all_pieces

__all__ = ["PreparePhase", "pieces_for_ids"]

_PARAM_ID = re.compile(r"\[(?P<id>.*)\]$")


def pieces_for_ids(ids: Iterable[str], pieces: dict[str, Any]) -> list[Any]:
    """The pieces (``pieces``: by evidence id) that collected test ids name.

    A test id's parameter part is looked up whole (``test_x[toy-cpu:rope-s1]``); a test with
    several parameters joins their ids with "-", so an evidence id is also found as one of its
    "-"-delimited runs. Evidence ids are only compared, never taken apart.
    """
    wanted = []
    for node_id in ids:
        match = _PARAM_ID.search(node_id)
        if match is None:
            continue
        found = pieces.get(match["id"])
        if found is not None:
            wanted.append(found)
            continue
        joined = f"-{match['id']}-"
        wanted += [piece for eid, piece in pieces.items() if f"-{eid}-" in joined]
    return wanted


def _pieces_of_items(items: Iterable[pytest.Item]) -> list:
    pieces = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            continue
        pieces += [v for v in callspec.params.values() if hasattr(v, "build_tasks")]
    return pieces


class PreparePhase:
    """Runs :func:`qkcore.evidence.prepare.prepare` once per session, in the process that
    talks to the terminal."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.done = False

    def _enabled(self) -> bool:
        config = self.config
        if self.done or hasattr(config, "workerinput") or config.option.collectonly:
            return False
        return config.getoption("--claims-prepare") != "off"

    def _run(self, pieces: list) -> None:
        from qkcore.evidence.prepare import prepare

        self.done = True
        tasks: list[BuildTask] = [task for piece in pieces for task in piece.build_tasks()]
        if not tasks:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        tty = self.config.get_terminal_writer().hasmarkup
        if tty:  # xdist's status line ("ready: 2/2 workers") is redrawn without a newline
            reporter.write("\n")

        bar_shown: list[bool] = []

        def line(text: str) -> None:
            if bar_shown:  # clear the status line, then write over it
                reporter.rewrite("", erase=True)
                reporter.write("\r")
                bar_shown.clear()
            reporter.write_line(text)
            reporter.flush()  # a CI log is a pipe: unflushed, the lines would come at the end

        def bar(text: str) -> None:
            reporter.rewrite(text, erase=True)
            reporter.flush()
            bar_shown.append(True)

        prepare(
            tasks,
            workers=max(1, int(self.config.getoption("--claims-prepare-workers"))),
            line=line,
            bar=bar if tty else None,
        )

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self._enabled():
            self._run(_pieces_of_items(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        # every worker collects the same tests: the first one's ids decide; the scheduler
        # starts only after this returns, so the workers wait on cached evidence
        if self._enabled():
            self._run(pieces_for_ids(ids, all_pieces(self.config)))
