//! Guest debugging from the VMM (include/uapi/linux/kvm.h, arch/arm64/include/uapi/asm/kvm.h,
//! Documentation/virt/kvm/api.rst's KVM_SET_GUEST_DEBUG and KVM_EXIT_DEBUG): the ioctl, its
//! flags and argument, the exit's layout in `kvm_run`, and the pure rules Linux 7.3's
//! kvm_arch_vcpu_ioctl_set_guest_debug and debug.c's setup_external_mdscr follow.

use super::errno::Errno;
use super::kvm::KVMIO;
use super::tty::iow;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const KVM_CAP_SET_GUEST_DEBUG: u64 = 23;
pub const KVM_CAP_GUEST_DEBUG_HW_BPS: u64 = 119;
pub const KVM_CAP_GUEST_DEBUG_HW_WPS: u64 = 120;
/// Answers the flags KVM_SET_GUEST_DEBUG takes.
pub const KVM_CAP_SET_GUEST_DEBUG2: u64 = 195;

pub const KVM_GUESTDBG_ENABLE: u32 = 1 << 0;
pub const KVM_GUESTDBG_SINGLESTEP: u32 = 1 << 1;
pub const KVM_GUESTDBG_USE_SW_BP: u32 = 1 << 16;
pub const KVM_GUESTDBG_USE_HW: u32 = 1 << 17;
/// arm64's KVM_GUESTDBG_VALID_MASK (asm/kvm_host.h).
pub const KVM_GUESTDBG_VALID_MASK: u32 =
    KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP | KVM_GUESTDBG_USE_SW_BP | KVM_GUESTDBG_USE_HW;

pub const KVM_ARM_MAX_DBG_REGS: usize = 16;

/// `struct kvm_guest_debug_arch`: the breakpoint and watchpoint registers the VMM wants in
/// the CPU while the guest runs (KVM_GUESTDBG_USE_HW).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmGuestDebugArch {
    pub dbg_bcr: [u64; KVM_ARM_MAX_DBG_REGS],
    pub dbg_bvr: [u64; KVM_ARM_MAX_DBG_REGS],
    pub dbg_wcr: [u64; KVM_ARM_MAX_DBG_REGS],
    pub dbg_wvr: [u64; KVM_ARM_MAX_DBG_REGS],
}

/// `struct kvm_guest_debug`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmGuestDebug {
    pub control: u32,
    pub pad: u32,
    pub arch: KvmGuestDebugArch,
}

const _: () = assert!(core::mem::size_of::<KvmGuestDebug>() == 520);

pub const KVM_SET_GUEST_DEBUG: u32 = iow(KVMIO, 0x9b, core::mem::size_of::<KvmGuestDebug>());

pub const KVM_EXIT_DEBUG: u32 = 4;
/// `kvm_run.flags`: `hsr_high` holds ESR_EL2[63:32].
pub const KVM_DEBUG_ARCH_HSR_HIGH_VALID: u16 = 1 << 0;

/// `struct kvm_debug_exit_arch` in `kvm_run`'s exit union: ESR_EL2's low and high words, and
/// the address a watchpoint matched.
pub mod run {
    use super::super::kvm::run::U;
    pub const DEBUG_HSR: usize = U;
    pub const DEBUG_HSR_HIGH: usize = U + 4;
    pub const DEBUG_FAR: usize = U + 8;
}

/// The exception classes a debugged guest's debug exceptions reach EL2 with
/// (handle_exit.c's table for kvm_handle_guest_debug).
pub const EC_BREAKPT_LOW: u8 = 0x30;
pub const EC_SOFTSTP_LOW: u8 = 0x32;
pub const EC_WATCHPT_LOW: u8 = 0x34;
pub const EC_BKPT32: u8 = 0x38;
pub const EC_BRK64: u8 = 0x3c;

