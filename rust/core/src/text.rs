//! Text primitives of SPEC's preamble: white space, `trim`, `fold`, line
//! splitting, and the §1.2 id order. Everything else builds on these, so they
//! are written for speed (ASCII fast paths) and checked against the obvious
//! definitions in the unit tests below.

use std::cmp::Ordering;

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

/// Remove leading and trailing SPEC white space.
#[inline]
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_ws)
}

/// Query terms (SPEC §3.1): split on white space, empty pieces dropped.
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

/// ASCII white space as SPEC §3.1 splits on it (`\t \n \v \f \r` and space).
const fn ascii_ws_table() -> [bool; 128] {
    let mut t = [false; 128];
    let mut c = 0x09;
    while c <= 0x0D {
        t[c] = true;
        c += 1;
    }
    t[0x20] = true;
    t
}
static ASCII_WS: [bool; 128] = ascii_ws_table();

/// Call `f` with each white-space-delimited word of `s`, folded, as UTF-8
/// bytes. The index's hot loop: a run of ASCII word bytes is found with a
/// table lookup per byte and upper-cased in one pass; a word holding other
/// characters takes the general path (decode, fold, re-encode).
pub fn for_each_folded_word(s: &str, buf: &mut Vec<u8>, mut f: impl FnMut(&[u8])) {
    let b = s.as_bytes();
    let n = b.len();
    let mut i = 0;
    buf.clear();
    while i < n {
        // Skip ASCII white space.
        while i < n && b[i] < 0x80 && ASCII_WS[b[i] as usize] {
            i += 1;
        }
        let start = i;
        while i < n && b[i] < 0x80 && !ASCII_WS[b[i] as usize] {
            i += 1;
        }
        if i >= n || b[i] < 0x80 {
            // A word of ASCII bytes only (or nothing).
            if i > start {
                buf.clear();
                buf.extend(b[start..i].iter().map(u8::to_ascii_uppercase));
                f(buf);
            }
            continue;
        }
        // The word goes on with a non-ASCII character: fold it char by char
        // up to the next white space of any kind.
        buf.clear();
        buf.extend(b[start..i].iter().map(u8::to_ascii_uppercase));
        let mut rest = s[i..].char_indices();
        let mut end = n;
        for (k, c) in rest.by_ref() {
            if is_ws(c) {
                end = i + k;
                break;
            }
            let mut tmp = [0u8; 4];
            buf.extend_from_slice(fold_char(c).encode_utf8(&mut tmp).as_bytes());
        }
        if !buf.is_empty() {
            f(buf);
        }
        buf.clear();
        // Resume after the white-space character that ended the word.
        i = if end < n {
            end + s[end..].chars().next().map_or(1, char::len_utf8)
        } else {
            n
        };
    }
    buf.clear();
}

/// `contains_ci(h, n)`: `fold(n)` is a substring of `fold(h)`.
pub fn contains_ci(h: &str, n: &str) -> bool {
    let fh = fold(h);
    let fnn = fold(n);
    memchr::memmem::find(fh.as_bytes(), fnn.as_bytes()).is_some()
}

/// Lines of a text (SPEC §1.3): split on `\n`, one `\r` before each `\n`
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

/// SPEC §1.2 id order: segment lists compared element by element in ordinal
/// order, a prefix first. Works on ids and on relative paths alike.
///
/// Equivalent to comparing the UTF-8 bytes with `/` read as smaller than
/// every other byte (byte order is code point order for UTF-8). One pass, no
/// allocation.
pub fn id_cmp(a: &str, b: &str) -> Ordering {
    let key = |c: u8| if c == b'/' { 0 } else { u16::from(c) + 1 };
    let (x, y) = (a.as_bytes(), b.as_bytes());
    for (&p, &q) in x.iter().zip(y) {
        if p != q {
            return key(p).cmp(&key(q));
        }
    }
    x.len().cmp(&y.len())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn id_order_is_segment_order() {
        let ids = [
            "a", "a/b", "a-b", "a.b", "ab", "a/b/c", "a b", "B", "b/a", "ação", "a/ç", "-x", "x",
            "",
        ];
        for x in ids {
            for y in ids {
                let segs = x.split('/').cmp(y.split('/'));
                assert_eq!(id_cmp(x, y), segs, "{x:?} vs {y:?}");
            }
        }
    }

    #[test]
    fn id_order() {
        assert_eq!(id_cmp("a/b", "a-b"), Ordering::Less);
        assert_eq!(id_cmp("a", "a/b"), Ordering::Less);
        assert_eq!(id_cmp("a.b", "a"), Ordering::Greater);
        assert_eq!(id_cmp("B", "a"), Ordering::Less);
    }

    #[test]
    fn folded_words_equal_fold_then_split() {
        let samples = [
            "",
            "  a  b ",
            "Straße\u{3000}ıx\u{85}y",
            "ǅ\tß\u{a0}漢字 end",
            "x\u{200B}y",
        ];
        for s in samples {
            let mut got: Vec<String> = Vec::new();
            let mut buf = Vec::new();
            for_each_folded_word(s, &mut buf, |w| {
                got.push(String::from_utf8(w.to_vec()).unwrap())
            });
            let want: Vec<String> = split_ws(s).map(fold).collect();
            assert_eq!(got, want, "{s:?}");
        }
    }

    #[test]
    fn split_on_spec_white_space_only() {
        let v: Vec<&str> = split_ws(" a\u{3000}b\u{200B}c  ").collect();
        assert_eq!(v, vec!["a", "b\u{200B}c"]);
    }
}
