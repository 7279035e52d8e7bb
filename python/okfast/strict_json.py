"""JSON as okfast's own files read it (docs/spec.md §4.1, §13.2): standard
JSON only — no ``NaN`` or ``Infinity``, which Python's reader accepts — and
no key given twice, since which of the two a reader keeps is a guess.
Catalogs and settings files share it."""

from __future__ import annotations

import json
import sys
from typing import Any


class OversizedInteger:
    """A JSON integer with more digits than Python converts to an ``int``
    (``sys.get_int_max_str_digits()``, 4,300 by default). It is valid JSON, so
    it is not a parse error: each reader finds it where it stands and reports
    a wrong value there (docs/spec.md §4.1, §13.2), as for any other value
    that is not an integer in range."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"<an integer of {self.digits} digits>"


def integer(text: str) -> int | OversizedInteger:
    """A JSON integer's digits as ``json``'s ``parse_int`` hook reads them:
    an ``int``, or an :class:`OversizedInteger` past Python's limit."""
    limit = sys.get_int_max_str_digits()
    digits = len(text.lstrip("-"))
    if limit and digits > limit:
        return OversizedInteger(digits)
    return int(text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def loads(text: str) -> Any:
    """``text`` parsed; ``ValueError`` for anything that is not strict JSON,
    a document nested deeper than Python's reader follows included
    (docs/spec.md §4.1): its ``RecursionError`` would read as a failure of
    okfast rather than of the file."""
    try:
        return json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_reject_constant,
            parse_int=integer,
        )
    except RecursionError:
        raise ValueError(NESTED_TOO_DEEPLY) from None


#: Why a document nested deeper than Python's JSON reader follows (about a
#: thousand levels, the interpreter's recursion limit) is not read.
NESTED_TOO_DEEPLY = "nested too deeply"
