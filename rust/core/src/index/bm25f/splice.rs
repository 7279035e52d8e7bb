//! Splicing the BM25F index (docs/spec.md §9.4): the old index's lists with
//! the concepts that went away dropped and the rest renumbered, merged with
//! a small index of the concepts read again or added. Each token's list then
//! holds exactly the entries a build over the new concepts gives it, and the
//! lengths, totals, bounds and blocks are computed from them as a build
//! computes them, so the index is the one a build makes, array for array: a
//! token no concept holds any more is dropped (a build never lists one), so
//! the vocabulary, and with it every token id, is the build's too.

use rayon::prelude::*;

use super::build::{assemble, Merged};
use super::Bm25fIndex;
use crate::index::splice::{Remap, GONE};

/// The BM25F index of `n` concepts: `old`'s, with the changes of `map`, and
/// `small`'s (the index of the concepts `map.fresh_at` places).
pub fn splice(old: &Bm25fIndex, small: &Bm25fIndex, map: &Remap<'_>, n: usize) -> Bm25fIndex {
    let mut lengths = vec![0u32; 4 * n];
    for (o, &p) in map.old_to_new.iter().enumerate() {
        if p != GONE {
            lengths[4 * p as usize..][..4].copy_from_slice(&old.lengths[4 * o..][..4]);
        }
    }
    for (s, &p) in map.fresh_at.iter().enumerate() {
        lengths[4 * p as usize..][..4].copy_from_slice(&small.lengths[4 * s..][..4]);
    }
    // Integer sums: the same whatever the order (docs/spec.md §12.4).
    let totals: [u64; 4] = std::array::from_fn(|f| {
        lengths
            .iter()
            .skip(f)
            .step_by(4)
            .map(|&l| u64::from(l))
            .sum()
    });
    let pairs = tokens_in_order(old, small);
    let merged: Vec<Merged> = pairs
        .par_iter()
        .map(|&(a, b)| merge(old, small, a, b, map, &lengths))
        .collect();
    let mut vocab = Vec::new();
    let mut token_starts = Vec::with_capacity(pairs.len() + 1);
    let mut kept = Vec::with_capacity(merged.len());
    for (&(a, b), m) in pairs.iter().zip(merged) {
        if m.is_empty() {
            continue;
        }
        let token = if a != GONE {
            old.token(a)
        } else {
            small.token(b)
        };
        token_starts.push(vocab.len() as u32);
        vocab.extend_from_slice(token);
        vocab.push(b'\n');
        kept.push(m);
    }
    token_starts.push(vocab.len() as u32);
    assemble(small.language, vocab, token_starts, lengths, totals, kept)
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

/// One token's new list: old token `a`'s entries still there, renumbered,
/// and small token `b`'s placed, in position order (the two never share a
/// concept: a concept read again is gone from the old side).
fn merge(
    old: &Bm25fIndex,
    small: &Bm25fIndex,
    a: u32,
    b: u32,
    map: &Remap<'_>,
    lengths: &[u32],
) -> Merged {
    let empty = || crate::index::bm25f::TokenList {
        docs: &[],
        tfs: &[],
    };
    let x = if a != GONE { old.list(a) } else { empty() };
    let y = if b != GONE { small.list(b) } else { empty() };
    let mut m = Merged::with_capacity(x.docs.len() + y.docs.len());
    let tfs = |list: &[u16], i: usize| -> [u16; 4] { std::array::from_fn(|f| list[4 * i + f]) };
    let (mut i, mut j) = (0usize, 0usize);
    loop {
        // The next old entry still there, and its new position.
        while i < x.docs.len() && map.old(x.docs[i]).is_none() {
            i += 1;
        }
        let p = (i < x.docs.len()).then(|| map.old(x.docs[i])).flatten();
        let q = (j < y.docs.len()).then(|| map.fresh_at[y.docs[j] as usize]);
        match (p, q) {
            (None, None) => break,
            (Some(p), q) if q.is_none_or(|q| p < q) => {
                m.push(p, tfs(x.tfs, i), lengths);
                i += 1;
            }
            (_, Some(q)) => {
                m.push(q, tfs(y.tfs, j), lengths);
                j += 1;
            }
            (Some(_), None) => unreachable!("matched by the arm before"),
        }
    }
    m.end(lengths);
    m
}
