//! Classic BPF as seccomp uses it: the filter validator (Linux's `bpf_check_classic` rules
//! narrowed to the instructions `seccomp_check_filter` admits), the interpreter over
//! `struct seccomp_data`, and seccomp's uapi numbers and action precedence.
//!
//! Every jump goes forward and every validated load stays inside `seccomp_data` or the 16
//! scratch words, so a validated program runs at most `len` instructions and cannot fault.

use crate::uapi::errno::{Errno, SysResult};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// ---- instruction encoding (linux/filter.h, linux/bpf_common.h) ----

pub const BPF_LD: u16 = 0x00;
pub const BPF_LDX: u16 = 0x01;
pub const BPF_ST: u16 = 0x02;
pub const BPF_STX: u16 = 0x03;
pub const BPF_ALU: u16 = 0x04;
pub const BPF_JMP: u16 = 0x05;
pub const BPF_RET: u16 = 0x06;
pub const BPF_MISC: u16 = 0x07;

pub const BPF_W: u16 = 0x00;
pub const BPF_H: u16 = 0x08;
pub const BPF_B: u16 = 0x10;

pub const BPF_IMM: u16 = 0x00;
pub const BPF_ABS: u16 = 0x20;
pub const BPF_IND: u16 = 0x40;
pub const BPF_MEM: u16 = 0x60;
pub const BPF_LEN: u16 = 0x80;
pub const BPF_MSH: u16 = 0xa0;

pub const BPF_ADD: u16 = 0x00;
pub const BPF_SUB: u16 = 0x10;
pub const BPF_MUL: u16 = 0x20;
pub const BPF_DIV: u16 = 0x30;
pub const BPF_OR: u16 = 0x40;
pub const BPF_AND: u16 = 0x50;
pub const BPF_LSH: u16 = 0x60;
pub const BPF_RSH: u16 = 0x70;
pub const BPF_NEG: u16 = 0x80;
pub const BPF_MOD: u16 = 0x90;
pub const BPF_XOR: u16 = 0xa0;

pub const BPF_JA: u16 = 0x00;
pub const BPF_JEQ: u16 = 0x10;
pub const BPF_JGT: u16 = 0x20;
pub const BPF_JGE: u16 = 0x30;
pub const BPF_JSET: u16 = 0x40;

pub const BPF_K: u16 = 0x00;
pub const BPF_X: u16 = 0x08;
/// RET's source: the accumulator.
pub const BPF_A: u16 = 0x10;

pub const BPF_TAX: u16 = 0x00;
pub const BPF_TXA: u16 = 0x80;

/// Longest program (`BPF_MAXINSNS`).
pub const BPF_MAXINSNS: usize = 4096;
/// Scratch words M[0..16] (`BPF_MEMWORDS`).
pub const BPF_MEMWORDS: u32 = 16;

/// `struct sock_filter`: code u16, jt u8, jf u8, k u32 (8 bytes).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct SockFilter {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

const _: () = assert!(core::mem::size_of::<SockFilter>() == SockFilter::SIZE);

impl SockFilter {
    pub const SIZE: usize = 8;

    pub const fn stmt(code: u16, k: u32) -> SockFilter {
        SockFilter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }
    pub const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> SockFilter {
        SockFilter { code, jt, jf, k }
    }
}

/// `struct sock_fprog` on arm64: len u16 @0, filter pointer @8 (16 bytes). Only ever read from
/// user space, so the hole after `len` stays implicit (`FromBytes` allows padding).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, Immutable, KnownLayout)]
pub struct SockFprog {
    pub len: u16,
    pub filter: u64,
}

const _: () = {
    assert!(core::mem::size_of::<SockFprog>() == SockFprog::SIZE);
    assert!(core::mem::offset_of!(SockFprog, filter) == 8);
};

impl SockFprog {
    pub const SIZE: usize = 16;
}

// ---- seccomp_data ----

/// AUDIT_ARCH_AARCH64: EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE.
pub const AUDIT_ARCH_AARCH64: u32 = 0xC000_00B7;

