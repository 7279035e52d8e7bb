//! Laying the tokens' lists into the BM25F index's arrays: each token's
//! entries from the three fields' runs merged side by side (four field
//! frequencies per concept), counted first, then written straight into
//! arrays of their exact size, with the pruning bounds (docs/spec.md §12.3).
//! Counting first costs a second merge, but no list is built twice over, so
//! a large bundle's load holds one copy of the postings, not two.

use std::ops::Range;

use rayon::prelude::*;

use super::list::is_head;
use super::runs::Runs;
use super::share::{blocks_of, Far, Laid, Share, Wide};

/// Token ranges laid apart, in parallel: enough that the pool's threads
/// share them evenly, each large enough to cost little to start. A number
/// fixed by the data alone, so the index is the same on every machine.
const TOKEN_RANGES: usize = 64;

/// The tokens per range, and the number of ranges, for `n_tokens` tokens.
pub(super) fn token_ranges(n_tokens: usize) -> (usize, usize) {
    let per = n_tokens.div_ceil(TOKEN_RANGES).max(1);
    (per, n_tokens.div_ceil(per))
}

/// One range of tokens' runs of the fields title, `tags_desc` and body
/// (each field's chunks in position order, so a token's entries from one
/// chunk after another ascend).
pub(super) type RangeRuns = [Vec<Runs>; 3];

/// The lists of tokens `0..n_tokens` from their ranges' runs
/// ([`token_ranges`]), with concept `d`'s field lengths at
/// `lengths[f * n + d]` (field by field). Each range's runs are dropped once its lists are
/// laid out, so the memory of the runs goes as that of the lists comes.
pub(super) fn lay(n_tokens: usize, runs: Vec<RangeRuns>, lengths: &[u32]) -> (Laid, Wide, Far) {
    let (per, _) = token_ranges(n_tokens);
    let ranges: Vec<Range<usize>> = (0..runs.len())
        .map(|r| r * per..((r + 1) * per).min(n_tokens))
        .collect();
    let counts: Vec<Vec<(u32, u32)>> = ranges
        .par_iter()
        .zip(&runs)
        .map(|(r, rr)| {
            let rr = [&rr[0][..], &rr[1][..], &rr[2][..]];
            let mut m = Merger::new(rr, r.start);
            r.clone().map(|t| m.count(rr, t as u32)).collect()
        })
        .collect();
    let mut laid = Laid::sized(
        counts
            .iter()
            .flatten()
            .map(|&(c, h)| (c as usize, h as usize)),
    );
    let mut rest = laid.share();
    let shares: Vec<Share<'_>> = counts
        .iter()
        .map(|c| {
            let entries = c.iter().map(|&(x, _)| x as usize).sum();
            let heads = c.iter().map(|&(_, h)| h as usize).sum();
            let blocks = c.iter().map(|&(x, _)| blocks_of(x as usize)).sum();
            rest.take(c.len(), (entries, heads), blocks)
        })
        .collect();
    let sides: Vec<(Wide, Far)> = ranges
        .into_par_iter()
        .zip(runs)
        .zip(shares)
        .zip(&counts)
        .map(|(((r, rr), share), c)| {
            fill(r, c, [&rr[0][..], &rr[1][..], &rr[2][..]], lengths, share)
        })
        .collect();
    let (wide, far): (Vec<Wide>, Vec<Far>) = sides.into_iter().unzip();
    (laid, Wide::concat(wide), Far::concat(far))
}

/// Writes the lists of the tokens in `range` (`counts` entries and head
/// entries each), and their bounds, into `share`; returns the wide ones'
/// frequencies and the far ones' concepts.
fn fill(
    range: Range<usize>,
    counts: &[(u32, u32)],
    runs: [&[Runs]; 3],
    lengths: &[u32],
    mut share: Share<'_>,
) -> (Wide, Far) {
    let mut m = Merger::new(runs, range.start);
    let (mut wide, mut far) = (Wide::default(), Far::default());
    let mut docs: Vec<u32> = Vec::new();
    let mut full: Vec<u16> = Vec::new();
    for (t, &(c, h)) in range.zip(counts) {
        let mut one = share.take(1, (c as usize, h as usize), blocks_of(c as usize));
        docs.clear();
        full.clear();
        m.each(runs, t as u32, |d, tfs| {
            docs.push(d);
            full.extend_from_slice(&tfs);
        });
        let (is_wide, is_far) = one.put(&docs, &full, lengths);
        if is_wide {
            wide.push(t as u32, &full);
        }
        if is_far {
            far.push(t as u32, &docs);
        }
    }
    (wide, far)
}

