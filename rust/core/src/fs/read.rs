//! Reading a bundle's concept files: each opened relative to the bundle's
//! root, stamped as it is read, and turned into a [`FileOutcome`].

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::stamp::{stamp_of, Stamp};
use super::walk::FileEntry;
use crate::concept::{read_concept_from, FileOutcome, MAX_FILE_BYTES};
use crate::diagnostic::{Code, Diagnostic};
use crate::error::{os_text, Error};
use crate::progress::{Phase, Progress};

/// The bundle's root: its path, and (on Unix, when it could be opened) the
/// directory itself, so each file is opened relative to it. The walk opens
/// it once and its files are read under that same directory (its
/// [`crate::fs::walk::WalkResult::root`]): a root path retargeted while a
/// load runs (a link swapped to a new release) cannot give a snapshot whose
/// listing is one directory's and whose files are another's; and the kernel
/// resolves only the id's own components, not the root's path again for
/// every file.
pub struct RootDir {
    path: PathBuf,
    #[cfg(unix)]
    dir: Option<rustix::fd::OwnedFd>,
}

impl RootDir {
    /// Files opened by full path (as where the root cannot be opened).
    #[cfg(any(test, not(unix)))]
    pub(crate) fn path_only(path: &Path) -> RootDir {
        RootDir {
            path: path.to_path_buf(),
            #[cfg(unix)]
            dir: None,
        }
    }

    /// `path`, opened when it can be (if not, files are opened by full path).
    pub fn open(path: &Path) -> RootDir {
        RootDir {
            path: path.to_path_buf(),
            #[cfg(unix)]
            dir: rustix::fs::open(
                path,
                rustix::fs::OFlags::RDONLY
                    | rustix::fs::OFlags::DIRECTORY
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .ok(),
        }
    }

    /// Its path, as the load was given it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The device and inode of the directory opened (`None` where it was
    /// not): what a caller that checked the path beforehand compares with
    /// what it checked, since the path may name another directory by now.
    pub fn identity(&self) -> Option<(u64, u64)> {
        #[cfg(unix)]
        if let Some(dir) = &self.dir {
            let st = rustix::fs::fstat(dir).ok()?;
            #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
            return Some((st.st_dev as u64, st.st_ino as u64));
        }
        None
    }

    /// The root at `path` as already opened (`dir`).
    #[cfg(unix)]
    pub(crate) fn opened(path: &Path, dir: rustix::fd::OwnedFd) -> RootDir {
        RootDir {
            path: path.to_path_buf(),
            dir: Some(dir),
        }
    }

    /// The stamp of the entry `name` directly in this root, taken as the
    /// walk takes a file's (no link followed).
    pub fn stamp_entry(&self, name: &str) -> Stamp {
        #[cfg(unix)]
        if let Some(dir) = &self.dir {
            return super::dir::stat_in(dir, std::ffi::OsStr::new(name));
        }
        super::stamp::stamp(&self.path.join(name))
    }

    /// The bytes of the regular file `name` directly in this root, read
    /// under it with no link followed (docs/spec.md §1.3), or `None` (absent,
    /// a link, not a regular file, unreadable, or over the concept size limit).
    pub fn read_entry(&self, name: &str) -> Option<Vec<u8>> {
        let mut file = self.open_file(name).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
            return None;
        }
        let mut bytes = Vec::new();
        // Read as a concept file is: a file grown past the limit since the
        // stat is not read whole.
        read_concept_bytes(&mut file, &mut bytes, None, Some(meta.len())).ok()?;
        (bytes.len() as u64 <= MAX_FILE_BYTES).then_some(bytes)
    }

    /// Open the concept file at `rel` (relative to the root) for reading,
    /// following no symbolic link on the way (docs/spec.md §1.3): a file or
    /// directory the walk saw, swapped for a link since, fails with `ELOOP`
    /// (or `ENOTDIR`) instead of reading what the link points to.
    fn open_file(&self, rel: &str) -> std::io::Result<fs::File> {
        #[cfg(unix)]
        if let Some(dir) = &self.dir {
            use rustix::fs::OFlags;
            let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
            return super::dir::open_beneath(dir, Path::new(rel), flags)
                .map(fs::File::from)
                .map_err(std::io::Error::from);
        }
        open_concept_file(&self.path.join(rel))
    }
}