/// `struct seccomp_data`: nr i32 @0, arch u32 @4, instruction_pointer u64 @8, args u64[6] @16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeccompData {
    pub nr: i32,
    pub arch: u32,
    pub instruction_pointer: u64,
    pub args: [u64; 6],
}

impl SeccompData {
    pub const SIZE: u32 = 64;

    /// The 32-bit word at byte offset `off` (a multiple of 4 below 64), in the host's
    /// (little-endian) layout, as a BPF_ABS load sees it.
    pub fn word(&self, off: u32) -> u32 {
        let half = |v: u64, hi: bool| if hi { (v >> 32) as u32 } else { v as u32 };
        match off {
            0 => self.nr as u32,
            4 => self.arch,
            8 | 12 => half(self.instruction_pointer, off == 12),
            16..=63 => {
                let i = ((off - 16) / 8) as usize;
                half(self.args[i], off % 8 == 4)
            }
            _ => 0,
        }
    }
}

// ---- validation ----

// Whole opcodes the validator and interpreter name.
const LD_ABS: u16 = BPF_LD | BPF_W | BPF_ABS;
const LD_LEN: u16 = BPF_LD | BPF_W | BPF_LEN;
const LDX_LEN: u16 = BPF_LDX | BPF_W | BPF_LEN;
const LD_IMM: u16 = BPF_LD | BPF_IMM;
const LDX_IMM: u16 = BPF_LDX | BPF_IMM;
const LD_MEM: u16 = BPF_LD | BPF_MEM;
const LDX_MEM: u16 = BPF_LDX | BPF_MEM;
const DIV_K: u16 = BPF_ALU | BPF_DIV | BPF_K;
const DIV_X: u16 = BPF_ALU | BPF_DIV | BPF_X;
const LSH_K: u16 = BPF_ALU | BPF_LSH | BPF_K;
const RSH_K: u16 = BPF_ALU | BPF_RSH | BPF_K;
const JA: u16 = BPF_JMP | BPF_JA;
const RET_K: u16 = BPF_RET | BPF_K;
const RET_A: u16 = BPF_RET | BPF_A;

/// Is `code` one of the conditional jumps (JEQ, JGT, JGE, JSET; K or X), which take jt/jf?
const fn is_cond_jump(code: u16) -> bool {
    code & !0xf8 == BPF_JMP && matches!(code & 0xf0, BPF_JEQ | BPF_JGT | BPF_JGE | BPF_JSET)
}

/// The opcodes seccomp admits: `bpf_check_classic`'s set narrowed by `seccomp_check_filter`
/// (no packet loads, no MOD, no ancillary data).
const fn seccomp_allows(code: u16) -> bool {
    let alu = code & !0xf8 == BPF_ALU
        && matches!(
            code & 0xf0,
            BPF_ADD | BPF_SUB | BPF_MUL | BPF_DIV | BPF_OR | BPF_AND | BPF_XOR | BPF_LSH | BPF_RSH
        );
    alu || is_cond_jump(code)
        || matches!(
            code,
            LD_ABS
                | LD_LEN
                | LDX_LEN
                | LD_IMM
                | LDX_IMM
                | LD_MEM
                | LDX_MEM
                | BPF_ST
                | BPF_STX
                | JA
                | RET_K
                | RET_A
        )
        || code == BPF_ALU | BPF_NEG
        || code == BPF_MISC | BPF_TAX
        || code == BPF_MISC | BPF_TXA
}

