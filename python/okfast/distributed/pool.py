"""The shard actors of a :class:`~okfast.distributed.RayResolver`: calls
fanned out with a timeout, a failed actor replaced (docs/spec.md §15.4).

Ray is imported when a pool is made, never by ``import okfast``.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import numbers
import pickle
import threading
import time
from collections.abc import Iterable
from typing import Any

from okfast.distributed.shard import Shard, Unit
from okfast.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingDependencyError,
    OkfastError,
)
from okfast.paths import directory_key


def ray_module() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError as e:
        raise MissingDependencyError(
            f"RayResolver needs Ray ({e}): pip install 'okfast[ray]'"
        ) from None


#: How long a fresh actor may take to load its bundles (the first load of
#: every bundle, and a restart after a fault) before it counts as failed.
LOADING = 600.0


def timeout_of(seconds: object) -> float:
    """A round trip's bound (docs/spec.md §15.1): a number > 0; infinity
    waits as long as it takes."""
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
        raise InvalidArgumentTypeError(f"timeout must be a number of seconds, got {seconds!r}")
    try:
        value = float(seconds)
    except OverflowError:  # an integer past a float's range: as long as it takes
        value = math.inf if seconds > 0 else -math.inf  # type: ignore[operator]
    if not value > 0:  # NaN too
        raise InvalidArgumentError(f"timeout must be > 0, got {seconds}")
    return value


def _raised_by_shard(e: Any) -> BaseException:
    """What a shard's call raised, for the caller: an :class:`OkfastError`
    is okfast's own answer (a passage of a snapshot replaced twice, §15.3)
    and is raised as it is, its message okfast's; anything else is a bug,
    raised with Ray's remote traceback as its message."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, OkfastError):
        return cause
    return e.as_instanceof_cause()  # type: ignore[no-any-return]


class Failed:
    """A shard that died or did not answer in time."""

    def __init__(self, why: str) -> None:
        self.why = why


def shard_actor(ray: Any, options: dict[str, Any]) -> Any:
    """The shard actor class with ``options`` (``actor_options``); Ray's own
    check of them needs no cluster, so a bad one is refused before one is
    started (docs/spec.md §15.1)."""
    # Task events feed Ray's dashboard and state API; recording them costs
    # each call time on both ends (docs/scale-out.md), so they are off
    # unless ``actor_options`` turn them on.
    options = {"enable_task_events": False, **options}
    try:
        return ray.remote(Shard).options(max_restarts=0, **options)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"actor_options: Ray refused them: {e}") from None