/// Read one found file of the bundle under `root`: its outcome and the
/// stamp it was read at — the walk's, or, when the walk took none
/// ([`crate::fs::walk::Stamps::Unopened`]), the opened file's own.
pub fn read_found(root: &RootDir, f: &FileEntry) -> (FileOutcome, Stamp) {
    let path = format!("{}.md", f.id);
    let skip = |code, msg: String| FileOutcome {
        concept: None,
        diagnostics: vec![Diagnostic::new(code, msg, path.clone())],
    };
    let unreadable = |e: &dyn std::fmt::Display| {
        skip(
            Code::UnreadableFile,
            format!("File could not be read: {}", os_text(e)),
        )
    };
    if let Some(why) = f.bad_id {
        return (skip(Code::InvalidConceptId, why.to_string()), f.stamp);
    }
    let mut file = match root.open_file(&path) {
        Ok(file) => file,
        Err(e) if is_link_refused(&e) => return (unreadable(&LINK_ON_PATH), None),
        Err(e) => return (unreadable(&e), None),
    };
    // What was opened is checked to be a regular file even when the walk
    // stat'ed the name: it may have been swapped since (a FIFO would read as
    // an empty concept). The size it has now, when the walk took no stamp:
    // then one read (of one byte more) usually gets all of it and shows its
    // end.
    let (at, size_now) = match (file.metadata(), f.stamp) {
        (Ok(m), _) if !m.is_file() => return (unreadable(&"not a regular file"), None),
        (Ok(_), Some(st)) => (Some(st), None),
        (Ok(m), None) => (stamp_of(&m), Some(m.len())),
        (Err(e), _) => return (unreadable(&e), None),
    };
    let too_large = |n: u64| format!("File is {n} bytes, over the 16 MiB limit for a concept file");
    if let Some((len, _)) = at {
        if len > MAX_FILE_BYTES {
            return (skip(Code::FileTooLarge, too_large(len)), at);
        }
    }
    let mut bytes = Vec::new();
    if let Err(e) = read_concept_bytes(&mut file, &mut bytes, at.map(|(len, _)| len), size_now) {
        return (unreadable(&e), at);
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        let n = file.metadata().map_or(bytes.len() as u64, |m| m.len());
        return (skip(Code::FileTooLarge, too_large(n)), at);
    }
    (read_concept_from(&f.id, &path, bytes), at)
}

/// How an unreadable file whose path met a symbolic link is reported
/// (docs/spec.md §1.7).
const LINK_ON_PATH: &str = "a symbolic link on its path (never followed)";

/// Whether opening failed because a component was a symbolic link (with
/// `O_NOFOLLOW` on the last one `ELOOP`, with `O_DIRECTORY` on a directory
/// `ENOTDIR` or `ELOOP`, with `RESOLVE_NO_SYMLINKS` `ELOOP`).
fn is_link_refused(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// Open a concept file for reading. Not blocking on Unix: should the walk's
/// regular file have been swapped for a FIFO since, opening it returns at
/// once (and reading it finds nothing or fails) instead of hanging the load.
fn open_concept_file(p: &Path) -> std::io::Result<fs::File> {
    let mut o = fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW;
        o.custom_flags(flags.bits() as i32);
    }
    o.open(p)
}

