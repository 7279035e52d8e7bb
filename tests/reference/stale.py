"""docs/spec.md §2.2: ``stale_after``, a date or date-time read as a UTC instant."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

# ASCII digits only ([0-9], never \d which also matches other scripts).
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATETIME_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"[Tt ]"
    r"([0-9]{2}):([0-9]{2})"
    r"(?::([0-9]{2})(?:\.([0-9]+))?)?"
    r"(Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def parse_stale_after(text: str) -> datetime | None:
    """docs/spec.md §2.2 (with the lead's exact grammar): a UTC instant or None.

    Accepted, exactly (the whole text, no surrounding white space):
    * `YYYY-MM-DD` → midnight UTC;
    * `YYYY-MM-DD(T|t| )HH:MM[:SS[.F+]]` + optional `Z`, `z`, `±HH:MM`,
      `±HHMM`, `±HH` (no suffix → read as UTC). Fraction digits beyond 6 are
      truncated.
    Validated: year >= 1, month 1-12, day within month, hour <= 23,
    minute <= 59, second <= 59, offset hours <= 23 and minutes <= 59, and
    the UTC instant within years 1..9999.
    """
    mo = _DATE_RE.fullmatch(text)
    if mo:
        y, mon, d = (int(g) for g in mo.groups())
        hh = mm = ss = us = 0
        offset = 0
    else:
        mo = _DATETIME_RE.fullmatch(text)
        if not mo:
            return None
        y, mon, d, hh, mm = (int(g) for g in mo.groups()[:5])
        ss = int(mo.group(6)) if mo.group(6) else 0
        frac = mo.group(7)
        us = int(frac[:6].ljust(6, "0")) if frac else 0
        off = mo.group(8)
        if off is None or off in ("Z", "z"):
            offset = 0
        else:
            sign = 1 if off[0] == "+" else -1
            digits = off[1:].replace(":", "")
            oh = int(digits[:2])
            om = int(digits[2:4]) if len(digits) > 2 else 0
            if oh > 23 or om > 59:
                return None
            offset = sign * (oh * 60 + om)
    if y < 1 or not 1 <= mon <= 12 or not 1 <= d <= _days_in_month(y, mon):
        return None
    if hh > 23 or mm > 59 or ss > 59:
        return None
    try:
        local = datetime(y, mon, d, hh, mm, ss, us)
        utc = local - timedelta(minutes=offset)
    except (OverflowError, ValueError):
        # Outside Python's datetime range = outside years 1..9999.
        return None
    return utc.replace(tzinfo=timezone.utc)
