//! What the fuzzers share: their random-number generators (the same stream for a seed on every
//! kernel, so that their outcome histograms can be compared with Linux's), the CPU's vector
//! lengths found once before the first fork, and the bystander process that spins with known
//! vector state beside the fuzzing and checks that nothing disturbed it.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use crate::{println, rt, sme, sve, sys};

/// A source of random 64-bit words, and the draws the fuzzers make from it.
pub trait Random {
    fn next(&mut self) -> u64;

    /// A value in `0..n`, or 0 when `n` is 0 (one word is drawn either way).
    fn below(&mut self, n: u64) -> u64 {
        let x = self.next();
        x.checked_rem(n).unwrap_or(0)
    }

    /// One element of a non-empty `v`.
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

/// xorshift64*: the generator of fuzz_regset, fuzz_sigframe and fuzz_syscalls.
pub struct Rng(pub u64);

impl Random for Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A 64-bit LCG (Knuth's MMIX constants) with a mixed output: fuzz_exec's generator.
pub struct MixedLcg(pub u64);

impl Random for MixedLcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let x = self.0;
        (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 11
    }
}

/// What the CPU and kernel offer: SVE and SME vector lengths (empty where the CPU lacks the
/// extension) and FEAT_SME_FA64.
pub struct Env {
    pub sve_vls: Vec<usize>,
    pub sme_vls: Vec<usize>,
    pub fa64: bool,
}

static ENV: AtomicUsize = AtomicUsize::new(0);

/// Finds the vector lengths, prints them, and keeps them for `env()` (call once, before the
/// first fork, so that every child inherits them).
pub fn init_env() {
    let (sve_vls, sme_vls) = if sme::has_sme() {
        (sme::sve_vls(), sme::sme_vls())
    } else if sme::has_sve() {
        (sme::sve_vls(), alloc::vec![])
    } else {
        (alloc::vec![], alloc::vec![])
    };
    let e = Box::new(Env {
        sve_vls,
        sme_vls,
        fa64: sme::has_fa64(),
    });
    println!(
        "# sve vls {:?}, sme vls {:?}, fa64 {}",
        e.sve_vls, e.sme_vls, e.fa64
    );
    if e.sve_vls.is_empty() {
        println!("# skip: no SVE: the SVE cases are left out");
    }
    if e.sme_vls.is_empty() {
        println!("# skip: no SME: the streaming-mode, ZA and ZT0 cases are left out");
    }
    ENV.store(Box::leak(e) as *const Env as usize, Ordering::SeqCst);
}

/// The environment `init_env` found.
pub fn env() -> &'static Env {
    let p = ENV.load(Ordering::SeqCst) as *const Env;
    assert!(!p.is_null(), "fuzz::env() before fuzz::init_env()");
    // SAFETY: init_env leaked the Env behind p; it is never freed.
    unsafe { &*p }
}

core::arch::global_asm!(
    r#"
    .text
    // void svelt_fuzz_fp_spin(const u8 *src, u8 *dst, const u32 *flag): V0-V31 := src, spin
    // until *flag != 0, store V0-V31 to dst.
    .global svelt_fuzz_fp_spin
    .type svelt_fuzz_fp_spin, %function
svelt_fuzz_fp_spin:
    stp d8, d9, [sp, #-64]!
    stp d10, d11, [sp, #16]
    stp d12, d13, [sp, #32]
    stp d14, d15, [sp, #48]
    .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    ldr q\n, [x0, #\n*16]
    .endr
1:  ldar w9, [x2]
    cbz w9, 1b
    .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    str q\n, [x1, #\n*16]
    .endr
    ldp d14, d15, [sp, #48]
    ldp d12, d13, [sp, #32]
    ldp d10, d11, [sp, #16]
    ldp d8, d9, [sp], #64
    ret
    .size svelt_fuzz_fp_spin, . - svelt_fuzz_fp_spin
"#
);

extern "C" {
    fn svelt_fuzz_fp_spin(src: *const u8, dst: *mut u8, flag: *const u32);
}

/// The bystander (run it in a child): loads known registers (streaming Z and ZA with SME, Z with
/// SVE, V otherwise), spins without a syscall until the word at `flag` (shared memory) is
/// non-zero, and returns 0 if they are unchanged, 1 if not, `setup_failed` if it could not set
/// its vector length.
pub fn bystander(flag: usize, setup_failed: i32) -> i32 {
    let e = env();
    let seed = 0xb157_a4de;
    if let Some(&svl) = e.sme_vls.last() {
        if sme::sme_set_vl(svl).is_err() {
            return setup_failed;
        }
        let zin = sme::z_pattern(seed, svl, e.fa64);
        let zain = sme::pattern(seed ^ 1, svl * svl);
        let mut zout = alloc::vec![0u8; sme::z_image_len(svl)];
        let mut zaout = alloc::vec![0u8; svl * svl];
        let mut op = sme::Op {
            flags: sme::F_SM | sme::F_ZA | if e.fa64 { sme::F_FA64 } else { 0 },
            z_in: zin.as_ptr() as usize,
            za_in: zain.as_ptr() as usize,
            action: sme::A_SPIN_FLAG,
            spin: flag,
            z_out: zout.as_mut_ptr() as usize,
            za_out: zaout.as_mut_ptr() as usize,
            ..sme::Op::default()
        };
        sme::run(&mut op);
        let n = if op.out_flags & sme::O_FFR != 0 {
            zout.len()
        } else {
            sme::ffr_off(svl)
        };
        let mut bad = false;
        if let Some(d) = sme::z_diff("bystander streaming Z", svl, &zout[..n], &zin[..n]) {
            println!("# {d}");
            bad = true;
        }
        if let Some(d) = sme::diff("bystander ZA", &zaout, &zain) {
            println!("# {d}");
            bad = true;
        }
        i32::from(bad)
    } else if let Some(&vl) = e.sve_vls.last() {
        if sme::sve_set_vl(vl).is_err() {
            return setup_failed;
        }
        let regs = sve::SveRegs::pattern(vl, seed);
        // SAFETY: the flag lives in shared memory for the life of this process.
        let f = unsafe { &*(flag as *const AtomicU32) };
        let (out, _) = sve::load_spin_store(&regs, f, u64::MAX);
        match out.diff(&regs) {
            Some(d) => {
                println!("# bystander: {d}");
                1
            }
            None => 0,
        }
    } else {
        let src = sme::pattern(seed, 512);
        let mut dst = alloc::vec![0u8; 512];
        // SAFETY: both buffers are 512 bytes (V0-V31); the flag is mapped for our lifetime.
        unsafe { svelt_fuzz_fp_spin(src.as_ptr(), dst.as_mut_ptr(), flag as *const u32) };
        i32::from(sme::diff("bystander V", &dst, &src).is_some())
    }
}

/// `--cases N` from the command line, or `default`.
pub fn cases_arg(default: usize) -> usize {
    let a = rt::args();
    match (a.arg(1), a.arg(2)) {
        (Some("--cases"), Some(n)) => n.parse().unwrap_or(default),
        _ => default,
    }
}

/// tcdrain's ioctl.
const TCSBRK: usize = 0x5409;

/// Lets the console's last lines out before the program exits. As the first process on Linux,
/// its exit panics the kernel at once, while those lines may still wait in the UART's buffer.
pub fn drain_console_if_init() {
    if sys::getpid() == 1 {
        let _ = sys::ioctl(1, TCSBRK, 1);
    }
}
