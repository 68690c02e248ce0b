"""The one error type of qkcore: bad input, named and with the fix.

``QKError`` is a :class:`pytest_claims.errors.ClaimsError` (itself a ``ValueError``), so the
claims framework shows it as one line naming the fix, never a traceback through a claim test;
``ForwardUnavailable`` is also its ``EvidenceUnavailable``: the row is skipped with the message.
"""

from __future__ import annotations

from pytest_claims.errors import ClaimsError, EvidenceUnavailable

__all__ = ["ForwardUnavailable", "QKError"]


class QKError(ClaimsError):
    """Bad input to qkcore: the message names the thing, the problem and what to do.

    Subclasses ValueError so callers that already guard against ValueError keep working.
    """


class ForwardUnavailable(QKError, EvidenceUnavailable):
    """A forward pass was asked of a model whose forward door is closed (only its weights can
    be read). The claims framework reports the test as skipped with this message, not as an
    error.
    """
