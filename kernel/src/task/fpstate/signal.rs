//! The FP side of signal delivery and sigreturn: what the frame's records hold, the state a
//! handler starts with, and installing what sigreturn's records restore.

#![forbid(unsafe_code)]

use super::{
    fpsimd_preserve_current_state, fpu_mut, has_sme, sigreturn_preserve, sme2, TaskFpState,
    FPSR_AFTER_SMSTOP,
};
use crate::arch::fpsimd::{sme, sve};
use crate::task::CurrentTask;
use core::cell::RefMut;
use svelt_abi::fp::fpstate::{self as fps, Format};
use svelt_abi::fp::sigframe::FpsimdState;
use zerocopy::{FromBytes, IntoBytes};

/// What a signal frame needs from the FP state: the saved state, borrowed until the frame is
/// written.
pub struct SignalState<'a> {
    f: RefMut<'a, TaskFpState>,
    pub tpidr2: u64,
    pub fpmr: u64,
}

impl SignalState<'_> {
    /// fpsimd_context: V0-V31 (the low 128 bits of Z0-Z31 when the saved copy is SVE or
    /// streaming state), FPSR and FPCR. The saved FPSIMD registers themselves when they are
    /// the copy that counts, else a copy made in `scratch`.
    pub fn fpsimd<'s>(&'s self, scratch: &'s mut Option<FpsimdState>) -> &'s FpsimdState {
        let f = &self.f;
        // `vregs_from_regs` leaves V0-V31 as they are in this case.
        if f.st.format == Format::Fpsimd || f.sve.is_empty() {
            if let Ok((v, _)) = FpsimdState::ref_from_prefix(f.fp.as_bytes()) {
                return v;
            }
        }
        let mut out = FpsimdState {
            vregs: f.fp.vregs,
            fpsr: f.fp.fpsr,
            fpcr: f.fp.fpcr,
        };
        f.vregs_from_regs(&mut out.vregs);
        scratch.insert(out)
    }

    /// sve_context: (vl, streaming, payload when live).
    pub fn sve(&self) -> (u32, bool, Option<&[u8]>) {
        let f = &self.f;
        if f.st.svcr.sm {
            (f.st.sme_vl, true, Some(&f.sve[..]))
        } else {
            let live = f.st.sve && f.st.format == Format::Sve;
            (f.st.sve_vl, false, live.then_some(&f.sve[..]))
        }
    }

    /// za_context: (vl, payload when ZA is on).
    pub fn za(&self) -> (u32, Option<&[u8]>) {
        let f = &self.f;
        let len = sme::za_size(f.st.sme_vl as usize);
        (f.st.sme_vl, f.st.svcr.za.then(|| &f.za[..len]))
    }

    /// ZT0 (SME2 with ZA on).
    pub fn zt0(&self) -> Option<&[u8]> {
        let f = &self.f;
        let len = sme::za_size(f.st.sme_vl as usize);
        (f.st.svcr.za && sme2()).then(|| &f.za[len..len + 64])
    }
}

/// Signal delivery: saves the live state and returns what the frame records hold; the caller
/// drops it, writes the frame, then calls `signal_entered`.
pub fn for_signal(cur: &CurrentTask) -> SignalState<'_> {
    let mut f = fpsimd_preserve_current_state(cur.task(), cur.local());
    f.tpidr2 = if has_sme() { sme::read_tpidr2() } else { 0 };
    SignalState {
        tpidr2: f.tpidr2,
        fpmr: f.fpmr,
        f,
    }
}

/// After the frame is written: the handler runs out of streaming mode with ZA off and TPIDR2
/// zero (6.16+).
pub fn signal_entered(cur: &CurrentTask) {
    let f = &mut *fpu_mut(cur.task(), cur.local());
    let e = fps::signal_entry(&mut f.st);
    if e.left_streaming {
        f.fp.vregs = [0; 32];
        f.fp.fpsr = FPSR_AFTER_SMSTOP;
        f.fpmr = 0;
    }
    if has_sme() {
        f.tpidr2 = 0;
        sme::write_tpidr2(0);
    }
}

