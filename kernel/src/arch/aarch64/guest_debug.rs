//! The breakpoint and watchpoint registers (DBGBVR<n>/DBGBCR<n>, DBGWVR<n>/DBGWCR<n>) as a
//! set, moved in and out around a guest entry whose VMM debugs it with hardware breakpoints
//! (kvm/debug.rs). Under VHE they have no `_EL12` names: the host's own values (a tracer's
//! EL0 slots, arch/debug.rs) are read out before the VMM's go in, and put back after.

/// One value per slot of each kind: bcr, bvr, wcr, wvr (16 slots, the architecture's most).
#[derive(Clone, Copy, Debug, Default)]
pub struct DbgRegs {
    pub bcr: [u64; 16],
    pub bvr: [u64; 16],
    pub wcr: [u64; 16],
    pub wvr: [u64; 16],
}

/// A read and a write of a debug register named by a `concat!`.
macro_rules! rd_dbg {
    ($enc:expr) => {{
        let v: u64;
        // SAFETY: reading a breakpoint or watchpoint register of an implemented slot has no
        // side effects.
        unsafe { core::arch::asm!(concat!("mrs {}, ", $enc), out(reg) v, options(nomem, nostack)) };
        v
    }};
}

macro_rules! wr_dbg {
    ($enc:expr, $v:expr) => {{
        let v: u64 = $v;
        // SAFETY: a breakpoint or watchpoint register of an implemented slot, written with
        // interrupts masked around a guest entry; its value cannot match the host's EL2 code
        // (HMC clear, kvm/debug.rs) and the host's own values come back before the host runs
        // at EL0 again.
        unsafe { core::arch::asm!(concat!("msr ", $enc, ", {}"), in(reg) v, options(nomem, nostack)) };
    }};
}

/// Generates, for slots 0..15, the reads and writes of one slot's four registers (CRm is
/// the slot number; op2 4 DBGBVR, 5 DBGBCR, 6 DBGWVR, 7 DBGWCR).
macro_rules! slots {
    ($($n:literal)*) => {
        fn read_slot(r: &mut DbgRegs, n: usize, brp: bool, wrp: bool) {
            match n {
                $($n => {
                    if brp {
                        r.bcr[n] = rd_dbg!(concat!("S2_0_C0_C", $n, "_5"));
                        r.bvr[n] = rd_dbg!(concat!("S2_0_C0_C", $n, "_4"));
                    }
                    if wrp {
                        r.wcr[n] = rd_dbg!(concat!("S2_0_C0_C", $n, "_7"));
                        r.wvr[n] = rd_dbg!(concat!("S2_0_C0_C", $n, "_6"));
                    }
                })*
                _ => {}
            }
        }

        fn write_slot(r: &DbgRegs, n: usize, brp: bool, wrp: bool) {
            match n {
                $($n => {
                    if brp {
                        wr_dbg!(concat!("S2_0_C0_C", $n, "_5"), r.bcr[n]);
                        wr_dbg!(concat!("S2_0_C0_C", $n, "_4"), r.bvr[n]);
                    }
                    if wrp {
                        wr_dbg!(concat!("S2_0_C0_C", $n, "_7"), r.wcr[n]);
                        wr_dbg!(concat!("S2_0_C0_C", $n, "_6"), r.wvr[n]);
                    }
                })*
                _ => {}
            }
        }
    };
}

slots!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);

/// Reads the CPU's first `brps` breakpoints and `wrps` watchpoints (its counts from
/// ID_AA64DFR0_EL1: only implemented slots may be touched).
pub fn read(brps: usize, wrps: usize) -> DbgRegs {
    let mut r = DbgRegs::default();
    for n in 0..brps.max(wrps).min(16) {
        read_slot(&mut r, n, n < brps, n < wrps);
    }
    r
}

/// Writes them; interrupts masked, guest entry (an ERET) or an ISB follows before they count.
pub fn write(r: &DbgRegs, brps: usize, wrps: usize) {
    for n in 0..brps.max(wrps).min(16) {
        write_slot(r, n, n < brps, n < wrps);
    }
}
