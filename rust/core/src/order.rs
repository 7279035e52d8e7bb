//! Orderings across sources (docs/spec.md §5.4–5.7), over whole arrays: the
//! multi-key sorts of the fused strategies, reciprocal-rank fusion and the
//! fairness reorder. Inputs are parallel arrays, one entry per passage.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// The per-passage keys a fused ordering needs.
pub struct Keys<'a> {
    /// Raw score (docs/spec.md §3.3, §12.3): a whole number for the weighted
    /// count (exact in an `f64`), a BM25F score otherwise; never NaN.
    pub score: &'a [f64],
    /// The passage's source priority.
    pub priority: &'a [i32],
    /// Rank of the passage's source id in ordinal order (ties impossible).
    pub source_rank: &'a [u32],
    /// Rank of the concept id in ordinal order within its source.
    pub concept_rank: &'a [u32],
    /// 1-based rank of the passage in its own source's list (reciprocal rank).
    pub source_list_rank: &'a [u32],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// (score desc, priority desc, source id, concept id).
    Merged,
    /// (priority desc, score desc, source id, concept id).
    PriorityWeighted,
    /// (1 / (k + rank) desc, priority desc, source id, concept id). Equal
    /// `k` makes `1/(k + r)` order exactly as `r` ascending, so the sort uses
    /// the integer rank and never compares floats.
    ReciprocalRank,
}

/// Indices `0..n` in the strategy's order.
pub fn sort(keys: &Keys<'_>, strategy: Strategy) -> Vec<u32> {
    let n = keys.score.len();
    let tie = |a: usize, b: usize| {
        keys.source_rank[a]
            .cmp(&keys.source_rank[b])
            .then(keys.concept_rank[a].cmp(&keys.concept_rank[b]))
    };
    let mut idx: Vec<u32> = (0..n as u32).collect();
    let cmp = |&a: &u32, &b: &u32| -> Ordering {
        let (a, b) = (a as usize, b as usize);
        let first = match strategy {
            Strategy::Merged => keys.score[b]
                .total_cmp(&keys.score[a])
                .then(Reverse(keys.priority[a]).cmp(&Reverse(keys.priority[b]))),
            Strategy::PriorityWeighted => Reverse(keys.priority[a])
                .cmp(&Reverse(keys.priority[b]))
                .then(keys.score[b].total_cmp(&keys.score[a])),
            Strategy::ReciprocalRank => keys.source_list_rank[a]
                .cmp(&keys.source_list_rank[b])
                .then(Reverse(keys.priority[a]).cmp(&Reverse(keys.priority[b]))),
        };
        first.then_with(|| tie(a, b))
    };
    // The keys are total (source and concept ranks are unique per passage),
    // so an unstable sort is deterministic.
    idx.sort_unstable_by(cmp);
    idx
}

/// The fused order of docs/spec.md §5.4, then, with a `fairness_quota`, the
/// §5.7 reorder of that sorted list by each passage's source.
pub fn fused(keys: &Keys<'_>, strategy: Strategy, fairness_quota: Option<usize>) -> Vec<u32> {
    let sorted = sort(keys, strategy);
    match fairness_quota {
        Some(k) => {
            let sources: Vec<u32> = sorted
                .iter()
                .map(|&i| keys.source_rank[i as usize])
                .collect();
            fairness(&sources, k)
                .into_iter()
                .map(|j| sorted[j as usize])
                .collect()
        }
        None => sorted,
    }
}

