//! One concept file → a `Concept` or a skip, with its diagnostics
//! (docs/spec.md §1.3–1.4, §2.1–2.2). Pure function of the path and the
//! bytes, so it runs in parallel over a bundle's files.

use std::borrow::Cow;

use super::source::SourceText;
use super::stale::parse_stale_after;
use super::{Actor, Concept, Governance, Status, TrustTier};
use crate::diagnostic::{Code, Diagnostic};
use crate::text::{lines, trim};
use crate::yaml::{self, get, Value};

/// A concept's frontmatter source (its YAML lines joined with `\n`) parsed
/// again. This text parsed when the concept was read; it cannot fail now.
pub fn parse_frontmatter(src: &str) -> Vec<(String, Value)> {
    if src.is_empty() {
        return Vec::new();
    }
    yaml::parse_joined(src).unwrap_or_default()
}

/// The result of reading one file: the concept (unless skipped) and its
/// diagnostics in the documented order.
#[derive(Default)]
pub struct FileOutcome {
    pub concept: Option<Concept>,
    pub diagnostics: Vec<Diagnostic>,
}

/// docs/spec.md §1.4 `tags`: a sequence → the display text of its scalar items
/// (absent items skipped); a single scalar → a one-element list; else empty.
fn text_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Seq(items)) => items
            .iter()
            .filter_map(|v| v.display().map(str::to_string))
            .collect(),
        Some(Value::Str(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

fn display(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::display).map(str::to_string)
}

fn actor(map: &[(String, Value)]) -> Actor {
    Actor {
        by: display(get(map, "by")),
        at: display(get(map, "at")),
    }
}

/// The opening `---` has no closing line.
#[derive(Debug)]
pub struct Unterminated;

/// A concept file's text split: its frontmatter lines and its body.
pub type Split<'a> = (Vec<&'a str>, Cow<'a, str>);

/// Split a text into (frontmatter lines, body). `Ok(None)` = no frontmatter.
/// Lines are those of [`lines`]; the body is the lines after the closing
/// `---` joined with `\n`, one leading empty line dropped — a slice of
/// `text` unless it held a `\r`.
pub fn split_frontmatter(text: &str) -> Result<Option<Split<'_>>, Unterminated> {
    // Lines one at a time, each with the offset just past its `\n`.
    let mut at = 0usize;
    let mut next_line = || -> Option<(&str, usize)> {
        if at >= text.len() {
            return None;
        }
        let rest = &text[at..];
        let (line, len) = match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        at += len;
        Some((line.strip_suffix('\r').unwrap_or(line), at))
    };
    match next_line() {
        Some((first, _)) if trim(first) == "---" => {}
        _ => return Ok(None),
    }
    let mut fm = Vec::new();
    let after = loop {
        match next_line() {
            None => return Err(Unterminated),
            Some((l, end)) if trim(l) == "---" => break end,
            Some((l, _)) => fm.push(l),
        }
    };
    let rest = &text[after..];
    let body = if memchr::memchr(b'\r', rest.as_bytes()).is_none() {
        // Without `\r`, joining the lines gives the text minus one final `\n`.
        let b = rest.strip_suffix('\n').unwrap_or(rest);
        Cow::Borrowed(b.strip_prefix('\n').unwrap_or(b))
    } else {
        let body = lines(rest).join("\n");
        Cow::Owned(match body.strip_prefix('\n') {
            Some(b) => b.to_string(),
            None => body,
        })
    };
    Ok(Some((fm, body)))
}

/// Read a concept from its file bytes. The id and size checks come first and
/// belong to the caller (the walk); this does UTF-8, frontmatter and fields.
pub fn read_concept(id: &str, path: &str, bytes: &[u8]) -> FileOutcome {
    read_concept_from(id, path, bytes.to_vec())
}

