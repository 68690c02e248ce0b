"""The one error type of qkcore: bad input, named and with the fix."""

from __future__ import annotations

__all__ = ["QKError"]


class QKError(ValueError):
    """Bad input to qkcore: the message names the thing, the problem and what to do.

    Subclasses ValueError so callers that already guard against ValueError keep working.
    """
