//! Self-hosted debug for EL0: software step (MDSCR_EL1.SS) and the hardware breakpoint and
//! watchpoint registers (DBGBVR/DBGBCR, DBGWVR/DBGWCR), which a tracer programs through
//! NT_ARM_HW_BREAK / NT_ARM_HW_WATCH. The kernel never debugs itself: MDSCR_EL1.KDE stays 0
//! and every slot it arms matches EL0 only.

/// MDSCR_EL1.SS (software step) and MDSCR_EL1.MDE (breakpoints and watchpoints).
const MDSCR_SS: u64 = 1 << 0;
const MDSCR_MDE: u64 = 1 << 15;

/// ID_AA64DFR0_EL1: how many breakpoints and watchpoints this CPU has.
pub fn id_aa64dfr0() -> u64 {
    let dfr0: u64;
    // SAFETY: reading an ID register at EL1 has no side effects.
    unsafe { core::arch::asm!("mrs {}, id_aa64dfr0_el1", out(reg) dfr0, options(nomem, nostack)) };
    dfr0
}

/// Releases the OS lock (set at reset) and starts with MDSCR_EL1 clear.
pub fn init() {
    // SAFETY: OSLAR_EL1 and MDSCR_EL1 only control debug exceptions, which the kernel does not
    // take at EL1 (MDSCR_EL1.KDE stays 0).
    unsafe {
        core::arch::asm!(
            "msr oslar_el1, xzr",
            "msr mdscr_el1, xzr",
            "isb",
            options(nostack)
        )
    };
}

fn mdscr_update(bit: u64, on: bool) {
    let mut v: u64;
    // SAFETY: reading MDSCR_EL1 has no side effects.
    unsafe { core::arch::asm!("mrs {}, mdscr_el1", out(reg) v, options(nomem, nostack)) };
    let new = if on { v | bit } else { v & !bit };
    if new != v {
        v = new;
        // SAFETY: only SS/MDE change; both affect EL0 only (KDE is 0).
        unsafe { core::arch::asm!("msr mdscr_el1, {}", "isb", in(reg) v, options(nostack)) };
    }
}

/// With SS set, a return to EL0 with SPSR.SS set executes one instruction and takes a
/// software-step exception (with SPSR.SS clear: the exception comes at once).
pub fn set_single_step(on: bool) {
    mdscr_update(MDSCR_SS, on);
}

/// Breakpoints and watchpoints on or off as a whole.
pub fn set_monitor(on: bool) {
    mdscr_update(MDSCR_MDE, on);
}

/// Writes one of the 16 numbered debug registers of a kind (`$op2`: 4 DBGBVR, 5 DBGBCR,
/// 6 DBGWVR, 7 DBGWCR; the slot number is CRm).
macro_rules! write_dbg {
    ($n:expr, $op2:literal, $v:expr) => {{
        let v: u64 = $v;
        macro_rules! arm {
                    ($crm:literal) => {
                        // SAFETY: a debug register of an implemented slot (the caller checks the
                        // count); its value arms an EL0-only match or disarms it.
                        unsafe {
                            core::arch::asm!(
                                concat!("msr S2_0_C0_C", $crm, "_", $op2, ", {}"),
                                in(reg) v,
                                options(nomem, nostack)
                            )
                        }
                    };
                }
        match $n {
            0 => arm!(0),
            1 => arm!(1),
            2 => arm!(2),
            3 => arm!(3),
            4 => arm!(4),
            5 => arm!(5),
            6 => arm!(6),
            7 => arm!(7),
            8 => arm!(8),
            9 => arm!(9),
            10 => arm!(10),
            11 => arm!(11),
            12 => arm!(12),
            13 => arm!(13),
            14 => arm!(14),
            15 => arm!(15),
            _ => {}
        }
    }};
}

/// Programs breakpoint slot `n` (ctrl 0: disabled).
pub fn write_breakpoint(n: usize, addr: u64, ctrl: u64) {
    write_dbg!(n, 5, 0);
    write_dbg!(n, 4, addr);
    write_dbg!(n, 5, ctrl);
}

/// Programs watchpoint slot `n` (ctrl 0: disabled).
pub fn write_watchpoint(n: usize, addr: u64, ctrl: u64) {
    write_dbg!(n, 7, 0);
    write_dbg!(n, 6, addr);
    write_dbg!(n, 7, ctrl);
}

/// Makes the slot writes take effect before the next return to EL0.
pub fn sync() {
    // SAFETY: a context synchronization barrier only.
    unsafe { core::arch::asm!("isb", options(nostack)) };
}
