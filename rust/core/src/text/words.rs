//! The folded word scan of the index build: each white-space-delimited word
//! of a text, folded, 64 bytes at a time.

use super::{fold_char, is_ws};

/// `b` in every byte of a word.
#[cfg(any(test, not(target_arch = "x86_64")))]
const fn bytes(b: u8) -> u64 {
    b as u64 * 0x0101_0101_0101_0101
}

/// The high bit of each byte of `m` (all other bits clear), packed into one
/// bit per byte: bit `k` of the result is byte `k`'s high bit. The multiply
/// moves byte `k`'s bit to bit `56 + k` with no carries.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn pack_high_bits(m: u64) -> u64 {
    (m >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// For 8 bytes read little-endian: one bit per byte for ASCII white space,
/// and one per non-ASCII byte. Byte-parallel arithmetic on one `u64` whose
/// per-byte sums never carry into the next byte (portable, no `unsafe`).
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn word_masks(x: u64) -> (u64, u64) {
    const LOW7: u64 = bytes(0x7F);
    const HIGH: u64 = bytes(0x80);
    let low = x & LOW7;
    // High bit set where a byte is exactly b' ' (where `y`'s byte is zero).
    let y = x ^ bytes(b' ');
    let space = !(((y & LOW7) + LOW7) | y | LOW7);
    // High bit set where the low seven bits are 9..=13 (\t \n \v \f \r).
    let control = (low + bytes(0x80 - 0x09)) & !(low + bytes(0x80 - 0x0E));
    let ws = (space | (control & !x)) & HIGH;
    (pack_high_bits(ws), pack_high_bits(x & HIGH))
}

/// ASCII `a`..=`z` of 8 bytes upper-cased (other bytes kept), byte-parallel
/// like [`word_masks`].
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn upper8(x: u64) -> u64 {
    const LOW7: u64 = bytes(0x7F);
    const HIGH: u64 = bytes(0x80);
    let low = x & LOW7;
    // High bit set where the byte is ASCII and in `a..=z`.
    let lower = (low + bytes(0x80 - b'a')) & !(low + bytes(0x80 - b'z' - 1)) & !x & HIGH;
    x - (lower >> 2)
}

/// For a 64-byte block: bit `k` of the first mask is set when byte `k` is
/// ASCII white space, of the second when it is not ASCII; and the block with
/// its ASCII letters upper-cased. On x86-64, 16 bytes at a time with SSE2
/// (part of every x86-64 CPU); elsewhere 8 at a time in a `u64`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn block_masks(block: &[u8; 64]) -> (u64, u64, [u8; 64]) {
    // SAFETY: the only requirement of `block_masks_sse2` is the SSE2 target
    // feature, and SSE2 is part of every x86-64 CPU (the target's baseline).
    unsafe { block_masks_sse2(block) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn block_masks_sse2(block: &[u8; 64]) -> (u64, u64, [u8; 64]) {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8, _mm_sub_epi8,
    };
    /// `lo <= x < lo + n` for unsigned bytes, as one signed comparison:
    /// `x + (128 - lo)` wraps the range onto `-128..-128 + n`.
    #[target_feature(enable = "sse2")]
    fn in_range(x: __m128i, lo: u8, n: i8) -> __m128i {
        _mm_cmplt_epi8(
            _mm_add_epi8(x, _mm_set1_epi8(128u8.wrapping_sub(lo) as i8)),
            _mm_set1_epi8(-128 + n),
        )
    }
    let mut ws = 0u64;
    let mut high = 0u64;
    let mut up = [0u8; 64];
    for (k, (chunk, out)) in block
        .chunks_exact(16)
        .zip(up.chunks_exact_mut(16))
        .enumerate()
    {
        let mut sixteen = [0u8; 16];
        sixteen.copy_from_slice(chunk);
        let x: __m128i = bytemuck::cast(sixteen);
        let space = _mm_or_si128(
            _mm_cmpeq_epi8(x, _mm_set1_epi8(b' ' as i8)),
            in_range(x, 9, 5),
        );
        ws |= u64::from(_mm_movemask_epi8(space) as u16) << (16 * k);
        high |= u64::from(_mm_movemask_epi8(x) as u16) << (16 * k);
        let lower = in_range(x, b'a', 26);
        let upper = _mm_sub_epi8(x, _mm_and_si128(lower, _mm_set1_epi8(0x20)));
        out.copy_from_slice(&bytemuck::cast::<__m128i, [u8; 16]>(upper));
    }
    (ws, high, up)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn block_masks(block: &[u8; 64]) -> (u64, u64, [u8; 64]) {
    block_masks_swar(block)
}

/// [`block_masks`] 8 bytes at a time in a `u64`, on any target.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn block_masks_swar(block: &[u8; 64]) -> (u64, u64, [u8; 64]) {
    let mut ws = 0u64;
    let mut high = 0u64;
    let mut up = [0u8; 64];
    for (w, (chunk, out)) in block
        .chunks_exact(8)
        .zip(up.chunks_exact_mut(8))
        .enumerate()
    {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(chunk);
        let x = u64::from_le_bytes(eight);
        let (a, b) = word_masks(x);
        ws |= a << (8 * w);
        high |= b << (8 * w);
        out.copy_from_slice(&upper8(x).to_le_bytes());
    }
    (ws, high, up)
}

/// Call `f` with each white-space-delimited word of `s`, folded, as UTF-8
/// bytes — exactly `split_ws(s).map(fold)`.
///
/// The index's hot loop. The text is scanned 64 bytes at a time for ASCII
/// white space, and each block upper-cased as it is scanned; a run between
/// two such bytes that is all ASCII is one word, handed out of the upper-cased
/// block without a copy (or copied, when it spans blocks). A run holding other
/// characters takes the general path: decoded, split on the rest of SPEC white
/// space (U+0085, U+00A0, …), and folded character by character.
pub fn for_each_folded_word(s: &str, buf: &mut Vec<u8>, mut f: impl FnMut(&[u8])) {
    let b = s.as_bytes();
    let n = b.len();
    // Start of the run in progress, and whether it holds a non-ASCII byte.
    let mut run: Option<usize> = None;
    let mut run_high = false;
    let mut at = 0;
    while at < n {
        let len = (n - at).min(64);
        let (ws, high, up) = match b[at..].first_chunk::<64>() {
            Some(block) => block_masks(block),
            None => {
                let mut block = [b' '; 64];
                block[..len].copy_from_slice(&b[at..]);
                block_masks(&block)
            }
        };
        // Bits past the text read as white space (the padding), so a run
        // that reaches the end of the text closes here. A word starts at a
        // word byte after white space and ends at white space after a word
        // byte (the byte before the block is one when a run goes on into
        // it): each bit of `starts` is followed by one of `ends`, or by the
        // block's end when the word goes on into the next block.
        let words = !ws;
        let after_word = words << 1 | u64::from(run.is_some());
        let mut starts = words & !after_word;
        let mut ends = ws & after_word;
        if let Some(start) = run {
            // The run from the blocks before ends at the first end here.
            if ends == 0 {
                run_high |= high != 0;
                at += len;
                continue;
            }
            let end = ends.trailing_zeros();
            ends &= ends - 1;
            run_high |= high & ((1u64 << end) - 1) != 0;
            emit(s, start..at + end as usize, run_high, buf, &mut f);
            run = None;
        }
        while starts != 0 {
            let start = starts.trailing_zeros();
            starts &= starts - 1;
            if ends == 0 {
                run = Some(at + start as usize);
                run_high = high >> start != 0;
                break;
            }
            let end = ends.trailing_zeros();
            ends &= ends - 1;
            if high & (u64::MAX << start) & ((1u64 << end) - 1) == 0 {
                // An ASCII word inside this block: already upper-cased.
                f(&up[start as usize..end as usize]);
            } else {
                emit(s, at + start as usize..at + end as usize, true, buf, &mut f);
            }
        }
        at += len;
    }
    if let Some(start) = run {
        emit(s, start..n, run_high, buf, &mut f);
    }
    buf.clear();
}

/// Call `f` with the folded words of `s[run]`, a run between ASCII white
/// space (or the text's ends), so whole characters; `high` when it holds a
/// non-ASCII byte.
fn emit(
    s: &str,
    run: std::ops::Range<usize>,
    high: bool,
    buf: &mut Vec<u8>,
    f: &mut impl FnMut(&[u8]),
) {
    buf.clear();
    let text = &s[run];
    if !high {
        // Copied then upper-cased in place: both vectorised.
        buf.extend_from_slice(text.as_bytes());
        buf.make_ascii_uppercase();
        f(buf);
        return;
    }
    // One pass: ASCII bytes upper-cased as they are, other characters
    // decoded and folded; the rest of SPEC white space (U+0085, U+00A0, …)
    // ends a word (ASCII white space cannot occur inside the run).
    let bytes = text.as_bytes();
    let mut tmp = [0u8; 4];
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii() {
            buf.push(b.to_ascii_uppercase());
            i += 1;
            continue;
        }
        // `i` is always on a character boundary inside the run.
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        i += c.len_utf8();
        if is_ws(c) {
            if !buf.is_empty() {
                f(buf);
                buf.clear();
            }
        } else {
            buf.extend_from_slice(fold_char(c).encode_utf8(&mut tmp).as_bytes());
        }
    }
    if !buf.is_empty() {
        f(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{fold, split_ws};

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

    /// Random texts with words longer than a block (which the random texts
    /// below hardly make), beside white space and non-ASCII letters.
    #[test]
    fn folded_words_equal_fold_then_split_with_words_longer_than_a_block() {
        const PIECES: [&str; 12] = [
            "a", "Zq", " ", "  ", "\t", "\n", "é", "ß", "\u{a0}", "\u{3000}", "İ", "x9",
        ];
        let mut rng = crate::testing::Rng(0x5EED);
        let mut buf = Vec::new();
        for round in 0..3000 {
            let mut s = String::new();
            let target = rng.below(300);
            while s.len() < target {
                if rng.below(8) == 0 {
                    // A word of up to 150 bytes: spans one or two blocks.
                    let n = rng.below(150);
                    s.extend(std::iter::repeat_n('w', n));
                } else {
                    s.push_str(PIECES[rng.below(PIECES.len())]);
                }
            }
            let mut got: Vec<String> = Vec::new();
            for_each_folded_word(&s, &mut buf, |w| {
                got.push(String::from_utf8(w.to_vec()).unwrap())
            });
            let want: Vec<String> = split_ws(&s).map(fold).collect();
            assert_eq!(got, want, "round {round}: {s:?}");
        }
    }

    #[test]
    fn block_masks_mark_every_byte_value_at_every_offset() {
        for block_masks in [block_masks, block_masks_swar] {
            every_byte_value_at_every_offset(block_masks);
        }
    }

    /// White space and non-ASCII masks, and the upper-cased block.
    type Masks = (u64, u64, [u8; 64]);

    fn every_byte_value_at_every_offset(block_masks: fn(&[u8; 64]) -> Masks) {
        for v in 0..=255u8 {
            for at in 0..64 {
                let mut block = [b'a'; 64];
                block[at] = v;
                let (ws, high, up) = block_masks(&block);
                let mut want_up = block;
                want_up.make_ascii_uppercase();
                if v >= 0x80 {
                    want_up[at] = v;
                }
                assert_eq!(up, want_up, "byte {v:#x} at {at}");
                let want_ws = if v == b' ' || (9..=13).contains(&v) {
                    1u64 << at
                } else {
                    0
                };
                let want_high = if v >= 0x80 { 1u64 << at } else { 0 };
                assert_eq!((ws, high), (want_ws, want_high), "byte {v:#x} at {at}");
                // And among neighbours that set their own bits.
                let mut block = [b' '; 64];
                block[at] = v;
                let (ws, _, _) = block_masks(&block);
                assert_eq!(
                    ws,
                    !(1u64 << at) | want_ws,
                    "byte {v:#x} among spaces at {at}"
                );
            }
        }
    }

    /// Random texts over an alphabet of every kind of byte run the scanner
    /// tells apart (ASCII letters and white space, multi-byte characters,
    /// Unicode white space, characters whose uppercase is several), long
    /// enough to cross its 64-byte blocks at every offset.
    #[test]
    fn folded_words_equal_fold_then_split_on_random_texts() {
        let alphabet = [
            "a",
            "Z",
            "q",
            "7",
            "-",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\u{b}",
            "\u{c}",
            "ß",
            "é",
            "\u{85}",
            "\u{a0}",
            "\u{2003}",
            "\u{3000}",
            "漢",
            "ﬁ",
            "ı",
            "\u{1F600}",
            "\u{200B}",
            "\u{7f}",
            "\u{1}",
        ];
        let mut rng = crate::testing::Rng(0x9E37_79B9_7F4A_7C15);
        let mut next = |m: usize| rng.below(m);
        let mut buf = Vec::new();
        for round in 0..4000 {
            let len = next(if round % 10 == 0 { 400 } else { 140 });
            let mut s = String::new();
            for _ in 0..len {
                // Mostly ASCII letters, as real text is.
                let pick = if next(3) == 0 {
                    next(alphabet.len())
                } else {
                    next(4)
                };
                s.push_str(alphabet[pick]);
            }
            let mut got: Vec<Vec<u8>> = Vec::new();
            for_each_folded_word(&s, &mut buf, |w| got.push(w.to_vec()));
            let want: Vec<Vec<u8>> = split_ws(&s).map(|w| fold(w).into_bytes()).collect();
            assert_eq!(got, want, "{s:?}");
        }
    }
}
