"""What a caller asks for: ``Query``, ``Strategy``, ``StalePolicy`` (SPEC §2.3, §5.1).

Programmer errors in a query raise :class:`okfast.InvalidArgumentError` (a
``ValueError``, docs/spec.md §8) at construction, before any source is touched.
"""

from __future__ import annotations

import contextlib
import enum
import math
import numbers
import sys
from collections.abc import Callable, Collection
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from typing import TYPE_CHECKING, Any, SupportsFloat, SupportsIndex

from okfast import _native
from okfast.arguments import batch_of, text_of, whole_limit_of
from okfast.catalog import AUTHORITIES
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.memory.scope import Scope
from okfast.numerals import ascii_float, float_text
from okfast.scoring import BM25FParams, Scorer, count_of, real_of, rrf_k_of, scorer_of

if TYPE_CHECKING:
    from okfast.catalog import Source

Visibility = Callable[[Scope, "Source"], bool]

_US_PER_DAY = 86_400_000_000
NEVER_US: int = _native.NEVER_STALE_US  # the stale_after_us of "no stale_after"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class Strategy(str, enum.Enum):
    """How passages from several sources become one list (SPEC §5.4)."""

    GROUPED = "grouped"
    MERGED = "merged"
    PRIORITY_WEIGHTED = "priority_weighted"
    RECIPROCAL_RANK = "reciprocal_rank"

    def __str__(self) -> str:
        return self.value


def strategy_of(value: object) -> Strategy:
    """``value`` as a :class:`Strategy`; an :class:`InvalidArgumentError`
    naming the strategies otherwise."""
    try:
        return Strategy(value)
    except ValueError:
        names = ", ".join(s.value for s in Strategy)
        raise InvalidArgumentError(f"unknown strategy {value!r} (one of {names})") from None


#: A stale policy's kinds (docs/spec.md §2.3).
STALE_KINDS = ("use", "strict", "tolerate")


@dataclass(frozen=True, slots=True)
class StalePolicy:
    """Which passages the stale filter admits (SPEC §2.3)."""

    kind: str = "use"
    days: float = 0.0

    def __post_init__(self) -> None:
        # Checked however the policy is made (the constructor, replace(),
        # tolerate, parse), so no unknown kind filters as another and no bad
        # days fails later at a search (docs/spec.md §2.3).
        if not isinstance(self.kind, str):
            raise InvalidArgumentTypeError(
                f"StalePolicy kind must be one of {', '.join(STALE_KINDS)}, "
                f"got {type(self.kind).__name__}"
            )
        if self.kind not in STALE_KINDS:
            raise InvalidArgumentError(
                f"StalePolicy kind must be one of {', '.join(STALE_KINDS)}, got {self.kind!r}"
            )
        days = self.days
        if isinstance(days, bool) or not isinstance(days, numbers.Real):
            raise InvalidArgumentTypeError(f"StalePolicy days must be a number, got {days!r}")
        if self.kind != "tolerate":
            if days != 0:
                raise InvalidArgumentError(
                    f"StalePolicy days apply only to tolerate, not {self.kind} (got {days!r})"
                )
            object.__setattr__(self, "days", 0.0)
            return
        if not days >= 0:
            raise InvalidArgumentError(f"StalePolicy.tolerate: days must be >= 0, got {days!r}")
        try:
            as_float = float(days)
        except OverflowError:
            # 10**400 is a number >= 0 but no float: refused as min_score's is
            # (docs/spec.md §5.1), not a raw OverflowError.
            raise InvalidArgumentError(
                f"StalePolicy.tolerate: days must be at most {sys.float_info.max!r}, "
                "got a number past the largest float"
            ) from None
        # An infinite tolerance is kept: it admits every passage (admits_us).
        # -0.0 is the 0.0 it equals, so it is written `tolerate:0`.
        object.__setattr__(self, "days", as_float + 0.0)

    @classmethod
    def use(cls) -> StalePolicy:
        """Admit every passage (the default)."""
        return cls("use")

    @classmethod
    def strict(cls) -> StalePolicy:
        """Admit only passages not stale at ``now``."""
        return cls("strict")

    @classmethod
    def tolerate(cls, days: float) -> StalePolicy:
        """Admit when ``stale_after`` is unset or ``now <= stale_after + days``."""
        if isinstance(days, bool) or not isinstance(days, numbers.Real):
            raise InvalidArgumentTypeError(
                f"StalePolicy.tolerate: days must be a number, got {days!r}"
            )
        return cls("tolerate", days)

    @classmethod
    def parse(cls, text: str) -> StalePolicy:
        """``use``, ``strict`` or ``tolerate:DAYS`` (the CLI's spelling)."""
        # The spelling is text (docs/spec.md §2.3, §8): anything else is the
        # type error a caller catches, not an AttributeError from .startswith.
        if not isinstance(text, str):
            raise InvalidArgumentTypeError(
                f"stale policy must be use, strict or tolerate:DAYS, got {type(text).__name__}"
            )
        if text in ("use", "strict"):
            return cls(text)
        if text.startswith("tolerate:"):
            days = text.split(":", 1)[1]
            as_float: float | None
            try:
                as_float = ascii_float(days)
            except ValueError:
                as_float = None
            if as_float is not None and as_float < 0:
                raise InvalidArgumentError(f"stale policy {text!r}: DAYS must be >= 0")
            if as_float is not None:
                # `1e400` reads as infinity: a number no float holds is
                # refused, as tolerate(10**400) is; only `inf` spelled out
                # admits every passage.
                spelled_inf = days.strip().lstrip("+").lower() in ("inf", "infinity")
                if math.isinf(as_float) and not spelled_inf:
                    raise InvalidArgumentError(
                        f"stale policy {text!r}: DAYS is past the largest float"
                    )
                with contextlib.suppress(ValueError):
                    return cls.tolerate(as_float)
        raise InvalidArgumentError(
            f"stale policy must be use, strict or tolerate:DAYS, got {text!r}"
        )

    def admits_us(self, stale_after_us: Any, now_us: int) -> Any:
        """Vectorised test over microsecond instants (numpy array or int;
        ``NEVER_US`` = no ``stale_after``)."""
        if self.kind == "use":
            return stale_after_us == stale_after_us  # all True, same shape
        if self.kind == "strict":
            return stale_after_us > now_us
        return (stale_after_us == NEVER_US) | (stale_after_us >= now_us - self._slack_us())

    def _slack_us(self) -> int:
        """A tolerance in whole microseconds: the exact
        product, truncated (docs/spec.md §2.3; the float product can round
        up past a whole microsecond: 1/3 of a day gave 28,800,000,000 for
        28,799,999,999.99…), capped at 2**62 µs (~146,000 years, beyond every
        instant a date can name) so a huge or infinite tolerance admits all
        instead of overflowing the int64 arithmetic."""
        if not math.isfinite(self.days):
            return 2**62
        return min(int(Fraction(self.days) * _US_PER_DAY), 2**62)

    def __str__(self) -> str:
        if self.kind != "tolerate":
            return self.kind
        # Text that reads back as the same float (docs/spec.md §2.3:
        # parse(str(p)) == p).
        return f"tolerate:{float_text(self.days)}"


