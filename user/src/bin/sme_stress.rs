//! SME state under preemption and migration: four tasks (two processes of two threads each),
//! each at its own SVL with ZA on and in streaming mode, load a unique pattern into ZA and the
//! streaming Z/P(/FFR) registers, spin without syscalls (a syscall would leave streaming mode),
//! and check the registers; between rounds, with ZA still on, they yield and move themselves to
//! another CPU with sched_setaffinity and check ZA again. Bounded to a few seconds.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicUsize, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::sme::*;
use svelt_user::sys;
use svelt_user::*;

const TASKS: usize = 4;
const MAX_ROUNDS: u64 = 40;
const DURATION_NS: u64 = 6_000_000_000;
/// Long enough that spins span timer ticks (preemption in streaming mode).
const SPIN: usize = 6_000_000;

#[derive(Clone, Copy)]
struct Res {
    svl: [u64; TASKS],
    rounds: [u64; TASKS],
    moves: [u64; TASKS],
    /// nonvoluntary_ctxt_switches (preemptions) where /proc/thread-self/status has it.
    preempted: [u64; TASKS],
    errors: [u64; TASKS],
    msg: [[u8; 160]; TASKS],
}

static RES: AtomicUsize = AtomicUsize::new(0);

fn res() -> *mut Res {
    RES.load(Ordering::SeqCst) as *mut Res
}

fn task_body(i: usize) -> Result<(), String> {
    let r = res();
    let vls = sme_vls();
    let want = vls[(vls.len() - 1 + vls.len() * TASKS - i) % vls.len()];
    check_eq!(t!(sme_set_vl(want)), want);
    let svl = rdsvl();
    let fa64 = has_fa64();
    let tp = 0x5000 + i as u64;
    // SAFETY (all writes through r below): the shared page outlives every task; each task
    // writes only its own index.
    unsafe { (*r).svl[i] = svl as u64 };
    let cpus: Vec<u64> = (0..64)
        .filter(|c| sched_getaffinity(0).unwrap_or(1) >> c & 1 == 1)
        .collect();
    let all = t!(sched_getaffinity(0));
    let zs: Vec<Vec<u8>> = (0..3)
        .map(|k| z_pattern(i as u64 * 10 + k, svl, fa64))
        .collect();
    let zas: Vec<Vec<u8>> = (0..2)
        .map(|k| pattern(i as u64 * 10 + 5 + k, svl * svl))
        .collect();
    let mut zout = vec![0u8; z_image_len(svl)];
    let mut zaout = vec![0u8; svl * svl];
    let deadline = sys::now_ns() + DURATION_NS;
    let mut za_cur = 0;
    let mut round = 0u64;
    while round < MAX_ROUNDS && sys::now_ns() < deadline {
        let reload = round.is_multiple_of(4);
        if reload {
            za_cur = (round / 4 % 2) as usize;
        }
        let zin = &zs[round as usize % 3];
        let mut op = Op {
            flags: F_SM | F_ZA | F_TPIDR2 | F_KEEP_ZA | if fa64 { F_FA64 } else { 0 },
            tpidr2_in: tp,
            z_in: zin.as_ptr() as usize,
            za_in: if reload {
                zas[za_cur].as_ptr() as usize
            } else {
                0
            },
            action: A_SPIN_COUNT,
            spin: SPIN >> (round % 3),
            z_out: zout.as_mut_ptr() as usize,
            za_out: zaout.as_mut_ptr() as usize,
            ..Op::default()
        };
        run(&mut op);
        check_eq!(op.svcr_before, SVCR_SM | SVCR_ZA, "round {round}");
        check_eq!(op.svcr_after, SVCR_SM | SVCR_ZA, "round {round}");
        check_eq!(op.vl_after, svl as u64, "round {round}: streaming VL");
        check_eq!(op.tpidr2_after, tp, "round {round}: TPIDR2");
        let n = if op.out_flags & O_FFR != 0 {
            zin.len()
        } else {
            ffr_off(svl)
        };
        if let Some(d) = z_diff(
            "streaming Z/P/FFR after the spin",
            svl,
            &zout[..n],
            &zin[..n],
        ) {
            return Err(format!("round {round}: {d}"));
        }
        if let Some(d) = diff("ZA after the spin", &zaout, &zas[za_cur]) {
            return Err(format!("round {round}: {d}"));
        }
        // Syscalls with ZA on (and SM off): yield, and move to another CPU.
        t!(sys::sched_yield());
        if cpus.len() > 1 && round % 2 == 1 {
            let c = cpus[(round as usize / 2 + i) % cpus.len()];
            t!(sched_setaffinity(0, 1 << c));
            // SAFETY: see above.
            unsafe { (*r).moves[i] += 1 };
        }
        let mut op = Op {
            flags: F_KEEP_ZA,
            za_out: zaout.as_mut_ptr() as usize,
            ..Op::default()
        };
        run(&mut op);
        check_eq!(
            op.svcr_before,
            SVCR_ZA,
            "round {round}: after yield/migration"
        );
        check_eq!(op.tpidr2_after, tp);
        if let Some(d) = diff("ZA after yield/migration", &zaout, &zas[za_cur]) {
            return Err(format!("round {round}: {d}"));
        }
        round += 1;
        // SAFETY: see above.
        unsafe { (*r).rounds[i] = round };
    }
    t!(sched_setaffinity(0, all));
    if let Ok(st) = io::read_file("/proc/thread-self/status") {
        let st = core::str::from_utf8(&st).unwrap_or("");
        let n = st
            .lines()
            .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        // SAFETY: see above.
        unsafe { (*r).preempted[i] = n };
    }
    smstop_za();
    set_tpidr2(0);
    Ok(())
}

