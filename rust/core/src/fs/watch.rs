//! Change notification for a bundle's directories, so that checking an
//! unchanged bundle for freshness costs a queue read instead of a stat of
//! every file.
//!
//! On Linux each snapshot owns an inotify instance watching its root and every
//! directory below it. A directory's watch is added *before* the directory is
//! listed, so a change either happened before the listing (and the walk saw
//! it) or after the watch existed (and is queued). The kernel queues an event
//! during the very system call that changes a file, so a check that drains the
//! queue without blocking sees every change made before it. Anything that
//! makes the watch unreliable — no inotify, the instance or watch limit, a
//! queue overflow, an error — turns the fast check off and the caller falls
//! back to comparing sizes and modification times. Elsewhere there is no
//! watch and the fallback is always used.

use std::path::{Path, PathBuf};

/// At most this many changed files are listed; more means "compare them all".
pub const MAX_LISTED: usize = 4096;

/// What draining the queue found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    /// Nothing happened since the watch was set up or last drained.
    Quiet,
    /// Something happened to these files (absolute paths, possibly repeated);
    /// directories are as they were.
    Files(Vec<PathBuf>),
    /// A directory appeared, vanished or moved (its watches are stale), or
    /// events may have been lost: a new snapshot needs a new watch.
    Directories,
    /// No reliable watch: compare the files instead.
    Unknown,
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{Changes, MAX_LISTED};
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
    use std::io::ErrorKind;
    use std::os::fd::{AsRawFd, BorrowedFd};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Mutex, OnceLock};

    /// The inotify instances this process's snapshots hold now.
    static LIVE: AtomicUsize = AtomicUsize::new(0);

    /// How many instances the process's snapshots may hold at once: a
    /// quarter of the user's limit (`fs.inotify.max_user_instances`, 128 by
    /// default, shared by every process of the user), so a resolver over
    /// many sources leaves the other programs theirs (docs/spec.md §1.9).
    /// Past it a snapshot has no watch and its refreshes compare the files.
    pub(super) fn cap() -> usize {
        static CAP: OnceLock<usize> = OnceLock::new();
        *CAP.get_or_init(|| {
            std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
                .ok()
                .and_then(|t| t.trim().parse::<usize>().ok())
                .map_or(32, |n| (n / 4).max(1))
        })
    }

    /// One of `cap` instances counted by `live`, given back when dropped.
    pub(super) struct Slot(&'static AtomicUsize);

    impl Slot {
        pub(super) fn take(live: &'static AtomicUsize, cap: usize) -> Option<Slot> {
            live.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < cap).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(live))
        }
    }

    impl Drop for Slot {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::AcqRel);
        }
    }

    pub struct Watch {
        // Dropped after the instance it counts (fields drop in order).
        inotify: Mutex<Inotify>,
        watches: Watches,
        failed: AtomicBool,
        /// Every watched directory, by its watch descriptor.
        dirs: Mutex<Vec<(WatchDescriptor, PathBuf)>>,
        /// Every change drained so far: a snapshot's refreshes each see all
        /// the changes since its watch began, not only those no other
        /// refresh took first (docs/spec.md §1.9).
        seen: Mutex<Changes>,
        /// The root's path, and the device and inode it named before the
        /// watch began: a root that is a link retargeted, or a directory
        /// renamed away and another put at its path, leaves the watched
        /// directory quiet while the path names another one (§1.9).
        root: PathBuf,
        root_id: Option<(u64, u64)>,
        _slot: Slot,
    }

    fn identity(path: &Path) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }

    fn mask() -> WatchMask {
        WatchMask::MODIFY
            | WatchMask::ATTRIB
            | WatchMask::CLOSE_WRITE
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
    }

    impl Watch {
        pub fn new(root: &Path) -> Option<Watch> {
            // Before the watch and the walk: should the path change target
            // in between, the identity is the older one and the next drain
            // reports the change.
            let root_id = identity(root);
            let slot = Slot::take(&LIVE, cap())?;
            let inotify = Inotify::init().ok()?;
            let mut watches = inotify.watches();
            let wd = watches.add(root, mask()).ok()?;
            Some(Watch {
                inotify: Mutex::new(inotify),
                watches,
                failed: AtomicBool::new(false),
                dirs: Mutex::new(vec![(wd, root.to_path_buf())]),
                seen: Mutex::new(Changes::Quiet),
                root: root.to_path_buf(),
                root_id,
                _slot: slot,
            })
        }

        /// Watch the directory at `dir` below the root, its last component
        /// not followed should it be a link by now (the components above
        /// it are resolved as the path names them).
        pub fn add_dir(&self, dir: &Path) {
            let added = self
                .watches
                .clone()
                .add(dir, mask() | WatchMask::DONT_FOLLOW);
            self.record(added, dir);
        }

        /// Watch the open directory `fd`, whose path in the bundle is `dir`:
        /// through `/proc/self/fd`, which names the directory opened, not
        /// whatever `dir` names by now; by path where `/proc` is missing.
        pub fn add_open_dir(&self, fd: BorrowedFd<'_>, dir: &Path) {
            let own = format!("/proc/self/fd/{}", fd.as_raw_fd());
            match self.watches.clone().add(&own, mask()) {
                Ok(wd) => self.record(Ok(wd), dir),
                Err(_) => self.add_dir(dir),
            }
        }

        fn record(&self, added: std::io::Result<WatchDescriptor>, dir: &Path) {
            match added {
                Ok(wd) => match self.dirs.lock() {
                    Ok(mut d) => d.push((wd, dir.to_path_buf())),
                    Err(_) => self.failed.store(true, Ordering::Relaxed),
                },
                Err(_) => self.failed.store(true, Ordering::Relaxed),
            }
        }

        /// Judge the root by `other`'s identity of it, not this watch's
        /// own (a successor: the root its snapshot was read from).
        pub fn keep_root_of(&mut self, other: &Watch) {
            self.root_id = other.root_id;
        }

        pub fn dirs(&self) -> Option<Vec<PathBuf>> {
            if self.failed.load(Ordering::Relaxed) {
                return None;
            }
            let d = self.dirs.lock().ok()?;
            Some(d.iter().map(|(_, p)| p.clone()).collect())
        }

        pub fn drain(&self) -> Changes {
            if self.failed.load(Ordering::Relaxed) {
                return Changes::Unknown;
            }
            let Ok(mut inotify) = self.inotify.lock() else {
                return Changes::Unknown;
            };
            let Ok(dirs) = self.dirs.lock() else {
                return Changes::Unknown;
            };
            let Ok(mut kept) = self.seen.lock() else {
                return Changes::Unknown;
            };
            let mut buf = [0u8; 16 * 1024];
            let mut seen = std::mem::replace(&mut *kept, Changes::Quiet);
            loop {
                match inotify.read_events(&mut buf) {
                    Ok(events) => {
                        for e in events {
                            let dir_event = e.mask.contains(EventMask::ISDIR)
                                || e.mask.intersects(
                                    EventMask::Q_OVERFLOW
                                        | EventMask::IGNORED
                                        | EventMask::DELETE_SELF
                                        | EventMask::MOVE_SELF,
                                );
                            if dir_event || seen == Changes::Directories {
                                seen = Changes::Directories;
                                continue;
                            }
                            let dir = dirs.iter().find(|(wd, _)| *wd == e.wd);
                            seen = match (seen, dir, e.name) {
                                (Changes::Quiet, Some((_, d)), Some(n)) => {
                                    Changes::Files(vec![d.join(n)])
                                }
                                // A file changed again: listed once (the list
                                // is kept for the snapshot's life).
                                (Changes::Files(v), Some((_, d)), Some(n))
                                    if v.contains(&d.join(n)) =>
                                {
                                    Changes::Files(v)
                                }
                                (Changes::Files(mut v), Some((_, d)), Some(n))
                                    if v.len() < MAX_LISTED =>
                                {
                                    v.push(d.join(n));
                                    Changes::Files(v)
                                }
                                // Unnamed, unknown or too many: compare everything.
                                _ => Changes::Directories,
                            };
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if seen != Changes::Directories
                            && (self.root_id.is_none() || identity(&self.root) != self.root_id)
                        {
                            seen = Changes::Directories;
                        }
                        *kept = seen.clone();
                        return seen;
                    }
                    Err(_) => {
                        self.failed.store(true, Ordering::Relaxed);
                        return Changes::Unknown;
                    }
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Changes;
    use std::path::Path;

    pub struct Watch;

    impl Watch {
        pub fn new(_root: &Path) -> Option<Watch> {
            None
        }
        pub fn add_dir(&self, _dir: &Path) {}
        #[cfg(unix)]
        pub fn add_open_dir(&self, _fd: std::os::fd::BorrowedFd<'_>, _dir: &Path) {}
        pub fn keep_root_of(&mut self, _other: &Watch) {}
        pub fn dirs(&self) -> Option<Vec<std::path::PathBuf>> {
            None
        }
        pub fn drain(&self) -> Changes {
            Changes::Unknown
        }
    }
}

/// A bundle's change watch (possibly inactive).
pub struct Watch(Option<imp::Watch>);

impl Watch {
    /// Start watching `root` (before walking it).
    pub fn new(root: &Path) -> Watch {
        Watch(imp::Watch::new(root))
    }

    /// No watch at all: for a walk that keeps no snapshot.
    pub fn none() -> Watch {
        Watch(None)
    }

    /// Watch a directory below the root (before listing it). Thread-safe.
    pub fn add_dir(&self, dir: &Path) {
        if let Some(w) = &self.0 {
            w.add_dir(dir);
        }
    }

    /// Watch the open directory `fd` below the root, at `dir` (before
    /// listing it). Thread-safe.
    #[cfg(unix)]
    pub fn add_open_dir(&self, fd: std::os::fd::BorrowedFd<'_>, dir: &Path) {
        if let Some(w) = &self.0 {
            w.add_open_dir(fd, dir);
        }
    }

    /// Drain the queue: what changed since the watch began (every drain so
    /// far included, so concurrent refreshes of one snapshot each see all of
    /// it).
    pub fn drain(&self) -> Changes {
        self.0.as_ref().map_or(Changes::Unknown, imp::Watch::drain)
    }

    /// A new watch over the same directories as this one (root first), or
    /// `None` when this one is not reliable. Set it up *before* the final
    /// drain of this one: a change then lands in one queue or the other.
    pub fn successor(&self, root: &Path) -> Option<Watch> {
        let dirs = self.0.as_ref()?.dirs()?;
        let mut w = Watch::new(root);
        // The root this snapshot's files were read from, not what the path
        // names now: a retarget in between is then reported (§1.9).
        w.0.as_mut()?.keep_root_of(self.0.as_ref()?);
        for d in dirs.iter().skip(1) {
            w.add_dir(d);
        }
        w.0.as_ref()?.dirs()?;
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    use super::*;
    #[cfg(target_os = "linux")]
    use crate::fs::dir::Dir;
    #[cfg(target_os = "linux")]
    use std::fs;

    /// The process holds at most `cap` instances: one more is refused, and
    /// one given back can be taken again.
    #[cfg(target_os = "linux")]
    #[test]
    fn instances_past_the_cap_are_refused_until_one_is_given_back() {
        use std::sync::atomic::AtomicUsize;
        static COUNTED: AtomicUsize = AtomicUsize::new(0);
        let first = imp::Slot::take(&COUNTED, 2).unwrap();
        let _second = imp::Slot::take(&COUNTED, 2).unwrap();
        assert!(imp::Slot::take(&COUNTED, 2).is_none());
        drop(first);
        assert!(imp::Slot::take(&COUNTED, 2).is_some());
        assert!(imp::cap() >= 1);
    }

    /// An open directory is watched, not what its path names by then: a
    /// directory swapped for a link to one outside the bundle between its
    /// open and its watch still has the bundle's directory watched
    /// (docs/spec.md §1.3, §1.9).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_open_directory_is_watched_not_what_its_path_names_by_then() {
        let d = crate::testing::scratch_dir("watch", "open-dir");
        let outside = crate::testing::scratch_dir("watch", "open-dir-outside");
        fs::create_dir_all(d.join("sub")).unwrap();
        let dir = Dir::open(&d.join("sub")).unwrap();
        fs::rename(d.join("sub"), d.join("moved")).unwrap();
        std::os::unix::fs::symlink(&*outside, d.join("sub")).unwrap();
        let w = Watch::new(&d);
        assert_eq!(w.drain(), Changes::Quiet);
        w.add_open_dir(dir.fd(), &d.join("sub"));
        fs::write(outside.join("x.md"), "outside").unwrap();
        assert_eq!(w.drain(), Changes::Quiet, "nothing outside is watched");
        fs::write(d.join("moved/y.md"), "inside").unwrap();
        // Reported at the path the walk knew it by.
        assert_eq!(w.drain(), Changes::Files(vec![d.join("sub/y.md")]));
    }

    /// A root that is a link, retargeted: the directory watched stays quiet,
    /// but the path names another one, so the drain says to compare
    /// everything (docs/spec.md §1.9); so does a successor made after it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_root_link_retargeted_is_a_change() {
        let d = crate::testing::scratch_dir("watch", "retarget");
        fs::create_dir_all(d.join("a")).unwrap();
        fs::create_dir_all(d.join("b")).unwrap();
        std::os::unix::fs::symlink(d.join("a"), d.join("root")).unwrap();
        let w = Watch::new(&d.join("root"));
        assert_eq!(w.drain(), Changes::Quiet);
        std::os::unix::fs::symlink(d.join("b"), d.join("next")).unwrap();
        fs::rename(d.join("next"), d.join("root")).unwrap();
        // Made after the retarget, as a refresh racing it would.
        let next = w.successor(&d.join("root")).unwrap();
        assert_eq!(w.drain(), Changes::Directories);
        assert_eq!(
            w.drain(),
            Changes::Directories,
            "kept for the snapshot's life"
        );
        assert_eq!(next.drain(), Changes::Directories);
        let fresh = Watch::new(&d.join("root"));
        assert_eq!(fresh.drain(), Changes::Quiet);
        fs::remove_file(d.join("root")).unwrap();
        assert_eq!(
            fresh.drain(),
            Changes::Directories,
            "a root gone is a change"
        );
    }
}
