//! Context-switch stress for SVE state: eight tasks (four threads of this process, four forked
//! processes), each at its own vector lengths, repeatedly load a task-unique pattern into every
//! Z, P and FFR, then either yield (sched_yield: the SVE syscall ABI leaves V0-V31 and zeros) or
//! spin without syscalls for about half a millisecond (preemptible: everything must survive), and
//! compare. Every 1000 rounds a task switches to its other length (prctl). Meanwhile the main
//! thread moves the tasks between CPUs with sched_setaffinity (with 2+ CPUs), so live state is
//! saved on one CPU and restored on another. At least 100000 yields, no corruption.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sve::{self, SveRegs};
use svelt_user::sys::*;
use svelt_user::*;

const THREADS: usize = 6;
const PROCESSES: usize = 2;
const TASKS: usize = THREADS + PROCESSES;
const MIN_YIELDS: u64 = 100_000;
/// One round in SPIN_EVERY spins instead of yielding.
const SPIN_EVERY: u64 = 32;
/// Rounds at one vector length before switching to the other.
const EPOCH: u64 = 1000;
const TIME_LIMIT_NS: u64 = 90_000_000_000;

/// Per-task counters in shared memory (threads and forked processes alike).
#[derive(Clone, Copy)]
#[repr(usize)]
enum Field {
    Yields,
    Spins,
    Errors,
    VlChanges,
    Done,
}
const FIELDS: usize = 5;

static BOARD: AtomicUsize = AtomicUsize::new(0);
/// Set by the main thread to stop everyone (time limit).
static NEVER: AtomicU32 = AtomicU32::new(0);

fn board(task: usize, f: Field) -> &'static AtomicU64 {
    let base = BOARD.load(Ordering::Relaxed) as *const AtomicU64;
    // SAFETY: BOARD is a shared mapping of TASKS * FIELDS u64s made before any worker started;
    // it is never unmapped.
    unsafe { &*base.add(task * FIELDS + f as usize) }
}

fn stop() -> &'static AtomicU64 {
    let base = BOARD.load(Ordering::Relaxed) as *const AtomicU64;
    // SAFETY: as in board(); the word after the task fields.
    unsafe { &*base.add(TASKS * FIELDS) }
}

#[derive(Clone, Copy)]
struct Plan {
    vls: [usize; 2],
    rounds: u64,
    spin: u64,
}

static PLANS: [AtomicU64; TASKS * 4] = [const { AtomicU64::new(0) }; TASKS * 4];

fn plan(task: usize) -> Plan {
    let g = |i: usize| PLANS[task * 4 + i].load(Ordering::SeqCst);
    Plan {
        vls: [g(0) as usize, g(1) as usize],
        rounds: g(2),
        spin: g(3),
    }
}

/// One task's loop; returns 0, or 1 after the first corruption (reported on stdout).
fn work(task: usize) -> i32 {
    let p = plan(task);
    let pats: Vec<[SveRegs; 2]> = p
        .vls
        .iter()
        .map(|&vl| {
            let seed = (task as u64) << 32 | vl as u64;
            [SveRegs::pattern(vl, seed), SveRegs::pattern(vl, !seed)]
        })
        .collect();
    let after: Vec<[SveRegs; 2]> = pats
        .iter()
        .map(|a| [a[0].after_syscall(), a[1].after_syscall()])
        .collect();
    let mut out = SveRegs::zeroed(sve::VL_ARCH_MAX);
    let mut cur = 0;
    for k in 0..p.rounds {
        let e = ((k / EPOCH) % 2) as usize;
        if k % EPOCH == 0 && sve::rdvl() != p.vls[e] {
            if sve::set_vl(p.vls[e]) != Ok(p.vls[e]) {
                println!("# task {task}: PR_SVE_SET_VL({}) failed", p.vls[e]);
                board(task, Field::Errors).fetch_add(1, Ordering::SeqCst);
                return 1;
            }
            board(task, Field::VlChanges).fetch_add(1, Ordering::Relaxed);
            cur = e;
        }
        if stop().load(Ordering::Relaxed) != 0 {
            break;
        }
        let src = &pats[cur][(k % 2) as usize];
        let (want, what) = if k % SPIN_EVERY == SPIN_EVERY - 1 {
            sve::load_spin_store_into(src, &mut out, &NEVER, p.spin);
            board(task, Field::Spins).fetch_add(1, Ordering::Relaxed);
            (src, "spinning")
        } else {
            let r = sve::load_syscall_store_into(src, &mut out, nr::SCHED_YIELD, &[]);
            board(task, Field::Yields).fetch_add(1, Ordering::Relaxed);
            if r != Ok(0) {
                println!("# task {task}: sched_yield {r:?}");
            }
            (&after[cur][(k % 2) as usize], "sched_yield")
        };
        if !out.same(want) {
            let d = out.diff(want).unwrap_or_default();
            println!(
                "# task {task} (pid {} tid {}), round {k}, {what} at vl {}:",
                sys::getpid(),
                sys::gettid(),
                want.vl
            );
            println!("# {}", d.replace('\n', "\n# "));
            board(task, Field::Errors).fetch_add(1, Ordering::SeqCst);
            return 1;
        }
    }
    0
}

