//! The temporary file a new cache file is written to before it is put in
//! place (docs/spec.md §9.5): its name beside the cache file, the lock its
//! writer holds on it, its removal however the write ends, and the removal
//! of those that writers killed mid-write left behind.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::writing::now_ns;
use crate::cache;
use crate::text::analyze::{Analyzer, Language};

/// How long a temporary file must have gone unmodified before another load
/// may take it for a killed writer's: its writer locks it right after
/// creating it, and this covers the instant between the two.
const SETTLED: Duration = Duration::from_secs(2);

/// A temporary file beside a cache file, removed when dropped unless it was
/// put in place (nothing happens if it is gone).
pub(super) struct Temporary(PathBuf);

impl Temporary {
    /// A new name beside `cache_file`, unique to this process and instant.
    /// Files killed writers left beside it are removed first (a load killed
    /// while writing, by a signal, the OOM killer or a power cut, runs no
    /// clean-up of its own): so a crash leaves no more than one file behind,
    /// and only until a load writes in that directory again.
    pub(super) fn beside(cache_file: &Path) -> Temporary {
        remove_abandoned(cache_file.parent().unwrap_or(Path::new(".")));
        Temporary(cache_file.with_extension(format!("tmp-{}-{}", std::process::id(), now_ns())))
    }

    /// The cache file begun at this name, which must not exist yet, locked
    /// for as long as it is open: the lock is how another load tells a
    /// file being written from one a killed writer left (the system lets go
    /// of a killed process's locks). Where the file system has no locks, the
    /// file is written unlocked, and no other load removes it.
    pub(super) fn sink(
        &self,
        root_key: &str,
        language: Option<Language>,
    ) -> std::io::Result<cache::Sink> {
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&self.0)?;
        let _ = try_lock(&f);
        cache::Sink::new(f, root_key, Analyzer::new(language).name())
    }

    /// Rename the written file to `cache_file`, removing the file there
    /// first: a reader finds the old file, none (and builds), or the new one,
    /// never a torn one (docs/spec.md §9.5). Not a rename over the old file:
    /// ext4 then writes the new file's data out before the rename returns
    /// (its `auto_da_alloc`), 0.2 s for 340 MB, an ordering the checksums make
    /// unneeded (a file cut short by a crash is refused and built again).
    pub(super) fn put_in_place(&self, cache_file: &Path) -> std::io::Result<()> {
        // Where the old file cannot be removed, the rename says whether it
        // can be replaced.
        let _ = fs::remove_file(cache_file);
        fs::rename(&self.0, cache_file)
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Whether `name` is one [`Temporary::beside`] gives: `<stem>.tmp-<pid>-<ns>`.
fn is_temporary_name(name: &OsStr) -> bool {
    let Some((stem, rest)) = name.to_str().and_then(|n| n.split_once(".tmp-")) else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    !stem.is_empty()
        && rest
            .split_once('-')
            .is_some_and(|(p, n)| digits(p) && digits(n))
}

/// Remove, in `dir`, every temporary cache file no writer holds: named as
/// [`Temporary::beside`] names them, a regular file (no link followed),
/// empty or begun as a cache file is, unmodified for [`SETTLED`] and not
/// locked. Anything else, and any file that cannot be checked, is left.
fn remove_abandoned(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if is_temporary_name(&entry.file_name()) {
            let path = entry.path();
            if let Ok(Some(locked)) = abandoned(&path) {
                // Removed while this process holds the lock, so no writer can
                // have taken it meanwhile.
                let _ = fs::remove_file(&path);
                drop(locked);
            }
        }
    }
}

