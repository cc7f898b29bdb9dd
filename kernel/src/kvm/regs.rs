//! KVM_GET_ONE_REG, KVM_SET_ONE_REG and KVM_GET_REG_LIST: a vCPU's registers by the IDs of
//! Linux's arm64 KVM API (arch/arm64/include/uapi/asm/kvm.h; the core registers as
//! `struct kvm_regs` lays them out, system registers by encoding, the timers, and the firmware
//! pseudo-registers).

use super::vcpu::VcpuState;
use super::vm::Vm;
use crate::arch::guest::{self, El1State};
use crate::mm::uaccess::UserPtr;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{self as k, sysreg_id, CoreReg, KvmOneReg};
use svelt_abi::uapi::kvm_idregs as ki;

type Get = fn(&El1State) -> u64;
type Set = fn(&mut El1State, u64);

/// The EL1 and EL0 system registers a VMM reads and writes, in Linux's order of encodings.
macro_rules! sysregs {
    ($(($op0:literal, $op1:literal, $crn:literal, $crm:literal, $op2:literal, $f:ident)),* $(,)?) => {
        const SYSREGS: &[(u64, Get, Set)] = &[
            $((sysreg_id($op0, $op1, $crn, $crm, $op2), |s| s.$f, |s, v| s.$f = v),)*
        ];
    };
}

sysregs! {
    (2, 0, 0, 2, 2, mdscr),       // MDSCR_EL1
    (3, 0, 1, 0, 0, sctlr),       // SCTLR_EL1
    (3, 0, 1, 0, 2, cpacr),       // CPACR_EL1
    (3, 0, 2, 0, 0, ttbr0),       // TTBR0_EL1
    (3, 0, 2, 0, 1, ttbr1),       // TTBR1_EL1
    (3, 0, 2, 0, 2, tcr),         // TCR_EL1
    (3, 0, 5, 1, 0, afsr0),       // AFSR0_EL1
    (3, 0, 5, 1, 1, afsr1),       // AFSR1_EL1
    (3, 0, 5, 2, 0, esr),         // ESR_EL1
    (3, 0, 6, 0, 0, far),         // FAR_EL1
    (3, 0, 7, 4, 0, par),         // PAR_EL1
    (3, 0, 10, 2, 0, mair),       // MAIR_EL1
    (3, 0, 10, 3, 0, amair),      // AMAIR_EL1
    (3, 0, 12, 0, 0, vbar),       // VBAR_EL1
    (3, 0, 13, 0, 1, contextidr), // CONTEXTIDR_EL1
    (3, 0, 13, 0, 4, tpidr_el1),  // TPIDR_EL1
    (3, 0, 14, 1, 0, cntkctl),    // CNTKCTL_EL1
    (3, 2, 0, 0, 0, csselr),      // CSSELR_EL1
    (3, 3, 13, 0, 2, tpidr_el0),  // TPIDR_EL0
    (3, 3, 13, 0, 3, tpidrro_el0), // TPIDRRO_EL0
    (3, 3, 14, 2, 1, cntp_ctl),   // CNTP_CTL_EL0
    (3, 3, 14, 2, 2, cntp_cval),  // CNTP_CVAL_EL0
    (3, 3, 14, 3, 1, cntv_ctl),   // KVM_REG_ARM_TIMER_CTL
}

pub const MPIDR_EL1: u64 = sysreg_id(3, 0, 0, 0, 5);
/// KVM's names for the virtual timer's compare value and counter: their encodings are each
/// other's (a historical mix-up the API keeps).
pub const TIMER_CVAL: u64 = sysreg_id(3, 3, 14, 0, 2);
pub const TIMER_CNT: u64 = sysreg_id(3, 3, 14, 3, 2);
pub const CNTPCT: u64 = sysreg_id(3, 3, 14, 0, 1);
/// MIDR_EL1, REVIDR_EL1, CLIDR_EL1, AIDR_EL1, CTR_EL0 (`Vm::impl_regs` order).
const IMPL_REGS: [u64; 5] = [
    sysreg_id(3, 0, 0, 0, 0),
    sysreg_id(3, 0, 0, 0, 6),
    sysreg_id(3, 1, 0, 0, 1),
    sysreg_id(3, 1, 0, 0, 7),
    sysreg_id(3, 3, 0, 0, 1),
];
pub const OSLSR_EL1: u64 = sysreg_id(2, 0, 1, 1, 4);
/// OSLSR_EL1 out of reset: the OS lock is implemented (OSLM 0b10) and unlocked.
const OSLSR_RESET: u64 = 0b1000;
const OSLSR_OSLK: u64 = 0b10;

