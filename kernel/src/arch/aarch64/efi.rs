//! The EFI stub's last step, after the firmware has exited: clean what the stub wrote to the
//! point of coherency, turn the MMU and caches off at the current EL (the firmware's identity
//! map is the only thing keeping this code reachable until then, and it stays identical under
//! the MMU-off view) and enter the image's first instruction as a Linux Image loader would.
//!
//! Runs before the kernel is at its link address: PC-relative code only (no statics).

/// Cleans and invalidates `[start, start + len)` to the point of coherency, by virtual address
/// (the firmware's identity map: VA = PA).
pub fn clean_to_poc(start: u64, len: u64) {
    let line = cache_line();
    let mut a = start & !(line - 1);
    while a < start.saturating_add(len) {
        // SAFETY: DC CIVAC writes back and invalidates one line; it changes no memory contents
        // and the address is mapped (the caller's own buffers).
        unsafe { core::arch::asm!("dc civac, {}", in(reg) a, options(nostack, preserves_flags)) };
        a += line;
    }
    // SAFETY: a barrier.
    unsafe { core::arch::asm!("dsb sy", options(nostack, preserves_flags)) };
}

/// The smallest data cache line, from CTR_EL0.DminLine.
fn cache_line() -> u64 {
    let ctr: u64;
    // SAFETY: reading CTR_EL0 has no side effects.
    unsafe { core::arch::asm!("mrs {}, ctr_el0", out(reg) ctr, options(nomem, nostack)) };
    4 << ((ctr >> 16) & 0xf)
}

/// Masks interrupts, turns the MMU and caches off at the current EL (1 or 2), invalidates the
/// instruction cache and jumps to `image_pa` with x0 = `dtb_pa` and x1..x3 = 0.
///
/// # Safety
/// Boot services have exited; `image_pa` holds a Svelt Image, 2 MiB aligned, and it and the DTB
/// (and the initrd the DTB names) have been cleaned to the point of coherency. This code is
/// identity mapped.
pub unsafe fn enter_image(image_pa: u64, dtb_pa: u64) -> ! {
    // SAFETY: per the contract; nothing after the SCTLR write touches memory but instruction
    // fetches from this identity-mapped code.
    unsafe {
        core::arch::asm!(
            "msr daifset, #0xf",
            "dsb sy",
            "mov x10, #0x1005",         // SCTLR.M, C and I
            "mrs x9, CurrentEL",
            "cmp x9, #(2 << 2)",
            "b.ne 1f",
            "mrs x9, sctlr_el2",
            "bic x9, x9, x10",
            "msr sctlr_el2, x9",
            "b 2f",
            "1:",
            "mrs x9, sctlr_el1",
            "bic x9, x9, x10",
            "msr sctlr_el1, x9",
            "2:",
            "isb",
            "ic iallu",
            "dsb sy",
            "isb",
            "mov x1, xzr",
            "mov x2, xzr",
            "mov x3, xzr",
            "br {image}",
            image = in(reg) image_pa,
            in("x0") dtb_pa,
            options(noreturn, nostack),
        )
    }
}