/// The file at `path`, opened and locked, when it is a temporary cache file
/// its writer has left; `None` when it is not.
fn abandoned(path: &Path) -> std::io::Result<Option<File>> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Neither a link's target nor a FIFO's wait.
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        options.custom_flags(flags.bits() as i32);
    }
    let mut f = options.open(path)?;
    let meta = f.metadata()?;
    let still = SystemTime::now()
        .duration_since(meta.modified()?)
        .unwrap_or_default();
    if !meta.is_file() || still < SETTLED {
        return Ok(None);
    }
    let mut head = [0u8; 8];
    let n = f.by_ref().take(head.len() as u64).read(&mut head)?;
    if !cache::begins_a_cache_file(&head[..n]) || try_lock(&f).is_err() {
        return Ok(None);
    }
    Ok(Some(f))
}

/// Take `f`'s exclusive lock (`flock`, let go of when the last descriptor of
/// this opening closes, or its process ends) unless another opening holds it.
#[cfg(unix)]
fn try_lock(f: &File) -> std::io::Result<()> {
    rustix::fs::flock(f, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(std::io::Error::from)
}

/// Without `flock`, no file is taken for abandoned.
#[cfg(not(unix))]
fn try_lock(_: &File) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_names_a_temporary_file_is_given_are_taken_for_one() {
        for name in ["c.tmp-1-2", "0a1b.tmp-4242-1765000000000000000"] {
            assert!(is_temporary_name(OsStr::new(name)), "{name}");
        }
        for name in [
            "c.okfc",
            ".tmp-1-2",
            "c.tmp-1",
            "c.tmp-1-",
            "c.tmp--2",
            "c.tmp-1-2x",
            "c.tmp-a-2",
            "notes.tmp",
        ] {
            assert!(!is_temporary_name(OsStr::new(name)), "{name}");
        }
    }

    /// A killed writer's file (settled, unlocked, begun as a cache file or
    /// still empty) is removed when a load begins a new one beside it; a
    /// file a live writer holds, one modified within the settling time, one
    /// that is not a cache file and one not named as a temporary file stay.
    #[test]
    fn a_new_temporary_file_removes_only_those_killed_writers_left() {
        let d = crate::testing::scratch_dir("bundle", "temporary");
        fs::create_dir_all(&d).unwrap();
        let cache_file = d.join("c.okfc");
        let settled = SystemTime::now() - Duration::from_secs(60);
        // A file as a writer leaves it: its header written (the sink's
        // buffer is flushed when dropped), or `bytes`.
        let put = |name: &str, bytes: Option<&[u8]>, at: SystemTime| {
            let p = d.join(name);
            match bytes {
                Some(b) => fs::write(&p, b).unwrap(),
                None => drop(cache::Sink::new(File::create(&p).unwrap(), "root", "none").unwrap()),
            }
            File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(at)
                .unwrap();
            p
        };
        let killed = put("c.tmp-1-1", None, settled);
        let empty = put("other.tmp-2-2", Some(b""), settled);
        let held = put("c.tmp-3-3", None, settled);
        let recent = put("c.tmp-4-4", None, SystemTime::now());
        let foreign = put("c.tmp-5-5", Some(b"someone else's"), settled);
        let unnamed = put("c.tmp-6", None, settled);
        assert!(fs::metadata(&killed).unwrap().len() > 8);
        let holder = File::open(&held).unwrap();
        try_lock(&holder).unwrap();
        let t = Temporary::beside(&cache_file);
        assert!(!killed.exists() && !empty.exists());
        for kept in [&held, &recent, &foreign, &unnamed] {
            assert!(kept.exists(), "{}", kept.display());
        }
        // Its own file is locked while it is written, and removed when the
        // write is dropped unfinished.
        let sink = t.sink("root", None).unwrap();
        let own = t.0.clone();
        File::options()
            .write(true)
            .open(&own)
            .unwrap()
            .set_modified(settled)
            .unwrap();
        Temporary::beside(&cache_file);
        assert!(own.exists());
        drop(sink);
        drop(t);
        assert!(!own.exists());
        drop(holder);
        Temporary::beside(&cache_file);
        assert!(!held.exists() && recent.exists() && foreign.exists());
        let _ = fs::remove_dir_all(&d);
    }
}
