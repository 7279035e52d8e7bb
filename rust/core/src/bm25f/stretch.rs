//! A stretch of concepts taken whole by the top-k (docs/spec.md §12.3):
//! the bounds of the entries of several lists summed per concept.

use super::cursor::{block_end, block_of, bound_x, Cursor, EntryBounds};
use super::Term;
use super::{Norms, Params};
use crate::index::bm25f::{tfs_of, BLOCK};

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

/// A window of concepts `lo..=hi`, taken whole: the lists of its essential
/// tokens, and of the others gathered ([`GATHER`]), are read in one pass
/// each and their entries' bounds (from frequencies alone) summed per
/// concept an essential token holds; then only the concepts whose sum, with
/// the other tokens' bounds, can reach the threshold are scored. A tight
/// loop per list instead of a merge of lists one concept at a time, and a
/// bound from the entries a concept has rather than from the largest in
/// each block.
pub(super) struct Stretch {
    /// Per concept `lo + o`: the sum of bounds at `o`, held when its bit in
    /// `seen` is set (0 when it is not).
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

    /// Sums the bounds of the entries of each token of `tokens`, then of
    /// `more` for the concepts `tokens` hold, naming a concept in `lo..=hi`
    /// (`hi - lo < STRETCH`), from its cursor, which is at its first entry
    /// at or after `lo`.
    /// With `x_need > 0` (one token in `tokens`), its entries whose
    /// weighted frequency is bounded below `x_need` are left out.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gather(
        &mut self,
        (lo, hi): (u32, u32),
        tokens: &[usize],
        more: &[usize],
        x_need: f64,
        terms: &[Term<'_>],
        cursors: &mut [Cursor],
        bounds: &mut EntryBounds,
        (params, norms): (&Params, &Norms),
    ) {
        for &t in tokens {
            let term = &terms[t];
            let (from, to) = (cursors[t].at, entries_to(term, cursors[t].at, hi));
            let mut h = term.list.heads_before(from);
            let mut buf = [0u32; BLOCK];
            let mut i = from;
            while i < to {
                let j = block_of(term, i);
                let end = block_end(term, j, to);
                let per_tf = *bounds.enter(term, t, j, params, norms);
                // With one essential token alone, an entry in the body alone
                // is kept from this body frequency on.
                let lim = if x_need > 0.0 {
                    body_floor(per_tf[3], x_need)
                } else {
                    0
                };
                if term.list.wide.is_empty() {
                    // One byte per frequency: an entry is one 32-bit word,
                    // and one in the body alone (nearly all) one test.
                    let lim = u64::from(lim.min(256)) << 24;
                    let docs = term.list.block_docs(i, end, &mut buf);
                    for (&d, &byte) in docs.iter().zip(&term.list.body[i..end]) {
                        let word = term.list.word(byte, &mut h);
                        let alone = word & 0x00FF_FFFF == 0;
                        if (alone && u64::from(word) < lim)
                            || (!alone && x_need > 0.0 && bound_x(tfs_of(word), &per_tf) < x_need)
                        {
                            continue;
                        }
                        let b = bounds.of_word(term, t, word, params);
                        self.add(lo, d, b);
                    }
                } else {
                    for k in i..end {
                        let tfs = term.list.tfs(k);
                        if x_need > 0.0
                            && if tfs[0] | tfs[1] | tfs[2] == 0 {
                                u32::from(tfs[3]) < lim
                            } else {
                                bound_x(tfs, &per_tf) < x_need
                            }
                        {
                            continue;
                        }
                        let b = bounds.in_block(term, t, tfs, params);
                        self.add(lo, term.list.docs.get(k), b);
                    }
                }
                i = end;
            }
        }
        let held: usize = self.seen.iter().map(|w| w.count_ones() as usize).sum();
        for &t in more {
            let term = &terms[t];
            let (from, to) = (cursors[t].at, entries_to(term, cursors[t].at, hi));
            if to - from <= LOOKUP * held {
                // Read in full: most of its entries are among the concepts held.
                let mut buf = [0u32; BLOCK];
                let mut i = from;
                while i < to {
                    let j = block_of(term, i);
                    let end = block_end(term, j, to);
                    bounds.enter(term, t, j, params, norms);
                    let docs = term.list.block_docs(i, end, &mut buf);
                    for (k, &d) in (i..end).zip(docs) {
                        let Some(o) = d.checked_sub(lo).map(|o| o as usize) else {
                            continue;
                        };
                        if o < STRETCH && self.seen[o >> 6] & (1u64 << (o & 63)) != 0 {
                            self.sum[o] += bounds.in_block(term, t, term.list.tfs(k), params);
                        }
                    }
                    i = end;
                }
            } else {
                // Looked up per concept held: fewer than its entries.
                for w in 0..self.seen.len() {
                    let mut bits = self.seen[w];
                    while bits != 0 {
                        let o = w * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let d = lo + o as u32;
                        cursors[t].seek(term, d);
                        if cursors[t].doc() == d {
                            self.sum[o] += bounds.of(term, t, cursors[t].at, params, norms);
                        }
                    }
                }
                // The concepts are scored from the stretch's start.
                cursors[t] = Cursor::new(term, from);
            }
        }
    }

