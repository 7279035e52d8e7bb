//! The scorer (docs/spec.md §3): query → (position, score) in result order, and the
//! excerpt. Exact: every concept with a positive weighted term count, ordered
//! by score descending then id (concepts are stored in id order, so by
//! position).

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use memchr::memmem;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bundle::Bundle;
use crate::concept::source::TextError;
use crate::concept::Concept;
use crate::index::FIELDS;
use crate::text::{fold, fold_into, is_ws, split_ws, trim};

/// A query's terms (docs/spec.md §3.1), split and folded once per search and
/// used by every step that needs them: the scorer, the excerpts, `explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTerms {
    /// The distinct folded terms with their multiplicity, in order of first
    /// appearance: §3.1 keeps duplicates, and equal folded terms contribute
    /// equally, so they are scored once and multiplied.
    distinct: Vec<(String, u32)>,
    /// Each term as written, in query order, with the index of its folded
    /// form in `distinct`.
    written: Vec<(String, usize)>,
    /// Finds whether a line holds any term, for the excerpts; built once.
    lines: LineMatcher,
}

/// One scan of a line finds whether it holds any of a query's terms (an
/// Aho-Corasick automaton), built on a query's first excerpt and kept with
/// it: a search per term made each hit's excerpt cost its lines times the
/// query's terms, quadratic on a long query that matches many concepts
/// (docs/spec.md §3.1). `None`: too large to build; the terms are then
/// searched one by one.
#[derive(Debug, Clone, Default)]
struct LineMatcher(OnceLock<Option<AhoCorasick>>);

/// Derived from the terms, which the query compares.
impl PartialEq for LineMatcher {
    fn eq(&self, _: &LineMatcher) -> bool {
        true
    }
}

impl Eq for LineMatcher {}

