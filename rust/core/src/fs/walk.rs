//! The walk of a bundle's tree (docs/spec.md §1.1): every concept file in id order
//! with its size and modification time, the walk's own diagnostics, and what
//! each directory held — so that a reopen can take an unchanged directory's
//! entries from the cache file instead of listing it again.
//!
//! A recorded listing is reused only when the directory's device, inode,
//! modification time and status-change time are all as they were recorded,
//! and both times are older than the cache file by [`RACY_NS`](super::stamp::RACY_NS) (a change in
//! the same coarse timestamp tick as the listing could otherwise keep them).
//! Creating, removing or renaming an entry sets a directory's modification
//! time; setting that time back (`touch -d`, `rsync -t`) sets its
//! status-change time, which no call sets back. A directory's stamp is read
//! from the open directory *before* it is listed, so a recorded listing is
//! never older than its stamp. Only listings that raised nothing are
//! recorded: no diagnostic, no unusable name. Every file is still stat'ed
//! either way: a listing says which files there are, not whether they
//! changed. Elsewhere than on Unix no listing is ever reused.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::dir::{Dir, Kind};
use super::range::IdRange;
use super::read::RootDir;
use super::stamp::{DirStamp, Stamp};
use super::watch::Watch;
use crate::diagnostic::{Code, Diagnostic};
use crate::error::{os_text, Error};
use crate::progress::{Phase, Progress};
use crate::text::{entry_cmp, id_cmp};
/// A concept file found by the walk. Its path is the id plus `.md`: a name
/// that is not valid UTF-8 gets a lossy id, but also `bad_id`, and such a
/// file is never opened.
pub struct FileEntry {
    pub id: String,
    /// Why the id is unusable, when it is.
    pub bad_id: Option<&'static str>,
    /// Size and modification time when the walk saw it; `None` when the
    /// walk did not stat it ([`Stamps::Unopened`]) or could not.
    pub stamp: Stamp,
}

/// A directory as the walk met it, for the cache file: its prefix, its stamp
/// (when it could be read) and whether its listing raised nothing, and
/// whether each of its entries in id order — its concept files and
/// sub-directories, the files and directories of [`WalkResult`] in walk order —
/// is a directory.
pub struct DirRecord {
    pub prefix: String,
    pub stamp: Option<DirStamp>,
    pub plain: bool,
    pub kinds: Vec<bool>,
}

/// What a walk found: the concept files in id order, the walk's diagnostics,
/// every directory (the root first, each before what is below it, siblings
/// in id order), how many directories were listed (the rest reused
/// their recorded listing), and the root as the walk opened it, to read
/// the files found under (docs/spec.md §1.3).
pub struct WalkResult {
    pub found: Vec<FileEntry>,
    pub diagnostics: Vec<Diagnostic>,
    pub dirs: Vec<DirRecord>,
    pub listed: usize,
    pub root: RootDir,
}

/// A [`WalkResult`] under way: its files in runs (a directory's own files
/// between its sub-directories' runs), joined once at the end so a million
/// files are not copied again at every level of growth.
#[derive(Default)]
struct Part {
    runs: Vec<Vec<FileEntry>>,
    diagnostics: Vec<Diagnostic>,
    dirs: Vec<DirRecord>,
    listed: usize,
}

/// Directory listings recorded by an earlier walk (a cache file keeps
/// them): what a walk may reuse instead of listing a directory again.
pub trait RecordedListings: Sync {
    /// The entries recorded for the directory at `prefix` (`a/b/`; the
    /// root's is empty) in id order — whether each is a directory, and its
    /// name (a file's with its `.md`) — when the directory's stamp then was
    /// `now`; `None` when it was not, or nothing usable was recorded.
    fn entries(&self, prefix: &str, now: DirStamp) -> Option<Vec<(bool, &str)>>;
}

/// The recorded listings a walk may reuse, and the instant before which a
/// directory must have last changed for its listing to be reused.
pub struct Prior<'a> {
    pub listings: &'a dyn RecordedListings,
    pub trusted_before: u128,
}

