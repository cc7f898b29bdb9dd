//! Deterministic instruction-count benchmarks of the kernel's hot paths, the same binary on Svelt
//! and on Linux: `./qemu-run.sh --bench [--linux]` boots it as the first process under
//! `-icount shift=0,sleep=off`, where each guest instruction advances virtual time by exactly
//! 1 ns, so a 1 GHz CNTVCT_EL0 read from EL0 counts guest instructions (spec/qemu.md §6).
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
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
    let t = sys::Itimerval {
        it_interval: sys::Timeval::default(),
        it_value: sys::Timeval {
            tv_sec: (CASE_LIMIT_NS / 1_000_000_000) as i64,
            tv_usec: ((CASE_LIMIT_NS % 1_000_000_000) / 1000) as i64,
        },
    };
    let _ = sys::syscall(
        nr::SETITIMER,
        &[sys::ITIMER_REAL as usize, &t as *const _ as usize, 0],
    );
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
    /// 0: nothing written (the child died), 1: measured, 2: skipped.
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

type CaseResult = Result<Measured, String>;

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
        return Err(format!("helper {}", describe(st)));
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
        return Err(format!("needs 2 CPUs, {cpus} online (--smp 2)"));
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
        return Err(format!("pipe exchange failed (helper {})", describe(st)));
    }
    let mut m = m;
    m.note = "per round trip (1 byte each way), CPU 0 <-> CPU 1".into();
    Ok(m)
}

static SVE_RECORD: AtomicU64 = AtomicU64::new(0);
static CHECK_FRAME: AtomicBool = AtomicBool::new(false);

/// SIGUSR1 and SIGTRAP (BRK: resumes after it); when asked, notes the frame's SVE record size.
extern "C" fn on_signal(signo: i32, _info: *mut SigInfo, ucp: *mut u8) {
    if signo == SIGTRAP {
        let ucx = sig::Ucontext(ucp);
        ucx.set_pc(ucx.pc() + 4);
    }
    if CHECK_FRAME.load(Ordering::Relaxed) {
        // The size of the SVE record (0: none), found by walking the frame's records and,
        // past an extra_context record, the ones it points at.
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
            if magic == sig::SVE_MAGIC {
                SVE_RECORD.store(size as u64, Ordering::Relaxed);
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

/// Signal delivery and return, raised by tgkill (a system call) or by BRK (an exception).
fn signal_roundtrip_common(sve: bool, brk: bool) -> CaseResult {
    let mut note = String::from(if brk {
        "BRK + SIGTRAP delivery + handler (pc += 4) + rt_sigreturn"
    } else {
        "tgkill + delivery + handler + rt_sigreturn"
    });
    if sve {
        has_sve()?;
        let r = sys::syscall(nr::PRCTL, &[PR_SVE_SET_VL, 256, 0, 0, 0]);
        let r = r.map_err(|e| format!("prctl(PR_SVE_SET_VL, 256): {e:?}"))?;
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
    match SVE_RECORD.load(Ordering::Relaxed) {
        0 => note += ", frame without SVE record",
        16 => note += ", frame SVE record 16 bytes (header only: no SVE payload)",
        n => note += &format!(", frame SVE record {n} bytes"),
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
            return Err("SIGILL on the first SVE instruction".into());
        }
        if st != 0 {
            return Err(format!("child {}", describe(st)));
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
        return Err(f);
    }
    m.note = "clone(SIGCHLD), child exit_group(0) at once, parent wait4".into();
    Ok(m)
}

type Case = (&'static str, fn() -> CaseResult);

const CASES: &[Case] = &[
    ("syscall_getpid", syscall_getpid),
    ("syscall_getpid_sve_live", syscall_getpid_sve_live),
    ("yield_pingpong_1cpu", yield_pingpong_1cpu),
    ("yield_pingpong_1cpu_sve", yield_pingpong_1cpu_sve),
    ("pipe_pingpong_2cpu", pipe_pingpong_2cpu),
    ("signal_roundtrip", signal_roundtrip),
    ("signal_roundtrip_sve", signal_roundtrip_sve),
    ("signal_brk_roundtrip", signal_brk_roundtrip),
    ("signal_brk_roundtrip_sve", signal_brk_roundtrip_sve),
    ("sve_first_use", sve_first_use),
    ("fork_exit_wait", fork_exit_wait),
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
            Err(why) => {
                o.state = 2;
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

fn ensure_console() {
    if sys::fcntl(1, sys::F_GETFD, 0).is_ok() {
        return;
    }
    if let Ok(fd) = sys::open("/dev/console", sys::O_RDWR | sys::O_NOCTTY) {
        for target in 0..3 {
            if fd != target {
                let _ = sys::dup3(fd, target, 0);
            }
        }
        if fd > 2 {
            let _ = sys::close(fd);
        }
    }
}

fn main(args: &rt::Args) -> i32 {
    ensure_console();
    let u = sys::uname();
    let release = sys::field_str(&u.release);
    let svelt = release.contains("svelt");
    // Arguments naming cases select them (anything else, e.g. from a kernel command line, is
    // ignored).
    let chosen: Vec<&str> = (1..args.argc)
        .filter_map(|i| args.arg(i))
        .filter(|a| CASES.iter().any(|(n, _)| n == a))
        .collect();

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
        if chosen.is_empty() || chosen.contains(name) {
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