/// [`read_concept`] that keeps the file's bytes as the concept's texts: the
/// body and frontmatter are slices of them, not copies (unless the file has
/// `\r` line ends).
pub fn read_concept_from(id: &str, path: &str, bytes: Vec<u8>) -> FileOutcome {
    let mut diagnostics = Vec::new();
    let skip = |code, msg: String| FileOutcome {
        concept: None,
        diagnostics: vec![Diagnostic::new(code, msg, path)],
    };
    let file = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return skip(
                Code::InvalidUtf8,
                format!(
                "File is not valid UTF-8 (first invalid byte at offset {}); re-save it as UTF-8",
                e.utf8_error().valid_up_to()
            ),
            )
        }
    };
    let text = file.strip_prefix('\u{FEFF}').unwrap_or(&file);
    // Where a slice of `file` starts in it.
    let offset = |s: &str| s.as_ptr() as usize - file.as_ptr() as usize;
    let (frontmatter, body, src) = match split_frontmatter(text) {
        Err(Unterminated) => {
            return skip(
                Code::InvalidFrontmatter,
                "Unterminated YAML frontmatter block".into(),
            )
        }
        Ok(None) => (Vec::new(), Cow::Borrowed(text), Cow::Borrowed("")),
        Ok(Some((fm_lines, body))) => {
            // The lines joined with `\n` are the file's own slice from the
            // first to the last when every line ended in a bare `\n`.
            let src = match (fm_lines.first(), fm_lines.last()) {
                (Some(a), Some(z)) => {
                    let span = offset(a)..offset(z) + z.len();
                    let joined = fm_lines.iter().map(|l| l.len() + 1).sum::<usize>() - 1;
                    if span.len() == joined {
                        Cow::Borrowed(&file[span])
                    } else {
                        Cow::Owned(fm_lines.join("\n"))
                    }
                }
                _ => Cow::Borrowed(""),
            };
            match yaml::parse_joined(&src) {
                Ok(m) => (m, body, src),
                Err(e) => {
                    return skip(
                        Code::InvalidFrontmatter,
                        format!("Invalid YAML frontmatter: {e}"),
                    )
                }
            }
        }
    };
    let fm = &frontmatter;
    let kind = display(get(fm, "type"));
    let kind = if kind.as_deref().is_none_or(|k| trim(k).is_empty()) {
        diagnostics.push(Diagnostic::new(
            Code::MissingType,
            "Concept has no 'type' in its frontmatter (OKF requires one)",
            path,
        ));
        None
    } else {
        kind
    };
    let tags = text_list(get(fm, "tags"));
    let governance = Governance {
        supersedes: text_list(get(fm, "supersedes")),
        superseded_by: text_list(get(fm, "superseded_by")),
        conflicts_with: text_list(get(fm, "conflicts_with")),
    };
    let governance = (governance != Governance::default()).then(|| Box::new(governance));
    let (status, status_known) = match get(fm, "status") {
        None | Some(Value::Null) => (Status::Stable, true),
        Some(Value::Str(s)) if s == "draft" => (Status::Draft, true),
        Some(Value::Str(s)) if s == "stable" => (Status::Stable, true),
        Some(Value::Str(s)) if s == "deprecated" => (Status::Deprecated, true),
        Some(_) => (Status::Stable, false),
    };
    let stale_after = match get(fm, "stale_after") {
        None | Some(Value::Null) => None,
        Some(Value::Str(s)) => {
            let t = parse_stale_after(s);
            if t.is_none() {
                diagnostics.push(Diagnostic::new(
                    Code::MalformedStaleAfter,
                    format!("stale_after \"{s}\" is not an ISO 8601 date or date-time; the concept is treated as never stale"),
                    path,
                ));
            }
            t
        }
        Some(_) => {
            diagnostics.push(Diagnostic::new(
                Code::MalformedStaleAfter,
                "stale_after is not a date; the concept is treated as never stale",
                path,
            ));
            None
        }
    };
    let generated = match get(fm, "generated") {
        Some(Value::Map(m)) => Some(actor(m)),
        // OKF v0.1 wrote `timestamp` where v0.2 writes `generated.at`.
        _ => display(get(fm, "timestamp")).map(|at| Actor {
            by: None,
            at: Some(at),
        }),
    };
    let verified: Vec<Actor> = match get(fm, "verified") {
        Some(Value::Seq(items)) => items
            .iter()
            .filter_map(|v| match v {
                Value::Map(m) => Some(actor(m)),
                _ => None,
            })
            .collect(),
        Some(Value::Map(m)) => vec![actor(m)],
        _ => Vec::new(),
    };
    let trust_tier = if verified.is_empty() {
        TrustTier::Unverified
    } else if verified
        .iter()
        .any(|a| a.by.as_deref().is_some_and(|b| b.starts_with("human:")))
    {
        TrustTier::HumanReviewed
    } else {
        TrustTier::MachineConfirmed
    };
    // Slices of the file's text keep it, whole, as the concept's texts.
    let span = |t: &Cow<'_, str>| match t {
        Cow::Borrowed("") => Some(0..0),
        Cow::Borrowed(t) => Some(offset(t)..offset(t) + t.len()),
        Cow::Owned(_) => None,
    };
    let texts = match (span(&src), span(&body)) {
        (Some(f), Some(b)) => SourceText::within(file, f, b),
        _ => SourceText::owned(&body, &src),
    };
    let concept = Concept {
        id: id.to_string(),
        kind,
        title: display(get(fm, "title")),
        description: display(get(fm, "description")),
        tags,
        resource: display(get(fm, "resource")),
        status,
        status_known,
        stale_after,
        generated,
        verified,
        trust_tier,
        authority: display(get(fm, "authority")),
        governance,
        source: texts,
    };
    FileOutcome {
        concept: Some(concept),
        diagnostics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_lists_are_in_declaration_order() {
        for (i, s) in Status::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
        }
        for (i, t) in TrustTier::ALL.iter().enumerate() {
            assert_eq!(*t as usize, i);
        }
    }

    fn read(src: &str) -> FileOutcome {
        read_concept("x", "x.md", src.as_bytes())
    }

    #[test]
    fn body_and_frontmatter_split() {
        let r = read("\u{FEFF}---\r\ntype: T\r\ntitle: Hi\r\n---\r\n\r\nBody\r\nline\r\n");
        let c = r.concept.unwrap();
        assert_eq!(c.title.as_deref(), Some("Hi"));
        assert_eq!(c.body().unwrap(), "Body\nline");
        assert!(r.diagnostics.is_empty());
        let c = read("no frontmatter\r\n").concept.unwrap();
        assert_eq!(c.body().unwrap(), "no frontmatter\r\n");
    }

    /// The plain reading of docs/spec.md §1.3: split into lines, find the closing
    /// `---`, join the rest.
    fn split_by_lines(text: &str) -> Result<Option<(Vec<&str>, String)>, Unterminated> {
        let ls = lines(text);
        if ls.is_empty() || trim(ls[0]) != "---" {
            return Ok(None);
        }
        let Some(end) = ls.iter().skip(1).position(|l| trim(l) == "---") else {
            return Err(Unterminated);
        };
        let body = ls[end + 2..].join("\n");
        let body = body.strip_prefix('\n').map_or(body.clone(), str::to_string);
        Ok(Some((ls[1..end + 1].to_vec(), body)))
    }

    /// A concept's texts are its frontmatter lines joined with `\n` and the
    /// body of [`split_by_lines`], whatever the line ends; with bare `\n`
    /// line ends they are slices of the file's own text, kept whole.
    #[test]
    fn texts_are_the_split_parts_and_slices_of_the_file_when_they_can_be() {
        let files = [
            ("---\ntype: a\nt: [x,\n  y]\n---\n\nBody\n\nmore\n", true),
            ("\u{FEFF}---\ntype: a\n---\nBody", true),
            ("---\n---\nBody\n", true),
            ("---\ntype: a\n---\n", true),
            ("no frontmatter\nat all\n", true),
            ("", true),
            ("---\r\ntype: a\r\n---\r\nBody\r\nmore", false),
            ("---\ntype: a\r\n---\nBody\n", true),
            ("---\ntype: a\r\nb: c\n---\nBody\n", false),
            ("---\ntype: a\n---\nBo\rdy\n", false),
        ];
        for (file, sliced) in files {
            let r = read_concept_from("x", "x.md", file.as_bytes().to_vec());
            let c = r.concept.as_ref().expect("a concept");
            let t = c.source.read().unwrap();
            let text = file.strip_prefix('\u{FEFF}').unwrap_or(file);
            let (fm, body) = match split_by_lines(text).unwrap() {
                Some((lines, body)) => (lines.join("\n"), body),
                None => (String::new(), text.to_string()),
            };
            assert_eq!(
                (&*t.frontmatter, &*t.body),
                (fm.as_str(), body.as_str()),
                "{file:?}"
            );
            match &c.source {
                SourceText::Owned { text, .. } => assert_eq!(text == file, sliced, "{file:?}"),
                SourceText::Stored { .. } => panic!("a read concept's texts are in memory"),
            }
        }
    }

    #[test]
    fn split_agrees_with_the_line_by_line_reading() {
        let parts = ["---", " --- ", "a: 1", "", "\r", "x\ry", "body", "---x"];
        let seps = ["\n", "\r\n", "\r"];
        // Every text of up to five parts joined by any separators, with or
        // without a final separator.
        let mut texts = vec![String::new()];
        for _ in 0..5 {
            let mut next = Vec::new();
            for t in &texts {
                for p in parts {
                    for sep in seps {
                        next.push(format!("{t}{p}{sep}"));
                    }
                    next.push(format!("{t}{p}"));
                }
            }
            next.retain(|t| t.starts_with("---") || t.len() < 6);
            next.truncate(20_000);
            texts.extend(next);
        }
        for t in &texts {
            let (a, b) = (split_frontmatter(t), split_by_lines(t));
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{t:?}");
        }
    }

    #[test]
    fn skip_codes() {
        let r = read_concept("x", "x.md", b"---\ntype: a\n\xff\n---\n");
        assert_eq!(r.diagnostics[0].code, Code::InvalidUtf8);
        assert!(r.diagnostics[0].message.contains("offset 12"));
        assert_eq!(
            read("---\ntype: a\n").diagnostics[0].code,
            Code::InvalidFrontmatter
        );
        let r = read("---\na: &x 1\n---\n");
        assert_eq!(
            r.diagnostics[0].message,
            "Invalid YAML frontmatter: YAML anchor (&) at line 1 is not supported"
        );
        assert!(r.concept.is_none());
    }

    #[test]
    fn fields_and_warnings() {
        let r = read("---\ntitle: 2024\ntags: solo\nstatus: weird\nstale_after: soon\nverified:\n  by: tool:x\n  at: now\ntimestamp: t0\n---\nb");
        let c = r.concept.unwrap();
        let codes: Vec<Code> = r.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, vec![Code::MissingType, Code::MalformedStaleAfter]);
        assert_eq!(c.title.as_deref(), Some("2024"));
        assert_eq!(c.tags, vec!["solo"]);
        assert_eq!((c.status, c.status_known), (Status::Stable, false));
        assert_eq!(c.trust_tier, TrustTier::MachineConfirmed);
        assert_eq!(
            c.generated,
            Some(Actor {
                by: None,
                at: Some("t0".into())
            })
        );
    }
}
