//! A bundle (SPEC §1): walk the directory, read every concept file in
//! parallel, keep concepts in id order with their diagnostics, and build the
//! per-field index once. A `Bundle` is an immutable snapshot.

use std::collections::HashMap;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::concept::{read_concept, split_frontmatter, Concept, Read, MAX_FILE_BYTES};
use crate::diagnostic::{Code, Diagnostic};
use crate::error::Error;
use crate::index::Index;
use crate::text::id_cmp;
use crate::yaml;

pub struct Bundle {
    pub root: PathBuf,
    pub concepts: Vec<Concept>,
    pub diagnostics: Vec<Diagnostic>,
    pub okf_version: Option<String>,
    pub index: Index,
    /// Rank of each concept's id in ordinal (code point) order — the
    /// cross-source tie-break of SPEC §5.4, which differs from id order.
    pub ordinal_rank: Vec<u32>,
    positions: HashMap<String, u32>,
}

/// A concept file found by the walk.
struct Found {
    id: String,
    path: String,
    abs: PathBuf,
    /// Why the id is unusable, when it is.
    bad_id: Option<&'static str>,
}

const BAD_CHAR: &str =
    "Concept file name contains a control character or a backslash; rename the file";
const BAD_UTF8: &str = "Concept file name is not valid UTF-8; rename the file";

fn name_problem(name: &std::ffi::OsStr) -> (String, Option<&'static str>) {
    match name.to_str() {
        None => (name.to_string_lossy().into_owned(), Some(BAD_UTF8)),
        Some(s)
            if s.chars()
                .any(|c| (c as u32) < 0x20 || c == '\u{7F}' || c == '\\') =>
        {
            (s.to_string(), Some(BAD_CHAR))
        }
        Some(s) => (s.to_string(), None),
    }
}

/// A directory still to list: absolute path, relative prefix (`a/b/`), and a
/// bad-name reason inherited from a parent.
type Pending = (PathBuf, String, Option<&'static str>);

/// Walk the tree without following symbolic links. Order does not matter
/// here: concepts and diagnostics are sorted by id afterwards. Only the root
/// failing to list is an error; below it, failures are diagnostics.
fn walk(root: &Path, files: &mut Vec<Found>, diags: &mut Vec<Diagnostic>) -> std::io::Result<()> {
    let entries = fs::read_dir(root)?;
    let mut stack = Vec::new();
    list(entries, "", None, &mut stack, files, diags);
    walk_dirs(stack, files, diags);
    Ok(())
}

fn walk_dirs(mut stack: Vec<Pending>, files: &mut Vec<Found>, diags: &mut Vec<Diagnostic>) {
    while let Some((dir, prefix, bad)) = stack.pop() {
        match fs::read_dir(&dir) {
            Ok(entries) => list(entries, &prefix, bad, &mut stack, files, diags),
            Err(e) => diags.push(Diagnostic::new(
                Code::UnreadableDirectory,
                format!("Directory could not be listed: {e}"),
                prefix.trim_end_matches('/'),
            )),
        }
    }
}

/// Sort one directory's entries into concept files, sub-directories to
/// visit, skipped symbolic links and ignored files.
fn list(
    entries: fs::ReadDir,
    prefix: &str,
    bad: Option<&'static str>,
    stack: &mut Vec<Pending>,
    files: &mut Vec<Found>,
    diags: &mut Vec<Diagnostic>,
) {
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                diags.push(Diagnostic::new(
                    Code::UnreadableDirectory,
                    format!("Directory could not be listed: {e}"),
                    prefix.trim_end_matches('/'),
                ));
                return;
            }
        };
        let os_name = entry.file_name();
        if os_name.as_encoded_bytes().first() == Some(&b'.') {
            continue;
        }
        let (name, name_bad) = name_problem(&os_name);
        let rel = format!("{prefix}{name}");
        let ft = match entry.file_type() {
            Ok(ft) => ft,
            Err(e) => {
                diags.push(Diagnostic::new(
                    Code::UnreadableFile,
                    format!("File could not be read: {e}"),
                    rel,
                ));
                continue;
            }
        };
        if ft.is_symlink() {
            diags.push(Diagnostic::new(
                Code::SymlinkSkipped,
                "Symbolic link not followed",
                rel,
            ));
        } else if ft.is_dir() {
            stack.push((entry.path(), format!("{rel}/"), bad.or(name_bad)));
        } else if ft.is_file() {
            let bytes = os_name.as_encoded_bytes();
            if !bytes.ends_with(b".md") || bytes == b"index.md" || bytes == b"log.md" {
                continue;
            }
            let id = rel[..rel.len() - 3].to_string();
            files.push(Found {
                id,
                path: rel,
                abs: entry.path(),
                bad_id: bad.or(name_bad),
            });
        }
    }
}

