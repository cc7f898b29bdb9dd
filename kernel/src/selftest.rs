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
            // Nothing runs at EL2, so this HVC lands in the report-and-halt vectors.
            provoke::hvc_to_el2();
        }
        "el2" => crate::println!("svelt: selftest el2 skipped: entered at EL{entry_el}"),
        other => crate::println!("svelt: unknown selftest {other}"),
    }
}
