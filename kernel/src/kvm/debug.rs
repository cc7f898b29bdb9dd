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
//! next entry reports the step at once, as kvm_skip_instr does. A vCPU nobody debugs has no
//! state here and pays only the run loop's `extras` test once per KVM_RUN.

use super::exit::Next;
use super::vcpu::{Vcpu, VcpuState};
use crate::arch::guest::{self, mdcr};
use crate::arch::guest_debug::{self as hw, DbgRegs};
use crate::mm::uaccess::UserPtr;
use alloc::boxed::Box;
use svelt_abi::isa::esr::Esr;
use svelt_abi::uapi::errno::SysResult;
use svelt_abi::uapi::kvm_debug::{self as kd, KvmGuestDebug, KvmGuestDebugArch};

/// A debugged vCPU's debugging state.
#[derive(Debug, Default)]
pub struct GuestDebug {
    /// KVM_GUESTDBG_* (ENABLE always set).
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
    /// The host's breakpoint and watchpoint registers while the VMM's are in the CPU.
    host_hw: Option<DbgRegs>,
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

/// KVM_SET_GUEST_DEBUG (kvm_arch_vcpu_ioctl_set_guest_debug): EFAULT for an unreadable
/// argument, EINVAL for unknown flags; without KVM_GUESTDBG_ENABLE debugging stops.
pub fn set_guest_debug(st: &mut VcpuState, arg: usize) -> SysResult<usize> {
    let d = UserPtr::<KvmGuestDebug>::new(arg).read()?;
    match kd::parse_control(d.control)? {
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

/// Just before a debugged vCPU's entry, interrupts masked: debug exceptions to EL2, the
/// external MDSCR_EL1, the VMM's breakpoints in the CPU.
pub fn enter(st: &mut VcpuState, controls: &mut guest::Controls) {
    let Some(g) = st.gdebug.as_mut() else { return };
    controls.mdcr_traps |= mdcr::TDE;
    g.guest_mdscr = st.el1.mdscr;
    st.el1.mdscr = kd::external_mdscr(g.guest_mdscr, g.control);
    if g.stepping() && st.regs.pc != g.exit_pc {
        st.regs.pstate &= !kd::SPSR_SS;
    }
    if g.use_hw() {
        let (brps, wrps) = hw_counts();
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

/// Right after its exit, interrupts still masked: the guest's MDSCR_EL1 and the host's
/// breakpoints back.
pub fn exit(st: &mut VcpuState) {
    let Some(g) = st.gdebug.as_mut() else { return };
    st.el1.mdscr = g.guest_mdscr;
    g.exit_pc = st.regs.pc;
    if let Some(h) = g.host_hw.take() {
        let (brps, wrps) = hw_counts();
        hw::write(&h, brps, wrps);
    }
}

/// A debug exception of a debugged guest: KVM_EXIT_DEBUG with the ESR (and the address a
/// watchpoint matched); after a step the next entry steps again (kvm_handle_guest_debug).
/// `None` for a vCPU nobody debugs (its debug exceptions stay in the guest, MDCR_EL2.TDE
/// clear, so this cannot come).
pub fn handle(vcpu: &Vcpu, st: &mut VcpuState, esr: Esr) -> Option<Next> {
    st.gdebug.as_ref()?;
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
