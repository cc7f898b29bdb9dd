//! Time: the monotonic clock (the virtual counter) and the real-time clock (PL031 at boot plus
//! the counter). Sleeping tasks' deadlines and ITIMER_REAL are task/timer.rs.

use crate::arch::cpu;
use core::sync::atomic::{AtomicU64, Ordering};

static BOOT_REALTIME_NS: AtomicU64 = AtomicU64::new(0);

/// Reads the PL031 real-time clock, if the DTB has one; else takes the wall-clock time the EFI
/// stub read from the firmware (/chosen/svelt,boot-realtime, seconds), if any.
pub fn init(fdt: &fdt::Fdt) {
    let Some(node) = fdt.find_compatible(&["arm,pl031"]) else {
        let efi_secs = fdt
            .find_node("/chosen")
            .and_then(|c| c.property("svelt,boot-realtime"))
            .and_then(|p| <[u8; 8]>::try_from(p.value).ok())
            .map(u64::from_be_bytes);
        if let Some(secs) = efi_secs {
            set_boot_realtime(secs);
        }
        return;
    };
    let Some(r) = node.reg().and_then(|mut r| r.next()) else {
        return;
    };
    let Ok(va) = crate::arch::mmu::ioremap(r.starting_address as u64, 0x1000) else {
        return;
    };
    // SAFETY: va maps the PL031; RTCDR (offset 0) is a read-only seconds counter.
    let secs = unsafe { core::ptr::read_volatile(va as *const u32) } as u64;
    set_boot_realtime(secs);
}

/// The real-time clock read `secs` (Unix seconds) just now.
fn set_boot_realtime(secs: u64) {
    let ns = secs.saturating_mul(1_000_000_000);
    BOOT_REALTIME_NS.store(ns - now_ns().min(ns), Ordering::Relaxed);
}

/// Nanoseconds since the counter started (CLOCK_MONOTONIC, CLOCK_BOOTTIME).
pub fn now_ns() -> u64 {
    counter_to_ns(cpu::counter())
}

pub fn realtime_ns() -> u64 {
    BOOT_REALTIME_NS.load(Ordering::Relaxed) + now_ns()
}

pub fn counter_to_ns(c: u64) -> u64 {
    (c as u128 * 1_000_000_000 / cpu::counter_freq().max(1) as u128) as u64
}

pub fn ns_to_counter(ns: u64) -> u64 {
    (ns as u128 * cpu::counter_freq() as u128).div_ceil(1_000_000_000) as u64
}

/// Nanoseconds from now until counter value `deadline` (0 once it has passed).
pub fn ns_until(deadline: u64) -> u64 {
    counter_to_ns(deadline.saturating_sub(cpu::counter()))
}

/// Counter value `ns` from now.
pub fn deadline_after_ns(ns: u64) -> u64 {
    cpu::counter().saturating_add(ns_to_counter(ns))
}
