//! Guest debugging from the VMM (KVM_SET_GUEST_DEBUG, KVM_EXIT_DEBUG), as Linux 7.3's
//! arch/arm64/kvm/debug.c, guest.c's kvm_arch_vcpu_ioctl_set_guest_debug and handle_exit.c's
//! kvm_handle_guest_debug: what QEMU's gdbstub uses with `-accel kvm`.
//!
//! While a VMM debugs a vCPU, every entry runs it with MDCR_EL2.TDE, so its debug exceptions
//! (software step, breakpoints, watchpoints, BRK) come to EL2 and end KVM_RUN with
//! KVM_EXIT_DEBUG and the ESR. The guest's MDSCR_EL1 is swapped for an "external" one for the
//! run (SS for single step, MDE and KDE for the VMM's breakpoints) and put back at the exit,
//! so the guest (whose accesses trap) and ONE_REG only ever see their own value; with
//! KVM_GUESTDBG_USE_HW the VMM's breakpoint and watchpoint registers replace the host's in the
//! CPU for the run (`arch::guest_debug`). Single step takes over PSTATE.SS in the vCPU's
//! SPSR for the length of a KVM_RUN (debug.c's kvm_vcpu_load_debug and kvm_vcpu_put_debug:
//! the guest's own SS comes back before the VMM reads the registers); an instruction the
//! kernel completes for the guest (an MMIO access, a trapped register, WFI) clears it, so the
//! next entry reports the step at once, as kvm_skip_instr does.
//!
//! The guest's own debugging (Linux's VCPU_DEBUG_GUEST_OWNED): while its MDSCR_EL1 has MDE or
//! KDE and nobody else owns the registers, its breakpoint and watchpoint registers (kept
//! by the trapped accesses, MDCR_EL2.TDA) replace the host's in the CPU for each run, so its
//! breakpoints, watchpoints, software step and BRK go to its own EL1 vectors (TDE clear).
//! Its OS lock (OSLSR_EL1.OSLK) is emulated as Linux does: the guest runs with MDE, KDE and
//! SS cleared from its MDSCR_EL1 (VCPU_DEBUG_HOST_OWNED). A VMM's debugging takes precedence.
//! A vCPU with neither has no state here and pays only the run loop's `extras` test once per
//! KVM_RUN; a guest turning its debugging on makes the run loop look again
//! (`Next::Reconfigure`).

use super::exit::Next;
use super::regs::{shadow_key, OSLSR_EL1};
use super::vcpu::{Vcpu, VcpuState};
use crate::arch::guest::{self, mdcr};
use crate::arch::guest_debug::{self as hw, DbgRegs};
use crate::mm::uaccess::UserPtr;
use alloc::boxed::Box;
use svelt_abi::isa::esr::Esr;
use svelt_abi::uapi::errno::SysResult;
use svelt_abi::uapi::kvm_debug::{self as kd, KvmGuestDebug, KvmGuestDebugArch};

/// A debugged vCPU's debugging state (by its VMM, itself, or both).
#[derive(Debug, Default)]
pub struct GuestDebug {
    /// KVM_GUESTDBG_* (ENABLE set), or 0 while the VMM does not debug the vCPU.
    control: u32,
    /// The VMM's breakpoints and watchpoints (KVM_GUESTDBG_USE_HW).
    arch: KvmGuestDebugArch,
    /// At the end of the last KVM_RUN the VMM's step was pending (PSTATE.SS clear: the step
    /// exception comes before the next instruction): Linux's HOST_SS_ACTIVE_PENDING.
    host_ss_pending: bool,
    /// The guest's own PSTATE.SS was clear when this KVM_RUN took it over:
    /// GUEST_SS_ACTIVE_PENDING.
    guest_ss_pending: bool,
    /// The guest's own MDSCR_EL1 while the external one is in `el1`.
    guest_mdscr: u64,
    /// The PC the guest last left at (or KVM_RUN began with): a different PC at the next entry
    /// means the kernel completed an instruction for it.
    exit_pc: u64,
    /// The host's breakpoint and watchpoint registers while the VMM's or the guest's are in
    /// the CPU.
    host_hw: Option<DbgRegs>,
    /// The external MDSCR_EL1 is in `el1` for this run (the guest's in `guest_mdscr`).
    mdscr_swapped: bool,
}

impl GuestDebug {
    fn stepping(&self) -> bool {
        self.control & kd::KVM_GUESTDBG_SINGLESTEP != 0
    }
    fn use_hw(&self) -> bool {
        self.control & kd::KVM_GUESTDBG_USE_HW != 0
    }
}

