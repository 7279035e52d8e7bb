//! Splicing the BM25F index (docs/spec.md §9.4): the old index's lists with
//! the concepts that went away dropped and the rest renumbered, merged with
//! a small index of the concepts read again or added. Each token's list then
//! holds exactly the entries a build over the new concepts gives it, and the
//! lengths, totals, bounds and blocks are computed from them as a build
//! computes them, so the index is the one a build makes, array for array: a
//! token no concept holds any more is dropped (a build never lists one), so
//! the vocabulary, and with it every token id, is the build's too.

use rayon::prelude::*;

use super::list::is_head;
use super::share::{blocks_of, Far, Laid, Share, Wide};
use super::{field_lengths, totals_of, Bm25fIndex};
use crate::index::splice::{Remap, GONE};

/// The BM25F index of `n` concepts: `old`'s, with the changes of `map`, and
/// `small`'s (the index of the concepts `map.fresh_at` places).
pub fn splice(old: &Bm25fIndex, small: &Bm25fIndex, map: &Remap<'_>, n: usize) -> Bm25fIndex {
    // Field by field (mod.rs: `lengths`).
    let mut lengths = vec![0u32; 4 * n];
    for (f, to) in lengths.chunks_exact_mut(n.max(1)).enumerate() {
        let (from_old, from_small) = (
            field_lengths(&old.lengths, f),
            field_lengths(&small.lengths, f),
        );
        for (o, &p) in map.old_to_new.iter().enumerate() {
            if p != GONE {
                to[p as usize] = from_old[o];
            }
        }
        for (s, &p) in map.fresh_at.iter().enumerate() {
            to[p as usize] = from_small[s];
        }
    }
    let totals = totals_of(&lengths);
    let pairs = tokens_in_order(old, small);
    // Each token's number of entries and head entries (list.rs); a token no
    // concept holds any more is left out, as a build never lists one.
    let counts: Vec<(usize, usize)> = pairs
        .par_iter()
        .map(|&(a, b)| {
            let (mut c, mut h) = (0, 0);
            if a != GONE {
                for (d, tfs) in old.list(a).entries() {
                    if map.old(d).is_some() {
                        c += 1;
                        h += usize::from(is_head(tfs));
                    }
                }
            }
            if b != GONE {
                for (_, tfs) in small.list(b).entries() {
                    c += 1;
                    h += usize::from(is_head(tfs));
                }
            }
            (c, h)
        })
        .collect();
    let listed: Vec<usize> = (0..pairs.len()).filter(|&t| counts[t].0 > 0).collect();
    let mut vocab = Vec::new();
    let mut token_starts = Vec::with_capacity(listed.len() + 1);
    for &t in &listed {
        let (a, b) = pairs[t];
        let token = if a != GONE {
            old.token(a)
        } else {
            small.token(b)
        };
        token_starts.push(vocab.len() as u32);
        vocab.extend_from_slice(token);
        vocab.push(b'\n');
    }
    token_starts.push(vocab.len() as u32);
    let mut laid = Laid::sized(listed.iter().map(|&t| counts[t]), None);
    // Each token's share of every array, filled in parallel.
    let mut rest = laid.share();
    let outs: Vec<Out<'_>> = listed
        .iter()
        .map(|&t| {
            let (c, (a, b)) = (counts[t], pairs[t]);
            Out {
                a,
                b,
                share: rest.take(1, c, blocks_of(c.0)),
            }
        })
        .collect();
    let apart: Vec<Apart> = outs
        .into_par_iter()
        .map(|mut out| out.fill(old, small, map, &lengths))
        .collect();
    // Each side made at its full size at once, as a build's (`Side::concat`).
    let room = |sizes: &mut dyn Iterator<Item = usize>| {
        sizes.fold((0, 0), |(tokens, items), n| (tokens + 1, items + n))
    };
    let (wide_room, far_room) = (
        room(&mut apart.iter().filter_map(|a| a.0.as_ref().map(Vec::len))),
        room(&mut apart.iter().filter_map(|a| a.1.as_ref().map(Vec::len))),
    );
    let mut wide = Wide::with_room(wide_room.0, wide_room.1);
    let mut far = Far::with_room(far_room.0, far_room.1);
    for (t, (w, f)) in apart.iter().enumerate() {
        if let Some(w) = w {
            wide.push(t as u32, w);
        }
        if let Some(f) = f {
            far.push(t as u32, f);
        }
    }
    laid.into_index(
        wide,
        far,
        small.language,
        vocab,
        token_starts,
        lengths,
        totals,
    )
}

