//! Arm semihosting (QEMU `-semihosting`): how the harness learns a run's exit status.
//! Only used when the command line asks for it (`svelt.exit=semihosting`): without a debugger
//! or QEMU behind it, the HLT would be an undefined instruction.

const SYS_EXIT: u64 = 0x18;
const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;

/// Ends the QEMU process with `status` as its exit code.
pub fn exit(status: u32) -> ! {
    let block = [ADP_STOPPED_APPLICATION_EXIT, status as u64];
    // SAFETY: the semihosting host reads the two-word block and stops the machine; the caller
    // established that a semihosting host is present.
    unsafe {
        core::arch::asm!("hlt #0xf000", in("x0") SYS_EXIT, in("x1") block.as_ptr(), options(nostack))
    };
    super::cpu::halt()
}
