"""Text from outside (paths, model metadata, exception messages) made inert in markdown.

claims.md, comparison.md, errata.md and mutations.md are read on GitHub, where a pull-request
comment renders HTML and markdown: a model file named ``x`<img src=y>`` or an exception that
quotes a ``<script>`` must show as text, never as markup. Every value the reports did not write
themselves goes through :func:`cell` (a paragraph or table cell) or :func:`code` (a code span).

Example::

    cell("model <iframe> | at *x*")     # 'model &lt;iframe&gt; \\| at \\*x\\*'
    code("a`b")                         # '``a`b``': a longer fence, never closed early
"""

from __future__ import annotations

__all__ = ["cell", "code"]

#: markdown and HTML metacharacters that could start markup inside a line
_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "|": "\\|",
    "`": "\\`",
    "*": "\\*",
    "[": "\\[",
    "]": "\\]",
    "\\": "\\\\",
}


def cell(text: object) -> str:
    """``text`` on one line (whitespace collapsed), every markup character escaped."""
    flat = " ".join(str(text).split())
    return "".join(_ESCAPES.get(ch, ch) for ch in flat)


def code(text: object) -> str:
    """``text`` as a code span that no backtick inside it can close, safe in a table cell."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    longest, run = 0, 0
    for ch in flat:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    return f"{fence}{pad}{flat}{pad}{fence}"
