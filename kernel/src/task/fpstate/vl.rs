//! Vector-length control: PR_SVE_SET_VL / PR_SME_SET_VL and their GET forms, the system
//! defaults (/proc/sys/abi/*_default_vector_length), and the ONEXEC and INHERIT settings a task
//! carries to its next execve.

#![forbid(unsafe_code)]

use super::{fpsimd_preserve_current_state, fpu_mut, has_sme, TaskFpState};
use crate::task::CurrentTask;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};
use svelt_abi::fp::fpstate::{self as fps, Format};
use svelt_abi::fp::vlctl::{self, TaskVl, VecKind};
use svelt_abi::uapi::errno::{Errno, SysResult};

/// The system's default vector lengths for new programs (/proc/sys/abi).
pub static SVE_DEFAULT_VL: AtomicU32 = AtomicU32::new(16);
pub static SME_DEFAULT_VL: AtomicU32 = AtomicU32::new(0);

pub(super) fn sve_ctl(f: &TaskFpState) -> TaskVl {
    TaskVl {
        cur: f.st.sve_vl,
        onexec: f.sve_onexec,
        inherit: f.sve_inherit,
    }
}

pub(super) fn sme_ctl(f: &TaskFpState) -> TaskVl {
    TaskVl {
        cur: f.st.sme_vl,
        onexec: f.sme_onexec,
        inherit: f.sme_inherit,
    }
}

pub(super) fn vls_of(kind: VecKind) -> svelt_abi::fp::vl::VlSet {
    match kind {
        VecKind::Sve => crate::cpufeature::sve_vls(),
        VecKind::Sme => crate::cpufeature::sme_vls(),
    }
}

/// A live VL change on a state already in memory.
pub(super) fn change_live_vl(f: &mut TaskFpState, kind: VecKind, vl: u32) {
    // Linux 7.3 (change_live_vector_length): PSTATE.SM and the effective V0-V31 survive any
    // VL change; every other Z, P and FFR bit becomes zero; an SME change also turns ZA off.
    let v = f.fpsimd_view();
    let streaming = f.st.format == Format::Streaming;
    match kind {
        VecKind::Sve => fps::change_vl(&mut f.st, vl),
        VecKind::Sme => {
            fps::change_sme_vl(&mut f.st, vl);
            f.za = Vec::new();
        }
    }
    f.fp = v;
    if streaming {
        f.fpsimd_to_regs(Format::Streaming);
    } else {
        f.st.format = Format::Fpsimd;
    }
}

/// Records the deferred (ONEXEC) VL and INHERIT flag a SET_VL request decided.
pub(super) fn commit_vl_settings(f: &mut TaskFpState, kind: VecKind, new: TaskVl) {
    match kind {
        VecKind::Sve => {
            f.sve_onexec = new.onexec;
            f.sve_inherit = new.inherit;
        }
        VecKind::Sme => {
            f.sme_onexec = new.onexec;
            f.sme_inherit = new.inherit;
        }
    }
}

/// PR_SVE_SET_VL / PR_SME_SET_VL for the current task.
pub fn vec_set_current_vl(cur: &CurrentTask, kind: VecKind, arg: u64) -> SysResult<usize> {
    let (ctl, set) = {
        let f = cur.local().fpu.borrow();
        match kind {
            VecKind::Sve => (sve_ctl(&f), crate::cpufeature::sve_vls()),
            VecKind::Sme => (sme_ctl(&f), crate::cpufeature::sme_vls()),
        }
    };
    let r = vlctl::set_vl(kind, arg, set, &ctl)?;
    let mut f = match r.live_change {
        Some(vl) => {
            let mut f = fpsimd_preserve_current_state(cur.task(), cur.local());
            change_live_vl(&mut f, kind, vl);
            f
        }
        None => fpu_mut(cur.task(), cur.local()),
    };
    commit_vl_settings(&mut f, kind, r.new);
    Ok(r.ret as usize)
}

/// PR_SVE_GET_VL / PR_SME_GET_VL for the current task.
pub fn vec_get_current_vl(cur: &CurrentTask, kind: VecKind) -> SysResult<usize> {
    let f = cur.local().fpu.borrow();
    let (ctl, set) = match kind {
        VecKind::Sve => (sve_ctl(&f), crate::cpufeature::sve_vls()),
        VecKind::Sme => (sme_ctl(&f), crate::cpufeature::sme_vls()),
    };
    if set.is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok(vlctl::get_vl(&ctl) as usize)
}

fn default_read(vl: &AtomicU32) -> String {
    let mut buf = [0u8; 12];
    let n = vlctl::default_vl_read(vl.load(Ordering::Relaxed), &mut buf);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// /proc/sys/abi/sve_default_vector_length and sme_default_vector_length: the text a read
/// formats, and a write at position 0 (returns the bytes it consumed).
pub fn sve_default_read() -> String {
    default_read(&SVE_DEFAULT_VL)
}

pub fn sve_default_write(text: &[u8]) -> SysResult<usize> {
    let (vl, used) = vlctl::default_vl_write(VecKind::Sve, text, crate::cpufeature::sve_vls())?;
    SVE_DEFAULT_VL.store(vl, Ordering::Relaxed);
    Ok(used)
}

pub fn sme_default_read() -> String {
    default_read(&SME_DEFAULT_VL)
}

pub fn sme_default_write(text: &[u8]) -> SysResult<usize> {
    let (vl, used) = vlctl::default_vl_write(VecKind::Sme, text, crate::cpufeature::sme_vls())?;
    SME_DEFAULT_VL.store(vl, Ordering::Relaxed);
    Ok(used)
}

/// The boot default vector lengths (/proc/sys/abi/*_default_vector_length), from the lengths
/// every CPU has; after `cpufeature::finalize`.
pub fn init_default_vls() {
    let (sve, sme) = crate::cpufeature::system_vls();
    if crate::cpufeature::features().sve {
        SVE_DEFAULT_VL.store(vlctl::boot_default(VecKind::Sve, sve), Ordering::Relaxed);
    }
    if has_sme() {
        SME_DEFAULT_VL.store(vlctl::boot_default(VecKind::Sme, sme), Ordering::Relaxed);
    }
}
