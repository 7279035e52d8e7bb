//! Why a concept has its BM25F score, and its excerpt (docs/spec.md §12.5,
//! §12.6).

use super::{idf, part, saturate, Norms, Params, QueryTokens, Stats};
use crate::index::bm25f::Bm25fIndex;
use crate::text::analyze::Analyzer;
use crate::text::{fold_into, is_ws, split_ws};

/// How one field adds to one token's score in one concept (docs/spec.md
/// §12.5).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldPart {
    pub tf: u32,
    pub length: u32,
    /// `weight · tf / norm`.
    pub weighted_tf: f64,
    /// The token's score shared out in proportion to `weighted_tf`.
    pub contribution: f64,
}

/// One token's part of one concept's score.
#[derive(Debug, Clone, PartialEq)]
pub struct TermPart {
    pub token: String,
    pub idf: f64,
    /// The sum of the fields' weighted frequencies.
    pub weighted_tf: f64,
    pub score: f64,
    pub fields: [FieldPart; 4],
}

/// Why the concept at `position` has its score: per query token that adds
/// to it (`s(t, d) > 0`, docs/spec.md §12.5), its idf, each field's frequency,
/// length, weighted frequency and share of the token's score. The tokens'
/// scores sum (in query order) to the concept's score: the tokens left out
/// add `0`. Leaving them out keeps an explanation's size to what the
/// concept holds, not to the query's length times the passages explained.
pub fn explain(
    index: &Bm25fIndex,
    tokens: &QueryTokens,
    stats: &Stats,
    params: &Params,
    position: u32,
) -> Vec<TermPart> {
    let norms = Norms::new(params, stats);
    let dfs = stats.dfs();
    tokens
        .tokens
        .iter()
        .filter_map(|token| {
            let list = index.list(index.token_id(token)?);
            let k = list.docs.first_at(0, list.len(), position);
            if list.docs.get(k) != position {
                return None;
            }
            let tfs = list.tfs(k);
            let mut fields: [FieldPart; 4] = std::array::from_fn(|f| {
                let length = index.length(f, position).unwrap_or(0);
                let tf = tfs[f];
                let weighted_tf = if tf > 0 {
                    part(params, &norms, f, tf, length)
                } else {
                    0.0
                };
                FieldPart {
                    tf: u32::from(tf),
                    length,
                    weighted_tf,
                    contribution: 0.0,
                }
            });
            let x = fields.iter().fold(0.0, |a, p| a + p.weighted_tf);
            // A token found only in fields weighted 0 adds nothing (§12.3);
            // nor does one whose tiny `x` gives a score that rounds to 0.
            if x <= 0.0 {
                return None;
            }
            let idf = idf(stats.n, dfs.get(token.as_str()).copied().unwrap_or(0));
            let score = saturate(params, idf, x);
            if score <= 0.0 {
                return None;
            }
            for p in &mut fields {
                p.contribution = score * (p.weighted_tf / x);
            }
            Some(TermPart {
                token: token.clone(),
                idf,
                weighted_tf: x,
                score,
                fields,
            })
        })
        .collect()
}

/// docs/spec.md §12.6: the first non-empty body line (trimmed) holding a
/// query token.
pub fn excerpt(analyzer: &Analyzer, body: &str, tokens: &QueryTokens) -> String {
    if tokens.is_empty() {
        return String::new();
    }
    // Looked up by hash (built with the query): a scan of the query's tokens
    // per body token costs their product on a long query.
    let wanted = &tokens.wanted;
    let mut folded = String::new();
    for line in body.split('\n') {
        let line = line.trim_matches(is_ws);
        if line.is_empty() {
            continue;
        }
        let mut found = false;
        for piece in split_ws(line) {
            folded.clear();
            fold_into(piece, &mut folded);
            analyzer.for_each_token(&folded, |t| {
                found |= wanted.contains(t.text.as_ref());
            });
            if found {
                return line.to_string();
            }
        }
    }
    String::new()
}
