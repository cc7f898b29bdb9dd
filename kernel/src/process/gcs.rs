//! Guarded control stacks for user threads (FEAT_GCS), as Linux 7.3 offers them: the
//! PR_*_SHADOW_STACK_STATUS controls, map_shadow_stack, the GCS a thread gets when it turns
//! GCS on or is created as a thread of a GCS process, GCSPR_EL0 and GCSCRE0_EL1 switched with
//! the thread, and the signal-frame side. The rules are `svelt_abi::isa::gcs`'s; this file moves
//! registers and memory. Offered only where the CPU also has stage-1 permission indirection,
//! which GCS pages need (arch::gcs).

#![forbid(unsafe_code)]

use crate::arch::gcs as hw;
use crate::arch::mmu::PAGE_SIZE;
use crate::mm::aspace::{Backing, Prot};
use crate::mm::uaccess::UserPtr;
use crate::process::{CurrentTask, Held, TaskLocal};
use svelt_abi::fp::sigframe::BadFrame;
use svelt_abi::isa::gcs::{self as g, GcsState};
use svelt_abi::uapi::errno::{Errno, SysResult};

/// Whether user space has GCS (each CPU's bring-up turns it on: cpufeature::init_this_cpu).
pub fn available() -> bool {
    crate::cpufeature::gcs()
}

/// A thread's state; `running` when it is the thread on this CPU, whose GCSPR_EL0 is live.
fn state_of(l: &TaskLocal, running: bool) -> GcsState {
    let mut s = l.gcs.get();
    if running && available() {
        s.gcspr = hw::read_gcspr_el0();
    }
    s
}

/// The running thread's state with its live GCSPR_EL0.
pub fn live(cur: &CurrentTask) -> GcsState {
    state_of(cur.local(), true)
}

/// The running thread's state when GCS is on for it.
fn live_enabled(cur: &CurrentTask) -> Option<GcsState> {
    Some(live(cur)).filter(|s| available() && s.enabled())
}

/// Sets the running thread's state, registers included.
fn set_live(cur: &CurrentTask, s: GcsState) {
    let old = cur.local().gcs.replace(s);
    if available() {
        hw::write_gcspr_el0(s.gcspr);
        if old.mode != s.mode {
            hw::set_el0_mode(s.mode);
        }
    }
}

fn page() -> u64 {
    PAGE_SIZE as u64
}

/// Maps `len` bytes of shadow stack at `addr` (0: anywhere; else exactly there, EEXIST if
/// taken), within the process's limits. Returns the start.
fn map_gcs(cur: &CurrentTask, addr: u64, len: u64) -> SysResult<u64> {
    use crate::mm::place::{map_new, Place};
    let len = usize::try_from(len).map_err(|_| Errno::ENOMEM)?;
    let place = if addr == 0 {
        Place::Hint
    } else {
        Place::NoReplace
    };
    let prot = Prot(Prot::READ | Prot::WRITE | Prot::SHADOW);
    let rlimit = |r| cur.process().rlimit(r);
    cur.with_mm(|mm| map_new(mm, addr as usize, len, prot, Backing::Anon, place, rlimit))
        .map(|a| a as u64)
}

/// map_shadow_stack(addr, size, flags).
pub fn map_shadow_stack(cur: &CurrentTask, addr: u64, size: u64, flags: u64) -> SysResult<usize> {
    if !available() {
        return Err(Errno::EOPNOTSUPP);
    }
    let req = g::map_shadow_stack_check(addr, size, flags, page())?;
    let start = map_gcs(cur, addr, req.len)?;
    if let Some(off) = req.token_at {
        let at = start + off;
        if crate::arch::uaccess::gcs_store_user(at as usize, g::cap_token(at)).is_err() {
            let _ = cur.with_mm(|mm| mm.unmap(start as usize, (start + req.len) as usize));
            return Err(Errno::EFAULT);
        }
        hw::barrier();
    }
    Ok(start as usize)
}

/// Gives a thread a GCS of its own: `size` bytes (0: from RLIMIT_STACK), GCSPR_EL0 at its top
/// slot.
fn give_thread_gcs(cur: &CurrentTask, s: &mut GcsState, size: u64) -> SysResult<()> {
    let rlimit = cur.process().rlimit(svelt_abi::uapi::sys::RLIMIT_STACK);
    let size = g::gcs_size(size, rlimit, page());
    s.base = map_gcs(cur, 0, size)?;
    s.size = size;
    s.gcspr = s.base + size - 8;
    Ok(())
}

pub fn prctl_get(cur: &CurrentTask, ptr: usize) -> SysResult<usize> {
    if !available() {
        return Err(Errno::EINVAL);
    }
    UserPtr::<u64>::new(ptr).write(&u64::from(cur.local().gcs.get().mode))?;
    Ok(0)
}

pub fn prctl_set(cur: &CurrentTask, arg: u64) -> SysResult<usize> {
    if !available() {
        return Err(Errno::EINVAL);
    }
    let mut s = live(cur);
    match g::set_status(&s, arg)? {
        g::SetStatus::Mode(m) => s.mode = m,
        g::SetStatus::Enable(m) => {
            give_thread_gcs(cur, &mut s, 0)?;
            s.mode = m;
        }
    }
    set_live(cur, s);
    Ok(0)
}