/// Checks a seccomp filter as Linux does on SECCOMP_SET_MODE_FILTER (every failure is
/// EINVAL) and rewrites it in place for `run`: `LEN` loads become immediates of
/// `sizeof(seccomp_data)`. `scratch` needs one entry per instruction (the memory-use check
/// records, for each jump target, which scratch words are set on every path to it).
pub fn check_seccomp_filter(prog: &mut [SockFilter], scratch: &mut [u16]) -> SysResult<()> {
    let len = prog.len();
    if len == 0 || len > BPF_MAXINSNS || scratch.len() < len {
        return Err(Errno::EINVAL);
    }
    for (pc, f) in prog.iter_mut().enumerate() {
        let k = f.k;
        let bad = !seccomp_allows(f.code)
            || match f.code {
                // Aligned words inside seccomp_data.
                LD_ABS => k >= SeccompData::SIZE || k & 3 != 0,
                DIV_K => k == 0,
                LSH_K | RSH_K => k >= 32,
                LD_MEM | LDX_MEM | BPF_ST | BPF_STX => k >= BPF_MEMWORDS,
                JA => k as usize >= len - pc - 1,
                c if is_cond_jump(c) => {
                    pc + f.jt as usize + 1 >= len || pc + f.jf as usize + 1 >= len
                }
                _ => false,
            };
        if bad {
            return Err(Errno::EINVAL);
        }
        match f.code {
            LD_LEN => *f = SockFilter::stmt(LD_IMM, SeccompData::SIZE),
            LDX_LEN => *f = SockFilter::stmt(LDX_IMM, SeccompData::SIZE),
            _ => {}
        }
    }
    if !matches!(prog[len - 1].code, RET_K | RET_A) {
        return Err(Errno::EINVAL);
    }
    check_loads_after_stores(prog, &mut scratch[..len])
}

/// A scratch word may be loaded only if every path to the load stored it (Linux's
/// `check_load_and_stores`, which joins the paths at each jump target).
fn check_loads_after_stores(prog: &[SockFilter], masks: &mut [u16]) -> SysResult<()> {
    masks.fill(0xffff);
    let mut valid: u16 = 0;
    for (pc, f) in prog.iter().enumerate() {
        valid &= masks[pc];
        match f.code {
            BPF_ST | BPF_STX => valid |= 1 << f.k,
            LD_MEM | LDX_MEM if valid & (1 << f.k) == 0 => return Err(Errno::EINVAL),
            JA => {
                masks[pc + 1 + f.k as usize] &= valid;
                valid = 0xffff;
            }
            c if is_cond_jump(c) => {
                masks[pc + 1 + f.jt as usize] &= valid;
                masks[pc + 1 + f.jf as usize] &= valid;
                valid = 0xffff;
            }
            _ => {}
        }
    }
    Ok(())
}

/// What a checked program counts for against `MAX_INSNS_PER_PATH`: Linux charges the length
/// of the eBPF program it translates the filter into (`bpf_convert_filter`), not the classic
/// length. Three prologue instructions (clear A and X, keep the context pointer); RET K is two
/// (set the result, exit); division by X adds four (the zero test returning 0); a conditional
/// jump adds one for a K that is negative as an s32 (loaded into a register first) and one
/// more unless one of its targets is the next instruction (JEQ, JGT and JGE only invert to
/// fall through on the true side; JSET does not).
pub fn translated_len(prog: &[SockFilter]) -> usize {
    3 + prog
        .iter()
        .map(|f| match f.code {
            RET_K => 2,
            DIV_X => 5,
            c if is_cond_jump(c) => {
                let tmp = (c & BPF_X == 0 && (f.k as i32) < 0) as usize;
                let invertible = c & 0xf0 != BPF_JSET;
                let one = f.jf == 0 || (f.jt == 0 && invertible);
                tmp + if one { 1 } else { 2 }
            }
            _ => 1,
        })
        .sum::<usize>()
}

// ---- interpretation ----

