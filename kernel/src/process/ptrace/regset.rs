//! Register sets (PTRACE_GETREGSET/SETREGSET and the notes of a core file), each as Linux lays
//! it out: NT_PRSTATUS, NT_PRFPREG, NT_ARM_TLS, NT_ARM_SYSTEM_CALL, NT_ARM_HW_BREAK/WATCH,
//! NT_ARM_PAC_MASK, NT_ARM_TAGGED_ADDR_CTRL, NT_ARM_SVE, NT_ARM_SSVE, NT_ARM_ZA, NT_ARM_ZT,
//! NT_ARM_FPMR, NT_ARM_GCS. Layouts and rules live in `svelt_abi::fp::regset`; the FP
//! state is reached through `crate::task::fpstate`'s `regset_*` (kernel/src/task/fpstate/regset.rs).
//!
//! Every function here takes a `Held` task: the current task (a core dump: its live registers
//! are saved first), or a tracee frozen in a ptrace stop / a thread of a process dumping core,
//! parked off its CPU. Writes to FP state invalidate the task's CPU ownership, so it reloads
//! what was written on whichever CPU it resumes.

#![forbid(unsafe_code)]

use crate::process::Held;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use spin::Once;
use svelt_abi::fp::regset::{self as rs, Caps, HwDebugInfo, VecMode};
use svelt_abi::fp::sigframe::UserRegs;
use svelt_abi::uapi::errno::{Errno, SysResult};

/// User virtual addresses have 48 bits (TCR_EL1.T0SZ = 16, set at boot): TASK_SIZE and the
/// PAC mask follow from it.
const USER_VA_BITS: u32 = 48;

fn caps() -> Caps {
    let f = crate::cpufeature::features();
    let offer = crate::cpufeature::offer();
    Caps {
        sve: f.sve,
        sme: offer.sme,
        sme2: offer.sme && f.sme2(),
        pauth: crate::cpufeature::hwcaps().0[0] & svelt_abi::isa::hwcap::HWCAP_PACA != 0,
        fpmr: offer.fpmr && f.fpmr,
        gcs: crate::process::gcs::available(),
    }
}

/// The debug resources, from the boot CPU's ID_AA64DFR0_EL1.
pub(crate) fn hw_info() -> HwDebugInfo {
    static INFO: Once<HwDebugInfo> = Once::new();
    *INFO.call_once(|| {
        let dfr0 = crate::arch::debug::id_aa64dfr0();
        HwDebugInfo::from_dfr0(dfr0, USER_VA_BITS)
    })
}

/// A regset's unit (iov_len must be a multiple of it) and maximum size in bytes; None: the
/// note type is unknown or the CPU lacks what it describes (EINVAL).
pub fn info(nt: u32) -> Option<(usize, usize)> {
    rs::info(nt, caps())
}

/// A regset's size rules in Linux's table, whether or not this CPU has it (see
/// `svelt_abi::fp::regset::layout`).
pub fn layout(nt: u32) -> Option<(usize, usize)> {
    rs::layout(nt)
}

