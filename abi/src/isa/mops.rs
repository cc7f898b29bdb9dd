//! FEAT_MOPS (the CPY*/SET* memory copy and set instructions): what the kernel must do when a
//! sequence raises the memory-copy/set exception (EC 0x27), decided here so it can be tested
//! on the host.
//!
//! A copy or set is three instructions: a prologue (`CPYP`/`SETP`), a main part and an
//! epilogue. The prologue chooses one of two algorithm options and leaves the registers in
//! that option's format:
//! - option A: the destination (and source) registers hold the end of the range and the size
//!   register holds minus the bytes left (a forward copy or set);
//! - option B: the registers hold where the operation stands and the bytes left, except that
//!   a backward copy (PSTATE.N set) counts its addresses from the end.
//!
//! If the main part or epilogue later runs on a CPU that chose the other option (the task
//! moved between unlike CPUs), or out of order, it raises EC 0x27 instead of going on. The ESR
//! says which registers and which option the registers are in; the remedy is to put them back
//! in the prologue's input format (where the operation stands, bytes left) and run the
//! sequence again from its prologue, which is the main instruction's predecessor (or the
//! epilogue's, two back).

/// ISS bits of a memory-copy/set exception.
const ISS_MEM_INST: u64 = 1 << 24; // SET* (else CPY*)
const ISS_FROM_EPILOGUE: u64 = 1 << 18;
const ISS_WRONG_OPTION: u64 = 1 << 17;
const ISS_OPTION_A: u64 = 1 << 16;

fn reg_field(esr: u64, shift: u32) -> usize {
    ((esr >> shift) & 0x1f) as usize
}

/// Rewrites `x` (X0..X30) and returns the PC to resume at, for a memory-copy/set exception
/// with syndrome `esr` taken at `pc`, so that the sequence starts again at its prologue with
/// the operation's remaining part. `negative` is PSTATE.N at the exception (a backward copy
/// in option B). Register number 31 (XZR, the value of a SET) is never written.
pub fn restart(esr: u64, x: &mut [u64; 31], pc: u64, negative: bool) -> u64 {
    let (d, s, n) = (reg_field(esr, 10), reg_field(esr, 5), reg_field(esr, 0));
    let get = |x: &[u64; 31], r: usize| if r < 31 { x[r] } else { 0 };
    let set = |x: &mut [u64; 31], r: usize, v: u64| {
        if r < 31 {
            x[r] = v;
        }
    };
    // The format the registers are in: the option the earlier instructions ran under, which is
    // the one named by the ESR unless the ESR says that is the wrong one.
    let option_a = (esr & ISS_OPTION_A != 0) != (esr & ISS_WRONG_OPTION != 0);
    let (dst, size) = (get(x, d), get(x, n));
    if esr & ISS_MEM_INST != 0 {
        if option_a {
            set(x, d, dst.wrapping_add(size));
            set(x, n, size.wrapping_neg());
        }
    } else {
        let src = get(x, s);
        if option_a {
            // Option A's forward copy keeps ends and a negative count; a backward copy's
            // registers are already the prologue's.
            if size >> 63 != 0 {
                set(x, d, dst.wrapping_add(size));
                set(x, s, src.wrapping_add(size));
                set(x, n, size.wrapping_neg());
            }
        } else if negative {
            // Option B backward: addresses are one past what is left; the prologue wants
            // the start of it.
            set(x, d, dst.wrapping_sub(size));
            set(x, s, src.wrapping_sub(size));
        }
    }
    let back = if esr & ISS_FROM_EPILOGUE != 0 { 8 } else { 4 };
    pc.wrapping_sub(back)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esr(set: bool, epi: bool, wrong: bool, a: bool, d: u64, s: u64, n: u64) -> u64 {
        (0x27 << 26)
            | ((set as u64) << 24)
            | ((epi as u64) << 18)
            | ((wrong as u64) << 17)
            | ((a as u64) << 16)
            | (d << 10)
            | (s << 5)
            | n
    }

    #[test]
    fn option_a_forward_copy_is_rewound_to_where_it_stands() {
        // 0x1000 bytes from 0x8000 to 0x4000, 0x300 done: option A keeps the ends and -0xd00.
        let mut x = [0u64; 31];
        x[0] = 0x5000;
        x[1] = 0x9000;
        x[2] = (-0xd00i64) as u64;
        let pc = restart(
            esr(false, false, true, false, 0, 1, 2),
            &mut x,
            0x104,
            false,
        );
        assert_eq!((x[0], x[1], x[2], pc), (0x4300, 0x8300, 0xd00, 0x100));
    }

    #[test]
    fn option_b_forward_copy_is_left_as_it_is_and_epilogue_goes_back_two() {
        let mut x = [0u64; 31];
        x[3] = 0x4300;
        x[4] = 0x8300;
        x[5] = 0xd00;
        let pc = restart(esr(false, true, true, true, 3, 4, 5), &mut x, 0x108, false);
        assert_eq!((x[3], x[4], x[5], pc), (0x4300, 0x8300, 0xd00, 0x100));
    }

    #[test]
    fn option_b_backward_copy_counts_from_the_start() {
        let mut x = [0u64; 31];
        x[0] = 0x4400;
        x[1] = 0x8400;
        x[2] = 0x400;
        restart(
            esr(false, false, false, false, 0, 1, 2),
            &mut x,
            0x104,
            true,
        );
        assert_eq!((x[0], x[1], x[2]), (0x4000, 0x8000, 0x400));
    }

    #[test]
    fn option_a_set_is_rewound_and_its_value_register_untouched() {
        let mut x = [7u64; 31];
        x[0] = 0x5000;
        x[1] = (-0x800i64) as u64;
        let pc = restart(
            esr(true, false, false, true, 0, 31, 1),
            &mut x,
            0x204,
            false,
        );
        assert_eq!((x[0], x[1], pc), (0x4800, 0x800, 0x200));
        assert!(x[2..].iter().all(|&v| v == 7));
    }
}
