//! Block collections and block scalars of the frontmatter subset, and the
//! document: the parser walks the lines of the frontmatter source.

use super::flow::{Flow, FlowErr};
use super::scalar::{construct_error, plain_value, quoted, quoted_len, unquote, QErr};
use super::*;

/// A mapping entry on `c`: `Some((key, rest))`, `None` when `c` is not one.
fn map_entry(c: &str, line: usize) -> Res<Option<(String, &str)>> {
    let first = match c.chars().next() {
        Some(ch) => ch,
        None => return Ok(None),
    };
    if first == '"' || first == '\'' {
        let Ok(used) = quoted_len(c) else {
            return Ok(None);
        };
        // An entry when a `:` follows, and only then is its key read: a bad
        // escape in a line that is no entry is not this line's error.
        let after = c[used..].trim_start_matches([' ', '\t']);
        if let Some(rest) = after.strip_prefix(':') {
            if rest.is_empty() || rest.starts_with([' ', '\t']) {
                let key = unquote(c, used).map_err(|_| at("invalid escape sequence", line))?;
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
    // A sequence item is never a key (`- a: b` at a mapping's indent is no
    // entry with the key `- a`: docs/frontmatter-yaml.md "Mapping entry").
    if matches!(first, '[' | '{' | '#' | '|' | '>') || is_seq_start(c) {
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
                    // A first line that trims to nothing (a lone NBSP) is no
                    // piece: nothing is joined to it.
                    if text.is_empty() {
                    } else if empties == 0 {
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
