//! Restartable sequences (rseq(2)), as glibc registers one for every thread: the kernel keeps
//! the thread's `struct rseq` telling which CPU it runs on, and when the thread was preempted,
//! migrated or is about to take a signal inside a critical section its `rseq_cs` describes, it
//! resumes at that section's abort handler instead.
//!
//! The work is done on the way back to user mode, only for threads that were switched out
//! since they last went there (the scheduler sets `rseq_resched`), and before a signal frame is
//! built. A `struct rseq` or `rseq_cs` that cannot be read or written, or is inconsistent, is
//! SIGSEGV, as on Linux.

#![forbid(unsafe_code)]

use crate::arch::exception::TrapFrame;
use crate::mm::uaccess::UserPtr;
use crate::process::CurrentTask;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::signal::Siginfo;

/// A thread's registration (kept in the task's locals, where the switch marks it).
pub use crate::task::local::RseqArea as Registration;

/// `struct rseq` as first defined (its size is the smallest accepted length).
const ORIG_SIZE: u32 = 32;
/// The fields up to `mm_cid` (offsetof(struct rseq, end)): a longer registration needs them.
const FIELDS_END: u32 = 28;
const FLAG_UNREGISTER: u32 = 1;
/// RSEQ_FLAG_SLICE_EXT_DEFAULT_ON: accepted and ignored (Svelt grants no time-slice
/// extensions; Linux ignores it too for a 32-byte area).
const FLAG_SLICE_EXT_DEFAULT_ON: u32 = 2;
/// `cpu_id` of a thread with no registration.
const CPU_ID_UNINITIALIZED: u32 = u32::MAX;

// Offsets in struct rseq.
const CPU_ID_START: usize = 0;
const CPU_ID: usize = 4;
const RSEQ_CS: usize = 8;
const FLAGS: usize = 16;
const NODE_ID: usize = 20;
const MM_CID: usize = 24;

pub fn rseq(cur: &CurrentTask, addr: usize, len: u32, flags: u32, sig: u32) -> SysResult<usize> {
    let local = cur.local();
    if flags & FLAG_UNREGISTER != 0 {
        if flags & !FLAG_UNREGISTER != 0 {
            return Err(Errno::EINVAL);
        }
        let Some(reg) = local.rseq.get() else {
            return Err(Errno::EINVAL);
        };
        if reg.addr != addr || reg.len != len {
            return Err(Errno::EINVAL);
        }
        if reg.sig != sig {
            return Err(Errno::EPERM);
        }
        write_ids(addr, 0, CPU_ID_UNINITIALIZED, 0).map_err(|_| Errno::EFAULT)?;
        local.rseq.set(None);
        return Ok(0);
    }
    // Unknown flags are refused before anything else, also when already registered.
    if flags & !FLAG_SLICE_EXT_DEFAULT_ON != 0 {
        return Err(Errno::EINVAL);
    }
    if let Some(reg) = local.rseq.get() {
        if reg.addr != addr || reg.len != len {
            return Err(Errno::EINVAL);
        }
        if reg.sig != sig {
            return Err(Errno::EPERM);
        }
        return Err(Errno::EBUSY);
    }
    // The original size aligned to itself, or a longer area holding every field Svelt
    // keeps, aligned to that size rounded up to a power of two (Linux's rule for its own
    // feature size).
    let aligned = if len == ORIG_SIZE {
        addr.is_multiple_of(ORIG_SIZE as usize)
    } else {
        addr.is_multiple_of(FIELDS_END.next_power_of_two() as usize) && len >= FIELDS_END
    };
    if len < ORIG_SIZE || !aligned {
        return Err(Errno::EINVAL);
    }
    crate::mm::uaccess::UserSlice::new(addr, len as usize)
        .check()
        .map_err(|_| Errno::EFAULT)?;
    // A stale rseq_cs (a reused area) is cleared rather than followed; the CPU fields read
    // "uninitialized" until they are filled on the way out. An area that cannot be written
    // is EFAULT now rather than SIGSEGV later.
    UserPtr::<u64>::new(addr + RSEQ_CS)
        .write(&0)
        .and_then(|()| UserPtr::<u32>::new(addr + FLAGS).write(&0))
        .and_then(|()| write_ids(addr, CPU_ID_UNINITIALIZED, CPU_ID_UNINITIALIZED, 0))
        .map_err(|_| Errno::EFAULT)?;
    local.rseq.set(Some(Registration { addr, len, sig }));
    // The CPU fields are filled on the way out.
    local.rseq_resched.set(true);
    cur.work.set(crate::task::work::RSEQ);
    Ok(0)
}

