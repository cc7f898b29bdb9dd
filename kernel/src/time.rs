//! Time: the monotonic clock (the virtual counter) and the real-time clock (PL031 at boot plus
//! the counter). Sleeping tasks' deadlines and ITIMER_REAL are task/timer.rs. The vDSO reads
//! the same clocks in user space from the values [`conversion`] and [`realtime_offset`] give.

#![deny(unsafe_code)]

use crate::arch::cpu;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, in nanoseconds (never negative: clock_settime refuses
/// a time before boot, as Linux does).
static BOOT_REALTIME_NS: AtomicU64 = AtomicU64::new(0);

/// Counter ticks to nanoseconds as `(ticks * MULT) >> SHIFT` over 128 bits, the sum the vDSO
/// does too, so that the two agree to the nanosecond. 0 until [`init`].
static MULT: AtomicU64 = AtomicU64::new(0);
static SHIFT: AtomicU32 = AtomicU32::new(0);

/// The largest shift (precision) whose multiplier fits 64 bits, the multiplier rounded up so
/// that a deadline computed by [`ns_to_counter`] is never seen a nanosecond early.
fn conversion_for(freq: u64) -> (u64, u32) {
    let freq = u128::from(freq.max(1));
    let mut shift = 63;
    loop {
        let mult = (1_000_000_000u128 << shift).div_ceil(freq);
        if let Ok(m) = u64::try_from(mult) {
            return (m, shift);
        }
        shift -= 1;
    }
}

/// The counter-to-nanoseconds conversion: (multiplier, shift), 0 < shift < 64.
pub fn conversion() -> (u64, u32) {
    (MULT.load(Ordering::Relaxed), SHIFT.load(Ordering::Relaxed))
}

/// Reads the PL031 real-time clock, if the DTB has one; else takes the wall-clock time the EFI
/// stub read from the firmware (/chosen/svelt,boot-realtime, seconds), if any.
// The file's one unsafe: reading the PL031's seconds counter (MMIO).
#[allow(unsafe_code)]
pub fn init(fdt: &fdt::Fdt) {
    let (mult, shift) = conversion_for(cpu::counter_freq());
    SHIFT.store(shift, Ordering::Relaxed);
    MULT.store(mult, Ordering::Relaxed);
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

/// The time zone settimeofday set (minutes west of Greenwich, DST type), as one word.
static TIMEZONE: AtomicU64 = AtomicU64::new(0);

pub fn timezone() -> [i32; 2] {
    let w = TIMEZONE.load(Ordering::Relaxed);
    [w as u32 as i32, (w >> 32) as u32 as i32]
}

/// The word the vDSO copies to a `struct timezone`.
pub fn timezone_word() -> u64 {
    TIMEZONE.load(Ordering::Relaxed)
}

pub fn set_timezone(tz: [i32; 2]) {
    TIMEZONE.store(
        u64::from(tz[0] as u32) | u64::from(tz[1] as u32) << 32,
        Ordering::Relaxed,
    );
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC (nanoseconds).
pub fn realtime_offset() -> u64 {
    BOOT_REALTIME_NS.load(Ordering::Relaxed)
}

/// Sets CLOCK_REALTIME to `ns` (clock_settime, settimeofday); EINVAL for a time before boot
/// (Linux: do_settimeofday64). The caller tells the vDSO.
pub fn set_realtime(ns: u64) -> Result<(), svelt_abi::uapi::errno::Errno> {
    let off = ns
        .checked_sub(now_ns())
        .ok_or(svelt_abi::uapi::errno::Errno::EINVAL)?;
    BOOT_REALTIME_NS.store(off, Ordering::Relaxed);
    Ok(())
}

pub fn counter_to_ns(c: u64) -> u64 {
    let (mult, shift) = conversion();
    if mult == 0 {
        return (c as u128 * 1_000_000_000 / cpu::counter_freq().max(1) as u128) as u64;
    }
    let ns = (u128::from(c) * u128::from(mult)) >> shift;
    u64::try_from(ns).unwrap_or(u64::MAX)
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