extern "C" fn thread_main(task: usize) -> i32 {
    let r = work(task);
    board(task, Field::Done).store(1, Ordering::SeqCst);
    r
}

/// Spin rounds that take about `ns` (measured with the registers loaded at the current VL;
/// the fastest of three runs, as the host may steal time from QEMU).
fn calibrate(ns: u64) -> u64 {
    let vl = sve::rdvl();
    let p = SveRegs::pattern(vl, 1);
    let mut out = SveRegs::zeroed(sve::VL_ARCH_MAX);
    let mut time = |rounds: u64| {
        let t0 = sys::now_ns();
        sve::load_spin_store_into(&p, &mut out, &NEVER, rounds);
        (sys::now_ns() - t0).max(1)
    };
    let mut rounds = 10_000u64;
    while time(rounds) < 10_000_000 && rounds < 1 << 32 {
        rounds *= 2;
    }
    let best = (0..3).map(|_| time(rounds)).min().unwrap_or(1);
    (rounds * ns / best).max(1000)
}

fn stress() -> TestResult {
    if !sve::has_sve() {
        return skip("no SVE (AT_HWCAP lacks HWCAP_SVE)");
    }
    let vls = t!(sve::supported_vls());
    let all = t!(sys::sched_getaffinity(0));
    let cpus: Vec<u32> = (0..64).filter(|c| all & (1 << c) != 0).collect();
    let b = t!(sys::mmap_shared(4096));
    BOARD.store(b, Ordering::SeqCst);
    let spin = calibrate(500_000);
    let yields_per_task = MIN_YIELDS.div_ceil(TASKS as u64);
    let rounds = yields_per_task * SPIN_EVERY / (SPIN_EVERY - 1) + 1;
    for task in 0..TASKS {
        let n = vls.len();
        let pair = [vls[task % n], vls[(task * 3 + 1) % n]];
        for (i, v) in [pair[0] as u64, pair[1] as u64, rounds, spin]
            .into_iter()
            .enumerate()
        {
            PLANS[task * 4 + i].store(v, Ordering::SeqCst);
        }
    }
    println!(
        "# {TASKS} tasks, {rounds} rounds each, {} cpus, vls {vls:?}, {spin} spin rounds per ~0.5 ms",
        cpus.len()
    );
    let t0 = sys::now_ns();
    let mut ids = Vec::new();
    let mut pids = Vec::new();
    let mut threads = Vec::new();
    for task in 0..PROCESSES {
        let pid = t!(spawn(|| {
            let r = work(task);
            board(task, Field::Done).store(1, Ordering::SeqCst);
            r
        }));
        pids.push(pid);
        ids.push(pid);
    }
    for task in PROCESSES..TASKS {
        let th = t!(spawn_thread(thread_main, task, 0));
        ids.push(th.tid);
        threads.push(th);
    }
    // Move the tasks around until they are done.
    let mut moves = 0u64;
    let mut round = 0usize;
    loop {
        let done = (0..TASKS)
            .filter(|&t| board(t, Field::Done).load(Ordering::SeqCst) != 0)
            .count();
        if done == TASKS {
            break;
        }
        if sys::now_ns() - t0 > TIME_LIMIT_NS {
            stop().store(1, Ordering::SeqCst);
            println!("# time limit reached; stopping the tasks");
            break;
        }
        sys::sleep_ns(20_000_000);
        if cpus.len() > 1 {
            for (j, &id) in ids.iter().enumerate() {
                if board(j, Field::Done).load(Ordering::SeqCst) != 0 {
                    continue;
                }
                let cpu = cpus[(round + j) % cpus.len()];
                if sys::sched_setaffinity(id, 1 << cpu).is_ok() {
                    moves += 1;
                }
            }
            round += 1;
        }
    }
    let mut statuses = Vec::new();
    for pid in pids {
        let (_, st) = t!(sys::waitpid(pid, 0));
        statuses.push(st);
    }
    for th in threads {
        th.join();
    }
    let dt = sys::now_ns() - t0;
    let sum = |f: Field| {
        (0..TASKS)
            .map(|t| board(t, f).load(Ordering::SeqCst))
            .sum::<u64>()
    };
    let (yields, spins, errors, changes) = (
        sum(Field::Yields),
        sum(Field::Spins),
        sum(Field::Errors),
        sum(Field::VlChanges),
    );
    println!(
        "# {yields} yields, {spins} spins, {changes} VL changes, {moves} affinity moves, {} ms",
        dt / 1_000_000
    );
    for (i, st) in statuses.iter().enumerate() {
        check_eq!(describe(*st), "exited 0", "process task {}", i);
    }
    check_eq!(errors, 0, "corrupted tasks");
    check!(yields >= MIN_YIELDS, "only {yields} yields");
    if cpus.len() > 1 {
        check!(moves > 0, "no task was moved between CPUs");
    }
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[("sve_stress_switch_and_migrate", stress)])
}

entry!(main);
