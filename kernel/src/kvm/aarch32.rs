//! AArch32 EL1 guests (KVM_ARM_VCPU_EL1_32BIT, where the CPU has AArch32 at EL1): a vCPU whose
//! EL1 and EL0 run in AArch32. It runs under HCR_EL2.RW clear with its AArch32-only registers
//! switched around each entry (`arch::guest32`); its exits are decided here first — a trapped
//! conditional instruction that failed its condition is skipped, CP15/CP14 accesses and VMRS
//! of the ID registers are emulated on the AArch64 registers, HVC32 and SMC32 become the
//! SMCCC calls of AArch64 — and the rest (WFx, data aborts, FP traps) are handled as for a
//! 64-bit vCPU, with the PC moved by the instruction's own length and the Thumb IT state.
//! Exceptions it is given are taken to the AArch32 Undefined and Abort modes.
//! (Linux's arch/arm64/kvm/handle_exit.c, sys_regs.c, hyp/aarch32.c, hyp/exception.c.)

use super::exit::Next;
use super::inject;
use super::regs::shadow_key;
use super::vcpu::{Vcpu, VcpuState};
use super::vm::Vm;
use crate::arch::guest;
use crate::arch::guest32::{self, A32State, FPEXC_EN};
use svelt_abi::isa::esr::Esr;
use svelt_abi::uapi::kvm::{self as k, sysreg_id};
use svelt_abi::uapi::kvm_aarch32::{self as a, Cp15, Cp32, Cp64};

const DACR32_EL2: u64 = sysreg_id(3, 4, 3, 0, 0);
const IFSR32_EL2: u64 = sysreg_id(3, 4, 5, 0, 1);
const FPEXC32_EL2: u64 = sysreg_id(3, 4, 5, 3, 0);
const ACTLR_EL1: u64 = sysreg_id(3, 0, 1, 0, 1);

/// Whether vCPUs may be 32-bit on this CPU (KVM_CAP_ARM_EL1_32BIT).
pub fn offered() -> bool {
    guest32::has_el1_aarch32()
}

/// The vCPU was initialised with KVM_ARM_VCPU_EL1_32BIT.
pub fn is32(st: &VcpuState) -> bool {
    st.features & (1 << k::KVM_ARM_VCPU_EL1_32BIT) != 0
}

/// The reset PSTATE of a 32-bit vCPU: Supervisor mode, A, I and F masked (kvm_reset_vcpu).
pub fn reset(st: &mut VcpuState) {
    if is32(st) {
        st.regs.pstate = a::PSTATE_RESET_SVC;
    }
}

/// A PSCI CPU_ON into a 32-bit vCPU: Supervisor mode, and Thumb if the entry point's bit 0
/// says so (kvm_reset_vcpu's reset_state).
pub fn cpu_on(st: &mut VcpuState) {
    if is32(st) {
        st.regs.pstate = a::PSTATE_RESET_SVC;
        if st.regs.pc & 1 != 0 {
            st.regs.pc &= !1;
            st.regs.pstate |= a::PSR_AA32_T_BIT;
        }
    }
}

/// Whether KVM_SET_ONE_REG may write this PSTATE (`set_core_reg`).
pub fn pstate_ok(st: &VcpuState, pstate: u64) -> bool {
    a::pstate_mode_ok(is32(st), pstate)
}

/// After a core register write to a vCPU in an AArch32 mode: the registers that mode reaches
/// and the PC keep only their low 32 bits (`set_core_reg`).
pub fn narrow(st: &mut VcpuState) {
    if st.regs.pstate & a::PSR_AA32_MODE_USR == 0 {
        return;
    }
    for x in &mut st.regs.x[..a::narrowed_regs(st.regs.pstate)] {
        *x &= 0xffff_ffff;
    }
    st.regs.pc &= 0xffff_ffff;
}

fn shadow(st: &VcpuState, id: u64) -> u64 {
    st.shadow.get(&shadow_key(id)).copied().unwrap_or(0)
}

