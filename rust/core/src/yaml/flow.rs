//! Flow collections (`[a, b]`, `{k: v}`) of the frontmatter subset.

use super::scalar::{construct_error, plain_value, quoted, QErr};
use super::*;

/// Token separators inside a flow collection (the doc: spaces, tabs and the
/// line breaks between its lines; other white space is text).
pub(super) fn is_flow_sep(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n')
}

pub(super) enum FlowErr {
    Incomplete,
    Fatal(String),
}

/// A flow collection over the rest of the frontmatter text (lines joined with
/// `\n`); it reads no further than the collection's end.
pub(super) struct Flow<'a> {
    pub(super) s: &'a str,
    pub(super) i: usize,
    pub(super) line: usize,
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

    pub(super) fn node(&mut self, depth: usize) -> Result<Value, FlowErr> {
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
            // An explicit key (`{? a: b}`, `[? a]`) is rejected as in block
            // context (docs/spec.md §1.3), not read as the text `? a`.
            Some('?')
                if self.s[self.i + 1..]
                    .chars()
                    .next()
                    .is_some_and(|n| is_flow_sep(n) || matches!(n, ',' | ']' | '}')) =>
            {
                Err(FlowErr::Fatal(format!(
                    "YAML explicit key (?) at line {} is not supported",
                    self.line
                )))
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