impl Prior<'_> {
    /// The recorded entries of the directory at `prefix`, if its stamp is
    /// `now` and old enough, and its entries read back as names a listing
    /// could have given.
    fn entries(&self, prefix: &str, now: Option<DirStamp>) -> Option<Vec<(bool, &str)>> {
        let now = now?;
        let newest = u128::from(now[2].max(now[3]));
        if newest >= self.trusted_before {
            return None;
        }
        let entries = self.listings.entries(prefix, now)?;
        let usable = |&(dir, name): &(bool, &str)| {
            !name.is_empty()
                && !name.starts_with('.')
                && !name.contains(['/', '\0'])
                && name_problem(OsStr::new(name)).1.is_none()
                && (dir || is_concept_name(name.as_bytes()))
        };
        // A listing gives each entry once, sorted as the walk sorts what it
        // lists (docs/cache-format.md). Recorded entries out of that order
        // or repeated (only a forged cache file holds them) would give the
        // bundle an id twice or ids out of order, and a new cache file
        // written from the walk would keep them: the directory is listed.
        let in_order = || {
            entries
                .windows(2)
                .all(|w| entry_cmp(w[0], w[1]) == std::cmp::Ordering::Less)
        };
        (entries.iter().all(usable) && in_order()).then_some(entries)
    }
}

/// A directory's listing as a cache file records it: its prefix (`a/b/`,
/// the root's is empty), its stamp, and its entries in id order (whether
/// each is a directory, and its name; a file's name without its `.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirListing<'a> {
    pub prefix: &'a str,
    pub stamp: DirStamp,
    pub entries: Vec<(bool, &'a str)>,
}

const BAD_CHAR: &str =
    "Concept file name contains a control character or a backslash; rename the file";
const BAD_UTF8: &str = "Concept file name is not valid UTF-8; rename the file";

/// The name as text (lossy when it is not UTF-8; borrowed otherwise), and
/// why it cannot be part of a concept id, if it cannot.
fn name_problem(name: &OsStr) -> (std::borrow::Cow<'_, str>, Option<&'static str>) {
    match name.to_str() {
        None => (name.to_string_lossy(), Some(BAD_UTF8)),
        Some(s) => {
            let bad = s
                .bytes()
                .any(|c| c < 0x20 || c == 0x7F || c == b'\\')
                .then_some(BAD_CHAR);
            (std::borrow::Cow::Borrowed(s), bad)
        }
    }
}

/// Whether a regular file of this name is a concept file.
fn is_concept_name(name: &[u8]) -> bool {
    name.ends_with(b".md") && name != b"index.md" && name != b"log.md"
}

/// A directory still to walk: absolute path, relative prefix (`a/b/`), and a
/// bad-name reason inherited from a parent.
type Pending = (PathBuf, String, Option<&'static str>);

/// One directory entry worth keeping, with the id it sorts by.
enum Item {
    File(FileEntry),
    /// A sub-directory: its index in the list of pending directories.
    Dir(String, usize),
}

impl Item {
    fn key(&self) -> &str {
        match self {
            Item::File(f) => &f.id,
            Item::Dir(k, _) => k,
        }
    }
}

/// What one walk shares: the change watch, the progress, the listings it may
/// reuse.
struct Ctx<'a> {
    /// The bundle's root, open: every directory below it is opened
    /// relative to it, no link followed (docs/spec.md §1.3).
    root: &'a Dir,
    root_path: &'a Path,
    watch: &'a Watch,
    progress: &'a Progress,
    prior: Option<&'a Prior<'a>>,
    stamps: Stamps,
    /// The ids the walk is for: a directory holding none of them (nor
    /// named by one) is not walked, a file out of it is not stamped.
    range: &'a IdRange,
}

/// Which files the walk stamps (stats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamps {
    /// Every concept file: its stamp is compared with a record.
    All,
    /// Only files that will not be opened (a bad id): a load that reads
    /// every file stamps each one on the descriptor it reads it through
    /// (`fstat`), which costs less than a stat by name here and is exactly
    /// the file that was read.
    Unopened,
}

/// Walk `root` (which must be a readable directory), reusing what `prior`
/// recorded of unchanged directories: the concept files in id order, the
/// walk's own diagnostics and its directories. With [`Stamps::Unopened`] a
/// file with a usable id has no stamp (its reader takes it).
pub fn walk_sorted(
    root: &Path,
    watch: &Watch,
    progress: &Progress,
    prior: Option<&Prior<'_>>,
    stamps: Stamps,
) -> Result<WalkResult, Error> {
    walk_range(root, watch, progress, prior, stamps, &IdRange::default())
}

