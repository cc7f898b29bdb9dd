//! A deterministic xorshift64 generator (shifts 13, 7, 17) for the host tests, the fuzz runs
//! and the userland's randomised tests: a seed gives the same sequence on every run, so a
//! failure names the input that caused it. Not for anything that needs unpredictability.

/// The generator; the field is its state (never 0, or it stays 0).
#[derive(Clone, Debug)]
pub struct XorShift64(pub u64);

impl XorShift64 {
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
