"""The one error type of qkcore: bad input, named and with the fix."""

from __future__ import annotations

__all__ = ["ForwardUnavailable", "QKError"]


class QKError(ValueError):
    """Bad input to qkcore: the message names the thing, the problem and what to do.

    Subclasses ValueError so callers that already guard against ValueError keep working.
    """


class ForwardUnavailable(QKError):
    """A forward pass was asked of a model whose forward door is closed (only its weights can
    be read). The claims plugin reports the test as skipped with this message, not as an error.
    """
