"""Writing a file so that no reader ever sees half of it: the one atomic write.

The text goes to a private temporary file beside the target (created exclusively, never
through a link), which then replaces the target in one ``rename``::

    atomic_write(Path("reports/runs/x/claims.md"), text)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write"]


def atomic_write(path: Path, text: str | bytes) -> Path:
    """Write ``text`` to ``path`` atomically (module docstring); returns ``path``."""
    path = Path(path)
    data = text.encode("utf-8") if isinstance(text, str) else text
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