/// The CPU's breakpoint and watchpoint counts (KVM_CAP_GUEST_DEBUG_HW_BPS and _WPS).
pub fn hw_counts() -> (usize, usize) {
    kd::hw_counts(crate::arch::debug::id_aa64dfr0())
}

/// The guest's MDSCR_EL1 asks for debug exceptions (its own breakpoints, watchpoints or
/// step), so that its entries must look at its debug state.
fn guest_wants(st: &VcpuState) -> bool {
    st.el1.mdscr & (kd::MDSCR_SS | kd::MDSCR_MDE | kd::MDSCR_KDE) != 0
}

/// The guest's OS lock (kvm_vcpu_os_lock_enabled).
fn os_locked(st: &VcpuState) -> bool {
    st.shadow.get(&shadow_key(OSLSR_EL1)).copied().unwrap_or(0) & 0b10 != 0
}

/// After a trapped system register access: a guest that has just turned its own debugging
/// on gets its state, and the run loop looks again at what its entries need.
pub fn after_sysreg(st: &mut VcpuState) -> Next {
    if st.gdebug.is_none() && guest_wants(st) {
        st.gdebug = Some(Box::default());
        return Next::Reconfigure;
    }
    Next::Enter
}

/// KVM_SET_GUEST_DEBUG (kvm_arch_vcpu_ioctl_set_guest_debug): EFAULT for an unreadable
/// argument, EINVAL for unknown flags; without KVM_GUESTDBG_ENABLE debugging stops.
pub fn set_guest_debug(st: &mut VcpuState, arg: usize) -> SysResult<usize> {
    let d = UserPtr::<KvmGuestDebug>::new(arg).read()?;
    match kd::parse_control(d.control)? {
        // The guest's own debugging, if any, is settled by the next KVM_RUN (run_start).
        None => st.gdebug = None,
        Some(control) => {
            let g = st.gdebug.get_or_insert_with(Box::default);
            g.control = control;
            if control & kd::KVM_GUESTDBG_USE_HW != 0 {
                g.arch = d.arch;
            }
        }
    }
    Ok(0)
}

/// At the start of KVM_RUN, before the kernel completes an MMIO access: single step takes
/// over PSTATE.SS (kvm_vcpu_load_debug).
pub fn run_start(st: &mut VcpuState) {
    // The guest's own debugging as it (or the VMM, through ONE_REG) left MDSCR_EL1.
    match (&st.gdebug, guest_wants(st)) {
        (None, true) => st.gdebug = Some(Box::default()),
        (Some(g), false) if g.control == 0 => st.gdebug = None,
        _ => {}
    }
    let Some(g) = st.gdebug.as_mut() else { return };
    g.exit_pc = st.regs.pc;
    if g.stepping() {
        g.guest_ss_pending = st.regs.pstate & kd::SPSR_SS == 0;
        if g.host_ss_pending {
            st.regs.pstate &= !kd::SPSR_SS;
        } else {
            st.regs.pstate |= kd::SPSR_SS;
        }
    }
}

/// At the end of KVM_RUN: the guest's own PSTATE.SS back, the VMM's step state kept
/// (kvm_vcpu_put_debug).
pub fn run_end(st: &mut VcpuState) {
    let Some(g) = st.gdebug.as_mut() else { return };
    if g.stepping() {
        g.host_ss_pending = st.regs.pstate & kd::SPSR_SS == 0;
        if g.guest_ss_pending {
            st.regs.pstate &= !kd::SPSR_SS;
        } else {
            st.regs.pstate |= kd::SPSR_SS;
        }
    }
}