/// [`walk_sorted`] for a part of the bundle (docs/spec.md §1.10): what it
/// finds in `range` is what the whole walk finds there, but a directory whose
/// path and every path below it are out of `range` is not listed, and a file
/// out of it is not stamped. The caller keeps only what is in `range`
/// ([`IdRange::restrict`]): the rest of the result is incomplete.
pub fn walk_range(
    root: &Path,
    watch: &Watch,
    progress: &Progress,
    prior: Option<&Prior<'_>>,
    stamps: Stamps,
    range: &IdRange,
) -> Result<WalkResult, Error> {
    progress.start(Phase::Walk, 0);
    let not_found = |reason: String| Error::BundleNotFound {
        path: root.to_path_buf(),
        reason,
    };
    let meta = std::fs::metadata(root).map_err(|e| not_found(os_text(&e)))?;
    if !meta.is_dir() {
        return Err(not_found("not a directory".into()));
    }
    let base = Dir::open(root).map_err(|e| not_found(os_text(&e)))?;
    let dir = base.try_clone().map_err(|e| not_found(os_text(&e)))?;
    #[cfg(unix)]
    let opened = RootDir::opened(
        root,
        base.try_clone()
            .map_err(|e| not_found(os_text(&e)))?
            .into_fd(),
    );
    #[cfg(not(unix))]
    let opened = RootDir::path_only(root);
    let ctx = Ctx {
        root: &base,
        root_path: root,
        watch,
        progress,
        prior,
        stamps,
        range,
    };
    let part = walk_open(dir, root, "", None, &ctx);
    progress.check()?;
    let mut found = Vec::with_capacity(part.runs.iter().map(Vec::len).sum());
    part.runs.into_iter().for_each(|r| found.extend(r));
    let mut w = WalkResult {
        found,
        diagnostics: part.diagnostics,
        dirs: part.dirs,
        listed: part.listed,
        root: opened,
    };
    // The walk yields id order; should a name ever break that, sort (and
    // record no listing: the files are no longer in walk order).
    if !w.found.is_sorted_by(|a, b| id_cmp(&a.id, &b.id).is_le()) {
        w.found.par_sort_unstable_by(|a, b| id_cmp(&a.id, &b.id));
        w.dirs.iter_mut().for_each(|d| d.plain = false);
    }
    w.diagnostics
        .sort_by(|a, b| id_cmp(&a.path, &b.path).then_with(|| a.message.cmp(&b.message)));
    Ok(w)
}

/// Walk a pending directory: opened below the root, no link followed, then
/// watched (the open directory, not what its path names by then) before it
/// is listed, so no change can fall between the watch and what the walk
/// sees.
fn walk_dir(pending: Pending, ctx: &Ctx<'_>) -> Part {
    super::stack::grown(|| walk_dir_here(pending, ctx))
}

fn walk_dir_here((path, prefix, bad): Pending, ctx: &Ctx<'_>) -> Part {
    // A directory not walked is still one directory of the walk, with
    // nothing to record.
    let unwalked = |diagnostics| Part {
        diagnostics,
        dirs: vec![DirRecord {
            prefix: prefix.clone(),
            stamp: None,
            plain: false,
            kinds: Vec::new(),
        }],
        ..Part::default()
    };
    if ctx.progress.cancelled() {
        return unwalked(Vec::new());
    }
    let rel = path.strip_prefix(ctx.root_path).unwrap_or(&path);
    match ctx.root.open_below(rel) {
        Ok(dir) => {
            #[cfg(unix)]
            ctx.watch.add_open_dir(dir.fd(), &path);
            #[cfg(not(unix))]
            ctx.watch.add_dir(&path);
            walk_open(dir, &path, &prefix, bad, ctx)
        }
        Err(e) => {
            // Watched by path (no link followed) as before: a directory
            // that cannot be listed cannot be watched either, which turns
            // the fast check off rather than missing its changes.
            ctx.watch.add_dir(&path);
            unwalked(vec![unlistable(&prefix, &e)])
        }
    }
}

fn unlistable(prefix: &str, e: &std::io::Error) -> Diagnostic {
    Diagnostic::new(
        Code::UnreadableDirectory,
        format!("Directory could not be listed: {}", os_text(e)),
        prefix.trim_end_matches('/'),
    )
}

