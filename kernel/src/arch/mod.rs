//! Architecture code. Svelt is AArch64-only; the module boundary keeps asm!, system registers
//! and exception vectors in one place.
pub mod aarch64;
