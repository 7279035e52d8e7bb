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

/// Walk the tree without following symbolic links. Order does not matter
/// here: concepts and diagnostics are sorted by id afterwards.
fn walk(
    root: &Path,
    files: &mut Vec<Found>,
    diags: &mut Vec<Diagnostic>,
) -> Result<(), std::io::Error> {
    // (absolute dir, relative prefix, a bad-name reason inherited from a parent)
    let mut stack: Vec<(PathBuf, String, Option<&'static str>)> =
        vec![(root.to_path_buf(), String::new(), None)];
    let mut first = true;
    while let Some((dir, prefix, bad)) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if first => return Err(e),
            Err(e) => {
                diags.push(Diagnostic::new(
                    Code::UnreadableDirectory,
                    format!("Directory could not be listed: {e}"),
                    prefix.trim_end_matches('/'),
                ));
                continue;
            }
        };
        first = false;
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    diags.push(Diagnostic::new(
                        Code::UnreadableDirectory,
                        format!("Directory could not be listed: {e}"),
                        prefix.trim_end_matches('/'),
                    ));
                    break;
                }
            };
            let os_name = entry.file_name();
            if os_name.as_encoded_bytes().first() == Some(&b'.') {
                continue;
            }
            let (name, name_bad) = name_problem(&os_name);
            let rel = format!("{prefix}{name}");
            let Ok(ft) = entry.file_type() else { continue };
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
    Ok(())
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
        Ok(Bundle {
            root: root.to_path_buf(),
            concepts,
            diagnostics,
            okf_version: okf_version(root),
            index,
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
