//! Where a concept's long texts live: its body and its frontmatter source.
//!
//! Scoring needs neither (the index holds every word), so once a bundle has
//! a cache file they are not kept in memory: each concept keeps only where
//! its texts sit in the cache file's text section and their CRC-32, and
//! [`SourceText::read`] fetches them with one positioned read when a caller asks
//! (an excerpt, a body, a concept's frontmatter). The file handle is held, so
//! a snapshot keeps reading the cache file it was built from even after a
//! later load has replaced that file (replacement is always by rename).
//!
//! A stored text whose checksum fails (the cache file was changed in place
//! by something other than okfast) is an error naming the file, never wrong
//! text; the damaged cache file is removed so the next load rebuilds it.

use std::borrow::Cow;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

/// An open cache file's text section.
#[derive(Debug)]
pub struct TextStore {
    pub file: File,
    /// Offset of the text section in the file.
    pub base: u64,
    pub path: PathBuf,
}

#[derive(Debug, Clone)]
pub enum SourceText {
    /// Read from the concept file and kept (no cache, or not yet written):
    /// `text[frontmatter[0]..frontmatter[1]]` and `text[body[0]..body[1]]`.
    /// `text` is usually the file's own text, so neither is copied out of it.
    Owned {
        text: String,
        frontmatter: [u32; 2],
        body: [u32; 2],
    },
    /// The frontmatter then the body, back to back at `at` in `store`.
    Stored {
        store: Arc<TextStore>,
        at: u64,
        frontmatter_len: u32,
        body_len: u32,
        crc: u32,
    },
}

/// A stored text could not be read back intact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError(pub String);

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TextError {}

/// The two texts of a concept, borrowed when owned, read when stored.
pub struct Loaded<'a> {
    pub frontmatter: Cow<'a, str>,
    pub body: Cow<'a, str>,
}

impl SourceText {
    pub fn owned(body: &str, frontmatter: &str) -> SourceText {
        let text = format!("{frontmatter}{body}");
        let n = text.len() as u32;
        let f = frontmatter.len() as u32;
        SourceText::Owned {
            text,
            frontmatter: [0, f],
            body: [f, n],
        }
    }

    /// The texts at `frontmatter` and `body` (byte ranges on character
    /// boundaries, each at most 4 GiB in) of `text`, kept whole.
    pub fn within(
        text: String,
        frontmatter: std::ops::Range<usize>,
        body: std::ops::Range<usize>,
    ) -> SourceText {
        debug_assert!(text.get(frontmatter.clone()).is_some() && text.get(body.clone()).is_some());
        let r = |r: std::ops::Range<usize>| [r.start as u32, r.end as u32];
        SourceText::Owned {
            text,
            frontmatter: r(frontmatter),
            body: r(body),
        }
    }

    pub fn is_stored(&self) -> bool {
        matches!(self, SourceText::Stored { .. })
    }

    /// Both texts; one positioned read (and a checksum) when stored.
    /// The bytes of the frontmatter and the body together, without reading them.
    pub fn stored_len(&self) -> u64 {
        match self {
            SourceText::Owned {
                frontmatter: [f0, f1],
                body: [b0, b1],
                ..
            } => u64::from(f1 - f0) + u64::from(b1 - b0),
            SourceText::Stored {
                frontmatter_len,
                body_len,
                ..
            } => u64::from(*frontmatter_len) + u64::from(*body_len),
        }
    }

    pub fn read(&self) -> Result<Loaded<'_>, TextError> {
        match self {
            SourceText::Owned {
                text,
                frontmatter: [f0, f1],
                body: [b0, b1],
            } => Ok(Loaded {
                frontmatter: Cow::Borrowed(&text[*f0 as usize..*f1 as usize]),
                body: Cow::Borrowed(&text[*b0 as usize..*b1 as usize]),
            }),
            SourceText::Stored {
                store,
                at,
                frontmatter_len,
                body_len,
                crc,
            } => {
                let n = *frontmatter_len as usize + *body_len as usize;
                let mut buf = vec![0u8; n];
                let damaged = |why: &str| {
                    TextError(format!(
                        "okfast cache file {} {why}: {}",
                        store.path.display(),
                        remove_if_same(store)
                    ))
                };
                read_at(&store.file, &mut buf, store.base + at)
                    .map_err(|e| damaged(&format!("could not be read ({e})")))?;
                if crc32fast::hash(&buf) != *crc {
                    return Err(damaged("was changed after it was written (text checksum)"));
                }
                let body = buf.split_off(*frontmatter_len as usize);
                let text =
                    |b: Vec<u8>| String::from_utf8(b).map_err(|_| damaged("holds invalid UTF-8"));
                Ok(Loaded {
                    frontmatter: Cow::Owned(text(buf)?),
                    body: Cow::Owned(text(body)?),
                })
            }
        }
    }
}

#[cfg(unix)]
fn read_at(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, at)
}

#[cfg(windows)]
fn read_at(f: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match f.seek_read(buf, at)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

/// Whether two metadata describe one file (the same device and inode): a
/// file still open as the one now at its path, not one renamed over it.
/// Never on platforms without inodes.
pub fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (a.dev(), a.ino()) == (b.dev(), b.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// Remove the damaged cache file, unless a newer one has replaced it; what
/// became of it, as the error says it (docs/spec.md §9.6).
fn remove_if_same(store: &TextStore) -> &'static str {
    const REMOVED: &str = "it has been removed, load the bundle again to rebuild it";
    const LEFT: &str = "it could not be removed; delete it, or load with cache=False";
    let Ok(open) = store.file.metadata() else {
        return LEFT;
    };
    match std::fs::metadata(&store.path) {
        Ok(named) if same_file(&open, &named) => match std::fs::remove_file(&store.path) {
            Ok(()) => REMOVED,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => REMOVED,
            Err(_) => LEFT,
        },
        Ok(_) => "another file has already replaced it, which the next load reads",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => REMOVED,
        Err(_) => LEFT,
    }
}

impl From<TextError> for crate::Error {
    fn from(e: TextError) -> Self {
        crate::Error::CacheDamaged(e.0)
    }
}