/// Loads a 32-bit vCPU's AArch32-only registers before its entry (interrupts masked). While
/// its FP registers are in memory FPEXC.EN is set, so that its first FP instruction reaches
/// CPTR_EL2's trap instead of being UNDEFINED at its EL1 (Linux's __activate_traps_fpsimd32);
/// its own FPEXC is in once they are loaded. Nothing for a 64-bit vCPU.
/// What `enter` loaded, for `exit`.
pub type Entered = (A32State, bool);

pub fn enter(st: &VcpuState) -> Option<Entered> {
    if !is32(st) {
        return None;
    }
    let s = A32State {
        spsr: st.spsr32,
        dacr: shadow(st, DACR32_EL2),
        ifsr: shadow(st, IFSR32_EL2),
        fpexc: if st.fp_live {
            shadow(st, FPEXC32_EL2)
        } else {
            FPEXC_EN
        },
    };
    s.load();
    Some((s, st.fp_live))
}

/// Reads them back after the exit.
pub fn exit(st: &mut VcpuState, entered: Option<Entered>) {
    let Some((mut s, fp_live)) = entered else {
        return;
    };
    s.save();
    st.spsr32 = s.spsr;
    let _ = st.shadow.insert(shadow_key(DACR32_EL2), s.dacr);
    let _ = st.shadow.insert(shadow_key(IFSR32_EL2), s.ifsr);
    if fp_live {
        let _ = st.shadow.insert(shadow_key(FPEXC32_EL2), s.fpexc);
    }
}

/// Moves the PC past the trapped instruction (`kvm_skip_instr32`).
fn skip(st: &mut VcpuState) {
    let il32 = st.regs.esr & (1 << 25) != 0;
    (st.regs.pc, st.regs.pstate) = a::skip_instr(st.regs.pc, st.regs.pstate, il32);
}

/// After the AArch64 handling of a 32-bit vCPU's exit (or of the MMIO access the VMM
/// completed): that code steps the PC by 4, which becomes the instruction's own length (a
/// 16-bit T32 one's 2) and moves a Thumb IT block on. `pc0`, `pstate0`: before the handling.
#[inline(always)]
pub fn after_sync(st: &mut VcpuState, pc0: u64, pstate0: u64) {
    if is32(st) {
        after_sync32(st, pc0, pstate0);
    }
}

#[inline(never)]
fn after_sync32(st: &mut VcpuState, pc0: u64, pstate0: u64) {
    if st.regs.pc == pc0.wrapping_add(4) && st.regs.pstate == pstate0 {
        st.regs.pc = pc0;
        skip(st);
    }
}

/// A 32-bit vCPU's exit, before the AArch64 handling: `Err` when it was handled here,
/// `Ok(esr)` for the AArch64 handling with this syndrome (HVC32 and SMC32 as HVC64 and SMC64).
/// A 64-bit vCPU's goes through unchanged.
/// The check stays in the run loop; the 32-bit handling is out of line, so that it does not
/// change how the loop's 64-bit path is compiled.
#[inline(always)]
pub fn pre_sync(vcpu: &Vcpu, vm: &Vm, st: &mut VcpuState, esr: Esr) -> Result<Esr, Next> {
    if !is32(st) {
        return Ok(esr);
    }
    pre_sync32(vcpu, vm, st, esr)
}