extern "C" fn task(i: usize) -> i32 {
    if let Err(e) = task_body(i) {
        let r = res();
        // SAFETY: as in task_body.
        unsafe {
            (*r).errors[i] += 1;
            let n = e.len().min(159);
            (&mut (*r).msg[i])[..n].copy_from_slice(&e.as_bytes()[..n]);
        }
        return 1;
    }
    0
}

/// A process running tasks `a` (its main thread) and `b` (a second thread).
fn process(a: usize, b: usize) -> i32 {
    let th = match proc::spawn_thread(task, b, 0) {
        Ok(t) => t,
        Err(_) => return 2,
    };
    let ra = task(a);
    th.join();
    ra
}

fn four_tasks_two_cpus() -> TestResult {
    need_sme()?;
    let shared = proc::Shared::new(Res {
        svl: [0; TASKS],
        rounds: [0; TASKS],
        moves: [0; TASKS],
        preempted: [0; TASKS],
        errors: [0; TASKS],
        msg: [[0; 160]; TASKS],
    });
    RES.store(shared.addr(), Ordering::SeqCst);
    let start = sys::now_ns();
    let p1 = t!(proc::spawn(|| process(0, 1)));
    let p2 = t!(proc::spawn(|| process(2, 3)));
    let (_, s1) = t!(sys::waitpid(p1, 0));
    let (_, s2) = t!(sys::waitpid(p2, 0));
    let ms = (sys::now_ns() - start) / 1_000_000;
    let r = shared.get();
    println!(
        "# {ms} ms; per task: SVL {:?}, rounds {:?}, migrations {:?}, preemptions {:?}",
        r.svl, r.rounds, r.moves, r.preempted
    );
    for i in 0..TASKS {
        if r.errors[i] != 0 {
            return Err(format!(
                "task {i} (SVL {}): {}",
                r.svl[i],
                sys::field_str(&r.msg[i])
            ));
        }
        check!(r.rounds[i] >= 4, "task {i} did only {} rounds", r.rounds[i]);
    }
    check_eq!(s1, 0, "process 1: {}", proc::describe(s1));
    check_eq!(s2, 0, "process 2: {}", proc::describe(s2));
    Ok(())
}

fn main(_args: &rt::Args) -> i32 {
    ktap::run(&[("four_tasks_two_cpus", four_tasks_two_cpus)])
}

entry!(main);
