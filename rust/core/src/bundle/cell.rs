//! One concept of a snapshot: in memory, or a record of the bundle's cache
//! file decoded the first time it is used. A warm reopen checks every record
//! ([`crate::cache::CacheFile::skim`]) but builds no concept, so each of a
//! million concepts costs a 40-byte cell until a hit, a passage or a read
//! needs its fields (a search itself reads only the index). A decoded
//! concept is kept (decoded once), and a refresh carries a cell over as it
//! is, decoded or not: a stored cell keeps the [`ConceptRow`] its record was
//! checked for, so nothing parses it again until it is decoded.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::cache::CacheFile;
use crate::concept::{Concept, ConceptRow};

/// A concept still in its cache record, with the columns it was checked
/// for (laid out flat: a nested `ConceptRow` would pad the cell by 8 bytes).
#[derive(Clone)]
struct Stored {
    from: Arc<CacheFile>,
    stale_after_us: i64,
    record: u32,
    authority_rank: u8,
    governed: bool,
}

pub struct ConceptCell {
    /// The concept, once it is in memory.
    cell: OnceLock<Arc<Concept>>,
    /// The cache record it is decoded from, for one read from a cache file.
    stored: Option<Stored>,
}

impl ConceptCell {
    pub fn loaded(c: Arc<Concept>) -> ConceptCell {
        ConceptCell {
            cell: OnceLock::from(c),
            stored: None,
        }
    }

    /// Record `record` of `from`, which [`CacheFile::skim`] accepted with
    /// these `columns`.
    pub fn stored(from: Arc<CacheFile>, record: u32, columns: ConceptRow) -> ConceptCell {
        ConceptCell {
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
    pub fn columns(&self) -> ConceptRow {
        match (&self.stored, self.cell.get()) {
            (Some(s), _) => ConceptRow {
                stale_after_us: s.stale_after_us,
                authority_rank: s.authority_rank,
                governed: s.governed,
            },
            (None, Some(c)) => ConceptRow::of(c),
            (None, None) => unreachable!("a slot without a record is made loaded"),
        }
    }

    /// The record of `file` this concept is, if it is one of its records.
    pub fn record_in(&self, file: &Arc<CacheFile>) -> Option<u32> {
        self.stored
            .as_ref()
            .filter(|s| Arc::ptr_eq(&s.from, file))
            .map(|s| s.record)
    }

    /// Whether the concept is in memory (loaded, or decoded since).
    pub fn is_decoded(&self) -> bool {
        self.cell.get().is_some()
    }

    /// Whether the texts are read from a cache file (not held in memory).
    pub fn texts_stored(&self) -> bool {
        self.cell.get().is_none_or(|c| c.source.is_stored())
    }

    /// The concept to change, when it is in memory and not shared.
    pub fn get_mut(&mut self) -> Option<&mut Concept> {
        self.cell.get_mut().and_then(Arc::get_mut)
    }
}

impl Deref for ConceptCell {
    type Target = Concept;

    fn deref(&self) -> &Concept {
        self.concept()
    }
}

/// So the index is built over a snapshot's cells as over concepts.
impl std::borrow::Borrow<Concept> for ConceptCell {
    fn borrow(&self) -> &Concept {
        self.concept()
    }
}

impl Clone for ConceptCell {
    fn clone(&self) -> ConceptCell {
        ConceptCell {
            cell: self.cell.clone(),
            stored: self.stored.clone(),
        }
    }
}

impl std::fmt::Debug for ConceptCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConceptCell")
            .field("id", &self.id())
            .field("decoded", &self.cell.get().is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_as_small_as_the_module_says() {
        assert!(std::mem::size_of::<ConceptCell>() <= 40);
    }
}