#[inline(never)]
fn pre_sync32(vcpu: &Vcpu, vm: &Vm, st: &mut VcpuState, esr: Esr) -> Result<Esr, Next> {
    if !a::condition_passed(esr.0, st.regs.pstate) {
        skip(st);
        return Err(Next::Enter);
    }
    let iss = esr.0 & 0x1ff_ffff;
    match esr.ec_raw() {
        0x03 => cp15_32(vm, st, Cp32::from_iss(iss)),
        0x04 => cp15_64(vcpu.id, vm, st, Cp64::from_iss(iss)),
        0x05 | 0x06 | 0x0c => cp14(st, esr),
        0x08 => vmrs_id(vm, st, Cp32::from_iss(iss)),
        ec @ (0x12 | 0x13) => {
            // PSCI's SMC64 functions from AArch32: NOT_SUPPORTED (kvm_psci_check_allowed_function).
            let func = st.regs.x[0] as u32;
            if (0xc400_0000..=0xc400_001f).contains(&func)
                && matches!(vm.smccc_filter.action(func), k::SmcccAction::Handle)
            {
                st.regs.x[0] = k::PSCI_RET_NOT_SUPPORTED as u64;
                if ec == 0x13 {
                    skip(st);
                }
                return Err(Next::Enter);
            }
            return Ok(Esr((esr.0 & !(0x3f << 26)) | (u64::from(ec) + 4) << 26));
        }
        _ => return Ok(esr),
    }
    Err(Next::Enter)
}

fn read_to(st: &mut VcpuState, rt: usize, v: u64) {
    if rt < 31 {
        st.regs.x[rt] = v & 0xffff_ffff;
    }
}

/// MRC/MCR p15: the AArch32 ID registers are the VM's AArch64 ones of the same encoding; CTR,
/// CCSIDR, CLIDR, AIDR, REVIDR and CSSELR as for AArch64 (HCR_EL2.TID1, TID2); ACTLR the
/// guest's own copy (TACR); set/way maintenance nothing; anything else, and a write to a
/// read-only register, UNDEFINED.
fn cp15_32(vm: &Vm, st: &mut VcpuState, c: Cp32) {
    let v = match (a::cp15(&c), c.read) {
        (Cp15::Id { crm, op2 }, true) => Some(vm.id_reg(crm as u32, op2 as u32)),
        (Cp15::Ident { op1: 2, op2: 0 }, false) => {
            st.el1.csselr = st.regs.x[c.rt] & 0xffff_ffff;
            None
        }
        (Cp15::Ident { op1, op2 }, true) => Some(match (op1, op2) {
            (0, 1) => vm.impl_regs.lock()[4],
            (0, _) => vm.impl_regs.lock()[1],
            (1, 0) => guest::ccsidr(st.el1.csselr, false),
            (1, 1) => st.clidr,
            (1, _) => vm.impl_regs.lock()[3],
            _ => st.el1.csselr,
        }),
        (Cp15::Actlr, true) => Some(shadow(st, ACTLR_EL1)),
        (Cp15::Actlr, false) => {
            let v = st.regs.x[c.rt] & 0xffff_ffff;
            let _ = st.shadow.insert(shadow_key(ACTLR_EL1), v);
            None
        }
        (Cp15::SetWay, false) => None,
        _ => return inject::inject_undef(st),
    };
    if let Some(v) = v {
        read_to(st, c.rt, v);
    }
    skip(st);
}

/// MCRR/MRRC p15: the GIC's SGI registers (ICC_SGI1R, ICC_ASGI1R, ICC_SGI0R), write-only, with
/// a vGIC; anything else UNDEFINED.
fn cp15_64(id: u32, vm: &Vm, st: &mut VcpuState, c: Cp64) {
    if c.crm == 12 && c.opc1 <= 2 && !c.read && vm.vgic.lock().is_some() {
        let lo = st.regs.x[c.rt] & 0xffff_ffff;
        let hi = st.regs.x[c.rt2] & 0xffff_ffff;
        super::vgic::sgi(vm, id, lo | hi << 32, c.opc1 == 0);
        skip(st);
    } else {
        inject::inject_undef(st);
    }
}