/// Walk the open directory `dir` at `path`: its entries in id order (from
/// its recorded listing when that can be reused, else listed and sorted),
/// its files stat'ed in parallel, its sub-directories walked in parallel and
/// spliced in at their place. Ids order with `/` lowest ([`id_cmp`]), so
/// every id under a sub-directory `s` sorts after the id `s` and before any
/// other entry of its parent: no global sort is needed. The directory is
/// closed before its sub-directories are walked, so a deep tree does not
/// hold a descriptor per level.
fn walk_open(
    dir: Dir,
    path: &Path,
    prefix: &str,
    bad: Option<&'static str>,
    ctx: &Ctx<'_>,
) -> Part {
    let stamp = dir.stamp();
    let mut subdirs: Vec<Pending> = Vec::new();
    let mut diagnostics = Vec::new();
    let reused = match ctx.prior {
        Some(p) if bad.is_none() => p.entries(prefix, stamp),
        _ => None,
    };
    let (items, plain, listed) = match reused {
        Some(entries) => {
            let items = from_listing(&dir, path, prefix, &entries, &mut subdirs, ctx.range);
            (items, true, 0)
        }
        None => {
            let (mut items, plain) = list(
                &dir,
                path,
                prefix,
                bad,
                (ctx.stamps, ctx.range),
                &mut subdirs,
                &mut diagnostics,
            );
            items.sort_unstable_by(|a, b| id_cmp(a.key(), b.key()));
            (items, plain && bad.is_none(), 1)
        }
    };
    drop(dir);
    let below: Vec<Part> = subdirs
        .into_par_iter()
        .map(|d| {
            if ctx.range.excludes_tree(d.1.trim_end_matches('/')) {
                Part::default()
            } else {
                walk_dir(d, ctx)
            }
        })
        .collect();
    let mut below: Vec<Option<Part>> = below.into_iter().map(Some).collect();
    let mut run = Vec::with_capacity(items.len() - below.len());
    let mut w = Part {
        runs: Vec::new(),
        diagnostics,
        dirs: vec![DirRecord {
            prefix: prefix.to_string(),
            stamp,
            plain,
            kinds: items.iter().map(|it| matches!(it, Item::Dir(..))).collect(),
        }],
        listed,
    };
    for it in items {
        match it {
            Item::File(f) => run.push(f),
            Item::Dir(_, k) => {
                if let Some(b) = below[k].take() {
                    if !run.is_empty() {
                        w.runs.push(std::mem::take(&mut run));
                    }
                    w.runs.extend(b.runs);
                    w.diagnostics.extend(b.diagnostics);
                    w.dirs.extend(b.dirs);
                    w.listed += b.listed;
                }
            }
        }
    }
    if !run.is_empty() {
        w.runs.push(run);
    }
    w
}

/// The items of a directory whose recorded `entries` are reused: each file
/// stat'ed (in parallel), each sub-directory added to `subdirs`.
fn from_listing(
    dir: &Dir,
    path: &Path,
    prefix: &str,
    entries: &[(bool, &str)],
    subdirs: &mut Vec<Pending>,
    range: &IdRange,
) -> Vec<Item> {
    let mut items: Vec<Item> = entries
        .iter()
        .map(|&(is_dir, name)| {
            if is_dir {
                let key = format!("{prefix}{name}/");
                subdirs.push((path.join(name), key.clone(), None));
                Item::Dir(key, subdirs.len() - 1)
            } else {
                let stem = &name[..name.len() - 3];
                let mut id = String::with_capacity(prefix.len() + stem.len());
                id.push_str(prefix);
                id.push_str(stem);
                Item::File(FileEntry {
                    id,
                    bad_id: None,
                    stamp: None,
                })
            }
        })
        .collect();
    items
        .par_iter_mut()
        .zip(entries)
        .with_min_len(256)
        .for_each(|(it, (_, name))| {
            if let Item::File(f) = it {
                if range.contains(&f.id) {
                    f.stamp = dir.stat(OsStr::new(name));
                }
            }
        });
    items
}

