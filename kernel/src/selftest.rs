//! Boot-time self tests the harness asks for with `svelt.selftest=NAME`: each provokes one of the
//! kernel's failure reports so the tests can check what it prints and the status it ends with.

use crate::arch::exception::provoke;

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
            provoke::undefined_instruction();
        }
        "write-text" => {
            // Kernel text is mapped read-only.
            let p = run as *const () as *mut u32;
            // SAFETY: deliberately not safe; the permission fault is the point.
            unsafe { core::ptr::write_volatile(p, 0xd503_201f) };
            crate::println!("svelt: selftest write-text: kernel text was writable!");
        }
        "write-image-alias" => {
            // The kernel image's alias in the linear map is read-only too.
            let va = crate::arch::mmu::phys_to_virt(crate::mm::image_pa());
            // SAFETY: deliberately not safe; the permission fault is the point.
            unsafe { core::ptr::write_volatile(va as *mut u64, 0) };
            crate::println!("svelt: selftest write-image-alias: image alias was writable!");
        }
        "exec-linear" => {
            // RAM in the linear map is never executable: jump into a fresh page of it.
            let Some(pa) = crate::mm::frame::alloc_zeroed(1) else {
                return;
            };
            let va = crate::arch::mmu::phys_to_virt(pa);
            // SAFETY: deliberately not safe; the instruction abort is the point (the page holds
            // zeroes, an undefined instruction, should it ever execute).
            unsafe { provoke::branch_to(va) };
            crate::println!("svelt: selftest exec-linear: linear map was executable!");
        }
        "el2" if entry_el == 2 => {
            // A kernel at EL1 runs nothing at EL2, so this HVC lands in the report-and-halt
            // vectors; a kernel at EL2 (VHE) takes it itself, as an unexpected exception.
            provoke::hvc_to_el2();
        }
        "el2" => crate::println!("svelt: selftest el2 skipped: entered at EL{entry_el}"),
        "mops" => mops_restart(),
        other => crate::println!("svelt: unknown selftest {other}"),
    }
}

/// A CPY* sequence entered as if its prologue had run under the other algorithm option (as
/// when a copy moves to an unlike CPU) must be restarted by the kernel and copy the right
/// bytes. The sequence is entered in option B's form first and, if this CPU takes that
/// without an exception (it uses option B), again in option A's; either way one restart.
fn mops_restart() {
    use crate::arch::exception::MOPS_RESTARTS;
    use core::sync::atomic::Ordering;
    if !crate::arch::mem::mops_in_use() {
        crate::println!("svelt: selftest mops skipped: CPY*/SET* not in use");
        return;
    }
    let src: [u8; 300] = core::array::from_fn(|i| (i * 7 + 1) as u8);
    let before = MOPS_RESTARTS.load(Ordering::Relaxed);
    let mut ok = true;
    for option_b in [true, false] {
        let mut dst = [0u8; 300];
        // SAFETY: two distinct 300-byte arrays; CPY* is usable (checked above).
        unsafe { provoke::cpyf_from_main(dst.as_mut_ptr(), src.as_ptr(), dst.len(), option_b) };
        ok &= core::hint::black_box(dst) == src;
        if MOPS_RESTARTS.load(Ordering::Relaxed) != before {
            break;
        }
    }
    let restarts = MOPS_RESTARTS.load(Ordering::Relaxed) - before;
    let verdict = if ok { "right" } else { "wrong" };
    crate::println!("svelt: selftest mops: {restarts} restart(s), bytes {verdict}");
}
