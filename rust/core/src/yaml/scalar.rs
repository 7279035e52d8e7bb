//! Scalars of the frontmatter subset: plain (lenient) and quoted, and the
//! constructs a scalar may not start with.

use super::*;

/// A plain scalar's value: its text (kept, not copied) unless it spells null.
pub(super) fn plain_value(text: String) -> Value {
    match text.as_str() {
        "" | "null" | "Null" | "NULL" | "~" => Value::Null,
        _ => Value::Str(text),
    }
}

pub(super) enum QErr {
    /// The closing quote is not in the text (or a line break comes first).
    Unterminated,
    InvalidEscape,
}

/// A quoted scalar starting at `s[0]` (`'` or `"`). Returns the text and the
/// bytes consumed, closing quote included. Its extent is found first (so an
/// unterminated scalar is reported as such even when it holds a bad escape),
/// then its escapes are read.
pub(super) fn quoted(s: &str) -> Result<(String, usize), QErr> {
    let used = quoted_len(s)?;
    Ok((unquote(s, used)?, used))
}

/// The bytes a quoted scalar starting at `s[0]` (`'` or `"`) takes, closing
/// quote included, without reading its escapes: where a mapping entry's
/// quoted key ends, which decides whether the line is an entry before its
/// key is read (docs/frontmatter-yaml.md, "Mapping entry").
pub(super) fn quoted_len(s: &str) -> Result<usize, QErr> {
    let b = s.as_bytes();
    let q = b[0];
    let mut i = 1;
    let end = loop {
        match b.get(i) {
            None | Some(b'\n') => return Err(QErr::Unterminated),
            Some(b'\\') if q == b'"' => {
                if matches!(b.get(i + 1), None | Some(b'\n')) {
                    return Err(QErr::Unterminated);
                }
                // A UTF-8 continuation byte is never a quote, backslash or
                // line break, so stepping by bytes is safe.
                i += 2;
            }
            Some(&c) if c == q => {
                if q == b'\'' && b.get(i + 1) == Some(&b'\'') {
                    i += 2;
                } else {
                    break i;
                }
            }
            Some(_) => i += 1,
        }
    };
    Ok(end + 1)
}

/// The text of the quoted scalar `s[..used]` ([`quoted_len`]), its escapes
/// read.
pub(super) fn unquote(s: &str, used: usize) -> Result<String, QErr> {
    let q = s.as_bytes()[0];
    let end = used - 1;
    let inner = &s[1..end];
    if q == b'\'' {
        return Ok(inner.replace("''", "'"));
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.char_indices();
    while let Some((_, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((j, e)) = chars.next() else {
            return Err(QErr::InvalidEscape);
        };
        let simple = match e {
            '0' => Some('\0'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            't' | '\t' => Some('\t'),
            'n' => Some('\n'),
            'v' => Some('\u{B}'),
            'f' => Some('\u{C}'),
            'r' => Some('\r'),
            'e' => Some('\u{1B}'),
            ' ' => Some(' '),
            '"' => Some('"'),
            '/' => Some('/'),
            '\\' => Some('\\'),
            'N' => Some('\u{85}'),
            '_' => Some('\u{A0}'),
            'L' => Some('\u{2028}'),
            'P' => Some('\u{2029}'),
            _ => None,
        };
        if let Some(ch) = simple {
            out.push(ch);
            continue;
        }
        let width = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => return Err(QErr::InvalidEscape),
        };
        let hex = inner.get(j + 1..j + 1 + width).ok_or(QErr::InvalidEscape)?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(QErr::InvalidEscape);
        }
        let cp = u32::from_str_radix(hex, 16).map_err(|_| QErr::InvalidEscape)?;
        out.push(char::from_u32(cp).ok_or(QErr::InvalidEscape)?);
        for _ in 0..width {
            chars.next();
        }
    }
    Ok(out)
}

pub(super) fn construct_error(c: char, line: usize) -> Option<String> {
    let what = match c {
        '&' => "YAML anchor (&)",
        '*' => "YAML alias (*)",
        '!' => "YAML tag (!)",
        _ => return None,
    };
    Some(format!("{what} at line {line} is not supported"))
}
