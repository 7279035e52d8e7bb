//! Laying the tokens' lists into the BM25F index's arrays: each token's
//! entries from the three fields' runs merged side by side (four field
//! frequencies per concept), counted first, then written straight into
//! arrays of their exact size, with the pruning bounds (docs/spec.md §12.3).
//! Counting first costs a second merge, but no list is built twice over, so
//! a large bundle's load holds one copy of the postings, not two.

use std::ops::Range;

use rayon::prelude::*;

use super::postings::{release_laid, MappedLists};
use super::runs::Runs;
use super::share::{blocks_of, Far, Laid, Share, Wide};

/// Token ranges laid apart, in parallel: enough that the pool's threads
/// share them evenly, each large enough to cost little to start. A number
/// fixed by the data alone, so the index is the same on every machine.
const TOKEN_RANGES: usize = 64;

/// The tokens per range, and the number of ranges, for `n_tokens` tokens.
pub(super) fn token_ranges(n_tokens: usize) -> (usize, usize) {
    let per = n_tokens.div_ceil(TOKEN_RANGES).max(1);
    (per, n_tokens.div_ceil(per))
}

/// One range of tokens' runs of the fields title, `tags_desc` and body
/// (each field's chunks in position order, so a token's entries from one
/// chunk after another ascend).
pub(super) type RangeRuns = [Vec<Runs>; 3];

/// Each token's entries and head entries (list.rs), range by range
/// ([`token_ranges`]), from the ranges' runs: what [`lay`] sizes its arrays
/// by, known before anything is laid (a cache file makes their room from it).
pub(super) fn count(n_tokens: usize, runs: &[RangeRuns]) -> Vec<Vec<(u32, u32)>> {
    ranges_of(n_tokens, runs.len())
        .par_iter()
        .zip(runs)
        .map(|(r, rr)| {
            let rr = [&rr[0][..], &rr[1][..], &rr[2][..]];
            let mut m = Merger::new(rr, r.start);
            r.clone().map(|t| m.count(rr, t as u32)).collect()
        })
        .collect()
}

/// The token ranges of `n_tokens` tokens in `n_ranges` ranges.
fn ranges_of(n_tokens: usize, n_ranges: usize) -> Vec<Range<usize>> {
    let (per, _) = token_ranges(n_tokens);
    (0..n_ranges)
        .map(|r| r * per..((r + 1) * per).min(n_tokens))
        .collect()
}

/// The lists of tokens `0..n_tokens` from their ranges' runs, counted
/// ([`count`]), with concept `d`'s field lengths at `lengths[f * n + d]`
/// (field by field); the postings laid in `mapped` when it is sized for
/// them. Each range's runs are dropped once its lists are laid out, so the
/// memory of the runs goes as that of the lists comes.
pub(super) fn lay(
    n_tokens: usize,
    runs: Vec<RangeRuns>,
    counts: &[Vec<(u32, u32)>],
    lengths: &[u32],
    mapped: Option<MappedLists>,
) -> (Laid, Wide, Far) {
    let ranges = ranges_of(n_tokens, runs.len());
    let mut laid = Laid::sized(
        counts
            .iter()
            .flatten()
            .map(|&(c, h)| (c as usize, h as usize)),
        mapped,
    );
    let mapped = laid.mapped();
    let mut rest = laid.share();
    let shares: Vec<Share<'_>> = counts
        .iter()
        .map(|c| {
            let entries = c.iter().map(|&(x, _)| x as usize).sum();
            let heads = c.iter().map(|&(_, h)| h as usize).sum();
            let blocks = c.iter().map(|&(x, _)| blocks_of(x as usize)).sum();
            rest.take(c.len(), (entries, heads), blocks)
        })
        .collect();
    let sides: Vec<(Wide, Far)> = ranges
        .into_par_iter()
        .zip(runs)
        .zip(shares)
        .zip(counts)
        .map(|(((r, rr), share), c)| {
            // The share's postings, as addresses (`fill` takes the share
            // apart), to let go of once laid.
            let spans = [
                bytes_of(share.near),
                bytes_of(share.body),
                bytes_of(share.head_words),
            ];
            let sides = fill(r, c, [&rr[0][..], &rr[1][..], &rr[2][..]], lengths, share);
            if mapped {
                spans.into_iter().for_each(release_laid);
            }
            sides
        })
        .collect();
    let (wide, far): (Vec<Wide>, Vec<Far>) = sides.into_iter().unzip();
    (laid, Wide::concat(wide), Far::concat(far))
}

