//! The frontmatter YAML subset of `docs/frontmatter-yaml.md`: block mappings
//! and sequences, flow collections, quoted, plain (lenient) and block scalars;
//! anchors, aliases, tags, directives and document markers rejected with the
//! line. The doc is the contract; `tests/reference.py` implements it again in
//! Python and the property tests hold the two together.
//!
//! Every collection costs one level and the depth is capped at 64, so the
//! recursion here is bounded; every loop advances a line or a byte, so a
//! frontmatter of any size parses in linear time.

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
    /// SPEC §1.4 display text: a string's text; null, sequences and mappings
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

/// A plain scalar's value: its text (kept, not copied) unless it spells null.
fn plain_value(text: String) -> Value {
    match text.as_str() {
        "" | "null" | "Null" | "NULL" | "~" => Value::Null,
        _ => Value::Str(text),
    }
}

enum QErr {
    /// The closing quote is not in the text (or a line break comes first).
    Unterminated,
    InvalidEscape,
}

/// A quoted scalar starting at `s[0]` (`'` or `"`). Returns the text and the
/// bytes consumed, closing quote included. Its extent is found first (so an
/// unterminated scalar is reported as such even when it holds a bad escape),
/// then its escapes are read.
fn quoted(s: &str) -> Result<(String, usize), QErr> {
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
    let inner = &s[1..end];
    if q == b'\'' {
        return Ok((inner.replace("''", "'"), end + 1));
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
    Ok((out, end + 1))
}

fn construct_error(c: char, line: usize) -> Option<String> {
    let what = match c {
        '&' => "YAML anchor (&)",
        '*' => "YAML alias (*)",
        '!' => "YAML tag (!)",
        _ => return None,
    };
    Some(format!("{what} at line {line} is not supported"))
}

/// A mapping entry on `c`: `Some((key, rest))`, `None` when `c` is not one.
fn map_entry(c: &str, line: usize) -> Res<Option<(String, &str)>> {
    let first = match c.chars().next() {
        Some(ch) => ch,
        None => return Ok(None),
    };
    if first == '"' || first == '\'' {
        let (key, used) = match quoted(c) {
            Ok(k) => k,
            Err(QErr::Unterminated) => return Ok(None),
            Err(QErr::InvalidEscape) => return Err(at("invalid escape sequence", line)),
        };
        let after = c[used..].trim_start_matches([' ', '\t']);
        if let Some(rest) = after.strip_prefix(':') {
            if rest.is_empty() || rest.starts_with([' ', '\t']) {
                return Ok(Some((key, rest.trim_start_matches([' ', '\t']))));
            }
        }
        return Ok(None);
    }
    if first == '?' && (c.len() == 1 || c[1..].starts_with([' ', '\t'])) {
        return Err(format!(
            "YAML explicit key (?) at line {line} is not supported"
        ));
    }
    if let Some(e) = construct_error(first, line) {
        return Err(e);
    }
    if matches!(first, '[' | '{' | '#' | '|' | '>') {
        return Ok(None);
    }
    let b = c.as_bytes();
    for i in 0..b.len() {
        match b[i] {
            b'#' if i > 0 && (b[i - 1] == b' ' || b[i - 1] == b'\t') => return Ok(None),
            b':' if i + 1 == b.len() || b[i + 1] == b' ' || b[i + 1] == b'\t' => {
                let key = trim(&c[..i]);
                if key.is_empty() {
                    return Err(at("empty key", line));
                }
                return Ok(Some((
                    key.to_string(),
                    c[i + 1..].trim_start_matches([' ', '\t']),
                )));
            }
            _ => {}
        }
    }
    Ok(None)
}

struct Parser<'a> {
    text: &'a str,
    /// Byte range of each line in `text` (lines joined with `\n`).
    starts: Vec<usize>,
    pos: usize,
    /// A compact node that starts mid-line (`- key: v`, `- - x`): the line
    /// index, its column and content.
    virt: Option<(usize, usize, &'a str)>,
}

impl<'a> Parser<'a> {
    fn len(&self) -> usize {
        self.starts.len()
    }

    fn line(&self, i: usize) -> &'a str {
        let end = if i + 1 < self.starts.len() {
            self.starts[i + 1] - 1
        } else {
            self.text.len()
        };
        &self.text[self.starts[i]..end]
    }

    fn offset_of(&self, s: &str) -> usize {
        s.as_ptr() as usize - self.text.as_ptr() as usize
    }

    fn line_index_of(&self, off: usize) -> usize {
        self.starts.partition_point(|&s| s <= off) - 1
    }

    fn skip_ignorable(&mut self) {
        while self.pos < self.len()
            && !matches!(self.virt, Some((i, _, _)) if i == self.pos)
            && is_ignorable(self.line(self.pos))
        {
            self.pos += 1;
        }
    }

    /// The current line as (indent, content, 1-based number).
    fn peek(&self) -> Option<(usize, &'a str, usize)> {
        if self.pos >= self.len() {
            return None;
        }
        if let Some((i, col, c)) = self.virt {
            if i == self.pos {
                return Some((col, c, i + 1));
            }
        }
        let raw = self.line(self.pos);
        let ind = indent_of(raw);
        Some((ind, &raw[ind..], self.pos + 1))
    }

    fn check_start(ind: usize, c: &str, line: usize) -> Res<()> {
        if c.starts_with(is_ws) {
            return Err(at("invalid indentation character", line));
        }
        if ind == 0 {
            if c.starts_with('%') {
                return Err(format!(
                    "YAML directive (%) at line {line} is not supported"
                ));
            }
            for m in ["...", "---"] {
                if let Some(r) = c.strip_prefix(m) {
                    if r.is_empty() || r.starts_with([' ', '\t']) {
                        return Err(format!(
                            "YAML document marker at line {line} is not supported"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn depth_check(&self, depth: usize, line: usize) -> Res<()> {
        if depth > MAX_DEPTH {
            return Err(at("nesting deeper than 64 levels", line));
        }
        Ok(())
    }

    /// The block node on the current line (indent `m`, parent indent `p`).
    fn block_node(&mut self, m: usize, p: isize, depth: usize) -> Res<Value> {
        let (ind, c, line) = self.peek().expect("caller saw a line");
        Self::check_start(ind, c, line)?;
        if is_seq_start(c) {
            self.block_seq(m, depth)
        } else if map_entry(c, line)?.is_some() {
            self.block_map(m, depth)
        } else {
            self.value_text(c, line, p, false, depth)
        }
    }

    fn block_map(&mut self, m: usize, depth: usize) -> Res<Value> {
        let mut entries: Vec<(String, Value)> = Vec::new();
        let mut seen = Keys::default();
        loop {
            let (ind, c, line) = self.peek().expect("a line at indent m");
            self.depth_check(depth, line)?;
            Self::check_start(ind, c, line)?;
            let (key, rest) =
                map_entry(c, line)?.ok_or_else(|| at("expected 'key: value'", line))?;
            let v = self.value_text(rest, line, m as isize, true, depth + 1)?;
            seen.push_first(&mut entries, key, v);
            self.skip_ignorable();
            match self.peek() {
                None => break,
                Some((i, _, _)) if i == m => continue,
                Some((i, _, _)) if i < m => break,
                Some((_, _, l)) => return Err(at("unexpected indentation", l)),
            }
        }
        Ok(Value::Map(entries))
    }

    fn block_seq(&mut self, m: usize, depth: usize) -> Res<Value> {
        let mut items = Vec::new();
        loop {
            let (ind, c, line) = self.peek().expect("a line at indent m");
            self.depth_check(depth, line)?;
            Self::check_start(ind, c, line)?;
            let after = &c[1..];
            let rest = after.trim_start_matches([' ', '\t']);
            let col = m + 1 + (after.len() - rest.len());
            let item = if !rest.is_empty()
                && !rest.starts_with('#')
                && (is_seq_start(rest) || map_entry(rest, line)?.is_some())
            {
                self.virt = Some((self.pos, col, rest));
                self.block_node(col, m as isize, depth + 1)?
            } else {
                self.value_text(rest, line, m as isize, false, depth + 1)?
            };
            items.push(item);
            self.skip_ignorable();
            match self.peek() {
                Some((i, c2, _)) if i == m && is_seq_start(c2) => continue,
                Some((i, _, l)) if i > m => return Err(at("unexpected indentation", l)),
                _ => break,
            }
        }
        Ok(Value::Seq(items))
    }

    /// A value whose text starts with `r` on the current line (number
    /// `line`), owned by a node at indent `m`. Leaves `pos` after its lines.
    fn value_text(
        &mut self,
        r: &'a str,
        line: usize,
        m: isize,
        same_seq: bool,
        depth: usize,
    ) -> Res<Value> {
        let first = r.chars().next();
        match first {
            None | Some('#') => {
                self.pos += 1;
                self.skip_ignorable();
                match self.peek() {
                    Some((i, _, _)) if i as isize > m => self.block_node(i, m, depth),
                    Some((i, c, _)) if same_seq && i as isize == m && is_seq_start(c) => {
                        self.block_seq(i, depth)
                    }
                    _ => Ok(Value::Null),
                }
            }
            Some(ch @ ('&' | '*' | '!')) => Err(construct_error(ch, line).expect("construct")),
            Some('"' | '\'') => {
                let (s, used) = match quoted(r) {
                    Ok(v) => v,
                    Err(QErr::Unterminated) => return Err(at("unterminated quoted scalar", line)),
                    Err(QErr::InvalidEscape) => return Err(at("invalid escape sequence", line)),
                };
                if !tail_ok(&r[used..]) {
                    return Err(at("unexpected text after quoted scalar", line));
                }
                self.pos += 1;
                Ok(Value::Str(s))
            }
            Some('[' | '{') => {
                let off = self.offset_of(r);
                let mut fp = Flow {
                    s: &self.text[off..],
                    i: 0,
                    line,
                };
                let v = match fp.node(depth) {
                    Ok(v) => v,
                    Err(FlowErr::Incomplete) => {
                        return Err(at("unterminated flow collection", line))
                    }
                    Err(FlowErr::Fatal(e)) => return Err(e),
                };
                // The collection ends with its closing bracket, so `end - 1` is on
                // the collection's last line.
                let end = off + fp.i;
                let li = self.line_index_of(end - 1);
                let line_end = self.starts[li] + self.line(li).len();
                if !tail_ok(&self.text[end..line_end]) {
                    return Err(at("unexpected text after flow collection", li + 1));
                }
                self.pos = li + 1;
                Ok(v)
            }
            Some('|' | '>') => self.block_scalar(r, line, m),
            Some(_) => Ok(self.plain(r, m)),
        }
    }

    fn plain(&mut self, r: &str, m: isize) -> Value {
        let (head, had_comment) = cut_comment(r);
        let mut text = trim(head).to_string();
        let mut last = self.pos;
        if !had_comment {
            let mut empties = 0usize;
            let mut j = self.pos + 1;
            while j < self.len() {
                let raw = self.line(j);
                let t = trim(raw);
                if t.is_empty() {
                    empties += 1;
                } else if indent_of(raw) as isize > m && !t.starts_with('#') {
                    let (piece, cmt) = cut_comment(t);
                    if empties == 0 {
                        text.push(' ');
                    } else {
                        text.extend(std::iter::repeat_n('\n', empties));
                    }
                    text.push_str(trim(piece));
                    empties = 0;
                    last = j;
                    if cmt {
                        break;
                    }
                } else {
                    break;
                }
                j += 1;
            }
        }
        self.pos = last + 1;
        plain_value(text)
    }

    fn block_scalar(&mut self, r: &str, line: usize, m: isize) -> Res<Value> {
        let literal = r.starts_with('|');
        let mut chomp = 'c';
        let mut digit: Option<usize> = None;
        let mut rest = &r[1..];
        for _ in 0..2 {
            match rest.chars().next() {
                Some(ch @ ('-' | '+')) if chomp == 'c' => {
                    chomp = ch;
                    rest = &rest[1..];
                }
                Some(ch @ '1'..='9') if digit.is_none() => {
                    digit = Some(ch as usize - '0' as usize);
                    rest = &rest[1..];
                }
                _ => break,
            }
        }
        if !tail_ok(rest) {
            return Err(at("invalid block scalar header", line));
        }
        let first = self.pos + 1;
        let mut n = 0;
        while first + n < self.len() {
            let raw = self.line(first + n);
            if trim(raw).is_empty() || indent_of(raw) as isize > m {
                n += 1;
            } else {
                break;
            }
        }
        let c = match digit {
            Some(d) => Some((m + d as isize).max(0) as usize),
            None => (first..first + n)
                .map(|j| self.line(j))
                .find(|raw| !trim(raw).is_empty())
                .map(indent_of),
        };
        let mut content: Vec<&str> = Vec::new();
        let mut used = n;
        if let Some(c) = c {
            for (k, j) in (first..first + n).enumerate() {
                let raw = self.line(j);
                let ind = indent_of(raw);
                if trim(raw).is_empty() {
                    content.push(if ind >= c { &raw[c..] } else { "" });
                } else if ind < c {
                    used = k;
                    break;
                } else {
                    content.push(&raw[c..]);
                }
            }
        }
        self.pos = first + used;
        // "Empty" lines, for folding and chomping, are the white-space-only
        // ones; with no content indent at all the value is empty.
        let blank = |l: &str| trim(l).is_empty();
        let last_nonempty = content.iter().rposition(|l| !blank(l));
        let (core, trailing) = match last_nonempty {
            Some(k) => (&content[..=k], content.len() - k - 1),
            None => (&content[..0], content.len()),
        };
        let mut out = String::new();
        if literal {
            out = core.join("\n");
        } else {
            let mut i = 0;
            while i < core.len() && blank(core[i]) {
                out.push('\n');
                i += 1;
            }
            if i < core.len() {
                let mut prev = core[i];
                out.push_str(prev);
                let mut k = 0;
                for &l in &core[i + 1..] {
                    if blank(l) {
                        k += 1;
                        continue;
                    }
                    let more = prev.starts_with([' ', '\t']) || l.starts_with([' ', '\t']);
                    if !more && k == 0 {
                        out.push(' ');
                    } else {
                        let breaks = if more { k + 1 } else { k };
                        out.extend(std::iter::repeat_n('\n', breaks));
                    }
                    out.push_str(l);
                    prev = l;
                    k = 0;
                }
            }
        }
        match chomp {
            '-' => {}
            '+' => {
                if !core.is_empty() {
                    out.push('\n');
                }
                out.extend(std::iter::repeat_n('\n', trailing));
            }
            _ => {
                if !core.is_empty() {
                    out.push('\n');
                }
            }
        }
        Ok(Value::Str(out))
    }
}

/// Token separators inside a flow collection (the doc: spaces, tabs and the
/// line breaks between its lines; other white space is text).
fn is_flow_sep(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n')
}

enum FlowErr {
    Incomplete,
    Fatal(String),
}

/// A flow collection over the rest of the frontmatter text (lines joined with
/// `\n`); it reads no further than the collection's end.
struct Flow<'a> {
    s: &'a str,
    i: usize,
    line: usize,
}

impl Flow<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }

    fn invalid(&self) -> FlowErr {
        FlowErr::Fatal(at("invalid flow collection", self.line))
    }

    fn skip(&mut self) {
        loop {
            match self.peek() {
                Some(c) if is_flow_sep(c) => self.i += 1,
                Some('#') if self.i == 0 || self.s[..self.i].ends_with(is_flow_sep) => {
                    self.i = match self.s[self.i..].find('\n') {
                        Some(k) => self.i + k,
                        None => self.s.len(),
                    };
                }
                _ => return,
            }
        }
    }

    fn node(&mut self, depth: usize) -> Result<Value, FlowErr> {
        self.skip();
        match self.peek() {
            None => Err(FlowErr::Incomplete),
            Some('[') => self.seq(depth),
            Some('{') => self.map(depth),
            _ => self.scalar(),
        }
    }

    fn scalar(&mut self) -> Result<Value, FlowErr> {
        let (text, is_quoted) = self.scalar_text()?;
        Ok(if is_quoted {
            Value::Str(text)
        } else {
            plain_value(text)
        })
    }

    /// A scalar's text and whether it was quoted (keys use the text as is).
    fn scalar_text(&mut self) -> Result<(String, bool), FlowErr> {
        match self.peek() {
            None => Err(FlowErr::Incomplete),
            Some(c @ ('&' | '*' | '!')) => {
                Err(FlowErr::Fatal(construct_error(c, self.line).expect("c")))
            }
            Some('"' | '\'') => match quoted(&self.s[self.i..]) {
                Ok((s, used)) => {
                    self.i += used;
                    Ok((s, true))
                }
                Err(QErr::Unterminated) => {
                    Err(FlowErr::Fatal(at("unterminated quoted scalar", self.line)))
                }
                Err(QErr::InvalidEscape) => {
                    Err(FlowErr::Fatal(at("invalid escape sequence", self.line)))
                }
            },
            Some('[' | '{') => Err(self.invalid()),
            Some(_) => {
                let start = self.i;
                let b = self.s.as_bytes();
                let mut j = self.i;
                while j < b.len() {
                    match b[j] {
                        b',' | b'[' | b']' | b'{' | b'}' => break,
                        b'#' if j > start && self.s[..j].ends_with(is_flow_sep) => break,
                        b':' => {
                            let next = self.s[j + 1..].chars().next();
                            if matches!(next, None | Some(',' | ']' | '}'))
                                || next.is_some_and(is_flow_sep)
                            {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                if j >= b.len() {
                    // Out of text inside the scalar: the collection needs more
                    // lines before anything else can be said (the doc: the first
                    // error found wins), even when the scalar would be empty.
                    return Err(FlowErr::Incomplete);
                }
                self.i = j;
                let raw = &self.s[start..j];
                let pieces: Vec<&str> = raw
                    .split('\n')
                    .map(trim)
                    .filter(|p| !p.is_empty())
                    .collect();
                let text = pieces.join(" ");
                if text.is_empty() {
                    return Err(self.invalid());
                }
                Ok((text, false))
            }
        }
    }

    fn seq(&mut self, depth: usize) -> Result<Value, FlowErr> {
        if depth > MAX_DEPTH {
            return Err(FlowErr::Fatal(at(
                "nesting deeper than 64 levels",
                self.line,
            )));
        }
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.skip();
            match self.peek() {
                None => return Err(FlowErr::Incomplete),
                Some(']') => {
                    self.i += 1;
                    return Ok(Value::Seq(items));
                }
                Some(',') => return Err(self.invalid()),
                _ => {}
            }
            items.push(self.node(depth + 1)?);
            self.skip();
            match self.peek() {
                None => return Err(FlowErr::Incomplete),
                Some(',') => self.i += 1,
                Some(']') => {
                    self.i += 1;
                    return Ok(Value::Seq(items));
                }
                _ => return Err(self.invalid()),
            }
        }
    }

    fn map(&mut self, depth: usize) -> Result<Value, FlowErr> {
        if depth > MAX_DEPTH {
            return Err(FlowErr::Fatal(at(
                "nesting deeper than 64 levels",
                self.line,
            )));
        }
        self.i += 1;
        let mut entries: Vec<(String, Value)> = Vec::new();
        let mut seen = Keys::default();
        loop {
            self.skip();
            match self.peek() {
                None => return Err(FlowErr::Incomplete),
                Some('}') => {
                    self.i += 1;
                    return Ok(Value::Map(entries));
                }
                Some(',') => return Err(self.invalid()),
                _ => {}
            }
            if matches!(self.peek(), Some('[' | '{')) {
                return Err(self.invalid());
            }
            let (key, _) = self.scalar_text()?;
            self.skip();
            let value = if self.peek() == Some(':') {
                self.i += 1;
                self.skip();
                match self.peek() {
                    None => return Err(FlowErr::Incomplete),
                    Some(',' | '}') => Value::Null,
                    _ => self.node(depth + 1)?,
                }
            } else {
                Value::Null
            };
            seen.push_first(&mut entries, key, value);
            self.skip();
            match self.peek() {
                None => return Err(FlowErr::Incomplete),
                Some(',') => self.i += 1,
                Some('}') => {
                    self.i += 1;
                    return Ok(Value::Map(entries));
                }
                _ => return Err(self.invalid()),
            }
        }
    }
}

/// Parse frontmatter lines into a mapping (file order, first key wins).
pub fn parse(lines: &[&str]) -> Result<Vec<(String, Value)>, String> {
    parse_joined(&lines.join("\n"))
}

/// [`parse`] of the lines of `text` (split at each `\n`): the frontmatter
/// source as a concept keeps it.
pub fn parse_joined(text: &str) -> Result<Vec<(String, Value)>, String> {
    let mut starts = vec![0];
    starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    let mut p = Parser {
        text,
        starts,
        pos: 0,
        virt: None,
    };
    p.skip_ignorable();
    let Some((ind, _, first_line)) = p.peek() else {
        return Ok(Vec::new());
    };
    let Value::Map(m) = p.block_node(ind, -1, 1)? else {
        return Err(format!(
            "YAML frontmatter is not a mapping (line {first_line})"
        ));
    };
    p.skip_ignorable();
    if let Some((_, _, l)) = p.peek() {
        return Err(at("unexpected indentation", l));
    }
    Ok(m)
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
