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

/// How long a temporary file written on this machine since its boot must
/// have gone unmodified before another load may take it for a killed
/// writer's: its writer locks it right after creating it, and this covers
/// the instant between the two.
const SETTLED: Duration = Duration::from_secs(2);

/// The same for a file written elsewhere (another machine sharing the
/// directory, whose lock this machine may not see) or before a reboot.
const SETTLED_ELSEWHERE: Duration = Duration::from_secs(3600);

/// This machine since its boot, as a temporary file's name carries it (the
/// hex digits of Linux's boot id; `0` where there is none).
fn this_boot() -> &'static str {
    static BOOT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BOOT.get_or_init(|| {
        let id = fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let hex: String = id.chars().filter(char::is_ascii_hexdigit).collect();
        if hex.is_empty() {
            "0".into()
        } else {
            hex
        }
    })
}

/// A temporary file beside a cache file, removed when dropped unless it was
/// put in place (nothing happens if it is gone).
pub(super) struct Temporary(PathBuf);

impl Temporary {
    /// A new name beside `cache_file`, unique to this process, instant and
    /// machine (`<stem>.tmp-<pid>-<ns>-<boot>`). Files killed writers left
    /// beside it are removed first (a load killed while writing, by a
    /// signal, the OOM killer or a power cut, runs no clean-up of its own):
    /// so a crash leaves no more than one file behind, and only until a load
    /// writes in that directory again.
    pub(super) fn beside(cache_file: &Path) -> Temporary {
        remove_abandoned(cache_file.parent().unwrap_or(Path::new(".")));
        let (pid, ns, boot) = (std::process::id(), now_ns(), this_boot());
        Temporary(cache_file.with_extension(format!("tmp-{pid}-{ns}-{boot}")))
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

/// Who wrote a temporary file, from its name as [`Temporary::beside`]
/// gives it (`<stem>.tmp-<pid>-<ns>-<boot>`, or without `-<boot>` as
/// versions before it named them): its process, and whether it ran on this
/// machine since its boot. `None` for any other name.
fn writer_of(name: &OsStr) -> Option<(u32, bool)> {
    let (stem, rest) = name.to_str()?.split_once(".tmp-")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    let mut parts = rest.split('-');
    let (pid, ns, boot) = (parts.next()?, parts.next()?, parts.next());
    if stem.is_empty() || !digits(pid) || !digits(ns) || !boot.is_none_or(hex) {
        return None;
    }
    if parts.next().is_some() {
        return None;
    }
    let here = boot == Some(this_boot()) && this_boot() != "0";
    Some((pid.parse().ok()?, here))
}

/// Remove, in `dir`, every temporary cache file no writer holds: named as
/// [`Temporary::beside`] names them, not by this process, a regular file (no
/// link followed), empty or begun as a cache file is, unmodified for
/// [`SETTLED`] (written on this machine since its boot) or
/// [`SETTLED_ELSEWHERE`] (otherwise), and not locked. Anything else, and any
/// file that cannot be checked, is left.
fn remove_abandoned(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Some((pid, here)) = writer_of(&entry.file_name()) else {
            continue;
        };
        // This process's own files are its writers' (on a network file
        // system, whose locks are a process's, its own lock would not stop
        // it).
        if here && pid == std::process::id() {
            continue;
        }
        let path = entry.path();
        let settled = if here { SETTLED } else { SETTLED_ELSEWHERE };
        if let Ok(Some(locked)) = abandoned(&path, settled) {
            // Removed while this process holds the lock, so no writer can
            // have taken it meanwhile.
            let _ = fs::remove_file(&path);
            drop(locked);
        }
    }
}

/// The file at `path`, opened and locked, when it is a temporary cache file
/// its writer has left, unmodified for `settled`; `None` when it is not.
fn abandoned(path: &Path, settled: Duration) -> std::io::Result<Option<File>> {
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
    if !meta.is_file() || still < settled {
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
        let (boot, here) = (this_boot(), this_boot() != "0");
        let named = |n: &str| writer_of(OsStr::new(n));
        assert_eq!(named(&format!("c.tmp-1-2-{boot}")), Some((1, here)));
        assert_eq!(
            named("0a1b.tmp-42-1765000000000000000-ab12"),
            Some((42, false))
        );
        assert_eq!(named("c.tmp-7-2"), Some((7, false)));
        for name in [
            "c.okfc",
            ".tmp-1-2",
            "c.tmp-1",
            "c.tmp-1-",
            "c.tmp--2",
            "c.tmp-1-2x",
            "c.tmp-a-2",
            "c.tmp-1-2-",
            "c.tmp-1-2-xyz",
            "c.tmp-1-2-ab-cd",
            "notes.tmp",
        ] {
            assert_eq!(named(name), None, "{name}");
        }
    }

    /// A killed writer's file (unlocked, begun as a cache file or still
    /// empty, settled: 2 s when written on this machine since its boot, an
    /// hour otherwise) is removed when a load begins a new one beside it;
    /// a file a live writer holds, one modified more recently, one that is
    /// not a cache file, one not named as a temporary file and one of this
    /// process stay. A writer holds the lock on its own file.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_new_temporary_file_removes_only_those_killed_writers_left() {
        let d = crate::testing::scratch_dir("bundle", "temporary");
        fs::create_dir_all(&d).unwrap();
        let cache_file = d.join("c.okfc");
        let (boot, me) = (this_boot(), std::process::id());
        let ago = |s: u64| SystemTime::now() - Duration::from_secs(s);
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
        let gone = [
            put(&format!("c.tmp-1-1-{boot}"), None, ago(60)),
            put(&format!("other.tmp-2-2-{boot}"), Some(b""), ago(60)),
            put("c.tmp-9-9-ffff", None, ago(7200)),
            put("c.tmp-10-10", None, ago(7200)),
        ];
        let held = put(&format!("c.tmp-3-3-{boot}"), None, ago(60));
        let kept = [
            put(&format!("c.tmp-4-4-{boot}"), None, SystemTime::now()),
            put(
                &format!("c.tmp-5-5-{boot}"),
                Some(b"someone else's"),
                ago(60),
            ),
            put("c.tmp-6", None, ago(60)),
            put(&format!("c.tmp-{me}-7-{boot}"), None, ago(60)),
            put("c.tmp-8-8-ffff", None, ago(60)),
        ];
        assert!(fs::metadata(&gone[0]).unwrap().len() > 8);
        let holder = File::open(&held).unwrap();
        try_lock(&holder).unwrap();
        let t = Temporary::beside(&cache_file);
        for p in &gone {
            assert!(!p.exists(), "{}", p.display());
        }
        for p in kept.iter().chain([&held]) {
            assert!(p.exists(), "{}", p.display());
        }
        drop(holder);
        Temporary::beside(&cache_file);
        assert!(!held.exists() && kept.iter().all(|p| p.exists()));
        // Its own file is locked while it is written, and removed when the
        // write is dropped unfinished.
        let sink = t.sink("root", None).unwrap();
        assert!(try_lock(&File::open(&t.0).unwrap()).is_err());
        let own = t.0.clone();
        drop(sink);
        assert!(try_lock(&File::open(&own).unwrap()).is_ok());
        drop(t);
        assert!(!own.exists());
        let _ = fs::remove_dir_all(&d);
    }
}
