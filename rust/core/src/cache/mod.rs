//! The persistent cache of a bundle: one versioned, checksummed
//! file per bundle holding, for every concept file, its id, the size and
//! modification time it was read at, its diagnostics and its parsed concept;
//! the concepts' texts (frontmatter and body); the index and the ordinal
//! ranks.
//!
//! Reopening maps the file into memory ([`CacheFile`]) and uses it in place: the
//! index arrays are views into the mapping ([`crate::array::Array`]), each file's record is
//! decoded only when that file is taken from the cache, and texts stay in the
//! file until a caller asks for one ([`crate::concept::source`]). Nothing is parsed
//! twice and nothing large is copied.
//!
//! Layout (little-endian):
//!
//! ```text
//! header  MAGIC, format u32, okfast version, bundle root (u32 length + bytes),
//!         analyzer language (u32 length + bytes), texts length u64, lists length u64, core length u64,
//!         lists CRC-32 u32, core CRC-32 u32,
//!         header CRC-32 u32 (of every header byte before it)
//! texts   per concept: frontmatter bytes, body bytes (in id order as a
//!         build writes them; a rewrite after a splice copies the kept
//!         ones in their order, then the new ones)
//! pad     zeros to a multiple of 4096
//! lists   the BM25F postings' offsets, bytes and head words, each as
//!         length u64 + items + zero pad to 8 (laid in place: lists.rs)
//! core    (8-aligned; offsets below are relative to its start)
//!         file count u64, written-at ns u128, then per file a record:
//!           id, size u64, mtime ns u128, diagnostics, concept flag, concept
//!           (its fields, and where its texts are: offset u64, frontmatter
//!           length u32, body length u32, CRC-32 u32 of both)
//!         directories: count u64, then per directory whose listing can be
//!           reused: prefix, device, inode, mtime ns, ctime ns (u64 each),
//!           entry count u32, entries byte length u64, entries (kind u8:
//!           0 file, 1 directory; name) in id order
//!         record offsets u64 × files (8-aligned)
//!         index: per field each array as length u64 + items + zero pad to 8;
//!         tags; ordinal ranks; the BM25F index but its postings
//!         tail: record-offsets table offset u64, index offset u64,
//!         directories offset u64
//! ```
//!
//! The header, the lists and the core are checked when the file is opened
//! (their CRC-32s computed over each whole, in parallel); a file that fails
//! any check is rejected as a whole, never partly used. Each concept's texts
//! carry their own CRC-32, checked when they are read.
//!
//! The file is written to a temporary name and renamed into place, so a
//! reader never sees a torn file, and a mapping keeps the file it was made
//! from. The mapping assumes nothing truncates the file in place while it is
//! open (okfast never does; a program that did would make the next access
//! fault, as with any memory-mapped database). On a big-endian machine the
//! cache is not used.

mod copy;
mod decode;
mod listings;
mod lists;
mod read;
mod write;

#[cfg(test)]
mod tests;

pub use copy::RawRecord;
pub use listings::{Listing, Listings};
pub use read::{CacheFile, OpenError};
pub use write::{FileRecord, RecordOut, Sink, TextRef};

const MAGIC: &[u8; 8] = b"OKFASTC\0";

/// Whether `head`, up to the first 8 bytes of a file, can be those of a
/// cache file a writer has begun (none yet written included).
pub fn begins_a_cache_file(head: &[u8]) -> bool {
    MAGIC.starts_with(head)
}
/// Bump whenever the layout or the meaning of a field changes.
pub const FORMAT: u32 = 11;
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Bytes of the core's tail: the offsets of the record table, the index and
/// the directories.
const TAIL: usize = 24;

/// Why a cache file was not used.
#[derive(Debug, PartialEq, Eq)]
pub enum Rejected {
    Truncated,
    Foreign(String),
    Checksum,
    Corrupt(String),
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::Truncated => write!(f, "is truncated"),
            Rejected::Foreign(why) => write!(f, "is from {why}"),
            Rejected::Checksum => write!(f, "fails its checksum"),
            Rejected::Corrupt(why) => write!(f, "is corrupt ({why})"),
        }
    }
}

// ---------------------------------------------------------------- writing
