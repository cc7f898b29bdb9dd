//! The register-set side of PTRACE_GETREGSET/SETREGSET and of core-file notes
//! (`ptrace::regset`). `h` is the current task (a core dump: its live registers are saved
//! first, and stay live) or a task off its CPU that cannot run until the caller lets it (a
//! tracee in a ptrace stop, a thread of a process dumping core): `fpsimd_thread_switch` saved its
//! registers, so memory is authoritative. Every write ends with `fps::invalidate`, so the task
//! reloads exactly what was written when it next returns to user mode, on whichever CPU.

#![forbid(unsafe_code)]

use super::vl::{change_live_vl, commit_vl_settings, sme_ctl, sve_ctl, vls_of};
use super::{fpsimd_preserve_current_state, has_fpmr, has_sme, put_vregs, sme2, TaskFpState};
use crate::arch::fpsimd::fpsimd::FpsimdState;
use crate::arch::fpsimd::{sme, sve};
use crate::task::Held;
use alloc::vec::Vec;
use core::cell::RefMut;
use svelt_abi::fp::fpstate::{self as fps, Format};
use svelt_abi::fp::regset::{self as rs, VecMode};
use svelt_abi::fp::vlctl::{self, VecKind};
use svelt_abi::uapi::errno::{Errno, SysResult};
use zerocopy::IntoBytes;

/// The FP state of the held task, in memory: the current task's live registers are saved
/// first (and stay live); a parked task's `fpsimd_thread_switch` already saved them.
fn regset_state<'a>(h: &'a Held<'_>) -> RefMut<'a, TaskFpState> {
    if h.is_current() {
        let mut f = fpsimd_preserve_current_state(h.task(), h.local());
        if has_sme() {
            f.tpidr2 = sme::read_tpidr2();
        }
        f
    } else {
        // A parked task holds no borrow: it is off its CPU and no wake-up can run it (see
        // State::Parked). The one borrow seen held here (once, in stop 23) most likely came
        // from a tracee or dumped thread that a wake-up (a detach, a SIGKILL) ran through a
        // switch meanwhile, which parking now prevents; that was never confirmed, so should
        // another way exist, wait rather than panic.
        loop {
            if let Ok(f) = h.local().fpu.try_borrow_mut() {
                // Read or written, the tracee's next return reloads what memory holds.
                h.task().work.set(crate::task::work::FP);
                return f;
            }
            crate::task::sched::yield_now();
        }
    }
}

/// A zeroed buffer of `n` bytes; ENOMEM instead of aborting.
fn try_zeroed(n: usize) -> SysResult<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    v.resize(n, 0);
    Ok(v)
}

impl TaskFpState {
    /// `regs_buf`, failing with ENOMEM rather than aborting.
    fn try_regs_buf(&mut self) -> SysResult<&mut [u8]> {
        let n = sve::state_size(self.regs_vq());
        if self.sve.len() != n {
            self.sve = try_zeroed(n)?;
        }
        Ok(&mut self.sve)
    }

    /// `za_buf`, failing with ENOMEM rather than aborting.
    fn try_za_buf(&mut self) -> SysResult<&mut [u8]> {
        let n = sme::za_size(self.st.sme_vl as usize) + if sme2() { 64 } else { 0 };
        if self.za.len() != n {
            self.za = try_zeroed(n)?;
        }
        Ok(&mut self.za)
    }
}

fn to_abi(f: &FpsimdState) -> svelt_abi::fp::sigframe::FpsimdState {
    svelt_abi::fp::sigframe::FpsimdState {
        vregs: f.vregs,
        fpsr: f.fpsr,
        fpcr: f.fpcr,
    }
}

/// NT_PRFPREG: V0-V31 (the low 128 bits of the Z registers when SVE state is held), FPSR,
/// FPCR.
pub fn regset_fpsimd(h: &Held) -> svelt_abi::fp::sigframe::FpsimdState {
    let f = &mut *regset_state(h);
    to_abi(&f.fpsimd_view())
}

/// NT_PRFPREG write: with SVE (or streaming) state held, the Z registers become V0-V31 with
/// everything else zero (Linux's `fpsimd_sync_to_effective_state_zeropad`).
pub fn regset_set_fpsimd(h: &Held, new: &svelt_abi::fp::sigframe::FpsimdState) -> SysResult<()> {
    let f = &mut *regset_state(h);
    f.fp.vregs = new.vregs;
    f.fp.fpsr = new.fpsr;
    f.fp.fpcr = new.fpcr;
    let r = if f.st.format != Format::Fpsimd {
        let vq = f.regs_vq();
        f.try_regs_buf().map(|buf| {
            buf.fill(0);
            put_vregs(buf, vq, &new.vregs);
        })
    } else {
        Ok(())
    };
    fps::invalidate(&mut f.st);
    r
}

/// TPIDR2_EL0 (0 without SME).
pub fn regset_tpidr2(h: &Held) -> u64 {
    if !has_sme() {
        return 0;
    }
    regset_state(h).tpidr2
}