    /// Adds bound `b` of concept `d`, and holds it. No branch on whether it
    /// was held already, which a second list's entries would mispredict
    /// about half the time: every sum is 0 outside a gather and its drain.
    #[inline]
    fn add(&mut self, lo: u32, d: u32, b: f64) {
        // Outside the stretch only in a list out of order (a damaged cache
        // file: lists are not read at open, docs/spec.md §9.3): left out.
        let Some(o) = d
            .checked_sub(lo)
            .map(|o| o as usize)
            .filter(|&o| o < STRETCH)
        else {
            return;
        };
        self.sum[o] += b;
        self.seen[o >> 6] |= 1u64 << (o & 63);
    }

    /// The concepts gathered, ascending, each with its sum of bounds, those
    /// whose sum is below the drain's `cut` left out; the stretch is left
    /// empty for the next (every sum taken, the ones left out too).
    pub(super) fn drain(&mut self, lo: u32, cut: f64) -> Drain<'_> {
        Drain {
            stretch: self,
            lo,
            w: 0,
            bits: 0,
            cut,
        }
    }
}

/// [`Stretch::drain`]. Most concepts gathered fall below the cut, so the
/// test is here, in a loop that does nothing else, rather than in the
/// caller's loop that scores the few kept.
pub(super) struct Drain<'a> {
    stretch: &'a mut Stretch,
    lo: u32,
    w: usize,
    bits: u64,
    /// Sums below it are left out; the caller raises it as its threshold
    /// rises.
    pub(super) cut: f64,
}

impl Iterator for Drain<'_> {
    type Item = (u32, f64);

    fn next(&mut self) -> Option<(u32, f64)> {
        loop {
            while self.bits == 0 {
                let word = self.stretch.seen.get_mut(self.w)?;
                self.bits = std::mem::take(word);
                self.w += 1;
            }
            let o = (self.w - 1) * 64 + self.bits.trailing_zeros() as usize;
            self.bits &= self.bits - 1;
            let sum = std::mem::take(&mut self.stretch.sum[o]);
            if sum >= self.cut {
                return Some((self.lo + o as u32, sum));
            }
        }
    }
}

/// The index of the first entry of `term`'s list after `from` naming a
/// concept past `hi`: whole blocks passed by their last concept, a binary
/// search in the one where `hi` falls (rather than a search over the list,
/// whose every probe may miss the CPU's caches).
fn entries_to(term: &Term<'_>, from: usize, hi: u32) -> usize {
    let (docs, len) = (term.list.docs, term.list.len());
    let mut i = from;
    while i < len {
        let j = block_of(term, i);
        let end = block_end(term, j, len);
        if term.blocks.last[j] > hi {
            // `hi` is below a position, so `hi + 1` does not overflow.
            return docs.first_at(i, end, hi + 1);
        }
        i = end;
    }
    len
}

/// The smallest body frequency `b` with `b · per_tf >= x_need` (in floats,
/// as [`bound_x`] computes it); `u32::MAX` when there is none.
fn body_floor(per_tf: f64, x_need: f64) -> u32 {
    if per_tf <= 0.0 {
        return u32::MAX;
    }
    let at = |b: u32| f64::from(b) * per_tf >= x_need;
    // The quotient is the answer within a rounding step or two, so the
    // steps below are few; past the largest frequency there is none (a
    // tiny body weight: stepping up one at a time from a clamped guess
    // never ended, docs/spec.md §12.3).
    let guess = (x_need / per_tf).ceil();
    if guess.is_nan() || guess >= f64::from(u32::MAX) {
        return u32::MAX;
    }
    let mut b = guess.max(0.0) as u32;
    while b > 0 && at(b - 1) {
        b -= 1;
    }
    while !at(b) {
        if b == u32::MAX {
            return u32::MAX;
        }
        b += 1;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::body_floor;
    use crate::testing::Rng;

    #[test]
    fn body_floor_is_the_first_frequency_that_reaches() {
        let mut rng = Rng(0xF100);
        for _ in 0..20_000 {
            let per_tf = (1 + rng.below(1 << 20)) as f64 / (1 + rng.below(1 << 12)) as f64;
            let x_need = rng.below(1 << 24) as f64 / (1 + rng.below(1 << 16)) as f64;
            let b = body_floor(per_tf, x_need);
            assert!(f64::from(b) * per_tf >= x_need, "{per_tf} {x_need} {b}");
            assert!(
                b == 0 || f64::from(b - 1) * per_tf < x_need,
                "{per_tf} {x_need} {b}"
            );
        }
        assert_eq!(body_floor(0.0, 1.0), u32::MAX);
        // Far past any frequency, at once (not counted up to, or wrapped).
        assert_eq!(body_floor(1e-18, 1.0), u32::MAX);
        assert_eq!(body_floor(f64::MIN_POSITIVE, 1.0), u32::MAX);
        let b = body_floor(1e-8, 1.0);
        assert!(f64::from(b) * 1e-8 >= 1.0 && f64::from(b - 1) * 1e-8 < 1.0);
    }
}
