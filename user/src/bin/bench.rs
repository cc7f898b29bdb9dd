//! Deterministic instruction-count benchmarks of the kernel's hot paths, the same binary on Svelt
//! and on Linux: `./qemu-run.sh --bench [--linux]` boots it as the first process under
//! `-icount shift=0,sleep=off`, where each guest instruction advances virtual time by exactly
//! 1 ns, so a 1 GHz CNTVCT_EL0 read from EL0 counts guest instructions (QEMU's docs/devel/tcg-icount.rst).
//!
//! Every case runs in a fresh child pinned to CPU 0 (the pipe helper on CPU 1), makes one warm-up
//! run and `RUNS` timed runs of `ops` operations, and prints the cost per operation of the best
//! run (the undisturbed path: the most repeatable figure; the median and the worst follow):
//!
//! ```text
//! bench <name> <instructions per op>  # median .. max, runs x ops, notes
//! bench <name> skip  # why (SVE missing, SIGILL, fewer than 2 CPUs)
//! ```
//!
//! The counts are whole-machine: with several CPUs QEMU's icount runs them round-robin on one
//! virtual clock, so the time also includes whatever the other CPUs executed meanwhile (their
//! idle loops, ticks, IPIs). The loops are written in assembly so that both kernels run the same
//! user instructions; per-op figures include those few loop instructions.
//!
//! Not a test: mkinitramfs installs it as /bin/bench, outside /bin/tests, so the test init never
//! runs it. On Linux it powers the machine off at the end (PID 1 must not exit there); on Svelt
//! it exits with its status (0 unless a case failed; skips do not count).
#![no_std]
#![no_main]

use core::arch::asm;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use svelt_user::kvm::{self, SmallVm, SmallVmOpts};
use svelt_user::proc::{describe, wifexited, wifsignaled, wtermsig};
use svelt_user::sig::{self, SigInfo, SIGALRM, SIGILL, SIGTRAP, SIGUSR1};
use svelt_user::sys::{self, nr};
use svelt_user::*;

/// Timed runs per case (odd: the median is one of them); one more untimed warm-up run first.
const RUNS: usize = 7;
/// A guest-time limit for every process of a case (SIGALRM's default action ends it). Under
/// icount guest time is instructions, so this also bounds the wall time of a runaway case.
const CASE_LIMIT_NS: u64 = 1_500_000_000;
/// Linux runs its crypto self-tests during the first ~1.5 s of guest time: wait them out.
const LINUX_SETTLE_NS: u64 = 2_000_000_000;

const PR_SVE_SET_VL: usize = 50;
const PR_SVE_GET_VL: usize = 51;
const AT_HWCAP: usize = 16;
const HWCAP_SVE: usize = 1 << 22;

// ---- the clock ----

/// Whether EL0 may read CNTVCT_EL0 (else: the clock_gettime system call).
static CNTVCT: AtomicBool = AtomicBool::new(false);
/// CNTFRQ_EL0 (1 GHz assumed for the clock_gettime fallback, whose unit is the nanosecond).
static FREQ: AtomicU64 = AtomicU64::new(1_000_000_000);

