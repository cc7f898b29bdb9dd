//! The rt_sigframe: written on delivery, validated and restored by rt_sigreturn. Layout and
//! validation are svelt_abi::sigframe's (host-tested); this file moves registers and bytes.

use super::{AltStack, SigAction, SigInfo};
use crate::arch::aarch64::exception::TrapFrame;
use crate::arch::aarch64::fpsimd::fpsimd::FpsimdState;
use crate::mm::aspace::Access;
use crate::task::{self, Task};
use alloc::sync::Arc;
use alloc::vec;
use svelt_abi::sigframe as sf;
use svelt_abi::signal::{self as sig, Sigset};

fn user_regs(tf: &TrapFrame) -> sf::UserRegs {
    sf::UserRegs {
        regs: tf.x,
        sp: tf.sp_el0,
        pc: tf.elr,
        pstate: tf.spsr,
    }
}

fn to_abi(f: &FpsimdState) -> sf::FpsimdState {
    sf::FpsimdState {
        vregs: f.vregs,
        fpsr: f.fpsr,
        fpcr: f.fpcr,
    }
}

/// Which records this system's frames may carry.
fn features() -> sf::SigFeatures {
    sf::SigFeatures {
        fpsimd: true,
        sve: crate::cpufeature::features().sve,
        ..Default::default()
    }
}

/// Writes the frame for `info` on the user stack (or the alternate stack) and points the
/// registers at the handler. Err if the frame cannot be written.
pub fn setup(
    t: &Arc<Task>,
    tf: &mut TrapFrame,
    info: &SigInfo,
    a: &SigAction,
    mask: u64,
    alt: AltStack,
) -> Result<(), ()> {
    let (fp, vl, sve_payload) = crate::fpstate::for_signal(t);
    let fp = to_abi(&fp);
    // sve_context: the payload when SVE state is live, else just the header with the VL.
    let mut sve_body = alloc::vec::Vec::new();
    let mut records = alloc::vec::Vec::new();
    if crate::cpufeature::features().sve {
        sve_body.extend_from_slice(&(vl as u16).to_le_bytes());
        sve_body.extend_from_slice(&[0u8; 6]); // flags, reserved
        let size = match sve_payload {
            Some(p) => {
                sve_body.extend_from_slice(p);
                sf::sve_sig_context_size(vl / 16).next_multiple_of(16)
            }
            None => sf::SVE_CONTEXT_HEAD_SIZE,
        };
        records.push(sf::RecordSpec {
            magic: sf::SVE_MAGIC,
            size,
            body: &sve_body,
        });
    }
    // SAFETY: the current task's own locals.
    let l = unsafe { t.local() };
    let esr = core::mem::take(&mut l.fault_esr);
    let fault_address = core::mem::take(&mut l.fault_address);
    let regs = user_regs(tf);
    let d = sf::SigDelivery {
        sp_top: alt.frame_top(tf.sp_el0, a.sa_flags),
        signo: info.signo(),
        info,
        action: a,
        uc_stack: alt.saved(),
        sigmask: Sigset(mask),
        regs: &regs,
        fault_address,
        esr: (esr != 0).then_some(esr),
        fpsimd: Some(&fp),
        records: &records,
        bti: false,
        sigtramp: crate::mm::aspace::SIGTRAMP as u64,
    };
    let plan = d.plan().map_err(|_| ())?;
    let mut img = vec![0u8; plan.image_len];
    d.write(&plan, &mut img).map_err(|_| ())?;
    task::with_mm(|mm| {
        if !mm.range_ok(plan.base as usize, img.len(), Access::Write) {
            return Err(svelt_abi::errno::Errno::EFAULT);
        }
        mm.write(plan.base as usize, &img)
    })
    .map_err(|_| ())?;
    if a.sa_flags & sig::SA_ONSTACK != 0 {
        t.sig.lock().altstack.disarm_after_save();
    }
    let e = plan.entry;
    tf.x[0] = e.x0;
    if let Some(x1) = e.x1 {
        tf.x[1] = x1;
    }
    if let Some(x2) = e.x2 {
        tf.x[2] = x2;
    }
    tf.sp_el0 = e.sp;
    tf.x[29] = e.x29;
    tf.x[30] = e.x30;
    tf.elr = e.pc;
    tf.spsr = e.pstate;
    Ok(())
}

