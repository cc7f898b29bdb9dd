//! FPMR for guests (FEAT_FPMR, the FP8 mode register), as Linux 7.3's KVM gives it: the VM's
//! ID_AA64PFR2_EL1.FPMR shows the CPU's (a VMM may lower it to 0 before the first run);
//! HCRX_EL2.EnFPM opens FPMR and the FP8 instructions to the guest only while the VM shows it
//! (`kvm_calculate_traps`; `abi::uapi::kvm::guest_hcrx`), so a VM without it gets the FP8
//! instructions UNDEFINED and its FPMR accesses trap to EL2, where they are made UNDEFINED too
//! (`is_fpmr`); the register is switched with the guest's FP registers (`kvm_hyp_handle_fpsimd`
//! loads it, `kvm_arch_vcpu_put_fp` saves it); ONE_REG reaches and lists it only while the VM
//! shows it (sys_regs.c's `fp8_visibility`: ENOENT otherwise).
//!
//! FPMR accesses and FP8 instructions trap with the other FP instructions (CPTR_EL2.FPEN), so
//! until the guest's first FP access of an entry sequence the register may hold a host task's
//! value without the guest reaching it; the lend saved that task's FPMR before this loads the
//! guest's. The guest's value is loaded even for a VM that hides FPMR (it is then the reset 0
//! or what the VMM wrote while it was shown): one MSR, and no host value stays behind.

use super::vcpu::VcpuState;
use super::vm::Vm;
use crate::arch::fpsimd::fpsimd;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm as k;

/// The CPU has FPMR (then every task's FP state has it too).
fn host_has() -> bool {
    crate::task::fpstate::has_fpmr()
}

/// Whether the VM shows FPMR (Linux's `kvm_has_fpmr`).
pub fn vm_has(vm: &Vm) -> bool {
    host_has() && vm.id_reg(4, 2) & k::ID_AA64PFR2_FPMR != 0
}

/// Whether a trapped system register access (its op0..op2 packed as in the ESR-derived key
/// `op0 << 14 | op1 << 11 | crn << 7 | crm << 3 | op2`) is to FPMR. It traps (EC 0x18) only
/// while HCRX_EL2.EnFPM is clear, that is for a VM that hides FPMR, and is then UNDEFINED, as
/// Linux's sys_regs.c gives FPMR `undef_access`.
pub fn is_fpmr(key: u32) -> bool {
    u64::from(key) == k::FPMR & 0xffff
}

/// FPMR's ID for KVM_GET_REG_LIST, while the VM shows it.
pub fn ids(vm: &Vm) -> Option<u64> {
    vm_has(vm).then_some(k::FPMR)
}

/// KVM_GET_ONE_REG: `None` for another ID; ENOENT while the VM hides FPMR.
pub fn sysreg_value(vm: &Vm, st: &VcpuState, id: u64) -> Option<SysResult<u64>> {
    (id == k::FPMR).then(|| {
        if vm_has(vm) {
            Ok(st.fpmr)
        } else {
            Err(Errno::ENOENT)
        }
    })
}

/// KVM_SET_ONE_REG of FPMR (any value, stored as written, as Linux's reset_val descriptor);
/// ENOENT while the VM hides it.
pub fn sysreg_set(vm: &Vm, st: &mut VcpuState, v: u64) -> SysResult<()> {
    if !vm_has(vm) {
        return Err(Errno::ENOENT);
    }
    st.fpmr = v;
    Ok(())
}

/// The guest's FP registers have just come in: its FPMR follows, after SVCR (a change of
/// streaming mode zeroes FPMR).
pub fn load(st: &VcpuState) {
    if host_has() {
        fpsimd::fpmr::write(st.fpmr);
    }
}

/// The guest's FP registers are about to go back to memory: its FPMR first, before streaming
/// mode is left (which would zero it).
pub fn put(st: &mut VcpuState) {
    if host_has() {
        st.fpmr = fpsimd::fpmr::read();
    }
}
