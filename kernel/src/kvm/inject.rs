//! Exceptions KVM gives a guest (Linux's arch/arm64/kvm/inject_fault.c decides the same cases):
//! an Undefined Instruction, a synchronous external abort, an SError (taken at once when the
//! guest has SErrors unmasked, else left pending in HCR_EL2.VSE with VSESR_EL2 as its
//! syndrome), and the vCPU events ioctls that let a VMM inject the last two.
//!
//! An exception is taken the way the CPU would take it to EL1: ELR_EL1 and SPSR_EL1 get the
//! guest's PC and PSTATE, and the guest goes on at its vector with interrupts masked. Nothing is
//! deferred to the next entry: after the ioctl the registers already show the vector.

use super::vcpu::{VcpuState, PSTATE_RESET};
use super::vm::Vm;
use crate::mm::uaccess::UserPtr;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::{self as k, KvmVcpuEvents};

/// Which of a vector table's four entries an exception takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vector {
    Sync = 0x000,
    SError = 0x180,
}

/// Takes an exception to the guest's EL1, as the CPU would: the vector table's quarter by where
/// it came from (EL1 with SP_EL0, EL1 with SP_EL1, EL0), PSTATE masked at EL1h, PAN set unless
/// SCTLR_EL1.SPAN says to keep it, SSBS from SCTLR_EL1.DSSBS, DIT kept.
fn enter_el1(st: &mut VcpuState, vector: Vector, esr: u64) {
    if super::aarch32::is32(st) {
        super::aarch32::take_exception(st, vector == Vector::SError, esr);
        return;
    }
    let quarter = match st.regs.pstate & 0x1f {
        0b00000 => 0x400, // from EL0 (AArch64)
        0b00100 => 0x000, // EL1t
        _ => 0x200,       // EL1h
    };
    st.el1.elr = st.regs.pc;
    st.el1.spsr = st.regs.pstate;
    st.el1.esr = esr;
    let mut pstate = PSTATE_RESET;
    if st.el1.sctlr & (1 << 23) == 0 {
        pstate |= 1 << 22; // SPAN clear: PAN set on entry
    } else {
        pstate |= st.regs.pstate & (1 << 22);
    }
    if st.el1.sctlr & (1 << 44) != 0 {
        pstate |= 1 << 12; // DSSBS
    }
    pstate |= st.regs.pstate & (1 << 24); // DIT is kept
    st.regs.pstate = pstate;
    st.regs.pc = st.el1.vbar + quarter + vector as u64;
}

/// The guest's own syndrome for an exception KVM reflects to it unchanged (a trapped access
/// the guest's configuration says its EL1 takes).
pub fn reflect(st: &mut VcpuState, esr: u64) {
    enter_el1(st, Vector::Sync, esr);
}

/// An Undefined Instruction exception for the guest (EC 0, IL set).
pub fn inject_undef(st: &mut VcpuState) {
    enter_el1(st, Vector::Sync, 1 << 25);
}

/// The guest is at EL1 (not EL0).
fn at_el1(st: &VcpuState) -> bool {
    st.regs.pstate & 0x1f != 0
}

/// A synchronous external abort for the guest at `addr` (its FAR_EL1): an instruction abort if
/// `iabt`, else a data abort (kvm_inject_sea). When the exit that led here was a stage-2 fault
/// on the guest's own stage-1 walk (`s1ptw_ipa`: the IPA the walk read), the abort is one on
/// the walk, at the level whose table lives there; if no level of the walk reads that page
/// (the tables changed meanwhile), nothing is injected and the guest retries, as Linux does.
/// Says whether the abort was taken.
pub fn inject_sea(
    vm: &Vm,
    st: &mut VcpuState,
    iabt: bool,
    addr: u64,
    s1ptw_ipa: Option<u64>,
) -> bool {
    let fsc = match s1ptw_ipa {
        Some(ipa) => match s1_table_level(vm, st, addr, ipa) {
            Some(level) => 0x14 + level,
            None => return false,
        },
        None => 0x10,
    };
    st.el1.far = addr;
    let esr = k::sea_esr(iabt, at_el1(st), fsc);
    enter_el1(st, Vector::Sync, esr);
    true
}

/// An address size fault at level 0 (an IPA beyond what any VM may have: kvm_inject_size_fault):
/// the external abort's syndrome with the fault status cleared.
pub fn inject_size_fault(vm: &Vm, st: &mut VcpuState, iabt: bool, addr: u64, s1: Option<u64>) {
    if inject_sea(vm, st, iabt, addr, s1) {
        st.el1.esr &= !0x3f;
    }
}