/// Just before a debugged vCPU's entry, interrupts masked. Debugged by the VMM or with the
/// OS lock set (kvm_vcpu_load_debug's VCPU_DEBUG_HOST_OWNED): the external MDSCR_EL1 and,
/// for the VMM, debug exceptions to EL2 and its breakpoints in the CPU. Otherwise, with MDE
/// or KDE set (VCPU_DEBUG_GUEST_OWNED): the guest's own breakpoints in the CPU.
pub fn enter(st: &mut VcpuState, controls: &mut guest::Controls) {
    let locked = st.gdebug.as_ref().is_some_and(|g| g.control == 0) && os_locked(st);
    let Some(g) = st.gdebug.as_mut() else { return };
    let (brps, wrps) = hw_counts();
    if g.control == 0 && !locked {
        g.mdscr_swapped = false;
        // The guest's own step over an instruction the kernel completed for it ends at once,
        // as kvm_skip_instr's clearing of PSTATE.SS makes it.
        if st.el1.mdscr & kd::MDSCR_SS != 0 && st.regs.pc != g.exit_pc {
            st.regs.pstate &= !kd::SPSR_SS;
        }
        if st.el1.mdscr & (kd::MDSCR_MDE | kd::MDSCR_KDE) != 0 {
            g.host_hw = Some(hw::read(brps, wrps));
            hw::write(&guest_regs(&st.shadow, brps, wrps), brps, wrps);
        }
        return;
    }
    if g.control != 0 {
        controls.mdcr_traps |= mdcr::TDE;
    }
    g.mdscr_swapped = true;
    g.guest_mdscr = st.el1.mdscr;
    st.el1.mdscr = kd::external_mdscr(g.guest_mdscr, g.control);
    if g.stepping() && st.regs.pc != g.exit_pc {
        st.regs.pstate &= !kd::SPSR_SS;
    }
    if g.use_hw() {
        g.host_hw = Some(hw::read(brps, wrps));
        let mut r = DbgRegs {
            bcr: g.arch.dbg_bcr,
            bvr: g.arch.dbg_bvr,
            wcr: g.arch.dbg_wcr,
            wvr: g.arch.dbg_wvr,
        };
        for c in r.bcr.iter_mut().chain(r.wcr.iter_mut()) {
            *c &= !kd::DBGXCR_HMC;
        }
        hw::write(&r, brps, wrps);
    }
}

/// The guest's breakpoint and watchpoint registers as its trapped writes left them (the
/// CPU's implemented slots; the guest sees the same counts in ID_AA64DFR0_EL1).
fn guest_regs(
    shadow: &alloc::collections::BTreeMap<u32, u64>,
    brps: usize,
    wrps: usize,
) -> DbgRegs {
    // DBGBVR<n>_EL1 is op0 2, op1 0, CRn 0, CRm n, op2 4 (BCR 5, WVR 6, WCR 7).
    let get = |n: usize, op2: u32| {
        let key = (2 << 14) | ((n as u32) << 3) | op2;
        shadow.get(&key).copied().unwrap_or(0)
    };
    let mut r = DbgRegs::default();
    for n in 0..brps.min(16) {
        r.bvr[n] = get(n, 4);
        r.bcr[n] = get(n, 5);
    }
    for n in 0..wrps.min(16) {
        r.wvr[n] = get(n, 6);
        r.wcr[n] = get(n, 7);
    }
    r
}

/// Right after its exit, interrupts still masked: the guest's MDSCR_EL1 and the host's
/// breakpoints back.
pub fn exit(st: &mut VcpuState) {
    let Some(g) = st.gdebug.as_mut() else { return };
    if g.mdscr_swapped {
        st.el1.mdscr = g.guest_mdscr;
    }
    g.exit_pc = st.regs.pc;
    if let Some(h) = g.host_hw.take() {
        let (brps, wrps) = hw_counts();
        hw::write(&h, brps, wrps);
    }
}

/// A debug exception of a debugged guest: KVM_EXIT_DEBUG with the ESR (and the address a
/// watchpoint matched); after a step the next entry steps again (kvm_handle_guest_debug).
/// `None` for a vCPU its VMM does not debug (its debug exceptions stay in the guest,
/// MDCR_EL2.TDE clear, so this cannot come).
pub fn handle(vcpu: &Vcpu, st: &mut VcpuState, esr: Esr) -> Option<Next> {
    if st.gdebug.as_ref()?.control == 0 {
        return None;
    }
    vcpu.set_exit_reason(kd::KVM_EXIT_DEBUG);
    vcpu.run_write(kd::run::DEBUG_HSR, &(esr.0 as u32).to_le_bytes());
    vcpu.run_write(
        kd::run::DEBUG_HSR_HIGH,
        &((esr.0 >> 32) as u32).to_le_bytes(),
    );
    vcpu.run_write(
        svelt_abi::uapi::kvm::run::FLAGS,
        &kd::KVM_DEBUG_ARCH_HSR_HIGH_VALID.to_le_bytes(),
    );
    match esr.ec_raw() {
        kd::EC_WATCHPT_LOW => vcpu.run_write(kd::run::DEBUG_FAR, &st.regs.far.to_le_bytes()),
        kd::EC_SOFTSTP_LOW => st.regs.pstate |= kd::SPSR_SS,
        _ => {}
    }
    Some(Next::ToVmm)
}
