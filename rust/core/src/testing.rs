//! Helpers for the unit tests.

/// A small deterministic generator (xorshift64) for randomised tests: the
/// same seed gives the same cases on every run and machine.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..m` (`m > 0`).
    pub fn below(&mut self, m: usize) -> usize {
        (self.bits() % m as u64) as usize
    }
}

/// A new empty directory for one test: `okfast-{module}-{name}-{pid}` under
/// the system's temporary directory (whatever was there is removed first),
/// removed again when the returned guard is dropped — at the end of the
/// test, passed or failed — so runs leave nothing behind.
pub fn scratch_dir(module: &str, name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("okfast-{module}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A test's scratch directory ([`scratch_dir`]), removed on drop.
pub struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Concepts `c0`, `c1`, … read from each of `sources` (whole concept files,
/// frontmatter included), each of which must parse.
pub fn concepts_of<S: AsRef<str>>(
    sources: impl IntoIterator<Item = S>,
) -> Vec<crate::concept::Concept> {
    sources
        .into_iter()
        .enumerate()
        .map(|(i, src)| {
            crate::concept::read_concept(&format!("c{i}"), "c.md", src.as_ref().as_bytes())
                .concept
                .expect("a concept file that parses")
        })
        .collect()
}

/// The walk of the directory the link `current` points to, then `current`
/// pointed at `to`: a root retargeted between a load's walk and its reads
/// (docs/spec.md §1.3).
#[cfg(unix)]
pub fn walk_then_retarget(
    current: &std::path::Path,
    to: &std::path::Path,
) -> crate::fs::walk::WalkResult {
    use crate::fs::walk::{walk_range, Stamps};
    let (progress, range) = (crate::progress::Progress::default(), Default::default());
    let watch = crate::fs::watch::Watch::none();
    let walk = walk_range(current, &watch, &progress, None, Stamps::Unopened, &range).unwrap();
    std::fs::remove_file(current).unwrap();
    std::os::unix::fs::symlink(to, current).unwrap();
    walk
}
