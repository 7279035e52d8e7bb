//! The frontmatter YAML subset of `docs/frontmatter-yaml.md`: block mappings
//! and sequences, flow collections, quoted, plain (lenient) and block scalars;
//! anchors, aliases, tags, directives and document markers rejected with the
//! line. The doc is the contract; `tests/reference.py` implements it again in
//! Python and the property tests hold the two together.
//!
//! Every collection costs one level and the depth is capped at 64, so the
//! recursion here is bounded; every loop advances a line or a byte, so a
//! frontmatter of any size parses in linear time.

mod block;
mod flow;
mod scalar;

pub use block::{parse, parse_joined};

use std::collections::HashSet;

use crate::text::{is_ws, trim};

/// A parsed value. Mappings keep file order; the first duplicate key wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Str(String),
    Seq(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl Value {
    /// docs/spec.md §1.4 display text: a string's text; null, sequences and mappings
    /// are absent.
    pub fn display(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Look a key up in a parsed mapping.
pub fn get<'v>(map: &'v [(String, Value)], key: &str) -> Option<&'v Value> {
    map.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

pub const MAX_DEPTH: usize = 64;

type Res<T> = Result<T, String>;

fn at(what: &str, line: usize) -> String {
    format!("{what} at line {line}")
}

fn indent_of(raw: &str) -> usize {
    raw.bytes().take_while(|&b| b == b' ').count()
}

fn is_ignorable(raw: &str) -> bool {
    let t = trim(raw);
    t.is_empty() || t.starts_with('#')
}

fn is_seq_start(c: &str) -> bool {
    c == "-" || c.starts_with("- ") || c.starts_with("-\t")
}

/// A tail after a quoted scalar or flow collection: nothing, or a comment
/// that is separated from what precedes it.
fn tail_ok(tail: &str) -> bool {
    let u = tail.trim_start_matches([' ', '\t']);
    u.is_empty() || (u.starts_with('#') && u.len() < tail.len())
}

/// Cut a plain scalar's line at its first ` #` / tab-`#` comment.
fn cut_comment(s: &str) -> (&str, bool) {
    let b = s.as_bytes();
    for i in 1..b.len() {
        if b[i] == b'#' && (b[i - 1] == b' ' || b[i - 1] == b'\t') {
            return (&s[..i], true);
        }
    }
    (s, false)
}

/// The keys of a mapping being parsed, so the first of a repeated key wins.
/// A mapping's keys are compared one by one while it is small (frontmatter
/// mappings hold a dozen keys, where hashing each costs more than the
/// comparisons); past [`Keys::SMALL`] a hash set keeps a mapping of many
/// thousands of keys linear.
#[derive(Default)]
struct Keys {
    set: Option<HashSet<String>>,
}

impl Keys {
    const SMALL: usize = 16;

    /// Add `(key, value)` to `entries` unless `key` is already there.
    fn push_first(&mut self, entries: &mut Vec<(String, Value)>, key: String, value: Value) {
        let new = match &mut self.set {
            Some(set) => set.insert(key.clone()),
            None => !entries.iter().any(|(k, _)| *k == key),
        };
        if new {
            entries.push((key, value));
            if self.set.is_none() && entries.len() > Self::SMALL {
                self.set = Some(entries.iter().map(|(k, _)| k.clone()).collect());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(src: &str) -> Result<Vec<(String, Value)>, String> {
        let lines: Vec<&str> = src.split('\n').collect();
        parse(&lines)
    }
    fn s(x: &str) -> Value {
        Value::Str(x.into())
    }
    fn one(src: &str, key: &str) -> Value {
        let m = p(src).unwrap();
        get(&m, key).cloned().unwrap()
    }

    #[test]
    fn lenient_plain_scalar() {
        assert_eq!(
            one("description: Step 1: do it", "description"),
            s("Step 1: do it")
        );
        assert_eq!(one("a: x # note", "a"), s("x"));
        assert_eq!(one("a: x#y", "a"), s("x#y"));
        assert_eq!(one("a: ~", "a"), Value::Null);
        assert_eq!(one("a:", "a"), Value::Null);
        assert_eq!(one("a: 'null'", "a"), s("null"));
        assert_eq!(one("a: 0012", "a"), s("0012"));
    }

    #[test]
    fn a_quoted_key_is_read_once_its_colon_is_found() {
        // No `:` after it: no entry, whatever its escapes hold.
        assert_eq!(
            p("a: 1\n\"\\q\"").unwrap_err(),
            "expected 'key: value' at line 2"
        );
        assert_eq!(
            p("a: 1\n\"\\q\": 2").unwrap_err(),
            "invalid escape sequence at line 2"
        );
        assert_eq!(one("a: 1\n\"\\tq\": 2", "\tq"), s("2"));
    }

    #[test]
    fn a_first_line_of_white_space_only_is_no_piece_of_a_plain_scalar() {
        assert_eq!(
            one("title: \u{a0}\n  Hello\n  World", "title"),
            s("Hello World")
        );
        assert_eq!(one("title: \u{a0}\n\n  Hello", "title"), s("Hello"));
        assert_eq!(one("title: \u{a0}", "title"), Value::Null);
    }

    #[test]
    fn a_sequence_item_at_a_mappings_indent_is_no_key() {
        // One column left of its list: refused, not the key `- by`.
        assert_eq!(
            p("verified:\n  - by: alice\n- by: bob\n  at: x").unwrap_err(),
            "expected 'key: value' at line 3"
        );
        assert_eq!(
            p("title: x\n- url: http://a").unwrap_err(),
            "expected 'key: value' at line 2"
        );
        // The value of the key before it, at the same indent, still reads.
        let tags = one("tags:\n- a: 1\n- b\nnext: 2", "tags");
        assert_eq!(
            tags,
            Value::Seq(vec![Value::Map(vec![("a".into(), s("1"))]), s("b")])
        );
    }

    #[test]
    fn a_compact_node_starting_with_white_space_is_refused() {
        assert_eq!(
            p("k:\n- \u{a0}by: x").unwrap_err(),
            "invalid indentation character at line 2"
        );
    }

    #[test]
    fn multi_line_plain() {
        assert_eq!(
            one("d: one\n  two\n\n  three\nb: 1", "d"),
            s("one two\nthree")
        );
    }

    #[test]
    fn sequences_and_flow() {
        assert_eq!(
            one("t: [a, 'b c', \"d\"]", "t"),
            Value::Seq(vec![s("a"), s("b c"), s("d")])
        );
        assert_eq!(
            one("t:\n- a\n- b\nx: 1", "t"),
            Value::Seq(vec![s("a"), s("b")])
        );
        assert_eq!(
            one("t:\n  - a\n  -\n    - b", "t"),
            Value::Seq(vec![s("a"), Value::Seq(vec![s("b")])])
        );
        assert_eq!(
            one("g: { by: human:k@a, at: 2026-06-30T14:00:00Z }", "g"),
            Value::Map(vec![
                ("by".into(), s("human:k@a")),
                ("at".into(), s("2026-06-30T14:00:00Z"))
            ])
        );
        assert_eq!(
            one("t: [a,\n  b]\nx: 1", "t"),
            Value::Seq(vec![s("a"), s("b")])
        );
        assert!(p("t: [a, b")
            .unwrap_err()
            .contains("unterminated flow collection at line 1"));
        assert!(p("t: [a,,b]")
            .unwrap_err()
            .contains("invalid flow collection"));
    }

    #[test]
    fn compact_mappings_and_block_scalars() {
        let src = "x:\n  c:\n    - file: a.md\n    - file: |-\n        a.md>\n\n        ## B\n    - file: \"q\"\ntitle: T";
        let m = p(src).unwrap();
        assert_eq!(get(&m, "title"), Some(&s("T")));
        let x = get(&m, "x").unwrap();
        let Value::Map(xm) = x else { panic!() };
        let Value::Seq(items) = get(xm, "c").unwrap() else {
            panic!()
        };
        assert_eq!(
            items[1],
            Value::Map(vec![("file".into(), s("a.md>\n\n## B"))])
        );
        assert_eq!(one("a: >\n  x\n  y\n\n  z\n", "a"), s("x y\nz\n"));
        assert_eq!(one("a: |+\n  x\n", "a"), s("x\n\n"));
    }

    #[test]
    fn rejected_constructs_name_the_line() {
        assert_eq!(
            p("a: 1\nb: &x 2").unwrap_err(),
            "YAML anchor (&) at line 2 is not supported"
        );
        assert_eq!(
            p("a: *x").unwrap_err(),
            "YAML alias (*) at line 1 is not supported"
        );
        assert_eq!(
            p("a: !!str 1").unwrap_err(),
            "YAML tag (!) at line 1 is not supported"
        );
        assert_eq!(
            p("%YAML 1.2").unwrap_err(),
            "YAML directive (%) at line 1 is not supported"
        );
        assert_eq!(
            p("a: 1\n...").unwrap_err(),
            "YAML document marker at line 2 is not supported"
        );
        assert_eq!(
            p("- a").unwrap_err(),
            "YAML frontmatter is not a mapping (line 1)"
        );
        assert_eq!(
            p("a: [x]\n  b: 2").unwrap_err(),
            "unexpected indentation at line 2"
        );
        assert_eq!(one("a: 1\n  b: 2", "a"), s("1 b: 2"));
        assert_eq!(
            p("a: \"x").unwrap_err(),
            "unterminated quoted scalar at line 1"
        );
    }

    #[test]
    fn explicit_keys_in_flow_collections_are_refused() {
        for src in [
            "a: {? k: v}",
            "a: {? k}",
            "a: [? k]",
            "a: [x, ?\n  k]",
            "a: {k: ? v}",
            "a: [?]",
        ] {
            assert_eq!(
                p(src).unwrap_err(),
                "YAML explicit key (?) at line 1 is not supported",
                "{src:?}"
            );
        }
        // `?` not followed by white space or a flow indicator is text, as in YAML.
        assert_eq!(one("a: [?k, k?]", "a"), Value::Seq(vec![s("?k"), s("k?")]));
        assert_eq!(
            one("a: {?k: v}", "a"),
            Value::Map(vec![("?k".into(), s("v"))])
        );
    }

    #[test]
    fn first_duplicate_wins_and_depth_is_capped() {
        assert_eq!(one("a: 1\na: 2", "a"), s("1"));
        // Below and past the size where keys go into a hash set, in block
        // and flow mappings: each key once, its first value, in file order.
        for n in [3, Keys::SMALL, Keys::SMALL + 1, 40] {
            let keys: Vec<String> = (0..n).map(|i| format!("k{}", (i * 7) % n)).collect();
            let block: String = (0..2 * n)
                .map(|i| format!("{}: {i}\n", keys[i % n]))
                .collect();
            let flow = format!(
                "m: {{{}}}",
                (0..2 * n)
                    .map(|i| format!("{}: {i}", keys[i % n]))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let want: Vec<(String, Value)> = (0..n)
                .map(|i| (keys[i].clone(), s(&i.to_string())))
                .collect();
            assert_eq!(p(&block).unwrap(), want, "block, {n} keys");
            assert_eq!(one(&flow, "m"), Value::Map(want), "flow, {n} keys");
        }
        let deep = "[".repeat(64) + &"]".repeat(64);
        assert!(p(&format!("a: {deep}")).is_err());
        let ok = "[".repeat(63) + &"]".repeat(63);
        assert!(p(&format!("a: {ok}")).is_ok());
    }

    #[test]
    fn huge_inputs_do_not_blow_up() {
        let many: String = (0..50_000).map(|i| format!("k{i}: v\n")).collect();
        assert_eq!(p(&many).unwrap().len(), 50_000);
        let flow_lines: String = std::iter::once("t: [".to_string())
            .chain((0..50_000).map(|i| format!("  x{i},")))
            .chain(std::iter::once("]".to_string()))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(p(&flow_lines).is_ok());
    }
}