/// A wide token's frequencies and a far token's concepts (share.rs).
type Apart = (Option<Vec<u16>>, Option<Vec<u32>>);

/// One token's part of the new index's arrays: its entries, its bounds and
/// (for a long list) its blocks; and its ids in the old and small indexes.
struct Out<'o> {
    a: u32,
    b: u32,
    share: Share<'o>,
}

impl Out<'_> {
    /// The token's entries: old token `a`'s still there, renumbered, and
    /// small token `b`'s placed, in position order (the two never share a
    /// concept: one read again is gone from the old side); then its bounds
    /// and blocks, as a build computes them (docs/spec.md §12.3). Returns a
    /// wide token's frequencies and a far token's concepts (share.rs).
    fn fill(
        &mut self,
        old: &Bm25fIndex,
        small: &Bm25fIndex,
        map: &Remap<'_>,
        lengths: &[u32],
    ) -> Apart {
        let empty = super::TokenList::default;
        let x = if self.a != GONE {
            old.list(self.a)
        } else {
            empty()
        };
        let y = if self.b != GONE {
            small.list(self.b)
        } else {
            empty()
        };
        let n = self.share.near.len();
        let all_kept = self.a != GONE
            && y.is_empty()
            && x.len() == n
            && x.heads.len() == self.share.head_words.len();
        let blocks = if all_kept {
            old.blocks(self.a)
        } else {
            super::Blocks {
                last: &[],
                max_tf: &[],
                min_len: &[],
            }
        };
        let same_blocks =
            self.share.block_last.is_empty() || blocks.last.len() == self.share.block_last.len();
        if all_kept && same_blocks {
            // Every entry kept, in the same blocks: only the positions change.
            let docs: Vec<u32> = x
                .docs
                .iter_from(0)
                .map(|d| map.old(d).unwrap_or(GONE))
                .collect();
            let far = self.share.place(&docs).then_some(docs);
            self.share.body.copy_from_slice(x.body);
            self.share.head_words.copy_from_slice(x.heads);
            let wide = (!x.wide.is_empty()).then(|| x.wide.to_vec());
            self.share
                .max_tf
                .copy_from_slice(&old.max_tf[4 * self.a as usize..][..4]);
            self.share
                .min_len
                .copy_from_slice(&old.min_len[4 * self.a as usize..][..4]);
            if !self.share.block_last.is_empty() {
                for (to, &d) in self.share.block_last.iter_mut().zip(blocks.last) {
                    *to = map.old(d).unwrap_or(GONE);
                }
                self.share.block_max_tf.copy_from_slice(blocks.max_tf);
                self.share.block_min_len.copy_from_slice(blocks.min_len);
            }
            return (wide, far);
        }
        let mut docs = Vec::with_capacity(n);
        let mut full = Vec::with_capacity(4 * n);
        let mut xs = x.entries().peekable();
        let mut ys = y
            .entries()
            .map(|(s, tfs)| (map.fresh_at[s as usize], tfs))
            .peekable();
        for _ in 0..n {
            let next = ys.peek().map_or(u32::MAX, |&(p, _)| p);
            // The next old entry still there, if it comes before the next
            // fresh one (those gone are passed over).
            let old_p = loop {
                match xs.peek().map(|&(d, tfs)| (map.old(d), tfs)) {
                    Some((None, _)) => _ = xs.next(),
                    Some((Some(p), tfs)) if p < next => break Some((p, tfs)),
                    _ => break None,
                }
            };
            let (p, tfs) = match old_p {
                Some(e) => {
                    xs.next();
                    e
                }
                // Past both (only in a damaged saved index): no entry.
                None => ys.next().unwrap_or((GONE, [0; 4])),
            };
            docs.push(p);
            full.extend_from_slice(&tfs);
        }
        let (wide, far) = self.share.put(&docs, &full, lengths);
        (wide.then_some(full), far.then_some(docs))
    }
}

/// Every token of `old` and `small` once, in byte order (both vocabularies
/// are): its id in each, [`GONE`] where it is missing.
fn tokens_in_order(old: &Bm25fIndex, small: &Bm25fIndex) -> Vec<(u32, u32)> {
    let (na, nb) = (old.token_count() as u32, small.token_count() as u32);
    let mut out = Vec::with_capacity(na as usize + nb as usize);
    let (mut a, mut b) = (0u32, 0u32);
    while a < na || b < nb {
        let order = match (a < na, b < nb) {
            (true, true) => old.token(a).cmp(small.token(b)),
            (true, false) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                out.push((a, GONE));
                a += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push((GONE, b));
                b += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a, b));
                a += 1;
                b += 1;
            }
        }
    }
    out
}
