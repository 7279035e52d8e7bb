//! Helpers for the unit tests.

/// A small deterministic generator (xorshift64) for randomised tests: the
/// same seed gives the same cases on every run and machine.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..m` (`m > 0`).
    pub fn below(&mut self, m: usize) -> usize {
        (self.bits() % m as u64) as usize
    }
}
