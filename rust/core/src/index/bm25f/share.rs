//! A share of the BM25F index's arrays — a range of tokens' entries, bounds
//! and blocks — cut from the front of the whole, so that tokens can be
//! written in parallel into arrays of their exact size (a build and a
//! splice both lay their lists out this way); and a token's bounds and
//! blocks from its written entries (docs/spec.md §12.3).

use super::BLOCK;

pub(super) struct Share<'a> {
    pub(super) docs: &'a mut [u32],
    pub(super) tfs: &'a mut [u16],
    pub(super) max_tf: &'a mut [u16],
    pub(super) min_len: &'a mut [u32],
    pub(super) block_last: &'a mut [u32],
    pub(super) block_max_tf: &'a mut [u16],
    pub(super) block_min_len: &'a mut [u32],
}

/// The first `n` items of `rest`, which keeps the others.
fn cut<'a, T>(rest: &mut &'a mut [T], n: usize) -> &'a mut [T] {
    let (head, tail) = std::mem::take(rest).split_at_mut(n);
    *rest = tail;
    head
}

/// The blocks a list of `entries` entries is cut into: none for a short
/// list (its token's bounds say it all).
pub(super) fn blocks_of(entries: usize) -> usize {
    if entries > BLOCK {
        entries.div_ceil(BLOCK)
    } else {
        0
    }
}

impl<'a> Share<'a> {
    /// The share of `tokens` tokens with `entries` entries in `blocks`
    /// blocks, cut from the front of `self`.
    pub(super) fn take(&mut self, tokens: usize, entries: usize, blocks: usize) -> Share<'a> {
        Share {
            docs: cut(&mut self.docs, entries),
            tfs: cut(&mut self.tfs, 4 * entries),
            max_tf: cut(&mut self.max_tf, 4 * tokens),
            min_len: cut(&mut self.min_len, 4 * tokens),
            block_last: cut(&mut self.block_last, blocks),
            block_max_tf: cut(&mut self.block_max_tf, 4 * blocks),
            block_min_len: cut(&mut self.block_min_len, 4 * blocks),
        }
    }

    /// For a one-token share whose entries are written: per field the
    /// largest frequency and the smallest length of a concept holding the
    /// token there (`u32::MAX` when none does), over the token and over each
    /// block of a long list, with each block's last position.
    pub(super) fn bound(&mut self, lengths: &[u32]) {
        let mut token_max = [0u16; 4];
        let mut token_min = [u32::MAX; 4];
        let n = self.docs.len();
        for (blk, from) in (0..n).step_by(BLOCK).enumerate() {
            let to = (from + BLOCK).min(n);
            let mut mx = [0u16; 4];
            let mut mn = [u32::MAX; 4];
            for e in from..to {
                let d = self.docs[e] as usize;
                for f in 0..4 {
                    let tf = self.tfs[4 * e + f];
                    if tf > 0 {
                        mx[f] = mx[f].max(tf);
                        mn[f] = mn[f].min(lengths[4 * d + f]);
                    }
                }
            }
            for f in 0..4 {
                token_max[f] = token_max[f].max(mx[f]);
                token_min[f] = token_min[f].min(mn[f]);
            }
            if !self.block_last.is_empty() {
                self.block_last[blk] = self.docs[to - 1];
                self.block_max_tf[4 * blk..4 * blk + 4].copy_from_slice(&mx);
                self.block_min_len[4 * blk..4 * blk + 4].copy_from_slice(&mn);
            }
        }
        self.max_tf.copy_from_slice(&token_max);
        self.min_len.copy_from_slice(&token_min);
    }
}
