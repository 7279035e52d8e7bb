//! One concept of a snapshot: in memory, or a record of the bundle's cache
//! file decoded the first time it is used. A warm reopen checks every record
//! ([`crate::cache::Opened::skim`]) but builds no concept, so each of a
//! million concepts costs a 40-byte slot until a hit, a passage or a read
//! needs its fields (a search itself reads only the index). A decoded
//! concept is kept (decoded once), and a refresh carries a slot over as it
//! is, decoded or not: a stored slot keeps the [`Columns`] its record was
//! checked for, so nothing parses it again until it is decoded.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::cache::Opened;
use crate::concept::{authority_rank, Concept};

/// What every concept of a snapshot needs at hand without being decoded:
/// the columns the resolver reads for all concepts at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns {
    /// `stale_after` in microseconds since the epoch; `i64::MAX` for none.
    pub stale_after_us: i64,
    pub authority_rank: u8,
    /// Whether it declares supersession or conflicts (SPEC §7).
    pub governed: bool,
}

impl Columns {
    /// From a concept's `stale_after`, `authority` and whether it has governance.
    pub fn new(stale_after: Option<i64>, authority: Option<&str>, governed: bool) -> Columns {
        Columns {
            stale_after_us: stale_after.unwrap_or(i64::MAX),
            authority_rank: authority_rank(authority),
            governed,
        }
    }

    pub fn of(c: &Concept) -> Columns {
        Columns::new(
            c.stale_after,
            c.authority.as_deref(),
            c.governance.is_some(),
        )
    }
}

/// A concept still in its cache record, with the columns it was checked
/// for (laid out flat: a nested `Columns` would pad the slot by 8 bytes).
#[derive(Clone)]
struct Stored {
    from: Arc<Opened>,
    stale_after_us: i64,
    record: u32,
    authority_rank: u8,
    governed: bool,
}

pub struct Slot {
    /// The concept, once it is in memory.
    cell: OnceLock<Arc<Concept>>,
    /// The cache record it is decoded from, for one read from a cache file.
    stored: Option<Stored>,
}

impl Slot {
    pub fn loaded(c: Arc<Concept>) -> Slot {
        Slot {
            cell: OnceLock::from(c),
            stored: None,
        }
    }

    /// Record `record` of `from`, which [`Opened::skim`] accepted with
    /// these `columns`.
    pub fn stored(from: Arc<Opened>, record: u32, columns: Columns) -> Slot {
        Slot {
            cell: OnceLock::new(),
            stored: Some(Stored {
                from,
                stale_after_us: columns.stale_after_us,
                record,
                authority_rank: columns.authority_rank,
                governed: columns.governed,
            }),
        }
    }

    /// The concept, decoded now if it was not yet.
    ///
    /// # Panics
    /// If the record no longer decodes. It was checked when the snapshot
    /// was made, by the same parser, and the mapped file is never changed in
    /// place (see [`crate::cache`]), so this cannot happen.
    pub fn concept(&self) -> &Arc<Concept> {
        self.cell.get_or_init(|| match &self.stored {
            Some(s) => Arc::new(
                s.from
                    .concept(s.record as usize)
                    .expect("a cache record checked at load decodes"),
            ),
            None => unreachable!("a slot without a record is made loaded"),
        })
    }

    /// The id, without decoding the concept.
    pub fn id(&self) -> &str {
        match (self.cell.get(), &self.stored) {
            (Some(c), _) => &c.id,
            (None, Some(s)) => {
                s.from
                    .file(s.record as usize)
                    .expect("a cache record checked at load decodes")
                    .0
            }
            (None, None) => unreachable!("a slot without a record is made loaded"),
        }
    }

    /// The columns, without decoding the concept.
    pub fn columns(&self) -> Columns {
        match (&self.stored, self.cell.get()) {
            (Some(s), _) => Columns {
                stale_after_us: s.stale_after_us,
                authority_rank: s.authority_rank,
                governed: s.governed,
            },
            (None, Some(c)) => Columns::of(c),
            (None, None) => unreachable!("a slot without a record is made loaded"),
        }
    }

    /// Whether the concept is in memory (loaded, or decoded since).
    pub fn is_decoded(&self) -> bool {
        self.cell.get().is_some()
    }

    /// Whether the texts are read from a cache file (not held in memory).
    pub fn texts_stored(&self) -> bool {
        self.cell.get().is_none_or(|c| c.texts.is_stored())
    }

    /// The concept to change, when it is in memory and not shared.
    pub fn get_mut(&mut self) -> Option<&mut Concept> {
        self.cell.get_mut().and_then(Arc::get_mut)
    }
}

impl Deref for Slot {
    type Target = Concept;

    fn deref(&self) -> &Concept {
        self.concept()
    }
}

impl Clone for Slot {
    fn clone(&self) -> Slot {
        Slot {
            cell: self.cell.clone(),
            stored: self.stored.clone(),
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("id", &self.id())
            .field("decoded", &self.cell.get().is_some())
            .finish()
    }
}

/// The [`Columns`] of a snapshot's concepts, by position, as the arrays the
/// resolver takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ColumnsOf {
    /// `stale_after` in microseconds since the epoch; `i64::MAX` for none.
    pub stale_after_us: Vec<i64>,
    pub authority_ranks: Vec<u8>,
    /// The positions of the concepts that declare supersession or conflicts.
    pub governed: Vec<u32>,
}

impl ColumnsOf {
    pub fn with_capacity(n: usize) -> ColumnsOf {
        ColumnsOf {
            stale_after_us: Vec::with_capacity(n),
            authority_ranks: Vec::with_capacity(n),
            governed: Vec::new(),
        }
    }

    /// Append the next position's columns; that position.
    pub fn push(&mut self, c: Columns) -> u32 {
        let at = self.stale_after_us.len() as u32;
        if c.governed {
            self.governed.push(at);
        }
        self.stale_after_us.push(c.stale_after_us);
        self.authority_ranks.push(c.authority_rank);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_as_small_as_the_module_says() {
        assert!(std::mem::size_of::<Slot>() <= 40);
    }
}