fn write_ids(addr: usize, start: u32, cpu: u32, cid: u32) -> SysResult<()> {
    UserPtr::<u32>::new(addr + CPU_ID_START).write(&start)?;
    UserPtr::<u32>::new(addr + CPU_ID).write(&cpu)?;
    UserPtr::<u32>::new(addr + NODE_ID).write(&0)?;
    UserPtr::<u32>::new(addr + MM_CID).write(&cid)?;
    Ok(())
}

/// `struct rseq_cs`.
#[repr(C)]
#[derive(Clone, Copy, Default, zerocopy::FromBytes, zerocopy::IntoBytes, zerocopy::Immutable)]
struct CriticalSection {
    version: u32,
    flags: u32,
    start_ip: u64,
    post_commit_offset: u64,
    abort_ip: u64,
}

/// If the thread was interrupted inside its current critical section, moves it to the abort
/// handler; clears `rseq_cs` either way. Err: the user's structures are bad (SIGSEGV).
fn fixup_ip(reg: Registration, tf: &mut TrapFrame) -> Result<(), ()> {
    let cs_ptr = UserPtr::<u64>::new(reg.addr + RSEQ_CS)
        .read()
        .map_err(|_| ())?;
    if cs_ptr == 0 {
        return Ok(());
    }
    let cs = UserPtr::<CriticalSection>::new(cs_ptr as usize)
        .read()
        .map_err(|_| ())?;
    let end = cs.start_ip.checked_add(cs.post_commit_offset).ok_or(())?;
    if cs.version != 0 || (cs.start_ip..end).contains(&cs.abort_ip) {
        return Err(());
    }
    if !(cs.start_ip..end).contains(&tf.elr) {
        // Outside the section: it is over (Linux clears the pointer lazily the same way).
        return UserPtr::<u64>::new(reg.addr + RSEQ_CS)
            .write(&0)
            .map_err(|_| ());
    }
    let signature = UserPtr::<u32>::new(cs.abort_ip.wrapping_sub(4) as usize)
        .read()
        .map_err(|_| ())?;
    if signature != reg.sig {
        return Err(());
    }
    UserPtr::<u64>::new(reg.addr + RSEQ_CS)
        .write(&0)
        .map_err(|_| ())?;
    tf.elr = cs.abort_ip;
    Ok(())
}

fn segv(cur: &CurrentTask) {
    crate::process::signal::force(
        cur.task(),
        svelt_abi::uapi::signal::SIGSEGV,
        Siginfo::kernel(svelt_abi::uapi::signal::SIGSEGV),
    );
}

/// On the way back to user mode after the thread was switched out: abort a critical section
/// it was in, and tell it which CPU it now runs on.
pub fn resume(cur: &CurrentTask, tf: &mut TrapFrame) {
    let local = cur.local();
    local.rseq_resched.set(false);
    let Some(reg) = local.rseq.get() else { return };
    let cpu = crate::percpu::cpu_id() as u32;
    if fixup_ip(reg, tf).is_err() || write_ids(reg.addr, cpu, cpu, cpu).is_err() {
        segv(cur);
    }
}

/// Before a signal frame is built: the frame must hold the abort handler's address if the
/// signal interrupted a critical section.
pub fn before_signal(cur: &CurrentTask, tf: &mut TrapFrame) {
    if let Some(reg) = cur.local().rseq.get() {
        if fixup_ip(reg, tf).is_err() {
            segv(cur);
        }
    }
}