/// rt_sigreturn: restores the interrupted context from the frame at SP, or kills the caller
/// with SIGSEGV if the frame is malformed.
pub fn sigreturn(tf: &mut TrapFrame) {
    let t = task::current_arc();
    // SAFETY: the current task's own locals.
    unsafe { t.local().in_syscall = -1 };
    let sp = tf.sp_el0;
    let mut frame = [0u8; sf::RT_SIGFRAME_SIZE];
    // Extra space no larger than the biggest frame this system writes (Linux accepts up to
    // SIGFRAME_MAXSZ; a larger, hand-made one is refused here).
    let mut extra = vec![0u8; max_frame_size()];
    let mut read_user = |addr: u64, buf: &mut [u8]| {
        task::with_mm(|mm| mm.read(addr as usize, buf)).map_err(|_| sf::Efault)
    };
    let r = sf::parse_sigreturn(sp, &mut read_user, &features(), &mut frame, &mut extra);
    if let Some(m) = r.sigmask {
        t.sig.lock().blocked = m.blockable().0;
    }
    let restored = match r.frame {
        Ok(f) => f,
        Err(e) => {
            log::debug!("pid {}: bad signal frame at {sp:#x}: {e:?}", t.pid());
            bad_frame(&t, sp);
            return;
        }
    };
    tf.x = restored.regs.regs;
    tf.sp_el0 = restored.regs.sp;
    tf.elr = restored.regs.pc;
    tf.spsr = restored.regs.pstate;
    let fp = FpsimdState {
        vregs: restored.fpsimd.vregs,
        fpsr: restored.fpsimd.fpsr,
        fpcr: restored.fpsimd.fpcr,
        _pad: [0; 2],
    };
    match sve_payload(restored.sve, crate::fpstate::sve_vl(&t)) {
        Ok(payload) => crate::fpstate::from_sigreturn(&t, fp, payload),
        Err(why) => {
            log::debug!("pid {}: bad sve_context at {sp:#x}: {why}", t.pid());
            bad_frame(&t, sp);
            return;
        }
    }
    if let Some(ss) = r.uc_stack {
        let mut alt = t.sig.lock().altstack;
        if alt.set(ss, tf.sp_el0, sig::MINSIGSTKSZ).is_ok() {
            t.sig.lock().altstack = alt;
        }
    }
}

/// Checks an sve_context record (head included) against the task's VL: `Ok(None)` means an
/// FPSIMD-only restore, `Ok(Some(payload))` a full SVE one.
fn sve_payload(rec: Option<&[u8]>, vl: u32) -> Result<Option<&[u8]>, &'static str> {
    let Some(rec) = rec else { return Ok(None) };
    if rec.len() < sf::SVE_CONTEXT_HEAD_SIZE as usize {
        return Err("record smaller than its header");
    }
    let rec_vl = u16::from_le_bytes([rec[8], rec[9]]) as u32;
    let flags = u16::from_le_bytes([rec[10], rec[11]]);
    if flags & sf::SVE_SIG_FLAG_SM != 0 {
        return Err("streaming flag without SME");
    }
    if rec_vl != vl {
        return Err("vector length differs from the task's");
    }
    if rec.len() == sf::SVE_CONTEXT_HEAD_SIZE as usize {
        return Ok(None);
    }
    let vq = vl / 16;
    if rec.len() < sf::sve_sig_context_size(vq) as usize {
        return Err("record too small for its vector length");
    }
    Ok(Some(
        &rec[16..16 + crate::arch::aarch64::fpsimd::sve::state_size(vq as usize)],
    ))
}

/// A bad frame: SIGSEGV, SEGV_ACCERR if SP points into a mapping, else SEGV_MAPERR (as Linux's
/// arm64_notify_segfault decides).
fn bad_frame(t: &Arc<Task>, sp: u64) {
    let mapped = task::with_mm(|mm| Ok(mm.find_vma(sp as usize).is_some())).unwrap_or(false);
    let code = if mapped {
        sig::SEGV_ACCERR
    } else {
        sig::SEGV_MAPERR
    };
    super::force(t, sig::SIGSEGV, SigInfo::fault(sig::SIGSEGV, code, sp));
}

/// The largest frame this system delivers (for AT_MINSIGSTKSZ).
pub fn max_frame_size() -> usize {
    let mut sizes = alloc::vec![sf::FPSIMD_CONTEXT_SIZE, sf::ESR_CONTEXT_SIZE];
    if let Some(vl) = crate::cpufeature::sve_max_vl() {
        sizes.push(sf::sve_sig_context_size(vl / 16).next_multiple_of(16));
    }
    sf::minsigstksz(&sizes).map_or(sf::RT_SIGFRAME_SIZE, |n| n - 32)
}