/// Where a slice's bytes are and how many, as plain numbers (to cross to
/// another thread with no borrow).
fn bytes_of<T>(s: &[T]) -> (usize, usize) {
    (s.as_ptr() as usize, std::mem::size_of_val(s))
}

/// Writes the lists of the tokens in `range` (`counts` entries and head
/// entries each), and their bounds, into `share`; returns the wide ones'
/// frequencies and the far ones' concepts.
fn fill(
    range: Range<usize>,
    counts: &[(u32, u32)],
    runs: [&[Runs]; 3],
    lengths: &[u32],
    mut share: Share<'_>,
) -> (Wide, Far) {
    let mut m = Merger::new(runs, range.start);
    let (mut wide, mut far) = (Wide::default(), Far::default());
    let mut docs: Vec<u32> = Vec::new();
    let mut full: Vec<u16> = Vec::new();
    for (t, &(c, h)) in range.zip(counts) {
        let mut one = share.take(1, (c as usize, h as usize), blocks_of(c as usize));
        docs.clear();
        full.clear();
        m.each(runs, t as u32, |d, tfs| {
            docs.push(d);
            full.extend_from_slice(&tfs);
        });
        let (is_wide, is_far) = one.put(&docs, &full, lengths);
        if is_wide {
            wide.push(t as u32, &full);
        }
        if is_far {
            far.push(t as u32, &docs);
        }
    }
    (wide, far)
}

/// Merges tokens' entries from the three fields' runs, tokens ascending: a
/// cursor per run, and a scratch list of the token's head entries.
struct Merger {
    at: [Vec<usize>; 3],
    /// Per field, the token's entries in each run that holds it: the run
    /// and the range of its entries.
    spans: [Vec<(usize, usize, usize)>; 3],
    /// The token's head entries (title, tags, description frequencies), for
    /// [`Merger::merge`].
    heads: Vec<(u32, [u16; 3])>,
}

/// A field's entry as four field frequencies (`tags_desc`: tags and
/// description).
fn tfs_of(k: usize, a: u16, b: u16) -> [u16; 4] {
    match k {
        0 => [a, 0, 0, 0],
        1 => [0, a, b, 0],
        _ => [0, 0, 0, a],
    }
}

impl Merger {
    fn new(runs: [&[Runs]; 3], first: usize) -> Merger {
        Merger {
            at: std::array::from_fn(|k| runs[k].iter().map(|r| r.find(first as u32)).collect()),
            spans: Default::default(),
            heads: Vec::new(),
        }
    }

    /// The number of concepts holding token `t` (greater than the last token
    /// asked) in any field, and how many of them are head entries (list.rs).
    fn count(&mut self, runs: [&[Runs]; 3], t: u32) -> (u32, u32) {
        self.find(runs, t);
        if let Some(k) = self.only_field() {
            let c = self.spans[k].iter().map(|&(_, x, y)| (y - x) as u32).sum();
            // A run's frequencies are never 0: in the title or the tags and
            // description alone, every entry is a head entry; in the body
            // alone, none is.
            return (c, if k < 2 { c } else { 0 });
        }
        // In more than one field. Every entry of the title's and the tags'
        // and description's runs is a head entry and none of the body's
        // alone is, so the head entries are the concepts the head runs hold,
        // and the others the body's concepts no head run holds: the head
        // runs (short next to the body's, as a rule) merged, and each of
        // their concepts looked for in the body's runs, which are neither
        // copied nor read in full.
        let [title, tags_desc, body] = &self.spans;
        let mut heads = 0u32;
        let mut in_body = 0u32;
        let mut seek = BodySeek::default();
        merge_heads(runs, [title, tags_desc], |d, _| {
            heads += 1;
            in_body += u32::from(seek.holds(runs[2], body, d));
        });
        let body_len: u32 = body.iter().map(|&(_, x, y)| (y - x) as u32).sum();
        (body_len + heads - in_body, heads)
    }

