//! TCR2_EL1, permission indirection and permission overlays for guests (FEAT_TCR2, FEAT_S1PIE,
//! FEAT_S1POE), as Linux 7.3's KVM gives them: the VM's ID_AA64MMFR3_EL1 shows the CPU's TCRX,
//! S1PIE and S1POE (a VMM may lower each before the first run), and what it shows decides the
//! rest (`svelt_abi::uapi::kvm_poe`): ONE_REG and the reg list reach the registers only while
//! the field is set (ENOENT otherwise, as sys_regs.c's *_visibility), the world switch moves
//! them only for such a VM (so others pay nothing), and a VM that hides one has its accesses
//! trapped (HCRX_EL2.TCR2En clear, HFGRTR_EL2/HFGWTR_EL2's nPIR/nPOR bits cleared) and made
//! UNDEFINED, as on a CPU without the feature.

use super::vcpu::VcpuState;
use super::vm::Vm;
use crate::arch::guest;
use crate::arch::guest_s1::S1Regs;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm_poe::{self as kp, S1Ext};

/// A vCPU's registers and, for its current KVM_RUN, which the VM has.
#[derive(Clone, Copy, Debug, Default)]
pub struct GuestS1 {
    pub regs: S1Regs,
    pub ext: S1Ext,
    /// `ext` was read from the VM's ID register (at this vCPU's first KVM_RUN; the ID
    /// registers are fixed from then on).
    known: bool,
}

/// What the VM shows now (its ID_AA64MMFR3_EL1).
pub fn vm_ext(vm: &Vm) -> S1Ext {
    S1Ext::of(vm.id_reg(7, 3))
}

/// The CPU's own (the limit of every VM's).
pub fn host_ext() -> S1Ext {
    S1Ext::of(guest::read_id_reg(7, 3))
}

/// At KVM_RUN, once the VM's ID registers are fixed: which registers the entries move.
pub fn run_start(vm: &Vm, st: &mut VcpuState) {
    if !st.s1.known {
        st.s1.ext = vm_ext(vm);
        st.s1.known = true;
    }
}

/// HCRX_EL2 bits and HFGRTR_EL2/HFGWTR_EL2 bits to clear for the VM's guests.
pub fn controls(vm: &Vm) -> (u64, u64) {
    let ext = vm_ext(vm);
    (ext.hcrx(), ext.fgt_clear(guest::has_fgt(), host_ext()))
}

/// Before an entry (interrupts masked): the guest's registers go in.
pub fn enter(st: &VcpuState) {
    if st.s1.ext.any() {
        st.s1.regs.load(st.s1.ext);
    }
}

/// After the exit (interrupts still masked): they come back.
pub fn exit(st: &mut VcpuState) {
    if st.s1.ext.any() {
        let ext = st.s1.ext;
        st.s1.regs.save(ext);
    }
}

/// The IDs the VM has, for KVM_GET_REG_LIST.
pub fn ids(vm: &Vm) -> impl Iterator<Item = u64> {
    vm_ext(vm).ids()
}

fn slot(regs: &mut S1Regs, id: u64) -> &mut u64 {
    match id {
        kp::SCTLR2_EL1 => &mut regs.sctlr2,
        kp::TCR2_EL1 => &mut regs.tcr2,
        kp::PIRE0_EL1 => &mut regs.pire0,
        kp::PIR_EL1 => &mut regs.pir,
        kp::POR_EL1 => &mut regs.por_el1,
        _ => &mut regs.por_el0,
    }
}

/// KVM_GET_ONE_REG: `None` for another ID; ENOENT while the VM hides the register.
pub fn sysreg_value(vm: &Vm, st: &VcpuState, id: u64) -> Option<SysResult<u64>> {
    let has = vm_ext(vm).has_id(id)?;
    let mut regs = st.s1.regs;
    Some(if has {
        Ok(*slot(&mut regs, id))
    } else {
        Err(Errno::ENOENT)
    })
}

/// KVM_SET_ONE_REG: `None` for another ID; any value is stored as written (Linux's
/// descriptors have no set_user check); ENOENT while the VM hides the register.
pub fn sysreg_set(vm: &Vm, st: &mut VcpuState, id: u64, v: u64) -> Option<SysResult<()>> {
    let has = vm_ext(vm).has_id(id)?;
    Some(if has {
        *slot(&mut st.s1.regs, id) = v;
        Ok(())
    } else {
        Err(Errno::ENOENT)
    })
}

/// Whether a trapped access (the ESR-derived key) is to one of the registers: it traps only
/// for a VM that hides the register, which is then UNDEFINED.
pub fn is_trapped_reg(key: u32) -> bool {
    kp::is_s1ext_key(key)
}
