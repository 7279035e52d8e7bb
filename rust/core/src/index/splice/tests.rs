//! A spliced index against a build over the same concepts: random concepts,
//! random edits, additions and removals.

use std::collections::BTreeMap;

use super::*;
use crate::bm25f::{explain, search_index, Params, QueryTokens, Stats};
use crate::concept::read_concept;
use crate::index::tests::found;
use crate::testing::Rng;
use crate::text::analyze::Language;

const WORDS: [&str; 16] = [
    "data",
    "Data,",
    "files",
    "file",
    "(vacuum)",
    "retention",
    "retain",
    "the",
    "of",
    "x.y",
    "東京都",
    "running",
    "runs",
    "a",
    "ße",
    "NU",
];
const SYLLABLES: [&str; 8] = ["ka", "Lo", "mi", "ße", "ro", "é", "ti", "a-b"];

/// A word of the shared list, or one to three random syllables (so some
/// words are rare, and an edit adds and drops words of the vocabulary).
fn word(rng: &mut Rng) -> String {
    if rng.below(2) == 0 {
        return WORDS[rng.below(WORDS.len())].to_string();
    }
    (0..1 + rng.below(3))
        .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
        .collect()
}

fn text(rng: &mut Rng, max: usize) -> String {
    (0..rng.below(max + 1))
        .map(|_| word(rng))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Now and then one word said hundreds of times, so that some tokens are
/// wide (index/bm25f/mod.rs: `WIDE`) and others lose or gain that.
fn often(rng: &mut Rng) -> String {
    if rng.below(16) != 0 {
        return String::new();
    }
    let w = word(rng);
    vec![w; 250 + rng.below(20)].join(" ")
}

fn concept(id: &str, rng: &mut Rng) -> Concept {
    let src = format!(
        "---\ntitle: '{}'\ntags: ['{}', '{}']\ndescription: '{} {}'\n---\n{} {}\n",
        text(rng, 3),
        text(rng, 1),
        text(rng, 2),
        text(rng, 4),
        if rng.below(4) == 0 {
            often(rng)
        } else {
            String::new()
        },
        text(rng, 30),
        often(rng),
    );
    read_concept(id, "c.md", src.as_bytes()).concept.unwrap()
}

/// The new concepts, each old position's new one ([`GONE`] when removed or
/// changed), the fresh concepts and their positions: each old concept is
/// kept, changed or removed, and concepts are added between them, with the
/// odds given in 1000ths.
struct Edited {
    concepts: Vec<Concept>,
    old_to_new: Vec<u32>,
    fresh: Vec<Concept>,
    fresh_at: Vec<u32>,
}

fn edit(old: &[Concept], rng: &mut Rng, (change, remove, add): (usize, usize, usize)) -> Edited {
    let mut e = Edited {
        concepts: Vec::new(),
        old_to_new: Vec::new(),
        fresh: Vec::new(),
        fresh_at: Vec::new(),
    };
    let push_fresh = |e: &mut Edited, c: Concept| {
        e.fresh_at.push(e.concepts.len() as u32);
        e.fresh.push(c.clone());
        e.concepts.push(c);
    };
    for (i, c) in old.iter().enumerate() {
        if rng.below(1000) < add {
            push_fresh(
                &mut e,
                concept(&format!("{}a", &c.id[..c.id.len() - 1]), rng),
            );
        }
        let r = rng.below(1000);
        if r < remove {
            e.old_to_new.push(GONE);
        } else if r < remove + change {
            e.old_to_new.push(GONE);
            push_fresh(&mut e, concept(&c.id, rng));
        } else {
            e.old_to_new.push(e.concepts.len() as u32);
            e.concepts.push(old[i].clone());
        }
    }
    if rng.below(2) == 0 {
        push_fresh(&mut e, concept("z", rng));
    }
    e
}

/// A field's words, each with its concepts.
fn field_lists(f: &FieldIndex) -> BTreeMap<Vec<u8>, Vec<u32>> {
    (0..f.word_count() as u32)
        .map(|w| {
            let mut bits = vec![0u64; f.bitset_words];
            f.mark(w, &mut bits);
            let list = (0..64 * f.bitset_words as u32)
                .filter(|&p| bits[p as usize >> 6] >> (p & 63) & 1 == 1)
                .collect();
            (f.word(w).to_vec(), list)
        })
        .collect()
}

fn same_index(got: &Index, want: &Index, n: usize, rng: &mut Rng, at: &str) {
    // Every field: the same words (none left empty), each in the same
    // concepts, and what a substring lookup finds.
    for k in 0..3 {
        let (g, w) = (&got.fields[k], &want.fields[k]);
        assert_eq!(g.bitset_words, w.bitset_words, "{at}, field {k}");
        assert_eq!(field_lists(g), field_lists(w), "{at}, field {k}");
        let mut terms: Vec<String> = SYLLABLES.iter().map(|s| s.to_string()).collect();
        terms.extend(WORDS.iter().map(|s| s.to_string()));
        terms.extend((0..30).map(|_| word(rng)));
        terms.extend(["k", "AM", "zz", "ßen", "o", "ata", "kaLo", "東京"].map(String::from));
        for term in &terms {
            assert_eq!(
                found(got, k, term, n),
                found(want, k, term, n),
                "{at}, field {k}, {term:?}"
            );
        }
    }
    let tags = |ix: &Index| -> BTreeMap<String, Vec<u32>> {
        ix.tags
            .iter()
            .map(|(t, l)| (t.clone(), l.to_vec()))
            .collect()
    };
    assert_eq!(tags(got), tags(want), "{at}: tags");
    // BM25F: the build's index, array for array (the vocabulary too, so
    // every token's id, document frequency and list).
    let (g, w) = (&got.bm25f, &want.bm25f);
    assert_eq!(g.check(n), Ok(()), "{at}");
    assert_eq!(g.token_count(), w.token_count(), "{at}");
    for t in 0..w.token_count() as u32 {
        let token = std::str::from_utf8(w.token(t)).unwrap();
        let id = g.token_id(token).expect("every token is there");
        assert_eq!(g.df(id), w.df(t), "{at}: df of {token}");
        assert_eq!(
            g.list(id).docs.to_vec(),
            w.list(t).docs.to_vec(),
            "{at}: {token}"
        );
        let tfs = |ix: &crate::index::bm25f::Bm25fIndex, t: u32| -> Vec<[u16; 4]> {
            let list = ix.list(t);
            (0..list.docs.len()).map(|i| list.tfs(i)).collect()
        };
        assert_eq!(tfs(g, id), tfs(w, t), "{at}: {token}");
    }
    assert_eq!(g.totals, w.totals, "{at}");
    assert_eq!(*g.lengths, *w.lengths, "{at}");
    assert_eq!(*g.vocab, *w.vocab, "{at}");
    assert_eq!(*g.starts, *w.starts, "{at}");
    assert_eq!(*g.near, *w.near, "{at}");
    assert_eq!(*g.firsts, *w.firsts, "{at}");
    assert_eq!(*g.lasts, *w.lasts, "{at}");
    assert_eq!(*g.far_tokens, *w.far_tokens, "{at}");
    assert_eq!(*g.far_starts, *w.far_starts, "{at}");
    assert_eq!(*g.far_docs, *w.far_docs, "{at}");
    assert_eq!(*g.body, *w.body, "{at}");
    assert_eq!(*g.head_dir, *w.head_dir, "{at}");
    assert_eq!(*g.head_words, *w.head_words, "{at}");
    assert_eq!(*g.wide_tokens, *w.wide_tokens, "{at}");
    assert_eq!(*g.wide_starts, *w.wide_starts, "{at}");
    assert_eq!(*g.wide_tfs, *w.wide_tfs, "{at}");
    assert_eq!(*g.max_tf, *w.max_tf, "{at}");
    assert_eq!(*g.min_len, *w.min_len, "{at}");
    assert_eq!(*g.long_tokens, *w.long_tokens, "{at}");
    assert_eq!(*g.block_starts, *w.block_starts, "{at}");
    assert_eq!(*g.block_last, *w.block_last, "{at}");
    assert_eq!(*g.block_max_tf, *w.block_max_tf, "{at}");
    assert_eq!(*g.block_min_len, *w.block_min_len, "{at}");
    // Searches, top-k and full, and explanations: the same bits.
    let analyzer = Analyzer::new(g.language);
    for q in 0..12 {
        let text = format!("{} {}", text(rng, 3), WORDS[q % WORDS.len()]);
        let tokens = QueryTokens::new(&analyzer, &text, false);
        let (sg, sw) = (Stats::of(g, &tokens.tokens), Stats::of(w, &tokens.tokens));
        assert_eq!(sg, sw, "{at}: {text:?}");
        let params = Params {
            k1: 1.2,
            weights: [3.0, 2.0, 1.5, 1.0],
            b: [0.5, 0.3, 0.6, 0.75],
        };
        for limit in [Some(1), Some(7), None] {
            let a = search_index(g, &tokens, &sg, &params, None, limit);
            let b = search_index(w, &tokens, &sw, &params, None, limit);
            assert_eq!(a.positions, b.positions, "{at}: {text:?}");
            let bits = |r: &crate::bm25f::Ranked| -> Vec<u64> {
                r.scores.iter().map(|s| s.to_bits()).collect()
            };
            assert_eq!(bits(&a), bits(&b), "{at}: {text:?}");
        }
        for p in (0..n as u32).step_by(1 + n / 7) {
            let a = explain(g, &tokens, &sg, &params, p);
            let b = explain(w, &tokens, &sw, &params, p);
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{at}: {text:?} at {p}");
        }
    }
}

/// Each round: random concepts, indexed; then a few changed, removed and
/// added (and, once in a while, many, or none, or every one removed). The
/// spliced index answers every lookup as the build over the new concepts.
#[test]
fn a_spliced_index_answers_as_a_build() {
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    let analyzer = Analyzer::new(Some(Language::English));
    let odds = [
        (20, 10, 10),
        (0, 0, 0),
        (100, 0, 0),
        (0, 100, 0),
        (0, 0, 300),
        (300, 300, 300),
        (0, 1000, 0),
    ];
    for (round, &odds) in odds.iter().enumerate() {
        for n in [0usize, 1, 130, 1200] {
            let old: Vec<Concept> = (0..n)
                .map(|i| concept(&format!("c{i:05}c"), &mut rng))
                .collect();
            let old_ix = Index::build(&old, &analyzer);
            let e = edit(&old, &mut rng, odds);
            let map = Remap {
                old_to_new: &e.old_to_new,
                fresh_at: &e.fresh_at,
            };
            let n_new = e.concepts.len();
            let got = Index::splice(&old_ix, &map, &e.fresh, n_new, &analyzer).unwrap();
            let want = Index::build(&e.concepts, &analyzer);
            let at = format!("round {round}, {n} concepts, then {n_new}");
            same_index(&got, &want, n_new, &mut rng, &at);
            // A splice of a splice: the next reopen's index.
            let e2 = edit(&e.concepts, &mut rng, (50, 20, 20));
            let map2 = Remap {
                old_to_new: &e2.old_to_new,
                fresh_at: &e2.fresh_at,
            };
            let n2 = e2.concepts.len();
            let again = Index::splice(&got, &map2, &e2.fresh, n2, &analyzer).unwrap();
            let want2 = Index::build(&e2.concepts, &analyzer);
            same_index(&again, &want2, n2, &mut rng, &format!("{at}, again"));
        }
    }
}
