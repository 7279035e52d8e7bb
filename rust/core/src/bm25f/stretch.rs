//! A stretch of concepts taken whole by the top-k (docs/spec.md §12.3):
//! the bounds of the entries of several lists summed per concept.

use super::cursor::Cursor;
use super::search::SLACK;
use super::Term;

/// A non-essential token's list is read in full in a stretch when it is at
/// most this many times as long as the essential tokens' lists together:
/// reading an entry costs a fraction of scoring a concept, and a concept
/// whose bound counts the token's entry rather than its largest score in
/// the block is seldom scored.
pub(super) const GATHER: usize = 3;

/// A gathered list is looked up per concept held rather than read in full
/// when it has more than this many entries per concept held in the stretch:
/// a look-up costs a few entries' reading.
const LOOKUP: usize = 4;

/// Concepts a window of the top-k spans: its bounds fit in the first level
/// of the CPU's cache, and the work of a window (the tokens' bounds there,
/// their order) is spread over many concepts.
pub(super) const STRETCH: usize = 4096;

/// A stretch of concepts `lo..=hi` inside a window, taken whole when more
/// than one token is essential or read in full ([`GATHER`]): each such
/// token's entries there are read in one pass and their bounds (from
/// frequencies alone) summed per concept an essential token holds; then
/// only the concepts whose sum, with the other tokens' bounds, can reach the
/// threshold are scored. A tight loop per list instead of a merge of lists
/// one concept at a time, and a bound from the entries a concept has rather
/// than from the largest in each block.
pub(super) struct Stretch {
    /// Per concept `lo + o`: the sum of bounds at `o`, set when its bit in
    /// `seen` is.
    sum: Vec<f64>,
    seen: Vec<u64>,
}

impl Stretch {
    pub(super) fn new() -> Stretch {
        Stretch {
            sum: vec![0.0; STRETCH],
            seen: vec![0; STRETCH / 64],
        }
    }

    /// Sums `bound(t, i)` of the entries `i` of each token `t` of `tokens`,
    /// then of `more` for the concepts `tokens` hold, naming a concept in
    /// `lo..=hi` (`hi - lo < STRETCH`), from its cursor, which is moved to
    /// `lo` first. With one token in `tokens`, a concept whose bound there
    /// and `others` (a bound of all the other tokens' parts) together stay
    /// below `threshold` is left out.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gather(
        &mut self,
        (lo, hi): (u32, u32),
        tokens: &[usize],
        more: &[usize],
        (threshold, others): (f64, f64),
        terms: &[Term<'_>],
        cursors: &mut [Cursor],
        mut bound: impl FnMut(usize, usize) -> f64,
    ) {
        self.seen.fill(0);
        let alone = tokens.len() == 1;
        let mut held = 0;
        for &t in tokens {
            cursors[t].seek(&terms[t], lo);
            let docs = terms[t].list.docs;
            let mut i = cursors[t].at;
            while i < docs.len() && docs[i] <= hi {
                let o = (docs[i] - lo) as usize;
                let (w, bit) = (o >> 6, 1u64 << (o & 63));
                let b = bound(t, i);
                if self.seen[w] & bit != 0 {
                    self.sum[o] += b;
                } else if !alone || (b + others) * (1.0 + SLACK) >= threshold {
                    self.seen[w] |= bit;
                    self.sum[o] = b;
                    held += 1;
                }
                i += 1;
            }
        }
        for &t in more {
            cursors[t].seek(&terms[t], lo);
            let docs = terms[t].list.docs;
            let from = cursors[t].at;
            let mut end = Cursor { at: from };
            end.seek(&terms[t], hi.saturating_add(1));
            let to = end.at;
            if to - from <= LOOKUP * held {
                // Read in full: most of its entries are among the concepts held.
                for (i, &doc) in docs.iter().enumerate().take(to).skip(from) {
                    let o = (doc - lo) as usize;
                    if self.seen[o >> 6] & (1u64 << (o & 63)) != 0 {
                        self.sum[o] += bound(t, i);
                    }
                }
            } else {
                // Looked up per concept held: fewer than its entries.
                for w in 0..self.seen.len() {
                    let mut bits = self.seen[w];
                    while bits != 0 {
                        let o = w * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let d = lo + o as u32;
                        cursors[t].seek(&terms[t], d);
                        if cursors[t].doc(&terms[t]) == d {
                            self.sum[o] += bound(t, cursors[t].at);
                        }
                    }
                }
                // The concepts are scored from the stretch's start.
                cursors[t].at = from;
            }
        }
    }

    /// The concepts gathered, ascending.
    pub(super) fn found(&self, lo: u32) -> impl Iterator<Item = u32> + '_ {
        self.seen.iter().enumerate().flat_map(move |(w, &bits)| {
            let mut bits = bits;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let o = bits.trailing_zeros();
                    bits &= bits - 1;
                    lo + (w as u32) * 64 + o
                })
            })
        })
    }

    /// The sum of bounds gathered for concept `d`.
    pub(super) fn bound(&self, lo: u32, d: u32) -> f64 {
        self.sum[(d - lo) as usize]
    }
}
