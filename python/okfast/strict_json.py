"""JSON as okfast's own files read it (docs/spec.md §4.1, §13.2): standard
JSON only — no ``NaN`` or ``Infinity``, which Python's reader accepts — and
no key given twice, since which of the two a reader keeps is a guess.
Catalogs and settings files share it."""

from __future__ import annotations

import json
from typing import Any


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
    """``text`` parsed; ``ValueError`` (or ``RecursionError`` when nested too
    deeply) for anything that is not strict JSON."""
    return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