/// Walks the guest's EL1&0 stage-1 tables for `va` and returns the level (0..=3) whose table
/// lies in the page at `ipa` (Linux's __kvm_find_s1_desc_level); None if the walk ends first,
/// or the MMU is off. 4K, 16K and 64K granules, 48-bit output addresses.
fn s1_table_level(vm: &Vm, st: &VcpuState, va: u64, ipa: u64) -> Option<u64> {
    if st.el1.sctlr & 1 == 0 {
        return None;
    }
    let tcr = st.el1.tcr;
    let upper = va & (1 << 55) != 0;
    let (tsz, tg, ttbr) = if upper {
        let tg = match (tcr >> 30) & 3 {
            1 => 14,
            3 => 16,
            _ => 12,
        };
        ((tcr >> 16) & 0x3f, tg, st.el1.ttbr1)
    } else {
        let tg = match (tcr >> 14) & 3 {
            1 => 16,
            2 => 14,
            _ => 12,
        };
        (tcr & 0x3f, tg, st.el1.ttbr0)
    };
    let ia_bits = 64 - tsz.clamp(16, 48);
    let stride = tg - 3;
    let levels = (ia_bits - tg).div_ceil(stride);
    let oa_mask = ((1u64 << 48) - 1) & !((1u64 << tg) - 1);
    let target = ipa & oa_mask;
    let mut table = ttbr & ((1u64 << 48) - 1) & !1;
    for level in (4 - levels)..=3 {
        let shift = tg + (3 - level) * stride;
        let bits = (ia_bits - shift).min(stride);
        let index = (va >> shift) & ((1u64 << bits) - 1);
        let desc_ipa = table + index * 8;
        if desc_ipa & oa_mask == target {
            return Some(level);
        }
        let desc = vm.read_guest_u64(desc_ipa)?;
        // Invalid, a block, or a page: the walk is over without touching `ipa`.
        if desc & 1 == 0 || level == 3 || desc & 2 == 0 {
            return None;
        }
        table = desc & oa_mask;
    }
    None
}

/// Whether the CPU implements FEAT_RAS, which gives a virtual SError a syndrome (VSESR_EL2).
pub fn has_ras() -> bool {
    crate::arch::guest::has_ras()
}

/// An SError for the guest with syndrome `iss` (kvm_inject_serror_esr): taken at once if the
/// guest has SErrors unmasked (PSTATE.A clear), else made pending in HCR_EL2.VSE for the CPU
/// to deliver when the guest unmasks them. Says whether it was taken.
fn inject_serror(st: &mut VcpuState, iss: u64) -> bool {
    if st.regs.pstate & (1 << 8) == 0 {
        enter_el1(st, Vector::SError, k::serror_esr(iss));
        true
    } else {
        st.vsesr = iss & k::ESR_ISS_MASK;
        st.vse = true;
        false
    }
}

/// KVM_GET_VCPU_EVENTS: a pending virtual SError and, with FEAT_RAS, its syndrome. An external
/// abort is never pending: it is taken when set.
pub fn get_events(st: &VcpuState, arg: usize) -> SysResult<usize> {
    let ras = has_ras();
    let mut e = KvmVcpuEvents {
        serror_has_esr: ras as u8,
        serror_pending: st.vse as u8,
        ..KvmVcpuEvents::default()
    };
    if st.vse && ras {
        e.serror_esr = st.vsesr;
    }
    UserPtr::<KvmVcpuEvents>::new(arg).write(&e)?;
    Ok(0)
}

/// KVM_SET_VCPU_EVENTS: an external data abort taken now at the last exit's FAR (an MMIO
/// access the VMM was answering is then abandoned, the PC left on it), then an SError.
pub fn set_events(vm: &Vm, st: &mut VcpuState, arg: usize) -> SysResult<usize> {
    let e = UserPtr::<KvmVcpuEvents>::new(arg).read()?;
    let req = k::check_vcpu_events(&e, has_ras())?;
    if req.ext_dabt {
        let s1 = s1ptw_ipa(st);
        let far = st.regs.far;
        if inject_sea(vm, st, false, far, s1) {
            st.mmio = None;
        }
    }
    if let Some(iss) = req.serror? {
        if inject_serror(st, iss) {
            st.mmio = None;
        }
    }
    Ok(0)
}

/// The IPA a stage-2 fault on the guest's stage-1 walk read, if the last exit was one
/// (ESR_EL2.S1PTW of an instruction or data abort; HPFAR_EL2 gives the page).
pub fn s1ptw_ipa(st: &VcpuState) -> Option<u64> {
    let ec = (st.regs.esr >> 26) & 0x3f;
    let abort = ec == 0x20 || ec == 0x24;
    let ipa = ((st.regs.hpfar >> 4) & ((1 << 40) - 1)) << 12;
    (abort && st.regs.esr & (1 << 7) != 0).then_some(ipa)
}

/// Refuses an event ioctl before KVM_ARM_VCPU_INIT.
pub fn check_inited(st: &VcpuState) -> SysResult<()> {
    if st.inited {
        Ok(())
    } else {
        Err(Errno::ENOEXEC)
    }
}