    /// The one field whose runs hold the token found last, if only one does.
    fn only_field(&self) -> Option<usize> {
        let mut held = (0..3).filter(|&k| !self.spans[k].is_empty());
        match (held.next(), held.next()) {
            (Some(k), None) => Some(k),
            _ => None,
        }
    }

    /// The runs holding token `t`, per field, the cursors moved past it.
    fn find(&mut self, runs: [&[Runs]; 3], t: u32) {
        for (k, (spans, at)) in self.spans.iter_mut().zip(&mut self.at).enumerate() {
            spans.clear();
            for (j, (r, i)) in runs[k].iter().zip(at.iter_mut()).enumerate() {
                if r.tokens.get(*i) == Some(&t) {
                    spans.push((j, r.starts[*i] as usize, r.starts[*i + 1] as usize));
                    *i += 1;
                }
            }
        }
    }

    /// Calls `f` with each concept holding token `t` (greater than the last
    /// token asked) in any field, ascending, and its four field frequencies
    /// (title, tags, description, body).
    fn each(&mut self, runs: [&[Runs]; 3], t: u32, mut f: impl FnMut(u32, [u16; 4])) {
        self.find(runs, t);
        if let Some(k) = self.only_field() {
            // One field: its runs' entries, one run after the other, ascend.
            for &(j, x, y) in &self.spans[k] {
                let r = &runs[k][j];
                for e in x..y {
                    let b = if k == 1 { r.b[e] } else { 0 };
                    f(r.position(e), tfs_of(k, r.a[e], b));
                }
            }
            return;
        }
        self.merge(runs, f);
    }

    /// [`Merger::each`] for a token held in more than one field: the head
    /// runs' entries merged (short next to the body's, as a rule), then the
    /// body's runs read in place with the head entries put in between.
    fn merge(&mut self, runs: [&[Runs]; 3], mut f: impl FnMut(u32, [u16; 4])) {
        let [title, tags_desc, body] = &self.spans;
        let heads = &mut self.heads;
        heads.clear();
        merge_heads(runs, [title, tags_desc], |d, tfs| heads.push((d, tfs)));
        // A sentinel past every position: the merge needs no end test.
        heads.push((u32::MAX, [0; 3]));
        let mut h = 0;
        for &(j, x, y) in body {
            let r = &runs[2][j];
            for e in x..y {
                let d = r.position(e);
                while heads[h].0 < d {
                    let (p, [a, b, c]) = heads[h];
                    f(p, [a, b, c, 0]);
                    h += 1;
                }
                let [a, b, c] = if heads[h].0 == d {
                    h += 1;
                    heads[h - 1].1
                } else {
                    [0; 3]
                };
                f(d, [a, b, c, r.a[e]]);
            }
        }
        for &(p, [a, b, c]) in &heads[h..heads.len() - 1] {
            f(p, [a, b, c, 0]);
        }
    }
}

/// Calls `f` with each concept the title's runs `title` or the tags' and
/// description's runs `tags_desc` hold (as [`Merger::find`] leaves them:
/// positions ascending from one run to the next), ascending and once each,
/// and its title, tags and description frequencies.
fn merge_heads(
    runs: [&[Runs]; 3],
    [title, tags_desc]: [&[(usize, usize, usize)]; 2],
    mut f: impl FnMut(u32, [u16; 3]),
) {
    let mut a = entries(runs[0], title).peekable();
    let mut b = entries(runs[1], tags_desc).peekable();
    loop {
        let d = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) => return,
        };
        let t = a.next_if(|x| x.0 == d).map_or(0, |x| x.1);
        let (g, s) = b.next_if(|y| y.0 == d).map_or((0, 0), |y| (y.1, y.2));
        f(d, [t, g, s]);
    }
}

/// The entries of the runs `spans` of `runs`, in order: position and the
/// two frequencies (the second 0 outside `tags_desc`).
fn entries<'a>(
    runs: &'a [Runs],
    spans: &'a [(usize, usize, usize)],
) -> impl Iterator<Item = (u32, u16, u16)> + 'a {
    spans.iter().flat_map(move |&(j, x, y)| {
        let r = &runs[j];
        (x..y).map(move |e| (r.position(e), r.a[e], r.b.get(e).copied().unwrap_or(0)))
    })
}

