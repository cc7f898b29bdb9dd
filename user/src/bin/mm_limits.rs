//! Linux's limits on address spaces and processes, reached on purpose: mapping one page at a time
//! ends in ENOMEM at vm.max_map_count (also after lowering it), forking without end ends in
//! EAGAIN at kernel.threads-max, a non-root user stops at its RLIMIT_NPROC and RLIMIT_MEMLOCK,
//! and the main stack ends at RLIMIT_STACK. Every case runs
//! in a child with a deadline, so a kernel without the limit fails the case instead of hanging.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::{describe, spawn, wait_bounded, wexitstatus, wifexited, Shared};
use svelt_user::sig::SIGKILL;
use svelt_user::sys::*;
use svelt_user::*;

const PAGE: usize = 4096;
const MAX_MAP_COUNT: &str = "/proc/sys/vm/max_map_count";
/// Linux's default vm.max_map_count (65535 less a margin kept for core dumps).
const DEFAULT_MAX_MAP_COUNT: usize = 65530;
/// How many mappings of its own a process may have when the count cannot be read (no
/// /proc/self/maps): the slack allowed around the limit.
const UNKNOWN_OWN_MAPS: usize = 64;
const SEC: u64 = 1_000_000_000;

/// The first decimal number in `path`.
fn read_num(path: &str) -> Option<usize> {
    let text = io::read_file(path).ok()?;
    let digits: Vec<u8> = text
        .iter()
        .copied()
        .skip_while(|b| !b.is_ascii_digit())
        .take_while(|b| b.is_ascii_digit())
        .collect();
    core::str::from_utf8(&digits).ok()?.parse().ok()
}

fn write_text(path: &str, text: &str) -> SysResult<()> {
    let fd = sys::open(path, O_WRONLY | O_CLOEXEC)?;
    let r = sys::write(fd, text.as_bytes()).map(|_| ());
    let _ = sys::close(fd);
    r
}

/// The process's mapping count: the lines of /proc/self/maps, if the kernel has it.
fn own_maps() -> Option<usize> {
    let text = io::read_file("/proc/self/maps").ok()?;
    Some(text.iter().filter(|&&b| b == b'\n').count())
}

#[derive(Clone, Copy, Default)]
struct MapRun {
    done: bool,
    /// Mappings made before mmap failed.
    count: usize,
    /// The errno mmap failed with (0: it never failed within the bound).
    err: i32,
    /// /proc/self/maps lines before the loop, and after unmapping everything (-1: unknown).
    before: isize,
    after: isize,
    timed_out: bool,
    unmap_failures: usize,
    /// An mmap after the munmaps worked.
    remap_ok: bool,
}

/// Maps single pages (alternating read-only and read/write, so that neighbours cannot merge)
/// until mmap fails or `cap` mappings exist, then unmaps them all. Runs in a child.
fn map_pages_until_failure(cap: usize) -> Result<MapRun, String> {
    let res = Shared::new(MapRun::default());
    let pid = t!(spawn(|| {
        let mut run = MapRun::default();
        let mut addrs: Vec<usize> = Vec::with_capacity(cap);
        run.before = own_maps().map_or(-1, |n| n as isize);
        let deadline = sys::now_ns() + 100 * SEC;
        loop {
            if addrs.len() >= cap {
                break;
            }
            if addrs.len().is_multiple_of(256) && sys::now_ns() > deadline {
                run.timed_out = true;
                break;
            }
            let prot = if addrs.len().is_multiple_of(2) {
                PROT_READ
            } else {
                PROT_READ | PROT_WRITE
            };
            match sys::mmap(0, PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) {
                Ok(a) => addrs.push(a),
                Err(e) => {
                    run.err = e.0;
                    break;
                }
            }
        }
        run.count = addrs.len();
        for &a in &addrs {
            if sys::munmap(a, PAGE).is_err() {
                run.unmap_failures += 1;
            }
        }
        run.after = own_maps().map_or(-1, |n| n as isize);
        if let Ok(a) = sys::mmap_anon(PAGE) {
            run.remap_ok = sys::munmap(a, PAGE).is_ok();
        }
        run.done = true;
        res.set(run);
        0
    }));
    let (st, timed_out) = t!(wait_bounded(pid, 150 * SEC));
    check!(!timed_out, "the mapping child hung: {}", describe(st));
    let run = res.get();
    check!(
        run.done && wifexited(st) && wexitstatus(st) == 0,
        "the mapping child: {}",
        describe(st)
    );
    Ok(run)
}