/// Merges tokens' entries from the three fields' runs, tokens ascending: a
/// cursor per run, and one scratch list per field.
struct Merger {
    at: [Vec<usize>; 3],
    /// Per field, the token's entries in each run that holds it: the run
    /// and the range of its entries.
    spans: [Vec<(usize, usize, usize)>; 3],
    lists: [Vec<(u32, u16, u16)>; 3],
}

/// A field's entry as four field frequencies (`tags_desc`: tags and
/// description).
fn tfs_of(k: usize, a: u16, b: u16) -> [u16; 4] {
    match k {
        0 => [a, 0, 0, 0],
        1 => [0, a, b, 0],
        _ => [0, 0, 0, a],
    }
}

impl Merger {
    fn new(runs: [&[Runs]; 3], first: usize) -> Merger {
        Merger {
            at: std::array::from_fn(|k| runs[k].iter().map(|r| r.find(first as u32)).collect()),
            spans: Default::default(),
            lists: Default::default(),
        }
    }

    /// The number of concepts holding token `t` (greater than the last token
    /// asked) in any field, and how many of them are head entries (list.rs).
    fn count(&mut self, runs: [&[Runs]; 3], t: u32) -> (u32, u32) {
        self.find(runs, t);
        if let Some(k) = self.only_field() {
            let c = self.spans[k].iter().map(|&(_, x, y)| (y - x) as u32).sum();
            // A run's frequencies are never 0: in the title or the tags and
            // description alone, every entry is a head entry; in the body
            // alone, none is.
            return (c, if k < 2 { c } else { 0 });
        }
        let (mut c, mut h) = (0, 0);
        self.merge(runs, |_, tfs| {
            c += 1;
            h += u32::from(is_head(tfs));
        });
        (c, h)
    }

    /// The one field whose runs hold the token found last, if only one does.
    fn only_field(&self) -> Option<usize> {
        let mut held = (0..3).filter(|&k| !self.spans[k].is_empty());
        match (held.next(), held.next()) {
            (Some(k), None) => Some(k),
            _ => None,
        }
    }

    /// The runs holding token `t`, per field, the cursors moved past it.
    fn find(&mut self, runs: [&[Runs]; 3], t: u32) {
        for (k, (spans, at)) in self.spans.iter_mut().zip(&mut self.at).enumerate() {
            spans.clear();
            for (j, (r, i)) in runs[k].iter().zip(at.iter_mut()).enumerate() {
                if r.tokens.get(*i) == Some(&t) {
                    spans.push((j, r.starts[*i] as usize, r.starts[*i + 1] as usize));
                    *i += 1;
                }
            }
        }
    }

    /// Calls `f` with each concept holding token `t` (greater than the last
    /// token asked) in any field, ascending, and its four field frequencies
    /// (title, tags, description, body).
    fn each(&mut self, runs: [&[Runs]; 3], t: u32, mut f: impl FnMut(u32, [u16; 4])) {
        self.find(runs, t);
        if let Some(k) = self.only_field() {
            // One field: its runs' entries, one run after the other, ascend.
            for &(j, x, y) in &self.spans[k] {
                let r = &runs[k][j];
                for e in x..y {
                    let b = if k == 1 { r.b[e] } else { 0 };
                    f(r.position(e), tfs_of(k, r.a[e], b));
                }
            }
            return;
        }
        self.merge(runs, f);
    }

    /// [`Merger::each`] for a token held in more than one field: each
    /// field's entries gathered, then merged side by side.
    fn merge(&mut self, runs: [&[Runs]; 3], mut f: impl FnMut(u32, [u16; 4])) {
        for (k, (list, spans)) in self.lists.iter_mut().zip(&self.spans).enumerate() {
            list.clear();
            for &(j, x, y) in spans {
                let r = &runs[k][j];
                if k == 1 {
                    list.extend((x..y).map(|e| (r.position(e), r.a[e], r.b[e])));
                } else {
                    list.extend((x..y).map(|e| (r.position(e), r.a[e], 0)));
                }
            }
            // A sentinel past every position: the merge needs no end tests.
            list.push((u32::MAX, 0, 0));
        }
        let lists = &self.lists;
        let mut i = [0usize; 3];
        loop {
            let heads: [(u32, u16, u16); 3] = std::array::from_fn(|k| lists[k][i[k]]);
            let d = heads.iter().map(|h| h.0).min().unwrap_or(u32::MAX);
            if d == u32::MAX {
                break;
            }
            let mut tfs = [0u16; 4];
            if heads[0].0 == d {
                tfs[0] = heads[0].1;
                i[0] += 1;
            }
            if heads[1].0 == d {
                (tfs[1], tfs[2]) = (heads[1].1, heads[1].2);
                i[1] += 1;
            }
            if heads[2].0 == d {
                tfs[3] = heads[2].1;
                i[2] += 1;
            }
            f(d, tfs);
        }
    }
}