#[inline(always)]
fn cntvct() -> u64 {
    let v;
    // SAFETY: reads the virtual counter; only called once EL0 access is known to work.
    unsafe { asm!("isb", "mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack)) };
    v
}

#[inline(always)]
fn cntfrq() -> u64 {
    let v;
    // SAFETY: reads the counter frequency; only called once EL0 access is known to work.
    unsafe { asm!("mrs {}, cntfrq_el0", out(reg) v, options(nomem, nostack)) };
    v
}

/// The clock, in its own ticks (CNTVCT_EL0, or nanoseconds from clock_gettime).
#[inline(always)]
fn now() -> u64 {
    if CNTVCT.load(Ordering::Relaxed) {
        cntvct()
    } else {
        sys::now_ns()
    }
}

/// Ticks to guest instructions (nanoseconds under `-icount shift=0`), times 10.
fn insns_x10(ticks: u64) -> u64 {
    (ticks as u128 * 10_000_000_000 / FREQ.load(Ordering::Relaxed) as u128) as u64
}

/// Probes EL0 counter access in a child (an EL0 read traps when CNTKCTL_EL1.EL0VCTEN is clear).
fn setup_clock() -> String {
    let out = proc::Shared::new([0u64; 2]);
    let st = proc::in_child(|| {
        out.set([cntfrq(), cntvct()]);
        0
    });
    match st {
        Ok(0) => {
            let [f, _] = out.get();
            CNTVCT.store(true, Ordering::Relaxed);
            FREQ.store(f.max(1), Ordering::Relaxed);
            if f == 1_000_000_000 {
                format!("CNTVCT_EL0 from EL0, CNTFRQ_EL0 = {f} Hz (1 GHz: 1 tick = 1 guest instruction under -icount shift=0)")
            } else {
                format!("CNTVCT_EL0 from EL0, CNTFRQ_EL0 = {f} Hz (not 1 GHz: ticks scaled to ns, coarser; QEMU < 9 has 62.5 MHz)")
            }
        }
        Ok(st) => format!(
            "clock_gettime(CLOCK_MONOTONIC) system call: EL0 CNTVCT_EL0/CNTFRQ_EL0 read failed ({}; \
             CNTKCTL_EL1.EL0VCTEN clear?); 1 ns = 1 guest instruction under -icount shift=0",
            describe(st)
        ),
        Err(e) => format!("clock_gettime(CLOCK_MONOTONIC) system call (fork failed: {e:?})"),
    }
}

/// A loop of exactly 20001 instructions, timed (the best of 5, as an interrupt may land in one):
/// shows whether icount is on (shift=0: 20001).
fn calibrate() -> u64 {
    (0..5).map(|_| calibrate_once()).min().unwrap_or(0)
}

fn calibrate_once() -> u64 {
    let t0 = now();
    let empty = now() - t0;
    let t0 = now();
    // SAFETY: register-only arithmetic.
    unsafe {
        asm!("mov {n}, #10000", "2:", "subs {n}, {n}, #1", "b.ne 2b", n = out(reg) _,
             options(nomem, nostack))
    };
    let t1 = now();
    insns_x10((t1 - t0).saturating_sub(empty)) / 10
}

// ---- the cases' building blocks (assembly loops: the same user instructions on both kernels) ----

/// `n` getpid system calls.
fn getpid_loop(n: u64) {
    // SAFETY: getpid only returns a value (x0); the loop counter lives in a register.
    unsafe {
        asm!("2:", "mov x8, #172", "svc #0", "subs {n}, {n}, #1", "b.ne 2b",
             n = inout(reg) n => _, out("x0") _, out("x8") _, options(nostack))
    };
}

/// One SVE instruction writing Z0 (first use traps to the kernel, which enables SVE).
#[inline(always)]
fn sve_touch() {
    // SAFETY: writes Z0 (declared clobbered through its V0 view); only run where SVE exists
    // (a SIGILL otherwise ends the case's child, reported as a skip).
    unsafe {
        asm!(".arch_extension sve", "index z0.d, #0, #1", out("v0") _, options(nomem, nostack))
    };
}

/// RDVL: the SVE vector length in bytes (an SVE instruction itself).
fn sve_vl() -> u64 {
    let v;
    // SAFETY: reads the vector length; SVE instruction, see sve_touch.
    unsafe { asm!(".arch_extension sve", "rdvl {}, #1", out(reg) v, options(nomem, nostack)) };
    v
}

/// `n` sched_yield calls, each after dirtying Z0/Z1/Z31 when `sve`.
fn yield_loop(n: u64, sve: bool) {
    if sve {
        // SAFETY: writes Z0, Z1, Z31 (clobbered via V0, V1, V31) and yields.
        unsafe {
            asm!(".arch_extension sve", "2:", "index z0.d, #0, #1", "index z1.s, #1, #1",
                 "index z31.b, #2, #1", "mov x8, #124", "svc #0", "subs {n}, {n}, #1", "b.ne 2b",
                 n = inout(reg) n => _, out("x0") _, out("x8") _, out("v0") _, out("v1") _,
                 out("v31") _, options(nostack))
        };
    } else {
        // SAFETY: sched_yield only returns 0 in x0.
        unsafe {
            asm!("2:", "mov x8, #124", "svc #0", "subs {n}, {n}, #1", "b.ne 2b",
                 n = inout(reg) n => _, out("x0") _, out("x8") _, options(nostack))
        };
    }
}

/// `n` tgkill(pid, tid, SIGUSR1) calls, each preceded by a write of Z0 when `sve`. The handler
/// runs (and returns through rt_sigreturn) before each call returns.
fn tgkill_loop(n: u64, pid: i32, tid: i32, sve: bool) {
    if sve {
        // SAFETY: writes Z0 (clobbered via V0); tgkill with valid ids; the handler preserves
        // everything (sigreturn restores the interrupted registers).
        unsafe {
            asm!(".arch_extension sve", "2:", "index z0.d, #0, #1", "mov x0, {pid}",
                 "mov x1, {tid}", "mov x2, #10", "mov x8, #131", "svc #0", "subs {n}, {n}, #1",
                 "b.ne 2b", n = inout(reg) n => _, pid = in(reg) pid as u64,
                 tid = in(reg) tid as u64, out("x0") _, out("x1") _, out("x2") _, out("x8") _,
                 out("v0") _)
        };
    } else {
        // SAFETY: as above, without SVE.
        unsafe {
            asm!("2:", "mov x0, {pid}", "mov x1, {tid}", "mov x2, #10", "mov x8, #131",
                 "svc #0", "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) n => _,
                 pid = in(reg) pid as u64, tid = in(reg) tid as u64, out("x0") _, out("x1") _,
                 out("x2") _, out("x8") _)
        };
    }
}

/// `n` BRK instructions, each preceded by a write of Z0 when `sve`: every one raises SIGTRAP
/// from an exception (not a system call, so live SVE state reaches the frame whole); the handler
/// steps over it.
fn brk_loop(n: u64, sve: bool) {
    if sve {
        // SAFETY: writes Z0 (clobbered via V0); the SIGTRAP handler resumes after the BRK with
        // every register restored by rt_sigreturn.
        unsafe {
            asm!(".arch_extension sve", "2:", "index z0.d, #0, #1", "brk #0x42",
                 "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) n => _, out("v0") _)
        };
    } else {
        // SAFETY: as above, without SVE.
        unsafe { asm!("2:", "brk #0x42", "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) n => _) };
    }
}

/// fork (clone(SIGCHLD)) whose child calls exit_group(0) at once, touching no memory.
fn fork_exit() -> i32 {
    let pid: i64;
    // SAFETY: the child only issues exit_group; the parent gets the pid (or -errno) in x0.
    unsafe {
        asm!("mov x0, #17", "mov x1, #0", "mov x2, #0", "mov x3, #0", "mov x4, #0",
             "mov x8, #220", "svc #0", "cbnz x0, 2f", "mov x8, #94", "svc #0", "2:",
             out("x0") pid, out("x1") _, out("x2") _, out("x3") _, out("x4") _, out("x8") _)
    };
    pid as i32
}

// Routines that change streaming mode live in global assembly with the C calling convention:
// SMSTART/SMSTOP zero the whole vector register file, so each saves d8-d15 itself and the callers'
// compiled code sees an ordinary function call. The kernel preserves x9-x12 across system calls
// and signal handlers (rt_sigreturn restores them), so the loops keep their state there.
core::arch::global_asm!(
    r#"
    .arch_extension sve
    .arch_extension sme
    .arch_extension lse
    .text

.macro bench_enter
    stp x29, x30, [sp, #-80]!
    mov x29, sp
    stp d8, d9, [sp, #16]
    stp d10, d11, [sp, #32]
    stp d12, d13, [sp, #48]
    stp d14, d15, [sp, #64]
.endm
.macro bench_leave
    ldp d14, d15, [sp, #64]
    ldp d12, d13, [sp, #48]
    ldp d10, d11, [sp, #32]
    ldp d8, d9, [sp, #16]
    ldp x29, x30, [sp], #80
    ret
.endm

    // bench_tgkill_loop(n, pid, tid, mode): n tgkill(pid, tid, SIGUSR1). Mode 0: nothing else;
    // 1: Z0 written before each; 2: ZA on (SMSTART first, SMSTOP after) and Z0 written (a
    // system call leaves streaming mode, so only the first is in it); 3: as 2, and ZT0 zeroed
    // (ZERO {{ZT0}}, SME2) before each.
    .global bench_tgkill_loop
    .type bench_tgkill_loop, %function
bench_tgkill_loop:
    bench_enter
    mov x9, x0
    mov x10, x1
    mov x11, x2
    mov x12, x3
    cmp x12, #2
    b.lt 2f
    smstart
2:  cbz x12, 3f
    index z0.d, #0, #1
    cmp x12, #3
    b.ne 3f
    .inst 0xc0480001                // zero {{zt0}}
3:  mov x0, x10
    mov x1, x11
    mov x2, #10
    mov x8, #131
    svc #0
    subs x9, x9, #1
    b.ne 2b
    cmp x12, #2
    b.lt 4f
    smstop
4:  bench_leave
    .size bench_tgkill_loop, . - bench_tgkill_loop

    // bench_brk_loop(n, mode): n BRK #0x42 (SIGTRAP; the handler steps over it). Mode 2: in
    // streaming mode with ZA on, Z0 written before each (an exception keeps streaming mode, so
    // the frame carries the streaming registers and ZA); 3: as 2, and ZT0 zeroed too.
    .global bench_brk_loop
    .type bench_brk_loop, %function
bench_brk_loop:
    bench_enter
    mov x9, x0
    mov x12, x1
    smstart
2:  index z0.d, #0, #1
    cmp x12, #3
    b.ne 3f
    .inst 0xc0480001                // zero {{zt0}}
3:  brk #0x42
    subs x9, x9, #1
    b.ne 2b
    smstop
    bench_leave
    .size bench_brk_loop, . - bench_brk_loop

    // bench_yield_loop(n, mode): n sched_yield. Mode 0: nothing else; 1: Z0, Z1 and Z31 written
    // before each; 2: the same with ZA on, each time in streaming mode (SMSTART SM again: the
    // system call leaves it).
    .global bench_yield_loop
    .type bench_yield_loop, %function
bench_yield_loop:
    bench_enter
    mov x9, x0
    mov x12, x1
    cmp x12, #2
    b.ne 2f
    smstart za
2:  cbz x12, 3f
    cmp x12, #2
    b.ne 1f
    smstart sm
1:  index z0.d, #0, #1
    index z1.s, #1, #1
    index z31.b, #2, #1
3:  mov x8, #124
    svc #0
    subs x9, x9, #1
    b.ne 2b
    cmp x12, #2
    b.ne 4f
    smstop
4:  bench_leave
    .size bench_yield_loop, . - bench_yield_loop

    // bench_yield_helper(stop, count, mode): until *stop is nonzero, adds 1 to *count and
    // yields (mode as in bench_yield_loop).
    .global bench_yield_helper
    .type bench_yield_helper, %function
bench_yield_helper:
    bench_enter
    mov x10, x0
    mov x11, x1
    mov x12, x2
    cmp x12, #2
    b.ne 2f
    smstart za
2:  ldar x9, [x10]
    cbnz x9, 4f
    mov x9, #1
    stadd x9, [x11]
    cbz x12, 3f
    cmp x12, #2
    b.ne 1f
    smstart sm
1:  index z0.d, #0, #1
    index z1.s, #1, #1
    index z31.b, #2, #1
3:  mov x8, #124
    svc #0
    b 2b
4:  cmp x12, #2
    b.ne 5f
    smstop
5:  bench_leave
    .size bench_yield_helper, . - bench_yield_helper

    // bench_mmap_loop(n, len) -> the OR of every mmap result's low 12 bits and every munmap
    // result (0: all succeeded): n times mmap(NULL, len, RW, PRIVATE|ANONYMOUS) and munmap.
    .global bench_mmap_loop
    .type bench_mmap_loop, %function
bench_mmap_loop:
    mov x9, x0
    mov x10, x1
    mov x11, #0
1:  mov x0, #0
    mov x1, x10
    mov x2, #3
    mov x3, #0x22
    mov x4, #-1
    mov x5, #0
    mov x8, #222
    svc #0
    and x12, x0, #0xfff
    orr x11, x11, x12
    mov x1, x10
    mov x8, #215
    svc #0
    orr x11, x11, x0
    subs x9, x9, #1
    b.ne 1b
    mov x0, x11
    ret
    .size bench_mmap_loop, . - bench_mmap_loop

    // bench_touch(addr, pages): stores pages, pages - 1, ..., 1 at the start of each 4 KiB page.
    .global bench_touch
    .type bench_touch, %function
bench_touch:
1:  str x1, [x0]
    add x0, x0, #4096
    subs x1, x1, #1
    b.ne 1b
    ret
    .size bench_touch, . - bench_touch

    // bench_set_vl_loop(n, a, b) -> how many calls failed: n times prctl(PR_SVE_SET_VL, a) and
    // prctl(PR_SVE_SET_VL, b).
    .global bench_set_vl_loop
    .type bench_set_vl_loop, %function
bench_set_vl_loop:
    mov x9, x0
    mov x10, x1
    mov x11, x2
    mov x12, #0
1:  mov x0, #50
    mov x1, x10
    mov x2, #0
    mov x3, #0
    mov x4, #0
    mov x8, #167
    svc #0
    cmp x0, #0
    cinc x12, x12, lt
    mov x0, #50
    mov x1, x11
    mov x2, #0
    mov x3, #0
    mov x4, #0
    mov x8, #167
    svc #0
    cmp x0, #0
    cinc x12, x12, lt
    subs x9, x9, #1
    b.ne 1b
    mov x0, x12
    ret
    .size bench_set_vl_loop, . - bench_set_vl_loop

    // bench_fork_exec(path, argv, envp) -> pid or -errno: clone(SIGCHLD); the child calls
    // execve(path, argv, envp), and exit_group(127) if that returns. Touches no memory.
    .global bench_fork_exec
    .type bench_fork_exec, %function
bench_fork_exec:
    mov x9, x0
    mov x10, x1
    mov x11, x2
    mov x0, #17
    mov x1, #0
    mov x2, #0
    mov x3, #0
    mov x4, #0
    mov x8, #220
    svc #0
    cbnz x0, 1f
    mov x0, x9
    mov x1, x10
    mov x2, x11
    mov x8, #221
    svc #0
    mov x0, #127
    mov x8, #94
    svc #0
1:  ret
    .size bench_fork_exec, . - bench_fork_exec
"#
);

extern "C" {
    fn bench_tgkill_loop(n: u64, pid: u64, tid: u64, mode: u64);
    fn bench_brk_loop(n: u64, mode: u64);
    fn bench_yield_loop(n: u64, mode: u64);
    fn bench_yield_helper(stop: *const AtomicU64, count: *const AtomicU64, mode: u64);
    fn bench_mmap_loop(n: u64, len: u64) -> u64;
    fn bench_touch(addr: usize, pages: u64);
    fn bench_set_vl_loop(n: u64, a: u64, b: u64) -> u64;
    fn bench_fork_exec(path: *const u8, argv: *const *const u8, envp: *const *const u8) -> i64;
}

/// What the loops write besides their system calls (the `mode` of the assembly routines; their
/// mode 1, SVE, is what the Rust loops above do for the older cases).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
enum VecMode {
    None = 0,
    /// Streaming mode with ZA on (SMSTART before the loop, SMSTOP after).
    Streaming = 2,
    /// Streaming with ZA on, and ZT0 written too (SME2).
    StreamingZt0 = 3,
}

fn tgkill_loop_mode(n: u64, pid: i32, tid: i32, mode: VecMode) {
    // SAFETY: a C-ABI routine that saves what it must (d8-d15, x29, x30); it only makes
    // tgkill calls to this thread, whose handler returns through rt_sigreturn, and leaves
    // streaming mode and ZA off. Streaming modes are only asked for where SME exists (SIGILL
    // otherwise ends the case's child, a skip).
    unsafe { bench_tgkill_loop(n, pid as u64, tid as u64, mode as u64) }
}

fn brk_loop_mode(n: u64, mode: VecMode) {
    // SAFETY: as tgkill_loop_mode; each BRK's SIGTRAP handler resumes after it.
    unsafe { bench_brk_loop(n, mode as u64) }
}

fn yield_loop_mode(n: u64, mode: VecMode) {
    // SAFETY: as tgkill_loop_mode; the calls are sched_yield.
    unsafe { bench_yield_loop(n, mode as u64) }
}

fn yield_helper(stop: &AtomicU64, count: &AtomicU64, mode: VecMode) {
    // SAFETY: as tgkill_loop_mode; stop and count are live atomics (in shared memory).
    unsafe { bench_yield_helper(stop, count, mode as u64) }
}

fn sched_setaffinity(cpu: usize) -> sys::SysResult {
    let mask: u64 = 1 << cpu;
    sys::syscall(nr::SCHED_SETAFFINITY, &[0, 8, &mask as *const u64 as usize])
}

/// CPUs online, counted by the top process before any pinning.
static ONLINE: AtomicU64 = AtomicU64::new(1);

fn online_cpus() -> u32 {
    let mut mask = [0u64; 16];
    match sys::syscall(nr::SCHED_GETAFFINITY, &[0, 128, mask.as_mut_ptr() as usize]) {
        Ok(_) => mask.iter().map(|m| m.count_ones()).sum(),
        Err(_) => 1,
    }
}

/// SIGALRM (default action: terminate) after CASE_LIMIT_NS of guest time.
fn arm_limit() {
    let _ = sys::setitimer_real(CASE_LIMIT_NS, 0);
}

/// Shared anonymous memory as atomics, for a case and its helper process.
fn shared_words() -> &'static [AtomicU64; 8] {
    let p = sys::mmap_shared(4096).expect("mmap shared");
    // SAFETY: a fresh zeroed page-aligned shared mapping that is never unmapped; AtomicU64 is
    // valid for all-zero bytes.
    unsafe { &*(p as *const [AtomicU64; 8]) }
}

fn has_sve() -> Result<(), String> {
    if rt::args().getauxval(AT_HWCAP).unwrap_or(0) & HWCAP_SVE == 0 {
        return Err("no SVE (AT_HWCAP lacks HWCAP_SVE)".into());
    }
    Ok(())
}

// ---- measurement ----

/// What one case measured: per-op cost times 10 (median, min, max over RUNS) and notes.
#[derive(Clone, Copy)]
#[repr(C)]
struct Outcome {
    /// 0: nothing written (the child died), 1: measured, 2: skipped, 3: failed a check.
    state: u32,
    median: u64,
    min: u64,
    max: u64,
    ops: u64,
    note_len: u32,
    note: [u8; 240],
}

impl Outcome {
    fn note(&self) -> &str {
        core::str::from_utf8(&self.note[..self.note_len as usize]).unwrap_or("?")
    }
}

struct Measured {
    median: u64,
    min: u64,
    max: u64,
    ops: u64,
    note: String,
}

/// Why a case measured nothing: the CPU or the machine lacks what it needs (a skip), or what it
/// checked came out wrong (a failure, which makes the status 1).
enum NotRun {
    Skip(String),
    Fail(String),
}

impl From<String> for NotRun {
    fn from(why: String) -> NotRun {
        NotRun::Skip(why)
    }
}

type CaseResult = Result<Measured, NotRun>;

fn fail<T>(why: String) -> Result<T, NotRun> {
    Err(NotRun::Fail(why))
}

/// Runs `run(ops)` (which returns the ticks it took for `ops` operations) once untimed and RUNS
/// times timed; per-op instruction counts times 10.
fn measure(ops: u64, mut run: impl FnMut(u64) -> u64) -> Measured {
    run(ops);
    let mut v: Vec<u64> = (0..RUNS).map(|_| insns_x10(run(ops)) / ops).collect();
    v.sort_unstable();
    Measured {
        median: v[RUNS / 2],
        min: v[0],
        max: v[RUNS - 1],
        ops,
        note: String::new(),
    }
}

fn fmt_x10(v: u64) -> String {
    format!("{}.{}", v / 10, v % 10)
}

// ---- the cases ----

fn syscall_getpid() -> CaseResult {
    Ok(measure(2000, |n| {
        let t0 = now();
        getpid_loop(n);
        now() - t0
    }))
}

/// `n` calls of a vDSO function `f(a0, a1)` (clock_gettime's or gettimeofday's shape): the
/// loop's own instructions are the two argument moves, the call, and the count.
fn vdso_loop(n: u64, f: usize, a0: u64, a1: usize) {
    // SAFETY: f is a vDSO entry point taking (a0, a1) with the C calling convention; the
    // loop's state lives in callee-saved registers, which it preserves; a1 points at a buffer
    // big enough for what f writes (a timespec or a timeval).
    unsafe {
        asm!("2:", "mov x0, x21", "mov x1, x22", "blr x23", "subs x20, x20, #1", "b.ne 2b",
             inout("x20") n => _, in("x21") a0, in("x22") a1, in("x23") f, clobber_abi("C"))
    };
}

/// A vDSO entry point, or a skip where the kernel gives none.
fn vdso_sym(name: &str) -> Result<usize, NotRun> {
    let img = vdso::Image::find().ok_or_else(|| String::from("no vDSO (AT_SYSINFO_EHDR)"))?;
    Ok(img
        .sym(name)
        .ok_or_else(|| format!("the vDSO has no {name}"))?
        .addr)
}

fn vdso_case(name: &str, a0: u64) -> CaseResult {
    let f = vdso_sym(name)?;
    let mut buf = [0u64; 2];
    let p = buf.as_mut_ptr() as usize;
    let m = measure(2000, |n| {
        let t0 = now();
        vdso_loop(n, f, a0, p);
        now() - t0
    });
    // Under -icount the monotonic clock may not have reached a second: any time will do.
    if buf == [0, 0] {
        return fail(format!("{name} wrote no time"));
    }
    Ok(m)
}

fn vdso_clock_gettime_monotonic() -> CaseResult {
    vdso_case("__kernel_clock_gettime", 1)
}

fn vdso_clock_gettime_realtime() -> CaseResult {
    vdso_case("__kernel_clock_gettime", 0)
}

/// gettimeofday(tv, NULL), as programs call it.
fn vdso_gettimeofday() -> CaseResult {
    let f = vdso_sym("__kernel_gettimeofday")?;
    let mut tv = [0u64; 2];
    let p = tv.as_mut_ptr() as usize;
    let m = measure(2000, |n| {
        let t0 = now();
        vdso_loop(n, f, p as u64, 0);
        now() - t0
    });
    if tv == [0, 0] {
        return fail(String::from("gettimeofday wrote no time"));
    }
    Ok(m)
}

fn syscall_getpid_sve_live() -> CaseResult {
    has_sve()?;
    let mut m = measure(2000, |n| {
        sve_touch();
        let t0 = now();
        getpid_loop(n);
        now() - t0
    });
    m.note = format!("SVE used before each run, VL {}", sve_vl());
    Ok(m)
}

fn yield_pingpong(sve: bool) -> CaseResult {
    if sve {
        has_sve()?;
    }
    let w = shared_words();
    let (ready, stop, count) = (&w[0], &w[1], &w[2]);
    let helper = proc::spawn(|| {
        arm_limit();
        if sve {
            sve_touch();
        }
        ready.store(1, Ordering::SeqCst);
        while stop.load(Ordering::SeqCst) == 0 {
            count.fetch_add(1, Ordering::SeqCst);
            yield_loop(1, sve);
        }
        0
    })
    .map_err(|e| format!("fork: {e:?}"))?;
    while ready.load(Ordering::SeqCst) == 0 {
        yield_loop(1, false);
    }
    let (mut ours, mut theirs) = (0u64, 0u64);
    let mut m = measure(200, |n| {
        let c0 = count.load(Ordering::SeqCst);
        let t0 = now();
        yield_loop(n, sve);
        let t = now() - t0;
        ours += n;
        theirs += count.load(Ordering::SeqCst) - c0;
        // Per switch: the helper's yields in the window switch back to us.
        t * n / (n + count.load(Ordering::SeqCst) - c0).max(1)
    });
    stop.store(1, Ordering::SeqCst);
    let (_, st) = sys::waitpid(helper, 0).map_err(|e| format!("wait4: {e:?}"))?;
    if !wifexited(st) {
        return fail(format!("helper {}", describe(st)));
    }
    m.note = format!(
        "per yield-switch; helper yielded {theirs} times to our {ours}{}",
        if sve {
            format!(", Z0/Z1/Z31 written before each yield, VL {}", sve_vl())
        } else {
            String::new()
        }
    );
    Ok(m)
}

fn yield_pingpong_1cpu() -> CaseResult {
    yield_pingpong(false)
}

fn yield_pingpong_1cpu_sve() -> CaseResult {
    yield_pingpong(true)
}

fn pipe_pingpong_2cpu() -> CaseResult {
    let cpus = ONLINE.load(Ordering::Relaxed);
    if cpus < 2 {
        return Err(format!("needs 2 CPUs, {cpus} online (--smp 2)").into());
    }
    let [r1, w1] = sys::pipe2(sys::O_CLOEXEC).map_err(|e| format!("pipe2: {e:?}"))?;
    let [r2, w2] = sys::pipe2(sys::O_CLOEXEC).map_err(|e| format!("pipe2: {e:?}"))?;
    let helper = proc::spawn(|| {
        arm_limit();
        if sched_setaffinity(1).is_err() {
            return 3;
        }
        let _ = sys::close(w1);
        let _ = sys::close(r2);
        let mut b = [0u8; 1];
        while let Ok(1) = sys::read(r1, &mut b) {
            if sys::write(w2, &b) != Ok(1) {
                return 2;
            }
        }
        0
    })
    .map_err(|e| format!("fork: {e:?}"))?;
    let _ = sys::close(r1);
    let _ = sys::close(w2);
    let mut b = [0u8; 1];
    let mut bad = false;
    let m = measure(200, |n| {
        let t0 = now();
        for _ in 0..n {
            bad |= sys::write(w1, &b) != Ok(1);
            bad |= sys::read(r2, &mut b) != Ok(1);
        }
        now() - t0
    });
    let _ = sys::close(w1);
    let (_, st) = sys::waitpid(helper, 0).map_err(|e| format!("wait4: {e:?}"))?;
    if bad || !wifexited(st) || st != 0 {
        return fail(format!("pipe exchange failed (helper {})", describe(st)));
    }
    let mut m = m;
    m.note = "per round trip (1 byte each way), CPU 0 <-> CPU 1".into();
    Ok(m)
}

static SVE_RECORD: AtomicU64 = AtomicU64::new(0);
/// sve_context.flags of the last checked frame (SVE_SIG_FLAG_SM: streaming).
static SVE_FLAGS: AtomicU64 = AtomicU64::new(0);
static ZA_RECORD: AtomicU64 = AtomicU64::new(0);
static ZT_RECORD: AtomicU64 = AtomicU64::new(0);
/// An address on the handler's stack (the alternate stack when SA_ONSTACK took effect).
static HANDLER_SP: AtomicU64 = AtomicU64::new(0);
static CHECK_FRAME: AtomicBool = AtomicBool::new(false);

/// SIGUSR1 and SIGTRAP (BRK: resumes after it); when asked, notes the sizes of the frame's SVE,
/// ZA and ZT records, the SVE record's flags and where the handler's stack is.
extern "C" fn on_signal(signo: i32, _info: *mut SigInfo, ucp: *mut u8) {
    if signo == SIGTRAP {
        let ucx = sig::Ucontext(ucp);
        ucx.set_pc(ucx.pc() + 4);
    }
    if CHECK_FRAME.load(Ordering::Relaxed) {
        let here = 0u8;
        HANDLER_SP.store(
            core::hint::black_box(&here) as *const u8 as u64,
            Ordering::Relaxed,
        );
        // The record sizes (0: none), found by walking the frame's records and, past an
        // extra_context record, the ones it points at.
        for r in [&SVE_RECORD, &SVE_FLAGS, &ZA_RECORD, &ZT_RECORD] {
            r.store(0, Ordering::Relaxed);
        }
        let ucx = sig::Ucontext(ucp);
        let mut p = ucx.0 as usize + sig::uc::RESERVED;
        let mut end = p + sig::uc::RESERVED_SIZE;
        while p + 8 <= end {
            // SAFETY: p stays within the frame the kernel built (__reserved, or the extra
            // area whose address and size the extra_context record gives).
            let (magic, size) = unsafe {
                (
                    core::ptr::read_unaligned(p as *const u32),
                    core::ptr::read_unaligned((p + 4) as *const u32) as usize,
                )
            };
            if magic == 0 || size < 8 {
                break;
            }
            match magic {
                sig::SVE_MAGIC => {
                    SVE_RECORD.store(size as u64, Ordering::Relaxed);
                    // SAFETY: as above (sve_context: head, vl, flags).
                    let flags = unsafe { core::ptr::read_unaligned((p + 10) as *const u16) };
                    SVE_FLAGS.store(flags.into(), Ordering::Relaxed);
                }
                sig::ZA_MAGIC => ZA_RECORD.store(size as u64, Ordering::Relaxed),
                sig::ZT_MAGIC => ZT_RECORD.store(size as u64, Ordering::Relaxed),
                _ => {}
            }
            if magic == sig::EXTRA_MAGIC {
                // SAFETY: as above (extra_context: head, datap, size).
                let (datap, len) = unsafe {
                    (
                        core::ptr::read_unaligned((p + 8) as *const u64) as usize,
                        core::ptr::read_unaligned((p + 16) as *const u32) as usize,
                    )
                };
                p = datap;
                end = datap + len;
                continue;
            }
            p += size;
        }
    }
}

/// Signal delivery and return, raised by tgkill (a system call) or by BRK (an exception), with
/// SVE live at the largest VL up to 256 bytes.
fn signal_roundtrip_common(sve: bool, brk: bool) -> CaseResult {
    signal_roundtrip_at(sve, brk, None)
}

/// Sets the SVE VL to `vl` bytes; a skip when the CPU does not offer exactly that length.
fn set_sve_vl_exactly(vl: usize) -> Result<(), NotRun> {
    has_sve()?;
    let r = sys::syscall(nr::PRCTL, &[PR_SVE_SET_VL, vl, 0, 0, 0]);
    let r = r.map_err(|e| format!("prctl(PR_SVE_SET_VL, {vl}): {e:?}"))?;
    if sve_vl() as usize != vl {
        return Err(format!("VL {vl} not offered (prctl gave {:#x})", r).into());
    }
    Ok(())
}

/// `signal_roundtrip_common` at SVE VL `vl` (None: the largest up to 256).
fn signal_roundtrip_at(sve: bool, brk: bool, vl: Option<usize>) -> CaseResult {
    if let (true, Some(vl)) = (sve, vl) {
        set_sve_vl_exactly(vl)?;
    }
    let mut note = String::from(if brk {
        "BRK + SIGTRAP delivery + handler (pc += 4) + rt_sigreturn"
    } else {
        "tgkill + delivery + handler + rt_sigreturn"
    });
    if sve {
        has_sve()?;
        let want = vl.unwrap_or(256);
        let r = sys::syscall(nr::PRCTL, &[PR_SVE_SET_VL, want, 0, 0, 0]);
        let r = r.map_err(|e| format!("prctl(PR_SVE_SET_VL, {want}): {e:?}"))?;
        let _ = sys::syscall(nr::PRCTL, &[PR_SVE_GET_VL, 0, 0, 0, 0]);
        sve_touch();
        note += &format!(", SVE live at VL {} (prctl said {:#x})", sve_vl(), r);
    }
    let signo = if brk { SIGTRAP } else { SIGUSR1 };
    sig::set_handler(signo, on_signal, 0, 0).map_err(|e| format!("sigaction: {e:?}"))?;
    let (pid, tid) = (sys::getpid(), sys::gettid());
    let raise = |n| {
        if brk {
            brk_loop(n, sve)
        } else {
            tgkill_loop(n, pid, tid, sve)
        }
    };
    CHECK_FRAME.store(true, Ordering::Relaxed);
    raise(1);
    CHECK_FRAME.store(false, Ordering::Relaxed);
    let rec = SVE_RECORD.load(Ordering::Relaxed);
    match rec {
        0 => note += ", frame without SVE record",
        16 => note += ", frame SVE record 16 bytes (header only: no SVE payload)",
        n => note += &format!(", frame SVE record {n} bytes"),
    }
    // A BRK is no system call: the SVE registers reach the frame whole.
    if sve && brk && rec != sve_record_size(sve_vl()) {
        return fail(format!(
            "{note}: want {} bytes at VL {}",
            sve_record_size(sve_vl()),
            sve_vl()
        ));
    }
    let mut m = measure(200, |n| {
        let t0 = now();
        raise(n);
        now() - t0
    });
    m.note = note;
    Ok(m)
}

fn signal_roundtrip() -> CaseResult {
    signal_roundtrip_common(false, false)
}

fn signal_roundtrip_sve() -> CaseResult {
    signal_roundtrip_common(true, false)
}

fn signal_brk_roundtrip() -> CaseResult {
    signal_roundtrip_common(false, true)
}

fn signal_brk_roundtrip_sve() -> CaseResult {
    signal_roundtrip_common(true, true)
}

/// One fresh child: the ticks around a NOP and around its first SVE instruction (RDVL). With
/// CNTVCT both are in one 64-byte-aligned block, so no page fault on the code lands in the second
/// window.
fn first_use_child(out: &proc::Shared<[u64; 3]>) -> i32 {
    let (a0, a1, b0, b1, vl): (u64, u64, u64, u64, u64);
    if CNTVCT.load(Ordering::Relaxed) {
        // SAFETY: counter reads and RDVL (an SVE instruction: SIGILL without SVE ends this child).
        unsafe {
            asm!(".arch_extension sve", ".p2align 6",
                 "isb", "mrs {a0}, cntvct_el0", "nop", "isb", "mrs {a1}, cntvct_el0",
                 "isb", "mrs {b0}, cntvct_el0", "rdvl {vl}, #1", "isb", "mrs {b1}, cntvct_el0",
                 a0 = out(reg) a0, a1 = out(reg) a1, b0 = out(reg) b0, b1 = out(reg) b1,
                 vl = out(reg) vl, options(nomem, nostack))
        };
    } else {
        // The clock is a system call, whose entry costs more once SVE is live (the discard):
        // the baseline is a NOP window taken after the first use, so that both windows pay it.
        now();
        b0 = now();
        vl = sve_vl();
        b1 = now();
        a0 = now();
        // SAFETY: a no-op.
        unsafe { asm!("nop", options(nomem, nostack)) };
        a1 = now();
    }
    out.set([a1 - a0, b1 - b0, vl]);
    0
}

fn sve_first_use() -> CaseResult {
    has_sve()?;
    let out = proc::Shared::new([0u64; 3]);
    let mut v = Vec::new();
    let mut vl = 0;
    for _ in 0..=RUNS {
        out.set([0; 3]);
        let st = proc::in_child(|| first_use_child(&out)).map_err(|e| format!("fork: {e:?}"))?;
        if wifsignaled(st) && wtermsig(st) == SIGILL {
            return Err(NotRun::Skip("SIGILL on the first SVE instruction".into()));
        }
        if st != 0 {
            return fail(format!("child {}", describe(st)));
        }
        let [base, sve, l] = out.get();
        vl = l;
        v.push(insns_x10(sve.saturating_sub(base)));
    }
    v.remove(0); // the warm-up child
    v.sort_unstable();
    Ok(Measured {
        median: v[RUNS / 2],
        min: v[0],
        max: v[RUNS - 1],
        ops: 1,
        note: format!(
            "one fresh child per run, RDVL minus NOP, default VL {vl}{}",
            if CNTVCT.load(Ordering::Relaxed) {
                ""
            } else {
                " (clock_gettime fallback: RDVL window minus a NOP window with SVE live)"
            }
        ),
    })
}

fn fork_exit_wait() -> CaseResult {
    let mut failed = None;
    let mut m = measure(20, |n| {
        let t0 = now();
        for _ in 0..n {
            let pid = fork_exit();
            let mut st = 0;
            match sys::wait4(pid, &mut st, 0) {
                Ok(p) if p == pid && st == 0 => {}
                r => failed = Some(format!("fork {pid}, wait4 {r:?}, status {st:#x}")),
            }
        }
        now() - t0
    });
    if let Some(f) = failed {
        return fail(f);
    }
    m.note = "clone(SIGCHLD), child exit_group(0) at once, parent wait4".into();
    Ok(m)
}

/// sve_context with its payload at vector length `vl` bytes: the header, Z0-Z31, P0-P15 and
/// FFR, rounded up to 16 bytes.
fn sve_record_size(vl: u64) -> u64 {
    (16 + 34 * vl + vl / 8).next_multiple_of(16)
}

fn has_sme() -> Result<(), String> {
    if !sme::has_sme() {
        return Err("no SME (AT_HWCAP2 lacks HWCAP2_SME)".into());
    }
    Ok(())
}

/// Sets the SME VL to `svl` bytes (None: the largest up to 256); a skip when the CPU does not
/// offer exactly that length. Returns the streaming VL in force.
fn set_sme_vl(svl: Option<usize>) -> Result<u64, NotRun> {
    has_sme()?;
    let want = svl.unwrap_or(256);
    let r = sme::sme_set_vl(want).map_err(|e| format!("prctl(PR_SME_SET_VL, {want}): {e:?}"))?;
    let got = sme::rdsvl();
    if svl.is_some_and(|v| v != got) {
        return Err(format!("SME VL {want} not offered (prctl gave {r:#x})").into());
    }
    Ok(got as u64)
}

/// Signal delivery and return with ZA on, at SME VL `svl` (None: the largest up to 256). Raised
/// by tgkill, a system call, which leaves streaming mode (the frame carries ZA, and ZT0 on
/// SME2, but no SVE payload), or by BRK in streaming mode (the frame carries the streaming Z/P
/// registers too). With `zt0` ZT0 is written before each (SME2).
fn signal_roundtrip_sme_at(svl: Option<usize>, brk: bool, zt0: bool) -> CaseResult {
    if zt0 && !sme::has_sme2() {
        has_sme()?;
        return Err(NotRun::Skip(String::from(
            "no SME2 (AT_HWCAP2 lacks HWCAP2_SME2: ZT0 needs QEMU 11.1, --qemu11)",
        )));
    }
    let svl = set_sme_vl(svl)?;
    let mode = if zt0 {
        VecMode::StreamingZt0
    } else {
        VecMode::Streaming
    };
    let signo = if brk { SIGTRAP } else { SIGUSR1 };
    sig::set_handler(signo, on_signal, 0, 0).map_err(|e| format!("sigaction: {e:?}"))?;
    let (pid, tid) = (sys::getpid(), sys::gettid());
    let raise = |n| {
        if brk {
            brk_loop_mode(n, mode)
        } else {
            tgkill_loop_mode(n, pid, tid, mode)
        }
    };
    CHECK_FRAME.store(true, Ordering::Relaxed);
    raise(1);
    CHECK_FRAME.store(false, Ordering::Relaxed);
    let (sve, flags, za, zt) = (
        SVE_RECORD.load(Ordering::Relaxed),
        SVE_FLAGS.load(Ordering::Relaxed),
        ZA_RECORD.load(Ordering::Relaxed),
        ZT_RECORD.load(Ordering::Relaxed),
    );
    let note = format!(
        "{}, ZA on{}, SVL {svl}; frame SVE record {sve} bytes (flags {flags:#x}), ZA {za}, ZT {zt}",
        if brk {
            "BRK in streaming mode + SIGTRAP delivery + handler + rt_sigreturn"
        } else {
            "tgkill (leaves streaming mode) + delivery + handler + rt_sigreturn"
        },
        if zt0 { ", ZT0 written" } else { "" }
    );
    let want_za = (16 + svl * svl).next_multiple_of(16);
    let want_zt = if sme::has_sme2() { 80 } else { 0 };
    let sve_ok = if brk {
        sve == sve_record_size(svl) && flags & u64::from(sme::SVE_SIG_FLAG_SM) != 0
    } else {
        sve <= 16
    };
    if !sve_ok || za != want_za || zt != want_zt {
        return fail(format!(
            "{note}: want SVE {}, ZA {want_za}, ZT {want_zt}",
            if brk {
                format!("{} with SM", sve_record_size(svl))
            } else {
                String::from("header only")
            }
        ));
    }
    let mut m = measure(200, |n| {
        let t0 = now();
        raise(n);
        now() - t0
    });
    m.note = note;
    Ok(m)
}

fn signal_roundtrip_sme_za() -> CaseResult {
    signal_roundtrip_sme_at(None, false, false)
}

fn signal_brk_roundtrip_sme_za() -> CaseResult {
    signal_roundtrip_sme_at(None, true, false)
}

fn signal_brk_roundtrip_sme_zt0() -> CaseResult {
    signal_roundtrip_sme_at(None, true, true)
}

/// tgkill round trips with the handler on an alternate stack (sigaltstack, SA_ONSTACK).
fn signal_roundtrip_altstack() -> CaseResult {
    const SIZE: usize = 64 * 1024;
    let base = sys::mmap_anon(SIZE).map_err(|e| format!("mmap: {e:?}"))?;
    let ss = sig::StackT {
        sp: base,
        flags: 0,
        _pad: 0,
        size: SIZE,
    };
    sig::sigaltstack(Some(&ss)).map_err(|e| format!("sigaltstack: {e:?}"))?;
    sig::set_handler(SIGUSR1, on_signal, sig::SA_ONSTACK, 0)
        .map_err(|e| format!("sigaction: {e:?}"))?;
    let (pid, tid) = (sys::getpid(), sys::gettid());
    CHECK_FRAME.store(true, Ordering::Relaxed);
    tgkill_loop(1, pid, tid, false);
    CHECK_FRAME.store(false, Ordering::Relaxed);
    let sp = HANDLER_SP.load(Ordering::Relaxed) as usize;
    if !(base..base + SIZE).contains(&sp) {
        return fail(format!(
            "the handler ran at {sp:#x}, outside the alternate stack {base:#x}+{SIZE:#x}"
        ));
    }
    let mut m = measure(200, |n| {
        let t0 = now();
        tgkill_loop(n, pid, tid, false);
        now() - t0
    });
    m.note = format!(
        "tgkill + delivery on a 64 KiB sigaltstack (SA_ONSTACK) + rt_sigreturn; handler at \
         stack offset {:#x}",
        sp - base
    );
    Ok(m)
}

/// One fresh child: the ticks around a NOP and around its first SMSTART ZA (which traps).
fn sme_first_use_child(out: &proc::Shared<[u64; 3]>) -> i32 {
    if !CNTVCT.load(Ordering::Relaxed) {
        out.set([0, 0, 0]);
        return 0;
    }
    let (a0, a1, b0, b1, svl): (u64, u64, u64, u64, u64);
    // SAFETY: counter reads, SMSTART ZA / RDSVL / SMSTOP ZA (SME instructions: SIGILL without
    // SME ends this child); ZA is no register compiled code uses.
    unsafe {
        asm!(".arch_extension sme", ".p2align 6",
             "isb", "mrs {a0}, cntvct_el0", "nop", "isb", "mrs {a1}, cntvct_el0",
             "isb", "mrs {b0}, cntvct_el0", "smstart za", "isb", "mrs {b1}, cntvct_el0",
             "rdsvl {svl}, #1", "smstop za",
             a0 = out(reg) a0, a1 = out(reg) a1, b0 = out(reg) b0, b1 = out(reg) b1,
             svl = out(reg) svl, options(nomem, nostack))
    };
    out.set([a1 - a0, b1 - b0, svl]);
    0
}

fn sme_first_use() -> CaseResult {
    has_sme()?;
    if !CNTVCT.load(Ordering::Relaxed) {
        return Err(String::from("needs CNTVCT_EL0 readable from EL0").into());
    }
    let out = proc::Shared::new([0u64; 3]);
    let mut v = Vec::new();
    let mut svl = 0;
    for _ in 0..=RUNS {
        out.set([0; 3]);
        let st =
            proc::in_child(|| sme_first_use_child(&out)).map_err(|e| format!("fork: {e:?}"))?;
        if wifsignaled(st) && wtermsig(st) == SIGILL {
            return Err(NotRun::Skip("SIGILL on the first SMSTART ZA".into()));
        }
        if st != 0 {
            return fail(format!("child {}", describe(st)));
        }
        let [base, sme, l] = out.get();
        svl = l;
        v.push(insns_x10(sme.saturating_sub(base)));
    }
    v.remove(0);
    v.sort_unstable();
    Ok(Measured {
        median: v[RUNS / 2],
        min: v[0],
        max: v[RUNS - 1],
        ops: 1,
        note: format!("one fresh child per run, SMSTART ZA minus NOP, default SVL {svl}"),
    })
}

/// prctl(PR_SVE_SET_VL) to the smallest VL and back to the largest: one op is both calls.
fn sve_set_vl() -> CaseResult {
    has_sve()?;
    let vls = sme::sve_vls();
    let (Some(&lo), Some(&hi)) = (vls.first(), vls.last()) else {
        return Err(String::from("PR_SVE_SET_VL offers no length").into());
    };
    if lo == hi {
        return Err(format!("one SVE VL only ({lo})").into());
    }
    let mut failed = 0;
    let mut m = measure(200, |n| {
        let t0 = now();
        // SAFETY: prctl calls only; the routine keeps to caller-saved registers.
        failed += unsafe { bench_set_vl_loop(n, lo as u64, hi as u64) };
        now() - t0
    });
    let vl = sve_vl();
    if failed != 0 || vl != hi as u64 {
        return fail(format!("{failed} prctl calls failed, VL {vl} at the end"));
    }
    m.note = format!("PR_SVE_SET_VL {lo} then {hi} (per pair), SVE not live");
    Ok(m)
}

/// fork, execve of this program with `--exit` (it exits at once), wait4.
fn fork_execve_exit_wait() -> CaseResult {
    let a0 = rt::args().arg(0).unwrap_or("");
    let path = if a0.starts_with('/') {
        a0
    } else {
        "/bin/bench"
    };
    let mut cpath = Vec::from(path.as_bytes());
    cpath.push(0);
    let arg1 = b"--exit\0";
    let argv = [cpath.as_ptr(), arg1.as_ptr(), core::ptr::null()];
    let envp = [core::ptr::null::<u8>()];
    let size = sys::stat(path).map_or(0, |st| st.st_size);
    let mut failed = None;
    let mut m = measure(10, |n| {
        let t0 = now();
        for _ in 0..n {
            // SAFETY: the pointers are NUL-terminated strings and NULL-terminated arrays that
            // live across the call; the child only execs or exits.
            let pid =
                unsafe { bench_fork_exec(cpath.as_ptr(), argv.as_ptr(), envp.as_ptr()) } as i32;
            let mut st = 0;
            match sys::wait4(pid, &mut st, 0) {
                Ok(p) if p == pid && st == 0 => {}
                r => failed = Some(format!("fork {pid}, wait4 {r:?}, status {st:#x}")),
            }
        }
        now() - t0
    });
    if let Some(f) = failed {
        return fail(f);
    }
    m.note = format!(
        "clone(SIGCHLD), child execve({path} --exit, {size} bytes, static) exits at once, \
         parent wait4 (fork_exit_wait is the part without execve)"
    );
    Ok(m)
}

/// First touches of anonymous memory: one store per page of a fresh 1 MiB mapping.
fn page_fault_anon() -> CaseResult {
    const PAGES: u64 = 256;
    let mut bad = None;
    let mut m = measure(PAGES, |n| {
        let Ok(p) = sys::mmap_anon(n as usize * 4096) else {
            bad = Some(String::from("mmap failed"));
            return 0;
        };
        let t0 = now();
        // SAFETY: p..p + n pages is a fresh private read/write mapping of ours.
        unsafe { bench_touch(p, n) };
        let t = now() - t0;
        for i in 0..n {
            // SAFETY: as above; page i was just written.
            let v = unsafe { core::ptr::read_volatile((p + i as usize * 4096) as *const u64) };
            if v != n - i {
                bad = Some(format!("page {i} holds {v}, want {}", n - i));
            }
        }
        let _ = sys::munmap(p, n as usize * 4096);
        t
    });
    if let Some(b) = bad {
        return fail(b);
    }
    m.note = "per page: one store to each page of a fresh 1 MiB anonymous private mapping".into();
    Ok(m)
}

fn mmap_munmap(len: u64, what: &str) -> CaseResult {
    let mut bad = 0;
    let mut m = measure(200, |n| {
        let t0 = now();
        // SAFETY: mmap and munmap of fresh anonymous memory only.
        bad |= unsafe { bench_mmap_loop(n, len) };
        now() - t0
    });
    if bad != 0 {
        return fail(format!("an mmap or munmap failed ({bad:#x})"));
    }
    m.note = format!("mmap(NULL, {what}, RW, PRIVATE|ANONYMOUS) + munmap, untouched");
    Ok(m)
}

fn mmap_munmap_1page() -> CaseResult {
    mmap_munmap(4096, "4 KiB")
}

fn mmap_munmap_1mib() -> CaseResult {
    mmap_munmap(1 << 20, "1 MiB")
}

/// The futex word of futex_pingpong_2cpu: 1 asks the peer thread, 2 is its answer, 3 stops it.
static FUTEX_WORD: AtomicU32 = AtomicU32::new(0);
/// The peer's failures (it cannot print safely): 1 = could not pin itself to CPU 1.
static FUTEX_PEER_ERR: AtomicU32 = AtomicU32::new(0);

extern "C" fn futex_peer(_: usize) -> i32 {
    if sched_setaffinity(1).is_err() {
        FUTEX_PEER_ERR.store(1, Ordering::SeqCst);
    }
    let w = FUTEX_WORD.as_ptr() as *const u32;
    loop {
        match FUTEX_WORD.load(Ordering::SeqCst) {
            3 => return 0,
            1 => {
                FUTEX_WORD.store(2, Ordering::SeqCst);
                let _ = sys::futex(w, sys::FUTEX_WAKE | sys::FUTEX_PRIVATE_FLAG, 1, 0);
            }
            v => {
                let _ = sys::futex(w, sys::FUTEX_WAIT | sys::FUTEX_PRIVATE_FLAG, v, 0);
            }
        }
    }
}

/// A round trip through FUTEX_WAKE/FUTEX_WAIT between this thread (CPU 0) and a peer thread on
/// CPU 1.
fn futex_pingpong_2cpu() -> CaseResult {
    let cpus = ONLINE.load(Ordering::Relaxed);
    if cpus < 2 {
        return Err(format!("needs 2 CPUs, {cpus} online (--smp 2)").into());
    }
    FUTEX_WORD.store(0, Ordering::SeqCst);
    let peer = proc::spawn_thread(futex_peer, 0, 0).map_err(|e| format!("clone thread: {e:?}"))?;
    let w = FUTEX_WORD.as_ptr() as *const u32;
    let (mut slept, mut lost) = (0u64, 0u64);
    let m = measure(200, |n| {
        let t0 = now();
        for _ in 0..n {
            FUTEX_WORD.store(1, Ordering::SeqCst);
            let _ = sys::futex(w, sys::FUTEX_WAKE | sys::FUTEX_PRIVATE_FLAG, 1, 0);
            while FUTEX_WORD.load(Ordering::SeqCst) == 1 {
                if sys::futex(w, sys::FUTEX_WAIT | sys::FUTEX_PRIVATE_FLAG, 1, 0) == Ok(0) {
                    slept += 1;
                }
            }
            lost += u64::from(FUTEX_WORD.load(Ordering::SeqCst) != 2);
        }
        now() - t0
    });
    FUTEX_WORD.store(3, Ordering::SeqCst);
    let _ = sys::futex(w, sys::FUTEX_WAKE | sys::FUTEX_PRIVATE_FLAG, 1, 0);
    peer.join();
    if FUTEX_PEER_ERR.load(Ordering::SeqCst) != 0 {
        return Err(String::from("the peer thread could not pin itself to CPU 1").into());
    }
    if lost != 0 {
        return fail(format!("{lost} round trips without the peer's answer"));
    }
    let mut m = m;
    m.note = format!(
        "per round trip, thread on CPU 0 <-> thread on CPU 1, FUTEX_WAKE + FUTEX_WAIT \
         (private); we slept in FUTEX_WAIT {slept} times"
    );
    Ok(m)
}

/// sched_yield with `tasks` runnable processes on CPU 0 (this one and tasks - 1 helpers that
/// yield in a loop), per switch, writing vector registers per `mode` before each yield.
fn yield_switch(tasks: usize, mode: VecMode, ops: u64) -> CaseResult {
    let w = shared_words();
    let (ready, stop, count) = (&w[0], &w[1], &w[2]);
    let mut helpers = Vec::new();
    for _ in 1..tasks {
        let h = proc::spawn(|| {
            arm_limit();
            ready.fetch_add(1, Ordering::SeqCst);
            yield_helper(stop, count, mode);
            0
        });
        match h {
            Ok(pid) => helpers.push(pid),
            Err(e) => {
                stop.store(1, Ordering::SeqCst);
                for pid in helpers {
                    let _ = sys::waitpid(pid, 0);
                }
                return fail(format!("fork: {e:?}"));
            }
        }
    }
    while ready.load(Ordering::SeqCst) < tasks as u64 - 1 {
        yield_loop(1, false);
    }
    let (mut ours, mut theirs) = (0u64, 0u64);
    let mut m = measure(ops, |n| {
        let c0 = count.load(Ordering::SeqCst);
        let t0 = now();
        yield_loop_mode(n, mode);
        let t = now() - t0;
        let d = count.load(Ordering::SeqCst) - c0;
        ours += n;
        theirs += d;
        // Per switch: every yield in the window, ours and the helpers', is one.
        t * n / (n + d).max(1)
    });
    stop.store(1, Ordering::SeqCst);
    let mut bad = None;
    for pid in helpers {
        match sys::waitpid(pid, 0) {
            Ok((_, st)) if wifexited(st) && st == 0 => {}
            Ok((_, st)) => bad = Some(format!("helper {}", describe(st))),
            Err(e) => bad = Some(format!("wait4: {e:?}")),
        }
    }
    if let Some(b) = bad {
        return fail(b);
    }
    m.note = format!(
        "per yield-switch, {tasks} runnable tasks on CPU 0; the others yielded {theirs} times \
         to our {ours}"
    );
    Ok(m)
}

fn yield_switch_1cpu_2() -> CaseResult {
    yield_switch(2, VecMode::None, 200)
}

fn yield_switch_1cpu_8() -> CaseResult {
    yield_switch(8, VecMode::None, 50)
}

fn yield_switch_1cpu_64() -> CaseResult {
    yield_switch(64, VecMode::None, 10)
}

/// yield_pingpong_1cpu_sve at SVE VL `vl`.
fn yield_pingpong_sve_at(vl: usize) -> CaseResult {
    set_sve_vl_exactly(vl)?;
    yield_pingpong(true)
}

/// Two tasks yielding to each other on CPU 0 in streaming mode with ZA on, at SME VL `svl`.
fn yield_pingpong_sme_at(svl: usize) -> CaseResult {
    let svl = set_sme_vl(Some(svl))?;
    let mut m = yield_switch(2, VecMode::Streaming, 200)?;
    m.note += &format!(
        ", ZA on; SMSTART SM and Z0/Z1/Z31 written before each yield (the call leaves \
         streaming mode), SVL {svl}"
    );
    Ok(m)
}

// ---- KVM: the host kernel's exit paths, from a VMM of our own (the same guests on both) ----

// The guests, copied to the start of a `SmallVm`'s RAM (SMALL_RAM_IPA). Each ends a run with an
// MMIO store to SMALL_MMIO (0x1000_0000); the in-guest loops read their own virtual counter
// around the loop (it runs at the host's rate: the guest's instructions and the host's both
// advance it under icount) and report the ticks as the store's data.
core::arch::global_asm!(
    r#"
    .section .rodata.kvmbench, "a"
    .arch_extension sve
    .balign 4
    // x20 HVCs of PSCI_VERSION (answered by the host kernel), timed; x0 keeps the answer.
    .global kvmb_hvc, kvmb_hvc_end
kvmb_hvc:
    isb
    mrs x21, cntvct_el0
1:  movz w0, #0x8400, lsl #16
    hvc #0
    subs x20, x20, #1
    b.ne 1b
    isb
    mrs x22, cntvct_el0
    sub x2, x22, x21
    movz x1, #0x1000, lsl #16
    str x2, [x1]
    b kvmb_hvc
kvmb_hvc_end:
    // An MMIO store of a counter at each step: every one exits to the VMM.
    .global kvmb_mmio, kvmb_mmio_end
kvmb_mmio:
    movz x1, #0x1000, lsl #16
    mov x2, #0
1:  add x2, x2, #1
    str x2, [x1]
    b 1b
kvmb_mmio_end:
    // The virtual timer through the vGIC: a vector table at its start (the IRQ entry of the
    // current EL with SP_ELx at 0x280), the code at 0x800. Enables the distributor's group 1,
    // PPI 27 in the redistributor's SGI frame (SMALL_GICR + 64 KiB), PMR and IGRPEN1. Then x20
    // times: IRQs masked, CNTV_CVAL_EL0 = 0 (expired at once) and CNTV_CTL_EL0 = ENABLE, WFI,
    // IRQs unmasked: the handler acknowledges (ICC_IAR1_EL1), disables the timer, ends the
    // interrupt (ICC_EOIR1_EL1) and counts INTID 27 in x24. Timed; x25 = the last INTID.
    .balign 2048
    .global kvmb_vtimer, kvmb_vtimer_end
kvmb_vtimer:
    b 3f
    .balign 0x200
    .space 0x80
    mrs x9, S3_0_C12_C12_0
    msr S3_3_C14_C3_1, xzr
    msr S3_0_C12_C12_1, x9
    mov x25, x9
    cmp x9, #27
    cinc x24, x24, eq
    eret
    .balign 0x800
3:  adr x0, kvmb_vtimer
    msr vbar_el1, x0
    movz x1, #0x800, lsl #16
    mov w2, #2
    str w2, [x1]
    movz x1, #0x80b, lsl #16
    mov w2, #(1 << 27)
    str w2, [x1, #0x100]
    mov x3, #0xf0
    msr S3_0_C4_C6_0, x3
    mov x3, #1
    msr S3_0_C12_C12_7, x3
    isb
4:  mov x24, #0
    isb
    mrs x21, cntvct_el0
1:  msr daifset, #2
    msr S3_3_C14_C3_2, xzr
    mov x3, #1
    msr S3_3_C14_C3_1, x3
    isb
    wfi
    msr daifclr, #2
    isb
    subs x20, x20, #1
    b.ne 1b
    isb
    mrs x22, cntvct_el0
    msr daifset, #2
    sub x2, x22, x21
    movz x1, #0x1000, lsl #16
    str x2, [x1]
    b 4b
kvmb_vtimer_end:
    // SVE at the largest VL, Z0, Z1 and Z31 all x5 (the VMM's tag for this VM) before each MMIO
    // exit; after it, Z0's first lane and Z31's last must still be x5, or it stores them to
    // SMALL_MMIO + 8 for good.
    .balign 4
    .global kvmb_sve, kvmb_sve_end
kvmb_sve:
    mov x0, #(3 << 20)
    orr x0, x0, #(3 << 16)
    msr cpacr_el1, x0
    isb
    mov x0, #0x1ff
    msr S3_0_C1_C2_0, x0
    isb
    ptrue p0.d
    movz x1, #0x1000, lsl #16
1:  dup z0.d, x5
    dup z1.d, x5
    dup z31.d, x5
    str x5, [x1]
    fmov x6, d0
    lastb x7, p0, z31.d
    cmp x6, x5
    ccmp x7, x5, #0, eq
    b.eq 1b
2:  str x6, [x1, #8]
    b 2b
kvmb_sve_end:
    // Streaming mode with ZA on at the vCPU's largest SVL (SMCR_EL1.LEN at its top, so the
    // VM's cap decides): Z0, Z31 and ZA row 0 (ZA0H.D[0]) all x5, the VMM's tag for this VM,
    // before each MMIO exit, whose data is the SVL; after it, every lane of the three is
    // compared with x5; on a difference it stores which one (0, 31, or 32 for the ZA row) to
    // SMALL_MMIO + 8 for good.
    .arch_extension sme
    .balign 4
    .global kvmb_za, kvmb_za_end
kvmb_za:
    mov x0, #(3 << 20)
    orr x0, x0, #(3 << 16)
    orr x0, x0, #(3 << 24)
    msr cpacr_el1, x0
    isb
    mov x0, #0xf
    msr S3_0_C1_C2_6, x0
    isb
    smstart
    rdsvl x8, #1
    mov w12, #0
    movz x1, #0x1000, lsl #16
1:  ptrue p0.d
    dup z0.d, x5
    dup z31.d, x5
    mova za0h.d[w12, 0], p0/m, z0.d
    str x8, [x1]
    ptrue p0.d
    dup z2.d, x5
    mov x6, #0
    cmpne p1.d, p0/z, z0.d, z2.d
    b.any 2f
    mov x6, #31
    cmpne p1.d, p0/z, z31.d, z2.d
    b.any 2f
    mov x6, #32
    dup z1.d, #0
    mova z1.d, p0/m, za0h.d[w12, 0]
    cmpne p1.d, p0/z, z1.d, z2.d
    b.none 1b
2:  str x6, [x1, #8]
    b 2b
kvmb_za_end:
    // SME's first use in every run: SMSTART ZA is the run's first SME instruction (ZA stays on
    // across the exits, so it changes nothing but traps while the vCPU's registers are in
    // memory); ZA row 0 is stored at x11 and its first doubleword must be x2, the count written
    // there before the last exit (0 at first: SMSTART zeroes ZA); then x2 + 1 goes into row 0
    // (loaded from x10) and to SMALL_MMIO. A wrong row stores what it held to SMALL_MMIO + 8
    // for good. x10 = RAM + 0x8000, x11 = RAM + 0x9000: room for a row at any SVL.
    .balign 4
    .global kvmb_za_first, kvmb_za_first_end
kvmb_za_first:
    mov x0, #(3 << 20)
    orr x0, x0, #(3 << 16)
    orr x0, x0, #(3 << 24)
    msr cpacr_el1, x0
    isb
    mov x0, #0xf
    msr S3_0_C1_C2_6, x0
    isb
    movz x1, #0x1000, lsl #16
    movz x10, #1, lsl #16
    add x10, x10, #8, lsl #12
    add x11, x10, #1, lsl #12
    mov x2, #0
    mov w12, #0
1:  smstart za
    str za[w12, 0], [x11]
    ldr x6, [x11]
    cmp x6, x2
    b.ne 2f
    add x2, x2, #1
    str x2, [x10]
    ldr za[w12, 0], [x10]
    str x2, [x1]
    b 1b
2:  str x6, [x1, #8]
    b 2b
kvmb_za_first_end:
    .text
"#
);

extern "C" {
    static kvmb_hvc: u8;
    static kvmb_hvc_end: u8;
    static kvmb_mmio: u8;
    static kvmb_mmio_end: u8;
    static kvmb_vtimer: u8;
    static kvmb_vtimer_end: u8;
    static kvmb_sve: u8;
    static kvmb_sve_end: u8;
    static kvmb_za: u8;
    static kvmb_za_end: u8;
    static kvmb_za_first: u8;
    static kvmb_za_first_end: u8;
}

/// /dev/kvm, or a skip where the kernel offers none (at EL1, or a kernel without KVM).
fn kvm_or_skip() -> Result<i32, NotRun> {
    match kvm::open() {
        Ok(Some(fd)) => Ok(fd),
        Ok(None) => Err(NotRun::Skip(String::from(
            "no KVM in this kernel (/dev/kvm: ENODEV/ENXIO)",
        ))),
        Err(e) => Err(NotRun::Skip(e)),
    }
}

/// A small VM running `code`; a skip (with the reason) where it cannot be made.
fn small_vm(code: &[u8], opts: SmallVmOpts) -> Result<SmallVm, NotRun> {
    let fd = kvm_or_skip()?;
    if opts.sve && !kvm::has_cap(fd, svelt_abi::uapi::kvm_sve::KVM_CAP_ARM_SVE) {
        let _ = sys::close(fd);
        return Err(NotRun::Skip(String::from(
            "no SVE guests (KVM_CAP_ARM_SVE)",
        )));
    }
    if opts.sme_svl.is_some() && !kvm::has_cap(fd, svelt_abi::uapi::kvm_sme::KVM_CAP_ARM_SME) {
        let _ = sys::close(fd);
        return Err(NotRun::Skip(String::from(
            "no SME for guests (KVM_CAP_ARM_SME)",
        )));
    }
    SmallVm::new(fd, code, opts).map_err(NotRun::Skip)
}

/// Runs an in-guest timed loop of `n` operations (count in x20): the guest's ticks.
fn guest_timed_run(vm: &SmallVm, n: u64) -> Result<u64, String> {
    vm.set_x(20, n).map_err(|e| format!("set x20: {e:?}"))?;
    let (a, ticks) = vm.run_to_mmio_write()?;
    if a != kvm::SMALL_MMIO {
        return Err(format!("MMIO write to {a:#x}"));
    }
    Ok(ticks)
}

/// `measure` for an in-guest loop; the first error ends the case as a failure.
fn measure_guest(vm: &SmallVm, ops: u64) -> Result<Measured, NotRun> {
    let mut err = None;
    let m = measure(ops, |n| {
        guest_timed_run(vm, n).unwrap_or_else(|e| {
            err.get_or_insert(e);
            0
        })
    });
    match err {
        Some(e) => fail(e),
        None => Ok(m),
    }
}

/// A guest's HVC (PSCI_VERSION) answered by the host kernel: KVM_RUN never returns meanwhile.
fn kvm_hvc_roundtrip() -> CaseResult {
    let code = svelt_user::guest_code!(kvmb_hvc, kvmb_hvc_end);
    let vm = small_vm(code, SmallVmOpts::default())?;
    let mut m = measure_guest(&vm, 2000)?;
    let v = vm.x(0).map_err(|e| NotRun::Fail(format!("x0: {e:?}")))?;
    if v >> 16 != 1 {
        return fail(format!("PSCI_VERSION answered {v:#x}"));
    }
    m.note = format!(
        "per HVC (PSCI_VERSION {}.{}), timed in the guest",
        v >> 16,
        v & 0xffff
    );
    Ok(m)
}

/// `measure` of runs of `ops` KVM_RUNs, each of which must end in an MMIO store to SMALL_MMIO
/// (a store elsewhere is the guest's failed check), timed in the VMM: the figures and the last
/// store's data.
fn measure_mmio_runs(vm: &SmallVm, ops: u64) -> Result<(Measured, u64), NotRun> {
    let mut err = None;
    let mut last = 0u64;
    let m = measure(ops, |n| {
        let t0 = now();
        for _ in 0..n {
            match vm.run_to_mmio_write() {
                Ok((a, d)) if a == kvm::SMALL_MMIO => last = d,
                Ok((a, d)) => {
                    err.get_or_insert(format!("the guest's check failed: {d:#x} to {a:#x}"));
                    break;
                }
                Err(e) => {
                    err.get_or_insert(e);
                    break;
                }
            }
        }
        now() - t0
    });
    match err {
        Some(e) => fail(e),
        None => Ok((m, last)),
    }
}

/// A guest's MMIO store to an IPA without memory: KVM_EXIT_MMIO to the VMM, which re-enters.
fn kvm_mmio_exit() -> CaseResult {
    let code = svelt_user::guest_code!(kvmb_mmio, kvmb_mmio_end);
    let vm = small_vm(code, SmallVmOpts::default())?;
    let (mut m, stores) = measure_mmio_runs(&vm, 1000)?;
    // The warm-up and RUNS timed runs, each one store per exit.
    let want = m.ops * (RUNS as u64 + 1);
    if stores != want {
        return fail(format!("the guest's counter is {stores}, not {want}"));
    }
    m.note = String::from("per exit and re-entry (KVM_RUN to KVM_RUN), timed in the VMM");
    Ok(m)
}

/// Svelt's count of guest SME restores (/proc/svelt/fpstat); None on other kernels.
fn guest_sme_restores() -> Option<u64> {
    let text = svelt_user::io::read_file("/proc/svelt/fpstat").ok()?;
    let text = core::str::from_utf8(&text).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("guest_sme_restores ")?.trim().parse().ok())
}

/// A guest's first SME instruction in each run, with ZA live (see kvmb_za_first): the MMIO exit
/// and re-entry of `kvm_mmio_exit` plus the trap that brings the vCPU's registers back, ZA
/// saved at the exit; the same exits without SME, measured here too, give the difference.
fn kvm_first_sme_use() -> CaseResult {
    let code = svelt_user::guest_code!(kvmb_za_first, kvmb_za_first_end);
    let svl = svelt_user::sme::sme_vls().into_iter().max().unwrap_or(0);
    if svl == 0 {
        return Err(NotRun::Skip(String::from("no SME on this CPU")));
    }
    let opts = SmallVmOpts {
        sme_svl: Some(svl),
        ..SmallVmOpts::default()
    };
    let vm = small_vm(code, opts)?;
    let plain = small_vm(
        svelt_user::guest_code!(kvmb_mmio, kvmb_mmio_end),
        SmallVmOpts::default(),
    )?;
    let r0 = guest_sme_restores();
    let (mut m, stores) = measure_mmio_runs(&vm, 1000)?;
    let r1 = guest_sme_restores();
    let want = m.ops * (RUNS as u64 + 1);
    if stores != want {
        return fail(format!("the guest's count is {stores}, not {want}"));
    }
    // Where the kernel counts them: a restore with ZA in every run but the first (whose
    // SMSTART finds ZA off), or the trap never came.
    if let (Some(r0), Some(r1)) = (r0, r1) {
        if r1 - r0 < want - 1 {
            return fail(format!("{} guest SME restores for {want} runs", r1 - r0));
        }
    }
    let (base, _) = measure_mmio_runs(&plain, 1000)?;
    m.note = format!(
        "per exit, re-entry and first SME use (SMSTART ZA), ZA live at SVL {svl}, timed in the VMM; {} over the same exits without SME ({})",
        fmt_x10(m.min.saturating_sub(base.min)),
        fmt_x10(base.min),
    );
    Ok(m)
}

/// The guest's virtual timer, armed already expired, through the in-kernel vGICv3 to its IRQ
/// handler (see kvmb_vtimer), per interrupt.
fn kvm_vtimer_irq() -> CaseResult {
    let code = svelt_user::guest_code!(kvmb_vtimer, kvmb_vtimer_end);
    let opts = SmallVmOpts {
        vgic: true,
        ..SmallVmOpts::default()
    };
    let vm = small_vm(code, opts)?;
    let mut m = measure_guest(&vm, 500)?;
    let handled = vm.x(24).map_err(|e| NotRun::Fail(format!("x24: {e:?}")))?;
    let intid = vm.x(25).map_err(|e| NotRun::Fail(format!("x25: {e:?}")))?;
    if handled != m.ops {
        return fail(format!(
            "{handled} timer interrupts of {} (last INTID {intid})",
            m.ops
        ));
    }
    m.note = String::from(
        "per interrupt: arm CNTV expired, WFI with IRQs masked, unmask, handler (IAR, timer off, EOI), timed in the guest",
    );
    Ok(m)
}

/// One VM's exit, its VMM's sched_yield to the other VMM and that one's re-entry: `n` times.
/// Each exit's data must be `data` where given; a store elsewhere is the guest's failed check.
fn switch_loop(vm: &SmallVm, n: u64, data: Option<u64>) -> Result<(), String> {
    for _ in 0..n {
        match vm.run_to_mmio_write()? {
            (a, d) if a == kvm::SMALL_MMIO && data.is_none_or(|w| w == d) => {}
            (a, d) if a == kvm::SMALL_MMIO => return Err(format!("the guest stored {d:#x}")),
            (_, z) => return Err(format!("a register lost the guest's tag: {z:#x}")),
        }
        sys::sched_yield().map_err(|e| format!("sched_yield: {e:?}"))?;
    }
    Ok(())
}

/// Two VMs (one vCPU each, running `code` with `opts`, x5 its tag), their VMMs on one CPU
/// handing it to each other after every MMIO exit: per switch from one guest to the other.
fn vcpu_switch(code: &[u8], opts: SmallVmOpts, data: Option<u64>, what: &str) -> CaseResult {
    // Both VMs are made before the helper forks off, so a skip needs no helper.
    small_vm(code, opts)?;
    let w = shared_words();
    let (ready, stop, count, bad) = (&w[0], &w[1], &w[2], &w[3]);
    let helper = proc::spawn(|| {
        arm_limit();
        let Ok(vm) = small_vm(code, opts) else {
            bad.store(1, Ordering::SeqCst);
            ready.store(1, Ordering::SeqCst);
            return 1;
        };
        let _ = vm.set_x(5, 0x2222_2222_2222_2222);
        ready.store(1, Ordering::SeqCst);
        while stop.load(Ordering::SeqCst) == 0 {
            if switch_loop(&vm, 1, data).is_err() {
                bad.store(2, Ordering::SeqCst);
                return 1;
            }
            count.fetch_add(1, Ordering::SeqCst);
        }
        0
    })
    .map_err(|e| format!("fork: {e:?}"))?;
    let vm = small_vm(code, opts)?;
    vm.set_x(5, 0x1111_1111_1111_1111)
        .map_err(|e| NotRun::Fail(format!("set x5: {e:?}")))?;
    while ready.load(Ordering::SeqCst) == 0 {
        yield_loop(1, false);
    }
    let (mut ours, mut theirs) = (0u64, 0u64);
    let mut err = None;
    let mut m = measure(200, |n| {
        let c0 = count.load(Ordering::SeqCst);
        let t0 = now();
        if let Err(e) = switch_loop(&vm, n, data) {
            err.get_or_insert(e);
        }
        let t = now() - t0;
        let c = count.load(Ordering::SeqCst) - c0;
        ours += n;
        theirs += c;
        t * n / (n + c).max(1)
    });
    stop.store(1, Ordering::SeqCst);
    let (_, st) = sys::waitpid(helper, 0).map_err(|e| format!("wait4: {e:?}"))?;
    if let Some(e) = err {
        return fail(e);
    }
    match bad.load(Ordering::SeqCst) {
        0 => {}
        1 => return fail(String::from("the helper's VM could not be made")),
        _ => return fail(String::from("the helper's guest failed its check")),
    }
    if !wifexited(st) {
        return fail(format!("helper {}", describe(st)));
    }
    if theirs < ours / 2 {
        return fail(format!("the helper ran {theirs} times to our {ours}"));
    }
    m.note = format!(
        "per switch (exit, sched_yield, the other VM's entry); helper {theirs} runs to our {ours}, {what}"
    );
    Ok(m)
}

/// `vcpu_switch` with SVE live at the largest VL in both guests (see kvmb_sve).
fn kvm_vcpu_switch_sve() -> CaseResult {
    let code = svelt_user::guest_code!(kvmb_sve, kvmb_sve_end);
    let opts = SmallVmOpts {
        sve: true,
        ..SmallVmOpts::default()
    };
    vcpu_switch(code, opts, None, "SVE live in both guests")
}

/// `vcpu_switch` with both guests in streaming mode with ZA on, their SME lengths capped at
/// `svl` (see kvmb_za): Z0, Z31 and a ZA row tagged and checked around every exit.
fn vcpu_switch_za_at(svl: usize) -> CaseResult {
    let code = svelt_user::guest_code!(kvmb_za, kvmb_za_end);
    let opts = SmallVmOpts {
        sme_svl: Some(svl),
        ..SmallVmOpts::default()
    };
    let what = format!("streaming mode and ZA live at SVL {svl} in both guests");
    vcpu_switch(code, opts, Some(svl as u64), &what)
}

macro_rules! at_vl {
    ($($name:ident => $f:ident($($arg:expr),*);)*) => {
        $(fn $name() -> CaseResult { $f($($arg),*) })*
    };
}

at_vl! {
    signal_roundtrip_sve_vl16 => signal_roundtrip_at(true, false, Some(16));
    signal_roundtrip_sve_vl32 => signal_roundtrip_at(true, false, Some(32));
    signal_roundtrip_sve_vl64 => signal_roundtrip_at(true, false, Some(64));
    signal_roundtrip_sve_vl128 => signal_roundtrip_at(true, false, Some(128));
    signal_roundtrip_sve_vl256 => signal_roundtrip_at(true, false, Some(256));
    signal_brk_roundtrip_sve_vl16 => signal_roundtrip_at(true, true, Some(16));
    signal_brk_roundtrip_sve_vl32 => signal_roundtrip_at(true, true, Some(32));
    signal_brk_roundtrip_sve_vl64 => signal_roundtrip_at(true, true, Some(64));
    signal_brk_roundtrip_sve_vl128 => signal_roundtrip_at(true, true, Some(128));
    signal_brk_roundtrip_sve_vl256 => signal_roundtrip_at(true, true, Some(256));
    yield_pingpong_1cpu_sve_vl16 => yield_pingpong_sve_at(16);
    yield_pingpong_1cpu_sve_vl32 => yield_pingpong_sve_at(32);
    yield_pingpong_1cpu_sve_vl64 => yield_pingpong_sve_at(64);
    yield_pingpong_1cpu_sve_vl128 => yield_pingpong_sve_at(128);
    yield_pingpong_1cpu_sve_vl256 => yield_pingpong_sve_at(256);
    signal_brk_roundtrip_sme_vl16 => signal_roundtrip_sme_at(Some(16), true, false);
    signal_brk_roundtrip_sme_vl32 => signal_roundtrip_sme_at(Some(32), true, false);
    signal_brk_roundtrip_sme_vl64 => signal_roundtrip_sme_at(Some(64), true, false);
    signal_brk_roundtrip_sme_vl128 => signal_roundtrip_sme_at(Some(128), true, false);
    signal_brk_roundtrip_sme_vl256 => signal_roundtrip_sme_at(Some(256), true, false);
    yield_pingpong_1cpu_sme_vl16 => yield_pingpong_sme_at(16);
    yield_pingpong_1cpu_sme_vl32 => yield_pingpong_sme_at(32);
    yield_pingpong_1cpu_sme_vl64 => yield_pingpong_sme_at(64);
    yield_pingpong_1cpu_sme_vl128 => yield_pingpong_sme_at(128);
    yield_pingpong_1cpu_sme_vl256 => yield_pingpong_sme_at(256);
    kvm_vcpu_switch_za_svl64 => vcpu_switch_za_at(64);
    kvm_vcpu_switch_za_svl256 => vcpu_switch_za_at(256);
}

type Case = (&'static str, fn() -> CaseResult);

const CASES: &[Case] = &[
    ("syscall_getpid", syscall_getpid),
    ("syscall_getpid_sve_live", syscall_getpid_sve_live),
    ("vdso_clock_gettime_monotonic", vdso_clock_gettime_monotonic),
    ("vdso_clock_gettime_realtime", vdso_clock_gettime_realtime),
    ("vdso_gettimeofday", vdso_gettimeofday),
    ("yield_pingpong_1cpu", yield_pingpong_1cpu),
    ("yield_pingpong_1cpu_sve", yield_pingpong_1cpu_sve),
    ("pipe_pingpong_2cpu", pipe_pingpong_2cpu),
    ("signal_roundtrip", signal_roundtrip),
    ("signal_roundtrip_sve", signal_roundtrip_sve),
    ("signal_brk_roundtrip", signal_brk_roundtrip),
    ("signal_brk_roundtrip_sve", signal_brk_roundtrip_sve),
    ("sve_first_use", sve_first_use),
    ("fork_exit_wait", fork_exit_wait),
    ("signal_roundtrip_sme_za", signal_roundtrip_sme_za),
    ("signal_brk_roundtrip_sme_za", signal_brk_roundtrip_sme_za),
    ("signal_brk_roundtrip_sme_zt0", signal_brk_roundtrip_sme_zt0),
    ("signal_roundtrip_altstack", signal_roundtrip_altstack),
    ("sme_first_use", sme_first_use),
    ("sve_set_vl", sve_set_vl),
    ("fork_execve_exit_wait", fork_execve_exit_wait),
    ("page_fault_anon", page_fault_anon),
    ("mmap_munmap_1page", mmap_munmap_1page),
    ("mmap_munmap_1mib", mmap_munmap_1mib),
    ("futex_pingpong_2cpu", futex_pingpong_2cpu),
    ("yield_switch_1cpu_2", yield_switch_1cpu_2),
    ("yield_switch_1cpu_8", yield_switch_1cpu_8),
    ("yield_switch_1cpu_64", yield_switch_1cpu_64),
    ("kvm_hvc_roundtrip", kvm_hvc_roundtrip),
    ("kvm_mmio_exit", kvm_mmio_exit),
    ("kvm_vtimer_irq", kvm_vtimer_irq),
    ("kvm_vcpu_switch_sve", kvm_vcpu_switch_sve),
    ("kvm_vcpu_switch_za_svl64", kvm_vcpu_switch_za_svl64),
    ("kvm_vcpu_switch_za_svl256", kvm_vcpu_switch_za_svl256),
    ("kvm_first_sme_use", kvm_first_sme_use),
    // Against the vector length (the plot of --compare): SVE, then SME streaming mode.
    ("signal_roundtrip_sve_vl16", signal_roundtrip_sve_vl16),
    ("signal_roundtrip_sve_vl32", signal_roundtrip_sve_vl32),
    ("signal_roundtrip_sve_vl64", signal_roundtrip_sve_vl64),
    ("signal_roundtrip_sve_vl128", signal_roundtrip_sve_vl128),
    ("signal_roundtrip_sve_vl256", signal_roundtrip_sve_vl256),
    (
        "signal_brk_roundtrip_sve_vl16",
        signal_brk_roundtrip_sve_vl16,
    ),
    (
        "signal_brk_roundtrip_sve_vl32",
        signal_brk_roundtrip_sve_vl32,
    ),
    (
        "signal_brk_roundtrip_sve_vl64",
        signal_brk_roundtrip_sve_vl64,
    ),
    (
        "signal_brk_roundtrip_sve_vl128",
        signal_brk_roundtrip_sve_vl128,
    ),
    (
        "signal_brk_roundtrip_sve_vl256",
        signal_brk_roundtrip_sve_vl256,
    ),
    ("yield_pingpong_1cpu_sve_vl16", yield_pingpong_1cpu_sve_vl16),
    ("yield_pingpong_1cpu_sve_vl32", yield_pingpong_1cpu_sve_vl32),
    ("yield_pingpong_1cpu_sve_vl64", yield_pingpong_1cpu_sve_vl64),
    (
        "yield_pingpong_1cpu_sve_vl128",
        yield_pingpong_1cpu_sve_vl128,
    ),
    (
        "yield_pingpong_1cpu_sve_vl256",
        yield_pingpong_1cpu_sve_vl256,
    ),
    (
        "signal_brk_roundtrip_sme_vl16",
        signal_brk_roundtrip_sme_vl16,
    ),
    (
        "signal_brk_roundtrip_sme_vl32",
        signal_brk_roundtrip_sme_vl32,
    ),
    (
        "signal_brk_roundtrip_sme_vl64",
        signal_brk_roundtrip_sme_vl64,
    ),
    (
        "signal_brk_roundtrip_sme_vl128",
        signal_brk_roundtrip_sme_vl128,
    ),
    (
        "signal_brk_roundtrip_sme_vl256",
        signal_brk_roundtrip_sme_vl256,
    ),
    ("yield_pingpong_1cpu_sme_vl16", yield_pingpong_1cpu_sme_vl16),
    ("yield_pingpong_1cpu_sme_vl32", yield_pingpong_1cpu_sme_vl32),
    ("yield_pingpong_1cpu_sme_vl64", yield_pingpong_1cpu_sme_vl64),
    (
        "yield_pingpong_1cpu_sme_vl128",
        yield_pingpong_1cpu_sme_vl128,
    ),
    (
        "yield_pingpong_1cpu_sme_vl256",
        yield_pingpong_1cpu_sme_vl256,
    ),
];

/// Runs one case in a fresh child pinned to CPU 0; returns false if it failed.
fn run_case(name: &str, f: fn() -> CaseResult) -> bool {
    let out = proc::Shared::new(Outcome {
        state: 0,
        median: 0,
        min: 0,
        max: 0,
        ops: 0,
        note_len: 0,
        note: [0; 240],
    });
    let st = proc::in_child(|| {
        arm_limit();
        if let Err(e) = sched_setaffinity(0) {
            eprintln!("# bench: sched_setaffinity(cpu 0): {e:?}");
        }
        let mut o = out.get();
        let note = match f() {
            Ok(m) => {
                o.state = 1;
                (o.median, o.min, o.max, o.ops) = (m.median, m.min, m.max, m.ops);
                m.note
            }
            Err(NotRun::Skip(why)) => {
                o.state = 2;
                why
            }
            Err(NotRun::Fail(why)) => {
                o.state = 3;
                why
            }
        };
        let n = note.len().min(o.note.len());
        o.note[..n].copy_from_slice(&note.as_bytes()[..n]);
        o.note_len = n as u32;
        out.set(o);
        0
    });
    // Reap orphans of the case (re-parented to us when we are PID 1).
    while let Ok((p, _)) = sys::waitpid(-1, sys::WNOHANG) {
        if p <= 0 {
            break;
        }
    }
    let o = out.get();
    match (st, o.state) {
        (Ok(0), 1) => {
            let sep = if o.note_len > 0 { "; " } else { "" };
            println!(
                "bench {name} {}  # median {} max {}, {RUNS} runs x {} ops{sep}{}",
                fmt_x10(o.min),
                fmt_x10(o.median),
                fmt_x10(o.max),
                o.ops,
                o.note()
            );
            true
        }
        (Ok(0), 2) => {
            println!("bench {name} skip  # {}", o.note());
            true
        }
        (Ok(0), 3) => {
            println!("bench {name} fail  # {}", o.note());
            false
        }
        (Ok(st), _) if wifsignaled(st) && wtermsig(st) == SIGILL => {
            println!("bench {name} skip  # SIGILL (instruction not available here)");
            true
        }
        (Ok(st), _) if wifsignaled(st) && wtermsig(st) == SIGALRM => {
            println!(
                "bench {name} fail  # over the limit of {} ms guest time",
                CASE_LIMIT_NS / 1_000_000
            );
            false
        }
        (Ok(st), _) => {
            println!("bench {name} fail  # child {}", describe(st));
            false
        }
        (Err(e), _) => {
            println!("bench {name} fail  # fork: {e:?}");
            false
        }
    }
}

/// Which FP policy ran: Svelt's `policy` line of /proc/svelt/fpstat (mounting /proc first when
/// the benchmark is the first process), or Linux's own behaviour.
fn fp_policy_text(svelt: bool) -> String {
    if !svelt {
        return String::from("linux (the reference kernel)");
    }
    if svelt_user::sme::fp_policy().is_none() {
        let _ = sys::mkdirat(sys::AT_FDCWD, "/proc", 0o755);
        let _ = sys::mount("proc", "/proc", "proc", 0);
    }
    svelt_user::sme::fp_policy().map_or_else(
        || String::from("unknown (no policy line in /proc/svelt/fpstat)"),
        |p| format!("{p}"),
    )
}

/// The cases asked for: arguments, and the words of /etc/bench-cases (which `qemu-run.sh
/// --bench-cases` adds to the archive, as the first process gets no arguments on Svelt). A word
/// ending in `*` selects every case it begins; other words (e.g. from Linux's command line) are
/// ignored. Nothing asked for: every case.
fn chosen(args: &rt::Args) -> Vec<String> {
    let mut words: Vec<String> = (1..args.argc)
        .filter_map(|i| args.arg(i))
        .map(String::from)
        .collect();
    if let Ok(text) = io::read_file("/etc/bench-cases") {
        let text = String::from_utf8_lossy(&text);
        words.extend(text.split_whitespace().map(String::from));
    }
    CASES
        .iter()
        .map(|(n, _)| String::from(*n))
        .filter(|n| words.iter().any(|w| selects(w, n)))
        .collect()
}

fn selects(word: &str, case: &str) -> bool {
    match word.strip_suffix('*') {
        Some(prefix) => case.starts_with(prefix),
        None => word == case,
    }
}

fn main(args: &rt::Args) -> i32 {
    // fork_execve_exit_wait's child: a static program that exits at once.
    if args.arg(1) == Some("--exit") {
        return 0;
    }
    svelt_user::io::ensure_console();
    let u = sys::uname();
    let release = sys::field_str(&u.release);
    let svelt = release.contains("svelt");
    let chosen = chosen(args);

    if !svelt {
        sys::sleep_ns(LINUX_SETTLE_NS);
    }
    ONLINE.store(online_cpus().into(), Ordering::Relaxed);
    let clock = setup_clock();
    let cal = calibrate();
    println!(
        "# svelt-bench: kernel {} {release}",
        sys::field_str(&u.sysname)
    );
    println!("# svelt-bench: clock {clock}");
    println!("# svelt-bench: fp policy {}", fp_policy_text(svelt));
    println!(
        "# svelt-bench: calibration: a 20001-instruction loop took {cal} ticks-as-instructions{}",
        if cal.abs_diff(20001) <= 4 {
            " (icount shift=0 confirmed)"
        } else {
            " (NOT 20001: not running under -icount shift=0? the numbers are not instruction counts)"
        }
    );
    println!(
        "# svelt-bench: {} cpus online, uptime {} ms (guest), per-op figures are guest instructions, best of the runs",
        ONLINE.load(Ordering::Relaxed),
        sys::clock_gettime(sys::CLOCK_BOOTTIME).map_or(0, |t| t.ns() / 1_000_000)
    );
    let mut ok = true;
    for (name, f) in CASES {
        if chosen.is_empty() || chosen.iter().any(|c| c == name) {
            ok &= run_case(name, *f);
        }
    }
    let status = i32::from(!ok);
    println!("svelt-bench: exit status {status}");
    if svelt {
        return status;
    }
    sys::sync();
    let _ = sys::reboot(sys::LINUX_REBOOT_CMD_POWER_OFF);
    status
}

entry!(main);
