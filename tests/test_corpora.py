"""Real bundles published by others (../shared/corpora): every one loads, and the
native results equal the reference on them (the 61k-concept bundle on a sample)."""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path

import pytest
import reference
from conftest import CORPORA, requires_corpora
from okfast import Bundle
from test_properties import native_fields, ref_diags, ref_fields

pytestmark = requires_corpora

BIG = "saschb2b/bgh-rechtsprechung"


def corpus_bundles() -> list[str]:
    if not CORPORA.is_dir():
        return []
    out = []
    for group in sorted(p for p in CORPORA.iterdir() if p.is_dir()):
        if (group / "index.md").exists() or (group / "concepts").is_dir():
            out.append(group.name)  # the group is itself a bundle (databricks)
        else:
            out += [f"{group.name}/{b.name}" for b in sorted(group.iterdir()) if b.is_dir()]
    return [b for b in out if b != BIG]


@cache
def loaded(name: str) -> tuple[Bundle, reference.RefBundle]:
    root = CORPORA / name
    return Bundle.load(root), reference.load_bundle(str(root))


def sample_queries(rb: reference.RefBundle, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = sorted({w for c in rb.concepts for w in reference.split_ws(c.title or "")})
    words += ["the", "und", "API", "data", "ß", "Recht", "-", "okf"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(n)]


def test_every_corpus_is_found() -> None:
    names = corpus_bundles()
    assert "saschb2b/okf" in names and "databricks" in names and len(names) >= 10


@pytest.mark.parametrize("name", corpus_bundles())
def test_corpus_matches_reference(name: str) -> None:
    nb, rb = loaded(name)
    assert len(nb) > 0
    assert list(nb.concept_ids) == [c.concept_id for c in rb.concepts]
    assert [(d.code, d.message, d.path, d.severity) for d in nb.diagnostics] == ref_diags(
        rb.diagnostics
    )
    assert nb.okf_version == rb.okf_version
    step = max(1, len(rb.concepts) // 300)
    for c in rb.concepts[::step]:
        assert native_fields(nb.concept(c.concept_id)) == ref_fields(c)
    if len(rb.concepts) <= 1000:
        for q in sample_queries(rb, 12, seed=len(name)):
            want = reference.search(rb, q)
            assert [(h.concept_id, h.score, h.excerpt) for h in nb.search(q)] == want
            assert nb.search(q, limit=10) == nb.search(q)[:10]
    else:
        # The reference scan is slow in pure Python: check scores on a sample.
        check_sampled_scores(nb, rb.concepts[::step], sample_queries(rb, 6, seed=len(name)))


def check_sampled_scores(
    nb: Bundle, concepts: list[reference.RefConcept], queries: list[str]
) -> None:
    for q in queries:
        terms = reference.split_ws(q)
        pos, scores = nb.search_arrays(q)
        native_score = dict(zip(pos.tolist(), scores.tolist(), strict=True))
        for c in concepts:
            p = nb.concept_ids.index(c.concept_id)
            assert native_score.get(p, 0) == reference.score(c, terms), (q, c.concept_id)
        # The full order holds: by score descending, then id.
        ids = [nb.concept_ids[p] for p in pos[:200]]
        keys = [(-s, reference.id_key(i)) for s, i in zip(scores[:200].tolist(), ids, strict=True)]
        assert keys == sorted(keys)


def test_okf_bundle_loads_all_63_concepts() -> None:
    nb, _ = loaded("saschb2b/okf")
    assert len(nb) == 63 and nb.diagnostics == () and nb.okf_version == "0.2"


def test_lenient_descriptions_in_the_wild() -> None:
    nb, _ = loaded("saschb2b/react")
    c = nb.concept("get-started/quick-start")
    assert c.description is not None and ": " in c.description


def test_large_corpus_on_a_sample() -> None:
    root = CORPORA / BIG
    if not root.is_dir():
        pytest.skip(f"{BIG} not in the corpora")
    nb = Bundle.load(root)
    assert len(nb) > 60_000
    rng = random.Random(7)
    sample = rng.sample(range(len(nb)), 300)
    ref_concepts = []
    for pos in sample:
        cid = nb.concept_ids[pos]
        path = f"{cid}.md"
        got = nb.concept(cid)
        want, diags = reference.read_concept(path, (root / path).read_bytes())
        assert want is not None
        assert [(d.code, d.message) for d in diags] == [
            (d.code, d.message) for d in nb.diagnostics if d.path == path
        ]
        assert native_fields(got) == ref_fields(want)
        ref_concepts.append(want)
    check_sampled_scores(
        nb, ref_concepts, ["BGH Urteil", "Mietrecht Kündigung", "§ 823", "Revision ZPO", "ß"]
    )


def test_catalog_over_all_corpora_resolves_under_every_strategy(tmp_path: Path) -> None:
    from okfast import Catalog, Query, Resolver, Strategy

    names = corpus_bundles()
    sources = [
        {"id": f"s{i:02d}", "path": f"./{name}", "priority": i % 4} for i, name in enumerate(names)
    ]
    cat = Catalog.parse(
        json.dumps({"version": 1, "sources": sources}), base_dir=CORPORA, root=CORPORA
    )
    resolver = Resolver(cat, max_staleness=3600)
    for strategy in Strategy:
        ctx = resolver.search(Query("React state Rezept", strategy=strategy, fairness_quota=3))
        assert len(ctx.passages) > 50
        if strategy is not Strategy.GROUPED:  # the quota interleaves sources
            assert len({p.source_id for p in ctx.passages[:40]}) >= 2
        assert not [d for d in ctx.diagnostics if d.code == "SourceUnavailable"]
        keys = ctx.passages.keys()
        assert len(set(keys)) == len(keys)
