//! Per-CPU identity, interrupt masking, idle, counters and cache maintenance.

use super::sysreg::{ID_AA64ISAR2_EL1, ID_AA64SMFR0_EL1, ID_AA64ZFR0_EL1};
use aarch64_cpu::registers::*;
use svelt_abi::isa::cpu::IdRegs;

/// Affinity fields of MPIDR_EL1 (Aff3..Aff0), the CPU's hardware identity.
pub fn mpidr() -> u64 {
    MPIDR_EL1.get() & 0xff_00ff_ffff
}

/// TPIDR_EL1 (TPIDR_EL2 in a kernel at EL2) holds this CPU's per-CPU area address; set once at
/// bring-up.
pub fn set_percpu_ptr(p: usize) {
    super::el::msr_el!("S3_0_C13_C0_4", "S3_4_C13_C0_2", p as u64);
}

#[inline(always)]
pub fn percpu_ptr() -> usize {
    super::el::mrs_el!("S3_0_C13_C0_4", "S3_4_C13_C0_2") as usize
}

/// TPIDR_EL0, the user thread pointer, as the running task left it.
pub fn tpidr_el0() -> u64 {
    TPIDR_EL0.get()
}

/// Loads a task's user thread pointers: TPIDR_EL0 and TPIDRRO_EL0.
pub fn set_user_tls(tpidr: u64, tpidrro: u64) {
    TPIDR_EL0.set(tpidr);
    TPIDRRO_EL0.set(tpidrro);
}

// The interrupt mask is changed without `options(nomem)`: the compiler must treat each change
// as touching memory, so no load or store of data an interrupt handler shares moves across it.

/// EL0-access controls in SCTLR_EL1 the feature code turns on per CPU.
#[derive(Clone, Copy)]
#[repr(u64)]
pub(in crate::arch) enum El0Access {
    /// EnFPM: FPMR.
    Fpmr = 1 << 34,
    /// EnTP2: TPIDR2_EL0.
    Tpidr2 = 1 << 60,
}

/// Sets one EL0-access control bit in SCTLR_EL1, leaving the rest as it is.
pub(in crate::arch) fn enable_el0_access(bit: El0Access) {
    // SAFETY: sets one bit that only lets EL0 reach a register of its own; nothing the kernel
    // relies on changes.
    unsafe {
        core::arch::asm!(
            "mrs {t}, sctlr_el1",
            "orr {t}, {t}, {bit}",
            "msr sctlr_el1, {t}",
            "isb",
            t = out(reg) _,
            bit = in(reg) bit as u64,
            options(nomem, nostack)
        )
    };
}

pub fn irq_enable() {
    // SAFETY: unmasking IRQs is the caller's decision; the vectors are installed before any CPU
    // calls this.
    unsafe { core::arch::asm!("msr daifclr, #2", options(nostack)) };
}

pub fn irq_disable() {
    // SAFETY: masking IRQs only delays interrupts.
    unsafe { core::arch::asm!("msr daifset, #2", options(nostack)) };
}

/// IRQs masked on this CPU for as long as the guard lives; dropping it restores the mask as it
/// was. Not `Send`: it is a fact about the CPU that made it. Per-CPU data that handlers also
/// touch is reached only with one in hand.
pub struct IrqGuard {
    daif: u64,
    _this_cpu: core::marker::PhantomData<*const ()>,
}

impl IrqGuard {
    #[inline(always)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> IrqGuard {
        let daif: u64;
        // SAFETY: reads DAIF and masks IRQs; the previous mask comes back on drop.
        unsafe {
            core::arch::asm!("mrs {}, daif", "msr daifset, #2", out(reg) daif, options(nostack))
        };
        IrqGuard {
            daif,
            _this_cpu: core::marker::PhantomData,
        }
    }
}

impl Drop for IrqGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: restores the DAIF value this guard read on this CPU (it cannot have moved).
        unsafe { core::arch::asm!("msr daif, {}", in(reg) self.daif, options(nostack)) };
    }
}

pub fn wait_for_interrupt() {
    aarch64_cpu::asm::wfi();
}

/// Wakes every CPU waiting in `wfe` (a spin table's waiters), after earlier writes complete.
pub fn send_event() {
    // SAFETY: a barrier and an event; no memory changes.
    unsafe { core::arch::asm!("dsb sy", "sev", options(nostack)) };
}

/// Makes page-table writes visible to the table walker before the next access through them.
pub fn barrier_after_table_write() {
    // SAFETY: barriers only.
    unsafe { core::arch::asm!("dsb ishst", "isb", options(nostack)) };
}

/// Cleans `[va, va + len)` to the point of coherency, so agents with caches off (a secondary CPU
/// before its MMU is on, EL2 with its MMU off) see what this CPU wrote.
pub fn clean_dcache_to_poc(va: usize, len: usize) {
    let ctr: usize;
    // SAFETY: reads CTR_EL0, which has no side effects.
    unsafe { core::arch::asm!("mrs {}, ctr_el0", out(reg) ctr, options(nomem, nostack)) };
    let line = 4usize << ((ctr >> 16) & 0xf); // DminLine is log2 of the line size in words
    let mut p = va & !(line - 1);
    while p < va + len {
        // SAFETY: DC CVAC on a mapped address only writes back the line; no data changes.
        unsafe { core::arch::asm!("dc cvac, {}", in(reg) p, options(nostack)) };
        p += line;
    }
    // SAFETY: barrier only.
    unsafe { core::arch::asm!("dsb sy", options(nostack)) };
}

