//! The columns the resolver reads for every concept of a snapshot at once,
//! without decoding any concept: one [`ConceptRow`] per concept, gathered by
//! position into [`ConceptColumns`].

use super::{authority_rank, Concept};

/// The `stale_after` of a concept that declares none: never stale.
pub const NEVER_STALE_US: i64 = i64::MAX;

/// What every concept of a snapshot needs at hand without being decoded:
/// the columns the resolver reads for all concepts at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConceptRow {
    /// `stale_after` in microseconds since the epoch; [`NEVER_STALE_US`] for none.
    pub stale_after_us: i64,
    pub authority_rank: u8,
    /// Whether it declares supersession or conflicts (docs/spec.md §7).
    pub governed: bool,
}

impl ConceptRow {
    /// From a concept's `stale_after`, `authority` and whether it has governance.
    pub fn new(stale_after: Option<i64>, authority: Option<&str>, governed: bool) -> ConceptRow {
        ConceptRow {
            stale_after_us: stale_after.unwrap_or(NEVER_STALE_US),
            authority_rank: authority_rank(authority),
            governed,
        }
    }

    pub fn of(c: &Concept) -> ConceptRow {
        ConceptRow::new(
            c.stale_after,
            c.authority.as_deref(),
            c.governance.is_some(),
        )
    }
}

/// The [`ConceptRow`] of a snapshot's concepts, by position, as the arrays the
/// resolver takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConceptColumns {
    /// `stale_after` in microseconds since the epoch; [`NEVER_STALE_US`] for none.
    pub stale_after_us: Vec<i64>,
    pub authority_ranks: Vec<u8>,
    /// The positions of the concepts that declare supersession or conflicts.
    pub governed: Vec<u32>,
}

impl ConceptColumns {
    pub fn with_capacity(n: usize) -> ConceptColumns {
        ConceptColumns {
            stale_after_us: Vec::with_capacity(n),
            authority_ranks: Vec::with_capacity(n),
            governed: Vec::new(),
        }
    }

    /// Replace position `at`'s columns.
    pub fn set(&mut self, at: u32, c: ConceptRow) {
        let i = at as usize;
        self.stale_after_us[i] = c.stale_after_us;
        self.authority_ranks[i] = c.authority_rank;
        match (self.governed.binary_search(&at), c.governed) {
            (Ok(k), false) => {
                self.governed.remove(k);
            }
            (Err(k), true) => self.governed.insert(k, at),
            _ => {}
        }
    }

    /// Append the next position's columns; that position.
    pub fn push(&mut self, c: ConceptRow) -> u32 {
        let at = self.stale_after_us.len() as u32;
        if c.governed {
            self.governed.push(at);
        }
        self.stale_after_us.push(c.stale_after_us);
        self.authority_ranks.push(c.authority_rank);
        at
    }
}
