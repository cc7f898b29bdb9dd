//! Register sets (PTRACE_GETREGSET/SETREGSET and the notes of a core file), each as Linux lays
//! it out: NT_PRSTATUS, NT_PRFPREG, NT_ARM_TLS, NT_ARM_SYSTEM_CALL, NT_ARM_HW_BREAK/WATCH,
//! NT_ARM_PAC_MASK, NT_ARM_FPMR, NT_ARM_SVE, NT_ARM_SSVE, NT_ARM_ZA, NT_ARM_ZT.
//!
//! Every function here takes a task `t` that is either the current task, or a tracee in a
//! ptrace stop that is off its CPU: the ptrace layer guarantees one or the other.

use crate::task::Task;
use svelt_abi::errno::{Errno, SysResult};

/// A regset's unit (iov_len must be a multiple of it) and maximum size in bytes; None: the
/// note type is unknown or the CPU lacks what it describes (EINVAL).
pub fn info(nt: u32) -> Option<(usize, usize)> {
    let _ = nt;
    None
}

/// The regset's contents (its meaningful bytes; the caller pads with zeros up to what it
/// copies).
pub fn get(t: &Task, nt: u32) -> SysResult<alloc::vec::Vec<u8>> {
    let _ = (t, nt);
    Err(Errno::EINVAL)
}

/// Writes a regset from `data` (already clamped to the regset's maximum).
pub fn set(t: &Task, nt: u32, data: &[u8]) -> SysResult<()> {
    let _ = (t, nt, data);
    Err(Errno::EINVAL)
}