/// CP14 (the AArch32 debug registers, trapped by MDCR_EL2): read as zero, writes ignored.
fn cp14(st: &mut VcpuState, esr: Esr) {
    let iss = esr.0 & 0x1ff_ffff;
    match esr.ec_raw() {
        0x05 => {
            let c = Cp32::from_iss(iss);
            if c.read {
                read_to(st, c.rt, 0);
            }
        }
        0x0c => {
            let c = Cp64::from_iss(iss);
            if c.read {
                read_to(st, c.rt, 0);
                read_to(st, c.rt2, 0);
            }
        }
        _ => {}
    }
    skip(st);
}

/// VMRS of MVFR0, MVFR1, MVFR2 (HCR_EL2.TID3): the VM's MVFR0_EL1..MVFR2_EL1
/// (kvm_handle_cp10_id); FPSID and the rest UNDEFINED.
fn vmrs_id(vm: &Vm, st: &mut VcpuState, c: Cp32) {
    let op2 = match c.crn {
        7 => 0,
        6 => 1,
        5 => 2,
        _ => return inject::inject_undef(st),
    };
    let v = vm.id_reg(3, op2);
    read_to(st, c.rt, v);
    skip(st);
}

/// Takes an exception KVM gives a 32-bit vCPU (inject_fault.c's AArch32 paths): an external
/// abort becomes a Prefetch or Data Abort in Abort mode with IFSR or DFSR (ESR_EL1) an external
/// abort in the format TTBCR.EAE selects and IFAR or DFAR (FAR_EL1's high or low half) its
/// address (`FAR_EL1` holds it when called); an SError an asynchronous Data Abort; anything
/// else an Undefined Instruction exception.
pub fn take_exception(st: &mut VcpuState, serror: bool, esr: u64) {
    let lpae = st.el1.tcr & (1 << 31) != 0;
    let fsr = match (lpae, serror) {
        (true, false) => 1 << 9 | 0x10,
        (false, false) => 0x08,
        (true, true) => 1 << 9 | 0x11,
        (false, true) => 0x406,
    };
    match (esr >> 26) & 0x3f {
        0x20 | 0x21 if !serror => {
            st.el1.far = (st.el1.far & 0xffff_ffff) << 32;
            let _ = st.shadow.insert(shadow_key(IFSR32_EL2), fsr);
            enter_mode(st, a::PSR_AA32_MODE_ABT, 0x0c, 4, 4);
        }
        0x24 | 0x25 => {
            st.el1.far &= 0xffff_ffff;
            st.el1.esr = fsr;
            enter_mode(st, a::PSR_AA32_MODE_ABT, 0x10, 8, 8);
        }
        _ if serror => {
            st.el1.esr = fsr;
            enter_mode(st, a::PSR_AA32_MODE_ABT, 0x10, 8, 8);
        }
        _ => enter_mode(st, a::PSR_AA32_MODE_UND, 0x04, 4, 2),
    }
}

/// The AArch32 exception entry (enter_exception32): the mode's SPSR and LR (r14_abt is x20,
/// r14_und x22) get the old CPSR and the return address (the PC plus `arm`, or `thumb` from
/// T32), the CPSR its new masks, the PC the vector at VBAR (or 0xffff0000 with SCTLR.V).
fn enter_mode(st: &mut VcpuState, mode: u64, vector: u64, arm: u64, thumb: u64) {
    let old = st.regs.pstate;
    let off = if old & a::PSR_AA32_T_BIT != 0 {
        thumb
    } else {
        arm
    };
    let ret = st.regs.pc.wrapping_add(off) & 0xffff_ffff;
    let spsr = a::spsr_to_spsr32(old);
    if mode == a::PSR_AA32_MODE_ABT {
        st.spsr32[0] = spsr;
        st.regs.x[20] = ret;
    } else {
        st.spsr32[1] = spsr;
        st.regs.x[22] = ret;
    }
    st.regs.pstate = a::exception_cpsr(old, st.el1.sctlr, mode);
    let base = if st.el1.sctlr & (1 << 13) != 0 {
        0xffff_0000
    } else {
        st.el1.vbar & 0xffff_ffff
    };
    st.regs.pc = base + vector;
}
