"""``capture``: one user/agent exchange appended to the day's memory concept (SPEC §6.4).

The captured text is data, never structure: every line of it is quoted with
``> `` — after splitting on every character any reader might take for a line
break (``str.splitlines``: ``\\n``, ``\\r``, ``\\r\\n``, ``\\v``, ``\\f``,
``\\x1c``–``\\x1e``, ``\\x85``, U+2028, U+2029) — so a captured ``---`` line, a
``# heading``, a fake ``## 12:00:00 UTC`` section header or frontmatter-looking
text can never change how the file reads. NUL and lone surrogates become
U+FFFD; empty text becomes ``(none)``; a final line break is not kept.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from okfast import _native
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.memory.entry import MemoryEntry
from okfast.memory.scope import Scope, Tier
from okfast.memory.store import FileMemoryStore, MemoryWriteResult

_UNREPRESENTABLE = re.compile("[\x00\ud800-\udfff]")


def quote(text: str) -> str:
    """Every line of ``text`` prefixed with ``> `` (``(none)`` for empty text)."""
    if not isinstance(text, str):
        raise InvalidArgumentTypeError(f"captured text must be a str, not {type(text).__name__}")
    if text == "":
        return "(none)"
    text = _UNREPRESENTABLE.sub("\ufffd", text)
    return "\n".join("> " + line for line in text.splitlines())


def day_entry(user_text: str, agent_text: str, now: datetime) -> MemoryEntry:
    """The entry ``capture`` writes for an exchange at ``now``."""
    if not isinstance(now, datetime):
        raise InvalidArgumentTypeError(
            f"capture: `now` must be a timezone-aware datetime, got {type(now).__name__}"
        )
    if now.utcoffset() is None:
        raise InvalidArgumentError("capture: `now` must be timezone-aware")
    try:
        t = now.astimezone(timezone.utc)
    except OverflowError:
        # datetime(1, 1, 1, tzinfo=UTC+5) has no UTC day (docs/spec.md §6.4).
        raise InvalidArgumentError(
            f"capture: `now` {now.isoformat()} is out of range once converted to UTC"
        ) from None
    day = f"{t.year:04d}-{t.month:02d}-{t.day:02d}"
    clock = f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    section = (
        f"## {clock} UTC\n\n**User:**\n{quote(user_text)}\n\n**Agent:**\n{quote(agent_text)}\n"
    )
    frontmatter = {
        "type": "AgentMemory",
        "title": f"Agent memory {day}",
        "description": f"Captured user/agent exchanges for {day}.",
        "generated": {"by": f"okfast/{_native.__version__}", "at": f"{day}T{clock}Z"},
    }
    return MemoryEntry(name=day, frontmatter=frontmatter, section=section)


def capture(
    store: FileMemoryStore,
    scope: Scope,
    user_text: str,
    agent_text: str,
    *,
    tier: Tier | str = Tier.USER,
    now: datetime | None = None,
) -> MemoryWriteResult:
    """Append the exchange to the UTC day concept ``YYYY-MM-DD`` of ``tier``.
    ``written`` is true only once the file is durably on disk."""
    # `is None`, not `now or ...`: a falsy wrong value (0, "", False) must be
    # refused as not a datetime, not replaced by the clock (docs/spec.md §6.4).
    if now is None:
        now = datetime.now(timezone.utc)
    entry = day_entry(user_text, agent_text, now)
    return store.write(scope, entry, tier)
