//! Text primitives of docs/spec.md's preamble: white space, `trim`, `fold`,
//! line splitting; the folded word scan the index is built with
//! ([`words`]); and the §1.2 id order ([`id`]). Everything else builds on
//! these, so they are written for speed (ASCII fast paths) and checked
//! against the obvious definitions in the unit tests.

pub mod analyze;
mod id;
mod words;

pub use id::{entry_cmp, id_cmp, id_cmp_bytes};
pub use words::for_each_folded_word;

/// SPEC's white space: exactly Unicode `White_Space` (not Rust's
/// `char::is_whitespace`'s set, which is the same today, but the contract is
/// the list, so the list is spelled out).
#[inline]
pub fn is_ws(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'..='\u{000D}'
            | '\u{0020}'
            | '\u{0085}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

/// Every character of the white-space set ([`is_ws`]), in code point order:
/// for the bindings, so Python splits on exactly the set the core does.
pub const WHITE_SPACE: &str = "\u{9}\u{A}\u{B}\u{C}\u{D}\u{20}\u{85}\u{A0}\u{1680}\
    \u{2000}\u{2001}\u{2002}\u{2003}\u{2004}\u{2005}\u{2006}\u{2007}\u{2008}\u{2009}\u{200A}\
    \u{2028}\u{2029}\u{202F}\u{205F}\u{3000}";

/// Remove leading and trailing SPEC white space.
#[inline]
pub fn trim(s: &str) -> &str {
    // By bytes while the ends are ASCII (nearly every line of a frontmatter,
    // trimmed once a line and again per value): a byte of 0x80 or more at an
    // end may belong to a white-space character, and then the character
    // scan decides.
    let b = s.as_bytes();
    let ascii_ws = |c: u8| matches!(c, b'\t'..=b'\r' | b' ');
    let mut lo = 0;
    while lo < b.len() && ascii_ws(b[lo]) {
        lo += 1;
    }
    let mut hi = b.len();
    while hi > lo && ascii_ws(b[hi - 1]) {
        hi -= 1;
    }
    if lo < hi && (b[lo] >= 0x80 || b[hi - 1] >= 0x80) {
        return s.trim_matches(is_ws);
    }
    &s[lo..hi]
}

/// Query terms (docs/spec.md §3.1): split on white space, empty pieces dropped.
pub fn split_ws(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_ws).filter(|p| !p.is_empty())
}

/// `fold(c)`: the simple uppercase when Unicode's uppercase is one character.
#[inline]
pub fn fold_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// `fold(s)`, appended to `out` (so callers can reuse one buffer).
pub fn fold_into(s: &str, out: &mut String) {
    if s.is_ascii() {
        out.reserve(s.len());
        // SAFETY-free fast path: ASCII upper-casing keeps the bytes ASCII.
        for b in s.bytes() {
            out.push(b.to_ascii_uppercase() as char);
        }
        return;
    }
    out.reserve(s.len());
    for c in s.chars() {
        out.push(fold_char(c));
    }
}

pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    fold_into(s, &mut out);
    out
}

/// `contains_ci(h, n)`: `fold(n)` is a substring of `fold(h)`.
pub fn contains_ci(h: &str, n: &str) -> bool {
    let fh = fold(h);
    let fnn = fold(n);
    memchr::memmem::find(fh.as_bytes(), fnn.as_bytes()).is_some()
}

/// Lines of a text (docs/spec.md §1.3): split on `\n`, one `\r` before each `\n`
/// removed, no empty line after a final `\n`.
pub fn lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(i) => {
                let line = &rest[..i];
                out.push(line.strip_suffix('\r').unwrap_or(line));
                rest = &rest[i + 1..];
            }
            None => {
                out.push(rest);
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    /// The byte path of [`trim`] gives what trimming by characters gives, on
    /// text mixing ASCII, white space of every kind and other characters.
    #[test]
    fn trim_is_trimming_by_characters() {
        let alphabet: Vec<char> = WHITE_SPACE
            .chars()
            .chain("ab-:é\u{80}\u{2000}\u{3001}日".chars())
            .collect();
        let mut rng = Rng(0x7121);
        for _ in 0..20_000 {
            let len = rng.below(7);
            let s: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            assert_eq!(trim(&s), s.trim_matches(is_ws), "{s:?}");
        }
    }

    #[test]
    fn white_space_set_is_the_spec_list() {
        let listed: Vec<u32> = (0x9..=0xD)
            .chain([0x20, 0x85, 0xA0, 0x1680])
            .chain(0x2000..=0x200A)
            .chain([0x2028, 0x2029, 0x202F, 0x205F, 0x3000])
            .collect();
        for cp in 0..=0x10FFFFu32 {
            if let Some(c) = char::from_u32(cp) {
                assert_eq!(is_ws(c), listed.contains(&cp), "U+{cp:04X}");
            }
        }
    }

    #[test]
    fn the_exported_white_space_set_is_the_one_split_on() {
        let listed: Vec<char> = WHITE_SPACE.chars().collect();
        let all: Vec<char> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| is_ws(c))
            .collect();
        assert_eq!(listed, all);
    }

    #[test]
    fn fold_keeps_length_and_uses_simple_uppercase() {
        assert_eq!(fold("ß"), "ß");
        assert_eq!(fold("ı"), "I");
        assert_eq!(fold("ς"), "Σ");
        assert_eq!(fold("straße"), "STRAßE");
        assert_eq!(fold("ǆ"), "Ǆ");
        for s in ["ﬁ", "ŉ", "ΐ"] {
            // Multi-character uppercases stay as they are.
            assert_eq!(fold(s), s);
        }
        assert!(contains_ci("Reorder now", "ORDER"));
        assert!(!contains_ci("ß", "SS"));
    }

    #[test]
    fn lines_follow_spec() {
        assert_eq!(lines(""), Vec::<&str>::new());
        assert_eq!(lines("a\r\nb\n"), vec!["a", "b"]);
        assert_eq!(lines("a\n\n"), vec!["a", ""]);
        assert_eq!(lines("a\rb\r"), vec!["a\rb\r"]);
        assert_eq!(lines("\n"), vec![""]);
    }

    #[test]
    fn split_on_spec_white_space_only() {
        let v: Vec<&str> = split_ws(" a\u{3000}b\u{200B}c  ").collect();
        assert_eq!(v, vec!["a", "b\u{200B}c"]);
    }
}
