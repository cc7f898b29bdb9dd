//! Pointer authentication for guests (KVM_ARM_VCPU_PTRAUTH_ADDRESS with _GENERIC), as Linux
//! 7.3's KVM gives it where the CPU has one algorithm with both kinds (`kvm_has_full_ptr_auth`;
//! `abi::uapi::kvm::full_pauth`): a vCPU initialised with both features sees the CPU's
//! ID_AA64ISAR1_EL1/ISAR2_EL1 pointer-authentication fields (hidden otherwise, and not
//! writable, as Linux's `__kvm_read_sanitised_id_reg` and writable masks have it), runs with
//! HCR_EL2.API and APK set, and its ten key registers are loaded at each entry and saved at
//! each exit (`guest::PauthKeys`), reachable by ONE_REG and listed only for it
//! (sys_regs.c's `ptrauth_visibility`: ENOENT otherwise). A vCPU without the features runs with
//! API and APK clear: its PAC instructions and key accesses trap and are made UNDEFINED, as
//! Linux's `kvm_handle_ptrauth` and `undef_access` do.
//!
//! Linux switches the keys lazily (a vCPU's first PAC trap opens them); here a vCPU that asked
//! for the feature has them open from its first entry: a Linux guest with pointer
//! authentication signs its first return address within its first instructions anyway.

use super::vcpu::VcpuState;
use super::vm::Vm;
use crate::arch::guest::{self, PauthKeys};
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm as k;

/// The vCPU feature bits, asked for together.
pub const FEATURES: u32 =
    1 << k::KVM_ARM_VCPU_PTRAUTH_ADDRESS | 1 << k::KVM_ARM_VCPU_PTRAUTH_GENERIC;

/// ID_AA64ISAR1_EL1 (CRm 6, op2 1) and ID_AA64ISAR2_EL1 (6, 2) among the ID registers.
const ISAR1: usize = 41;
const ISAR2: usize = 42;

/// Whether vCPUs may ask for it (KVM_CAP_ARM_PTRAUTH_ADDRESS and _GENERIC).
pub fn offered() -> bool {
    k::full_pauth(guest::read_id_reg(6, 1), guest::read_id_reg(6, 2))
}

/// The VM's vCPUs have it.
fn vm_has(vm: &Vm) -> bool {
    vm.vcpu_features
        .lock()
        .is_some_and(|f| f & FEATURES == FEATURES)
}

/// The pointer-authentication fields a VM may show at most (its ID limits).
pub fn widen_limits(limits: &mut [u64]) {
    if offered() {
        limits[ISAR1] |= guest::read_id_reg(6, 1) & k::ISAR1_PAUTH;
        limits[ISAR2] |= guest::read_id_reg(6, 2) & k::ISAR2_PAUTH;
    }
}

/// ID register `i`'s limit for this VM: the pointer-authentication fields only for a VM whose
/// vCPUs have it; the other registers as SME and SVE decide.
pub fn id_limit(vm: &Vm, i: usize) -> u64 {
    match i {
        ISAR1 if !vm_has(vm) => vm.id_limits[i] & !k::ISAR1_PAUTH,
        ISAR2 if !vm_has(vm) => vm.id_limits[i] & !k::ISAR2_PAUTH,
        _ => super::sme::id_limit(vm, i),
    }
}

/// The VM's ID registers at its first vCPU's init (before it has run): shown or not.
pub fn init_id_regs(vm: &Vm, with: bool) {
    if vm.ran.load(Ordering::Relaxed) {
        return;
    }
    let mut regs = vm.id_regs.lock();
    for (i, mask) in [(ISAR1, k::ISAR1_PAUTH), (ISAR2, k::ISAR2_PAUTH)] {
        let shown = if with { vm.id_limits[i] & mask } else { 0 };
        regs[i] = (regs[i] & !mask) | shown;
    }
}

/// KVM_ARM_VCPU_INIT: the keys back to zero for a vCPU with the features, none otherwise.
pub fn init(st: &mut VcpuState, features: u32) {
    st.pauth = (features & FEATURES == FEATURES).then(PauthKeys::default);
}

/// HCR_EL2's bits for the vCPU's entry: its keys and PAC instructions open where it has them.
pub fn hcr(st: &VcpuState) -> u64 {
    if st.pauth.is_some() {
        guest::hcr::API | guest::hcr::APK
    } else {
        0
    }
}

/// The key registers a vCPU lists.
pub fn ids(st: &VcpuState) -> &'static [u64] {
    if st.pauth.is_some() {
        &k::PAUTH_KEYS
    } else {
        &[]
    }
}

/// A key register's value, ENOENT on a vCPU without the features; None for other IDs.
pub fn sysreg_value(st: &VcpuState, id: u64) -> Option<SysResult<u64>> {
    let i = k::PAUTH_KEYS.iter().position(|&r| r == id)?;
    Some(st.pauth.as_ref().map(|keys| keys.0[i]).ok_or(Errno::ENOENT))
}

/// A VMM's write of a key register (after `sysreg_value` said it is one): any value.
pub fn sysreg_set(st: &mut VcpuState, id: u64, v: u64) -> SysResult<()> {
    let i = k::PAUTH_KEYS
        .iter()
        .position(|&r| r == id)
        .ok_or(Errno::ENOENT)?;
    let keys = st.pauth.as_mut().ok_or(Errno::ENOENT)?;
    keys.0[i] = v;
    Ok(())
}
