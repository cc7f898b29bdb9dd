//! The CPU as the ID registers, exception syndromes and optional architecture features
//! (FEAT_MOPS, FEAT_GCS) present it: feature decoding, HWCAPs, and what the kernel must do
//! on the exceptions those features raise.

pub mod cpu;
pub mod esr;
pub mod gcs;
pub mod hwcap;
pub mod idregs;
pub mod mops;
