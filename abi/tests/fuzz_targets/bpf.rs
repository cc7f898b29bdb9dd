//! seccomp's classic BPF: the filter check and the interpreter.

use super::util::{FromSlice, ToBytes};
use super::util::{Rng, Take};
use std::vec;
use std::vec::Vec;
use svelt_abi::uapi::bpf::*;

fn data_from(t: &mut Take) -> SeccompData {
    SeccompData {
        nr: t.u32() as i32,
        arch: t.u32(),
        instruction_pointer: t.u64(),
        args: core::array::from_fn(|_| t.u64()),
    }
}

/// The little-endian bytes of seccomp_data, to check `word` against.
fn data_bytes(d: &SeccompData) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0..4].copy_from_slice(&d.nr.to_le_bytes());
    b[4..8].copy_from_slice(&d.arch.to_le_bytes());
    b[8..16].copy_from_slice(&d.instruction_pointer.to_le_bytes());
    for (i, a) in d.args.iter().enumerate() {
        b[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    b
}

/// A careful interpreter for a program the checker accepted: it asserts on every step what
/// the checker promises (the PC stays in the program, jumps go forward, loads stay inside
/// seccomp_data and read only scratch words this path stored, no division by a zero
/// constant, no falling off the end) and returns the RET value and the steps taken.
fn reference(prog: &[SockFilter], d: &SeccompData) -> (u32, usize) {
    let bytes = data_bytes(d);
    let (mut a, mut x) = (0u32, 0u32);
    let mut mem = [0u32; 16];
    let mut stored = 0u16;
    let mut pc = 0usize;
    let mut steps = 0;
    loop {
        assert!(pc < prog.len(), "ran off the end of a checked program");
        steps += 1;
        assert!(steps <= prog.len());
        let f = prog[pc];
        let k = f.k;
        let src = |x: u32| if f.code & BPF_X != 0 { x } else { k };
        pc += 1;
        match f.code {
            0x00 => a = k, // LD IMM
            0x01 => x = k, // LDX IMM
            0x20 => {
                // LD W ABS
                assert!(
                    k < 64 && k.is_multiple_of(4),
                    "load outside seccomp_data: {k}"
                );
                a = u32::from_le_bytes(bytes[k as usize..k as usize + 4].try_into().unwrap());
            }
            0x60 | 0x61 => {
                // LD/LDX MEM
                assert!(k < 16);
                assert!(
                    stored & (1 << k) != 0,
                    "scratch word {k} read before any store"
                );
                if f.code == 0x60 {
                    a = mem[k as usize];
                } else {
                    x = mem[k as usize];
                }
            }
            0x02 | 0x03 => {
                // ST / STX
                assert!(k < 16);
                mem[k as usize] = if f.code == 0x02 { a } else { x };
                stored |= 1 << k;
            }
            0x06 => return (k, steps), // RET K
            0x16 => return (a, steps), // RET A
            0x07 => x = a,             // TAX
            0x87 => a = x,             // TXA
            0x84 => a = a.wrapping_neg(),
            0x05 => {
                // JA
                pc += k as usize;
            }
            c if c & 7 == 4 => {
                let s = src(x);
                a = match c & 0xf0 {
                    0x00 => a.wrapping_add(s),
                    0x10 => a.wrapping_sub(s),
                    0x20 => a.wrapping_mul(s),
                    0x30 => {
                        if s == 0 {
                            assert!(c & BPF_X != 0, "division by a zero constant");
                            return (0, steps);
                        }
                        a / s
                    }
                    0x40 => a | s,
                    0x50 => a & s,
                    0x60 => a << (s & 31),
                    0x70 => a >> (s & 31),
                    0xa0 => a ^ s,
                    _ => panic!("checked program has ALU op {c:#x}"),
                };
            }
            c if c & 7 == 5 => {
                let s = src(x);
                let taken = match c & 0xf0 {
                    0x10 => a == s,
                    0x20 => a > s,
                    0x30 => a >= s,
                    0x40 => a & s != 0,
                    _ => panic!("checked program has jump {c:#x}"),
                };
                pc += usize::from(if taken { f.jt } else { f.jf });
            }
            c => panic!("checked program has opcode {c:#x}"),
        }
    }
}

/// SECCOMP_SET_MODE_FILTER's check on an arbitrary program, then runs over seccomp_data.
///
/// Input: a seccomp_data (64 bytes), then the program (8 bytes per instruction).
///
/// Asserts: a program is accepted only with a scratch area as long as it; the check is
/// idempotent and only rewrites LEN loads; a checked program runs within `len` steps to a
/// RET, never reads outside seccomp_data or an unstored scratch word, and gives the same
/// result as a separate careful interpreter on the given data and on variations of it;
/// `translated_len` stays within its bounds; any program, accepted or not, runs to an end
/// without panicking; `word` reads seccomp_data's little-endian layout; and combining
/// results keeps the lowest-ranked action.
pub fn bpf(data: &[u8]) {
    let mut t = Take::new(data);
    let d = data_from(&mut t);
    let code = t.rest();
    let orig: Vec<SockFilter> = code
        .chunks_exact(8)
        .take(BPF_MAXINSNS + 2)
        .map(SockFilter::from_bytes)
        .collect();
    for (f, c) in orig.iter().zip(code.chunks_exact(8)) {
        assert_eq!(&f.to_bytes()[..], c);
    }
    let bytes = data_bytes(&d);
    for off in (0..64).step_by(4) {
        assert_eq!(
            d.word(off),
            u32::from_le_bytes(bytes[off as usize..off as usize + 4].try_into().unwrap())
        );
    }

    let mut prog = orig.clone();
    let mut scratch = vec![0u16; prog.len()];
    let r = check_seccomp_filter(&mut prog, &mut scratch);
    // Whatever the verdict, the interpreter must finish without panicking.
    let _ = run(&prog, &d);
    let _ = run(&orig, &d);
    if r.is_err() {
        return;
    }
    if !orig.is_empty() {
        let mut p2 = orig.clone();
        let mut short = vec![0u16; orig.len() - 1];
        assert!(
            check_seccomp_filter(&mut p2, &mut short).is_err(),
            "short scratch accepted"
        );
    }
    assert!(!prog.is_empty() && prog.len() <= BPF_MAXINSNS);
    for (a, b) in orig.iter().zip(&prog) {
        if a != b {
            assert!(
                a.code == 0x80 || a.code == 0x81,
                "check rewrote {a:?} into {b:?}"
            );
            assert_eq!(b.k, SeccompData::SIZE);
        }
    }
    let mut again = prog.clone();
    assert_eq!(check_seccomp_filter(&mut again, &mut scratch), Ok(()));
    assert_eq!(again, prog);

    let tl = translated_len(&prog);
    assert!(tl >= prog.len() + 3 && tl <= 3 + 5 * prog.len());

    let mut rng = Rng(d.instruction_pointer);
    let mut results = Vec::new();
    for i in 0..4 {
        let mut dd = d;
        if i > 0 {
            dd.nr = (rng.next() % 512) as i32;
            dd.args[rng.below(6)] = rng.next();
            if i == 3 {
                dd.arch = AUDIT_ARCH_AARCH64;
            }
        }
        let (want, steps) = reference(&prog, &dd);
        assert!(steps <= prog.len());
        let got = run(&prog, &dd);
        assert_eq!(got, want, "run disagrees with the reference on {dd:?}");
        results.push(got);
    }
    let c = combine(results.iter().copied());
    assert!(c == SECCOMP_RET_ALLOW || results.contains(&c));
    assert!(results.iter().all(|&r| action_rank(c) <= action_rank(r)));
    if let Some(first) = results.iter().find(|&&r| action_rank(r) == action_rank(c)) {
        if action_rank(c) < action_rank(SECCOMP_RET_ALLOW) {
            assert_eq!(c, *first, "not the first of the lowest action");
        }
    }
}

fn prog_bytes(p: &[SockFilter]) -> Vec<u8> {
    p.iter().flat_map(|f| f.to_bytes()).collect()
}

pub fn seeds() -> Vec<Vec<u8>> {
    let st = SockFilter::stmt;
    let jmp = SockFilter::jump;
    let mut d = vec![0u8; 64];
    d[0..4].copy_from_slice(&64i32.to_le_bytes()); // write
    d[4..8].copy_from_slice(&AUDIT_ARCH_AARCH64.to_le_bytes());
    d[16..24].copy_from_slice(&1u64.to_le_bytes());
    // An allow-list: check the arch, then a few syscalls, else ERRNO(EPERM).
    let allow = [
        st(BPF_LD | BPF_W | BPF_ABS, 4),
        jmp(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_AARCH64, 1, 0),
        st(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        st(BPF_LD | BPF_W | BPF_ABS, 0),
        jmp(BPF_JMP | BPF_JEQ | BPF_K, 64, 3, 0),
        jmp(BPF_JMP | BPF_JEQ | BPF_K, 63, 2, 0),
        jmp(BPF_JMP | BPF_JGE | BPF_K, 0x8000_0000, 0, 1),
        st(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
        st(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    ];
    // Arithmetic and scratch memory, LEN loads, X-source ops and RET A.
    let alu = [
        st(BPF_LD | BPF_W | BPF_LEN, 0),
        st(BPF_ST, 3),
        st(BPF_LDX | BPF_W | BPF_LEN, 0),
        st(BPF_LD | BPF_W | BPF_ABS, 16),
        st(BPF_ALU | BPF_ADD | BPF_X, 0),
        st(BPF_ALU | BPF_MUL | BPF_K, 3),
        st(BPF_ALU | BPF_DIV | BPF_K, 7),
        st(BPF_ALU | BPF_LSH | BPF_K, 4),
        st(BPF_ALU | BPF_XOR | BPF_K, 0xff),
        st(BPF_MISC | BPF_TAX, 0),
        st(BPF_LD | BPF_MEM, 3),
        st(BPF_ALU | BPF_DIV | BPF_X, 0),
        st(BPF_ALU | BPF_NEG, 0),
        st(BPF_STX, 5),
        st(BPF_LDX | BPF_MEM, 5),
        st(BPF_MISC | BPF_TXA, 0),
        jmp(BPF_JMP | BPF_JSET | BPF_X, 0, 1, 0),
        st(BPF_JMP | BPF_JA, 1),
        st(BPF_ALU | BPF_AND | BPF_K, 0xffff),
        st(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_TRACE),
        st(BPF_RET | BPF_A, 0),
    ];
    vec![
        [d.clone(), prog_bytes(&allow)].concat(),
        [d, prog_bytes(&alu)].concat(),
    ]
}
