//! SVE for guests (the vCPU feature KVM_ARM_VCPU_SVE): the vector lengths a VMM chooses before
//! it finalizes the vCPU, the Z, P and FFR registers by ONE_REG, and the lazy switch of the
//! guest's SVE registers, as Linux's KVM does it (arch/arm64/kvm/guest.c, reset.c, fpsimd.c;
//! the rules are `svelt_abi::uapi::kvm_sve`'s).
//!
//! A vCPU with SVE keeps its registers at its largest VL in the signal frame's payload layout.
//! The guest's first FP or SVE access of an entry sequence traps to EL2 (CPTR_EL2's FPEN and
//! ZEN), lends the VMM thread's registers away as for an FP-only guest, sets ZCR_EL2.LEN to the
//! vCPU's largest VL (the cap the guest's own ZCR_EL1 works under) and loads the whole state;
//! `put` saves it back at that VL. The host task's VL comes back as lazily as after any lend:
//! its return to user mode rewrites ZCR_EL2.

use super::vcpu::VcpuState;
use super::vm::Vm;
use crate::arch::fpsimd::{fpsimd, sve};
use crate::arch::guest;
use crate::mm::uaccess::UserPtr;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::fp::vl::VlSet;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::KvmOneReg;
use svelt_abi::uapi::kvm_sve as s;

/// A vCPU's SVE: its largest vq (the VMM may lower it until finalize), its saved registers
/// (allocated at finalize) and its ZCR_EL1.
pub struct GuestSve {
    pub max_vq: u32,
    /// Z, P and FFR at `max_vq` once the vCPU is finalized; empty before.
    state: Vec<u8>,
    pub zcr_el1: u64,
    /// The registers are in the CPU (with FPEN and ZEN open to the guest).
    live: bool,
}

/// The host's SVE lengths: every one of them can be given to a guest (ZCR_EL2 caps the guest
/// at one of them, and all CPUs have the same set).
fn host_vls() -> VlSet {
    crate::cpufeature::sve_vls()
}

/// The largest vq a guest may have: the host's largest (`kvm_sve_max_vl`).
fn kvm_max_vq() -> u32 {
    host_vls().max_bytes().map_or(0, |b| b / 16)
}

/// Whether vCPUs may ask for SVE (KVM_CAP_ARM_SVE): the host offers it to its own tasks.
pub fn offered() -> bool {
    crate::task::fpstate::has_sve() && kvm_max_vq() > 0
}

impl GuestSve {
    /// KVM_ARM_VCPU_INIT with the feature, the first time: every host length (`kvm_vcpu_enable_sve`).
    pub fn new() -> GuestSve {
        GuestSve {
            max_vq: kvm_max_vq(),
            state: Vec::new(),
            zcr_el1: 0,
            live: false,
        }
    }

    pub fn finalized(&self) -> bool {
        !self.state.is_empty()
    }

    /// A re-init of a finalized vCPU: registers and ZCR_EL1 back to zero (`kvm_vcpu_reset_sve`).
    pub fn reset(&mut self) {
        self.state.fill(0);
        self.zcr_el1 = 0;
    }

    /// Z, P and FFR to zero (an SVCR.SM change, as the CPU does on entering or leaving
    /// streaming mode).
    pub fn zero(&mut self) {
        self.state.fill(0);
    }

    /// The registers went to streaming mode in the guest (which zeroed them): nothing to save.
    pub fn forget_live(&mut self) {
        if self.live {
            self.zcr_el1 = guest::guest_zcr();
            self.state.fill(0);
            self.live = false;
        }
    }

    /// The guest's first FP or SVE access of an entry sequence: its registers come in at its
    /// largest VL (the caller has lent the VMM thread's away) with its FPSR and FPCR.
    pub fn load(&mut self, fp: &fpsimd::FpsimdState) {
        sve::set_len(self.max_vq - 1);
        guest::set_guest_zcr(self.zcr_el1);
        if sve::load(&self.state, self.max_vq as usize, true).is_err() {
            panic!("kvm: guest SVE load at a VL the CPU does not give");
        }
        fpsimd::load_control(fp);
        self.live = true;
        super::GUEST_FP.count(true, true, self.state.len());
    }

    /// Puts live registers back in memory. ZCR_EL2 still holds the guest's cap (nothing on the
    /// host touches it while the state is live); it is written again anyway, one MSR, so that
    /// the save's VL check can never find another length.
    pub fn put(&mut self, fp: &mut fpsimd::FpsimdState) {
        if !self.live {
            return;
        }
        self.zcr_el1 = guest::guest_zcr();
        sve::set_len(self.max_vq - 1);
        if sve::save(&mut self.state, self.max_vq as usize, true).is_err() {
            panic!("kvm: guest SVE save at a VL the CPU does not give");
        }
        fpsimd::save_control(fp);
        self.live = false;
        super::GUEST_FP.count(true, false, self.state.len());
    }
}

/// KVM_ARM_VCPU_FINALIZE(KVM_ARM_VCPU_SVE) (`kvm_arm_vcpu_finalize`): EINVAL for another
/// feature or a vCPU without SVE, EPERM the second time.
pub fn finalize(st: &mut VcpuState, what: i32) -> SysResult<usize> {
    if what != s::KVM_ARM_VCPU_SVE as i32 {
        return Err(Errno::EINVAL);
    }
    let g = st.sve.as_mut().ok_or(Errno::EINVAL)?;
    if g.finalized() {
        return Err(Errno::EPERM);
    }
    g.state = vec![0; sve::state_size(g.max_vq as usize)];
    Ok(0)
}

