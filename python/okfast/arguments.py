"""The arguments every search checks before it searches (docs/spec.md §3.7,
§5.1, §12.8): query text and tags that are text a native call can take (no
lone surrogate), a limit that is a whole number >= 0, BM25F parameters that
are :class:`BM25FParams`. Checked here once, so that a bad argument is the
same clear error on every path rather than whatever the native conversion
raises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from okfast._native import QueryTerms
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.scoring import DEFAULT_BM25F, BM25FParams, rrf_k_of, whole_of

#: Positions are `int32` (docs/spec.md §3.7): a larger limit keeps every match.
_ALL = 2**31


def surrogate_in(value: str) -> str | None:
    """The first lone surrogate in ``value`` (which JSON's ``\\ud800`` escapes
    and ``os.fsdecode`` can spell, and UTF-8 cannot encode) as ``U+D800``,
    or ``None`` when ``value`` is valid Unicode text."""
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"U+{ord(value[e.start]):04X}"
    return None


def text_of(name: str, value: object) -> str:
    """``value``, when it is text that UTF-8 can encode."""
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(f"{name} must be text, got {type(value).__name__}")
    if (at := surrogate_in(value)) is not None:
        raise InvalidArgumentError(
            f"{name} is not valid Unicode text: it holds a lone surrogate ({at})"
        )
    return value


def whole_limit_of(limit: object) -> int | None:
    """A search's ``limit`` as given: ``None`` (every match) or a whole
    number >= 0, read once (an object's ``__index__`` is asked one time)."""
    if limit is None:
        return None
    n = whole_of(limit)
    if n is None:
        raise InvalidArgumentTypeError(f"limit must be a whole number >= 0, got {limit!r}")
    if n < 0:
        raise InvalidArgumentError(f"limit must be >= 0, got {n}")
    return n


def limit_of(limit: object) -> int | None:
    """A search's ``limit`` as the native search takes it: ``None`` or a
    whole number >= 0, a larger one than any bundle holds capped."""
    n = whole_limit_of(limit)
    return None if n is None else min(n, _ALL)


def search_arguments(
    tag: object, limit: object, bm25f: object, rrf_k: object = 60
) -> tuple[str | None, int | None, BM25FParams]:
    """A bundle search's tag, limit and BM25F parameters (the defaults for
    ``None``); its ``rrf_k`` is checked whatever the scorer, as a query's is
    (docs/spec.md §5.1, §12.10), though only fusion uses it."""
    rrf_k_of(rrf_k)
    if bm25f is not None and not isinstance(bm25f, BM25FParams):
        raise InvalidArgumentTypeError(f"bm25f must be a BM25FParams, got {type(bm25f).__name__}")
    return (
        None if tag is None else text_of("tag", tag),
        limit_of(limit),
        bm25f or DEFAULT_BM25F,
    )


def batch_of(name: str, items: object, single: tuple[type, ...]) -> Sequence[Any]:
    """The queries of a batch search, ``name`` by name: a sequence of them,
    never one query alone (a string would be searched one character at a
    time): ``InvalidArgumentError``; anything else that is not a sequence
    (an iterator, ``None``) ``InvalidArgumentTypeError`` (docs/spec.md §5.2)."""
    if isinstance(items, single):
        raise InvalidArgumentError(
            f"{name} must be a sequence of queries, not one {type(items).__name__}"
        )
    # Bytes are a sequence of ints, not of queries.
    if not isinstance(items, Sequence) or isinstance(items, bytes | bytearray):
        raise InvalidArgumentTypeError(
            f"{name} must be a sequence of queries, got {type(items).__name__}"
        )
    return items


def texts_of(texts: Sequence[str | QueryTerms]) -> Sequence[str | QueryTerms]:
    """A bundle's batch of query texts (:func:`batch_of`)."""
    return batch_of("texts", texts, (str, QueryTerms))


def load_arguments(
    r: tuple[str | None, str | None] | None, progress: object
) -> tuple[str | None, str | None]:
    """``Bundle.load``'s ``id_range`` (two ids or ``None`` s) and ``progress``
    checked before the load starts, not when the load first reports and
    the native call finds it cannot (docs/spec.md §1.8, §1.10)."""
    callable_of("progress", progress)
    if r is None:
        return None, None
    if (
        not isinstance(r, tuple)
        or len(r) != 2
        or not all(b is None or isinstance(b, str) for b in r)
    ):
        raise InvalidArgumentError(f"id_range must be (lo, hi), each a str or None; got {r!r}")
    for b in r:
        try:
            b is None or b.encode()
        except UnicodeEncodeError:
            raise InvalidArgumentError(f"id_range bound {b!r} is not valid text") from None
    return r


def callable_of(name: str, value: object) -> None:
    """A hook (a progress report, a clock, a query maker) is a callable or
    ``None``, checked when it is given, not when it is first called deep in
    a load or a search (docs/spec.md §5.2)."""
    if value is not None and not callable(value):
        raise InvalidArgumentTypeError(
            f"{name} must be a callable or None, got {type(value).__name__}"
        )


def flag_of(name: str, value: object) -> bool:
    """A switch is ``True`` or ``False`` (docs/spec.md §5.1): ``"false"`` or
    ``1`` would switch it on unseen, so anything else is a type error."""
    if not isinstance(value, bool):
        raise InvalidArgumentTypeError(f"{name} must be True or False, got {value!r}")
    return value


def of_type(name: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    """``value`` when it is a ``kind``; else okfast's type error naming what
    was wanted, not the bare ``TypeError`` (or ``AttributeError``) a native
    conversion or a method call would raise from inside (docs/spec.md §8)."""
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted = " or ".join(k.__name__ for k in kinds)
        a = "an" if wanted[0] in "AEIOU" else "a"
        raise InvalidArgumentTypeError(f"{name} must be {a} {wanted}, got {type(value).__name__}")
    return value