def micros(t: datetime) -> int:
    """An aware datetime → microseconds since the Unix epoch."""
    if not isinstance(t, datetime):
        raise InvalidArgumentTypeError(
            f"the clock must return an aware datetime, got {type(t).__name__}"
        )
    if t.tzinfo is None:
        raise InvalidArgumentError("the clock must return an aware datetime")
    return (t - _EPOCH) // timedelta(microseconds=1)


@dataclass(frozen=True)
class Query:
    """One resolution request (SPEC §5.1). ``strategy`` and ``fairness_quota``
    left ``None`` fall back to the resolver's defaults."""

    text: str
    # Everything after the text is keyword-only, as docs/spec.md §5.1 writes it.
    _: KW_ONLY
    #: A name given is kept as its member (docs/spec.md §5.1).
    strategy: Strategy | None = None
    fairness_quota: int | None = None
    stale_policy: StalePolicy = field(default_factory=StalePolicy.use)
    tag: str | None = None
    scope: Scope = field(default_factory=Scope.local)
    permitted_source_ids: Collection[str] | None = None
    visibility: Visibility | None = None
    limit: int | None = None
    #: Keep passages scoring at least this (a whole number for the weighted
    #: count; any number for BM25F).
    min_score: float | None = None
    pin_exact_title: bool = False
    include_historical: bool = False
    min_authority: str | None = None
    explain: bool = False
    #: ``None``: the resolver's ``default_rrf_k`` (60 unless set).
    rrf_k: int | None = None
    #: ``None``: the resolver's ``default_scorer``.
    scorer: Scorer | None = None
    #: ``None``: the resolver's ``default_bm25f``.
    bm25f: BM25FParams | None = None

    if TYPE_CHECKING:
        # What the generated __init__ takes (docs/spec.md §5.1): names for
        # the enums, a stale policy's spelling, None for the local scope,
        # numpy and Fraction numbers; the fields hold them converted.
        def __init__(
            self,
            text: str,
            *,
            strategy: Strategy | str | None = None,
            fairness_quota: SupportsIndex | None = None,
            stale_policy: StalePolicy | str = ...,
            tag: str | None = None,
            scope: Scope | None = ...,
            permitted_source_ids: Collection[str] | None = None,
            visibility: Visibility | None = None,
            limit: SupportsIndex | None = None,
            min_score: SupportsFloat | None = None,
            pin_exact_title: bool = False,
            include_historical: bool = False,
            min_authority: str | None = None,
            explain: bool = False,
            rrf_k: SupportsIndex | None = None,
            scorer: Scorer | str | None = None,
            bm25f: BM25FParams | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InvalidArgumentTypeError("Query.text must be non-blank text")
        if not text_of("Query.text", self.text).strip():
            raise InvalidArgumentError("Query.text must be non-blank text")
        if self.tag is not None:
            text_of("Query.tag", self.tag)
        if self.strategy is not None:
            object.__setattr__(self, "strategy", strategy_of(self.strategy))
        if self.fairness_quota is not None:
            # Stored as an int (a numpy integer given is one): the query is
            # written into digests and JSON.
            object.__setattr__(
                self, "fairness_quota", count_of("fairness_quota", self.fairness_quota)
            )
        if isinstance(self.stale_policy, str):
            object.__setattr__(self, "stale_policy", StalePolicy.parse(self.stale_policy))
        elif not isinstance(self.stale_policy, StalePolicy):
            raise InvalidArgumentTypeError(
                "stale_policy must be a StalePolicy or its spelling (use, strict, "
                f"tolerate:DAYS), got {type(self.stale_policy).__name__}"
            )
        # Scope, ids and visibility are checked here, not at the search
        # (docs/spec.md §5.1 "raised immediately"): a wrong type would be
        # ignored (scope without visibility) or a raw TypeError there.
        if self.scope is None:
            object.__setattr__(self, "scope", Scope.local())
        elif not isinstance(self.scope, Scope):
            raise InvalidArgumentTypeError(
                f"Query.scope must be a Scope, got {type(self.scope).__name__}"
            )
        ids = self.permitted_source_ids
        if isinstance(ids, str | bytes):
            raise InvalidArgumentTypeError(
                "permitted_source_ids must be a collection of source ids, not one string"
            )
        if ids is not None:
            # A Collection, not any iterable: a one-shot iterator would be
            # used up by the first search of this immutable query.
            if not isinstance(ids, Collection):
                raise InvalidArgumentTypeError(
                    "permitted_source_ids must be a collection of source ids, "
                    f"got {type(ids).__name__}"
                )
            kept = tuple(ids)
            for sid in kept:
                if not isinstance(sid, str):
                    raise InvalidArgumentTypeError(
                        f"permitted_source_ids must hold source ids (text), got {sid!r}"
                    )
            # A copy: the caller's list changed later is not this immutable
            # query's (docs/spec.md §5.1), and the query hashes.
            object.__setattr__(self, "permitted_source_ids", kept)
        if self.visibility is not None and not callable(self.visibility):
            raise InvalidArgumentTypeError(
                "visibility must be a callable (scope, source) -> bool, "
                f"got {type(self.visibility).__name__}"
            )
        if self.permitted_source_ids is not None and self.visibility is not None:
            raise InvalidArgumentError("set permitted_source_ids or visibility, not both")
        if self.limit is not None:
            object.__setattr__(self, "limit", whole_limit_of(self.limit))
        if self.min_authority is not None and self.min_authority not in AUTHORITIES:
            raise InvalidArgumentError(
                f"min_authority must be one of {', '.join(AUTHORITIES)}, got {self.min_authority!r}"
            )
        if self.min_score is not None:
            score = real_of(self.min_score)
            why = f"min_score must be a finite number >= 0, got {self.min_score!r}"
            if score is None:
                raise InvalidArgumentTypeError(why)
            if not (score >= 0 and score <= sys.float_info.max):
                raise InvalidArgumentError(why)
            object.__setattr__(self, "min_score", score)
        if self.scorer is not None:
            object.__setattr__(self, "scorer", scorer_of(self.scorer))
        if self.bm25f is not None and not isinstance(self.bm25f, BM25FParams):
            raise InvalidArgumentTypeError(
                f"Query.bm25f must be a BM25FParams, got {type(self.bm25f).__name__}"
            )
        if self.rrf_k is not None:
            object.__setattr__(self, "rrf_k", rrf_k_of(self.rrf_k))
        for name in ("pin_exact_title", "include_historical", "explain"):
            # A switch is True or False: "false" or 1 would switch it on unseen.
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgumentTypeError(
                    f"Query.{name} must be True or False, got {getattr(self, name)!r}"
                )


def query_of(query: object) -> Query:
    """``query``, or ``Query(query)`` for a string; anything else is a type
    error naming what was given (docs/spec.md §5.2)."""
    if isinstance(query, str):
        return Query(query)
    if not isinstance(query, Query):
        raise InvalidArgumentTypeError(
            f"a query must be a Query or a str, got {type(query).__name__}"
        )
    return query


def queries_of(queries: object) -> list[Query]:
    """Each of a sequence of queries as :func:`query_of` makes it; refused as
    ``Bundle.search_many``'s texts are (:func:`~okfast.arguments.batch_of`)."""
    return [query_of(q) for q in batch_of("queries", queries, (str, Query))]
