"""Numbers spelled as text are read in ASCII only (docs/spec.md §10.1)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from okfast.numerals import ascii_float, ascii_int


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_every_whole_number_reads_back(n: int) -> None:
    assert ascii_int(str(n)) == n
    assert ascii_int(f" {n}\t") == n


@given(st.floats(allow_nan=False))
def test_every_float_reads_back(x: float) -> None:
    assert ascii_float(repr(x)) == x


@pytest.mark.parametrize("text", ["1_0", "\u0663", "\uff11", "1.0", "", "+", "0x10", "1e3"])
def test_what_int_might_read_is_not_a_whole_number(text: str) -> None:
    with pytest.raises(ValueError, match="not a whole number"):
        ascii_int(text)


@pytest.mark.parametrize("text", ["1_0.5", "\u0663", "\uff11.5", "", ".", "e3", "1e", "0x1p3"])
def test_what_float_might_read_is_not_a_number(text: str) -> None:
    with pytest.raises(ValueError, match="not a number"):
        ascii_float(text)


def test_the_spelled_out_specials_and_plain_forms_read() -> None:
    assert ascii_float("-Infinity") == -math.inf and math.isnan(ascii_float("NaN"))
    assert (ascii_float(".5"), ascii_float("5."), ascii_float("+2e-3")) == (0.5, 5.0, 0.002)
    assert ascii_int("+007") == 7
