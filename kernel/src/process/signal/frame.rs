//! The rt_sigframe: written on delivery, validated and restored by rt_sigreturn. Layout and
//! validation are svelt_abi::fp::sigframe's (host-tested); this file moves registers and bytes.

#![forbid(unsafe_code)]

use super::{AltStack, SigAction, SigInfo};
use crate::arch::exception::TrapFrame;
use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::process::{CurrentTask, Thread};
use svelt_abi::fp::sigframe as sf;
use svelt_abi::uapi::errno::Errno;
use svelt_abi::uapi::signal::{self as sig, Sigset};
use svelt_abi::util::bytes::get_u64;
use zerocopy::{FromBytes, IntoBytes};

// The trap frame's first 34 words are laid out as `UserRegs`: delivery reads them in place.
const _: () = {
    use core::mem::offset_of;
    assert!(offset_of!(TrapFrame, x) == offset_of!(sf::UserRegs, regs));
    assert!(offset_of!(TrapFrame, sp_el0) == offset_of!(sf::UserRegs, sp));
    assert!(offset_of!(TrapFrame, elr) == offset_of!(sf::UserRegs, pc));
    assert!(offset_of!(TrapFrame, spsr) == offset_of!(sf::UserRegs, pstate));
};

/// Which records this system's frames may carry (decided once: delivery and sigreturn ask on
/// every signal).
fn features() -> sf::SigFeatures {
    static FEATURES: spin::Once<sf::SigFeatures> = spin::Once::new();
    *FEATURES.call_once(|| {
        let f = crate::cpufeature::features();
        let sme = crate::cpufeature::offer().sme;
        sf::SigFeatures {
            fpsimd: true,
            sve: f.sve,
            sme,
            sme2: sme && f.sme2(),
            fpmr: f.fpmr,
            gcs: crate::process::gcs::available(),
            poe: false,
        }
    })
}