pub fn prctl_lock(cur: &CurrentTask, arg: u64) -> SysResult<usize> {
    if !available() {
        return Err(Errno::EINVAL);
    }
    let mut s = cur.local().gcs.get();
    s.locked |= arg as u32;
    cur.local().gcs.set(s);
    Ok(0)
}

/// A new task's GCS state: a thread (CLONE_VM without CLONE_VFORK) of a thread with GCS on
/// gets a GCS of its own (`stack_size` / 2, or from RLIMIT_STACK); fork and vfork go on with
/// the parent's GCSPR_EL0 (a fork child on its copy). Mode and locks are inherited.
pub fn for_child(
    cur: &CurrentTask,
    clone_vm: bool,
    vfork: bool,
    stack_size: u64,
) -> SysResult<GcsState> {
    let p = live(cur);
    let mut c = GcsState {
        base: 0,
        size: 0,
        ..p
    };
    if !available() || !p.enabled() {
        return Ok(c);
    }
    if clone_vm && !vfork {
        give_thread_gcs(cur, &mut c, stack_size / 2)?;
    }
    Ok(c)
}

/// execve: GCS off, unlocked, no GCS (the old address space, and with it any GCS, is gone).
pub fn flush(cur: &CurrentTask) {
    set_live(cur, GcsState::default());
}

/// A thread exiting while its address space lives on: the GCS the kernel made for it goes.
pub fn thread_exit(cur: &CurrentTask) {
    let s = cur.local().gcs.get();
    if s.base != 0 {
        let _ = cur.with_mm(|mm| mm.unmap(s.base as usize, (s.base + s.size) as usize));
    }
}

// ---- signals ----

/// The gcs_context body for a frame (when the thread has a GCSPR): GCSPR_EL0 as it will be
/// after delivery pushed the signal token, and the mode.
pub fn frame_body(cur: &CurrentTask) -> Option<[u8; 24]> {
    if !available() {
        return None;
    }
    let s = live(cur);
    if s.gcspr == 0 {
        return None;
    }
    // GCSPR_EL0 is whatever user space (or a tracer) made it: no arithmetic may trap.
    let gcspr = s.gcspr.wrapping_sub(if s.enabled() { 8 } else { 0 });
    Some(g::record_body(gcspr, s.mode))
}

/// Delivery with GCS on: the handler's return address (`ret`, what x30 holds) and a signal
/// token above it go on the GCS, so that the handler's RET finds its address and rt_sigreturn
/// the token. Err: a store faulted (the delivery fails).
pub fn signal_entry(cur: &CurrentTask, ret: u64) -> Result<(), ()> {
    let Some(s) = live_enabled(cur) else {
        return Ok(());
    };
    let top = s.gcspr;
    let ret_at = top.wrapping_sub(16);
    let cap_at = top.wrapping_sub(8);
    crate::arch::uaccess::gcs_store_user(ret_at as usize, ret)?;
    crate::arch::uaccess::gcs_store_user(cap_at as usize, g::signal_cap(cap_at))?;
    hw::write_gcspr_el0(ret_at);
    Ok(())
}

/// Installs what rt_sigreturn's gcs_context asked for (`abi::fp::sigframe::check_records` checked
/// it against `live`): the mode and GCSPR_EL0.
pub fn install(cur: &CurrentTask, r: g::Restore) {
    let s = cur.local().gcs.get();
    set_live(
        cur,
        GcsState {
            mode: r.mode,
            gcspr: r.gcspr,
            ..s
        },
    );
}

/// The end of rt_sigreturn with GCS on: the signal token GCSPR_EL0 points at must be the one
/// delivery left; it is cleared and popped.
pub fn restore_signal(cur: &CurrentTask) -> Result<(), BadFrame> {
    let Some(s) = live_enabled(cur) else {
        return Ok(());
    };
    let at = s.gcspr;
    hw::barrier();
    let cap = UserPtr::<u64>::new(at as usize)
        .read()
        .map_err(|_| BadFrame::Fault)?;
    if cap != g::signal_cap(at) {
        return Err(BadFrame::BadGcs);
    }
    crate::arch::uaccess::gcs_store_user(at as usize, 0).map_err(|_| BadFrame::Fault)?;
    hw::write_gcspr_el0(at.wrapping_add(8));
    Ok(())
}

// ---- ptrace and core dumps ----

fn held_state(h: &Held) -> GcsState {
    state_of(h.local(), h.is_current())
}

/// NT_ARM_GCS read.
pub fn regset_get(h: &Held) -> SysResult<[u8; 24]> {
    if !available() {
        return Err(Errno::EINVAL);
    }
    Ok(g::regset_encode(&held_state(h)))
}

/// NT_ARM_GCS write: stored as given; a stopped tracee loads it when it next runs.
pub fn regset_set(h: &Held, data: &[u8]) -> SysResult<()> {
    if !available() {
        return Err(Errno::EINVAL);
    }
    let s = g::regset_set(&held_state(h), data)?;
    h.local().gcs.set(s);
    if h.is_current() {
        hw::write_gcspr_el0(s.gcspr);
        hw::set_el0_mode(s.mode);
    }
    Ok(())
}
