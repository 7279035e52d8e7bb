"""What a caller asks for (docs/spec.md §2.3, §5.1): a stale policy or a query
out of its domain is refused where it is made, as an okfast error that is
also the built-in a caller catches, never a raw error at the search."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from okfast import InvalidArgumentError, Query, Scope, StalePolicy
from okfast.errors import InvalidArgumentTypeError

_NOW = 1_000 * 86_400_000_000
_INSTANTS = np.array([_NOW - 3 * 86_400_000_000, _NOW - 86_400_000_000, _NOW + 1], dtype=np.int64)


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: StalePolicy.tolerate(10**400), InvalidArgumentError, "largest float"),
        (lambda: StalePolicy("tolerate", 10**5000), InvalidArgumentError, "largest float"),
        (lambda: StalePolicy.parse(None), InvalidArgumentTypeError, "NoneType"),
        (lambda: StalePolicy.parse(5), InvalidArgumentTypeError, "got int"),
        (lambda: StalePolicy("tolerate", "x"), InvalidArgumentTypeError, "number"),
        (lambda: StalePolicy("tolerate", True), InvalidArgumentTypeError, "number"),
        (lambda: StalePolicy("bogus"), InvalidArgumentError, "'bogus'"),
        (lambda: StalePolicy(5), InvalidArgumentTypeError, "kind"),
        (lambda: StalePolicy("tolerate", -5), InvalidArgumentError, ">= 0"),
        (lambda: StalePolicy("tolerate", math.nan), InvalidArgumentError, ">= 0"),
        (lambda: StalePolicy("strict", 3), InvalidArgumentError, "only to tolerate"),
        (lambda: StalePolicy("use", math.nan), InvalidArgumentError, "only to tolerate"),
        (lambda: StalePolicy.parse("tolerate:nan"), InvalidArgumentError, "tolerate:DAYS"),
        # float() reads these as 10 and 3 days; DAYS is ASCII (docs/spec.md §10.1).
        (lambda: StalePolicy.parse("tolerate:1_0"), InvalidArgumentError, "tolerate:DAYS"),
        (lambda: StalePolicy.parse("tolerate:\u0663"), InvalidArgumentError, "tolerate:DAYS"),
        # Read by float as infinity, but no float holds it (docs/spec.md §2.3).
        (lambda: StalePolicy.parse("tolerate:1e400"), InvalidArgumentError, "largest float"),
        (lambda: StalePolicy.parse("tolerate:" + "9" * 400), InvalidArgumentError, "largest"),
        # Negative, however large: the message says so, not "past the largest float".
        (lambda: StalePolicy.parse("tolerate:-1"), InvalidArgumentError, "DAYS must be >= 0"),
        (lambda: StalePolicy.parse("tolerate:-inf"), InvalidArgumentError, "DAYS must be >= 0"),
        (lambda: StalePolicy.parse("tolerate:-1e400"), InvalidArgumentError, "DAYS must be >= 0"),
    ],
)
def test_every_way_of_making_a_stale_policy_checks_it(
    make: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words) as e:
        make()
    assert isinstance(e.value, ValueError)


def test_an_infinite_tolerance_is_spelled_out() -> None:
    for text in ("tolerate:inf", "tolerate:+Infinity", "tolerate: INF"):
        assert StalePolicy.parse(text).days == math.inf, text


def test_a_stale_policy_made_by_its_constructor_is_the_one_its_helpers_make() -> None:
    assert StalePolicy() == StalePolicy.use()
    assert StalePolicy("strict") == StalePolicy.strict()
    assert StalePolicy("tolerate", 2) == StalePolicy.tolerate(2) == StalePolicy.parse("tolerate:2")
    assert (
        StalePolicy("tolerate", 2).days == 2.0 and str(StalePolicy("tolerate", 2)) == "tolerate:2"
    )
    # An infinite tolerance admits every instant (docs/spec.md §2.3).
    assert StalePolicy.parse(str(StalePolicy.tolerate(math.inf))).days == math.inf
    admitted: Any = StalePolicy("tolerate", 2).admits_us(_INSTANTS, _NOW)
    assert admitted.tolist() == [False, True, True]


@pytest.mark.parametrize("days", [1234567, 1 / 3, 0.1, 2.5e-7, 1e300, 2**53 + 2, 0, 7])
def test_a_stale_policy_is_written_back_exactly(days: float) -> None:
    """docs/spec.md §2.3: ``str(policy)`` writes it back (six significant
    digits gave 1234570 days for 1234567)."""
    p = StalePolicy.tolerate(days)
    assert StalePolicy.parse(str(p)) == p


@pytest.mark.parametrize(
    ("days", "text"),
    [
        (7, "tolerate:7"),
        (1 / 3, "tolerate:0.3333333333333333"),
        (1e-7, "tolerate:1e-7"),
        (1e16, "tolerate:1e16"),
        (2.0**53, "tolerate:9007199254740992"),
        (1.5e300, "tolerate:1.5e300"),
        (math.inf, "tolerate:inf"),
    ],
)
def test_a_stale_policy_is_written_as_its_fewest_digits(days: float, text: str) -> None:
    """docs/spec.md §2.3: repr's digits, a whole number's ``.0`` and the
    exponent's ``+`` and leading zeros dropped."""
    assert str(StalePolicy.tolerate(days)) == text


