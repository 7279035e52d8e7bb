//! The top-k by BM25F score with dynamic pruning (MaxScore), exactly the
//! first k of the full ranking (docs/spec.md §12.3).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{part, saturate, terms, Norms, Params, QueryTokens, Stats, Term};
use crate::bundle::Bundle;
use crate::index::bm25f::Bm25fIndex;
use crate::score::tagged;

/// The positions of a search in order, with their scores.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranked {
    pub positions: Vec<u32>,
    pub scores: Vec<f64>,
}

/// One scored concept; the greatest is the best (score, then the smaller
/// position).
#[derive(Debug, Clone, Copy)]
struct Hit {
    score: f64,
    position: u32,
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Hit {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.position.cmp(&self.position))
    }
}

/// A cursor over one token's four field lists.
struct Cursor {
    at: [usize; 4],
}

impl Cursor {
    /// The smallest position at or after the cursor in any field.
    fn doc(&self, t: &Term<'_>) -> u32 {
        (0..4)
            .filter_map(|f| t.lists[f].0.get(self.at[f]).copied())
            .min()
            .unwrap_or(u32::MAX)
    }

    /// Move every field's cursor to the first position `>= d` (galloping).
    fn seek(&mut self, t: &Term<'_>, d: u32) {
        for f in 0..4 {
            let docs = t.lists[f].0;
            let mut i = self.at[f];
            if docs.get(i).is_some_and(|&x| x < d) {
                let mut step = 1;
                while i + step < docs.len() && docs[i + step] < d {
                    i += step;
                    step *= 2;
                }
                let end = (i + step + 1).min(docs.len());
                i += docs[i..end].partition_point(|&x| x < d);
            }
            self.at[f] = i;
        }
    }

    /// The token's weighted frequency in the concept at `d` (the cursor is
    /// at or before it in each field, and moves past it).
    fn weighted_tf(
        &mut self,
        t: &Term<'_>,
        d: u32,
        index: &Bm25fIndex,
        params: &Params,
        norms: &Norms,
    ) -> f64 {
        let mut x = 0.0;
        for f in 0..4 {
            let (docs, tfs) = t.lists[f];
            if docs.get(self.at[f]) == Some(&d) {
                x += part(
                    params,
                    norms,
                    f,
                    tfs[self.at[f]],
                    index.fields[f].lengths[d as usize],
                );
                self.at[f] += 1;
            }
        }
        x
    }
}

/// Relative slack of the pruning test: a concept is skipped only when its
/// bound is below the threshold by more than the rounding of sums taken in
/// another order could account for.
const SLACK: f64 = 1e-9;

/// The first `limit` concepts (all with `None`) by BM25F score (docs/spec.md
/// §12.3), with `stats` (the bundle's own or a catalog's) and `params`;
/// `tag` keeps concepts carrying that tag. Scores of zero are left out.
///
/// Document at a time with MaxScore: tokens sorted by their bound, the
/// cheapest whose bounds together cannot reach the current k-th score only
/// looked at for concepts the others find. Every concept kept is scored
/// with all its tokens in query order, so scores do not depend on pruning.
pub fn search(
    b: &Bundle,
    tokens: &QueryTokens,
    stats: &Stats,
    params: &Params,
    tag: Option<&str>,
    limit: Option<usize>,
) -> Ranked {
    match tagged(b, tag) {
        Some(allowed) => search_index(
            &b.index.bm25f,
            tokens,
            stats,
            params,
            allowed.as_deref(),
            limit,
        ),
        None => Ranked::default(),
    }
}

/// [`search`] over an index, among the positions set in `allowed` (all
/// without it).
pub fn search_index(
    index: &Bm25fIndex,
    tokens: &QueryTokens,
    stats: &Stats,
    params: &Params,
    allowed: Option<&[u64]>,
    limit: Option<usize>,
) -> Ranked {
    if tokens.is_empty() || index.is_empty() || limit == Some(0) {
        return Ranked::default();
    }
    let norms = Norms::new(params, stats);
    let terms = terms(index, tokens, stats, params, &norms);
    let k = limit.unwrap_or(usize::MAX);
    // Tokens by bound, largest first; `rest[i]` is the sum of the bounds of
    // `by_bound[i..]` (the tokens that may be non-essential).
    let mut by_bound: Vec<usize> = (0..terms.len()).collect();
    by_bound.sort_by(|&a, &b| terms[b].bound.total_cmp(&terms[a].bound).then(a.cmp(&b)));
    let mut rest = vec![0.0; terms.len() + 1];
    for i in (0..terms.len()).rev() {
        rest[i] = rest[i + 1] + terms[by_bound[i]].bound;
    }
    let mut cursors: Vec<Cursor> = terms.iter().map(|_| Cursor { at: [0; 4] }).collect();
    let mut heap: BinaryHeap<std::cmp::Reverse<Hit>> = BinaryHeap::new();
    let mut all: Vec<Hit> = Vec::new();
    let mut parts = vec![0.0f64; terms.len()];
    // Tokens `by_bound[..essential]` drive the candidates.
    let mut essential = terms.len();
    loop {
        let threshold = if heap.len() == k {
            heap.peek().map_or(f64::NEG_INFINITY, |h| h.0.score)
        } else {
            f64::NEG_INFINITY
        };
        while essential > 0 && rest[essential - 1] * (1.0 + SLACK) < threshold {
            essential -= 1;
        }
        if essential == 0 {
            break;
        }
        let d = by_bound[..essential]
            .iter()
            .map(|&t| cursors[t].doc(&terms[t]))
            .min()
            .unwrap_or(u32::MAX);
        if d == u32::MAX {
            break;
        }
        if let Some(bits) = allowed {
            if bits[d as usize >> 6] >> (d & 63) & 1 == 0 {
                for &t in &by_bound[..essential] {
                    cursors[t].seek(&terms[t], d + 1);
                }
                continue;
            }
        }
        parts.fill(0.0);
        let mut partial = 0.0;
        for &t in &by_bound[..essential] {
            let x = cursors[t].weighted_tf(&terms[t], d, index, params, &norms);
            parts[t] = saturate(params, terms[t].idf, x);
            partial += parts[t];
        }
        let mut skipped = false;
        for i in essential..terms.len() {
            if (partial + rest[i]) * (1.0 + SLACK) < threshold {
                skipped = true;
                break;
            }
            let t = by_bound[i];
            cursors[t].seek(&terms[t], d);
            let x = cursors[t].weighted_tf(&terms[t], d, index, params, &norms);
            parts[t] = saturate(params, terms[t].idf, x);
            partial += parts[t];
        }
        if skipped {
            continue;
        }
        // The score in query order, whatever order the tokens were read in.
        let score = parts.iter().fold(0.0, |a, &p| a + p);
        if score <= 0.0 {
            continue;
        }
        let hit = Hit { score, position: d };
        if limit.is_none() {
            all.push(hit);
        } else if heap.len() < k {
            heap.push(std::cmp::Reverse(hit));
        } else if heap.peek().is_some_and(|min| hit > min.0) {
            heap.pop();
            heap.push(std::cmp::Reverse(hit));
        }
    }
    let mut hits: Vec<Hit> = if limit.is_none() {
        all
    } else {
        heap.into_iter().map(|h| h.0).collect()
    };
    hits.sort_unstable_by(|a, b| b.cmp(a));
    Ranked {
        positions: hits.iter().map(|h| h.position).collect(),
        scores: hits.iter().map(|h| h.score).collect(),
    }
}
