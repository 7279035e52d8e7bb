//! The BM25F scorer (docs/spec.md §12): a query's tokens, the statistics
//! they are scored with (a bundle's own, or summed over a catalog's
//! sources), the top-k by score with dynamic pruning (MaxScore), exactly the
//! first k of the full ranking, `explain` and the excerpt.
//!
//! Every float is computed in one fixed order, spelled out in docs/spec.md
//! §12.3, with `ln` from `libm` rather than the platform's: the same inputs
//! give the same bits on every machine.

mod cursor;
mod explain;
mod search;
mod stretch;
mod taat;
#[cfg(test)]
mod tests;
mod topk;

pub use explain::{excerpt, explain, FieldPart, TermPart};
pub use search::{search, search_index, search_many, Ranked};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::index::bm25f::{Blocks, Bm25fIndex, TokenList, BM25F_FIELDS};
use crate::text::analyze::{Analyzer, Language};
use crate::text::{fold_into, split_ws};

/// The scorer's parameters, per query (docs/spec.md §12.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    pub k1: f64,
    /// Per field (title, tags, description, body): its weight and its
    /// length normalisation `b`.
    pub weights: [f64; 4],
    pub b: [f64; 4],
}

impl Params {
    /// `Err` naming the first parameter outside its domain: `k1` and the
    /// weights finite and `>= 0`, each `b` in `[0, 1]`.
    pub fn check(&self) -> Result<(), String> {
        if !(self.k1.is_finite() && self.k1 >= 0.0) {
            return Err(format!("k1 must be a finite number >= 0, got {}", self.k1));
        }
        for (f, name) in BM25F_FIELDS.iter().enumerate() {
            let w = self.weights[f];
            if !(w.is_finite() && w >= 0.0) {
                return Err(format!(
                    "the {name} weight must be a finite number >= 0, got {w}"
                ));
            }
            let b = self.b[f];
            if !(0.0..=1.0).contains(&b) {
                return Err(format!("the {name} b must be between 0 and 1, got {b}"));
            }
        }
        Ok(())
    }
}

/// A query's tokens (docs/spec.md §12.1): distinct, in order of first
/// appearance, stop words removed when asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTokens {
    pub tokens: Vec<String>,
    /// The query's words dropped as stop words, in query order.
    pub stopped: Vec<String>,
    /// `tokens` looked up by hash, built once: an excerpt (§12.6) that built
    /// it for every hit cost hits × tokens on a long query.
    pub(crate) wanted: FxHashSet<String>,
}