fn read_found(f: &Found) -> Read {
    let skip = |code, msg: String| Read {
        concept: None,
        diagnostics: vec![Diagnostic::new(code, msg, f.path.clone())],
    };
    if let Some(why) = f.bad_id {
        return skip(Code::InvalidConceptId, why.to_string());
    }
    let mut file = match fs::File::open(&f.abs) {
        Ok(file) => file,
        Err(e) => return skip(Code::UnreadableFile, format!("File could not be read: {e}")),
    };
    let too_large = |n: u64| format!("File is {n} bytes, over the 16 MiB limit for a concept file");
    if let Ok(meta) = file.metadata() {
        if meta.len() > MAX_FILE_BYTES {
            return skip(Code::FileTooLarge, too_large(meta.len()));
        }
    }
    let mut bytes = Vec::new();
    // Read one byte past the limit so a file that grew since `metadata` is
    // still caught without reading all of it.
    if let Err(e) = (&mut file).take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes) {
        return skip(Code::UnreadableFile, format!("File could not be read: {e}"));
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        let n = file.metadata().map_or(bytes.len() as u64, |m| m.len());
        return skip(Code::FileTooLarge, too_large(n));
    }
    read_concept(&f.id, &f.path, &bytes)
}

fn okf_version(root: &Path) -> Option<String> {
    let p = root.join("index.md");
    let meta = fs::symlink_metadata(&p).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let bytes = fs::read(&p).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let (lines, _) = split_frontmatter(text).ok()??;
    let map = yaml::parse(&lines).ok()?;
    yaml::get(&map, "okf_version")
        .and_then(yaml::Value::display)
        .map(str::to_string)
}

/// A signature of everything a load reads: each concept file's path, size
/// and modification time, the walk's own diagnostics, and the root
/// `index.md`. Equal fingerprints mean a reload would read the same files
/// unchanged (size and modification time are the change signal, as for
/// make and rsync). Only meaningful within one process.
pub fn fingerprint(root: &Path) -> Result<u64, Error> {
    use std::hash::{Hash, Hasher};
    let not_found = |reason: String| Error::BundleNotFound {
        path: root.display().to_string(),
        reason,
    };
    let mut found = Vec::new();
    let mut diagnostics = Vec::new();
    walk(root, &mut found, &mut diagnostics).map_err(|e| not_found(e.to_string()))?;
    let stamp = |p: &Path| {
        fs::symlink_metadata(p).ok().map(|m| {
            let t = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            (m.len(), t.map_or(0, |d| d.as_nanos()))
        })
    };
    let mut rows: Vec<(String, Option<(u64, u128)>)> = found
        .par_iter()
        .map(|f| (f.path.clone(), stamp(&f.abs)))
        .collect();
    rows.sort_unstable();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    rows.hash(&mut h);
    let mut walk_diags: Vec<(&str, &str)> = diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.path.as_str()))
        .collect();
    walk_diags.sort_unstable();
    walk_diags.hash(&mut h);
    stamp(&root.join("index.md")).hash(&mut h);
    Ok(h.finish())
}

