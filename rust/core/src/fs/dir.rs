//! A directory of the walk, opened once: stamped, listed, and its files
//! stat'ed relative to it. On Unix by descriptor; elsewhere through
//! `std::fs`, by path (no stamp, so no listing is reused there).

use std::ffi::OsString;

use super::stamp::Stamp;

#[cfg(unix)]
pub use by_descriptor::{stat_in, Dir};
#[cfg(not(unix))]
pub use by_path::Dir;

/// A directory's entries (but `.` and `..`), each with its kind or why that
/// could not be learnt, and the error that ended the listing early.
pub type Entries = (
    Vec<(OsString, std::io::Result<Kind>)>,
    Option<std::io::Error>,
);

/// What kind of entry a directory listing gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

#[cfg(unix)]
mod by_descriptor {
    //! Directories opened once and used by descriptor: stamped, listed and
    //! their files stat'ed relative to it (far cheaper than a stat of each
    //! full path).
    use super::{Entries, Kind, Stamp};
    use crate::fs::stamp::{stamp_from, DirStamp};
    use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
    use std::ffi::OsStr;
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    pub struct Dir(OwnedFd);

    fn kind_of(t: FileType) -> Kind {
        match t {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        }
    }

    /// Nanoseconds since the epoch (0 before it, saturating past 2554).
    fn ns(secs: i64, nanos: u32) -> u64 {
        u64::try_from(secs).map_or(0, |s| {
            s.saturating_mul(1_000_000_000)
                .saturating_add(u64::from(nanos))
        })
    }

    /// The fields of a `stat` this module reads, whose integer types differ
    /// between platforms: size, modification and change times, device, inode.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    fn fields(st: &rfs::Stat) -> (u64, (i64, u32), (i64, u32), u64, u64) {
        (
            st.st_size as u64,
            (st.st_mtime as i64, st.st_mtime_nsec as u32),
            (st.st_ctime as i64, st.st_ctime_nsec as u32),
            st.st_dev as u64,
            st.st_ino as u64,
        )
    }

    /// The stamp of the entry `name` of the open directory `dir`, no link
    /// followed: how the walk stamps a file, for any directory held open
    /// (the bundle's root, for its `index.md`).
    pub fn stat_in(dir: impl std::os::fd::AsFd, name: &OsStr) -> Stamp {
        let st = rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let (len, m, ..) = fields(&st);
        stamp_from(len, m.0, m.1)
    }

    impl Dir {
        pub fn open(path: &Path) -> std::io::Result<Dir> {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            Ok(Dir(rfs::open(path, flags, Mode::empty())?))
        }

        /// The directory at `rel` below this one, no symbolic link followed
        /// on the way (docs/spec.md §1.3): a directory the walk saw, swapped
        /// for a link since (or one of its parents), fails with `ELOOP` or
        /// `ENOTDIR` instead of listing what the link points to.
        pub fn open_below(&self, rel: &Path) -> std::io::Result<Dir> {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            Ok(Dir(super::open_beneath(&self.0, rel, flags)?))
        }

        /// A second handle on this same open directory.
        pub fn try_clone(&self) -> std::io::Result<Dir> {
            Ok(Dir(self.0.try_clone()?))
        }

        /// The open directory's descriptor.
        pub fn into_fd(self) -> std::os::fd::OwnedFd {
            self.0
        }

        /// The open directory itself, to watch (not whatever its path now
        /// names).
        pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
            use std::os::fd::AsFd;
            self.0.as_fd()
        }

        pub fn stamp(&self) -> Option<DirStamp> {
            let (_, m, c, dev, ino) = fields(&rfs::fstat(&self.0).ok()?);
            Some([dev, ino, ns(m.0, m.1), ns(c.0, c.1)])
        }

        /// The stamp of the file `name` in this directory.
        pub fn stat(&self, name: &OsStr) -> Stamp {
            stat_in(&self.0, name)
        }

        pub fn entries(&self) -> Entries {
            let mut out = Vec::new();
            let mut dir = match rfs::Dir::read_from(&self.0) {
                Ok(d) => d,
                Err(e) => return (out, Some(e.into())),
            };
            loop {
                let e = match dir.read() {
                    None => return (out, None),
                    Some(Err(e)) => return (out, Some(e.into())),
                    Some(Ok(e)) => e,
                };
                let name = e.file_name().to_bytes();
                if name == b"." || name == b".." {
                    continue;
                }
                let kind = match e.file_type() {
                    FileType::Unknown => {
                        rfs::statat(&self.0, e.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                            .map(|st| kind_of(FileType::from_raw_mode(st.st_mode)))
                            .map_err(std::io::Error::from)
                    }
                    t => Ok(kind_of(t)),
                };
                out.push((OsStr::from_bytes(name).to_os_string(), kind));
            }
        }
    }
}