impl QueryTerms {
    pub fn new(text: &str) -> QueryTerms {
        let mut distinct: Vec<(String, u32)> = Vec::new();
        // Each distinct term's index, looked up by hash: a scan of `distinct`
        // per term made a query of n distinct words cost n² comparisons.
        let mut index: FxHashMap<String, usize> = FxHashMap::default();
        let mut written = Vec::new();
        for t in split_ws(text) {
            let f = fold(t);
            let at = match index.get(&f) {
                Some(&i) => {
                    distinct[i].1 += 1;
                    i
                }
                None => {
                    index.insert(f.clone(), distinct.len());
                    distinct.push((f, 1));
                    distinct.len() - 1
                }
            };
            written.push((t.to_string(), at));
        }
        QueryTerms {
            distinct,
            written,
            lines: LineMatcher::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    /// The distinct folded terms with their multiplicity.
    pub fn distinct(&self) -> &[(String, u32)] {
        &self.distinct
    }

    /// Each term as written and its folded form, in query order.
    pub fn written(&self) -> impl Iterator<Item = (&str, &str)> {
        self.written
            .iter()
            .map(|(t, i)| (t.as_str(), self.distinct[*i].0.as_str()))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ranked {
    pub positions: Vec<u32>,
    pub scores: Vec<u32>,
}

/// Score every concept and return the first `limit` of the SPEC order (all
/// when `limit` is `None`).
///
/// For each (term, field) the concepts holding a matching word are marked in
/// a bitset — dense words OR in their own bitset, sparse ones set a bit per
/// posting — so a concept holding several matching words counts once. The
/// weighted bitsets are summed into a bit-sliced counter (slice `i` holds bit
/// `i` of every concept's score), 64 concepts per machine word. Ranking then
/// reads score levels from the highest down, each level's concepts in
/// position (= id) order. No per-concept work happens unless a concept is
/// returned.
pub fn search(b: &Bundle, terms: &QueryTerms, tag: Option<&str>, limit: Option<usize>) -> Ranked {
    if terms.is_empty() || b.is_empty() || limit == Some(0) {
        return Ranked::default();
    }
    match tagged(b, tag) {
        Some(allowed) => search_among(b, terms, allowed.as_deref(), limit),
        None => Ranked::default(),
    }
}

/// [`search`] of each of `queries`, in parallel (docs/spec.md §3.7): the
/// same results, in the same order as `queries`, as one call per query. The
/// tag filter is looked up once for all of them.
pub fn search_many(
    b: &Bundle,
    queries: &[&QueryTerms],
    tag: Option<&str>,
    limit: Option<usize>,
) -> Vec<Ranked> {
    if b.is_empty() || limit == Some(0) {
        return vec![Ranked::default(); queries.len()];
    }
    let Some(allowed) = tagged(b, tag) else {
        return vec![Ranked::default(); queries.len()];
    };
    queries
        .par_iter()
        .map(|terms| {
            if terms.is_empty() {
                Ranked::default()
            } else {
                search_among(b, terms, allowed.as_deref(), limit)
            }
        })
        .collect()
}

/// [`search`] among the positions set in `allowed` (all without it), for
/// terms that are not empty, in a bundle that is not, with a limit that is
/// not 0.
fn search_among(
    b: &Bundle,
    terms: &QueryTerms,
    allowed: Option<&[u64]>,
    limit: Option<usize>,
) -> Ranked {
    let nw = b.len().div_ceil(64);
    // Matching words per (term, field), and the highest possible score.
    let mut parts: Vec<(usize, u32, Vec<u32>)> = Vec::new();
    let mut max_score = 0u32;
    for (term, count) in terms.distinct() {
        for (field, weight) in FIELDS {
            let mut words = Vec::new();
            b.index.fields[field as usize].words_containing(term.as_bytes(), &mut words);
            if !words.is_empty() {
                let add = weight.saturating_mul(*count);
                max_score = max_score.saturating_add(add);
                parts.push((field as usize, add, words));
            }
        }
    }
    if parts.is_empty() {
        return Ranked::default();
    }
    let mut acc = BitSlicedCounter::new(nw, max_score);
    let mut scratch = vec![0u64; nw];
    for (field, add, words) in &parts {
        let fi = &b.index.fields[*field];
        scratch.fill(0);
        for &w in words {
            fi.mark(w, &mut scratch);
        }
        if let Some(mask) = allowed {
            scratch.iter_mut().zip(mask).for_each(|(x, m)| *x &= m);
        }
        acc.add(&scratch, *add);
    }
    acc.rank(max_score, limit.unwrap_or(usize::MAX))
}

/// The concepts a `tag` filter keeps (docs/spec.md §3.6), as a bitset by
/// position: `Some(None)` without a filter (a blank tag is none), `None`
/// when no concept carries the tag.
pub fn tagged(b: &Bundle, tag: Option<&str>) -> Option<Option<Vec<u64>>> {
    match tag {
        Some(t) if !trim(t).is_empty() => {
            let list = b.index.tags.get(&fold(t))?;
            let mut bits = vec![0u64; b.len().div_ceil(64)];
            for &p in list.iter() {
                bits[p as usize >> 6] |= 1 << (p & 63);
            }
            Some(Some(bits))
        }
        _ => Some(None),
    }
}

/// A bit-sliced counter over `nw * 64` concepts: block `x`, slice `i` holds
/// bit `i` of the scores of concepts `64x .. 64x + 63`.
struct BitSlicedCounter {
    slices: usize,
    bits: Vec<u64>,
}

impl BitSlicedCounter {
    fn new(nw: usize, max_score: u32) -> BitSlicedCounter {
        let slices = (32 - max_score.leading_zeros()) as usize;
        BitSlicedCounter {
            slices,
            bits: vec![0; nw * slices],
        }
    }

    /// Add `weight` to the score of every concept marked in `set`.
    fn add(&mut self, set: &[u64], weight: u32) {
        let ns = self.slices;
        for (x, &m) in set.iter().enumerate() {
            if m == 0 {
                continue;
            }
            let block = &mut self.bits[x * ns..(x + 1) * ns];
            let mut w = weight;
            while w != 0 {
                let j = w.trailing_zeros() as usize;
                w &= w - 1;
                // Ripple-carry add of `m` at bit `j`; the sum never exceeds
                // `max_score`, so the carry dies before the last slice.
                let mut carry = m;
                let mut i = j;
                while carry != 0 && i < ns {
                    let c = block[i] & carry;
                    block[i] ^= carry;
                    carry = c;
                    i += 1;
                }
            }
        }
    }

    fn score_of(&self, x: usize, bit: u32) -> u32 {
        let block = &self.bits[x * self.slices..(x + 1) * self.slices];
        block
            .iter()
            .enumerate()
            .fold(0, |s, (i, w)| s | (((w >> bit) & 1) as u32) << i)
    }

    /// The first `k` concepts by (score desc, position asc).
    fn rank(&self, max_score: u32, k: usize) -> Ranked {
        let ns = self.slices;
        let nw = self.bits.len() / ns.max(1);
        let mut positions = Vec::new();
        let mut scores = Vec::new();
        if max_score <= 256 {
            // Level by level from the top: a level costs one pass over the
            // blocks, and a top-k query usually stops after a few levels.
            for level in (1..=max_score).rev() {
                for x in 0..nw {
                    let block = &self.bits[x * ns..(x + 1) * ns];
                    let mut m = !0u64;
                    for (i, &w) in block.iter().enumerate() {
                        m &= if level >> i & 1 == 1 { w } else { !w };
                        if m == 0 {
                            break;
                        }
                    }
                    while m != 0 {
                        if positions.len() == k {
                            return Ranked { positions, scores };
                        }
                        positions.push((x * 64) as u32 + m.trailing_zeros());
                        scores.push(level);
                        m &= m - 1;
                    }
                }
            }
            return Ranked { positions, scores };
        }
        // Many possible levels: decode every scored concept, then sort.
        let mut hits: Vec<(u32, u32)> = Vec::new();
        for x in 0..nw {
            let mut any = self.bits[x * ns..(x + 1) * ns].iter().fold(0, |a, w| a | w);
            while any != 0 {
                let bit = any.trailing_zeros();
                any &= any - 1;
                hits.push(((x * 64) as u32 + bit, self.score_of(x, bit)));
            }
        }
        // `hits` is in position order, so a stable sort by score keeps ids ordered.
        hits.sort_by_key(|&(_, s)| std::cmp::Reverse(s));
        hits.truncate(k);
        Ranked {
            positions: hits.iter().map(|h| h.0).collect(),
            scores: hits.iter().map(|h| h.1).collect(),
        }
    }
}

/// Which fields each query term matched (docs/spec.md §3.3), for `explain`:
/// per term as written that matched a field, in query order (duplicates
/// kept), `[title, tags_desc, body]`. A term matching no field adds 0 and
/// is left out (§5.8), so an explanation grows with what the concept
/// holds, not with the query's length.
pub fn explain(c: &Concept, terms: &QueryTerms) -> Result<Vec<(String, [bool; 3])>, TextError> {
    let title = fold(c.title.as_deref().unwrap_or(""));
    let mut tags_desc = fold(&c.tags.join(" "));
    tags_desc.push(' ');
    tags_desc.push_str(&fold(c.description.as_deref().unwrap_or("")));
    let body = fold(&c.body()?);
    Ok(terms
        .written()
        .filter_map(|(t, term)| {
            let f = memmem::Finder::new(term.as_bytes());
            let hit = |h: &str| f.find(h.as_bytes()).is_some();
            let fields = [hit(&title), hit(&tags_desc), hit(&body)];
            fields.contains(&true).then(|| (t.to_string(), fields))
        })
        .collect())
}

/// docs/spec.md §5.8 `pin_exact_title` for one concept: its trimmed title folds to
/// `title_key` (already folded and white-space-collapsed by the caller), or
/// the last segment of its id equals `id_key` exactly.
pub fn is_pinned(c: &Concept, title_key: &str, id_key: &str) -> bool {
    let last = c.id.rsplit('/').next().unwrap_or(&c.id);
    last == id_key
        || c.title
            .as_deref()
            .is_some_and(|t| fold(trim(t)) == title_key)
}

/// docs/spec.md §3.5: the first trimmed, non-empty body line that contains any term.
pub fn excerpt(body: &str, terms: &QueryTerms) -> String {
    if terms.is_empty() {
        return String::new(); // no term can match a line: do not fold them all
    }
    let automaton = terms
        .lines
        .0
        .get_or_init(|| AhoCorasick::new(terms.distinct().iter().map(|(t, _)| t)).ok());
    let finders: Vec<memmem::Finder> = match automaton {
        Some(_) => Vec::new(),
        None => terms
            .distinct()
            .iter()
            .map(|(t, _)| memmem::Finder::new(t.as_bytes()))
            .collect(),
    };
    let mut buf = String::new();
    for line in body.split('\n') {
        let line = line.trim_matches(is_ws);
        if line.is_empty() {
            continue;
        }
        buf.clear();
        fold_into(line, &mut buf);
        let holds = match automaton {
            Some(a) => a.is_match(buf.as_bytes()),
            None => finders.iter().any(|f| f.find(buf.as_bytes()).is_some()),
        };
        if holds {
            return line.to_string();
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::concept::{read_concept, AUTHORITY_ABSENT, AUTHORITY_UNKNOWN};

    fn concept(id: &str, src: &str) -> Concept {
        read_concept(id, &format!("{id}.md"), src.as_bytes())
            .concept
            .unwrap()
    }

    #[test]
    fn explain_names_the_fields_of_each_term() {
        let c = concept(
            "a",
            "---\ntitle: Straße plan\ntags: [ops]\ndescription: Night shift\n---\nThe PLAN body\n",
        );
        let got = explain(&c, &QueryTerms::new("plan STRASSE ops  shift zzz plan")).unwrap();
        let fields: Vec<(&str, [bool; 3])> = got.iter().map(|(t, f)| (t.as_str(), *f)).collect();
        assert_eq!(
            fields,
            vec![
                ("plan", [true, false, true]),
                // STRASSE and zzz match no field: ß folds to itself, never to SS.
                ("ops", [false, true, false]),
                ("shift", [false, true, false]),
                ("plan", [true, false, true]),
            ]
        );
    }

    #[test]
    fn query_terms_keep_each_written_term_and_count_equal_folds_once() {
        let t = QueryTerms::new(" Plan\u{3000}plan ßx\tPLAN ");
        assert_eq!(
            t.distinct(),
            [("PLAN".to_string(), 3), ("ßX".to_string(), 1)]
        );
        let written: Vec<(&str, &str)> = t.written().collect();
        assert_eq!(
            written,
            [
                ("Plan", "PLAN"),
                ("plan", "PLAN"),
                ("ßx", "ßX"),
                ("PLAN", "PLAN")
            ]
        );
        assert!(QueryTerms::new(" \u{85}\u{a0} ").is_empty());
    }

    #[test]
    fn pinned_by_trimmed_folded_title_or_last_id_segment() {
        let c = concept(
            "docs/revenue-policy",
            "---\ntitle: '  Revenue  Policy '\n---\n",
        );
        assert!(is_pinned(&c, &fold("REVENUE  POLICY"), "x"));
        assert!(!is_pinned(&c, &fold("revenue policy"), "x"));
        assert!(is_pinned(&c, "", "revenue-policy"));
        assert!(!is_pinned(&c, "", "docs/revenue-policy"));
    }

    #[test]
    fn search_many_is_search_of_each_query() {
        use crate::testing::{scratch_dir, Rng};
        const WORDS: [&str; 10] = [
            "plan", "Plan", "order", "ßx", "漢字", "re", "x.y", "shift", "a", "zz",
        ];
        let mut rng = Rng(0x5EA2C4);
        let text = |rng: &mut Rng, max: usize| -> String {
            (0..rng.below(max + 1))
                .map(|_| WORDS[rng.below(WORDS.len())])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let d = scratch_dir("score", "many");
        for i in 0..150 {
            let src = format!(
                "---\ntitle: '{}'\ntags: [k{}, '{}']\ndescription: '{}'\n---\n{}\n",
                text(&mut rng, 3),
                rng.below(3),
                text(&mut rng, 1),
                text(&mut rng, 2),
                text(&mut rng, 12),
            );
            std::fs::write(d.join(format!("c{i:03}.md")), src).unwrap();
        }
        let b = Bundle::load(&d).unwrap();
        assert_eq!(b.len(), 150);
        let queries: Vec<QueryTerms> = (0..40)
            .map(|_| QueryTerms::new(&text(&mut rng, 4)))
            .chain([QueryTerms::new(""), QueryTerms::new(" \t ")])
            .collect();
        let refs: Vec<&QueryTerms> = queries.iter().collect();
        let mut nonempty = 0;
        for tag in [None, Some("k1"), Some("K2"), Some("  "), Some("absent")] {
            for limit in [None, Some(0), Some(1), Some(7)] {
                let many = search_many(&b, &refs, tag, limit);
                let one: Vec<Ranked> = queries.iter().map(|q| search(&b, q, tag, limit)).collect();
                assert_eq!(many, one, "tag {tag:?} limit {limit:?}");
                nonempty += many.iter().filter(|r| !r.positions.is_empty()).count();
            }
        }
        assert!(nonempty > 100, "the queries found too little: {nonempty}");
        assert!(search_many(&b, &[], None, None).is_empty());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn authority_ranks() {
        let rank = |fm: &str| concept("a", &format!("---\n{fm}\n---\n")).authority_rank();
        assert_eq!(rank("authority: canonical"), 0);
        assert_eq!(rank("authority: historical"), 5);
        assert_eq!(rank("authority: Canonical"), AUTHORITY_UNKNOWN);
        assert_eq!(rank("title: x"), AUTHORITY_ABSENT);
    }
}