/// Writes the frame for `info` on the user stack (or the alternate stack) and points the
/// registers at the handler. Err if the frame cannot be written. With SA_ONSTACK, the caller
/// then disarms an SS_AUTODISARM stack (`AltStack::disarm_after_save`).
pub fn setup_rt_frame(
    t: &CurrentTask,
    tf: &mut TrapFrame,
    info: &SigInfo,
    a: &SigAction,
    mask: u64,
    alt: AltStack,
) -> Result<(), ()> {
    let st = crate::task::fpstate::for_signal(t.core());
    let mut scratch = None;
    let fp = st.fpsimd(&mut scratch);
    let f = features();
    let sme = f.sme;
    // The records after fpsimd, by name (the writer puts them in Linux's order); register
    // payloads go to the user stack straight from the saved state.
    let (sve_vl, streaming, sve_regs) = st.sve();
    let (za_vl, za_regs) = st.za();
    // The fault that raised the signal, if any: reported by this frame, and by the SIGSEGV
    // that follows should this frame not be written.
    let l = t.local();
    let esr = l.fault_esr.get();
    let records = sf::Records {
        esr: (esr != 0).then_some(esr),
        gcs: crate::process::gcs::frame_body(t),
        sve: (f.sve || sme).then_some(sf::VecRecord {
            vl: sve_vl as u16,
            flags: if streaming { sf::SVE_SIG_FLAG_SM } else { 0 },
            payload: sve_regs,
        }),
        tpidr2: sme.then_some(st.tpidr2),
        za: sme.then_some(sf::VecRecord {
            vl: za_vl as u16,
            flags: 0,
            payload: za_regs,
        }),
        zt0: if sme {
            st.zt0().and_then(|z| z.try_into().ok())
        } else {
            None
        },
        fpmr: f.fpmr.then_some(st.fpmr),
        poe: None,
    };
    let Ok((regs, _)) = sf::UserRegs::ref_from_prefix(tf.as_bytes()) else {
        return Err(());
    };
    let d = sf::Delivery {
        sp_top: alt.frame_top(tf.sp_el0, a.sa_flags),
        signo: info.signo(),
        info,
        action: a,
        uc_stack: alt.saved(),
        sigmask: Sigset(mask),
        regs,
        fault_address: l.fault_address.get(),
        fpsimd: fp,
        records,
        bti: false,
        // Read only when used: it takes the address-space lock.
        sigtramp: if a.sa_flags & sig::SA_RESTORER == 0 {
            crate::vdso::sigtramp(t.mm().as_deref())
        } else {
            0
        },
    };
    // Only the bytes Linux writes go out (the unused rest of __reserved is left as it was), in
    // a few pieces, the payloads straight from the saved state.
    let e = d
        .write(&mut |addr, bytes| {
            UserPtr::new(addr as usize)
                .write_slice(bytes)
                .map_err(|_| sf::Efault)
        })
        .map_err(|_| ())?;
    drop(st);
    // With GCS on, the handler's return address and a signal token go on the GCS.
    crate::process::gcs::signal_entry(t, e.x30)?;
    l.fault_esr.set(0);
    l.fault_address.set(0);
    crate::task::fpstate::signal_entered(t.core());
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

/// rt_sigreturn: restores the interrupted context from the frame at SP. A bad frame still
/// leaves the registers it holds (when they could be read), x0 = 0 and a SIGSEGV at their SP,
/// as Linux's sys_rt_sigreturn does.
pub fn sys_rt_sigreturn(t: &CurrentTask, tf: &mut TrapFrame) {
    t.local().in_syscall.set(-1);
    // A handler ran: restart_syscall has nothing to resume (Linux: do_no_restart_syscall).
    t.local().restart_block.set(None);
    let sp = tf.sp_el0;
    // rt_sigreturn's own return value, whatever the frame holds.
    tf.x[0] = 0;
    // access_ok: a frame outside user space is bad before anything is read.
    if UserSlice::new(sp as usize, sf::RT_SIGFRAME_SIZE)
        .check()
        .is_err()
    {
        log::debug!("pid {}: signal frame at {sp:#x} not in user space", t.pid());
        bad_frame(t, sp);
        return;
    }
    let f = features();
    // The extra space, if any, is read once into the thread's buffer for it (grown to its size
    // the first time, not zeroed first; up to SIGFRAME_MAXSZ, as on Linux).
    let mut extra_store: Option<alloc::vec::Vec<u8>> = None;
    let mut frame = [0u8; sf::RT_SIGFRAME_SIZE];
    if !sigreturn_in_place(t, tf, &f, &mut frame, &mut extra_store) {
        // The general path: it decides what a frame the quick one did not take gets.
        // Only the header and the records present are read.
        let r = sf::parse_sigreturn(
            sp,
            &mut read_user,
            &f,
            &mut frame,
            &mut extra_reader(t, &mut extra_store),
        );
        restore_sigframe(t, tf, &r, &f);
    }
    // Kept for the next sigreturn unless it is larger than the usual frames need (ZA at the
    // largest vector length is 64 KiB).
    if let Some(v) = extra_store.filter(|v| v.capacity() <= EXTRA_KEPT) {
        t.local().sigreturn_extra.set(v);
    }
}

/// Copies user memory for the frame parsers.
fn read_user(addr: u64, buf: &mut [u8]) -> Result<(), sf::Efault> {
    UserPtr::new(addr as usize)
        .read_slice(buf)
        .map_err(|_| sf::Efault)
}

/// The parsers' `ReadExtra`: the extra space read into `store`, which starts as the thread's
/// kept buffer. Of the extra space, the bytes before the first fault: Linux reads it record by
/// record, so a size running past mapped memory is bad only where a record lies there (the
/// parser says).
fn extra_reader<'s>(
    t: &'s CurrentTask,
    store: &'s mut Option<alloc::vec::Vec<u8>>,
) -> impl FnMut(u64, usize) -> Result<&'s [u8], sf::BadFrame> + 's {
    let mut slot = Some(store);
    move |addr, len| {
        let store = slot.take().ok_or(sf::BadFrame::ExtraDuplicate)?;
        let buf = store.get_or_insert_with(|| t.local().sigreturn_extra.take());
        UserSlice::new(addr as usize, len)
            .read_prefix_into(buf)
            .map_err(|e| match e {
                Errno::ENOMEM => sf::BadFrame::ExtraBufferTooSmall { needed: len },
                _ => sf::BadFrame::Fault,
            })?;
        let bytes: &'s [u8] = buf;
        Ok(bytes)
    }
}