/// Whether the vCPU may run or list its registers: a vCPU with SVE only once finalized
/// (`kvm_arm_vcpu_is_finalized`).
pub fn check_finalized(st: &VcpuState) -> SysResult<()> {
    match &st.sve {
        Some(g) if !g.finalized() => Err(Errno::EPERM),
        _ => Ok(()),
    }
}

/// KVM_GET_ONE_REG of a KVM_REG_ARM64_SVE ID (`get_sve_reg`).
pub fn get(st: &VcpuState, r: &KvmOneReg) -> SysResult<usize> {
    let out = UserPtr::<u8>::new(r.addr as usize);
    if r.id == s::KVM_REG_ARM64_SVE_VLS {
        let g = st.sve.as_ref().ok_or(Errno::ENOENT)?;
        let w = s::vls_get(host_vls(), g.max_vq);
        let mut b = [0u8; 8 * s::VLS_WORDS];
        for (c, v) in b.chunks_exact_mut(8).zip(w) {
            c.copy_from_slice(&v.to_le_bytes());
        }
        return out.write_slice(&b).map(|_| 0);
    }
    let (g, reg) = region(st, r.id)?;
    let mut b = [0u8; s::ZREG_SLICE];
    b[..reg.len].copy_from_slice(&g.state[reg.offset..reg.offset + reg.len]);
    out.write_slice(&b[..reg.slice]).map(|_| 0)
}

/// KVM_SET_ONE_REG of a KVM_REG_ARM64_SVE ID (`set_sve_reg`): the bytes past the vCPU's VL
/// are not read.
pub fn set(st: &mut VcpuState, r: &KvmOneReg) -> SysResult<usize> {
    let inp = UserPtr::<u8>::new(r.addr as usize);
    if r.id == s::KVM_REG_ARM64_SVE_VLS {
        let g = st.sve.as_mut().ok_or(Errno::ENOENT)?;
        if g.finalized() {
            return Err(Errno::EPERM);
        }
        let mut b = [0u8; 8 * s::VLS_WORDS];
        inp.read_slice(&mut b)?;
        let mut w = [0u64; s::VLS_WORDS];
        for (v, c) in w.iter_mut().zip(b.chunks_exact(8)) {
            *v = u64::from_le_bytes(c.try_into().unwrap_or_default());
        }
        g.max_vq = s::vls_set(host_vls(), kvm_max_vq(), &w)?;
        return Ok(0);
    }
    let reg = region(st, r.id)?.1;
    let g = st.sve.as_mut().ok_or(Errno::ENOENT)?;
    inp.read_slice(&mut g.state[reg.offset..reg.offset + reg.len])?;
    Ok(0)
}

/// A Z, P or FFR ID's place in the vCPU's state: ENOENT without SVE (or for a later slice),
/// EINVAL for no such register, then EPERM before finalize, in `sve_reg_to_region`'s and
/// `get_sve_reg`'s order.
fn region(st: &VcpuState, id: u64) -> SysResult<(&GuestSve, s::Region)> {
    let g = st.sve.as_ref();
    let reg = s::region(id, g.map_or(1, |g| g.max_vq as usize))?;
    let g = g.ok_or(Errno::ENOENT)?;
    if !g.finalized() {
        return Err(Errno::EPERM);
    }
    Ok((g, reg))
}

/// ID_AA64PFR0_EL1 (CRm 4, op2 0) and ID_AA64ZFR0_EL1 (CRm 4, op2 4): the fields that say
/// SVE, shown to a VM whose first vCPU asked for it and hidden otherwise, as Linux's
/// `sanitise_id_aa64pfr0_el1` and ZFR0's visibility decide.
const PFR0: usize = 24;
const ZFR0: usize = 28;
const PFR0_SVE: u64 = 0xf << 32;

/// The SVE fields a VM may show at most (its ID limits).
pub fn widen_limits(limits: &mut [u64], host_pfr0: u64, host_zfr0: u64) {
    if offered() {
        limits[PFR0] |= host_pfr0 & PFR0_SVE;
        limits[ZFR0] = host_zfr0;
    }
}

/// ID register `i`'s limit for this VM: the SVE fields only for a VM whose vCPUs have SVE
/// (Linux's limit is the VM's own sanitised value, `kvm_read_sanitised_id_reg`).
pub fn id_limit(vm: &Vm, i: usize) -> u64 {
    let has_sve = vm
        .vcpu_features
        .lock()
        .is_some_and(|f| f & (1 << s::KVM_ARM_VCPU_SVE) != 0);
    match i {
        PFR0 if !has_sve => vm.id_limits[i] & !PFR0_SVE,
        ZFR0 if !has_sve => 0,
        _ => vm.id_limits[i],
    }
}

/// The VM's ID registers at its first vCPU's init (before it has run): SVE shown or not.
pub fn init_id_regs(vm: &Vm, with_sve: bool) {
    if vm.ran.load(Ordering::Relaxed) {
        return;
    }
    let mut regs = vm.id_regs.lock();
    let (pfr0, zfr0) = if with_sve {
        (vm.id_limits[PFR0] & PFR0_SVE, vm.id_limits[ZFR0])
    } else {
        (0, 0)
    };
    regs[PFR0] = (regs[PFR0] & !PFR0_SVE) | pfr0;
    regs[ZFR0] = zfr0;
}