/// Sets TPIDR2_EL0 (ignored without SME); a switched-out task loads it when switched in.
pub fn regset_set_tpidr2(h: &Held, v: u64) {
    if !has_sme() {
        return;
    }
    regset_state(h).tpidr2 = v;
    if h.is_current() {
        sme::write_tpidr2(v);
    }
}

/// NT_ARM_FPMR read: FPMR (EINVAL without FEAT_FPMR).
pub fn regset_fpmr(h: &Held) -> SysResult<u64> {
    if !has_fpmr() {
        return Err(Errno::EINVAL);
    }
    Ok(regset_state(h).fpmr)
}

/// NT_ARM_FPMR write: the bytes `data` covers replace FPMR's low bytes (EINVAL without
/// FEAT_FPMR); the task loads it when it next returns to user mode.
pub fn regset_set_fpmr(h: &Held, data: &[u8]) -> SysResult<()> {
    if !has_fpmr() {
        return Err(Errno::EINVAL);
    }
    let f = &mut *regset_state(h);
    let mut b = f.fpmr.to_le_bytes();
    rs::copyin(&mut b, data, 0);
    f.fpmr = u64::from_le_bytes(b);
    fps::invalidate(&mut f.st);
    Ok(())
}

fn vec_kind(mode: VecMode) -> VecKind {
    match mode {
        VecMode::Sve => VecKind::Sve,
        VecMode::Streaming => VecKind::Sme,
    }
}

/// (current VL, system maximum, INHERIT) for one kind.
fn vl_info(f: &TaskFpState, kind: VecKind) -> (u32, u32, bool) {
    let max = vlctl::max_vl(kind, vls_of(kind)).unwrap_or(0);
    match kind {
        VecKind::Sve => (f.st.sve_vl, max, f.sve_inherit),
        VecKind::Sme => (f.st.sme_vl, max, f.sme_inherit),
    }
}

/// A regset's VL request (`vl | flags << 16`), carried out exactly as PR_*_SET_VL.
fn regset_set_vl(f: &mut TaskFpState, kind: VecKind, arg: u64) -> SysResult<()> {
    let ctl = match kind {
        VecKind::Sve => sve_ctl(f),
        VecKind::Sme => sme_ctl(f),
    };
    let r = vlctl::set_vl(kind, arg, vls_of(kind), &ctl)?;
    if let Some(vl) = r.live_change {
        change_live_vl(f, kind, vl);
    }
    commit_vl_settings(f, kind, r.new);
    Ok(())
}

/// NT_ARM_SVE / NT_ARM_SSVE read: the header, then FPSIMD or SVE-format registers when that
/// mode is the active one (header only otherwise).
pub fn regset_sve_get(h: &Held, mode: VecMode) -> SysResult<Vec<u8>> {
    let ok = match mode {
        VecMode::Sve => crate::cpufeature::features().sve,
        VecMode::Streaming => has_sme(),
    };
    if !ok {
        return Err(Errno::EINVAL);
    }
    let f = &mut *regset_state(h);
    let (vl, max_vl, inherit) = vl_info(f, vec_kind(mode));
    let task = rs::VecTask {
        streaming: f.st.svcr.sm,
        sve_format: f.st.format != Format::Fpsimd,
        vl,
        max_vl,
        inherit,
    };
    let (h, payload) = rs::sve_header(mode, &task);
    let mut out = try_zeroed(h.size as usize)?;
    out[..rs::HEADER_SIZE].copy_from_slice(h.as_bytes());
    match payload {
        rs::SvePayload::None => {}
        rs::SvePayload::Fpsimd => {
            let enc = rs::fpsimd_encode(&to_abi(&f.fpsimd_view()));
            out[rs::HEADER_SIZE..rs::HEADER_SIZE + enc.len()].copy_from_slice(&enc);
        }
        rs::SvePayload::Sve => {
            let (fpsr, fpcr) = (f.fp.fpsr, f.fp.fpcr);
            let regs = f.try_regs_buf()?;
            rs::sve_payload_encode(&mut out, vl / 16, regs, fpsr, fpcr);
        }
    }
    Ok(out)
}

/// NT_ARM_SVE / NT_ARM_SSVE write (Linux 7.3's `sve_set_common`).
pub fn regset_sve_set(h: &Held, mode: VecMode, data: &[u8]) -> SysResult<()> {
    let f = &mut *regset_state(h);
    let r = sve_set(f, mode, data);
    fps::invalidate(&mut f.st);
    r
}