def test_a_tolerance_is_the_exact_product_truncated() -> None:
    """docs/spec.md §2.3: ``days × 86,400,000,000`` truncated — of the
    exact product; the float product of 1/3 rounds up to a whole 8 hours
    and admitted a passage stale 8 hours before now."""
    stale_after = _NOW - 28_800_000_000
    third = StalePolicy.tolerate(1 / 3)
    assert third.admits_us(np.array([stale_after, stale_after + 1]), _NOW).tolist() == [
        False,
        True,
    ]
    assert StalePolicy.tolerate(0.5).admits_us(np.array([_NOW - 43_200_000_000]), _NOW).all()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"scope": "tenant"},
        {"scope": 5},
        {"permitted_source_ids": 5},
        {"permitted_source_ids": [5]},
        {"permitted_source_ids": iter(["a"])},
        {"visibility": 5},
    ],
)
def test_a_query_argument_of_the_wrong_type_is_refused_at_once(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentTypeError) as e:
        Query("order", **kwargs)
    assert isinstance(e.value, TypeError) and isinstance(e.value, InvalidArgumentError)


def test_a_query_takes_a_scope_ids_or_a_visibility_of_the_right_type() -> None:
    assert Query("order", scope=None).scope == Scope.local() == Query("order").scope
    assert Query("order", scope=Scope("acme")).scope == Scope("acme")
    assert Query("order", permitted_source_ids=("a", "b")).permitted_source_ids == ("a", "b")
    assert Query("order", permitted_source_ids=frozenset()).permitted_source_ids == ()
    assert Query("order", visibility=lambda scope, source: True).visibility is not None


@pytest.mark.parametrize("name", ["pin_exact_title", "include_historical", "explain"])
@pytest.mark.parametrize("value", ["false", 1, 0, None])
def test_a_switch_is_true_or_false(name: str, value: object) -> None:
    with pytest.raises(InvalidArgumentTypeError, match=f"Query.{name} must be True or False"):
        Query("order", **{name: value})  # type: ignore[arg-type]
    assert getattr(Query("order", **{name: True}), name) is True


def test_a_numpy_integer_is_a_whole_number_stored_as_an_int() -> None:
    """docs/spec.md §5.1: an integer Python indexes with counts as a whole
    number, and the query keeps an ``int`` (it is written into JSON)."""
    q = Query("x", limit=np.int64(3), fairness_quota=np.int32(2), rrf_k=np.uint16(5))
    assert (q.limit, q.fairness_quota, q.rrf_k) == (3, 2, 5)
    assert all(type(v) is int for v in (q.limit, q.fairness_quota, q.rrf_k))
    for bad in (True, np.float64(2.0), 2.0, "3"):
        with pytest.raises(InvalidArgumentError):
            Query("x", limit=bad)


def test_a_limit_is_read_once() -> None:
    """An object whose ``__index__`` answers differently each time is asked
    once: the query holds what was checked, never an unchecked second answer."""

    class Drifting:
        calls = 0

        def __index__(self) -> int:
            Drifting.calls += 1
            return 5 if Drifting.calls == 1 else -1

    q = Query("x", limit=Drifting())  # type: ignore[arg-type]
    assert (q.limit, Drifting.calls) == (5, 1)
    assert Query("x", limit=2**40).limit == 2**40


def test_a_query_is_keyword_only_and_keeps_its_own_ids() -> None:
    """docs/spec.md §5.1: ``Query(text, *, …)``, immutable — the ids given
    are copied (a caller's later append reached the query, unchecked, and
    the query did not hash)."""
    with pytest.raises(TypeError):
        Query("x", "merged")  # type: ignore[misc]
    ids = ["a"]
    q = Query("x", permitted_source_ids=ids)
    ids.append("b")
    assert q.permitted_source_ids == ("a",) and hash(q) == hash(
        Query("x", permitted_source_ids=["a"])
    )
