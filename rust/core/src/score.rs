//! The scorer (SPEC §3): query → (position, score) in result order, and the
//! excerpt. Exact: every concept with a positive weighted term count, ordered
//! by score descending then id (concepts are stored in id order, so by
//! position).

use memchr::memmem;

use crate::bundle::Bundle;
use crate::index::FIELDS;
use crate::text::{fold, fold_into, is_ws, split_ws, trim};

/// Folded distinct query terms with their multiplicity (SPEC §3.1 keeps
/// duplicates; equal folded terms contribute equally, so they are scored once
/// and multiplied).
pub fn query_terms(text: &str) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for t in split_ws(text) {
        let f = fold(t);
        match out.iter_mut().find(|(x, _)| *x == f) {
            Some((_, n)) => *n += 1,
            None => out.push((f, 1)),
        }
    }
    out
}

pub struct Ranked {
    pub positions: Vec<u32>,
    pub scores: Vec<u32>,
}

/// Score every concept and return the first `limit` of the SPEC order (all
/// when `limit` is `None`).
pub fn search(b: &Bundle, text: &str, tag: Option<&str>, limit: Option<usize>) -> Ranked {
    let n = b.len();
    let terms = query_terms(text);
    let empty = Ranked {
        positions: Vec::new(),
        scores: Vec::new(),
    };
    if terms.is_empty() || n == 0 || limit == Some(0) {
        return empty;
    }
    let allowed: Option<&[u32]> = match tag {
        Some(t) if !trim(t).is_empty() => match b.index.tags.get(&fold(t)) {
            Some(list) => Some(list),
            None => return empty,
        },
        _ => None,
    };
    let mut scores = vec![0u32; n];
    let mut stamp = vec![0u32; n];
    let mut cur = 0u32;
    let mut touched: Vec<u32> = Vec::new();
    let mut words = Vec::new();
    for (term, count) in &terms {
        for (field, weight) in FIELDS {
            let fi = &b.index.fields[field as usize];
            fi.words_containing(term.as_bytes(), &mut words);
            if words.is_empty() {
                continue;
            }
            let add = weight.saturating_mul(*count);
            cur += 1;
            let single = words.len() == 1;
            for &w in &words {
                for &p in fi.postings(w) {
                    let p = p as usize;
                    // A concept may hold several words containing the term;
                    // it counts once per (term, field).
                    if !single {
                        if stamp[p] == cur {
                            continue;
                        }
                        stamp[p] = cur;
                    }
                    if scores[p] == 0 {
                        touched.push(p as u32);
                    }
                    scores[p] = scores[p].saturating_add(add);
                }
            }
        }
    }
    if let Some(list) = allowed {
        // `list` is ascending: keep the touched concepts that carry the tag.
        touched.retain(|&p| list.binary_search(&p).is_ok());
    }
    rank(&scores, touched, limit)
}

/// Order `touched` by (score desc, position asc), keeping the first `limit`.
fn rank(scores: &[u32], mut touched: Vec<u32>, limit: Option<usize>) -> Ranked {
    let k = limit.unwrap_or(usize::MAX).min(touched.len());
    let key = |p: &u32| (std::cmp::Reverse(scores[*p as usize]), *p);
    if k < touched.len() {
        // Partial selection: only the first k need a full sort.
        touched.select_nth_unstable_by_key(k, key);
        touched.truncate(k);
    }
    touched.sort_unstable_by_key(key);
    let scores_out = touched.iter().map(|&p| scores[p as usize]).collect();
    Ranked {
        positions: touched,
        scores: scores_out,
    }
}

/// SPEC §3.5: the first trimmed, non-empty body line that contains any term.
pub fn excerpt(body: &str, terms: &[(String, u32)]) -> String {
    let finders: Vec<memmem::Finder> = terms
        .iter()
        .map(|(t, _)| memmem::Finder::new(t.as_bytes()))
        .collect();
    let mut buf = String::new();
    for line in body.split('\n') {
        let line = line.trim_matches(is_ws);
        if line.is_empty() {
            continue;
        }
        buf.clear();
        fold_into(line, &mut buf);
        if finders.iter().any(|f| f.find(buf.as_bytes()).is_some()) {
            return line.to_string();
        }
    }
    String::new()
}