/// Runs a program `check_seccomp_filter` accepted; returns its RET value. Division by a zero
/// X returns 0 (classic BPF's rule), shifts by X use its low five bits (as the arm64
/// instructions Linux's JIT emits). Anything the validator would have refused returns 0
/// rather than misbehaving.
pub fn run(prog: &[SockFilter], d: &SeccompData) -> u32 {
    let (mut a, mut x): (u32, u32) = (0, 0);
    let mut mem = [0u32; BPF_MEMWORDS as usize];
    let mut pc = 0usize;
    while let Some(f) = prog.get(pc) {
        pc += 1;
        let k = f.k;
        let src = if f.code & BPF_X != 0 { x } else { k };
        match f.code & 0x07 {
            BPF_LD => match f.code {
                0x00 => a = k,
                0x20 => a = d.word(k),
                0x60 => a = mem[(k & 15) as usize],
                _ => return 0,
            },
            BPF_LDX => match f.code {
                0x01 => x = k,
                0x61 => x = mem[(k & 15) as usize],
                _ => return 0,
            },
            BPF_ST => mem[(k & 15) as usize] = a,
            BPF_STX => mem[(k & 15) as usize] = x,
            BPF_ALU => {
                a = match f.code & 0xf0 {
                    BPF_ADD => a.wrapping_add(src),
                    BPF_SUB => a.wrapping_sub(src),
                    BPF_MUL => a.wrapping_mul(src),
                    BPF_DIV => match a.checked_div(src) {
                        Some(v) => v,
                        None => return 0,
                    },
                    BPF_OR => a | src,
                    BPF_AND => a & src,
                    BPF_XOR => a ^ src,
                    BPF_LSH => a.wrapping_shl(src),
                    BPF_RSH => a.wrapping_shr(src),
                    BPF_NEG => a.wrapping_neg(),
                    _ => return 0,
                }
            }
            BPF_JMP => {
                let off = match f.code & 0xf0 {
                    BPF_JA => k as usize,
                    op => {
                        let taken = match op {
                            BPF_JEQ => a == src,
                            BPF_JGT => a > src,
                            BPF_JGE => a >= src,
                            BPF_JSET => a & src != 0,
                            _ => return 0,
                        };
                        if taken {
                            f.jt as usize
                        } else {
                            f.jf as usize
                        }
                    }
                };
                pc = pc.saturating_add(off);
            }
            BPF_RET => return if f.code & BPF_A != 0 { a } else { k },
            _ => {
                if f.code & BPF_TXA != 0 {
                    a = x;
                } else {
                    x = a;
                }
            }
        }
    }
    0
}

// ---- seccomp uapi (linux/seccomp.h) ----

pub const SECCOMP_MODE_DISABLED: u8 = 0;
pub const SECCOMP_MODE_STRICT: u8 = 1;
pub const SECCOMP_MODE_FILTER: u8 = 2;
/// Internal: the task was killed by seccomp and must run no further syscall.
pub const SECCOMP_MODE_DEAD: u8 = 3;

pub const SECCOMP_SET_MODE_STRICT: u32 = 0;
pub const SECCOMP_SET_MODE_FILTER: u32 = 1;
pub const SECCOMP_GET_ACTION_AVAIL: u32 = 2;
pub const SECCOMP_GET_NOTIF_SIZES: u32 = 3;

pub const SECCOMP_FILTER_FLAG_TSYNC: u32 = 1 << 0;
pub const SECCOMP_FILTER_FLAG_LOG: u32 = 1 << 1;
pub const SECCOMP_FILTER_FLAG_SPEC_ALLOW: u32 = 1 << 2;
pub const SECCOMP_FILTER_FLAG_NEW_LISTENER: u32 = 1 << 3;
pub const SECCOMP_FILTER_FLAG_TSYNC_ESRCH: u32 = 1 << 4;
pub const SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: u32 = 1 << 5;
pub const SECCOMP_FILTER_FLAG_MASK: u32 = 0x3f;

pub const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const SECCOMP_RET_KILL_THREAD: u32 = 0x0000_0000;
pub const SECCOMP_RET_KILL: u32 = SECCOMP_RET_KILL_THREAD;
pub const SECCOMP_RET_TRAP: u32 = 0x0003_0000;
pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
pub const SECCOMP_RET_LOG: u32 = 0x7ffc_0000;
pub const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
pub const SECCOMP_RET_ACTION_FULL: u32 = 0xffff_0000;
pub const SECCOMP_RET_ACTION: u32 = 0x7fff_0000;
pub const SECCOMP_RET_DATA: u32 = 0x0000_ffff;

/// Instructions over all stacked filters, each filter counting 4 more than its length
/// (`MAX_INSNS_PER_PATH`: 256 KiB of `sock_filter`).
pub const MAX_INSNS_PER_PATH: usize = (1 << 18) / SockFilter::SIZE;
/// The 4-instruction charge each already-installed filter adds to that total.
pub const FILTER_PATH_PENALTY: usize = 4;