/// `openat` of `rel` below `dir` with `flags`, no symbolic link followed on
/// the way, nor out of `dir`: one `openat2` with `RESOLVE_NO_SYMLINKS` and
/// `RESOLVE_BENEATH` on Linux; where that call is missing (an older kernel,
/// a filter refusing it), one directory at a time, each opened with
/// `O_NOFOLLOW`.
#[cfg(unix)]
pub fn open_beneath(
    dir: &std::os::fd::OwnedFd,
    rel: &std::path::Path,
    flags: rustix::fs::OFlags,
) -> rustix::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let flags = flags | OFlags::NOFOLLOW;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::ResolveFlags;
        let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH;
        match rustix::fs::openat2(dir, rel, flags, Mode::empty(), how) {
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {}
            r => return r,
        }
    }
    open_by_parts(dir, rel, flags)
}

/// [`open_beneath`] one directory at a time. `rel` is a path the walk
/// built from listed names: no `.`, `..` or root among its components.
#[cfg(unix)]
pub(crate) fn open_by_parts(
    dir: &std::os::fd::OwnedFd,
    rel: &std::path::Path,
    flags: rustix::fs::OFlags,
) -> rustix::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    use std::path::Component;
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p),
            // Nothing the walk builds; refused rather than resolved.
            _ => return Err(rustix::io::Errno::INVAL),
        }
    }
    let Some(last) = parts.pop() else {
        return Err(rustix::io::Errno::INVAL);
    };
    let mut held: Option<std::os::fd::OwnedFd> = None;
    for part in parts {
        let at = held.as_ref().unwrap_or(dir);
        let next = rustix::fs::openat(
            at,
            part,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        held = Some(next);
    }
    rustix::fs::openat(held.as_ref().unwrap_or(dir), last, flags, Mode::empty())
}

/// The walk's directories elsewhere than on Unix, by path through `std::fs`:
/// no stamp, so no listing is reused. Built in tests on Unix too, so it is
/// compiled and compared with the descriptor-based one there.
#[cfg(any(not(unix), test))]
mod by_path {
    use super::{Entries, Kind, Stamp};
    use crate::fs::stamp::{stamp_of, DirStamp};
    use std::ffi::OsStr;
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn open(path: &Path) -> std::io::Result<Dir> {
            std::fs::read_dir(path)?;
            Ok(Dir(path.to_path_buf()))
        }

        /// The directory at `rel` below this one. There is no descriptor to
        /// resolve it against here: the listing's own link check (§1.3) is
        /// all that stands between the walk and a link swapped in since.
        #[cfg_attr(all(unix, test), allow(dead_code))]
        pub fn open_below(&self, rel: &Path) -> std::io::Result<Dir> {
            Dir::open(&self.0.join(rel))
        }

        #[cfg_attr(all(unix, test), allow(dead_code))]
        pub fn try_clone(&self) -> std::io::Result<Dir> {
            Ok(Dir(self.0.clone()))
        }

