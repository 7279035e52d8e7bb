"""The context digest (SPEC §5.9): golden vectors, and what it does and does
not depend on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import REPO, TESTS, write_bundle
from okfast.catalog import Catalog
from okfast.passages import canonical_json, digest_of
from okfast.query import Query
from okfast.resolver import Resolver

VECTORS = json.loads((TESTS / "digest_vectors.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("v", VECTORS, ids=[v["name"] for v in VECTORS])
def test_golden_vectors(v: dict[str, object]) -> None:
    doc = v["input"]
    assert isinstance(doc, dict)
    assert canonical_json(doc).decode() == v["canonical_json"]
    assert digest_of(doc["passages"], doc["diagnostics"], doc["exclusions"]) == v["digest"]


def _catalog(tmp: Path) -> Catalog:
    write_bundle(
        tmp / "kb",
        {
            "new.md": "---\ntype: T\ntitle: Refund policy\nsupersedes: [old]\n---\nrefund in 30 days\n",
            "old.md": "---\ntype: T\ntitle: Refund policy (old)\n---\nrefund in 14 days\n",
            "later.md": "---\ntype: T\ntitle: Refund later\nstale_after: 2031-01-01\n---\nrefund\n",
        },
    )
    (tmp / "catalog.json").write_text(
        json.dumps({"version": 1, "sources": [{"id": "kb", "path": "kb"}]})
    )
    return Catalog.load(tmp / "catalog.json")


def test_digest_ignores_explain_time_and_empty_reloads(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    base = Resolver(cat, clock=lambda: t0).search(Query("refund", strategy="merged")).digest
    assert (
        Resolver(cat, clock=lambda: t0)
        .search(Query("refund", strategy="merged", explain=True))
        .digest
        == base
    )
    later = t0 + timedelta(days=300)  # time passes; no lifecycle changes
    assert (
        Resolver(cat, clock=lambda: later).search(Query("refund", strategy="merged")).digest == base
    )
    assert cat.reload().ok and cat.generation == 2
    assert Resolver(cat, clock=lambda: t0).search(Query("refund", strategy="merged")).digest == base


@pytest.mark.parametrize("scorer", ["weighted_count", "bm25f", "fusion"])
def test_a_context_made_by_hand_has_the_resolvers_digest(tmp_path: Path, scorer: str) -> None:
    """docs/spec.md §5.2, §5.9: a Context made from a plain list of the same
    passages digests as the resolver's (a float score in micro-units, §12.7)."""
    from okfast.passages import Context

    ctx = Resolver(_catalog(tmp_path)).search(Query("refund policy", scorer=scorer))
    assert len(ctx.passages) > 0
    hand = Context(
        ctx.query,
        ctx.generation,
        list(ctx.passages),  # type: ignore[arg-type]
        ctx.diagnostics,
        ctx.exclusions,
    )
    assert hand.digest == ctx.digest


def test_digest_changes_with_any_kept_or_excluded_passage(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def d(**kw: object) -> str:
        return Resolver(cat, clock=lambda: t0, max_staleness=0).search(Query("refund", **kw)).digest  # type: ignore[arg-type]

    base = d()
    assert d(include_historical=True) != base  # old moves from exclusions to passages
    assert d(limit=1) != base
    stale = Resolver(cat, clock=lambda: datetime(2032, 1, 1, tzinfo=timezone.utc)).search(
        Query("refund", stale_policy=__import__("okfast").StalePolicy.strict())
    )
    assert stale.digest != base  # a lifecycle change: `later` went stale
    (tmp_path / "kb" / "old.md").write_text(
        "---\ntype: T\ntitle: Refund policy (old)\n---\nrefund\n"
    )
    assert d() == base  # an excluded passage's text is not in the digest, its identity is
    (tmp_path / "kb" / "new.md").write_text(
        "---\ntype: T\ntitle: Refund\nsupersedes: [old]\n---\nx\n"
    )
    assert d() != base  # a kept passage's score changed


SCRIPT = """
import json, sys
from okfast.cli import main
sys.exit(main(["resolve", "--catalog", sys.argv[1], "refund policy", "--strategy", "merged",
               "--explain", "--json", "--fairness-quota", "2"]))
"""


def test_twenty_fresh_processes_agree_byte_for_byte() -> None:
    catalog = str(REPO / "examples" / "catalog.json")

    def run(seed: int) -> str:
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        p = subprocess.run(
            [sys.executable, "-c", SCRIPT, catalog],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return p.stdout

    with ThreadPoolExecutor(max_workers=4) as pool:
        outputs = list(pool.map(run, range(20)))
    assert len(set(outputs)) == 1
    doc = json.loads(outputs[0])
    assert doc["passages"] and doc["digest"].startswith("sha256:")
