//! Boot-time self tests the harness asks for with `svelt.selftest=NAME`: each provokes one of the
//! kernel's failure reports so the tests can check what it prints and the status it ends with.

pub fn run(name: &str, entry_el: u64) {
    match name {
        "fault" => {
            // An unmapped address in the kernel half: a data abort at EL1.
            let p = 0xffff_7fff_dead_0000usize as *const u64;
            // SAFETY: deliberately not safe; the abort is the point, and it does not return.
            let v = unsafe { core::ptr::read_volatile(p) };
            crate::println!("svelt: selftest fault: read {v:#x}, no abort!");
        }
        "panic" => panic!("selftest panic"),
        "undef" => {
            // SAFETY: deliberately undefined; the exception does not return.
            unsafe { core::arch::asm!("udf #0x5e1f", options(nostack)) };
        }
        "el2" if entry_el == 2 => {
            // Nothing runs at EL2, so this HVC lands in the report-and-halt vectors.
            // SAFETY: does not return (EL2 stops the machine).
            unsafe { core::arch::asm!("hvc #0x5e1f", options(nostack)) };
        }
        "el2" => crate::println!("svelt: selftest el2 skipped: entered at EL{entry_el}"),
        other => crate::println!("svelt: unknown selftest {other}"),
    }
}
