"""One escaping rule for every markdown report: outside text never becomes markup."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_claims.reports.markdown import cell, code

pytestmark = pytest.mark.adversarial


@given(st.text())
def test_a_cell_holds_no_markup_character_unescaped(text):
    out = cell(text)
    assert "<" not in out and ">" not in out and "\n" not in out
    # every |, `, *, [, ] is preceded by an odd run of backslashes (escaped)
    for match in re.finditer(r"(\\*)([|`*\[\]])", out):
        assert len(match.group(1)) % 2 == 1


@given(st.text())
def test_a_code_span_is_never_closed_early(text):
    out = code(text)
    opening = re.match(r"`+", out)
    assert opening is not None
    fence = opening.group(0)
    inner = out[len(fence) : -len(fence)]
    assert out.endswith(fence)
    assert all(len(run) < len(fence) for run in re.findall(r"`+", inner))
    assert "\n" not in out


def test_examples():
    assert cell("model <iframe> | at *x*") == "model &lt;iframe&gt; \\| at \\*x\\*"
    assert code("a`b") == "``a`b``"
    assert code("`x") == "`` `x ``"