/// The user registers in `t`'s trap frame.
fn user_regs(t: &Held) -> UserRegs {
    let tf = t.trap_frame();
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

fn tpidr_el0(t: &Held) -> u64 {
    if t.is_current() {
        crate::task::sched::current_tpidr_el0()
    } else {
        // Saved at switch-out, loaded from here at switch-in.
        t.local().tpidr_el0.get()
    }
}

/// The regset's contents (its meaningful bytes; the caller pads with zeros up to what it
/// copies).
pub fn get(t: &Held, nt: u32) -> SysResult<Vec<u8>> {
    if info(nt).is_none() {
        return Err(Errno::EINVAL);
    }
    match nt {
        rs::NT_PRSTATUS => copy_vec(&rs::gpr_encode(&user_regs(t))),
        rs::NT_PRFPREG => copy_vec(&rs::fpsimd_encode(&crate::task::fpstate::regset_fpsimd(
            t.core(),
        ))),
        rs::NT_ARM_TLS => copy_vec(&rs::tls_encode(
            tpidr_el0(t),
            crate::task::fpstate::regset_tpidr2(t.core()),
        )),
        rs::NT_ARM_SYSTEM_CALL => {
            let nr = t.local().in_syscall.get() as i32;
            copy_vec(&nr.to_le_bytes())
        }
        rs::NT_ARM_HW_BREAK | rs::NT_ARM_HW_WATCH => {
            let d = t.local().hw_debug.borrow();
            copy_vec(&d.encode(nt, &hw_info()))
        }
        rs::NT_ARM_PAC_MASK => copy_vec(&rs::pac_mask_encode(USER_VA_BITS)),
        rs::NT_ARM_SVE => crate::task::fpstate::regset_sve_get(t.core(), VecMode::Sve),
        rs::NT_ARM_SSVE => crate::task::fpstate::regset_sve_get(t.core(), VecMode::Streaming),
        rs::NT_ARM_ZA => crate::task::fpstate::regset_za_get(t.core()),
        rs::NT_ARM_ZT => copy_vec(&crate::task::fpstate::regset_zt_get(t.core())?),
        rs::NT_ARM_FPMR => copy_vec(&crate::task::fpstate::regset_fpmr(t.core())?.to_le_bytes()),
        rs::NT_ARM_GCS => copy_vec(&crate::process::gcs::regset_get(t)?),
        // PR_GET_TAGGED_ADDR_CTRL's value (no MTE bits: Svelt offers no MTE).
        rs::NT_ARM_TAGGED_ADDR_CTRL => {
            let on = t.task().tagged_addr.load(Ordering::Relaxed);
            copy_vec(&u64::from(on).to_le_bytes())
        }
        _ => Err(Errno::EINVAL),
    }
}

/// Writes a regset from `data` (already clamped to the regset's maximum).
pub fn set(t: &Held, nt: u32, data: &[u8]) -> SysResult<()> {
    if info(nt).is_none() {
        return Err(Errno::EINVAL);
    }
    match nt {
        rs::NT_PRSTATUS => {
            let cur = user_regs(t);
            // SS stays as the ptrace layer set it (Linux: set exactly while single-stepping).
            let stepping = cur.pstate & rs::DBG_SPSR_SS != 0;
            let new = rs::gpr_set(&cur, data, stepping)?;
            let mut tf = t.trap_frame();
            tf.x = new.regs;
            tf.sp_el0 = new.sp;
            tf.elr = new.pc;
            tf.spsr = new.pstate;
            t.set_trap_frame(&tf);
            Ok(())
        }
        rs::NT_PRFPREG => {
            let cur = crate::task::fpstate::regset_fpsimd(t.core());
            crate::task::fpstate::regset_set_fpsimd(t.core(), &rs::fpsimd_set(&cur, data, 0))
        }
        rs::NT_ARM_TLS => {
            let sme = caps().sme;
            let (tp, tp2) = rs::tls_set(
                tpidr_el0(t),
                crate::task::fpstate::regset_tpidr2(t.core()),
                data,
                sme,
            );
            if t.is_current() {
                crate::task::sched::set_current_tpidr_el0(t.local(), tp);
            } else {
                t.local().tpidr_el0.set(tp);
            }
            crate::task::fpstate::regset_set_tpidr2(t.core(), tp2);
            Ok(())
        }
        rs::NT_ARM_SYSTEM_CALL => {
            // The syscall path re-reads it after the stop.
            let l = t.local();
            l.in_syscall
                .set(i64::from(rs::syscall_set(l.in_syscall.get() as i32, data)));
            Ok(())
        }
        rs::NT_ARM_HW_BREAK | rs::NT_ARM_HW_WATCH => {
            t.local().hw_debug.borrow_mut().set(nt, data, &hw_info())
        }
        // The mask is fixed by the hardware and the VA size: Linux has no setter.
        rs::NT_ARM_PAC_MASK => Err(Errno::EOPNOTSUPP),
        rs::NT_ARM_SVE => crate::task::fpstate::regset_sve_set(t.core(), VecMode::Sve, data),
        rs::NT_ARM_SSVE => crate::task::fpstate::regset_sve_set(t.core(), VecMode::Streaming, data),
        rs::NT_ARM_ZA => crate::task::fpstate::regset_za_set(t.core(), data),
        rs::NT_ARM_ZT => crate::task::fpstate::regset_zt_set(t.core(), data),
        rs::NT_ARM_FPMR => crate::task::fpstate::regset_set_fpmr(t.core(), data),
        rs::NT_ARM_GCS => crate::process::gcs::regset_set(t, data),
        // As PR_SET_TAGGED_ADDR_CTRL for the tracee (Linux's set_tagged_addr_ctrl): the bytes
        // given replace the value's low bytes, and bits other than PR_TAGGED_ADDR_ENABLE are
        // EINVAL. A stopped tracee picks it up when it is next switched in.
        rs::NT_ARM_TAGGED_ADDR_CTRL => {
            let mut b = u64::from(t.task().tagged_addr.load(Ordering::Relaxed)).to_le_bytes();
            rs::copyin(&mut b, data, 0);
            let ctrl = u64::from_le_bytes(b);
            if ctrl & !(svelt_abi::uapi::sys::PR_TAGGED_ADDR_ENABLE as u64) != 0 {
                return Err(Errno::EINVAL);
            }
            t.task().tagged_addr.store(ctrl != 0, Ordering::Relaxed);
            Ok(())
        }
        _ => Err(Errno::EINVAL),
    }
}