/// `struct seccomp_notif_sizes` as SECCOMP_GET_NOTIF_SIZES reports it: seccomp_notif (80),
/// seccomp_notif_resp (24), seccomp_data (64), three u16s.
pub const NOTIF_SIZES: [u16; 3] = [80, 24, 64];

/// The action part of a filter result, ordered as Linux orders them: as a signed number, so
/// KILL_PROCESS (top bit set) ranks first.
pub const fn action_rank(ret: u32) -> i32 {
    (ret & SECCOMP_RET_ACTION_FULL) as i32
}

/// Combines the results of stacked filters, newest first: the lowest action wins; among
/// equal actions the first seen (the newest filter's) keeps its data.
pub fn combine(results: impl IntoIterator<Item = u32>) -> u32 {
    let mut ret = SECCOMP_RET_ALLOW;
    for r in results {
        if action_rank(r) < action_rank(ret) {
            ret = r;
        }
    }
    ret
}

/// SECCOMP_GET_ACTION_AVAIL: the actions this kernel knows (`SECCOMP_ACTIONS`).
pub const fn action_available(action: u32) -> bool {
    let mut i = 0;
    while i < SECCOMP_ACTIONS.len() {
        if SECCOMP_ACTIONS[i] == action {
            return true;
        }
        i += 1;
    }
    false
}

/// Every action a seccomp filter may return, in `ret`'s order of precedence.
pub const SECCOMP_ACTIONS: [u32; 8] = [
    SECCOMP_RET_KILL_PROCESS,
    SECCOMP_RET_KILL_THREAD,
    SECCOMP_RET_TRAP,
    SECCOMP_RET_ERRNO,
    SECCOMP_RET_USER_NOTIF,
    SECCOMP_RET_TRACE,
    SECCOMP_RET_LOG,
    SECCOMP_RET_ALLOW,
];