/// The registers that hold only what the VMM or the guest wrote (the guest's accesses trap
/// and never reach the CPU's own): the breakpoint and watchpoint registers (all sixteen of
/// each, as Linux lists them whatever ID_AA64DFR0_EL1 says), MDCCINT_EL1, OSLSR_EL1,
/// DBGVCR32_EL2, ACTLR_EL1, DISR_EL1 and the AArch32 DACR32_EL2, IFSR32_EL2, FPEXC32_EL2.
fn shadowed() -> impl Iterator<Item = u64> {
    let debug = (0..16).flat_map(|n| (4..8).map(move |op2| sysreg_id(2, 0, 0, n, op2)));
    debug.chain([
        sysreg_id(2, 0, 0, 2, 0), // MDCCINT_EL1
        OSLSR_EL1,
        sysreg_id(2, 4, 0, 7, 0),  // DBGVCR32_EL2
        sysreg_id(3, 0, 1, 0, 1),  // ACTLR_EL1
        sysreg_id(3, 0, 12, 1, 1), // DISR_EL1
        sysreg_id(3, 4, 3, 0, 0),  // DACR32_EL2
        sysreg_id(3, 4, 5, 0, 1),  // IFSR32_EL2
        sysreg_id(3, 4, 5, 3, 0),  // FPEXC32_EL2
    ])
}

/// The key of a system register in `VcpuState::shadow`: its encoding, as the ID's low bits
/// and the trap's ISS both give it.
pub fn shadow_key(id: u64) -> u32 {
    (id & 0xffff) as u32
}

/// The shadowed registers' reset values (all 0 but OSLSR_EL1).
pub fn reset_shadow(st: &mut VcpuState) {
    let _ = st.shadow.insert(shadow_key(OSLSR_EL1), OSLSR_RESET);
}

/// The firmware pseudo-registers: the PSCI version, the three workaround registers, the four
/// service bitmaps.
fn firmware() -> impl Iterator<Item = u64> {
    [
        k::KVM_REG_ARM_PSCI_VERSION,
        k::KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_1,
        k::KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_2,
        k::KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_3,
    ]
    .into_iter()
    .chain((0..k::FW_FEAT_BMAP_REGS).map(k::fw_feat_bmap_reg))
}

/// ZCR_EL1, which only a vCPU with SVE has.
const ZCR_EL1: u64 = sysreg_id(3, 0, 1, 2, 0);

/// Every register ID the vCPU has, in KVM_GET_REG_LIST's order: core (the FP/SIMD V registers
/// only without SVE, whose Z registers hold them), SVE, firmware, system.
fn all(vm: &Vm, st: &VcpuState) -> impl Iterator<Item = u64> {
    let has_sve = st.sve.is_some();
    let v_hidden = super::sme::v_hidden(st);
    let mut sys: Vec<u64> = SYSREGS.iter().map(|r| r.0).collect();
    if has_sve {
        sys.push(ZCR_EL1);
    }
    sys.extend(super::sme::sys_ids(st));
    sys.extend(super::pauth::ids(st));
    sys.extend(super::pmu::ids(st));
    sys.extend(super::fpmr::ids(vm));
    sys.extend(super::poe::ids(vm));
    sys.extend([MPIDR_EL1, TIMER_CVAL, TIMER_CNT, CNTPCT]);
    sys.extend(IMPL_REGS);
    sys.extend(shadowed());
    sys.extend((0..k::ID_REGS).map(k::id_reg_id));
    sys.sort_unstable();
    CoreReg::all()
        .filter(move |r| !(v_hidden && matches!(r, CoreReg::V(_))))
        .map(CoreReg::id)
        .chain(super::sme::sve_ids(vm, st))
        .chain(super::sme::sme_ids(vm, st))
        .chain(firmware())
        .chain(sys)
}

