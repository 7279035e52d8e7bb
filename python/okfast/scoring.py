"""Which scorer ranks a search, and the BM25F scorer's parameters (docs/spec.md §3, §12).

``Scorer.WEIGHTED_COUNT`` is the default and the exact weighted term count of
§3; ``Scorer.BM25F`` ranks natural-language questions (§12); ``Scorer.FUSION``
fuses the two rankings of each source by reciprocal rank (§12.10). Its
parameters, :class:`BM25FParams`, are plain values: per query, per resolver,
in a settings file.
"""

from __future__ import annotations

import enum
import math
import numbers
import operator
from dataclasses import dataclass, field, fields
from typing import cast

import numpy as np
import numpy.typing as npt

from okfast import _native
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError

#: The analyzer languages (docs/spec.md §12.2): each has a Snowball stemmer
#: and a stop word list.
LANGUAGES: tuple[str, ...] = _native.LANGUAGES
#: The BM25F fields, in the order of every sum over fields.
BM25F_FIELDS: tuple[str, ...] = _native.BM25F_FIELDS


def stop_words(language: str) -> list[str]:
    """``language``'s stop word list (NLTK's), as shipped: what
    ``BM25FParams(stop_words=True)`` drops from queries (docs/spec.md §12.2).
    """
    if not isinstance(language, str):
        raise InvalidArgumentTypeError(f"language must be a str, got {type(language).__name__}")
    if language not in LANGUAGES:
        # Checked here, not by the core: a lone surrogate cannot cross to it.
        raise InvalidArgumentError(f"unknown language {language!r} (one of {', '.join(LANGUAGES)})")
    return _native.stop_words(language)


class Scorer(str, enum.Enum):
    """How a bundle's concepts are scored for a query."""

    WEIGHTED_COUNT = "weighted_count"
    BM25F = "bm25f"
    FUSION = "fusion"

    def __str__(self) -> str:
        return self.value


def scorer_of(value: Scorer | str) -> Scorer:
    """``value`` as a :class:`Scorer`; an :class:`InvalidArgumentError`
    naming the scorers otherwise."""
    try:
        return Scorer(value)
    except ValueError:
        names = ", ".join(s.value for s in Scorer)
        raise InvalidArgumentError(f"unknown scorer {value!r} (one of {names})") from None


#: The largest fairness quota or reciprocal-rank constant (docs/spec.md
#: §5.1): what the native order takes; a larger quota would change nothing.
MAX_COUNT = 2**32 - 1


def whole_of(value: object) -> int | None:
    """``value`` as an ``int`` when it is a whole number — an ``int`` or an
    integer type Python indexes with (``numpy.int64``) — never a ``bool``;
    else ``None`` (docs/spec.md §5.1)."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def real_of(value: object) -> int | float | None:
    """``value`` as an ``int`` or a ``float`` when it is a real number —
    Python's, numpy's (``numpy.int64``, ``numpy.float32``) or a ``Fraction``
    — never a ``bool``; else ``None`` (docs/spec.md §5.1). A whole number
    stays an ``int``; one past the floats' range is an infinity, so a range
    check refuses it as a value, not as a type."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    n = whole_of(value)
    if n is not None:
        return n
    if isinstance(value, numbers.Rational) and value.denominator == 1:
        return int(value.numerator)  # Fraction(4, 2): whole
    try:
        return float(value)
    except OverflowError:
        # A Real compares with 0 (numbers.Real's contract; its stub says less).
        return math.inf if cast(float, value) > 0 else -math.inf


def whole_at_least(name: str, value: object, low: int | None) -> int:
    """``value`` as an ``int`` if it is a whole number (:func:`whole_of`:
    numpy's integers too) of at least ``low`` (any, for ``None``)."""
    n = whole_of(value)
    if n is None or (low is not None and n < low):
        floor = "" if low is None else f" >= {low}"
        raise InvalidArgumentError(f"{name} must be a whole number{floor}, got {value!r}")
    return n


def count_of(name: str, value: object) -> int:
    """``value`` as an ``int`` if it is a whole number from 1 to :data:`MAX_COUNT`."""
    n = whole_of(value)
    if n is None or not 0 < n <= MAX_COUNT:
        raise InvalidArgumentError(
            f"{name} must be a whole number from 1 to {MAX_COUNT}, got {value!r}"
        )
    return n


def rrf_k_of(value: object) -> int:
    """A reciprocal-rank constant (docs/spec.md §5.4, §12.10)."""
    return count_of("rrf_k", value)


def language_of(value: str | None) -> str | None:
    """A language name, or ``None``/``"none"`` for no stemming and no stop words."""
    if value is None or value == "none":
        return None
    if value not in LANGUAGES:
        raise InvalidArgumentError(
            f"unknown language {value!r} (one of {', '.join(LANGUAGES)}, or none)"
        )
    return value


#: The largest ``k1`` or field weight (docs/spec.md §12.8): far above any
#: useful value, and low enough that no tf̃ of a real bundle overflows (a
#: weight near 1e308 made inf, then NaN, and dropped the best match).
MAX_BM25F_PARAM = 1e6