/// Fills `p` with a random, mostly near-valid filter for the randomised tests (the host's and
/// the userland's, which compare the kernel's verdicts with `check_seccomp_filter`): real
/// opcodes with small jump offsets and constants near `seccomp_data`'s size, now and then a
/// junk opcode or a known action with data; two times in three it ends with RET A.
pub fn random_filter(rng: &mut crate::util::rng::XorShift64, p: &mut [SockFilter]) {
    const CODES: [u16; 41] = [
        0x00, 0x01, 0x20, 0x28, 0x30, 0x80, 0x81, 0x60, 0x61, 0x02, 0x03, 0x04, 0x0c, 0x14, 0x1c,
        0x24, 0x2c, 0x34, 0x3c, 0x44, 0x4c, 0x54, 0x5c, 0x64, 0x6c, 0x74, 0x7c, 0x84, 0x94, 0xa4,
        0x05, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x45, 0x06, 0x16, 0x07, 0x87,
    ];
    for f in p.iter_mut() {
        let r = rng.next();
        let code = if r & 0x3f == 0 {
            (r >> 8) as u16
        } else {
            CODES[(r >> 8) as usize % CODES.len()]
        };
        let k = match (r >> 16) % 4 {
            0 => (r >> 24) as u32,
            1 => ((r >> 24) % 68) as u32,
            _ => ((r >> 24) % 20) as u32,
        };
        let k = if code == BPF_RET | BPF_K && r & 0x300 != 0 {
            SECCOMP_ACTIONS[(r >> 40) as usize % SECCOMP_ACTIONS.len()] | (k & 0xff)
        } else {
            k
        };
        *f = SockFilter::jump(code, k, (r >> 56) as u8 % 6, (r >> 48) as u8 % 6);
    }
    if let Some(last) = p.last_mut() {
        if !rng.next().is_multiple_of(3) {
            *last = SockFilter::stmt(BPF_RET | BPF_A, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn check(p: &[SockFilter]) -> SysResult<Vec<SockFilter>> {
        let mut v = p.to_vec();
        let mut s = vec![0u16; v.len()];
        check_seccomp_filter(&mut v, &mut s).map(|_| v)
    }

    const RET_ALLOW: SockFilter = SockFilter::stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    const LD_NR: SockFilter = SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, 0);

    fn data(nr: i32) -> SeccompData {
        SeccompData {
            nr,
            arch: AUDIT_ARCH_AARCH64,
            instruction_pointer: 0x1122_3344_5566_7788,
            args: [1, 2, 3, 0xaaaa_bbbb_cccc_dddd, 5, 6],
        }
    }

    #[test]
    fn layouts() {
        let f = SockFilter::jump(0x15, 0xdead_beef, 1, 2);
        let b = f.as_bytes();
        assert_eq!(b, [0x15, 0, 1, 2, 0xef, 0xbe, 0xad, 0xde]);
        assert_eq!(SockFilter::read_from_bytes(b).ok(), Some(f));
        let mut fp = [0u8; 16];
        fp[0] = 3;
        fp[8..].copy_from_slice(&0x1234u64.to_le_bytes());
        assert_eq!(
            SockFprog::read_from_bytes(&fp).ok(),
            Some(SockFprog {
                len: 3,
                filter: 0x1234
            })
        );
        let d = data(-7);
        assert_eq!(d.word(0), -7i32 as u32);
        assert_eq!(d.word(4), 0xC000_00B7);
        assert_eq!((d.word(8), d.word(12)), (0x5566_7788, 0x1122_3344));
        assert_eq!((d.word(16), d.word(20)), (1, 0));
        assert_eq!((d.word(40), d.word(44)), (0xcccc_dddd, 0xaaaa_bbbb));
        assert_eq!(d.word(60), 0);
        assert_eq!(MAX_INSNS_PER_PATH, 32768);
    }

    #[test]
    fn validator_rules() {
        assert_eq!(check(&[]), Err(Errno::EINVAL));
        assert!(check(&[RET_ALLOW]).is_ok());
        assert_eq!(check(&vec![RET_ALLOW; 4097]), Err(Errno::EINVAL));
        assert!(check(&vec![RET_ALLOW; 4096]).is_ok());
        // The last instruction must return.
        assert_eq!(check(&[LD_NR]), Err(Errno::EINVAL));
        assert_eq!(check(&[RET_ALLOW, LD_NR]), Err(Errno::EINVAL));
        // Loads: aligned, inside seccomp_data, words only.
        for (k, ok) in [(0, true), (4, true), (60, true), (64, false), (2, false)] {
            let r = check(&[SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, k), RET_ALLOW]);
            assert_eq!(r.is_ok(), ok, "k {k}");
        }
        for code in [
            BPF_LD | BPF_H | BPF_ABS,
            BPF_LD | BPF_B | BPF_ABS,
            BPF_LD | BPF_W | BPF_IND,
            BPF_LDX | BPF_B | BPF_MSH,
            BPF_ALU | BPF_MOD | BPF_K,
            BPF_ALU | BPF_MOD | BPF_X,
            BPF_RET | BPF_X,
            0xffff,
            0x0100 | BPF_RET,
        ] {
            let r = check(&[SockFilter::stmt(code, 1), RET_ALLOW]);
            assert_eq!(r, Err(Errno::EINVAL), "code {code:#x}");
        }
        // LEN loads become immediates.
        let p = check(&[
            SockFilter::stmt(BPF_LD | BPF_W | BPF_LEN, 0),
            SockFilter::stmt(BPF_LDX | BPF_W | BPF_LEN, 0),
            SockFilter::stmt(BPF_RET | BPF_A, 0),
        ])
        .unwrap();
        assert_eq!(p[0], SockFilter::stmt(BPF_LD | BPF_IMM, 64));
        assert_eq!(p[1], SockFilter::stmt(BPF_LDX | BPF_IMM, 64));
        assert_eq!(run(&p, &data(0)), 64);
        // Division by a constant zero; shifts of 32 or more.
        let div0 = [SockFilter::stmt(BPF_ALU | BPF_DIV | BPF_K, 0), RET_ALLOW];
        assert_eq!(check(&div0), Err(Errno::EINVAL));
        let sh = [SockFilter::stmt(BPF_ALU | BPF_LSH | BPF_K, 32), RET_ALLOW];
        assert_eq!(check(&sh), Err(Errno::EINVAL));
        let sh = [SockFilter::stmt(BPF_ALU | BPF_RSH | BPF_K, 31), RET_ALLOW];
        assert!(check(&sh).is_ok());
        // Jumps: inside the program, forward.
        let ja = |k| [SockFilter::stmt(BPF_JMP | BPF_JA, k), RET_ALLOW, RET_ALLOW];
        assert!(check(&ja(1)).is_ok());
        assert_eq!(check(&ja(2)), Err(Errno::EINVAL));
        assert_eq!(check(&ja(u32::MAX)), Err(Errno::EINVAL));
        let jeq = |jt, jf| {
            [
                SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, 0, jt, jf),
                RET_ALLOW,
                RET_ALLOW,
            ]
        };
        assert!(check(&jeq(0, 1)).is_ok());
        assert_eq!(check(&jeq(2, 0)), Err(Errno::EINVAL));
        assert_eq!(check(&jeq(0, 255)), Err(Errno::EINVAL));
        // Scratch memory: index below 16, loaded only after a store on every path.
        let st = |k| [SockFilter::stmt(BPF_ST, k), RET_ALLOW];
        assert!(check(&st(15)).is_ok());
        assert_eq!(check(&st(16)), Err(Errno::EINVAL));
        let unset = [SockFilter::stmt(BPF_LD | BPF_MEM, 3), RET_ALLOW];
        assert_eq!(check(&unset), Err(Errno::EINVAL));
        let set = [
            SockFilter::stmt(BPF_STX, 3),
            SockFilter::stmt(BPF_LD | BPF_MEM, 3),
            SockFilter::stmt(BPF_RET | BPF_A, 0),
        ];
        assert!(check(&set).is_ok());
        // A store on only one branch does not make the join point's load valid.
        let one_path = [
            LD_NR,
            SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
            SockFilter::stmt(BPF_ST, 0),
            SockFilter::stmt(BPF_LDX | BPF_MEM, 0),
            RET_ALLOW,
        ];
        assert_eq!(check(&one_path), Err(Errno::EINVAL));
        let both = [
            SockFilter::stmt(BPF_ST, 0),
            LD_NR,
            SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
            SockFilter::stmt(BPF_ST, 1),
            SockFilter::stmt(BPF_LDX | BPF_MEM, 0),
            RET_ALLOW,
        ];
        assert!(check(&both).is_ok());
    }

    #[test]
    fn translated_lengths() {
        let ret = SockFilter::stmt(BPF_RET | BPF_K, 0);
        let jeq = |k, jt, jf| SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, k, jt, jf);
        let jset = |jt, jf| SockFilter::jump(BPF_JMP | BPF_JSET | BPF_X, 0, jt, jf);
        assert_eq!(translated_len(&[ret]), 5);
        assert_eq!(translated_len(&[SockFilter::stmt(BPF_RET | BPF_A, 0)]), 4);
        let mut big = std::vec![LD_NR; 4096];
        big[4095] = RET_ALLOW;
        assert_eq!(translated_len(&big), 4100);
        assert_eq!(translated_len(&[jeq(1, 0, 0)]), 4);
        assert_eq!(translated_len(&[jeq(1, 0, 1)]), 4);
        assert_eq!(translated_len(&[jeq(1, 1, 1)]), 5);
        assert_eq!(translated_len(&[jeq(0x8000_0000, 1, 0)]), 5);
        assert_eq!(translated_len(&[jset(0, 1)]), 5);
        assert_eq!(translated_len(&[jset(1, 0)]), 4);
        let divx = SockFilter::stmt(BPF_ALU | BPF_DIV | BPF_X, 0);
        assert_eq!(translated_len(&[divx]), 8);
    }

    #[test]
    fn interpreter() {
        // if nr == 172 return ERRNO|data; else allow
        let p = check(&[
            LD_NR,
            SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, 172, 0, 1),
            SockFilter::stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 42),
            RET_ALLOW,
        ])
        .unwrap();
        assert_eq!(run(&p, &data(172)), SECCOMP_RET_ERRNO | 42);
        assert_eq!(run(&p, &data(173)), SECCOMP_RET_ALLOW);
        // Arithmetic on args[3] high word, scratch round trip, X ops.
        let p = check(&[
            SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, 44),
            SockFilter::stmt(BPF_ALU | BPF_RSH | BPF_K, 16),
            SockFilter::stmt(BPF_ST, 5),
            SockFilter::stmt(BPF_LDX | BPF_IMM, 3),
            SockFilter::stmt(BPF_ALU | BPF_MUL | BPF_X, 0),
            SockFilter::stmt(BPF_MISC | BPF_TAX, 0),
            SockFilter::stmt(BPF_LD | BPF_MEM, 5),
            SockFilter::stmt(BPF_ALU | BPF_ADD | BPF_X, 0),
            SockFilter::stmt(BPF_ALU | BPF_NEG, 0),
            SockFilter::stmt(BPF_RET | BPF_A, 0),
        ])
        .unwrap();
        assert_eq!(run(&p, &data(0)), (0xaaaau32 * 4).wrapping_neg());
        // Division by X = 0 ends the program with 0.
        let p = check(&[
            SockFilter::stmt(BPF_LD | BPF_IMM, 7),
            SockFilter::stmt(BPF_ALU | BPF_DIV | BPF_X, 0),
            RET_ALLOW,
        ])
        .unwrap();
        assert_eq!(run(&p, &data(0)), 0);
        // JSET / JGT / JGE / TXA.
        let p = check(&[
            SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, 16),
            SockFilter::jump(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 3),
            SockFilter::jump(BPF_JMP | BPF_JGT | BPF_K, 0, 0, 2),
            SockFilter::stmt(BPF_LDX | BPF_IMM, 9),
            SockFilter::stmt(BPF_MISC | BPF_TXA, 0),
            SockFilter::stmt(BPF_RET | BPF_A, 0),
        ])
        .unwrap();
        assert_eq!(run(&p, &data(0)), 9);
        let mut d = data(0);
        d.args[0] = 2;
        assert_eq!(run(&p, &d), 2);
    }

    #[test]
    fn precedence() {
        assert_eq!(combine([]), SECCOMP_RET_ALLOW);
        assert_eq!(
            combine([SECCOMP_RET_ERRNO | 1, SECCOMP_RET_TRAP | 2, SECCOMP_RET_LOG]),
            SECCOMP_RET_TRAP | 2
        );
        assert_eq!(
            combine([SECCOMP_RET_KILL_THREAD, SECCOMP_RET_KILL_PROCESS]),
            SECCOMP_RET_KILL_PROCESS
        );
        // Equal actions: the newest (first) keeps its data.
        assert_eq!(
            combine([SECCOMP_RET_ERRNO | 5, SECCOMP_RET_ERRNO | 1]),
            SECCOMP_RET_ERRNO | 5
        );
        assert!(action_available(SECCOMP_RET_USER_NOTIF));
        assert!(!action_available(SECCOMP_RET_ERRNO | 1));
        assert!(!action_available(0x7ffe_0000));
    }

    /// Random programs, mostly near-valid: the validator never panics, and what it accepts
    /// runs to a RET in at most `len` steps without indexing out of bounds (the interpreter
    /// would panic in the test build if it did).
    #[test]
    fn fuzz() {
        let mut rng = crate::util::rng::XorShift64(0x9e37_79b9_7f4a_7c15);
        let mut accepted = 0;
        for _ in 0..200_000 {
            let len = 1 + (rng.next() % 12) as usize;
            let mut p = vec![SockFilter::default(); len];
            random_filter(&mut rng, &mut p);
            let mut s = vec![0u16; len];
            if check_seccomp_filter(&mut p, &mut s).is_ok() {
                accepted += 1;
                let mut d = data(rng.next() as i32);
                d.args[0] = rng.next();
                let _ = run(&p, &d);
                // Every accepted program ends in a RET reached by forward jumps only.
                assert!(matches!(p[len - 1].code, 0x06 | 0x16));
            }
        }
        assert!(accepted > 1000, "only {accepted} accepted");
    }
}
