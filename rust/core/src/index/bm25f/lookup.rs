//! Looking a token up in the BM25F index's sorted vocabulary: a binary
//! search over every [`GROUP`]-th token's first eight bytes first — an
//! array small enough for the CPU's caches to keep from one search to the
//! next — then over the tokens those bound. A search looks each of its
//! tokens up twice (its statistics, then its list), and each of a plain
//! binary search's last steps reads a token's start and then its bytes,
//! both far from the step before.

use super::Bm25fIndex;

/// Tokens per group: the groups' keys take 8 bytes per 64 tokens.
const GROUP: usize = 64;

/// A token's first eight bytes as a big-endian integer, zero-padded: keys
/// never order two tokens against their byte order (`a <= b` gives
/// `key(a) <= key(b)`).
fn key(token: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let k = token.len().min(8);
    b[..k].copy_from_slice(&token[..k]);
    u64::from_be_bytes(b)
}

/// The key of each group's first token.
pub(super) fn heads(ix: &Bm25fIndex) -> Vec<u64> {
    (0..ix.token_count())
        .step_by(GROUP)
        .map(|t| key(ix.token(t as u32)))
        .collect()
}

/// The id of `token` in `ix`, whose groups' keys are `heads`.
pub(super) fn find(ix: &Bm25fIndex, heads: &[u64], token: &[u8]) -> Option<u32> {
    let k = key(token);
    // Groups from `below` on start at a key of at least `k`, so a token
    // before the group `below - 1` is below `token`; groups from `above` on
    // start above `token`.
    let below = heads.partition_point(|&h| h < k);
    let above = below + heads[below..].partition_point(|&h| h <= k);
    let (mut lo, mut hi) = (
        below.saturating_sub(1) * GROUP,
        (above * GROUP).min(ix.token_count()),
    );
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match ix.token(mid as u32).cmp(token) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid as u32),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    /// A sorted vocabulary of `n` distinct tokens over a few letters, many
    /// sharing their first eight bytes, as the index lays it out.
    fn vocabulary(rng: &mut Rng, n: usize) -> (Bm25fIndex, Vec<Vec<u8>>) {
        let mut tokens: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let prefix: &[u8] = if rng.below(2) == 0 { b"abcdefgh" } else { b"" };
                let mut t = prefix.to_vec();
                t.extend((0..1 + rng.below(10)).map(|_| b"abz\xc3"[rng.below(4)]));
                t
            })
            .collect();
        tokens.sort();
        tokens.dedup();
        let (mut vocab, mut starts) = (Vec::new(), Vec::new());
        for t in &tokens {
            starts.push(vocab.len() as u32);
            vocab.extend_from_slice(t);
            vocab.push(b'\n');
        }
        starts.push(vocab.len() as u32);
        let ix = Bm25fIndex {
            vocab: vocab.into(),
            token_starts: starts.into(),
            ..Bm25fIndex::default()
        };
        (ix, tokens)
    }

    #[test]
    fn the_grouped_search_finds_what_a_plain_search_finds() {
        let mut rng = Rng(0x100C);
        for round in 0..200 {
            let n = rng.below(if round % 4 == 0 { 3 } else { 500 });
            let (ix, tokens) = vocabulary(&mut rng, n);
            let heads = heads(&ix);
            for (i, t) in tokens.iter().enumerate() {
                assert_eq!(find(&ix, &heads, t), Some(i as u32), "{t:?}");
            }
            for _ in 0..50 {
                let mut t: Vec<u8> = if rng.below(2) == 0 {
                    b"abcdefgh".to_vec()
                } else {
                    Vec::new()
                };
                t.extend((0..rng.below(11)).map(|_| b"abyz\xc3"[rng.below(5)]));
                let want = tokens.binary_search(&t).ok().map(|i| i as u32);
                assert_eq!(find(&ix, &heads, &t), want, "{t:?}");
            }
        }
    }
}