/// Checks a run against a map-count limit of `limit`.
fn check_map_run(run: &MapRun, limit: usize) -> TestResult {
    println!(
        "# {} new mappings, mmap then {:?}, {} mappings before, limit {limit}",
        run.count,
        Errno(run.err),
        run.before
    );
    check!(
        !run.timed_out,
        "only {} mappings made within the time limit",
        run.count
    );
    check!(
        run.err != 0,
        "mmap still worked after {} mappings (limit {limit})",
        run.count
    );
    check_eq!(Errno(run.err), ENOMEM, "mmap after {} mappings", run.count);
    // Linux refuses a new mapping once the process has `limit` of them.
    let (lo, hi) = if run.before >= 0 {
        let own = run.before as usize;
        (limit.saturating_sub(own + 2), limit.saturating_sub(own) + 2)
    } else {
        (limit.saturating_sub(UNKNOWN_OWN_MAPS), limit)
    };
    check!(
        (lo..=hi).contains(&run.count),
        "ENOMEM after {} mappings, want {lo}..={hi} (limit {limit}, {} already there)",
        run.count,
        run.before
    );
    check_eq!(run.unmap_failures, 0, "munmap failures");
    check_eq!(run.after, run.before, "mappings after unmapping them all");
    check!(run.remap_ok, "mmap after the munmaps failed");
    Ok(())
}

fn mmap_until_max_map_count() -> TestResult {
    let limit = read_num(MAX_MAP_COUNT).unwrap_or(DEFAULT_MAX_MAP_COUNT);
    let run = map_pages_until_failure(limit + 1000)?;
    check_map_run(&run, limit)
}

fn mmap_until_lowered_max_map_count() -> TestResult {
    let old = read_num(MAX_MAP_COUNT);
    check!(
        old.is_some(),
        "{MAX_MAP_COUNT}: {:?}",
        io::read_file(MAX_MAP_COUNT).err()
    );
    let old = old.unwrap_or(DEFAULT_MAX_MAP_COUNT);
    t!(write_text(MAX_MAP_COUNT, "1000\n"));
    let now = read_num(MAX_MAP_COUNT);
    let run = map_pages_until_failure(2000);
    let restored = write_text(MAX_MAP_COUNT, &format!("{old}\n"));
    check_eq!(now, Some(1000), "{MAX_MAP_COUNT} after writing 1000");
    t!(restored);
    check_eq!(read_num(MAX_MAP_COUNT), Some(old), "restored");
    check_map_run(&run?, 1000)
}

/// `running/total` of /proc/loadavg: the total is the number of threads in the system.
fn threads_now() -> Option<usize> {
    let text = io::read_file("/proc/loadavg").ok()?;
    let text = core::str::from_utf8(&text).ok()?;
    let field = text.split_whitespace().nth(3)?;
    field.split('/').nth(1)?.parse().ok()
}

#[derive(Clone, Copy, Default)]
struct ForkRun {
    done: bool,
    count: usize,
    err: i32,
    timed_out: bool,
    threads_before: isize,
    reaped: usize,
}

/// Forks children that block forever until fork fails, `cap` children exist or time runs out;
/// then kills and reaps them. Runs in the calling (child) process.
fn fork_until_failure(cap: usize, res: &Shared<ForkRun>) -> i32 {
    let mut run = ForkRun {
        threads_before: threads_now().map_or(-1, |n| n as isize),
        ..ForkRun::default()
    };
    let Ok([r, _w]) = sys::pipe2(O_CLOEXEC) else {
        return 2;
    };
    let mut pids: Vec<i32> = Vec::with_capacity(cap);
    let deadline = sys::now_ns() + 100 * SEC;
    loop {
        if pids.len() >= cap {
            break;
        }
        if pids.len().is_multiple_of(64) && sys::now_ns() > deadline {
            run.timed_out = true;
            break;
        }
        match sys::fork() {
            Ok(0) => loop {
                // Nothing ever writes the pipe: block until killed.
                let _ = sys::read(r, &mut [0u8; 1]);
                sys::sleep_ns(SEC);
            },
            Ok(pid) => pids.push(pid),
            Err(e) => {
                run.err = e.0;
                break;
            }
        }
    }
    run.count = pids.len();
    for &p in &pids {
        let _ = sys::kill(p, SIGKILL);
    }
    for &p in &pids {
        if sys::waitpid(p, 0).is_ok() {
            run.reaped += 1;
        }
    }
    run.done = true;
    res.set(run);
    0
}

const THREADS_MAX: &str = "/proc/sys/kernel/threads-max";