/// rt_sigreturn's quick path: a frame whose records are all good is checked where it lies in
/// `frame` and restored from there (`sf::parse_in_place`). False when it is not such a frame:
/// nothing has changed then, and the general path runs.
fn sigreturn_in_place(
    t: &CurrentTask,
    tf: &mut TrapFrame,
    f: &sf::SigFeatures,
    frame: &mut [u8; sf::RT_SIGFRAME_SIZE],
    extra_store: &mut Option<alloc::vec::Vec<u8>>,
) -> bool {
    let lengths = crate::task::fpstate::sigreturn_lengths(t.core());
    let Some(q) = sf::parse_in_place(
        tf.sp_el0,
        &mut read_user,
        f,
        &lengths,
        frame,
        &mut extra_reader(t, extra_store),
    ) else {
        return false;
    };
    // x0-x30, SP and PC straight from the frame's bytes.
    let (x, sp_pc) = q.regs.split_at(31 * 8);
    tf.x.as_mut_bytes().copy_from_slice(x);
    tf.sp_el0 = get_u64(sp_pc, 0);
    tf.elr = get_u64(sp_pc, 8);
    tf.spsr = q.pstate;
    // Saves what the frame does not replace (ZA without za_context, FPMR), then installs.
    crate::task::fpstate::for_sigreturn(t.core());
    crate::task::fpstate::from_sigreturn(t.core(), q.fpsimd, q.records);
    // The signal token delivery left on the GCS must still be there; it is popped.
    let bad = crate::process::gcs::restore_signal(t).err();
    // The mask and, after a good frame, the alternate stack, under one lock. Linux sets the
    // mask first; nothing in between looks at it.
    let mut s = t.sig.lock();
    s.blocked = q.sigmask.0;
    if bad.is_none() {
        let mut alt = s.altstack;
        if alt.set(q.uc_stack, tf.sp_el0, sig::MINSIGSTKSZ).is_ok() {
            s.altstack = alt;
        }
    }
    // As in `restore_sigframe`: look on the way out only if the mask lets a pending signal
    // through (or a temporary mask waits to be dropped).
    if super::unblocked_pending(t, &s) || s.saved_mask.is_some() {
        super::hint(t);
    }
    drop(s);
    if let Some(e) = bad {
        log::debug!("pid {}: bad signal frame record: {e:?}", t.pid());
        tf.x[0] = 0;
        bad_frame(t, tf.sp_el0);
    }
    true
}

/// The largest extra-space buffer a thread keeps between sigreturns.
const EXTRA_KEPT: usize = 96 * 1024;

/// Installs what a parsed frame holds, in Linux's order: the mask, the registers, the records
/// one by one (a bad one ending it with SIGSEGV, what came before it kept), the alternate
/// stack.
fn restore_sigframe(
    t: &CurrentTask,
    tf: &mut TrapFrame,
    r: &sf::SigreturnResult,
    f: &sf::SigFeatures,
) {
    if let Some(m) = r.sigmask {
        let mut s = t.sig.lock();
        s.blocked = m.0;
        // The return-to-user path only needs to look if the restored mask lets a pending
        // signal through (or a temporary mask waits to be dropped). A signal sent from now on
        // hints by itself, as it is queued under these locks.
        if super::unblocked_pending(t, &s) || s.saved_mask.is_some() {
            super::hint(t);
        }
    }
    if let Some(regs) = &r.regs {
        tf.x = regs.regs;
        tf.sp_el0 = regs.sp;
        tf.elr = regs.pc;
        tf.spsr = regs.pstate;
    }
    let restored = match &r.frame {
        Ok(f) => f,
        Err(e) => {
            log::debug!("pid {}: bad signal frame: {e:?}", t.pid());
            tf.x[0] = 0;
            bad_frame(t, tf.sp_el0);
            return;
        }
    };
    let task = sf::SigreturnTask {
        gcs: crate::process::gcs::live(t),
        ..crate::task::fpstate::for_sigreturn(t.core())
    };
    let (records, bad) = match sf::check_records(restored, f, &task) {
        Ok(rec) => (rec, None),
        Err(p) => (p.done, Some(p.error)),
    };
    if let Some(r) = records.gcs {
        crate::process::gcs::install(t, r);
    }
    crate::task::fpstate::from_sigreturn(t.core(), restored.fpsimd.as_frame_bytes(), records);
    // The signal token delivery left on the GCS must still be there; it is popped.
    let bad = bad.or_else(|| crate::process::gcs::restore_signal(t).err());
    if let Some(e) = bad {
        log::debug!("pid {}: bad signal frame record: {e:?}", t.pid());
        tf.x[0] = 0;
        bad_frame(t, tf.sp_el0);
        return;
    }
    if let Some(ss) = r.uc_stack {
        let mut s = t.sig.lock();
        let mut alt = s.altstack;
        if alt.set(ss, tf.sp_el0, sig::MINSIGSTKSZ).is_ok() {
            s.altstack = alt;
        }
    }
}

/// A bad frame: `arm64_notify_segfault(sp)`, SIGSEGV at `sp` (the SP the task goes on with).
fn bad_frame(t: &Thread, sp: u64) {
    let va = svelt_abi::uapi::sys::untagged_addr(sp as usize);
    let above = t
        .with_mm(|mm| Ok(mm.vmas().any(|v| v.end > va)))
        .unwrap_or(false);
    super::force(t, sig::SIGSEGV, sf::bad_frame_siginfo(sp, above));
}

/// The largest frame this system delivers, as AT_MINSIGSTKSZ counts it.
pub fn min_sigstksz() -> usize {
    let f = features();
    sf::at_minsigstksz(
        crate::cpufeature::sve_max_vl().unwrap_or(0),
        if f.sme {
            crate::cpufeature::sme_vls().max_bytes().unwrap_or(0)
        } else {
            0
        },
        &f,
    )
}