/// Read all of `file` (up to one byte past the size limit) into `bytes`.
/// `expected` is the size last seen, which sizes the buffer; `size_now` the
/// size `fstat` gave for this very descriptor a moment ago: then a read of
/// one byte more that returns exactly that many bytes has reached the end,
/// and no second read is made to see it. Anything else (a file that grew or
/// shrank meanwhile, no size at hand) reads on to the end.
fn read_concept_bytes(
    file: &mut fs::File,
    bytes: &mut Vec<u8>,
    expected: Option<u64>,
    size_now: Option<u64>,
) -> std::io::Result<()> {
    if let Some(n) = size_now {
        bytes.reserve_exact(n as usize + 1);
        if read_into_spare(file, bytes)? as u64 == n {
            return Ok(());
        }
    } else {
        // Room for the size the walk saw and one byte more, so the file is
        // read in one call and its end seen in the next.
        bytes.reserve(expected.map_or(0, |len| len as usize + 1));
    }
    // Read one byte past the limit so a file that grew is still caught
    // without reading all of it.
    let room = (MAX_FILE_BYTES + 1).saturating_sub(bytes.len() as u64);
    file.take(room).read_to_end(bytes).map(|_| ())
}

/// One `read` appended to `bytes`, into its spare capacity (which must be
/// there): not zero-filled first, as reading into a `resize`d buffer would be
/// (a memset of every file read). Retried when interrupted.
#[cfg(unix)]
fn read_into_spare(file: &fs::File, bytes: &mut Vec<u8>) -> std::io::Result<usize> {
    loop {
        match rustix::io::read(file, rustix::buffer::spare_capacity(bytes)) {
            Err(rustix::io::Errno::INTR) => continue,
            r => return r.map_err(std::io::Error::from),
        }
    }
}

#[cfg(not(unix))]
fn read_into_spare(mut file: &fs::File, bytes: &mut Vec<u8>) -> std::io::Result<usize> {
    let start = bytes.len();
    bytes.resize(bytes.capacity(), 0);
    let got = loop {
        match std::io::Read::read(&mut file, &mut bytes[start..]) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => break r,
        }
    };
    bytes.truncate(start + *got.as_ref().unwrap_or(&0));
    got
}

/// Read every found file in parallel, except those `cached` yields (it is
/// given the file's position in `found`); each outcome as a `T`.
pub fn read_all<T: From<FileOutcome> + Send>(
    root: &RootDir,
    found: &[FileEntry],
    cached: &(dyn Fn(usize) -> Option<T> + Sync),
    progress: &Progress,
) -> Result<Vec<(T, Stamp)>, Error> {
    progress.start(Phase::Read, found.len());
    let reads = read_some(root, found, 0, cached, progress);
    progress.check()?;
    Ok(reads)
}