/// An ID of the SVE block (KVM_REG_ARM64_SVE), with arm64's architecture bits
/// (kvm_arm_get_reg's check of the upper half comes first).
fn is_sve(id: u64) -> bool {
    id & k::KVM_REG_ARCH_MASK == k::KVM_REG_ARM64
        && id & k::KVM_REG_ARM_COPROC_MASK == svelt_abi::uapi::kvm_sve::KVM_REG_ARM64_SVE
}

/// An ID of the SME block (KVM_REG_ARM64_SME).
fn is_sme(id: u64) -> bool {
    id & k::KVM_REG_ARCH_MASK == k::KVM_REG_ARM64
        && id & k::KVM_REG_ARM_COPROC_MASK == svelt_abi::uapi::kvm_sme::KVM_REG_ARM64_SME
}

fn counter() -> u64 {
    crate::arch::cpu::counter()
}

fn value(vm: &Vm, st: &VcpuState, id: u64) -> SysResult<u128> {
    if id & k::KVM_REG_ARCH_MASK != k::KVM_REG_ARM64 {
        return Err(Errno::EINVAL);
    }
    match id & k::KVM_REG_ARM_COPROC_MASK {
        k::KVM_REG_ARM_CORE => {
            let r = CoreReg::from_id(id)?;
            // A vCPU with SVE has its V registers only as the Z registers' low bits
            // (validate_core_offset).
            if super::sme::v_hidden(st) && matches!(r, CoreReg::V(_)) {
                return Err(Errno::EINVAL);
            }
            let v = match r {
                CoreReg::X(n) => st.regs.x[n] as u128,
                CoreReg::Sp => st.el1.sp_el0 as u128,
                CoreReg::Pc => st.regs.pc as u128,
                CoreReg::Pstate => st.regs.pstate as u128,
                CoreReg::SpEl1 => st.regs.sp_el1 as u128,
                CoreReg::ElrEl1 => st.el1.elr as u128,
                CoreReg::Spsr(0) => st.el1.spsr as u128,
                CoreReg::Spsr(n) => st.spsr32[n - 1] as u128,
                CoreReg::V(n) => st.fp.vregs[n],
                CoreReg::Fpsr => st.fp.fpsr as u128,
                CoreReg::Fpcr => st.fp.fpcr as u128,
            };
            Ok(v)
        }
        k::KVM_REG_ARM_FW if id == k::KVM_REG_ARM_PSCI_VERSION => Ok(st.psci_version as u128),
        // No workaround call is offered ("not available").
        k::KVM_REG_ARM_FW if firmware().any(|f| f == id) => Ok(0),
        k::KVM_REG_ARM_FW_FEAT_BMAP if firmware().any(|f| f == id) => {
            Ok(vm.fw_bmaps.lock()[(id & 0xffff) as usize] as u128)
        }
        k::KVM_REG_ARM64_SYSREG => {
            if k::reg_size(id) != 8 {
                return Err(Errno::ENOENT);
            }
            if let Some(v) = super::sme::sysreg_value(st, id) {
                return v.map(u128::from);
            }
            if let Some(v) = super::pauth::sysreg_value(st, id) {
                return v.map(u128::from);
            }
            if let Some(v) = super::fpmr::sysreg_value(vm, st, id) {
                return v.map(u128::from);
            }
            if let Some(v) = super::poe::sysreg_value(vm, st, id) {
                return v.map(u128::from);
            }
            if let Some(v) = super::pmu::sysreg_value(vm, st, id) {
                return v.map(u128::from);
            }
            let v = match id {
                MPIDR_EL1 => st.mpidr,
                ZCR_EL1 => st.sve.as_ref().ok_or(Errno::ENOENT)?.zcr_el1,
                TIMER_CVAL => st.el1.cntv_cval,
                TIMER_CNT => counter().wrapping_sub(vm.cntvoff.load(Ordering::Relaxed)),
                CNTPCT => counter().wrapping_sub(vm.cntpoff.load(Ordering::Relaxed)),
                _ => {
                    if let Some(i) = k::id_reg_index(id) {
                        vm.id_regs.lock()[i]
                    } else if ki::idx_of_sysreg(id) == Some(ki::CLIDR) {
                        st.clidr
                    } else if let Some(i) = IMPL_REGS.iter().position(|&r| r == id) {
                        vm.impl_regs.lock()[i]
                    } else if shadowed().any(|r| r == id) {
                        st.shadow.get(&shadow_key(id)).copied().unwrap_or(0)
                    } else {
                        let r = SYSREGS.iter().find(|r| r.0 == id).ok_or(Errno::ENOENT)?;
                        (r.1)(&st.el1)
                    }
                }
            };
            Ok(v as u128)
        }
        _ => Err(Errno::ENOENT),
    }
}

