//! The id order of docs/spec.md §1.2.

use std::cmp::Ordering;

/// docs/spec.md §1.2 id order: segment lists compared element by element in ordinal
/// order, a prefix first. Works on ids and on relative paths alike.
///
/// Equivalent to comparing the UTF-8 bytes with `/` read as smaller than
/// every other byte (byte order is code point order for UTF-8). One pass, no
/// allocation.
pub fn id_cmp(a: &str, b: &str) -> Ordering {
    id_cmp_bytes(a.as_bytes(), b.as_bytes())
}

/// [`id_cmp`] on the ids' UTF-8 bytes.
pub fn id_cmp_bytes(x: &[u8], y: &[u8]) -> Ordering {
    let key = |c: u8| if c == b'/' { 0 } else { u16::from(c) + 1 };
    // Ids of one bundle share long prefixes: skip equal 8-byte blocks first.
    let n = x.len().min(y.len());
    let mut i = 0;
    while i + 8 <= n {
        let p = u64::from_le_bytes(x[i..i + 8].try_into().unwrap_or_default());
        let q = u64::from_le_bytes(y[i..i + 8].try_into().unwrap_or_default());
        if p != q {
            i += ((p ^ q).trailing_zeros() / 8) as usize;
            return key(x[i]).cmp(&key(y[i]));
        }
        i += 8;
    }
    for (&p, &q) in x[i..n].iter().zip(&y[i..n]) {
        if p != q {
            return key(p).cmp(&key(q));
        }
    }
    x.len().cmp(&y.len())
}

/// The order of two entries of one directory's listing as [`id_cmp`]
/// orders their keys: a file's id ends with its name without `.md`, a
/// directory's key with its name and `/` (the prefix they share orders
/// nothing).
pub fn entry_cmp((a_dir, a): (bool, &str), (b_dir, b): (bool, &str)) -> std::cmp::Ordering {
    fn stem(dir: bool, name: &str) -> &[u8] {
        match dir {
            true => name.as_bytes(),
            false => name.strip_suffix(".md").unwrap_or(name).as_bytes(),
        }
    }
    if !a_dir && !b_dir {
        // A usable name holds no `/`, and without one `id_cmp` is the
        // bytes' order (a forged name with one is refused as unusable).
        return stem(false, a).cmp(stem(false, b));
    }
    // `id_cmp`'s order byte by byte (`/` lowest), a directory's `/` last.
    let rank = |c: u8| if c == b'/' { 0 } else { u16::from(c) + 1 };
    let x = stem(a_dir, a).iter().copied().chain(a_dir.then_some(b'/'));
    let y = stem(b_dir, b).iter().copied().chain(b_dir.then_some(b'/'));
    x.map(rank).cmp(y.map(rank))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_order_as_their_ids() {
        use std::cmp::Ordering::{Greater, Less};
        // `a/...` sorts before `a-b` (`/` lowest), and a file `a` before
        // the directory `a`'s entries.
        assert_eq!(entry_cmp((true, "a"), (false, "a-b.md")), Less);
        assert_eq!(entry_cmp((false, "a.md"), (true, "a")), Less);
        assert_eq!(entry_cmp((false, "ab.md"), (false, "a.md")), Greater);
        assert_eq!(
            entry_cmp((true, "b"), (true, "b")),
            std::cmp::Ordering::Equal
        );
    }

    #[test]
    fn id_order_is_segment_order_on_random_ids() {
        // The definition: segment lists compared in ordinal order, a prefix first.
        fn by_segments(a: &str, b: &str) -> Ordering {
            a.split('/').cmp(b.split('/'))
        }
        let mut rng = crate::testing::Rng(11);
        let alphabet = ["/", "a", "b", "-", ".", "0", "é", "~", "ab/", "/x"];
        let word = |rng: &mut crate::testing::Rng| {
            let n = rng.below(24);
            (0..n)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect::<String>()
        };
        for _ in 0..20_000 {
            let a = word(&mut rng);
            // Often a long shared prefix, so the block skip is exercised.
            let b = if rng.below(2) == 0 {
                let keep = rng.below(a.chars().count() + 1);
                a.chars().take(keep).collect::<String>() + &word(&mut rng)
            } else {
                word(&mut rng)
            };
            assert_eq!(id_cmp(&a, &b), by_segments(&a, &b), "{a:?} vs {b:?}");
            assert_eq!(id_cmp(&b, &a), by_segments(&b, &a), "{b:?} vs {a:?}");
            assert_eq!(id_cmp(&a, &a), Ordering::Equal);
        }
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
}