/// docs/spec.md §5.7 fairness reorder with quota `k` over `sources` (the source of
/// each passage, in sorted order): no source more than `k` in a row while
/// another source still has passages. Returns a permutation of `0..n`; never
/// drops or repeats a passage. O(n log s) with a heap of each source's next
/// passage.
pub fn fairness(sources: &[u32], k: usize) -> Vec<u32> {
    let n = sources.len();
    if k == 0 || n == 0 {
        return (0..n as u32).collect();
    }
    let s = sources.iter().copied().max().map_or(0, |m| m as usize + 1);
    // Each source's passages, in order.
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); s];
    for (i, &src) in sources.iter().enumerate() {
        lists[src as usize].push(i as u32);
    }
    let mut next = vec![0usize; s];
    // Min-heap of (index of the source's next passage, source).
    let mut heap: BinaryHeap<Reverse<(u32, u32)>> = lists
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(src, l)| Reverse((l[0], src as u32)))
        .collect();
    let mut out = Vec::with_capacity(n);
    let (mut run_src, mut run_len) = (u32::MAX, 0usize);
    while let Some(Reverse((i, src))) = heap.pop() {
        let (emit_i, emit_src) = if src == run_src && run_len >= k {
            match heap.pop() {
                Some(Reverse((j, other))) => {
                    heap.push(Reverse((i, src)));
                    (j, other)
                }
                None => (i, src),
            }
        } else {
            (i, src)
        };
        out.push(emit_i);
        if emit_src == run_src {
            run_len += 1;
        } else {
            (run_src, run_len) = (emit_src, 1);
        }
        let e = emit_src as usize;
        next[e] += 1;
        if let Some(&nx) = lists[e].get(next[e]) {
            heap.push(Reverse((nx, emit_src)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/spec.md §5.7 read literally: O(n²), obviously right.
    fn fairness_reference(sources: &[u32], k: usize) -> Vec<u32> {
        let mut rest: Vec<u32> = (0..sources.len() as u32).collect();
        let mut out = Vec::new();
        let (mut run_src, mut run_len) = (u32::MAX, 0);
        while !rest.is_empty() {
            let mut pick = 0;
            if sources[rest[0] as usize] == run_src && run_len >= k {
                if let Some(j) = rest.iter().position(|&i| sources[i as usize] != run_src) {
                    pick = j;
                }
            }
            let i = rest.remove(pick);
            let s = sources[i as usize];
            if s == run_src {
                run_len += 1;
            } else {
                (run_src, run_len) = (s, 1);
            }
            out.push(i);
        }
        out
    }

    #[test]
    fn fairness_matches_the_literal_reading() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for case in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x % 40) as usize;
            let s = 1 + (x >> 8) % 4;
            let sources: Vec<u32> = (0..n)
                .map(|i| {
                    let y = x.wrapping_mul(i as u64 + 1).rotate_left(i as u32 % 64);
                    ((y >> 3) % s) as u32
                })
                .collect();
            for k in 1..4 {
                assert_eq!(
                    fairness(&sources, k),
                    fairness_reference(&sources, k),
                    "case {case} k {k} {sources:?}"
                );
            }
        }
    }

    #[test]
    fn sort_orders_by_strategy_keys() {
        let score = [5.0, 9.0, 9.0, 1.0];
        let priority = [1, 0, 1, 5];
        let source_rank = [0, 1, 0, 2];
        let concept_rank = [0, 0, 1, 0];
        let source_list_rank = [2, 1, 1, 1];
        let keys = Keys {
            score: &score,
            priority: &priority,
            source_rank: &source_rank,
            concept_rank: &concept_rank,
            source_list_rank: &source_list_rank,
        };
        assert_eq!(sort(&keys, Strategy::Merged), vec![2, 1, 0, 3]);
        assert_eq!(sort(&keys, Strategy::PriorityWeighted), vec![3, 2, 0, 1]);
        assert_eq!(sort(&keys, Strategy::ReciprocalRank), vec![3, 2, 1, 0]);
        // Merged is [2, 1, 0, 3] by source [0, 1, 0, 2]: a quota of 1 lets no
        // source run twice while another still has passages.
        assert_eq!(fused(&keys, Strategy::Merged, None), vec![2, 1, 0, 3]);
        assert_eq!(fused(&keys, Strategy::Merged, Some(1)), vec![2, 1, 0, 3]);
        assert_eq!(
            fused(&keys, Strategy::PriorityWeighted, Some(1)),
            vec![3, 2, 1, 0]
        );
    }
}
