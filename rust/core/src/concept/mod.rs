//! A concept (docs/spec.md §1.3–1.4, §2, §7): its fields, its columns, how a
//! concept file is read into one, its `stale_after` instant and where its
//! long texts live.

mod columns;
mod read;
pub mod source;
pub mod stale;

pub use columns::{ConceptColumns, ConceptRow, NEVER_STALE_US};
pub use read::{
    parse_frontmatter, read_concept, read_concept_from, split_frontmatter, FileOutcome, Split,
    Unterminated,
};

use std::borrow::Cow;

use crate::yaml::Value;
use source::{SourceText, TextError};

pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Draft,
    Stable,
    Deprecated,
}

impl Status {
    /// Every status, in declaration order (`ALL[s as usize] == s`): the
    /// cache stores a status as its index here.
    pub const ALL: [Status; 3] = [Status::Draft, Status::Stable, Status::Deprecated];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Stable => "stable",
            Status::Deprecated => "deprecated",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustTier {
    Unverified,
    MachineConfirmed,
    HumanReviewed,
}

impl TrustTier {
    /// Every tier, in declaration order (`ALL[t as usize] == t`): the cache
    /// stores a tier as its index here.
    pub const ALL: [TrustTier; 3] = [
        TrustTier::Unverified,
        TrustTier::MachineConfirmed,
        TrustTier::HumanReviewed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TrustTier::Unverified => "unverified",
            TrustTier::MachineConfirmed => "machine_confirmed",
            TrustTier::HumanReviewed => "human_reviewed",
        }
    }
}

/// `{by, at}` of `generated` and of each `verified` entry, as display texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub by: Option<String>,
    pub at: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Concept {
    /// The id; the file's relative path is always the id plus `.md`
    /// ([`Concept::path`]), so it is not stored twice.
    pub id: String,
    pub kind: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub resource: Option<String>,
    pub status: Status,
    pub status_known: bool,
    /// Microseconds since the Unix epoch, UTC.
    pub stale_after: Option<i64>,
    pub generated: Option<Actor>,
    pub verified: Vec<Actor>,
    pub trust_tier: TrustTier,
    /// `authority` as written (docs/spec.md §7), validated by the resolver.
    pub authority: Option<String>,
    /// `supersedes`, `superseded_by`, `conflicts_with` (docs/spec.md §7); `None` for
    /// the many concepts that declare none, so they cost one pointer.
    pub governance: Option<Box<Governance>>,
    /// The body, and the frontmatter's YAML lines joined with `\n`: in
    /// memory, or (once the bundle has a cache file) read from it on demand
    /// ([`crate::concept::source`]). The parsed frontmatter is rebuilt on demand by
    /// [`Concept::frontmatter`]: it is needed only when a caller reads a
    /// concept, and keeping every tree costs more memory than the text
    /// (parsing is deterministic, so the result is the same).
    pub source: SourceText,
}

/// What a concept declares about others in its bundle (docs/spec.md §7). Each list
/// is read like `tags`: a sequence's scalar items, or one scalar.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Governance {
    pub supersedes: Vec<String>,
    pub superseded_by: Vec<String>,
    pub conflicts_with: Vec<String>,
}

/// docs/spec.md §7 authority levels, highest first; a concept's rank is its index.
pub const AUTHORITIES: [&str; 6] = [
    "canonical",
    "approved",
    "reference",
    "observed",
    "inferred",
    "historical",
];
/// Rank of a value that is not one of [`AUTHORITIES`] (ranked last).
pub const AUTHORITY_UNKNOWN: u8 = 6;
/// Rank of a concept that declares no authority (the source's default applies).
pub const AUTHORITY_ABSENT: u8 = 7;

/// The rank of an `authority` value: its index in [`AUTHORITIES`],
/// [`AUTHORITY_UNKNOWN`] or [`AUTHORITY_ABSENT`].
pub fn authority_rank(authority: Option<&str>) -> u8 {
    match authority {
        None => AUTHORITY_ABSENT,
        Some(a) => AUTHORITIES
            .iter()
            .position(|x| *x == a)
            .map_or(AUTHORITY_UNKNOWN, |i| i as u8),
    }
}

impl Concept {
    /// The authority's rank: its index in [`AUTHORITIES`],
    /// [`AUTHORITY_UNKNOWN`] or [`AUTHORITY_ABSENT`].
    pub fn authority_rank(&self) -> u8 {
        authority_rank(self.authority.as_deref())
    }

    /// Relative path, `/`-separated, `.md` kept.
    pub fn path(&self) -> String {
        format!("{}.md", self.id)
    }

    /// The body (docs/spec.md §1.3).
    pub fn body(&self) -> Result<Cow<'_, str>, TextError> {
        Ok(self.source.read()?.body)
    }

    /// Every frontmatter key as written, in file order (docs/spec.md §1.4).
    pub fn frontmatter(&self) -> Result<Vec<(String, Value)>, TextError> {
        Ok(parse_frontmatter(&self.source.read()?.frontmatter))
    }
}