/// List a directory into concept files (stat'ed in parallel) and
/// sub-directories to visit (added to `subdirs`); skipped symbolic links and
/// what could not be read become diagnostics, other files are ignored.
/// Also whether the listing was plain: no diagnostic and no unusable name.
fn list(
    dir: &Dir,
    path: &Path,
    prefix: &str,
    bad: Option<&'static str>,
    (stamps, range): (Stamps, &IdRange),
    subdirs: &mut Vec<Pending>,
    diags: &mut Vec<Diagnostic>,
) -> (Vec<Item>, bool) {
    let (entries, failed) = dir.entries();
    let mut plain = true;
    if let Some(e) = failed {
        // Keep what was listed before the failure.
        diags.push(unlistable(prefix, &e));
        plain = false;
    }
    let mut items = Vec::new();
    let mut files: Vec<(OsString, FileEntry)> = Vec::new();
    for (os_name, kind) in entries {
        if os_name.as_encoded_bytes().first() == Some(&b'.') {
            continue;
        }
        let kind = match kind {
            Ok(k) => k,
            Err(e) => {
                let (name, _) = name_problem(&os_name);
                diags.push(Diagnostic::new(
                    Code::UnreadableFile,
                    format!("File could not be read: {}", os_text(&e)),
                    format!("{prefix}{name}"),
                ));
                plain = false;
                continue;
            }
        };
        let concept_file = kind == Kind::File && is_concept_name(os_name.as_encoded_bytes());
        if !concept_file && kind != Kind::Dir && kind != Kind::Symlink {
            continue;
        }
        let (name, name_bad) = name_problem(&os_name);
        plain &= name_bad.is_none();
        if kind == Kind::Symlink {
            diags.push(Diagnostic::new(
                Code::SymlinkSkipped,
                "Symbolic link not followed",
                format!("{prefix}{name}"),
            ));
            plain = false;
        } else if kind == Kind::Dir {
            let key = format!("{prefix}{name}/");
            items.push(Item::Dir(key.clone(), subdirs.len()));
            subdirs.push((path.join(&os_name), key, bad.or(name_bad)));
        } else {
            let mut id = String::with_capacity(prefix.len() + name.len() - 3);
            id.push_str(prefix);
            id.push_str(&name[..name.len() - 3]);
            let found = FileEntry {
                id,
                bad_id: bad.or(name_bad),
                stamp: None,
            };
            files.push((os_name, found));
        }
    }
    files
        .par_iter_mut()
        .with_min_len(256)
        .filter(|(_, f)| (stamps == Stamps::All || f.bad_id.is_some()) && range.contains(&f.id))
        .for_each(|(name, f)| f.stamp = dir.stat(name));
    items.extend(files.into_iter().map(|(_, f)| Item::File(f)));
    (items, plain)
}