impl Bundle {
    pub fn load(root: impl AsRef<Path>) -> Result<Bundle, Error> {
        let root = root.as_ref();
        let not_found = |reason: String| Error::BundleNotFound {
            path: root.display().to_string(),
            reason,
        };
        let meta = fs::metadata(root).map_err(|e| not_found(e.to_string()))?;
        if !meta.is_dir() {
            return Err(not_found("not a directory".into()));
        }
        let mut found = Vec::new();
        let mut diagnostics = Vec::new();
        walk(root, &mut found, &mut diagnostics).map_err(|e| not_found(e.to_string()))?;
        found.sort_by(|a, b| id_cmp(&a.id, &b.id));
        let reads: Vec<Read> = found.par_iter().map(read_found).collect();
        let mut concepts = Vec::with_capacity(reads.len());
        for r in reads {
            diagnostics.extend(r.diagnostics);
            concepts.extend(r.concept);
        }
        // Stable: one file's own diagnostics keep their order.
        diagnostics.sort_by(|a, b| id_cmp(&a.path, &b.path));
        let index = Index::build(&concepts);
        let positions = concepts
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.clone(), i as u32))
            .collect();
        let mut by_ordinal: Vec<u32> = (0..concepts.len() as u32).collect();
        by_ordinal.sort_unstable_by(|&a, &b| concepts[a as usize].id.cmp(&concepts[b as usize].id));
        let mut ordinal_rank = vec![0u32; concepts.len()];
        for (rank, &p) in by_ordinal.iter().enumerate() {
            ordinal_rank[p as usize] = rank as u32;
        }
        Ok(Bundle {
            root: root.to_path_buf(),
            concepts,
            diagnostics,
            okf_version: okf_version(root),
            index,
            ordinal_rank,
            positions,
        })
    }

    pub fn len(&self) -> usize {
        self.concepts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.concepts.is_empty()
    }

    pub fn position(&self, id: &str) -> Option<u32> {
        self.positions.get(id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("okfast-bundle-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_file_that_vanishes_before_reading_is_unreadable() {
        let d = scratch("vanish");
        let f = Found {
            id: "x".into(),
            path: "x.md".into(),
            abs: d.join("x.md"),
            bad_id: None,
        };
        let r = read_found(&f);
        assert!(r.concept.is_none());
        assert_eq!(r.diagnostics[0].code, Code::UnreadableFile);
        assert!(r.diagnostics[0]
            .message
            .starts_with("File could not be read: "));
        assert_eq!(r.diagnostics[0].severity(), "error");
    }

    #[test]
    fn a_directory_that_cannot_be_listed_is_reported_and_the_rest_walked() {
        let d = scratch("gone");
        fs::create_dir_all(d.join("ok")).unwrap();
        fs::write(d.join("ok/a.md"), "---\ntype: T\n---\n").unwrap();
        let stack = vec![
            (d.join("ok"), "ok/".to_string(), None),
            (d.join("gone"), "gone/".to_string(), None),
        ];
        let (mut files, mut diags) = (Vec::new(), Vec::new());
        walk_dirs(stack, &mut files, &mut diags);
        assert_eq!(files.len(), 1);
        assert_eq!(diags.len(), 1);
        assert_eq!(
            (diags[0].code, diags[0].path.as_str()),
            (Code::UnreadableDirectory, "gone")
        );
        assert_eq!(diags[0].severity(), "error");
    }

    #[test]
    fn every_code_has_a_name_and_a_severity() {
        for c in Code::ALL {
            assert!(!c.as_str().is_empty());
        }
        let warnings: Vec<&str> = Code::ALL
            .iter()
            .filter(|c| !c.is_error())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(
            warnings,
            ["MissingType", "MalformedStaleAfter", "SymlinkSkipped"]
        );
    }
}