fn fork_until_eagain() -> TestResult {
    // threads-max lowered (root may, down to 20) to a few hundred above the threads there are:
    // the limit is then reached in seconds however slowly the machine forks (a board model
    // made thousands of forks outlast the time limit), and restored before any check.
    let original = read_num(THREADS_MAX);
    let lowered = threads_now().map(|n| (n + 400).max(20));
    let set = lowered.is_some_and(|v| write_text(THREADS_MAX, &format!("{v}\n")).is_ok());
    let threads_max = if set { read_num(THREADS_MAX) } else { original };
    let cap = threads_max.unwrap_or(8000) + 1000;
    let res = Shared::new(ForkRun::default());
    let pid = t!(spawn(|| {
        // Its own process group: the deadline below kills every fork with it.
        let _ = sys::setpgid(0, 0);
        fork_until_failure(cap, &res)
    }));
    let (st, timed_out) = t!(wait_bounded(pid, 150 * SEC));
    if let (true, Some(o)) = (set, original) {
        let _ = write_text(THREADS_MAX, &format!("{o}\n"));
    }
    check_eq!(read_num(THREADS_MAX), original, "threads-max restored");
    let run = res.get();
    check!(
        !timed_out && run.done && wifexited(st) && wexitstatus(st) == 0,
        "the forking child: {}{}",
        describe(st),
        if timed_out { ", timed out" } else { "" }
    );
    println!(
        "# {} forks, then {:?}; threads-max {threads_max:?}, {} threads before",
        run.count,
        Errno(run.err),
        run.threads_before
    );
    check!(
        !run.timed_out,
        "only {} forks within the time limit",
        run.count
    );
    check!(
        run.err != 0,
        "fork still worked after {} children",
        run.count
    );
    check_eq!(Errno(run.err), EAGAIN, "fork after {} children", run.count);
    check!(run.count > 100, "only {} forks", run.count);
    check_eq!(run.reaped, run.count, "children reaped");
    if let (Some(max), true) = (threads_max, run.threads_before > 0) {
        // Linux refuses a new task once the system has threads-max of them.
        let want = max.saturating_sub(run.threads_before as usize);
        check!(
            run.count.abs_diff(want) <= 32,
            "{} forks, want about {want} (threads-max {max} less {} threads)",
            run.count,
            run.threads_before
        );
    }
    // And fork works again.
    let st = t!(proc::in_child(|| 0));
    check_eq!(st, 0, "fork afterwards: {}", describe(st));
    Ok(())
}

const NOBODY: u32 = 65534;
const NPROC: u64 = 20;

/// RLIMIT_NPROC counts the processes of the real user, whoever their parent: `others` processes
/// of that user made before leave that many fewer forks.
fn nproc_run(others: usize) -> Result<ForkRun, String> {
    let res = Shared::new(ForkRun::default());
    let pid = t!(spawn(|| {
        let _ = sys::setpgid(0, 0);
        let mut helpers = Vec::new();
        for _ in 0..others {
            match spawn(|| {
                if sys::setuid(NOBODY).is_err() {
                    return 3;
                }
                loop {
                    sys::sleep_ns(10 * SEC);
                }
            }) {
                Ok(p) => helpers.push(p),
                Err(_) => return 4,
            }
        }
        // Let the helpers change user before counting.
        sys::sleep_ns(200_000_000);
        let lim = Rlimit {
            cur: NPROC,
            max: NPROC,
        };
        if sys::setrlimit(RLIMIT_NPROC, &lim).is_err() {
            return 5;
        }
        // Root is exempt from RLIMIT_NPROC: become nobody (real, effective and saved uid).
        if sys::setuid(NOBODY).is_err() || sys::getuid() != NOBODY {
            return 6;
        }
        let st = fork_until_failure(200, &res);
        for &p in &helpers {
            let _ = sys::kill(p, SIGKILL);
            let _ = sys::waitpid(p, 0);
        }
        st
    }));
    let (st, timed_out) = t!(wait_bounded(pid, 30 * SEC));
    let run = res.get();
    check!(
        !timed_out && run.done && wifexited(st) && wexitstatus(st) == 0,
        "the forking child: {}{}",
        describe(st),
        if timed_out { ", timed out" } else { "" }
    );
    println!(
        "# RLIMIT_NPROC {NPROC}, {others} other processes of uid {NOBODY}: {} forks, then {:?}",
        run.count,
        Errno(run.err)
    );
    check_eq!(Errno(run.err), EAGAIN, "fork after {} children", run.count);
    check_eq!(run.reaped, run.count, "children reaped");
    Ok(run)
}

fn rlimit_nproc_per_user() -> TestResult {
    // The forking process counts itself: with the limit at 20 it may make 19 children.
    let run = nproc_run(0)?;
    check_eq!(run.count, NPROC as usize - 1, "forks under RLIMIT_NPROC");
    let run = nproc_run(5)?;
    check_eq!(
        run.count,
        NPROC as usize - 1 - 5,
        "forks with 5 other processes of the user"
    );
    Ok(())
}