/// Read `found` (files `first..` of the load) in parallel, except those
/// `cached` yields, counting each file done.
pub fn read_some<T: From<FileOutcome> + Send>(
    root: &RootDir,
    found: &[FileEntry],
    first: usize,
    cached: &(dyn Fn(usize) -> Option<T> + Sync),
    progress: &Progress,
) -> Vec<(T, Stamp)> {
    found
        .par_iter()
        .enumerate()
        .map(|(k, f)| {
            let out = match cached(first + k) {
                Some(read) => (read, f.stamp),
                None if progress.cancelled() => (FileOutcome::default().into(), None),
                None => {
                    let (read, stamp) = read_found(root, f);
                    (read.into(), stamp)
                }
            };
            progress.step();
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use crate::fs::dir::open_by_parts;
    use crate::fs::stamp::stamp;

    fn scratch(name: &str) -> crate::testing::Scratch {
        crate::testing::scratch_dir("bundle", name)
    }

    /// A file found with a usable id and no stamp (a cold load's walk).
    fn unstamped(id: &str) -> FileEntry {
        FileEntry {
            id: id.into(),
            bad_id: None,
            stamp: None,
        }
    }

    /// A load reads its files under the root the walk opened, not under
    /// what the root's path names by then: a link retargeted between the two
    /// (a new release swapped in) gives a snapshot of the old directory
    /// only, never the old listing with the new files (docs/spec.md §1.3).
    #[cfg(unix)]
    #[test]
    fn files_are_read_under_the_root_the_walk_opened() {
        let d = scratch("retarget");
        for (release, title) in [("a", "old"), ("b", "new")] {
            fs::create_dir_all(d.join(release)).unwrap();
            let text = format!("---\ntype: T\ntitle: {title}\n---\nbody\n");
            fs::write(d.join(release).join("x.md"), text).unwrap();
            let index = format!("---\nokf_version: {release}\n---\n");
            fs::write(d.join(release).join("index.md"), index).unwrap();
        }
        // Apart in size, so their stamps differ whatever the clock.
        fs::write(d.join("b").join("index.md"), "---\nokf_version: b2\n---\n").unwrap();
        fs::write(d.join("b").join("y.md"), "---\ntype: T\n---\nnew\n").unwrap();
        let current = d.join("current");
        std::os::unix::fs::symlink(d.join("a"), &current).unwrap();
        let walk = crate::testing::walk_then_retarget(&current, &d.join("b"));
        let progress = Progress::default();
        let reads: Vec<(FileOutcome, Stamp)> =
            read_all(&walk.root, &walk.found, &|_| None, &progress).unwrap();
        let titles: Vec<_> = reads
            .iter()
            .map(|(r, _)| r.concept.as_ref().and_then(|c| c.title.clone()))
            .collect();
        assert_eq!(walk.found.len(), 1);
        assert_eq!(titles, [Some("old".to_string())]);
        assert_eq!(walk.root.path(), current);
        // The bundle's own index.md (its okf_version and stamp) too.
        let index = walk.root.read_entry("index.md").unwrap();
        assert_eq!(
            String::from_utf8(index).unwrap(),
            "---\nokf_version: a\n---\n"
        );
        let stamp_a = crate::fs::stamp::stamp(&d.join("a").join("index.md"));
        assert_eq!(walk.root.stamp_entry("index.md"), stamp_a);
    }

    #[test]
    fn a_file_that_vanishes_before_reading_is_unreadable() {
        let d = scratch("vanish");
        let f = unstamped("x");
        let (r, st) = read_found(&RootDir::open(&d), &f);
        assert_eq!(st, None);
        assert!(r.concept.is_none());
        assert_eq!(r.diagnostics[0].code, Code::UnreadableFile);
        assert!(r.diagnostics[0]
            .message
            .starts_with("File could not be read: "));
        assert_eq!(r.diagnostics[0].severity(), "error");
    }

    /// A file the walk did not stat is stamped through the descriptor it
    /// is read with: the same stamp a stat by name gives.
    #[test]
    fn a_file_read_without_a_walk_stamp_is_stamped_as_opened() {
        let d = scratch("own-stamp");
        fs::write(d.join("x.md"), "---\ntype: T\ntitle: x\n---\nbody").unwrap();
        let f = unstamped("x");
        let (r, st) = read_found(&RootDir::open(&d), &f);
        assert!(r.diagnostics.is_empty());
        assert_eq!(r.concept.unwrap().body().unwrap(), "body");
        assert_eq!(st, stamp(&d.join("x.md")));
        assert!(st.is_some());
    }

    /// The single read that ends at the size `fstat` gave, and every other
    /// case (no size, or a size that is no longer the file's: it grew or
    /// shrank since) reading on to the end: always the whole file.
    #[test]
    fn a_concept_file_is_read_whole_whatever_size_was_seen() {
        let d = scratch("read-whole");
        let p = d.join("f.md");
        let text: Vec<u8> = (0..5000u32).map(|i| b'a' + (i % 26) as u8).collect();
        fs::write(&p, &text).unwrap();
        let n = text.len() as u64;
        for (expected, size_now) in [
            (None, None),
            (Some(n), None),
            (Some(n), Some(n)),
            (Some(10), Some(10)),
            (Some(n + 100), Some(n + 100)),
            (Some(0), Some(0)),
        ] {
            let mut f = fs::File::open(&p).unwrap();
            let mut bytes = Vec::new();
            read_concept_bytes(&mut f, &mut bytes, expected, size_now).unwrap();
            assert_eq!(bytes, text, "seen {expected:?}, now {size_now:?}");
        }
    }

    /// A FIFO where the walk saw a concept file (swapped in since) is
    /// reported, not waited on: opening does not block, and `fstat` shows it
    /// is no regular file.
    #[cfg(unix)]
    #[test]
    fn a_fifo_in_place_of_a_concept_file_is_reported_not_waited_on() {
        let d = scratch("fifo-read");
        let dir = rustix::fs::open(
            &*d,
            rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        rustix::fs::mknodat(
            &dir,
            "x.md",
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Unstamped (a cold load) and stamped by a walk that saw a regular
        // file (a load through the cache); by full path, and relative to the
        // opened root (as a load reads).
        let seen = FileEntry {
            stamp: Some((10, 1)),
            ..unstamped("x")
        };
        for (root, f) in [
            (RootDir::path_only(&d), unstamped("x")),
            (RootDir::open(&d), unstamped("x")),
            (RootDir::open(&d), seen),
        ] {
            let (r, st) = read_found(&root, &f);
            assert_eq!(st, None);
            assert!(r.concept.is_none());
            assert_eq!(r.diagnostics[0].code, Code::UnreadableFile);
            assert_eq!(
                r.diagnostics[0].message,
                "File could not be read: not a regular file"
            );
        }
    }

    /// A concept file, or a directory on its path, swapped for a symbolic
    /// link after the walk saw it is not followed (docs/spec.md §1.3): the
    /// file is unreadable, and what the link points to is never read.
    #[cfg(unix)]
    #[test]
    fn a_link_swapped_in_after_the_walk_is_never_followed() {
        let d = scratch("link-read");
        let outside = scratch("link-outside");
        fs::write(
            outside.join("x.md"),
            "---\ntype: T\ntitle: secret\n---\nsecret",
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.join("x.md"), d.join("x.md")).unwrap();
        std::os::unix::fs::symlink(&*outside, d.join("z")).unwrap();
        for id in ["x", "z/x"] {
            for stamp in [None, Some((10, 1))] {
                let f = FileEntry {
                    stamp,
                    ..unstamped(id)
                };
                for root in [RootDir::path_only(&d), RootDir::open(&d)] {
                    if root.dir.is_none() && id == "z/x" {
                        continue; // by full path only the last component is checked
                    }
                    let (r, _) = read_found(&root, &f);
                    assert!(r.concept.is_none(), "{id}");
                    assert_eq!(
                        r.diagnostics[0].message,
                        "File could not be read: a symbolic link on its path (never followed)",
                        "{id}"
                    );
                }
            }
            // Where `openat2` is missing: one directory at a time.
            let root = RootDir::open(&d);
            let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOFOLLOW;
            let rel = format!("{id}.md");
            let e = open_by_parts(root.dir.as_ref().unwrap(), Path::new(&rel), flags);
            assert!(
                matches!(e, Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR)),
                "{id}: {e:?}"
            );
        }
        fs::write(d.join("ok.md"), "x").unwrap();
        let root = RootDir::open(&d);
        let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOFOLLOW;
        assert!(open_by_parts(root.dir.as_ref().unwrap(), Path::new("ok.md"), flags).is_ok());
    }

    /// A file read relative to the opened root is the file its path names,
    /// in a subdirectory too, and a missing one is reported.
    #[cfg(unix)]
    #[test]
    fn files_are_read_relative_to_the_opened_root() {
        let d = scratch("relative");
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("sub/x.md"), "---\ntype: T\ntitle: x\n---\nin sub").unwrap();
        let root = RootDir::open(&d);
        assert!(root.dir.is_some());
        let (r, st) = read_found(&root, &unstamped("sub/x"));
        assert_eq!(r.concept.unwrap().body().unwrap(), "in sub");
        assert_eq!(st, stamp(&d.join("sub/x.md")));
        let (r, _) = read_found(&root, &unstamped("sub/gone"));
        assert_eq!(r.diagnostics[0].code, Code::UnreadableFile);
    }
}
