//! Register sets (PTRACE_GETREGSET/SETREGSET and the notes of a core file), each as Linux lays
//! it out: NT_PRSTATUS, NT_PRFPREG, NT_ARM_TLS, NT_ARM_SYSTEM_CALL, NT_ARM_HW_BREAK/WATCH,
//! NT_ARM_PAC_MASK, NT_ARM_SVE, NT_ARM_SSVE, NT_ARM_ZA, NT_ARM_ZT (NT_ARM_FPMR is absent:
//! Svelt does not advertise FPMR). Layouts and rules live in `svelt_abi::regset`; the FP
//! state is reached through the "ptrace and core dumps" section of `crate::fpstate`.
//!
//! Every function here takes a task `t` that is either the current task (a core dump: its
//! live registers are saved first), or a tracee in a ptrace stop / a thread of a process
//! dumping core, off its CPU and unable to run until the caller lets it: the caller
//! guarantees one or the other. Writes to FP state invalidate the task's CPU ownership, so it
//! reloads what was written on whichever CPU it resumes.

use crate::task::Task;
use alloc::vec::Vec;
use spin::Once;
use svelt_abi::errno::{Errno, SysResult};
use svelt_abi::regset::{self as rs, Caps, HwDebugInfo, VecMode};
use svelt_abi::sigframe::UserRegs;

/// User virtual addresses have 48 bits (TCR_EL1.T0SZ = 16, set at boot): TASK_SIZE and the
/// PAC mask follow from it.
const USER_VA_BITS: u32 = 48;

const HWCAP_PACA: u64 = 1 << 30;

fn caps() -> Caps {
    let f = crate::cpufeature::features();
    let sme = crate::cpufeature::offer().sme;
    Caps {
        sve: f.sve,
        sme,
        sme2: sme && f.sme2(),
        pauth: crate::cpufeature::hwcaps().0 & HWCAP_PACA != 0,
        fpmr: false,
    }
}

/// The debug resources, from the boot CPU's ID_AA64DFR0_EL1.
pub(crate) fn hw_info() -> HwDebugInfo {
    static INFO: Once<HwDebugInfo> = Once::new();
    *INFO.call_once(|| {
        let dfr0 = crate::arch::aarch64::debug::id_aa64dfr0();
        HwDebugInfo::from_dfr0(dfr0, USER_VA_BITS)
    })
}

/// A regset's unit (iov_len must be a multiple of it) and maximum size in bytes; None: the
/// note type is unknown or the CPU lacks what it describes (EINVAL).
pub fn info(nt: u32) -> Option<(usize, usize)> {
    rs::info(nt, caps())
}

/// The user registers in `t`'s trap frame.
fn user_regs(t: &Task) -> UserRegs {
    // SAFETY: the trap frame of the current task, or of a task off its CPU (this module's
    // contract), which nobody else writes meanwhile.
    let tf = unsafe { &*t.trap_frame() };
    UserRegs {
        regs: tf.x,
        sp: tf.sp_el0,
        pc: tf.elr,
        pstate: tf.spsr,
    }
}

fn copy_vec(b: &[u8]) -> SysResult<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(b.len()).map_err(|_| Errno::ENOMEM)?;
    v.extend_from_slice(b);
    Ok(v)
}

fn tpidr_el0(t: &Task) -> u64 {
    if core::ptr::eq(t, crate::task::sched::current()) {
        crate::task::sched::current_tpidr_el0()
    } else {
        // SAFETY: a task off its CPU (this module's contract); its TPIDR_EL0 was saved at
        // switch-out and is loaded from here at switch-in.
        unsafe { t.local().tpidr_el0 }
    }
}

