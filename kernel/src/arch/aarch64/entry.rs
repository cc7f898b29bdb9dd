//! The kernel as the hardware floor sees it: the functions that head.s, the exception vectors
//! and a new task's first instructions call. arch/ names no module above it; these are defined,
//! with exactly these signatures and `#[unsafe(no_mangle)]`, in kernel/src/entry.rs, and a
//! missing one is a link error.

use super::exception::{Kind, TrapFrame};

unsafe extern "C" {
    /// The boot CPU, from head.s: MMU on with the early map, on the boot stack, IRQs masked.
    pub fn kernel_main(dtb_pa: u64, entry_el: u64, image_pa: u64) -> !;
    /// A secondary CPU, from head.s: MMU on, on its own stack, IRQs masked.
    pub fn secondary_main(id: u64, entry_el: u64) -> !;
    /// A new task's first Rust code (from `ret_from_fork`), with its user trap frame; returns
    /// ready for the exception return.
    pub fn svelt_ret_from_fork(tf: &mut TrapFrame);
    /// A synchronous exception from EL0 other than a syscall (fault, trap), straight from its
    /// vector with the saved frame; returns ready for the exception return to `tf`. Only the
    /// vector calls it; declared here so the contract is written down with the others.
    #[allow(dead_code)]
    pub fn svelt_el0_sync(tf: &mut TrapFrame);
    /// A syscall from EL0 (ESR.EC SVC64), as `svelt_el0_sync`.
    #[allow(dead_code)]
    pub fn svelt_el0_svc(tf: &mut TrapFrame);
    /// An SVE or SME access trap from EL0 (ESR.EC 0x19 or 0x1D), with x20-x28 and SP_EL0 not
    /// saved in `tf`: returns 0 when the task goes straight back to user mode (the vector then
    /// restores x0-x18, x29, x30, ELR and SPSR), else a code for `svelt_el0_fp_return`. (The
    /// Rust side returns its `AccessTrap`, a `repr(u32)` enum.)
    #[allow(dead_code)]
    pub fn svelt_el0_fp(tf: &mut TrapFrame) -> u32;
    /// The rest of such a trap, with the whole frame saved; returns ready for the exception
    /// return.
    #[allow(dead_code)]
    pub fn svelt_el0_fp_return(tf: &mut TrapFrame, code: u32);
}

unsafe extern "efiapi" {
    /// The EFI stub, from head.s's PE entry point: UEFI's image handle and system table, MMU on
    /// (the firmware's identity map), at EL2 or EL1, the image anywhere. Returns an EFI status
    /// to the firmware only when it cannot boot.
    pub fn svelt_efi_main(image: *mut core::ffi::c_void, st: *mut core::ffi::c_void) -> usize;
}

unsafe extern "Rust" {
    fn svelt_irq();
    fn svelt_el0_irq(tf: &mut TrapFrame);
    fn svelt_fatal(kind: Kind, tf: &TrapFrame) -> !;
}

/// An IRQ taken from EL1 (IRQs masked).
#[inline(always)]
pub(super) fn irq() {
    // SAFETY: kernel/src/entry.rs defines svelt_irq with this signature.
    unsafe { svelt_irq() }
}

/// An IRQ taken from EL0; returns ready for the exception return to `tf`.
#[inline(always)]
pub(super) fn el0_irq(tf: &mut TrapFrame) {
    // SAFETY: kernel/src/entry.rs defines svelt_el0_irq with this signature.
    unsafe { svelt_el0_irq(tf) }
}

/// An exception the kernel cannot handle: report it and end the run.
pub(super) fn fatal(kind: Kind, tf: &TrapFrame) -> ! {
    // SAFETY: kernel/src/entry.rs defines svelt_fatal with this signature.
    unsafe { svelt_fatal(kind, tf) }
}