/// The "VmLck:" figure of /proc/self/status, in kB.
fn vmlck_kb() -> Option<usize> {
    let text = io::read_file("/proc/self/status").ok()?;
    let text = core::str::from_utf8(&text).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmLck:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// mlock as Linux has it: root locks what it likes; another user within RLIMIT_MEMLOCK
/// (ENOMEM beyond it, EPERM when it is 0); the locked amount shows as VmLck.
fn rlimit_memlock() -> TestResult {
    let st = t!(proc::in_child(|| {
        let run = || -> Result<(), String> {
            let a = t!(sys::mmap_anon(64 * PAGE));
            t!(sys::mlock(a, 16 * PAGE));
            check_eq!(vmlck_kb(), Some(64), "VmLck after locking 64 KiB");
            // Locking again what is locked adds nothing; munlock gives it back.
            t!(sys::mlock(a, 16 * PAGE));
            check_eq!(vmlck_kb(), Some(64), "VmLck after locking it twice");
            t!(sys::munlock(a, 16 * PAGE));
            check_eq!(vmlck_kb(), Some(0), "VmLck after munlock");
            check_eq!(sys::mlockall(0), Err(EINVAL), "mlockall(0)");
            let hole = t!(sys::mmap_anon(2 * PAGE));
            t!(sys::munmap(hole + PAGE, PAGE));
            // Linux locks the mapping before the hole, then fails.
            check_eq!(sys::mlock(hole, 2 * PAGE), Err(ENOMEM), "mlock over a hole");
            check_eq!(vmlck_kb(), Some(4), "VmLck after mlock up to a hole");
            t!(sys::munmap(hole, PAGE));
            check_eq!(vmlck_kb(), Some(0), "VmLck after unmapping the locked page");
            let lim = Rlimit {
                cur: 8 * PAGE as u64,
                max: 8 * PAGE as u64,
            };
            t!(sys::setrlimit(RLIMIT_MEMLOCK, &lim));
            t!(sys::setuid(NOBODY));
            check_eq!(
                sys::mlock(a, 16 * PAGE),
                Err(ENOMEM),
                "beyond RLIMIT_MEMLOCK"
            );
            t!(sys::mlock(a, 8 * PAGE));
            check_eq!(sys::mlock(a + 8 * PAGE, PAGE), Err(ENOMEM), "one page more");
            t!(sys::munlock(a, 8 * PAGE));
            let zero = Rlimit { cur: 0, max: 0 };
            t!(sys::setrlimit(RLIMIT_MEMLOCK, &zero));
            check_eq!(sys::mlock(a, PAGE), Err(EPERM), "with RLIMIT_MEMLOCK 0");
            Ok(())
        };
        match run() {
            Ok(()) => 0,
            Err(e) => {
                println!("# {e}");
                1
            }
        }
    }));
    check_eq!(st, 0, "the locking child: {}", describe(st));
    Ok(())
}

/// The main thread's stack may grow to RLIMIT_STACK and no further: with a 1 MiB limit set
/// before exec, touching 512 KiB below the stack pointer works and 4 MiB below is SIGSEGV.
fn rlimit_stack() -> TestResult {
    for (depth, want) in [("512", "exited 0"), ("4096", "killed by signal 11")] {
        let st = t!(proc::in_child(|| {
            let lim = Rlimit {
                cur: 1 << 20,
                max: u64::MAX,
            };
            if sys::setrlimit(RLIMIT_STACK, &lim).is_err() {
                return 98;
            }
            let e = sys::execve(
                "/bin/tests/mm_limits",
                &["mm_limits", "--stack-probe", depth],
                &[],
            );
            println!("# execve: {e:?}");
            99
        }));
        check_eq!(
            describe(st),
            want,
            "a touch {depth} KiB below the stack pointer"
        );
    }
    Ok(())
}

/// `--stack-probe KIB`: touch the byte KIB KiB below the stack pointer.
fn stack_probe(kib: usize) -> i32 {
    let sp: usize;
    // SAFETY: reads the stack pointer only.
    unsafe { core::arch::asm!("mov {}, sp", out(reg) sp) };
    let p = (sp - (kib << 10)) as *mut u8;
    // SAFETY: deliberately probing below the stack; a fault is the expected outcome for
    // addresses beyond RLIMIT_STACK.
    unsafe { core::ptr::write_volatile(p, 1) };
    0
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--stack-probe") {
        return stack_probe(a.arg(2).and_then(|s| s.parse().ok()).unwrap_or(0));
    }
    ktap::run(&[
        ("rlimit_memlock", rlimit_memlock),
        ("rlimit_stack", rlimit_stack),
        ("mmap_until_max_map_count", mmap_until_max_map_count),
        (
            "mmap_until_lowered_max_map_count",
            mmap_until_lowered_max_map_count,
        ),
        ("fork_until_eagain", fork_until_eagain),
        ("rlimit_nproc_per_user", rlimit_nproc_per_user),
    ])
}

entry!(main);