/// sigreturn, before the records are checked: saves what a frame without a record keeps — ZA
/// and its contents as the handler left them, FPMR — (the state stays live: the registers the
/// frame replaces are not saved) and reports what the FP records are checked against.
pub fn for_sigreturn(cur: &CurrentTask) -> svelt_abi::fp::sigframe::SigreturnTask {
    let f = sigreturn_preserve(cur.task(), cur.local());
    svelt_abi::fp::sigframe::SigreturnTask {
        sve_vl: f.st.sve_vl,
        sme_vl: f.st.sme_vl,
        za_on: f.st.svcr.za,
        ..Default::default()
    }
}

/// sigreturn's quick path (`abi::fp::sigframe::parse_in_place`): the vector lengths the
/// records are checked against, nothing saved (`for_sigreturn` follows once the frame is good).
pub fn sigreturn_lengths(cur: &CurrentTask) -> svelt_abi::fp::sigframe::SigreturnTask {
    let f = cur.local().fpu.borrow();
    svelt_abi::fp::sigframe::SigreturnTask {
        sve_vl: f.st.sve_vl,
        sme_vl: f.st.sme_vl,
        ..Default::default()
    }
}

/// sigreturn: installs what the records `abi::fp::sigframe::check_records` went through restore
/// (after `for_sigreturn`); V0-V31, FPSR and FPCR come from `fp` (the frame's bytes) on top of
/// any SVE payload.
pub fn from_sigreturn(
    cur: &CurrentTask,
    fp: svelt_abi::fp::sigframe::FpsimdBytes,
    r: svelt_abi::fp::sigframe::FpRecords,
) {
    use svelt_abi::fp::sigframe::FpRestore;
    // None: that step refused the frame, and nothing is restored.
    let Some(restore) = r.fp else { return };
    let f = &mut *fpu_mut(cur.task(), cur.local());
    f.fp.vregs.as_mut_bytes().copy_from_slice(fp.vregs);
    f.fp.fpsr = fp.fpsr;
    f.fp.fpcr = fp.fpcr;
    match restore {
        FpRestore::Sve { streaming, regs } => {
            f.st.format = if streaming {
                Format::Streaming
            } else {
                Format::Sve
            };
            f.st.svcr.sm = streaming;
            if streaming {
                f.st.sme = true;
            } else {
                f.st.sve = true;
            }
            let vq = f.regs_vq();
            let buf = f.regs_buf();
            buf.copy_from_slice(&regs[..sve::state_size(vq)]);
            // V0-V31 into the low 128 bits of Z0-Z31, straight from the frame's bytes.
            for (z, v) in buf
                .chunks_exact_mut(16 * vq.max(1))
                .zip(fp.vregs.chunks_exact(16))
            {
                z[..16].copy_from_slice(v);
            }
        }
        FpRestore::Fpsimd => {
            f.st.format = Format::Fpsimd;
            f.st.sve = false;
            f.st.svcr.sm = false;
        }
    }
    if let Some(v) = r.tpidr2 {
        f.tpidr2 = v;
        sme::write_tpidr2(v);
    }
    match r.za {
        None => {}
        Some(None) => f.st.svcr.za = false,
        Some(Some(payload)) => {
            f.st.svcr.za = true;
            f.st.sme = true;
            // ZA from the frame; ZT0 zero unless a zt_context follows (Linux clears the
            // whole ZA/ZT0 storage first).
            let buf = f.za_buf();
            buf.fill(0);
            buf[..payload.len()].copy_from_slice(payload);
        }
    }
    if let Some(zt) = r.zt0 {
        let n = sme::za_size(f.st.sme_vl as usize);
        f.za_buf()[n..n + 64].copy_from_slice(zt);
    }
    if let Some(v) = r.fpmr {
        f.fpmr = v;
    }
    fps::invalidate(&mut f.st);
}