fn sve_set(f: &mut TaskFpState, mode: VecMode, data: &[u8]) -> SysResult<()> {
    let s = rs::sve_set_parse(mode, data, crate::cpufeature::features().sve)?;
    let kind = vec_kind(mode);
    if let Some(arg) = s.vl_arg {
        regset_set_vl(f, kind, arg)?;
    }
    // The VL in force now: smaller than asked if rounded, unchanged with ONEXEC.
    let vq = vl_info(f, kind).0 / 16;
    // Writing NT_ARM_SVE leaves streaming mode; NT_ARM_SSVE enters it (ZA untouched).
    match mode {
        VecMode::Sve => {
            f.st.svcr.sm = false;
            f.st.sve = true;
        }
        VecMode::Streaming => {
            f.st.svcr.sm = true;
            f.st.sme = true;
        }
    }
    // V0-V31, FPSR and FPCR start from zero whatever the write covers.
    f.fp = FpsimdState::default();
    if s.fpsimd {
        f.st.sve = false;
        f.st.format = Format::Fpsimd;
        let new = rs::fpsimd_set(&to_abi(&f.fp), data, rs::HEADER_SIZE);
        f.fp.vregs = new.vregs;
        f.fp.fpsr = new.fpsr;
        f.fp.fpcr = new.fpcr;
        return Ok(());
    }
    // SVE layout (or header only): zeroed registers in the new mode at its VL.
    f.st.format = match mode {
        VecMode::Sve => Format::Sve,
        VecMode::Streaming => Format::Streaming,
    };
    let (mut fpsr, mut fpcr) = (0, 0);
    let regs = f.try_regs_buf()?;
    regs.fill(0);
    rs::payload_vl_check(data, s.header.vl, vq)?;
    rs::sve_payload_decode(data, vq, regs, &mut fpsr, &mut fpcr);
    f.fp.fpsr = fpsr;
    f.fp.fpcr = fpcr;
    Ok(())
}

/// NT_ARM_ZA read: the header, then ZA's rows while PSTATE.ZA is set.
pub fn regset_za_get(h: &Held) -> SysResult<Vec<u8>> {
    if !has_sme() {
        return Err(Errno::EINVAL);
    }
    let f = &mut *regset_state(h);
    let (vl, max_vl, inherit) = vl_info(f, VecKind::Sme);
    let za_on = f.st.svcr.za;
    let h = rs::za_header(vl, max_vl, inherit, za_on);
    let mut out = try_zeroed(h.size as usize)?;
    out[..rs::HEADER_SIZE].copy_from_slice(h.as_bytes());
    if za_on {
        let n = sme::za_size(vl as usize);
        let za = f.try_za_buf()?;
        out[rs::HEADER_SIZE..rs::HEADER_SIZE + n].copy_from_slice(&za[..n]);
    }
    Ok(out)
}

/// NT_ARM_ZA write: VL as PR_SME_SET_VL; header only turns ZA off; rows turn it on (the
/// storage is zeroed first unless ZA was already on).
pub fn regset_za_set(h: &Held, data: &[u8]) -> SysResult<()> {
    if !has_sme() {
        return Err(Errno::EINVAL);
    }
    let f = &mut *regset_state(h);
    let r = za_set(f, data);
    fps::invalidate(&mut f.st);
    r
}

fn za_set(f: &mut TaskFpState, data: &[u8]) -> SysResult<()> {
    let (h, arg) = rs::za_set_parse(data)?;
    regset_set_vl(f, VecKind::Sme, arg)?;
    let vl = f.st.sme_vl as usize;
    let za_on = f.st.svcr.za;
    let action = rs::za_set_action(data, h.vl, vl as u32 / 16);
    let buf = f.try_za_buf()?;
    if !za_on {
        buf.fill(0);
    }
    let load = action? == rs::ZaSet::Load;
    if load {
        rs::copyin(&mut buf[..sme::za_size(vl)], data, rs::HEADER_SIZE);
        f.st.sme = true;
    }
    f.st.svcr.za = load;
    Ok(())
}

/// NT_ARM_ZT read (SME2): ZT0, or zeros while ZA is off (it is zeroed when ZA is turned on).
pub fn regset_zt_get(h: &Held) -> SysResult<[u8; 64]> {
    if !(has_sme() && sme2()) {
        return Err(Errno::EINVAL);
    }
    let f = &mut *regset_state(h);
    let mut zt = [0u8; 64];
    if f.st.svcr.za {
        let n = sme::za_size(f.st.sme_vl as usize);
        zt.copy_from_slice(&f.try_za_buf()?[n..n + 64]);
    }
    Ok(zt)
}

/// NT_ARM_ZT write (SME2): ZT0 takes what `data` covers and PSTATE.ZA is set, ZA zeroed if it
/// was off.
pub fn regset_zt_set(h: &Held, data: &[u8]) -> SysResult<()> {
    if !(has_sme() && sme2()) {
        return Err(Errno::EINVAL);
    }
    let f = &mut *regset_state(h);
    let n = sme::za_size(f.st.sme_vl as usize);
    let za_on = f.st.svcr.za;
    let r = f.try_za_buf().map(|buf| {
        if !za_on {
            buf.fill(0);
        }
        rs::copyin(&mut buf[n..n + 64], data, 0);
    });
    if r.is_ok() {
        f.st.sme = true;
        f.st.svcr.za = true;
    }
    fps::invalidate(&mut f.st);
    r
}
