//! Room on the stack for one more level of a recursion as deep as a bundle's
//! directories (docs/spec.md §1.1).

/// Below this much stack left, [`grown`] goes on on a new segment.
const RED_ZONE: usize = 128 * 1024;
/// The size of each new segment: a few hundred levels of the walk each.
const SEGMENT: usize = 2 * 1024 * 1024;

/// `f()`, on a new stack segment when little of this one is left: a tree as
/// deep as a path can name (~2,000 levels) overflowed a rayon worker's
/// 2 MiB stack at ~930 levels of the walk (SIGSEGV), one level being
/// several frames.
pub fn grown<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}