        pub fn stamp(&self) -> Option<DirStamp> {
            None
        }

        pub fn stat(&self, name: &OsStr) -> Stamp {
            let m = std::fs::symlink_metadata(self.0.join(name)).ok()?;
            stamp_of(&m)
        }

        pub fn entries(&self) -> Entries {
            let mut out = Vec::new();
            let entries = match std::fs::read_dir(&self.0) {
                Ok(e) => e,
                Err(e) => return (out, Some(e)),
            };
            for e in entries {
                let e = match e {
                    Ok(e) => e,
                    Err(err) => return (out, Some(err)),
                };
                let kind = e.file_type().map(|t| {
                    if t.is_symlink() {
                        Kind::Symlink
                    } else if t.is_dir() {
                        Kind::Dir
                    } else if t.is_file() {
                        Kind::File
                    } else {
                        Kind::Other
                    }
                });
                out.push((e.file_name(), kind));
            }
            (out, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::stamp::stamp;
    use std::ffi::OsStr;
    use std::fs;
    use std::time::{Duration, UNIX_EPOCH};

    fn scratch(name: &str) -> crate::testing::Scratch {
        crate::testing::scratch_dir("dir", name)
    }

    #[test]
    fn a_file_is_stamped_alike_through_its_directory_and_its_path() {
        let d = scratch("stamps");
        let dir = by_descriptor::Dir::open(&d).unwrap();
        for (name, at) in [
            ("now.md", None),
            (
                "old.md",
                Some(UNIX_EPOCH + Duration::new(1_234_567_890, 123_456_789)),
            ),
            ("pre-epoch.md", UNIX_EPOCH.checked_sub(Duration::new(10, 5))),
        ] {
            fs::write(d.join(name), "text").unwrap();
            if let Some(t) = at {
                fs::File::options()
                    .write(true)
                    .open(d.join(name))
                    .unwrap()
                    .set_modified(t)
                    .unwrap();
            }
            let via_dir = dir.stat(OsStr::new(name));
            assert!(via_dir.is_some());
            assert_eq!(via_dir, stamp(&d.join(name)), "{name}");
        }
        assert_eq!(dir.stat(OsStr::new("missing.md")), None);
        assert_eq!(
            stamp(&d.join("old.md")).map(|s| s.1),
            Some(1_234_567_890_123_456_789)
        );
        // 10.000000005 s before the epoch: its nanoseconds' two's complement
        // (docs/spec.md §1.9: distinct times, distinct stamps).
        assert_eq!(
            stamp(&d.join("pre-epoch.md")).map(|s| s.1),
            Some(-10_000_000_005i64 as u64)
        );
    }

    /// The `std::fs` directories (used where there is no Unix) list the same
    /// entries, of the same kinds, with the same stamps, and never a
    /// directory stamp (so no listing is reused there).
    #[test]
    fn the_std_directories_agree_with_the_descriptor_ones() {
        let d = scratch("std-dirs");
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("a.md"), "text").unwrap();
        fs::write(d.join("b.txt"), "longer text").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.join("a.md"), d.join("link.md")).unwrap();
        let by_fd = by_descriptor::Dir::open(&d).unwrap();
        let by_path = by_path::Dir::open(&d).unwrap();
        assert!(by_path.stamp().is_none() && by_fd.stamp().is_some());
        let sorted = |(mut e, err): Entries| {
            assert!(err.is_none());
            e.sort_by(|a, b| a.0.cmp(&b.0));
            e.into_iter().map(|(n, k)| (n, k.ok())).collect::<Vec<_>>()
        };
        let listed = sorted(by_fd.entries());
        assert_eq!(listed, sorted(by_path.entries()));
        assert_eq!(listed.len(), 4);
        for (name, _) in &listed {
            assert_eq!(by_fd.stat(name), by_path.stat(name), "{name:?}");
        }
        assert!(by_path::Dir::open(&d.join("missing")).is_err());
    }
}
