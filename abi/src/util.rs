//! Small helpers the other groups share: little-endian field access and a deterministic
//! random generator for tests.

pub mod bytes;
pub mod rng;