pub fn is_debug_ec(ec: u8) -> bool {
    matches!(
        ec,
        EC_BREAKPT_LOW | EC_SOFTSTP_LOW | EC_WATCHPT_LOW | EC_BKPT32 | EC_BRK64
    )
}

/// What KVM_SET_GUEST_DEBUG's `control` makes of the vCPU: `Ok(None)` stops debugging,
/// `Ok(Some(control))` starts or changes it; unknown flags are EINVAL, whatever else is set
/// (kvm_arch_vcpu_ioctl_set_guest_debug).
pub fn parse_control(control: u32) -> Result<Option<u32>, Errno> {
    if control & !KVM_GUESTDBG_VALID_MASK != 0 {
        return Err(Errno::EINVAL);
    }
    Ok((control & KVM_GUESTDBG_ENABLE != 0).then_some(control))
}

/// MDSCR_EL1.SS (software step), KDE (debug exceptions at the current EL) and MDE
/// (breakpoints and watchpoints).
pub const MDSCR_SS: u64 = 1 << 0;
pub const MDSCR_KDE: u64 = 1 << 13;
pub const MDSCR_MDE: u64 = 1 << 15;

/// The MDSCR_EL1 a debugged guest runs with: its own, without the bits the VMM's debugging
/// owns, plus the ones it needs (debug.c's setup_external_mdscr).
pub fn external_mdscr(guest: u64, control: u32) -> u64 {
    let mut m = guest & !(MDSCR_SS | MDSCR_MDE | MDSCR_KDE);
    if control & KVM_GUESTDBG_SINGLESTEP != 0 {
        m |= MDSCR_SS;
    }
    if control & KVM_GUESTDBG_USE_HW != 0 {
        m |= MDSCR_MDE | MDSCR_KDE;
    }
    m
}

/// DBGBCR<n>_EL1.HMC and DBGWCR<n>_EL1.HMC (bit 13): with it clear, the VMM's breakpoints and
/// watchpoints cannot match the host's own EL2 code while they are in the CPU.
pub const DBGXCR_HMC: u64 = 1 << 13;

/// SPSR's SS bit (PSTATE.SS): set, the next instruction is stepped; clear while stepping, the
/// step exception comes before any instruction.
pub const SPSR_SS: u64 = 1 << 21;

/// How many breakpoints and watchpoints ID_AA64DFR0_EL1 says the CPU has (BRPs and WRPs,
/// each the count less one; Linux's get_num_brps and get_num_wrps).
pub fn hw_counts(dfr0: u64) -> (usize, usize) {
    (
        ((dfr0 >> 12) & 0xf) as usize + 1,
        ((dfr0 >> 20) & 0xf) as usize + 1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_number_is_linuxs() {
        assert_eq!(KVM_SET_GUEST_DEBUG, 0x4208_ae9b);
    }

    #[test]
    fn control_rules() {
        assert_eq!(parse_control(0), Ok(None));
        assert_eq!(parse_control(KVM_GUESTDBG_SINGLESTEP), Ok(None));
        assert_eq!(parse_control(1 << 2), Err(Errno::EINVAL));
        assert_eq!(
            parse_control(KVM_GUESTDBG_ENABLE | 1 << 18),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            parse_control(KVM_GUESTDBG_VALID_MASK),
            Ok(Some(KVM_GUESTDBG_VALID_MASK))
        );
    }

    #[test]
    fn mdscr_the_guest_runs_with() {
        let own = 0x1000 | MDSCR_SS | MDSCR_KDE;
        assert_eq!(external_mdscr(own, KVM_GUESTDBG_ENABLE), 0x1000);
        assert_eq!(
            external_mdscr(own, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP),
            0x1000 | MDSCR_SS
        );
        assert_eq!(
            external_mdscr(0, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW),
            MDSCR_MDE | MDSCR_KDE
        );
    }

    #[test]
    fn counts() {
        // QEMU's max CPU: 6 breakpoints, 4 watchpoints.
        assert_eq!(hw_counts(0x0030_5000), (6, 4));
    }
}