impl QueryTokens {
    /// The tokens of `text` for `analyzer`; `stop_words` drops every word of
    /// the language's stop word list (compared folded, before stemming).
    pub fn new(analyzer: &Analyzer, text: &str, stop_words: bool) -> QueryTokens {
        let stop: Vec<String> = match (stop_words, analyzer.language()) {
            (true, Some(l)) => folded_stop_words(l),
            _ => Vec::new(),
        };
        let mut tokens: Vec<String> = Vec::new();
        // The tokens kept so far, looked up by hash: a scan of `tokens` per
        // token made a query of n distinct words cost n² comparisons.
        let mut seen: FxHashSet<String> = FxHashSet::default();
        let mut stopped = Vec::new();
        let mut folded = String::new();
        for piece in split_ws(text) {
            folded.clear();
            fold_into(piece, &mut folded);
            analyzer.for_each_token(&folded, |t| {
                if let Some(w) = t.word {
                    if stop.binary_search_by(|s| s.as_str().cmp(w)).is_ok() {
                        stopped.push(w.to_string());
                        return;
                    }
                }
                if !seen.contains(t.text.as_ref()) {
                    seen.insert(t.text.to_string());
                    tokens.push(t.text.into_owned());
                }
            });
        }
        QueryTokens {
            tokens,
            stopped,
            wanted: seen,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// A language's stop words folded (docs/spec.md §3), sorted.
fn folded_stop_words(l: Language) -> Vec<String> {
    let mut out: Vec<String> = l
        .stop_words()
        .iter()
        .map(|w| {
            let mut f = String::new();
            fold_into(w, &mut f);
            f
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The statistics a score is computed with: how many concepts, each field's
/// total length, and the document frequency of each token asked about.
/// Integers, so sums over sources are exact and a score does not depend on
/// which source holds the other concepts (docs/spec.md §12.4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stats {
    pub n: u64,
    pub totals: [u64; 4],
    /// Tokens and their document frequencies, in the order first asked.
    pub tokens: Vec<String>,
    pub df: Vec<u64>,
}

impl Stats {
    /// A bundle's own statistics for `tokens`.
    pub fn of(index: &Bm25fIndex, tokens: &[String]) -> Stats {
        Stats {
            n: index.len() as u64,
            totals: index.totals,
            tokens: tokens.to_vec(),
            df: tokens
                .iter()
                .map(|t| index.token_id(t).map_or(0, |id| index.df(id)))
                .collect(),
        }
    }

    /// These statistics and `other`'s together: concepts and lengths summed,
    /// and each token's document frequency (a token only one side was asked
    /// about keeps that side's).
    pub fn add(&mut self, other: &Stats) {
        self.n += other.n;
        for f in 0..4 {
            self.totals[f] += other.totals[f];
        }
        let mut at: FxHashMap<String, usize> = FxHashMap::default();
        for (i, t) in self.tokens.iter().enumerate() {
            at.entry(t.clone()).or_insert(i);
        }
        for (t, df) in other.tokens.iter().zip(&other.df) {
            match at.get(t) {
                Some(&i) => self.df[i] += df,
                None => {
                    at.insert(t.clone(), self.tokens.len());
                    self.tokens.push(t.clone());
                    self.df.push(*df);
                }
            }
        }
    }

    /// [`Stats::add`], or `false` (and `self` unchanged) when a sum would
    /// pass `u64::MAX`: statistics made by hand, never a real catalog's,
    /// whose sums must stay exact (docs/spec.md §12.4), not wrap.
    pub fn checked_add(&mut self, other: &Stats) -> bool {
        let dfs = self.dfs();
        let fits = self.n.checked_add(other.n).is_some()
            && (0..4).all(|f| self.totals[f].checked_add(other.totals[f]).is_some())
            && other.tokens.iter().zip(&other.df).all(|(t, &df)| {
                let have = dfs.get(t.as_str()).copied().unwrap_or(0);
                have.checked_add(df).is_some()
            });
        if fits {
            self.add(other);
        }
        fits
    }

    /// Each token's document frequency, looked up by hash: what a loop over
    /// a query's tokens asks, where [`Stats::df_of`] per token would cost n²
    /// for n tokens.
    pub fn dfs(&self) -> FxHashMap<&str, u64> {
        let mut out = FxHashMap::default();
        for (t, &df) in self.tokens.iter().zip(&self.df) {
            out.entry(t.as_str()).or_insert(df);
        }
        out
    }

    /// The document frequency of `token` (0 when it was not asked about).
    pub fn df_of(&self, token: &str) -> u64 {
        self.tokens
            .iter()
            .position(|t| t == token)
            .map_or(0, |i| self.df[i])
    }
}

/// `ln(1 + (N − df + 0.5) / (df + 0.5))`.
pub fn idf(n: u64, df: u64) -> f64 {
    let (n, df) = (n as f64, df as f64);
    libm::log(1.0 + (n - df + 0.5) / (df + 0.5))
}

/// What the scorer needs of one query token.
pub(crate) struct Term<'a> {
    pub(crate) idf: f64,
    /// Its concepts and their four field frequencies each (empty when the
    /// token is not in the index).
    pub(crate) list: TokenList<'a>,
    /// Its list's blocks, for the bounds of dynamic pruning.
    pub(crate) blocks: Blocks<'a>,
}

/// The per-query constants of the length normalisation: field `f`'s norm
/// for a length `len` is `one_minus_b[f] + b_per_avg[f] * len`.
pub(crate) struct Norms {
    one_minus_b: [f64; 4],
    b_per_avg: [f64; 4],
}

impl Norms {
    pub(crate) fn new(params: &Params, stats: &Stats) -> Norms {
        let n = stats.n as f64;
        Norms {
            one_minus_b: std::array::from_fn(|f| 1.0 - params.b[f]),
            b_per_avg: std::array::from_fn(|f| {
                let avg = stats.totals[f] as f64 / n;
                if avg > 0.0 {
                    params.b[f] / avg
                } else {
                    0.0
                }
            }),
        }
    }

    fn norm(&self, f: usize, len: u32) -> f64 {
        self.one_minus_b[f] + self.b_per_avg[f] * f64::from(len)
    }
}

/// `weight · tf / norm`, the field's part of a token's weighted frequency.
pub(crate) fn part(params: &Params, norms: &Norms, f: usize, tf: u16, len: u32) -> f64 {
    (params.weights[f] * f64::from(tf)) / norms.norm(f, len)
}

/// The concepts' lengths, one slice per field, taken out of the index once
/// per search: each entry scored reads one or more, and going through the
/// index's array (which may be a view into the mapped cache file) each time
/// re-slices it and checks it again.
#[derive(Clone, Copy)]
pub(crate) struct Lengths<'a> {
    /// Field by field, two bytes each; `u16::MAX`: look in `long`.
    short: &'a [u16],
    long: &'a [u32],
    n: usize,
}

impl<'a> Lengths<'a> {
    pub(crate) fn of(index: &'a Bm25fIndex) -> Lengths<'a> {
        Lengths {
            short: index.short_lengths(),
            long: &index.lengths,
            n: index.len(),
        }
    }

    /// Concept `d`'s length in field `f` (`None` out of range).
    #[inline]
    fn get(&self, f: usize, d: u32) -> Option<u32> {
        if d as usize >= self.n {
            return None;
        }
        let i = f * self.n + d as usize;
        match *self.short.get(i)? {
            u16::MAX => self.long.get(i).copied(),
            l => Some(u32::from(l)),
        }
    }
}

/// `x(t, d)` (docs/spec.md §12.3): over the fields holding the token, in
/// field order, `weight · tf / norm`, from the token's four frequencies in
/// concept `d` and its lengths in those fields (`None` for a concept out of
/// range, which a tampered cache file's list may name: docs/spec.md §9.3).
#[inline]
pub(crate) fn weighted_tf(
    params: &Params,
    norms: &Norms,
    tfs: [u16; 4],
    lengths: &Lengths<'_>,
    d: u32,
) -> Option<f64> {
    let mut x = 0.0;
    for (f, &tf) in tfs.iter().enumerate() {
        if tf > 0 {
            x += part(params, norms, f, tf, lengths.get(f, d)?);
        }
    }
    Some(x)
}

/// Whether position `d` is set in `allowed` (every position is without it).
pub(crate) fn allows(allowed: Option<&[u64]>, d: u32) -> bool {
    allowed.is_none_or(|bits| {
        bits.get(d as usize >> 6)
            .is_some_and(|b| b >> (d & 63) & 1 == 1)
    })
}

/// A token's score from its weighted frequency `x`: `idf · x / (k1 + x)`.
pub(crate) fn saturate(params: &Params, idf: f64, x: f64) -> f64 {
    if x > 0.0 {
        idf * (x / (params.k1 + x))
    } else {
        0.0
    }
}

/// Each query token's list, blocks and idf, in query order.
pub(crate) fn terms<'a>(
    index: &'a Bm25fIndex,
    tokens: &QueryTokens,
    stats: &Stats,
) -> Vec<Term<'a>> {
    let dfs = stats.dfs();
    tokens
        .tokens
        .iter()
        .map(|t| {
            let (list, blocks) = match index.token_id(t) {
                Some(id) => (index.list(id), index.blocks(id)),
                None => (
                    TokenList::default(),
                    Blocks {
                        last: &[],
                        max_tf: &[],
                        min_len: &[],
                    },
                ),
            };
            Term {
                idf: idf(stats.n, dfs.get(t.as_str()).copied().unwrap_or(0)),
                list,
                blocks,
            }
        })
        .collect()
}
