//! The best k hits of a search, and their order (docs/spec.md §12.3):
//! score descending, then position.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::search::Ranked;

/// One scored concept; the greatest is the best (score, then the smaller
/// position).
#[derive(Debug, Clone, Copy)]
pub(super) struct Hit {
    pub(super) score: f64,
    pub(super) position: u32,
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Hit {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.position.cmp(&self.position))
    }
}

/// The best `k` hits seen so far (every hit with no `k`).
pub(super) struct TopK {
    k: Option<usize>,
    heap: BinaryHeap<std::cmp::Reverse<Hit>>,
    all: Vec<Hit>,
}

impl TopK {
    pub(super) fn new(k: Option<usize>) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::new(),
            all: Vec::new(),
        }
    }

    /// The score a concept must reach to enter (ties by position decide).
    pub(super) fn threshold(&self) -> f64 {
        match self.k {
            Some(k) if self.heap.len() == k => {
                self.heap.peek().map_or(f64::NEG_INFINITY, |h| h.0.score)
            }
            _ => f64::NEG_INFINITY,
        }
    }

    pub(super) fn offer(&mut self, hit: Hit) {
        match self.k {
            None => self.all.push(hit),
            Some(k) if self.heap.len() < k => self.heap.push(std::cmp::Reverse(hit)),
            Some(_) => {
                if self.heap.peek().is_some_and(|min| hit > min.0) {
                    self.heap.pop();
                    self.heap.push(std::cmp::Reverse(hit));
                }
            }
        }
    }

    pub(super) fn ranked(self) -> Ranked {
        let mut hits: Vec<Hit> = match self.k {
            None => self.all,
            Some(_) => self.heap.into_iter().map(|h| h.0).collect(),
        };
        hits.sort_unstable_by(|a, b| b.cmp(a));
        Ranked {
            positions: hits.iter().map(|h| h.position).collect(),
            scores: hits.iter().map(|h| h.score).collect(),
        }
    }
}