/// A cursor over the body's runs holding one token, asked about ascending
/// positions.
#[derive(Default)]
struct BodySeek {
    /// The span it is in, and its entry there (an index into that span's
    /// run).
    span: usize,
    at: usize,
}

impl BodySeek {
    /// Whether the runs `spans` of `runs` hold position `d` (not below any
    /// position asked before).
    fn holds(&mut self, runs: &[Runs], spans: &[(usize, usize, usize)], d: u32) -> bool {
        while let Some(&(j, x, y)) = spans.get(self.span) {
            let r = &runs[j];
            self.at = self.at.max(x);
            if x == y || r.position(y - 1) < d {
                // The next span is another run: its entries count from its own start.
                self.span += 1;
                self.at = 0;
                continue;
            }
            self.at = r.first_at(self.at, y, d);
            return r.position(self.at) == d;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::index::bm25f::list::is_head;
    use crate::testing::Rng;

    /// Random runs of the three fields over `chunks` chunks of `span`
    /// positions each, and each token's entries merged the obvious way.
    #[allow(clippy::type_complexity)]
    fn random_runs(
        rng: &mut Rng,
        tokens: u32,
        chunks: u32,
        span: u32,
    ) -> ([Vec<Runs>; 3], BTreeMap<u32, BTreeMap<u32, [u16; 4]>>) {
        let mut want: BTreeMap<u32, BTreeMap<u32, [u16; 4]>> = BTreeMap::new();
        let runs = std::array::from_fn(|k| {
            (0..chunks)
                .map(|c| {
                    let base = c * span;
                    // The body holds most tokens and concepts, the heads few.
                    let (held, dense) = if k == 2 { (2, 2) } else { (4, 8) };
                    let mut per_token: Vec<(u32, Vec<(u16, u16, u16)>)> = Vec::new();
                    for t in (0..tokens)
                        .filter(|_| rng.below(held) == 0)
                        .collect::<Vec<_>>()
                    {
                        let mut entries = Vec::new();
                        for o in 0..span as u16 {
                            if rng.below(dense) != 0 {
                                continue;
                            }
                            let a = rng.below(3) as u16;
                            let b = if k == 1 { rng.below(3) as u16 } else { 0 };
                            // Never both 0 (a run holds no empty entry).
                            let a = if a == 0 && b == 0 { 1 } else { a };
                            let tfs = tfs_of(k, a, b);
                            let e = want.entry(t).or_default().entry(base + u32::from(o));
                            let e = e.or_default();
                            for f in 0..4 {
                                e[f] += tfs[f];
                            }
                            entries.push((o, a, b));
                        }
                        if !entries.is_empty() {
                            // As built, a run lists only tokens it holds.
                            per_token.push((t, entries));
                        }
                    }
                    Runs::from_entries(base, k == 1, &per_token)
                })
                .collect()
        });
        (runs, want)
    }

    #[test]
    fn the_merger_counts_and_lists_what_a_plain_merge_does() {
        let mut rng = Rng(0x1A7);
        for round in 0..200 {
            let tokens = 1 + rng.below(12) as u32;
            let chunks = 1 + rng.below(4) as u32;
            let span = 1 + rng.below(40) as u32;
            let (runs, want) = random_runs(&mut rng, tokens, chunks, span);
            let runs = [&runs[0][..], &runs[1][..], &runs[2][..]];
            let (mut counter, mut lister) = (Merger::new(runs, 0), Merger::new(runs, 0));
            for t in 0..tokens {
                let expected: Vec<(u32, [u16; 4])> = want
                    .get(&t)
                    .map(|m| m.iter().map(|(&d, &tfs)| (d, tfs)).collect())
                    .unwrap_or_default();
                let heads = expected.iter().filter(|e| is_head(e.1)).count();
                let c = (expected.len() as u32, heads as u32);
                assert_eq!(counter.count(runs, t), c, "round {round}, token {t}");
                let mut got = Vec::new();
                lister.each(runs, t, |d, tfs| got.push((d, tfs)));
                assert_eq!(got, expected, "round {round}, token {t}");
            }
        }
    }
}