/// Whether the CPU runs AArch32 at EL0 (the AArch32 ID registers are then writable).
fn aa32() -> bool {
    guest::read_id_reg(4, 0) & 0xf == 2
}

/// The write of a register fixed once the VM has run: the value it has is accepted, any other
/// is EBUSY (`kvm_vm_has_ran_once`); before, `check` decides.
fn set_fixed(
    vm: &Vm,
    cur: &mut u64,
    v: u64,
    check: impl FnOnce() -> SysResult<()>,
) -> SysResult<()> {
    if vm.ran.load(Ordering::Relaxed) {
        return if *cur == v { Ok(()) } else { Err(Errno::EBUSY) };
    }
    check()?;
    *cur = v;
    Ok(())
}

/// A VMM's write to an ID register (`set_id_reg` with its register's filter): each writable
/// field may take a safe value against the VM's limit (lower for most features), every other
/// bit only the limit's; afterwards only the value it has.
fn set_id_reg(vm: &Vm, i: usize, v: u64) -> SysResult<()> {
    let (crm, op2) = ((1 + i / 8) as u8, (i % 8) as u8);
    let r = ki::idx(0, crm, op2);
    let v = ki::filter_write(r, guest::read_id_reg(crm, op2), v)?;
    let checked = super::sme::id_check_value(vm, i, v)?.unwrap_or(v);
    let mut regs = vm.id_regs.lock();
    set_fixed(vm, &mut regs[i], v, || {
        ki::check_features(
            r,
            ki::writable_mask(r, aa32()),
            super::pmu::id_limit(vm, i, super::pauth::id_limit(vm, i)),
            checked,
        )
    })
}

/// A VMM's write to the identification registers: CLIDR_EL1 is the vCPU's own (`set_clidr`),
/// CTR_EL0 the VM's with the feature rules (`set_ctr_el0`), MIDR_EL1, REVIDR_EL1 and AIDR_EL1
/// the VM's, any value within their masks once the VMM enabled
/// KVM_CAP_ARM_WRITABLE_IMP_ID_REGS (`set_imp_id_reg`).
fn set_impl_reg(vm: &Vm, st: &mut VcpuState, slot: usize, v: u64) -> SysResult<()> {
    let r = ki::idx_of_sysreg(IMPL_REGS[slot]).ok_or(Errno::ENOENT)?;
    let limit = vm.impl_limits[slot];
    match r {
        ki::CLIDR => {
            if !ki::clidr_write_ok(v, vm.impl_limits[4]) {
                return Err(Errno::EINVAL);
            }
            st.clidr = v;
            Ok(())
        }
        ki::CTR => {
            let v = ki::filter_write(r, limit, v)?;
            let mut regs = vm.impl_regs.lock();
            set_fixed(vm, &mut regs[slot], v, || {
                ki::check_features(r, ki::writable_mask(r, aa32()), limit, v)
            })
        }
        _ => {
            let mut regs = vm.impl_regs.lock();
            if regs[slot] == v {
                return Ok(());
            }
            if !vm.writable_imp.load(Ordering::Relaxed) {
                return Err(Errno::EINVAL);
            }
            set_fixed(vm, &mut regs[slot], v, || {
                if v & ki::writable_mask(r, false) != v {
                    return Err(Errno::EINVAL);
                }
                Ok(())
            })
        }
    }
}

