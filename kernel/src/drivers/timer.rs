//! The generic timer: the kernel's timer (arch chooses which) ticks every CPU at `HZ`.

#![forbid(unsafe_code)]

use crate::arch::cpu;

pub const HZ: u64 = 100;

/// Arms this CPU's timer for the next tick.
pub fn arm_next_tick() {
    cpu::arm_timer(cpu::counter_freq() / HZ);
}