/// The listings of `dirs` to record in a cache file, for a walk whose files
/// have the ids `ids` (in walk order): each directory with a stamp whose
/// listing was plain, with its entries named.
pub fn listings<'a>(dirs: &'a [DirRecord], ids: &[&'a str]) -> Vec<DirListing<'a>> {
    let mut out = Vec::new();
    let (mut next_file, mut next_dir) = (0usize, 0usize);
    // Replay the walk's order: a directory's entries, each sub-directory's
    // whole subtree where it sorts. The stack holds (directory, next entry).
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut entries: Vec<Vec<(bool, &'a str)>> = Vec::new();
    while next_dir < dirs.len() || !stack.is_empty() {
        let Some(&mut (d, ref mut at)) = stack.last_mut() else {
            // A new top-level tree (only the root, in a real walk).
            stack.push((next_dir, 0));
            entries.push(Vec::new());
            next_dir += 1;
            continue;
        };
        let here = &dirs[d];
        if *at == here.kinds.len() {
            stack.pop();
            let e = entries.pop().unwrap_or_default();
            if let (Some(stamp), true) = (here.stamp, here.plain) {
                out.push(DirListing {
                    prefix: &here.prefix,
                    stamp,
                    entries: e,
                });
            }
            continue;
        }
        let is_dir = here.kinds[*at];
        *at += 1;
        let top = entries.len() - 1;
        if is_dir {
            let Some(sub) = dirs.get(next_dir) else { break };
            let name = sub
                .prefix
                .get(here.prefix.len()..sub.prefix.len().saturating_sub(1))
                .unwrap_or("");
            entries[top].push((true, name));
            stack.push((next_dir, 0));
            entries.push(Vec::new());
            next_dir += 1;
        } else {
            let Some(id) = ids.get(next_file) else { break };
            next_file += 1;
            entries[top].push((false, id.get(here.prefix.len()..).unwrap_or("")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::{Duration, UNIX_EPOCH};

    fn scratch(name: &str) -> crate::testing::Scratch {
        crate::testing::scratch_dir("walk", name)
    }

    /// Listings recorded as a cache file records them (its files named with
    /// their `.md`; the cache tests check that a cache file reads them back).
    /// Per directory: its prefix, its stamp, its entries.
    type Listed = (String, DirStamp, Vec<(bool, String)>);

    struct Recorded(Vec<Listed>);

    impl RecordedListings for Recorded {
        fn entries(&self, prefix: &str, now: DirStamp) -> Option<Vec<(bool, &str)>> {
            let (_, stamp, entries) = self.0.iter().find(|(p, ..)| p == prefix)?;
            (*stamp == now).then(|| entries.iter().map(|(d, n)| (*d, n.as_str())).collect())
        }
    }

    fn recorded(dirs: &[DirListing<'_>]) -> Recorded {
        Recorded(
            dirs.iter()
                .map(|l| {
                    let entries = l
                        .entries
                        .iter()
                        .map(|&(dir, n)| {
                            (
                                dir,
                                if dir {
                                    n.to_string()
                                } else {
                                    format!("{n}.md")
                                },
                            )
                        })
                        .collect();
                    (l.prefix.to_string(), l.stamp, entries)
                })
                .collect(),
        )
    }

    fn walk(root: &Path, prior: Option<&Prior<'_>>) -> WalkResult {
        walk_sorted(
            root,
            &Watch::new(root),
            &Progress::default(),
            prior,
            Stamps::All,
        )
        .unwrap()
    }

    /// What a walk found, comparable: ids, stamps, diagnostics, directories.
    #[allow(clippy::type_complexity)]
    fn seen(
        w: &WalkResult,
    ) -> (
        Vec<(String, Stamp)>,
        Vec<(Code, String)>,
        Vec<(String, bool)>,
    ) {
        (
            w.found.iter().map(|f| (f.id.clone(), f.stamp)).collect(),
            w.diagnostics
                .iter()
                .map(|d| (d.code, d.path.clone()))
                .collect(),
            w.dirs.iter().map(|d| (d.prefix.clone(), d.plain)).collect(),
        )
    }

    fn ids(w: &WalkResult) -> Vec<&str> {
        w.found.iter().map(|f| f.id.as_str()).collect()
    }

    /// Set a path's modification time to `secs` after the epoch.
    fn set_mtime(p: &Path, secs: u64) {
        let f = fs::File::open(p).unwrap();
        f.set_modified(UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }

    fn tree(name: &str) -> crate::testing::Scratch {
        let d = scratch(name);
        for f in [
            "a/x.md",
            "a/y.md",
            "a/s/deep.md",
            "b/z.md",
            "top.md",
            "a-b.md",
        ] {
            fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
            fs::write(d.join(f), "---\ntype: T\n---\n").unwrap();
        }
        fs::write(d.join("a/notes.txt"), "ignored").unwrap();
        d
    }

    /// A walk's context with no recorded listings, stamping every file.
    fn plain_ctx<'a>(
        root: &'a Dir,
        root_path: &'a Path,
        (watch, progress): (&'a Watch, &'a Progress),
        range: &'a IdRange,
    ) -> Ctx<'a> {
        Ctx {
            root,
            root_path,
            watch,
            progress,
            prior: None,
            stamps: Stamps::All,
            range,
        }
    }

    /// A tree as deep as a path can name (docs/spec.md §1.1) is walked on
    /// the pool's 2 MiB worker stacks: one at ~930 levels overflowed them.
    #[test]
    fn a_tree_as_deep_as_a_path_can_name_is_walked() {
        let d = scratch("deep");
        let deep = d.join("d/".repeat(1800));
        fs::create_dir_all(&deep).unwrap();
        fs::write(deep.join("c.md"), "---\ntype: T\n---\n").unwrap();
        let w = walk(&d, None);
        let want = format!("{}c", "d/".repeat(1800));
        assert_eq!(ids(&w), vec![want.as_str()]);
        assert_eq!(w.dirs.len(), 1801);
    }

    #[test]
    fn a_directory_that_cannot_be_listed_is_reported_and_the_rest_walked() {
        let d = scratch("gone");
        fs::create_dir_all(d.join("ok")).unwrap();
        fs::write(d.join("ok/a.md"), "---\ntype: T\n---\n").unwrap();
        let (watch, progress) = (Watch::new(&d), Progress::default());
        let root = Dir::open(&d).unwrap();
        let range = IdRange::default();
        let ctx = plain_ctx(&root, &d, (&watch, &progress), &range);
        let ok = walk_dir((d.join("ok"), "ok/".into(), None), &ctx);
        let gone = walk_dir((d.join("gone"), "gone/".into(), None), &ctx);
        let files = |p: &Part| p.runs.iter().map(Vec::len).sum::<usize>();
        assert_eq!((files(&ok), files(&gone)), (1, 0));
        assert!(ok.diagnostics.is_empty());
        let diags = gone.diagnostics;
        assert_eq!(diags.len(), 1);
        assert_eq!(
            (diags[0].code, diags[0].path.as_str()),
            (Code::UnreadableDirectory, "gone")
        );
        assert_eq!(diags[0].severity(), "error");
        // Still one directory of the walk, with nothing to record.
        assert_eq!(gone.dirs.len(), 1);
        assert!(!gone.dirs[0].plain && gone.dirs[0].stamp.is_none());
    }

    /// docs/spec.md §1.3: a directory the walk listed, swapped for a link
    /// (itself or a parent) before the walk reaches it, is not listed
    /// through the link: names outside the bundle never reach the walk.
    #[cfg(unix)]
    #[test]
    fn a_directory_swapped_for_a_link_before_it_is_walked_is_not_followed() {
        let d = scratch("swapped");
        let outside = scratch("swapped-outside");
        fs::create_dir_all(outside.join("q")).unwrap();
        fs::write(outside.join("secret.md"), "---\ntype: T\n---\n").unwrap();
        fs::write(outside.join("q/secret.md"), "---\ntype: T\n---\n").unwrap();
        // As the walk left them: `sub` and `p/q` listed as directories,
        // then each (or its parent) replaced by a link to `outside`.
        std::os::unix::fs::symlink(&*outside, d.join("sub")).unwrap();
        std::os::unix::fs::symlink(&*outside, d.join("p")).unwrap();
        let (watch, progress) = (Watch::new(&d), Progress::default());
        let root = Dir::open(&d).unwrap();
        let range = IdRange::default();
        let ctx = plain_ctx(&root, &d, (&watch, &progress), &range);
        for (rel, prefix) in [("sub", "sub/"), ("p/q", "p/q/")] {
            let part = walk_dir((d.join(rel), prefix.into(), None), &ctx);
            assert_eq!(part.runs.iter().map(Vec::len).sum::<usize>(), 0, "{rel}");
            assert_eq!(part.diagnostics.len(), 1, "{rel}");
            assert_eq!(part.diagnostics[0].code, Code::UnreadableDirectory);
            assert_eq!(part.diagnostics[0].path, prefix.trim_end_matches('/'));
        }
        // Through the path, as the walk once opened it, both list `outside`.
        assert!(Dir::open(&d.join("sub")).is_ok() && Dir::open(&d.join("p/q")).is_ok());
    }

    #[test]
    fn the_walk_is_in_id_order_and_its_directories_replay_into_listings() {
        let d = tree("replay");
        let w = walk(&d, None);
        assert_eq!(
            ids(&w),
            ["a/s/deep", "a/x", "a/y", "a-b", "b/z", "top"],
            "'/' sorts lowest"
        );
        assert_eq!(w.listed, 4);
        let listed = listings(&w.dirs, &ids(&w));
        let got: Vec<(&str, Vec<(bool, &str)>)> = listed
            .iter()
            .map(|l| (l.prefix, l.entries.clone()))
            .collect();
        // Each directory after what is below it; files named without `.md`.
        assert_eq!(
            got,
            vec![
                ("a/s/", vec![(false, "deep")]),
                ("a/", vec![(true, "s"), (false, "x"), (false, "y")]),
                ("b/", vec![(false, "z")]),
                (
                    "",
                    vec![(true, "a"), (false, "a-b"), (true, "b"), (false, "top")]
                ),
            ]
        );
    }

    #[test]
    fn a_recorded_listing_is_reused_only_while_its_directory_is_unchanged() {
        let d = tree("reuse");
        let w = walk(&d, None);
        let ids = ids(&w);
        let mut dirs = listings(&w.dirs, &ids);
        // Tamper with what was recorded for `a/`: a file that is not there
        // (in id order, first) shows whether the recorded listing or the
        // directory was read.
        let a = dirs.iter_mut().find(|l| l.prefix == "a/").unwrap();
        a.entries.insert(0, (false, "ghost"));
        let rec = recorded(&dirs);
        let with = |trusted_before: u128| {
            let prior = Prior {
                listings: &rec,
                trusted_before,
            };
            walk(&d, Some(&prior))
        };
        let reused = with(u128::MAX);
        assert!(ids_of(&reused).contains(&"a/ghost".to_string()));
        assert_eq!(reused.listed, 0);
        let ghost = reused.found.iter().find(|f| f.id == "a/ghost").unwrap();
        assert_eq!(ghost.stamp, None, "every file is stat'ed");
        // Changed too recently (racy): listed again.
        let racy = with(0);
        assert!(!ids_of(&racy).contains(&"a/ghost".to_string()));
        assert_eq!(racy.listed, 4);
        assert_eq!(seen(&racy), seen(&w));
        // A file added to `a/` changes its stamp: listed again. Its time is
        // set apart explicitly, as a coarse clock may not have moved yet.
        fs::write(d.join("a/new.md"), "---\ntype: T\n---\n").unwrap();
        set_mtime(&d.join("a"), 1_000_000);
        let after = with(u128::MAX);
        assert!(!ids_of(&after).contains(&"a/ghost".to_string()));
        assert!(ids_of(&after).contains(&"a/new".to_string()));
        assert_eq!(after.listed, 1, "only a/ is listed");
        assert_eq!(seen(&after), seen(&walk(&d, None)));
    }

    /// A recorded listing repeating an entry or out of id order (a forged
    /// cache file whose checksums pass) is not reused: the directory is
    /// listed, so the walk finds each file once, in id order, as a fresh
    /// walk does (docs/spec.md §9.4).
    #[test]
    fn a_recorded_listing_out_of_order_or_repeating_is_not_reused() {
        let d = tree("order");
        let w = walk(&d, None);
        let ids = ids(&w);
        let fresh = seen(&w);
        let dirs = listings(&w.dirs, &ids);
        let root = dirs.iter().position(|l| l.prefix.is_empty()).unwrap();
        assert_eq!(
            dirs[root].entries,
            [(true, "a"), (false, "a-b"), (true, "b"), (false, "top")]
        );
        let forged: [&[(bool, &str)]; 4] = [
            &[(true, "a"), (false, "a-b"), (false, "a-b"), (false, "top")],
            &[(true, "a"), (false, "a-b"), (true, "b"), (true, "b")],
            &[(false, "a-b"), (true, "a"), (true, "b"), (false, "top")],
            &[(true, "a"), (false, "top"), (true, "b"), (false, "a-b")],
        ];
        for entries in forged {
            let mut dirs = dirs.clone();
            dirs[root].entries = entries.to_vec();
            let rec = recorded(&dirs);
            let prior = Prior {
                listings: &rec,
                trusted_before: u128::MAX,
            };
            let again = walk(&d, Some(&prior));
            assert_eq!(seen(&again), fresh, "{entries:?}");
            assert_eq!(again.listed, 1, "only the root is listed: {entries:?}");
        }
        // As recorded, every listing is reused.
        let rec = recorded(&dirs);
        let prior = Prior {
            listings: &rec,
            trusted_before: u128::MAX,
        };
        let again = walk(&d, Some(&prior));
        assert_eq!((seen(&again), again.listed), (fresh, 0));
    }

    fn ids_of(w: &WalkResult) -> Vec<String> {
        w.found.iter().map(|f| f.id.clone()).collect()
    }

    #[test]
    fn reused_listings_give_exactly_the_fresh_walk_after_changes() {
        let d = tree("exact");
        let record = |d: &Path| {
            let w = walk(d, None);
            let ids = ids(&w);
            recorded(&listings(&w.dirs, &ids))
        };
        let check = |d: &Path, rec: &Recorded, listed: usize| {
            let prior = Prior {
                listings: rec,
                trusted_before: u128::MAX,
            };
            let w = walk(d, Some(&prior));
            assert_eq!(seen(&w), seen(&walk(d, None)));
            assert_eq!(w.listed, listed);
        };
        let rec = record(&d);
        check(&d, &rec, 0);
        // Removed, renamed, a new directory, a changed file (its stamp is
        // the walk's to report, not the listing's).
        let mut t = 2_000_000;
        let mut bump = |p: &Path| {
            t += 1;
            set_mtime(p, t);
        };
        fs::remove_file(d.join("b/z.md")).unwrap();
        bump(&d.join("b"));
        fs::rename(d.join("a/x.md"), d.join("a/x2.md")).unwrap();
        bump(&d.join("a"));
        fs::create_dir(d.join("a/s/t")).unwrap();
        fs::write(d.join("a/s/t/n.md"), "x").unwrap();
        bump(&d.join("a/s"));
        fs::write(d.join("top.md"), "changed, longer").unwrap();
        check(&d, &rec, 4); // a/, a/s/, a/s/t/ (new) and b/
                            // A symbolic link or an odd name is a diagnostic: never recorded.
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(d.join("top.md"), d.join("b/link.md")).unwrap();
            bump(&d.join("b"));
            let w = walk(&d, None);
            let ids = ids(&w);
            let dirs = listings(&w.dirs, &ids);
            assert!(dirs.iter().all(|l| l.prefix != "b/"));
            assert!(dirs.iter().any(|l| l.prefix == "a/"));
            let rec = recorded(&dirs);
            check(&d, &rec, 1);
        }
    }
}