/// KVM_ARM_GET_REG_WRITABLE_MASKS (`kvm_vm_ioctl_get_reg_writable_masks`): the writable bits
/// of every register in KVM's feature ID range, 0 for the rest. Only range 0 exists, and the
/// reserved words must be 0 (EINVAL).
pub fn writable_masks(arg: usize) -> SysResult<usize> {
    let r = UserPtr::<ki::RegMaskRange>::new(arg).read()?;
    if r.range != 0 || r.reserved.iter().any(|&w| w != 0) {
        return Err(Errno::EINVAL);
    }
    let aa32 = aa32();
    let masks: [u64; ki::FEATURE_ID_RANGE_SIZE] =
        core::array::from_fn(|i| ki::writable_mask(i, aa32));
    UserPtr::<u64>::new(r.addr as usize).write_slice(&masks)?;
    Ok(0)
}

/// KVM_GET_ONE_REG.
pub fn get(vm: &Vm, st: &VcpuState, r: &KvmOneReg) -> SysResult<usize> {
    if is_sve(r.id) && super::sme::streaming_view(st, r.id) {
        return super::sme::get_streaming(vm, st, r);
    }
    if is_sve(r.id) {
        return super::sve::get(st, r);
    }
    if is_sme(r.id) {
        return super::sme::get(vm, st, r);
    }
    let v = value(vm, st, r.id)?;
    let n = k::reg_size(r.id);
    let bytes = v.to_le_bytes();
    UserPtr::<u8>::new(r.addr as usize).write_slice(&bytes[..n.min(16)])?;
    Ok(0)
}

