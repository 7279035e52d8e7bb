//! How the BM25F index keeps a token's concepts (docs/spec.md §12.3): as
//! 16-bit offsets, block by block ([`BLOCK`] entries, as the pruning cuts a
//! long list), the first block's from the token's first concept, each
//! other's from the last concept of the block before. A token with a block
//! whose concepts lie 65,536 or more apart (a rare token in a large bundle)
//! is far: its concepts are kept whole, four bytes each, and its offsets
//! are 0. Two bytes an entry instead of four for nearly every entry.

use super::BLOCK;

/// Whether a token's ascending concepts `docs` can be kept as offsets
/// (the module's comment).
pub fn near(docs: &[u32]) -> bool {
    let mut base = docs.first().copied().unwrap_or(0);
    docs.chunks(BLOCK).all(|block| {
        let last = block[block.len() - 1];
        let ok = last
            .checked_sub(base)
            .is_some_and(|x| x <= u32::from(u16::MAX));
        base = last;
        ok
    })
}

/// The offsets of a near token's concepts `docs` (the module's comment).
pub fn offsets(docs: &[u32], out: &mut [u16]) {
    let mut base = docs.first().copied().unwrap_or(0);
    for (block, out) in docs.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
        for (o, &d) in out.iter_mut().zip(block) {
            *o = d.wrapping_sub(base) as u16;
        }
        base = block[block.len() - 1];
    }
}

/// One token's concepts, ascending.
#[derive(Clone, Copy)]
pub enum Docs<'a> {
    /// As offsets: from `first` in the first block, from the block before's
    /// last concept (`block_last`, empty for a list of one block) after.
    Near {
        offsets: &'a [u16],
        first: u32,
        block_last: &'a [u32],
    },
    Far(&'a [u32]),
}

impl Default for Docs<'_> {
    fn default() -> Self {
        Docs::Far(&[])
    }
}

impl<'a> Docs<'a> {
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Docs::Near { offsets, .. } => offsets.len(),
            Docs::Far(d) => d.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The base of block `j`'s offsets.
    #[inline]
    fn base(first: u32, block_last: &[u32], j: usize) -> u32 {
        match j {
            0 => first,
            // A saved list with fewer blocks than its entries need (a
            // damaged file; the check rules it out) ends there.
            _ => block_last.get(j - 1).copied().unwrap_or(u32::MAX),
        }
    }

    /// The `i`-th concept (`u32::MAX` past the end).
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        match *self {
            Docs::Near {
                offsets,
                first,
                block_last,
            } => match offsets.get(i) {
                Some(&o) => Docs::base(first, block_last, i / BLOCK).saturating_add(u32::from(o)),
                None => u32::MAX,
            },
            Docs::Far(d) => d.get(i).copied().unwrap_or(u32::MAX),
        }
    }

    /// The first index in `from..to` whose concept is not below `d` (`to`
    /// when none is), by binary search: over the offsets alone when the
    /// range is in one block.
    pub fn first_at(&self, from: usize, to: usize, d: u32) -> usize {
        let to = to.min(self.len());
        if from >= to {
            return to;
        }
        if let Docs::Near {
            offsets,
            first,
            block_last,
        } = *self
        {
            let j = from / BLOCK;
            if (to - 1) / BLOCK == j {
                return in_block(offsets, Docs::base(first, block_last, j), from, to, d);
            }
        }
        let (mut lo, mut hi) = (from, to);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid) < d {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The first index at or after `from` whose concept is not below `d`
    /// (the length when none is): blocks passed by their last concepts,
    /// galloping, then a search of the offsets of the one block where `d`
    /// falls.
    pub fn seek(&self, from: usize, d: u32) -> usize {
        let len = self.len();
        if from >= len || self.get(from) >= d {
            return from;
        }
        match *self {
            Docs::Far(x) => gallop(x, from, |y| y < d),
            Docs::Near {
                offsets,
                first,
                block_last,
            } => {
                let j = (from / BLOCK).min(block_last.len());
                let j = gallop(block_last, j, |l| l < d);
                let start = from.max(j * BLOCK);
                let end = ((j + 1) * BLOCK).min(len);
                if start >= end {
                    return len;
                }
                in_block(offsets, Docs::base(first, block_last, j), start, end, d)
            }
        }
    }
    /// The concepts of entries `from..to`, which lie in one block: as
    /// they are kept for a far token, written into `buf` from the block's
    /// offsets for the others (one tight pass), so that a search reads a
    /// block's concepts as a plain slice.
    #[inline]
    pub fn block<'b>(&'b self, from: usize, to: usize, buf: &'b mut [u32; BLOCK]) -> &'b [u32] {
        debug_assert!(from >= to || from / BLOCK == (to - 1) / BLOCK);
        match *self {
            Docs::Near {
                offsets,
                first,
                block_last,
            } => {
                let base = Docs::base(first, block_last, from / BLOCK);
                let offsets = offsets.get(from..to).unwrap_or(&[]);
                for (d, &o) in buf.iter_mut().zip(offsets) {
                    *d = base.saturating_add(u32::from(o));
                }
                &buf[..offsets.len().min(BLOCK)]
            }
            Docs::Far(docs) => docs.get(from..to).unwrap_or(&[]),
        }
    }

    /// The concepts from the `from`-th on, in order.
    pub fn iter_from(&self, from: usize) -> DocIter<'a> {
        let (offsets, first, block_last, far): (&[u16], u32, &[u32], &[u32]) = match *self {
            Docs::Near {
                offsets,
                first,
                block_last,
            } => (offsets, first, block_last, &[]),
            Docs::Far(d) => (&[], 0, &[], d),
        };
        let from = from.min(self.len());
        DocIter {
            i: from,
            base: Docs::base(first, block_last, from / BLOCK),
            offsets,
            block_last,
            far,
        }
    }

    /// Every concept, in order.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter_from(0).collect()
    }
}

