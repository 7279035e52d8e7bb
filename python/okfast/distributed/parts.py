"""A split source made one source again on the driver (docs/spec.md §15.5):
its supersession and conflict graph over the whole source, from every
part's declarations."""

from __future__ import annotations

from typing import Any

import numpy as np

from okfast import governance
from okfast.distributed.pool import Failed, Pool
from okfast.distributed.shard import Found, Unit
from okfast.governance import id_key

#: The graphs kept, per source and its parts' snapshot versions.
KEPT = 64


def declarations(
    pool: Pool,
    kept: dict[tuple[str, tuple[str, ...]], governance.Declarations],
    split: dict[str, list[Found]],
    plan: dict[str, list[tuple[int, Unit]]],
    failed: dict[str, str],
) -> dict[str, governance.Declarations]:
    """Each split source's supersession and conflict graph over the whole
    source, positions counted across its parts (docs/spec.md §7, §15.5):
    every part's declarations, each name looked up in the part whose range
    holds it — two round trips, once per set of snapshot versions (``kept``).
    A source whose shard fails meanwhile is put in ``failed``."""
    out: dict[str, governance.Declarations] = {}
    todo: dict[str, tuple[str, ...]] = {}
    for sid, parts in split.items():
        key = (sid, tuple(r.version for r in parts))
        if key in kept:
            out[sid] = kept[key]
        else:
            todo[sid] = key[1]
    if not todo:
        return out
    number = pool.number

    def ask(method: str, args: dict[tuple[str, int], Any]) -> dict[tuple[str, int], Any]:
        calls: dict[int, list[tuple[str, int]]] = {}
        for sid, k in args:
            calls.setdefault(plan[sid][k][0], []).append((sid, k))
        replies = pool.call({sh: (method, ([args[a] for a in a_s],)) for sh, a_s in calls.items()})
        got: dict[tuple[str, int], Any] = {}
        for sh, reply in replies.items():
            for i, a in enumerate(calls[sh]):
                if isinstance(reply, Failed):
                    failed.setdefault(a[0], reply.why)
                else:
                    got[a] = reply[i]
        return got

    def unit(sid: str, k: int) -> tuple[int, str]:
        sh, u = plan[sid][k]
        return number(sh, u), todo[sid][k]

    decls = ask(
        "declared", {(sid, k): unit(sid, k) for sid in todo for k in range(len(split[sid]))}
    )
    names: dict[tuple[str, int], list[str]] = {}
    for (sid, _), ds in decls.items():
        units = [u for _, u in plan[sid]]
        for d in ds:
            for name in (*d.supersedes, *d.superseded_by, *d.conflicts_with):
                names.setdefault((sid, _holder(units, name)), []).append(name)
    names = {a: list(dict.fromkeys(ns)) for a, ns in names.items()}
    found = ask("present", {a: (*unit(*a), ns) for a, ns in names.items()})
    for sid in todo:
        if sid in failed:
            continue
        base = np.cumsum([0] + [r.size for r in split[sid]]).tolist()
        at: dict[str, int] = {}
        for (s2, k), ps in found.items():
            if s2 == sid:
                at.update(
                    {
                        n: base[k] + p
                        for n, p in zip(names[(s2, k)], ps, strict=True)
                        if p is not None
                    }
                )
        every = [
            governance.Declared(
                base[k] + d.position,
                d.concept_id,
                d.supersedes,
                d.superseded_by,
                d.conflicts_with,
            )
            for k in range(len(split[sid]))
            for d in decls[(sid, k)]
        ]
        g = governance.graph(every, at.get, np.zeros(0, np.uint8), False)
        if len(kept) >= KEPT:  # the oldest entries first
            del kept[next(iter(kept))]
        kept[(sid, todo[sid])] = out[sid] = g
    return out


def _holder(units: list[Unit], name: str) -> int:
    """The part of a split source whose id range holds ``name``."""
    key = id_key(name)
    for k, u in enumerate(units):
        if u.hi is None or key < id_key(u.hi):
            return k
    return len(units) - 1
