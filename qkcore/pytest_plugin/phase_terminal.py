"""The preparation phase's lines on pytest's terminal: lines that stay, and a redrawn status.

Build progress comes from another thread (:class:`~qkcore.engine.watch.BuilderWatch` queues
the builder's lines); :meth:`PhaseTerminal.pump` writes it from the thread that owns the
terminal, between test outcomes, so two writers never garble one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

__all__ = ["PhaseTerminal"]


class PhaseTerminal:
    """Writes the phase's lines through pytest's terminal reporter (none: nothing is written)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._bar_shown = False

    def reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def tty(self) -> bool:
        return bool(self.config.get_terminal_writer().hasmarkup)

    def line(self, text: str) -> None:
        reporter = self.reporter()
        if reporter is None:
            return
        if self._bar_shown:  # clear the status line, then write over it
            reporter.rewrite("", erase=True)
            reporter.write("\r")
            self._bar_shown = False
        elif reporter._tw.width_of_current_line:  # after a run of test outcomes ("..x.")
            reporter.write("\n")
        reporter.write_line(text)
        reporter.flush()  # a CI log is a pipe: unflushed, the lines would come at the end

    def bar(self, text: str) -> None:
        reporter = self.reporter()
        if reporter is None:
            return
        reporter.rewrite(text, erase=True)
        reporter.flush()
        self._bar_shown = True

    def pump(self, messages: Iterable[tuple[str, str]]) -> None:
        """Write the build thread's queued progress (only this thread writes the terminal)."""
        for kind, text in messages:
            if kind == "bar" and self.tty():
                self.bar(text)
            else:
                self.line(text)