/// The first index in `from..to` (in one block, whose offsets are from
/// `base`) whose concept is not below `d`.
#[inline]
fn in_block(offsets: &[u16], base: u32, from: usize, to: usize, d: u32) -> usize {
    match d.checked_sub(base) {
        None | Some(0) => from,
        Some(key) if key > u32::from(u16::MAX) => to,
        Some(key) => from + gallop(&offsets[from..to], 0, |x| u32::from(x) < key),
    }
}

/// The first index at or after `from` (at most `s.len()`) whose item is not
/// `below` (`s.len()` when none is), `below` holding for a prefix of
/// `s[from..]`: steps doubling from `from`, then a binary search within the
/// last step — a cursor moves a few entries at a time.
#[inline]
pub(super) fn gallop<T: Copy>(s: &[T], from: usize, below: impl Fn(T) -> bool) -> usize {
    let (mut i, mut step) = (from, 1);
    while i + step < s.len() && below(s[i + step]) {
        i += step;
        step *= 2;
    }
    let end = (i + step + 1).min(s.len());
    i + s[i..end].partition_point(|&x| below(x))
}

/// [`Docs::iter_from`].
pub struct DocIter<'a> {
    i: usize,
    base: u32,
    offsets: &'a [u16],
    block_last: &'a [u32],
    far: &'a [u32],
}

impl Iterator for DocIter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        let i = self.i;
        if let Some(&o) = self.offsets.get(i) {
            if i % BLOCK == 0 && i > 0 {
                self.base = self
                    .block_last
                    .get(i / BLOCK - 1)
                    .copied()
                    .unwrap_or(u32::MAX);
            }
            self.i += 1;
            return Some(self.base.saturating_add(u32::from(o)));
        }
        let d = self.far.get(i).copied()?;
        self.i += 1;
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    #[test]
    fn gallop_finds_what_a_binary_search_finds() {
        let mut rng = Rng(0x6A11);
        for _ in 0..2_000 {
            let mut x = 0u32;
            let s: Vec<u32> = (0..rng.below(300))
                .map(|_| {
                    x += rng.below(4) as u32;
                    x
                })
                .collect();
            let d = rng.below(x as usize + 3) as u32;
            let from = rng
                .below(s.len() + 1)
                .min(s[..].partition_point(|&y| y < d));
            let want = s.partition_point(|&y| y < d);
            assert_eq!(gallop(&s, from, |y| y < d), want, "{s:?} {from} {d}");
        }
    }

    #[test]
    fn offsets_read_back_as_the_concepts_they_keep() {
        let mut rng = Rng(0x0FF5);
        for round in 0..300 {
            let len = rng.below(5 * BLOCK);
            let gap = 1 + rng.below(if round % 3 == 0 { 1_500 } else { 200 });
            let mut d = rng.below(1 << 20) as u32;
            let docs: Vec<u32> = (0..len)
                .map(|_| {
                    d += 1 + rng.below(gap) as u32;
                    d
                })
                .collect();
            let block_last: Vec<u32> = if len > BLOCK {
                docs.chunks(BLOCK).map(|b| b[b.len() - 1]).collect()
            } else {
                Vec::new()
            };
            let far = Docs::Far(&docs);
            let mut off = vec![0u16; len];
            let near_ok = near(&docs);
            // Near exactly when no block spans 65,536 concepts or more.
            let spans = docs
                .chunks(BLOCK)
                .enumerate()
                .map(|(j, b)| b[b.len() - 1] - if j == 0 { docs[0] } else { docs[j * BLOCK - 1] });
            assert_eq!(near_ok, spans.max().unwrap_or(0) <= u32::from(u16::MAX));
            if !near_ok {
                continue;
            }
            offsets(&docs, &mut off);
            let near = Docs::Near {
                offsets: &off,
                first: docs.first().copied().unwrap_or(0),
                block_last: &block_last,
            };
            assert_eq!(near.to_vec(), docs);
            for _ in 0..20 {
                let i = rng.below(len + 2);
                assert_eq!(near.get(i), far.get(i));
                assert_eq!(
                    near.iter_from(i).collect::<Vec<_>>(),
                    far.to_vec()[i.min(len)..]
                );
                let x = rng.below((d + 2) as usize) as u32;
                let from = rng.below(len + 1);
                let want = from + docs[from..].partition_point(|&y| y < x);
                assert_eq!(near.first_at(from, len, x), want);
                assert_eq!(far.first_at(from, len, x), want);
                assert_eq!(near.seek(from, x), want);
                assert_eq!(far.seek(from, x), want);
                let to = rng.below(len + 1).max(from);
                let within = from + docs[from..to].partition_point(|&y| y < x);
                assert_eq!(near.first_at(from, to, x), within);
            }
        }
    }
}