class Pool:
    """The shard actors: calls fanned out with a timeout, a failed actor
    replaced by a fresh one (docs/spec.md §15.4).

    A call crosses as the bytes of the C pickler (:meth:`Shard.call`), and
    names units by number: each unit is numbered once, and sent to a shard
    with every call until the shard has answered one."""

    def __init__(
        self, n: int, preload: list[list[Unit]], max_staleness: float, options: dict[str, Any]
    ) -> None:
        self.ray = ray_module()
        self.timeout = 30.0
        self._mu = threading.Lock()  # the numbering; passage reads run beside searches
        self._numbers: dict[Unit, int] = {}
        #: how many units were ever numbered (the next number)
        self.numbered = 0
        #: each number's directory key
        self._dirs: dict[int, str] = {}
        #: per shard: the numbers of units it was given that were retired
        #: since, until a call it answered told it so
        self._retired: list[set[int]] = [set() for _ in range(n)]
        #: per shard: the units it was given, and the numbers it has
        self._given: list[dict[int, Unit]] = [{} for _ in range(n)]
        self._known: list[set[int]] = [set() for _ in range(n)]
        self._preload = [{self.number(i, u): u for u in units} for i, units in enumerate(preload)]
        self._max_staleness = max_staleness
        self._actor = shard_actor(self.ray, options)
        self.actors = [self._start(i) for i in range(n)]
        #: per restarted shard: its ``ready`` reply, and when it was started
        self._loading: dict[int, tuple[Any, float]] = {}
        #: per shard sent units it had not loaded, late since: when it began
        self._late_loading: dict[int, float] = {}

    def _start(self, i: int) -> Any:
        self._known[i] = set(self._preload[i])
        self._retired[i] = set()  # a fresh actor was never given them
        return self._actor.remote(self._preload[i], self._max_staleness)

    def replace(self, i: int) -> None:
        with contextlib.suppress(Exception):  # already dead, or its cluster gone
            self.ray.kill(self.actors[i], no_restart=True)
        with self._mu:
            # The fresh actor loads at its start every unit the old one was
            # given, within its start's grace, not later within a search.
            self._preload[i] = dict(self._given[i])
            self._late_loading.pop(i, None)
            self.actors[i] = self._start(i)
            self._loading[i] = (self.actors[i].ready.remote(), time.monotonic())

    def _loading_units(self, i: int, sent: list[int]) -> bool:
        """Whether shard ``i`` is late because the call gave it units it had
        not loaded (a source a catalog reload added, a language not loaded
        before): as a fresh actor's start, not a hang, for up to
        :data:`LOADING` s (docs/spec.md §15.4)."""
        if not sent:
            return False
        with self._mu:
            since = self._late_loading.setdefault(i, time.monotonic())
        return time.monotonic() - since <= LOADING

    def _still_loading(self, i: int) -> bool:
        """Whether shard ``i`` is a fresh actor still loading its bundles (for
        less than :data:`LOADING` s): late for that reason, not hung, so not
        replaced again — or a timeout shorter than a start would replace
        every fresh actor before it could answer (docs/spec.md §15.4)."""
        with self._mu:
            started = self._loading.get(i)
        if started is None:
            return False
        ready, _ = self.ray.wait([started[0]], timeout=0)
        if ready or time.monotonic() - started[1] > LOADING:
            with self._mu:
                self._loading.pop(i, None)
            return False
        return True

    def number(self, i: int, u: Unit) -> int:
        """``u``'s number, which shard ``i`` is sent with its calls until it knows it."""
        with self._mu:
            n = self._numbers.get(u)
            if n is None:
                n = self._numbers[u] = self.numbered
                self.numbered += 1
                assert u.source.directory is not None
                self._dirs[n] = directory_key(u.source.directory)
            self._given[i][n] = u
            return n

    def retire(self, live: set[str]) -> list[int]:
        """Forget every unit whose directory is not among ``live`` (directory
        keys): no replacement loads it, and each shard it was given is told
        with its next call to let go of it (docs/spec.md §15.4) — also when
        the shard never answered a call that sent it (late, loading it), or
        a call that sent it is still out. The shards told of a unit this
        time, sorted (one told before hears again with its next call)."""
        with self._mu:
            gone = {n for n, key in self._dirs.items() if key not in live}
            if not gone:
                return []
            self._numbers = {u: n for u, n in self._numbers.items() if n not in gone}
            for n in gone:
                del self._dirs[n]
            told = []
            for i, given in enumerate(self._given):
                here = gone & given.keys()
                for n in here:
                    del given[n]
                    self._preload[i].pop(n, None)
                    self._known[i].discard(n)
                self._retired[i] |= here
                if here:
                    told.append(i)
            return told

    def call(self, calls: dict[int, tuple[str, tuple[Any, ...]]]) -> dict[int, Any]:
        """Each shard's reply to its call, or :class:`Failed`; never waits
        longer than :attr:`timeout` seconds in all."""
        ray = self.ray
        if not calls:
            return {}
        # An infinite timeout waits as long as it takes (Ray's ``None``).
        wait = None if math.isinf(self.timeout) else self.timeout
        deadline = time.monotonic() + self.timeout
        refs = {}
        sent: dict[int, list[int]] = {}
        told: dict[int, list[int]] = {}
        # A call sent to a fresh actor still loading waits behind its load:
        # late for that reason even if the load ends before the deadline.
        loading = {i for i in calls if self._still_loading(i)}
        if not ray.is_initialized():
            # The cluster was shut down: never start another one here.
            return {i: Failed("the Ray cluster is gone (ray.shutdown)") for i in calls}
        out: dict[int, Any] = {}
        for i, (m, a) in calls.items():
            with self._mu:
                new = {n: u for n, u in self._given[i].items() if n not in self._known[i]}
                retired = sorted(self._retired[i])
            sent[i] = list(new)
            told[i] = retired
            blob = pickle.dumps((new, retired, m, a), protocol=pickle.HIGHEST_PROTOCOL)
            try:
                refs[i] = self.actors[i].call.remote(blob)
            except Exception as e:  # noqa: BLE001 (Ray raises a bare Exception for a lost actor)
                out[i] = Failed(f"shard {i} failed ({type(e).__name__})")
                self.replace(i)
        if not refs:
            return out
        try:  # the common case in one call: every shard answers in time
            got = ray.get(list(refs.values()), timeout=wait)
            return out | {
                i: self._answer(i, sent[i], told[i], r) for i, r in zip(refs, got, strict=True)
            }
        except ray.exceptions.RayTaskError as e:
            self._collect(refs.values(), deadline)
            raise _raised_by_shard(e) from None
        except ray.exceptions.RayError:
            pass  # a shard failed or is late: which one, below
        left = max(0.0, deadline - time.monotonic())  # the others may still answer in time
        ready, _ = ray.wait(
            list(refs.values()), num_returns=len(refs), timeout=None if wait is None else left
        )
        done = set(ready)
        for i, ref in refs.items():
            if ref not in done:
                out[i] = Failed(f"shard {i} did not answer within {self.timeout:g} s")
                late_for_a_load = i in loading or self._loading_units(i, sent[i])
                if not late_for_a_load and not self._still_loading(i):
                    self.replace(i)
                continue
            try:
                out[i] = self._answer(i, sent[i], told[i], ray.get(ref))
            except ray.exceptions.RayTaskError as e:
                self._collect(ready, deadline)
                raise _raised_by_shard(e) from None
            except ray.exceptions.RayError as e:
                out[i] = Failed(f"shard {i} failed ({type(e).__name__})")
                self.replace(i)
        return out

    def _collect(self, refs: Iterable[Any], deadline: float) -> None:
        """Read every reply of a call that raises one shard's error, within
        its time: Ray logs an error no one read as an "Unhandled error"
        traceback, and the caller has the one it raises (docs/spec.md §15.3)."""
        ray = self.ray
        refs = list(refs)
        left = None if math.isinf(self.timeout) else max(0.0, deadline - time.monotonic())
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=left)
        for ref in ready:
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get(ref)

    def _answer(self, i: int, sent: list[int], told: list[int], reply: bytes) -> Any:
        with self._mu:
            self._known[i].update(sent)
            self._retired[i].difference_update(told)
            self._late_loading.pop(i, None)
        return pickle.loads(reply)

    def fanout(self, calls: dict[int, tuple[str, tuple[Any, ...]]]) -> dict[int, Any]:
        """:meth:`call` for reads after a search: a failure raises."""
        out = self.call(calls)
        for r in out.values():
            if isinstance(r, Failed):
                raise OkfastError(f"passages could not be read: {r.why}")
        return out