/// The regset's contents (its meaningful bytes; the caller pads with zeros up to what it
/// copies).
pub fn get(t: &Task, nt: u32) -> SysResult<Vec<u8>> {
    if info(nt).is_none() {
        return Err(Errno::EINVAL);
    }
    match nt {
        rs::NT_PRSTATUS => copy_vec(&rs::gpr_encode(&user_regs(t))),
        rs::NT_PRFPREG => copy_vec(&rs::fpsimd_encode(&crate::fpstate::regset_fpsimd(t))),
        rs::NT_ARM_TLS => copy_vec(&rs::tls_encode(
            tpidr_el0(t),
            crate::fpstate::regset_tpidr2(t),
        )),
        rs::NT_ARM_SYSTEM_CALL => {
            // SAFETY: this module's contract (current task, or one off its CPU).
            let nr = unsafe { t.local().in_syscall } as i32;
            copy_vec(&nr.to_le_bytes())
        }
        rs::NT_ARM_HW_BREAK | rs::NT_ARM_HW_WATCH => {
            // SAFETY: as above.
            let d = unsafe { &t.local().hw_debug };
            copy_vec(&d.encode(nt, &hw_info()))
        }
        rs::NT_ARM_PAC_MASK => copy_vec(&rs::pac_mask_encode(USER_VA_BITS)),
        rs::NT_ARM_SVE => crate::fpstate::regset_sve_get(t, VecMode::Sve),
        rs::NT_ARM_SSVE => crate::fpstate::regset_sve_get(t, VecMode::Streaming),
        rs::NT_ARM_ZA => crate::fpstate::regset_za_get(t),
        rs::NT_ARM_ZT => copy_vec(&crate::fpstate::regset_zt_get(t)?),
        _ => Err(Errno::EINVAL),
    }
}

/// Writes a regset from `data` (already clamped to the regset's maximum).
pub fn set(t: &Task, nt: u32, data: &[u8]) -> SysResult<()> {
    if info(nt).is_none() {
        return Err(Errno::EINVAL);
    }
    match nt {
        rs::NT_PRSTATUS => {
            let cur = user_regs(t);
            // SS stays as the ptrace layer set it (Linux: set exactly while single-stepping).
            let stepping = cur.pstate & rs::DBG_SPSR_SS != 0;
            let new = rs::gpr_set(&cur, data, stepping)?;
            // SAFETY: as in `user_regs`.
            let tf = unsafe { &mut *t.trap_frame() };
            tf.x = new.regs;
            tf.sp_el0 = new.sp;
            tf.elr = new.pc;
            tf.spsr = new.pstate;
            Ok(())
        }
        rs::NT_PRFPREG => {
            let cur = crate::fpstate::regset_fpsimd(t);
            crate::fpstate::regset_set_fpsimd(t, &rs::fpsimd_set(&cur, data, 0))
        }
        rs::NT_ARM_TLS => {
            let sme = caps().sme;
            let (tp, tp2) = rs::tls_set(tpidr_el0(t), crate::fpstate::regset_tpidr2(t), data, sme);
            if core::ptr::eq(t, crate::task::sched::current()) {
                crate::task::sched::set_current_tpidr_el0(tp);
            } else {
                // SAFETY: as in `tpidr_el0`.
                unsafe { t.local().tpidr_el0 = tp };
            }
            crate::fpstate::regset_set_tpidr2(t, tp2);
            Ok(())
        }
        rs::NT_ARM_SYSTEM_CALL => {
            // SAFETY: this module's contract. The syscall path re-reads it after the stop.
            let l = unsafe { t.local() };
            l.in_syscall = i64::from(rs::syscall_set(l.in_syscall as i32, data));
            Ok(())
        }
        rs::NT_ARM_HW_BREAK | rs::NT_ARM_HW_WATCH => {
            // SAFETY: as above.
            let d = unsafe { &mut t.local().hw_debug };
            d.set(nt, data, &hw_info())
        }
        // The mask is fixed by the hardware and the VA size: Linux has no setter.
        rs::NT_ARM_PAC_MASK => Err(Errno::EOPNOTSUPP),
        rs::NT_ARM_SVE => crate::fpstate::regset_sve_set(t, VecMode::Sve, data),
        rs::NT_ARM_SSVE => crate::fpstate::regset_sve_set(t, VecMode::Streaming, data),
        rs::NT_ARM_ZA => crate::fpstate::regset_za_set(t, data),
        rs::NT_ARM_ZT => crate::fpstate::regset_zt_set(t, data),
        _ => Err(Errno::EINVAL),
    }
}
