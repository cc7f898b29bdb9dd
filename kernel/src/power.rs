//! Ending a run: `svelt: exit status N` on the console, then semihosting SYS_EXIT (so QEMU exits
//! with N) when the command line asked for it, else PSCI SYSTEM_OFF, else a halt that says so.

#![forbid(unsafe_code)]

use crate::arch::{cpu, semihosting};
use crate::drivers::psci;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};
use svelt_abi::boot::cmdline::ExitVia;

/// The status a kernel bug (panic, unexpected exception) ends the run with.
pub const KERNEL_BUG_STATUS: u32 = 101;

static EXIT_SEMIHOSTING: AtomicBool = AtomicBool::new(false);

pub fn set_exit_via(via: ExitVia) {
    EXIT_SEMIHOSTING.store(via == ExitVia::Semihosting, Ordering::Relaxed);
}

pub fn exits_via_semihosting() -> bool {
    EXIT_SEMIHOSTING.load(Ordering::Relaxed)
}

/// Ends the run with `status`.
pub fn exit(status: u32) -> ! {
    let mut out = crate::console::emergency();
    let _ = writeln!(out, "svelt: exit status {status}");
    finish(&mut out, status)
}

/// Ends the run after a fatal report written to `out`.
pub fn exit_from_fatal(out: &mut crate::console::Emergency) -> ! {
    let _ = writeln!(out, "svelt: exit status {KERNEL_BUG_STATUS}");
    finish(out, KERNEL_BUG_STATUS)
}

fn finish(out: &mut crate::console::Emergency, status: u32) -> ! {
    out.flush();
    if exits_via_semihosting() {
        semihosting::exit(status);
    }
    psci::system_off();
    // No PSCI, or the firmware would not power off: the report stays on the console.
    let _ = writeln!(out, "svelt: halted (nothing to power off through)");
    out.flush();
    cpu::halt()
}
