//! FP/SIMD, SVE and SME state: the lazy state machine and its policies, vector lengths, and
//! the layouts that carry the registers to user space (signal frames, ptrace regsets).

pub mod fppolicy;
pub mod fpstate;
pub mod regset;
pub mod sigframe;
pub mod vl;
pub mod vlctl;
