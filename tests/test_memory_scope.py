"""``Scope``, ``Tier`` and ``memory_path`` (SPEC §6.1–6.2)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from okfast.errors import InvalidArgumentTypeError
from okfast.memory import Scope, Tier, memory_path
from okfast.memory.scope import applies, below_path, own_tier

MALICIOUS = [
    "..",
    ".",
    "a/b",
    "a\\b",
    "",
    "_local",
    "a\x00b",
    ".hidden",
    "x" * 256,
    "é",
    " a",
    "-a",
]


@pytest.mark.parametrize("bad", MALICIOUS)
@pytest.mark.parametrize("field", ["tenant", "user", "session"])
def test_unsafe_ids_are_rejected(field: str, bad: str) -> None:
    ids = {"tenant": "t", "user": "u", "session": "s"}
    ids[field] = bad
    with pytest.raises(ValueError, match="not a safe id"):
        Scope(**ids)


def test_non_string_ids_are_rejected() -> None:
    with pytest.raises(ValueError):
        Scope(tenant=7)  # type: ignore[arg-type]


def test_the_longest_safe_id_is_accepted() -> None:
    assert Scope(tenant="x" * 255).tenant == "x" * 255


def test_a_user_needs_a_tenant_and_a_session_a_user() -> None:
    with pytest.raises(ValueError, match="needs a tenant"):
        Scope(user="u")
    with pytest.raises(ValueError, match="needs a user"):
        Scope(tenant="t", session="s")


def test_scopes_are_immutable_values() -> None:
    a, b = Scope("A", "alice"), Scope("A", "alice")
    assert a == b and hash(a) == hash(b) and a != Scope("A", "Alice")
    with pytest.raises(AttributeError):
        a.user = "bob"  # type: ignore[misc]
    assert Scope.local() == Scope() and Scope.local().is_local


def _enc(x: str) -> str:
    return x.lower() + "-" + hashlib.sha256(x.encode()).hexdigest()[:16]


@pytest.mark.parametrize("bad", [None, "A", ("A",)])
def test_memory_path_of_no_scope_is_a_type_error(bad: Any) -> None:
    # docs/spec.md §6.2, §8: okfast's own type error, not an AttributeError.
    for tier in Tier:
        with pytest.raises(InvalidArgumentTypeError, match="scope must be a Scope"):
            memory_path(tier, bad)
        with pytest.raises(InvalidArgumentTypeError, match="scope must be a Scope"):
            below_path(tier, bad)


def test_memory_path_is_the_spec_form() -> None:
    s = Scope("Acme", "Alice", "s-1")
    assert memory_path(Tier.TENANT, s) == f"memory-tenant/{_enc('Acme')}"
    assert memory_path(Tier.USER, s) == f"memory-user/{_enc('Acme')}/{_enc('Alice')}"
    assert memory_path(Tier.SESSION, s) == (
        f"memory-session/{_enc('Acme')}/{_enc('Alice')}/{_enc('s-1')}"
    )
    # A vector computed by hand, so the hash itself is pinned too.
    assert _enc("alice") == "alice-2bd806c97f0e00af"
    local = Scope.local()
    assert memory_path(Tier.USER, local) == "memory-user/_local/_local"
    assert memory_path("session", local) == "memory-session/_local/_local/_local"  # type: ignore[arg-type]


def test_case_distinct_ids_never_share_a_directory() -> None:
    a = memory_path(Tier.USER, Scope("t", "Alice"))
    b = memory_path(Tier.USER, Scope("t", "alice"))
    assert a != b and a.casefold() != b.casefold()


def test_applicable_tiers_and_ownership() -> None:
    assert [t for t in Tier if applies(t, Scope.local())] == list(Tier)
    assert [t for t in Tier if applies(t, Scope("A"))] == [Tier.TENANT]
    assert [t for t in Tier if applies(t, Scope("A", "u"))] == [Tier.USER, Tier.TENANT]
    assert own_tier(Scope("A", "u", "s")) is Tier.SESSION
    assert own_tier(Scope.local()) is None
    assert below_path(Tier.SESSION, Scope("A", "u")) == f"memory-session/{_enc('A')}/{_enc('u')}"
    assert below_path(Tier.USER, Scope("A")) == f"memory-user/{_enc('A')}"
