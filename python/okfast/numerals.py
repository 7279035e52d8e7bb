"""Numbers spelled as text — command-line options, `tolerate:DAYS` — read
in ASCII digits only (docs/spec.md §10.1). Python's `int` and `float` also
take `1_000`, full-width and Arabic-Indic digits; a number typed with those
is refused as a typo would be, not read as another number."""

from __future__ import annotations

import re

# The white space around a number that int() and float() drop, in ASCII.
_SPACE = " \t\n\r\f\v"
_WHOLE = re.compile(r"[+-]?[0-9]+")
_REAL = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
    re.IGNORECASE,
)


def ascii_int(text: str) -> int:
    """`int(text)` for a whole number in ASCII digits; ValueError otherwise."""
    spelled = text.strip(_SPACE)
    if not _WHOLE.fullmatch(spelled):
        raise ValueError(f"not a whole number: {text!r}")
    return int(spelled)


def ascii_float(text: str) -> float:
    """`float(text)` for a decimal number in ASCII (`inf` and `nan` spelled
    out); ValueError otherwise."""
    spelled = text.strip(_SPACE)
    if not _REAL.fullmatch(spelled):
        raise ValueError(f"not a number: {text!r}")
    return float(spelled)


def float_text(x: float) -> str:
    """A float as the text ``ascii_float`` reads back as it: Python's
    ``repr`` (its fewest round-tripping digits) with a whole number's ``.0``
    and an exponent's ``+`` and leading zeros dropped (`7`, `0.5`, `1e-7`,
    `1e16`, `9007199254740992`, `inf`)."""
    mantissa, e, exponent = repr(x).partition("e")
    mantissa = mantissa.removesuffix(".0")
    if not e:
        return mantissa
    sign = "-" if exponent.startswith("-") else ""
    return f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0')}"
