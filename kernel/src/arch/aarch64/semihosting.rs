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

const SYS_OPEN: u64 = 0x01;
const SYS_CLOSE: u64 = 0x02;
const SYS_WRITE: u64 = 0x05;
/// SYS_OPEN mode "wb": create or truncate, binary.
const OPEN_MODE_WB: u64 = 5;

/// One semihosting call: operation `op` with the parameter block at `arg`; returns x0.
///
/// # Safety
/// A semihosting host must be present, and `arg` must point to the block `op` expects, with
/// every buffer it names readable for the call's duration.
unsafe fn call(op: u64, arg: *const u64) -> i64 {
    let ret: u64;
    // SAFETY: a host is present and `arg` is the block `op` expects with readable buffers (this
    // function's contract); the host reads them and writes only x0.
    unsafe {
        core::arch::asm!("hlt #0xf000", inlateout("x0") op => ret, in("x1") arg, options(nostack))
    };
    ret as i64
}

/// Opens (creating or truncating) a host file; `path` is NUL-free. A handle, or None.
/// Callers must know a semihosting host is present (see `exit`).
pub fn open_write(path: &[u8]) -> Option<u64> {
    let mut name = [0u8; 256];
    if path.len() >= name.len() || path.contains(&0) {
        return None;
    }
    name[..path.len()].copy_from_slice(path);
    let block = [name.as_ptr() as u64, OPEN_MODE_WB, path.len() as u64];
    // SAFETY: the block is SYS_OPEN's (NUL-terminated name, mode, length), alive for the call.
    let h = unsafe { call(SYS_OPEN, block.as_ptr()) };
    (h >= 0).then_some(h as u64)
}

/// Writes all of `data` to a handle from `open_write`; false if the host wrote less.
pub fn write(handle: u64, data: &[u8]) -> bool {
    let block = [handle, data.as_ptr() as u64, data.len() as u64];
    // SAFETY: SYS_WRITE's block (handle, buffer, length); the buffer is borrowed for the call.
    unsafe { call(SYS_WRITE, block.as_ptr()) == 0 }
}

pub fn close(handle: u64) {
    let block = [handle];
    // SAFETY: SYS_CLOSE's one-word block.
    unsafe { call(SYS_CLOSE, block.as_ptr()) };
}
