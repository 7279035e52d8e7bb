//! The scorer against its literal definition, and top-k against full evaluation.

use super::*;
use crate::concept::{read_concept, Concept};
use crate::index::Index;
use crate::testing::Rng;
use crate::text::analyze::{Analyzer, Language};

const WORDS: [&str; 15] = [
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
    "x.x",
    "東京都",
    "running",
    "runs",
    "a",
];

fn random_text(rng: &mut Rng, max: usize) -> String {
    (0..rng.below(max + 1))
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Now and then one word said hundreds of times: frequencies that need
/// two bytes (index/bm25f/mod.rs: `WIDE`).
fn often(rng: &mut Rng) -> String {
    if rng.below(12) != 0 {
        return String::new();
    }
    vec![WORDS[rng.below(WORDS.len())]; 240 + rng.below(40)].join(" ")
}

fn random_concepts(n: usize, rng: &mut Rng) -> Vec<Concept> {
    (0..n)
        .map(|i| {
            let src = format!(
                "---\ntitle: '{} {}'\ntags: ['{}', '{}']\ndescription: '{}'\n---\n{} {}\n",
                random_text(rng, 3),
                if rng.below(8) == 0 {
                    often(rng)
                } else {
                    String::new()
                },
                random_text(rng, 1),
                random_text(rng, 2),
                random_text(rng, 4),
                random_text(rng, 30),
                often(rng),
            );
            read_concept(&format!("c{i:04}"), "c.md", src.as_bytes())
                .concept
                .unwrap()
        })
        .collect()
}

/// docs/spec.md §12 read literally: each field's tokens counted from
/// its text, the statistics summed, every concept scored in full.
fn literal(
    concepts: &[Concept],
    analyzer: &Analyzer,
    tokens: &QueryTokens,
    params: &Params,
) -> Vec<(u32, f64)> {
    let fields = |c: &Concept| -> [Vec<String>; 4] {
        let many = |texts: &[&str]| texts.iter().flat_map(|t| analyzer.tokens(t)).collect();
        let tags: Vec<&str> = c.tags.iter().map(String::as_str).collect();
        [
            many(&[c.title.as_deref().unwrap_or("")]),
            many(&tags),
            many(&[c.description.as_deref().unwrap_or("")]),
            many(&[&c.body().unwrap()]),
        ]
    };
    let all: Vec<[Vec<String>; 4]> = concepts.iter().map(fields).collect();
    let stats = Stats {
        n: concepts.len() as u64,
        totals: std::array::from_fn(|f| all.iter().map(|d| d[f].len() as u64).sum()),
        tokens: tokens.tokens.clone(),
        df: tokens
            .tokens
            .iter()
            .map(|t| {
                all.iter()
                    .filter(|d| d.iter().any(|f| f.contains(t)))
                    .count() as u64
            })
            .collect(),
    };
    let norms = Norms::new(params, &stats);
    let mut out = Vec::new();
    for (p, d) in all.iter().enumerate() {
        let mut score = 0.0;
        for t in &tokens.tokens {
            let mut x = 0.0;
            for (f, field) in d.iter().enumerate() {
                let tf = field.iter().filter(|x| *x == t).count() as u16;
                if tf > 0 {
                    x += part(params, &norms, f, tf, field.len() as u32);
                }
            }
            score += saturate(params, idf(stats.n, stats.df_of(t)), x);
        }
        if score > 0.0 {
            out.push((p as u32, score));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

fn params(rng: &mut Rng) -> Params {
    let unit = |rng: &mut Rng| rng.below(1001) as f64 / 1000.0;
    Params {
        k1: unit(rng) * 3.0,
        weights: std::array::from_fn(|_| unit(rng) * 4.0),
        b: std::array::from_fn(|_| unit(rng)),
    }
}

/// Each `k` of `ks`: the top-k is the first `k` of `full`, bit for bit.
#[allow(clippy::too_many_arguments)]
fn assert_top_k_is_first_k(
    index: &crate::index::bm25f::Bm25fIndex,
    tokens: &QueryTokens,
    stats: &Stats,
    p: &Params,
    allowed: Option<&[u64]>,
    full: &Ranked,
    ks: &[usize],
    query: &str,
) {
    for &k in ks {
        let top = search_index(index, tokens, stats, p, allowed, Some(k));
        let m = k.min(full.positions.len());
        assert_eq!(top.positions, full.positions[..m], "{query:?} k={k}");
        assert_eq!(top.scores, full.scores[..m], "{query:?} k={k}");
    }
}

#[test]
fn scores_are_the_literal_definition_and_top_k_the_first_k() {
    let mut rng = Rng(0xB25F);
    for round in 0..60 {
        let language = if round % 3 == 0 {
            None
        } else {
            Some(Language::English)
        };
        let analyzer = Analyzer::new(language);
        // Every fourth round long enough that lists span several blocks.
        let n = if round % 4 == 3 {
            crate::index::bm25f::BLOCK * 2 + rng.below(900)
        } else {
            1 + rng.below(120)
        };
        let concepts = random_concepts(n, &mut rng);
        let index = Index::build(&concepts, &analyzer);
        let p = params(&mut rng);
        for _ in 0..8 {
            let q = random_text(&mut rng, 5);
            let tokens = QueryTokens::new(&analyzer, &q, rng.below(2) == 0);
            let stats = Stats::of(&index.bm25f, &tokens.tokens);
            let full = search_index(&index.bm25f, &tokens, &stats, &p, None, None);
            let want = literal(&concepts, &analyzer, &tokens, &p);
            let got: Vec<(u32, f64)> = full
                .positions
                .iter()
                .copied()
                .zip(full.scores.iter().copied())
                .collect();
            assert_eq!(got.len(), want.len(), "{q:?}");
            for ((gp, gs), (wp, ws)) in got.iter().zip(&want) {
                assert_eq!(gp, wp, "{q:?}");
                assert!((gs - ws).abs() <= 1e-12 * ws.abs(), "{q:?}: {gs} vs {ws}");
            }
            let ks = [1, 2, 3, 5, 10, 50];
            assert_top_k_is_first_k(&index.bm25f, &tokens, &stats, &p, None, &full, &ks, &q);
        }
    }
}

#[test]
fn a_token_from_many_words_is_one_entry_per_concept() {
    // Each way the build regroups a field's words by token
    // (index/bm25f/runs.rs): P from fourteen words in a few concepts (sorted),
    // Q from three in one concept of twenty (merged), R from five in every
    // concept (added up per concept), S from one word (copied); a concept
    // holding two of a token's words has one entry, their counts summed.
    let analyzer = Analyzer::new(None);
    let concepts: Vec<Concept> = (0..3000)
        .map(|i| {
            let mut body = format!("r.c{} r.c{} solo{}", i % 4, i % 5, i % 3);
            // In the first 40 concepts: in the first chunk, however many
            // the build makes (index/build.rs: `chunk_fields`).
            if i < 40 && i % 3 == 0 {
                body += &format!(" p.a{}", i / 3);
                if i % 6 == 0 {
                    body += &format!(" p.a{}", i / 3 + 1);
                }
            }
            if i % 20 == 0 {
                body += &format!(" q.b{} q.b{}", i % 3, (i / 20) % 3);
            }
            let src = format!("---\ntitle: t{}\n---\n{body}\n", i % 40);
            read_concept(&format!("c{i:04}"), "c.md", src.as_bytes())
                .concept
                .unwrap()
        })
        .collect();
    let index = Index::build(&concepts, &analyzer);
    let p = Params {
        k1: 1.2,
        weights: [3.0, 2.0, 2.0, 1.0],
        b: [0.75; 4],
    };
    for q in ["p", "q", "r", "solo0", "p q r solo1"] {
        let tokens = QueryTokens::new(&analyzer, q, false);
        let stats = Stats::of(&index.bm25f, &tokens.tokens);
        let full = search_index(&index.bm25f, &tokens, &stats, &p, None, None);
        let want = literal(&concepts, &analyzer, &tokens, &p);
        assert_eq!(full.positions.len(), want.len(), "{q}");
        for ((gp, gs), (wp, ws)) in full.positions.iter().zip(&full.scores).zip(&want) {
            assert_eq!(gp, wp, "{q}");
            assert!((gs - ws).abs() <= 1e-12 * ws.abs(), "{q}: {gs} vs {ws}");
        }
    }
}

#[test]
fn statistics_of_parts_add_up_to_the_whole() {
    let mut rng = Rng(77);
    let analyzer = Analyzer::new(Some(Language::English));
    let concepts = random_concepts(90, &mut rng);
    let (a, b) = concepts.split_at(37);
    let tokens = QueryTokens::new(&analyzer, "data files retention 東京 zzz", false).tokens;
    let (ia, ib) = (Index::build(a, &analyzer), Index::build(b, &analyzer));
    let mut sum = Stats::of(&ia.bm25f, &tokens);
    sum.add(&Stats::of(&ib.bm25f, &tokens));
    let whole = Stats::of(&Index::build(&concepts, &analyzer).bm25f, &tokens);
    assert_eq!(sum, whole);
    // A token asked of one side only keeps that side's frequency.
    let mut one = Stats::of(&ia.bm25f, &tokens[..2]);
    one.add(&Stats::of(&ib.bm25f, &tokens[1..]));
    assert_eq!(one.tokens, tokens);
    assert_eq!(one.df[0], Stats::of(&ia.bm25f, &tokens[..1]).df[0]);
    assert_eq!(one.df[1], whole.df[1]);
}

#[test]
fn stop_words_are_dropped_from_queries_only_when_asked() {
    let analyzer = Analyzer::new(Some(Language::English));
    let q = QueryTokens::new(&analyzer, "How does the VACUUM keep files", true);
    assert_eq!(q.tokens, ["VACUUM", "KEEP", "FILE"]);
    assert_eq!(q.stopped, ["HOW", "DOES", "THE"]);
    let all = QueryTokens::new(&analyzer, "How does the VACUUM keep files", false);
    assert_eq!(all.tokens.len(), 6);
    assert!(QueryTokens::new(&analyzer, "the of a", true).is_empty());
    // Without a language there is no list.
    assert_eq!(
        QueryTokens::new(&Analyzer::new(None), "the", true).tokens,
        ["THE"]
    );
}

#[test]
fn parameters_outside_their_domain_are_named() {
    let ok = Params {
        k1: 1.2,
        weights: [3.0, 2.0, 2.0, 1.0],
        b: [0.5; 4],
    };
    assert!(ok.check().is_ok());
    let bad = [
        Params { k1: -1.0, ..ok },
        Params { k1: f64::NAN, ..ok },
        Params {
            weights: [3.0, f64::INFINITY, 2.0, 1.0],
            ..ok
        },
        Params {
            b: [0.5, 0.5, 1.5, 0.5],
            ..ok
        },
    ];
    for (p, word) in bad.iter().zip(["k1", "k1", "tags weight", "description b"]) {
        let e = p.check().unwrap_err();
        assert!(e.contains(word), "{e}");
    }
}

#[test]
fn a_list_naming_a_concept_out_of_range_scores_it_nothing() {
    // What a tampered cache file could hold: a search neither fails nor
    // returns the position.
    let analyzer = Analyzer::new(None);
    let mut rng = Rng(5);
    let concepts = random_concepts(40, &mut rng);
    let mut index = Index::build(&concepts, &analyzer).bm25f;
    let tokens = QueryTokens::new(&analyzer, "data files", false);
    let stats = Stats::of(&index, &tokens.tokens);
    let p = params(&mut rng);
    let before = search_index(&index, &tokens, &stats, &p, None, None);
    assert!(!before.positions.is_empty());
    // Every concept of DATA's list moved out of range.
    let data = index.token_id("DATA").unwrap() as usize;
    let mut firsts = index.firsts.to_vec();
    firsts[data] = 1_000_000;
    index.firsts = firsts.into();
    for allowed in [None, Some(&[u64::MAX][..])] {
        let after = search_index(&index, &tokens, &stats, &p, allowed, None);
        assert!(after
            .positions
            .iter()
            .all(|&d| (d as usize) < concepts.len()));
    }
}

#[test]
fn search_many_is_search_of_each_query() {
    use crate::bundle::Bundle;
    use crate::progress::Progress;
    let mut rng = Rng(0xBA7C4);
    let d = crate::testing::scratch_dir("bm25f", "many");
    // Long enough that lists span several blocks.
    let n = crate::index::bm25f::BLOCK * 2 + 300;
    for i in 0..n {
        let src = format!(
            "---\ntitle: '{}'\ntags: [k{}, '{}']\ndescription: '{}'\n---\n{}\n",
            random_text(&mut rng, 3),
            rng.below(3),
            random_text(&mut rng, 1),
            random_text(&mut rng, 2),
            random_text(&mut rng, 20),
        );
        std::fs::write(d.join(format!("c{i:04}.md")), src).unwrap();
    }
    let language = Some(Language::English);
    let (b, _) = Bundle::load_with(&d, None, language, &Progress::default()).unwrap();
    assert_eq!(b.len(), n);
    let analyzer = Analyzer::new(language);
    let queries: Vec<QueryTokens> = (0..30)
        .map(|_| {
            let q = random_text(&mut rng, 5);
            QueryTokens::new(&analyzer, &q, rng.below(2) == 0)
        })
        .chain([QueryTokens::new(&analyzer, "", false)])
        .collect();
    // Each query with its own statistics, and with a catalog's (doubled).
    let stats: Vec<Stats> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let mut s = Stats::of(&b.index.bm25f, &q.tokens);
            if i % 2 == 1 {
                s.add(&s.clone());
            }
            s
        })
        .collect();
    let batch: Vec<(&QueryTokens, &Stats)> = queries.iter().zip(&stats).collect();
    let p = params(&mut rng);
    let mut found = 0;
    for tag in [None, Some("k1"), Some("K2"), Some(" "), Some("absent")] {
        for limit in [None, Some(0), Some(1), Some(10)] {
            let many = search_many(&b, &batch, &p, tag, limit);
            let one: Vec<Ranked> = batch
                .iter()
                .map(|(q, s)| search(&b, q, s, &p, tag, limit))
                .collect();
            // Bit for bit: the scores compared as bits, not as floats.
            let bits = |r: &[Ranked]| -> Vec<(Vec<u32>, Vec<u64>)> {
                r.iter()
                    .map(|x| {
                        (
                            x.positions.clone(),
                            x.scores.iter().map(|s| s.to_bits()).collect(),
                        )
                    })
                    .collect()
            };
            assert_eq!(bits(&many), bits(&one), "tag {tag:?} limit {limit:?}");
            found += many.iter().filter(|r| !r.positions.is_empty()).count();
        }
    }
    assert!(found > 100, "the queries found too little: {found}");
    assert!(search_many(&b, &[], &p, None, None).is_empty());
    let _ = std::fs::remove_dir_all(&d);
}

/// A word of a Zipf-like vocabulary of `v` words: word `i` about `1/(i+1)`
/// as often as the first.
fn zipf_word(rng: &mut Rng, v: usize) -> String {
    let u = rng.below(1 << 20) as f64 / f64::from(1u32 << 20);
    format!("w{}", ((v as f64).powf(u) as usize - 1).min(v - 1))
}

fn zipf_text(rng: &mut Rng, v: usize, min: usize, max: usize) -> String {
    (0..min + rng.below(max - min + 1))
        .map(|_| zipf_word(rng, v))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Lists whose concepts lie far apart (index/bm25f/list.rs) score and rank
/// as the definition says: tokens from a large vocabulary, each in a few
/// concepts spread over more than 65,536.
#[test]
fn far_lists_score_as_the_definition_says() {
    let mut rng = Rng(0xFA4);
    let analyzer = Analyzer::new(None);
    let n = 70_000;
    let concepts: Vec<Concept> = (0..n)
        .map(|i| {
            let src = format!(
                "---\ntitle: '{}'\n---\n{}\n",
                zipf_text(&mut rng, 3_000, 0, 1),
                zipf_text(&mut rng, 3_000, 1, 6)
            );
            read_concept(&format!("c{i:05}"), "c.md", src.as_bytes())
                .concept
                .unwrap()
        })
        .collect();
    let index = Index::build(&concepts, &analyzer).bm25f;
    assert!(index.far_tokens.len() > 100, "{}", index.far_tokens.len());
    let p = Params {
        k1: 1.2,
        weights: [3.0, 2.0, 2.0, 1.0],
        b: [0.75; 4],
    };
    for _ in 0..3 {
        let q = zipf_text(&mut rng, 3_000, 3, 4);
        let tokens = QueryTokens::new(&analyzer, &q, false);
        let stats = Stats::of(&index, &tokens.tokens);
        let full = search_index(&index, &tokens, &stats, &p, None, None);
        let want = literal(&concepts, &analyzer, &tokens, &p);
        assert_eq!(full.positions.len(), want.len(), "{q}");
        for ((gp, gs), (wp, ws)) in full.positions.iter().zip(&full.scores).zip(&want) {
            assert_eq!(gp, wp, "{q}");
            assert!((gs - ws).abs() <= 1e-12 * ws.abs(), "{q}: {gs} vs {ws}");
        }
        assert_top_k_is_first_k(&index, &tokens, &stats, &p, None, &full, &[1, 10, 100], &q);
    }
}

/// Pruning at scale: several windows of concepts, lists of many blocks,
/// tokens from in nearly every concept to in a few, so each path of the
/// top-k (one essential token, several, lists read in full or looked up
/// per concept, windows passed over whole) is taken; the first k of the
/// full ranking, bit for bit, with and without a filter.
#[test]
fn top_k_is_the_first_k_of_the_full_ranking_at_scale() {
    let mut rng = Rng(0x70F_C0DE);
    let analyzer = Analyzer::new(None);
    for round in 0..3 {
        let v = [300, 2_000, 40][round];
        let n = 9_000 + rng.below(4_000);
        let concepts: Vec<Concept> = (0..n)
            .map(|i| {
                let src = format!(
                    "---\ntitle: '{}'\ndescription: '{}'\n---\n{}\n",
                    zipf_text(&mut rng, v, 1, 4),
                    zipf_text(&mut rng, v, 0, 3 * (i % 2)),
                    zipf_text(&mut rng, v, 3, 80),
                );
                read_concept(&format!("c{i:05}"), "c.md", src.as_bytes())
                    .concept
                    .unwrap()
            })
            .collect();
        let index = Index::build(&concepts, &analyzer);
        let filter: Vec<u64> = (0..n.div_ceil(64))
            .map(|_| rng.bits() | rng.bits())
            .collect();
        for q in 0..40 {
            let p = if q % 2 == 0 {
                Params {
                    k1: 1.2,
                    weights: [3.0, 2.0, 2.0, 1.0],
                    b: [0.75; 4],
                }
            } else {
                params(&mut rng)
            };
            let text = zipf_text(&mut rng, v, 1, 6);
            let tokens = QueryTokens::new(&analyzer, &text, false);
            let stats = Stats::of(&index.bm25f, &tokens.tokens);
            for allowed in [None, Some(&filter[..])] {
                let full = search_index(&index.bm25f, &tokens, &stats, &p, allowed, None);
                let ks = [1, 3, 10, 40];
                assert_top_k_is_first_k(
                    &index.bm25f,
                    &tokens,
                    &stats,
                    &p,
                    allowed,
                    &full,
                    &ks,
                    &text,
                );
            }
        }
    }
}

/// What a damaged cache file could hold, lists out of order and naming
/// concepts out of range (lists are not read at open, docs/spec.md §9.3):
/// a top-k neither fails nor returns a position out of range.
#[test]
fn a_top_k_over_damaged_lists_neither_fails_nor_leaves_the_range() {
    let mut rng = Rng(0xDA3A);
    let analyzer = Analyzer::new(None);
    let n = 9_000;
    let concepts: Vec<Concept> = (0..n)
        .map(|i| {
            let src = format!(
                "---\ntitle: '{}'\n---\n{}\n",
                zipf_text(&mut rng, 200, 1, 3),
                zipf_text(&mut rng, 200, 3, 40)
            );
            read_concept(&format!("c{i:05}"), "c.md", src.as_bytes())
                .concept
                .unwrap()
        })
        .collect();
    let mut index = Index::build(&concepts, &analyzer).bm25f;
    // Offsets out of order, lists starting anywhere.
    let mut near = index.near.to_vec();
    for _ in 0..near.len() / 50 {
        let at = rng.below(near.len());
        near[at] = rng.below(1 << 16) as u16;
    }
    index.near = near.into();
    let mut firsts = index.firsts.to_vec();
    for _ in 0..firsts.len() / 20 {
        let at = rng.below(firsts.len());
        firsts[at] = match rng.below(3) {
            0 => rng.below(n + 10_000) as u32,
            1 => u32::MAX - rng.below(3) as u32,
            _ => 0,
        };
    }
    index.firsts = firsts.into();
    let p = params(&mut rng);
    for _ in 0..60 {
        let text = zipf_text(&mut rng, 200, 1, 5);
        let tokens = QueryTokens::new(&analyzer, &text, false);
        let stats = Stats::of(&index, &tokens.tokens);
        for k in [1, 10, 100] {
            let top = search_index(&index, &tokens, &stats, &p, None, Some(k));
            assert!(top.positions.iter().all(|&d| (d as usize) < n), "{text:?}");
        }
    }
}

#[test]
fn lengths_read_as_saved_whatever_their_size() {
    // Around the two-byte copy's limit, and far past it.
    let mut rng = Rng(0x1E57);
    let near = [0u32, 1, 255, 65_534, 65_535, 65_536, 1 << 20, u32::MAX];
    let n = 50;
    let saved: Vec<u32> = (0..4 * n)
        .map(|_| match rng.below(3) {
            0 => near[rng.below(near.len())],
            _ => rng.below(70_000) as u32,
        })
        .collect();
    let index = Bm25fIndex {
        lengths: saved.clone().into(),
        ..Bm25fIndex::default()
    };
    let lengths = Lengths::of(&index);
    for f in 0..4 {
        for d in 0..n {
            assert_eq!(lengths.get(f, d as u32), Some(saved[f * n + d]), "{f} {d}");
        }
        assert_eq!(lengths.get(f, n as u32), None);
    }
}

/// A sum past `u64::MAX` is refused, leaving the sum so far as it was; one
/// that fits is what [`Stats::add`] gives.
#[test]
fn a_sum_that_passes_u64_is_refused_not_wrapped() {
    let of = |n: u64, total: u64, df: u64| Stats {
        n,
        totals: [total; 4],
        tokens: vec!["A".into()],
        df: vec![df],
    };
    for bad in [of(u64::MAX, 1, 1), of(1, u64::MAX, 1), of(1, 1, u64::MAX)] {
        let mut sum = of(2, 2, 2);
        assert!(!sum.checked_add(&bad));
        assert_eq!((sum.n, sum.totals, sum.df.clone()), (2, [2; 4], vec![2]));
    }
    let mut sum = of(2, 2, 2);
    let mut plain = of(2, 2, 2);
    assert!(sum.checked_add(&of(u64::MAX - 2, 3, 4)));
    plain.add(&of(u64::MAX - 2, 3, 4));
    assert_eq!(
        (sum.n, sum.totals, sum.df),
        (plain.n, plain.totals, plain.df)
    );
}

#[test]
fn an_explanation_lists_the_tokens_that_add_to_the_score() {
    let mut rng = Rng(0xE9A1);
    let analyzer = Analyzer::new(None);
    for round in 0..30 {
        let concepts = random_concepts(1 + rng.below(80), &mut rng);
        let index = Index::build(&concepts, &analyzer);
        let mut p = params(&mut rng);
        // Now and then a field weighted 0: a token found only there adds
        // nothing and is left out (docs/spec.md §12.5).
        if round % 3 == 0 {
            p.weights[rng.below(4)] = 0.0;
        }
        // Or weighted so little that a token found only there has a score
        // that rounds to 0: it adds nothing either.
        if round % 3 == 1 {
            let f = rng.below(4);
            p.weights[f] = 5e-324;
            p.b[f] = 0.0;
        }
        for _ in 0..6 {
            let q = random_text(&mut rng, 6);
            let tokens = QueryTokens::new(&analyzer, &q, false);
            let stats = Stats::of(&index.bm25f, &tokens.tokens);
            let full = search_index(&index.bm25f, &tokens, &stats, &p, None, None);
            for position in 0..concepts.len() as u32 {
                let parts = explain(&index.bm25f, &tokens, &stats, &p, position);
                let order: Vec<usize> = parts
                    .iter()
                    .map(|t| tokens.tokens.iter().position(|x| *x == t.token).unwrap())
                    .collect();
                assert!(order.windows(2).all(|w| w[0] < w[1]), "{q:?}: query order");
                assert!(parts.iter().all(|t| t.score > 0.0 && t.weighted_tf > 0.0));
                let sum = parts.iter().fold(0.0, |a, t| a + t.score);
                let want = full
                    .positions
                    .iter()
                    .position(|&x| x == position)
                    .map_or(0.0, |i| full.scores[i]);
                assert_eq!(sum.to_bits(), want.to_bits(), "{q:?} at {position}");
            }
        }
    }
}
