//! The generic timer: the EL1 virtual timer (CNTV) ticks every CPU at `HZ`.

use aarch64_cpu::registers::*;

pub const HZ: u64 = 100;

/// Arms this CPU's virtual timer for the next tick.
pub fn arm_next_tick() {
    CNTV_TVAL_EL0.set(crate::arch::cpu::counter_freq() / HZ);
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
}

/// Lets EL0 read the virtual counter (CNTKCTL_EL1.EL0VCTEN), as Linux does: user programs
/// read CNTVCT_EL0 directly.
pub fn enable_el0_counter() {
    CNTKCTL_EL1.modify(CNTKCTL_EL1::EL0VCTEN::SET);
}