def _finite(v: float) -> bool:
    """Whether ``v`` is a finite float: an int too large for one is not."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


@dataclass(frozen=True, slots=True)
class BM25FParams:
    """The BM25F scorer's parameters (docs/spec.md §12.3).

    ``k1`` saturates a token's weighted frequency; each field has a weight
    and a length normalisation ``b`` (0: none, 1: full). ``language`` is the
    analyzer of sources that name none in the catalog (stemming and the stop
    word list); ``None`` stems nothing. ``stop_words`` drops the language's
    stop words from queries. The defaults were chosen by evaluation on judged
    questions (docs/scoring.md).
    """

    k1: float = 2.0
    title_weight: float = 3.0
    tags_weight: float = 2.0
    description_weight: float = 2.0
    body_weight: float = 1.0
    title_b: float = 0.8
    tags_b: float = 0.8
    description_b: float = 0.2
    body_b: float = 0.6
    language: str | None = None
    stop_words: bool = False
    # The native form, made once: checking and converting the values costs a
    # BM25F search about what the search itself spends in Python.
    _made: _native.Bm25fParams = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("k1", "title_weight", "tags_weight", "description_weight", "body_weight"):
            given = getattr(self, name)
            v = real_of(given)
            if v is None or not _finite(v) or not 0 <= v <= MAX_BM25F_PARAM:
                raise InvalidArgumentError(
                    f"BM25FParams.{name} must be a number from 0 to {MAX_BM25F_PARAM:g}, "
                    f"got {given!r}"
                )
            # `+ 0` makes -0.0 the 0.0 it equals: equal settings write the
            # same bytes (docs/spec.md §13.2).
            object.__setattr__(self, name, v + 0)
        for name in ("title_b", "tags_b", "description_b", "body_b"):
            given = getattr(self, name)
            v = real_of(given)
            if v is None or not 0 <= v <= 1:
                raise InvalidArgumentError(
                    f"BM25FParams.{name} must be between 0 and 1, got {given!r}"
                )
            object.__setattr__(self, name, v + 0)
        object.__setattr__(self, "language", language_of(self.language))
        if not isinstance(self.stop_words, bool):
            raise InvalidArgumentError(
                f"BM25FParams.stop_words must be a bool, got {self.stop_words!r}"
            )
        w, b = self.weights, self.b
        native = _native.Bm25fParams(
            float(self.k1),
            (float(w[0]), float(w[1]), float(w[2]), float(w[3])),
            (float(b[0]), float(b[1]), float(b[2]), float(b[3])),
        )
        object.__setattr__(self, "_made", native)

    def __reduce__(self) -> tuple[type[BM25FParams], tuple[object, ...]]:
        # Pickled (for Ray workers) as its values; the native form is made
        # again on the other side.
        return (type(self), tuple(getattr(self, f.name) for f in fields(self) if f.init))

    @property
    def weights(self) -> tuple[float, float, float, float]:
        return (self.title_weight, self.tags_weight, self.description_weight, self.body_weight)

    @property
    def b(self) -> tuple[float, float, float, float]:
        return (self.title_b, self.tags_b, self.description_b, self.body_b)

    def native(self) -> _native.Bm25fParams:
        """The parameters the native scorer takes."""
        return self._made


#: ``BM25FParams()``, what a search given no parameters is scored with (one
#: object, not one made and checked per search).
DEFAULT_BM25F: BM25FParams = BM25FParams()


def digest_score(score: float) -> int:
    """A BM25F score as the digest records it, free of floats (docs/spec.md
    §12.7): the score times 10^6, rounded half to even to an integer."""
    return round(score * 1_000_000)


def fuse(
    counted: npt.NDArray[np.int32],
    ranked: npt.NDArray[np.int32],
    id_rank: npt.NDArray[np.uint32],
    k: int,
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:
    """docs/spec.md §12.10: one source's weighted-count list and BM25F list
    (positions, each in its scorer's order) fused by reciprocal rank: a
    concept scores ``1/(k + r)`` for each list it is in, ``r`` its 1-based
    rank there; order by that score descending, then concept id in ordinal
    order (``id_rank``: each position's rank in that order)."""
    first = 1.0 / (k + np.arange(1, len(counted) + 1, dtype=np.float64))
    second = 1.0 / (k + np.arange(1, len(ranked) + 1, dtype=np.float64))
    # A concept has at most one share per list, so each sum has at most two
    # terms, and a + b == b + a in IEEE arithmetic: the scores do not depend on
    # the order the shares are added in.
    if 4 * (len(counted) + len(ranked)) >= len(id_rank):
        # Lists covering much of the bundle: one slot per position.
        total = np.zeros(len(id_rank), np.float64)
        total[counted] = first
        total[ranked] += second
        seen = np.zeros(len(id_rank), np.bool_)
        seen[counted] = True
        seen[ranked] = True
        found = np.flatnonzero(seen)
        score = total[found]
    else:
        pos = np.concatenate([counted, ranked]).astype(np.int32)
        found, where = np.unique(pos, return_inverse=True)
        score = np.zeros(len(found), np.float64)
        np.add.at(score, where, np.concatenate([first, second]))
    order = np.lexsort((id_rank[found], -score))
    return found[order].astype(np.int32), score[order]
