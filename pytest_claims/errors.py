"""The framework's errors: what a suite's code raises to be shown as bad input, or as absent.

Every message names the problem and the fix.

- :class:`ClaimsError` - a claim, catalogue, evidence kind or input the suite gave wrongly;
  shown as one line, never a traceback through the claim test;
- :class:`EvidenceUnavailable` - this machine cannot serve the evidence (a model's forward pass
  it does not have): the row is skipped with the message as its reason, not an error.

A suite's own error types may subclass these (this repository's ``QKError`` is a
``ClaimsError``), so the framework shows them the same way without knowing them.
"""

from __future__ import annotations

__all__ = ["ClaimsError", "EvidenceUnavailable"]


class ClaimsError(ValueError):
    """Bad input: the message names the problem and the fix."""


class EvidenceUnavailable(RuntimeError):
    """Evidence this machine cannot serve: its row is skipped with this message."""