/// Makes instructions written through the data side (a debugger's breakpoint) visible to
/// instruction fetch on every CPU.
pub fn sync_icache() {
    // SAFETY: cache maintenance and barriers only: the D side is made coherent to the point of
    // unification (DSB), then every I-cache in the Inner Shareable domain is invalidated.
    unsafe { core::arch::asm!("dsb ish", "ic ialluis", "dsb ish", "isb", options(nostack)) };
}

/// Arms this CPU's kernel timer to fire `ticks` counter ticks from now: the EL1 virtual timer
/// (CNTV_TVAL_EL0, CNTV_CTL_EL0), or in a kernel at EL2 the EL2 physical timer (CNTP_*_EL0,
/// which E2H turns into CNTHP_*_EL2).
pub fn arm_timer(ticks: u64) {
    super::el::msr_el!("S3_3_C14_C3_0", "S3_3_C14_C2_0", ticks);
    super::el::msr_el!("S3_3_C14_C3_1", "S3_3_C14_C2_1", 1); // ENABLE, IMASK clear
}

/// Which entry of the device tree's arm,armv8-timer `interrupts` (secure physical, physical,
/// virtual, EL2 physical) is the kernel timer's.
pub fn timer_interrupt_index() -> usize {
    if super::el::vhe() {
        3
    } else {
        2
    }
}

/// Lets EL0 read the virtual counter (CNTKCTL_EL1.EL0VCTEN; CNTHCTL_EL2's same bit at EL2), as
/// Linux does: user programs read CNTVCT_EL0 directly.
pub fn enable_el0_counter() {
    CNTKCTL_EL1.modify(CNTKCTL_EL1::EL0VCTEN::SET);
}

/// The virtual counter (CNTVCT_EL0) and its frequency.
pub fn counter() -> u64 {
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
    CNTVCT_EL0.get()
}

/// The virtual counter without the ISB that orders its read after the instructions before it:
/// for the CPU-time accounting at exception entry (itself context-synchronizing) and on the
/// way back to EL0, where a read a few instructions early or late changes nothing.
#[inline(always)]
pub fn counter_unordered() -> u64 {
    CNTVCT_EL0.get()
}

/// The counter's frequency when the device tree names it (set once at boot).
static COUNTER_FREQ: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// The counter's frequency: the device tree's, if it gave one (`set_counter_freq`), else
/// CNTFRQ_EL0 as firmware set it.
pub fn counter_freq() -> u64 {
    match COUNTER_FREQ.load(core::sync::atomic::Ordering::Relaxed) {
        0 => CNTFRQ_EL0.get(),
        f => f,
    }
}

/// Reads CNTFRQ_EL0 itself, whatever the device tree says.
pub fn cntfrq() -> u64 {
    CNTFRQ_EL0.get()
}

/// Fixes the counter frequency (the timer node's `clock-frequency`).
pub fn set_counter_freq(hz: u64) {
    COUNTER_FREQ.store(hz, core::sync::atomic::Ordering::Relaxed);
}

/// Reads an ID register by its generic name (ones aarch64-cpu does not declare; all of the ID
/// space reads as zero where unallocated, so this is safe on any ARMv8 CPU).
macro_rules! mrs_id {
    ($enc:literal) => {{
        let v: u64;
        // SAFETY: ID register reads have no side effects.
        unsafe { core::arch::asm!(concat!("mrs {}, ", $enc), out(reg) v, options(nomem, nostack)) };
        v
    }};
}

/// Reads the ID registers Svelt decodes (they are readable at EL1 on every ARMv8 CPU; unallocated
/// ones read as zero).
pub fn read_id_regs() -> IdRegs {
    IdRegs {
        pfr0: ID_AA64PFR0_EL1.get(),
        pfr1: ID_AA64PFR1_EL1.get(),
        zfr0: ID_AA64ZFR0_EL1.get(),
        smfr0: ID_AA64SMFR0_EL1.get(),
        isar0: ID_AA64ISAR0_EL1.get(),
        isar1: ID_AA64ISAR1_EL1.get(),
        isar2: ID_AA64ISAR2_EL1.get(),
        mmfr0: ID_AA64MMFR0_EL1.get(),
        mmfr1: ID_AA64MMFR1_EL1.get(),
        mmfr2: ID_AA64MMFR2_EL1.get(),
        midr: MIDR_EL1.get(),
        pfr2: mrs_id!("S3_0_C0_C4_2"),
        fpfr0: mrs_id!("S3_0_C0_C4_7"),
        isar3: mrs_id!("S3_0_C0_C6_3"),
        mmfr3: mrs_id!("S3_0_C0_C7_3"),
        ..Default::default()
    }
}

/// Stops this CPU for good.
pub fn halt() -> ! {
    irq_disable();
    loop {
        aarch64_cpu::asm::wfe();
    }
}