/// KVM_SET_ONE_REG.
pub fn set(vm: &Vm, st: &mut VcpuState, r: &KvmOneReg) -> SysResult<usize> {
    if is_sve(r.id) && super::sme::streaming_view(st, r.id) {
        return super::sme::set_streaming(vm, st, r);
    }
    if is_sve(r.id) {
        return super::sve::set(st, r);
    }
    if is_sme(r.id) {
        return super::sme::set(vm, st, r);
    }
    // The register must exist (and its size be right) before its value is read.
    value(vm, st, r.id)?;
    let n = k::reg_size(r.id);
    let mut bytes = [0u8; 16];
    UserPtr::<u8>::new(r.addr as usize).read_slice(&mut bytes[..n.min(16)])?;
    let v = u128::from_le_bytes(bytes);
    let v64 = v as u64;
    match r.id & k::KVM_REG_ARM_COPROC_MASK {
        k::KVM_REG_ARM_CORE => match CoreReg::from_id(r.id)? {
            CoreReg::X(i) => st.regs.x[i] = v64,
            CoreReg::Sp => st.el1.sp_el0 = v64,
            CoreReg::Pc => st.regs.pc = v64,
            CoreReg::Pstate => {
                if !super::aarch32::pstate_ok(st, v64) {
                    return Err(Errno::EINVAL);
                }
                st.regs.pstate = v64;
            }
            CoreReg::SpEl1 => st.regs.sp_el1 = v64,
            CoreReg::ElrEl1 => st.el1.elr = v64,
            CoreReg::Spsr(0) => st.el1.spsr = v64,
            CoreReg::Spsr(i) => st.spsr32[i - 1] = v64,
            CoreReg::V(i) => st.fp.vregs[i] = v,
            CoreReg::Fpsr => st.fp.fpsr = v64 as u32,
            CoreReg::Fpcr => st.fp.fpcr = v64 as u32,
        },
        k::KVM_REG_ARM_FW if r.id == k::KVM_REG_ARM_PSCI_VERSION => {
            // PSCI 0.2 and 1.0 to 1.3 may be chosen for a vCPU with PSCI 0.2 (a guest
            // migrated from an older host); 0.1 is the only one for a vCPU without.
            let wants_02 = st.features & (1 << k::KVM_ARM_VCPU_PSCI_0_2) != 0;
            let ok = if wants_02 {
                k::PSCI_VERSIONS.contains(&v64)
            } else {
                v64 == k::PSCI_VERSION_0_1
            };
            if !ok {
                return Err(Errno::EINVAL);
            }
            st.psci_version = v64;
        }
        // The workaround levels: only "not available", what Svelt's SMCCC answers.
        k::KVM_REG_ARM_FW => {
            if v64 != 0 {
                return Err(Errno::EINVAL);
            }
        }
        // A service bitmap: any subset of what Svelt offers, until the VM has run
        // (kvm_arm_set_fw_reg_bmap).
        k::KVM_REG_ARM_FW_FEAT_BMAP => {
            let i = (r.id & 0xffff) as usize;
            let mut maps = vm.fw_bmaps.lock();
            if v64 & !svelt_abi::uapi::kvm_services::FW_BMAPS_SUPPORTED[i] != 0 {
                return Err(Errno::EINVAL);
            }
            if maps[i] != v64 && vm.ran.load(Ordering::Relaxed) {
                return Err(Errno::EBUSY);
            }
            maps[i] = v64;
        }
        _ if super::sme::sysreg_value(st, r.id).is_some() => super::sme::sysreg_set(st, r.id, v64)?,
        _ if super::pauth::sysreg_value(st, r.id).is_some() => {
            super::pauth::sysreg_set(st, r.id, v64)?
        }
        k::KVM_REG_ARM64_SYSREG if r.id == k::FPMR => super::fpmr::sysreg_set(vm, st, v64)?,
        _ if super::poe::sysreg_value(vm, st, r.id).is_some() => {
            super::poe::sysreg_set(vm, st, r.id, v64).unwrap_or(Err(Errno::ENOENT))?
        }
        _ if super::pmu::sysreg_value(vm, st, r.id).is_some() => {
            super::pmu::sysreg_set(vm, st, r.id, v64)?
        }
        _ => match r.id {
            MPIDR_EL1 => st.mpidr = v64,
            ZCR_EL1 => {
                if let Some(g) = &mut st.sve {
                    g.zcr_el1 = v64;
                }
            }
            TIMER_CVAL => st.el1.cntv_cval = v64,
            TIMER_CNT => vm
                .cntvoff
                .store(counter().wrapping_sub(v64), Ordering::Relaxed),
            CNTPCT => vm
                .cntpoff
                .store(counter().wrapping_sub(v64), Ordering::Relaxed),
            // Only the OS lock bit of OSLSR_EL1 is the VMM's to change (set_oslsr_el1).
            OSLSR_EL1 if v64 & !OSLSR_OSLK != OSLSR_RESET => return Err(Errno::EINVAL),
            id => {
                if let Some(i) = k::id_reg_index(id) {
                    set_id_reg(vm, i, v64)?;
                } else if let Some(slot) = IMPL_REGS.iter().position(|&r| r == id) {
                    set_impl_reg(vm, st, slot, v64)?;
                } else if shadowed().any(|r| r == id) {
                    let _ = st.shadow.insert(shadow_key(id), v64);
                } else {
                    let r = SYSREGS.iter().find(|r| r.0 == id).ok_or(Errno::ENOENT)?;
                    (r.2)(&mut st.el1, v64);
                }
            }
        },
    }
    if r.id & k::KVM_REG_ARM_COPROC_MASK == k::KVM_REG_ARM_CORE {
        super::aarch32::narrow(st);
    }
    Ok(0)
}

/// KVM_GET_REG_LIST: `struct kvm_reg_list { u64 n; u64 reg[]; }`. A list too short for every
/// ID gets the count and E2BIG.
pub fn list(vm: &Vm, st: &VcpuState, arg: usize) -> SysResult<usize> {
    let n_user = UserPtr::<u64>::new(arg).read()?;
    let count = all(vm, st).count() as u64;
    UserPtr::<u64>::new(arg).write(&count)?;
    if n_user < count {
        return Err(Errno::E2BIG);
    }
    for (i, id) in all(vm, st).enumerate() {
        UserPtr::<u64>::new(arg + 8 + 8 * i).write(&id)?;
    }
    Ok(0)
}
