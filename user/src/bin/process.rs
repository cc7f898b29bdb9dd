//! Processes: fork (private copies), vfork (shared memory, parent waits), execve and its errors,
//! exit vs exit_group, wait4/waitid statuses (exit code, signal, core dump, WNOHANG, ECHILD),
//! and the pid getters.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

extern crate alloc;
use alloc::vec::Vec;

const SELF: &str = "/bin/tests/process";

fn pids() -> TestResult {
    let pid = sys::getpid();
    check!(pid > 0);
    check_eq!(sys::gettid(), pid, "main thread's tid is the pid");
    let ppid = sys::getppid();
    check!(ppid >= 0 && ppid != pid, "ppid {ppid}");
    let shared = Shared::new([0i32; 2]);
    let child = t!(spawn(|| {
        shared.set([sys::getpid(), sys::getppid()]);
        0
    }));
    let (waited, st) = t!(sys::waitpid(child, 0));
    check_eq!(waited, child);
    check_eq!(st, 0);
    check_eq!(shared.get(), [child, pid], "child's getpid and getppid");
    Ok(())
}

fn fork_copies_memory() -> TestResult {
    static mut VALUE: u64 = 1;
    let v = core::ptr::addr_of_mut!(VALUE);
    // SAFETY: single-threaded; the child has its own copy after fork.
    unsafe { v.write_volatile(5) };
    let st = t!(in_child(|| {
        // SAFETY: as above.
        unsafe {
            if v.read_volatile() != 5 {
                return 1;
            }
            v.write_volatile(6);
            i32::from(v.read_volatile() != 6) * 2
        }
    }));
    check_eq!(describe(st), "exited 0");
    // SAFETY: as above.
    check_eq!(
        unsafe { v.read_volatile() },
        5,
        "child's write leaked into the parent"
    );
    Ok(())
}

fn vfork_shares_memory_and_waits() -> TestResult {
    let mut word: u64 = 0;
    let pid = t!(vfork_store(&mut word, 0x1234_5678_9abc, 9));
    // The parent resumes only after the child has exited; its store is visible (CLONE_VM).
    // SAFETY: word is a live local; volatile so the compiler rereads what the child wrote.
    check_eq!(unsafe { core::ptr::read_volatile(&word) }, 0x1234_5678_9abc);
    let (_, st) = t!(sys::waitpid(pid, 0));
    check_eq!(describe(st), "exited 9");
    Ok(())
}

fn vfork_then_execve() -> TestResult {
    let path = b"/bin/tests/process\0";
    let a0 = b"process\0";
    let a1 = b"--exit\0";
    let a2 = b"23\0";
    let argv = [
        a0.as_ptr() as usize,
        a1.as_ptr() as usize,
        a2.as_ptr() as usize,
        0,
    ];
    let envp = [0usize];
    let pid = t!(vfork_exec(
        path.as_ptr() as usize,
        argv.as_ptr() as usize,
        envp.as_ptr() as usize
    ));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check_eq!(describe(st), "exited 23");
    Ok(())
}

fn execve_errors() -> TestResult {
    // A failed execve returns to the caller with the process intact.
    check_eq!(sys::execve("/no/such/file", &["x"], &[]), ENOENT);
    check_eq!(sys::execve("/bin/tests/nope", &["x"], &[]), ENOENT);
    check_eq!(
        sys::execve("/bin/tests", &["x"], &[]),
        EACCES,
        "a directory"
    );
    let path = "/tmp/process-data";
    let _ = sys::unlinkat(AT_FDCWD, path, 0);
    let fd = t!(sys::openat(
        AT_FDCWD,
        path,
        O_WRONLY | O_CREAT | O_TRUNC,
        0o644
    ));
    t!(sys::write(fd, b"just some text, not an executable\n"));
    t!(sys::close(fd));
    check_eq!(
        sys::execve(path, &["x"], &[]),
        EACCES,
        "no execute permission"
    );
    let fd = t!(sys::openat(
        AT_FDCWD,
        "/tmp/process-data-x",
        O_WRONLY | O_CREAT | O_TRUNC,
        0o755
    ));
    t!(sys::write(fd, b"\x01\x02\x03\x04 not ELF, no #!\n"));
    t!(sys::close(fd));
    check_eq!(
        sys::execve("/tmp/process-data-x", &["x"], &[]),
        ENOEXEC,
        "executable bit but unknown format"
    );
    let _ = sys::unlinkat(AT_FDCWD, path, 0);
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/process-data-x", 0);
    Ok(())
}

fn execve_replaces_image() -> TestResult {
    let st = t!(in_child(|| {
        let e = sys::execve(SELF, &["process", "--exit", "77"], &["A=1"]);
        eprintln!("# execve: {e:?}");
        1
    }));
    check_eq!(describe(st), "exited 77");
    Ok(())
}

fn exit_statuses() -> TestResult {
    let st = t!(in_child(|| 42));
    check!(
        wifexited(st) && wexitstatus(st) == 42 && st == 42 << 8,
        "{st:#x}"
    );
    // Only the low 8 bits of the code survive.
    let st = t!(in_child(|| 0x1ff));
    check_eq!(wexitstatus(st), 0xff);
    let st = t!(in_child(|| {
        sys::exit(3);
    }));
    check_eq!(
        describe(st),
        "exited 3",
        "SYS_exit in a single-threaded process"
    );
    Ok(())
}

static STARTED: AtomicU32 = AtomicU32::new(0);

extern "C" fn thread_exit_group(code: usize) -> i32 {
    STARTED.store(1, Ordering::SeqCst);
    sys::exit_group(code as i32)
}

extern "C" fn thread_wait_then_exit_group(code: usize) -> i32 {
    sys::sleep_ns(50_000_000);
    sys::exit_group(code as i32)
}

fn exit_vs_exit_group_with_threads() -> TestResult {
    // exit_group from a thread ends the whole process with its code.
    let st = t!(in_child(|| {
        if spawn_thread(thread_exit_group, 31, 0).is_err() {
            return 1;
        }
        loop {
            sys::sleep_ns(1_000_000_000);
        }
    }));
    check_eq!(describe(st), "exited 31");
    // SYS_exit from the main thread ends only that thread: the process lives on until the
    // other thread's exit_group.
    let st = t!(in_child(|| {
        if spawn_thread(thread_wait_then_exit_group, 32, 0).is_err() {
            return 1;
        }
        sys::exit(5)
    }));
    check_eq!(describe(st), "exited 32");
    Ok(())
}

fn killed_by_signal() -> TestResult {
    let pid = t!(spawn(|| loop {
        sys::sleep_ns(1_000_000_000);
    }));
    t!(sys::kill(pid, SIGKILL));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGKILL && !wcoredump(st),
        "{}",
        describe(st)
    );
    check_eq!(st, 9);
    Ok(())
}

fn core_dump_bit() -> TestResult {
    // A core-dumping signal's default action sets the 0x80 bit only when a core file was
    // written: allow one (RLIMIT_CORE) in a writable directory.
    let st = t!(in_child(|| {
        let lim = Rlimit {
            cur: RLIM_INFINITY,
            max: RLIM_INFINITY,
        };
        let _ = sys::syscall(nr::PRLIMIT64, &[0, 4, &lim as *const Rlimit as usize, 0]);
        let _ = sys::chdir("/tmp");
        let _ = sys::kill(sys::getpid(), SIGQUIT);
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGQUIT && wcoredump(st),
        "SIGQUIT with RLIMIT_CORE unlimited: {}",
        describe(st)
    );
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/core", 0);
    let mut lim = Rlimit::default();
    t!(sys::syscall(
        nr::PRLIMIT64,
        &[0, 4, 0, &mut lim as *mut Rlimit as usize]
    ));
    println!("# default RLIMIT_CORE {:#x} {:#x}", lim.cur, lim.max);
    // SIGSEGV's default action dumps core too.
    let st = t!(in_child(|| {
        let lim = Rlimit {
            cur: RLIM_INFINITY,
            max: RLIM_INFINITY,
        };
        let _ = sys::syscall(nr::PRLIMIT64, &[0, 4, &lim as *const Rlimit as usize, 0]);
        let _ = sys::chdir("/tmp");
        let _ = sys::kill(sys::getpid(), SIGSEGV);
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGSEGV && wcoredump(st),
        "{}",
        describe(st)
    );
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/core", 0);
    // With RLIMIT_CORE 0 no core is written and the bit is clear.
    let st = t!(in_child(|| {
        let lim = Rlimit { cur: 0, max: 0 };
        let _ = sys::syscall(nr::PRLIMIT64, &[0, 4, &lim as *const Rlimit as usize, 0]);
        let _ = sys::kill(sys::getpid(), SIGABRT);
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGABRT,
        "{}",
        describe(st)
    );
    check!(!wcoredump(st), "core bit without a core: {}", describe(st));
    Ok(())
}

fn wnohang_and_echild() -> TestResult {
    let pid = t!(spawn(|| {
        sys::sleep_ns(200_000_000);
        4
    }));
    check_eq!(
        sys::waitpid(pid, WNOHANG),
        Ok((0, 0)),
        "WNOHANG while running"
    );
    check_eq!(sys::waitpid(pid + 100_000, 0), Err(ECHILD), "not our child");
    let (p, st) = t!(sys::waitpid(-1, 0));
    check_eq!(p, pid);
    check_eq!(describe(st), "exited 4");
    check_eq!(sys::waitpid(-1, 0), Err(ECHILD), "no children left");
    check_eq!(sys::waitpid(-1, WNOHANG), Err(ECHILD));
    check_eq!(sys::waitpid(0, 0), Err(ECHILD));
    Ok(())
}

fn waitid(idtype: u32, id: i32, options: u32) -> SysResult<SigInfo> {
    let mut info = SigInfo::zeroed();
    sys::syscall(
        nr::WAITID,
        &[
            idtype as usize,
            id as usize,
            &mut info as *mut SigInfo as usize,
            options as usize,
            0,
        ],
    )?;
    Ok(info)
}

fn waitid_siginfo() -> TestResult {
    let pid = t!(spawn(|| 12));
    let info = t!(waitid(P_PID, pid, WEXITED));
    check_eq!(info.signo, SIGCHLD);
    check_eq!(info.code, CLD_EXITED);
    check_eq!(info.pid(), pid);
    check_eq!(info.uid(), 0);
    check_eq!(info.status(), 12);

    let pid = t!(spawn(|| loop {
        sys::sleep_ns(1_000_000_000);
    }));
    // WNOHANG with nothing to report: 0 and si_pid 0.
    let info = t!(waitid(P_PID, pid, WEXITED | WNOHANG));
    check_eq!(info.pid(), 0);
    t!(sys::kill(pid, SIGTERM));
    // WNOWAIT leaves the child waitable.
    let info = t!(waitid(P_ALL, 0, WEXITED | WNOWAIT));
    check_eq!(
        (info.code, info.status(), info.pid()),
        (CLD_KILLED, SIGTERM, pid)
    );
    let info = t!(waitid(P_PID, pid, WEXITED));
    check_eq!(
        (info.code, info.status(), info.pid()),
        (CLD_KILLED, SIGTERM, pid)
    );
    check_eq!(waitid(P_ALL, 0, WEXITED).map(|i| i.pid()), Err(ECHILD));
    check_eq!(
        waitid(P_ALL, 0, 0).map(|i| i.pid()),
        Err(EINVAL),
        "no event selected"
    );
    Ok(())
}

/// A child that has exited but is not yet reaped still has its pid: signals to it (or to a
/// group holding only it) succeed and go nowhere, and its group and session can be read. Once
/// reaped, the pid is gone (ESRCH).
fn zombies_keep_their_pid_until_reaped() -> TestResult {
    let pid = t!(spawn(|| {
        let _ = sys::setpgid(0, 0);
        5
    }));
    let _ = sys::setpgid(pid, pid);
    // Returns once the child is a zombie, leaving it one.
    let info = t!(waitid(P_PID, pid, WEXITED | WNOWAIT));
    check_eq!((info.pid(), info.status()), (pid, 5));
    check_eq!(sys::kill(pid, 0), Ok(0), "kill(zombie, 0)");
    check_eq!(sys::kill(pid, SIGKILL), Ok(0), "kill(zombie, SIGKILL)");
    check_eq!(sys::kill(-pid, 0), Ok(0), "kill(-group of a zombie, 0)");
    check_eq!(sys::getpgid(pid), Ok(pid), "getpgid(zombie)");
    check_eq!(
        sys::syscall(nr::GETSID, &[pid as usize]),
        sys::syscall(nr::GETSID, &[0]),
        "getsid(zombie)"
    );
    // SIGKILL changed nothing: it still exited with 5.
    let (p, st) = t!(sys::waitpid(pid, 0));
    check_eq!(p, pid);
    check_eq!(describe(st), "exited 5");
    check_eq!(sys::kill(pid, 0), Err(ESRCH), "kill(reaped, 0)");
    check_eq!(sys::kill(-pid, 0), Err(ESRCH), "kill(-reaped group, 0)");
    check_eq!(sys::getpgid(pid), Err(ESRCH), "getpgid(reaped)");
    Ok(())
}

/// Asks for `pid` in the ways that must find it until it is reaped: kill(pid, 0), getpgid,
/// getsid and (every `full`) pidfd_open. Returns how many answered ESRCH.
fn probe(pid: i32, full: bool) -> u32 {
    let mut esrch = u32::from(sys::kill(pid, 0) == Err(ESRCH));
    esrch += u32::from(sys::getpgid(pid) == Err(ESRCH));
    esrch += u32::from(sys::syscall(nr::GETSID, &[pid as usize]) == Err(ESRCH));
    if full {
        match sys::syscall(nr::PIDFD_OPEN, &[pid as usize, 0]) {
            Ok(fd) => {
                let _ = sys::close(fd as i32);
            }
            Err(e) => esrch += u32::from(e == ESRCH),
        }
    }
    esrch
}

/// A process that is dying is found until it is reaped, with no moment in between: not while
/// its last thread has left and it is not yet a zombie, nor while its own zombie children move
/// to their new parent. Each round forks a child that makes a zombie grandchild and exits at
/// once, while this process asks for both pids without pause until it has reaped the child.
/// Linux never answers ESRCH here.
fn dying_pids_never_vanish_before_reaped() -> TestResult {
    const ROUNDS: u32 = 1500;
    const BUDGET_NS: u64 = 1_500_000_000;
    let grandchild = Shared::new(0i32);
    let mut grandchildren = Vec::new();
    let (mut esrch_child, mut esrch_grandchild, mut probes, mut rounds) = (0u32, 0u32, 0u32, 0);
    let start = sys::now_ns();
    while rounds < ROUNDS && sys::now_ns() - start < BUDGET_NS {
        grandchild.set(0);
        let child = t!(spawn(|| {
            let Ok(g) = spawn(|| 0) else { return 1 };
            // A zombie before this process exits, so its exit moves a zombie.
            if waitid(P_PID, g, WEXITED | WNOWAIT).is_err() {
                return 2;
            }
            grandchild.set(g);
            0
        }));
        let mut reaped = None;
        let mut g = 0;
        let mut i = 0u32;
        while reaped.is_none() {
            esrch_child += probe(child, i.is_multiple_of(8));
            if g == 0 {
                g = grandchild.get();
            }
            if g != 0 {
                // Nobody reaps the grandchild during the test: not its first parent (which
                // exits), nor its new one (init: this process, or the runner after the test).
                esrch_grandchild += probe(g, i.is_multiple_of(8));
            }
            probes += 1;
            i += 1;
            match t!(sys::waitpid(child, WNOHANG)) {
                (0, _) => {}
                (_, st) => reaped = Some(st),
            }
        }
        check_eq!(reaped, Some(0), "round {rounds}: child's status");
        g = grandchild.get();
        check!(g > 0, "round {rounds}: no grandchild pid");
        esrch_grandchild += probe(g, true);
        grandchildren.push(g);
        rounds += 1;
    }
    check_eq!(
        sys::kill(grandchildren[0] - 1, 0),
        Err(ESRCH),
        "a reaped child"
    );
    // As init this process is the orphans' new parent: reap them (the runner does otherwise).
    if sys::getpid() == 1 {
        for g in grandchildren {
            t!(sys::waitpid(g, 0));
        }
    }
    println!(
        "# dying pids: {rounds} rounds, {probes} probe passes in {} ms",
        (sys::now_ns() - start) / 1_000_000
    );
    check!(rounds >= 20, "only {rounds} rounds");
    check_eq!(
        (esrch_child, esrch_grandchild),
        (0, 0),
        "ESRCH for a dying child, for a moving zombie grandchild"
    );
    Ok(())
}

fn orphans_are_reparented() -> TestResult {
    // A grandchild whose parent exited gets a new parent (init or a subreaper), not our pid.
    let me = sys::getpid();
    let shared = Shared::new(0i32);
    let st = t!(in_child(|| {
        match sys::fork() {
            Ok(0) => {
                sys::sleep_ns(100_000_000);
                shared.set(sys::getppid());
                sys::exit_group(0)
            }
            Ok(_) => 0,
            Err(_) => 1,
        }
    }));
    check_eq!(st, 0);
    let mut waited = 0;
    while shared.get() == 0 && waited < 50 {
        sys::sleep_ns(20_000_000);
        waited += 1;
    }
    let pp = shared.get();
    check!(pp != 0 && pp != me, "orphan's parent is {pp}");
    Ok(())
}

/// A fork whose CLONE_PARENT_SETTID (or CLONE_CHILD_SETTID) pointer is bad still makes the
/// child: the store's fault is ignored (Linux's kernel_clone and schedule_tail), the caller gets
/// the pid and the child runs and is reaped as any other.
fn clone_settid_fault_is_ignored() -> TestResult {
    for flags in [sys::CLONE_PARENT_SETTID, sys::CLONE_CHILD_SETTID] {
        // SIGCHLD as the exit signal; arm64's clone(flags, sp, parent_tid, tls, child_tid).
        let pid = t!(sys::syscall(nr::CLONE, &[17 | flags, 0, 8, 0, 8])) as i32;
        if pid == 0 {
            sys::exit(7);
        }
        let (_, st) = t!(sys::waitpid(pid, 0));
        check_eq!(describe(st), "exited 7", "clone flags {flags:#x}");
    }
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--exit") {
        return a.arg(2).and_then(|s| s.parse().ok()).unwrap_or(99);
    }
    ktap::run(&[
        ("getpid_gettid_getppid", pids),
        ("fork_copies_memory", fork_copies_memory),
        (
            "vfork_shares_memory_and_waits",
            vfork_shares_memory_and_waits,
        ),
        ("vfork_then_execve", vfork_then_execve),
        ("execve_replaces_image", execve_replaces_image),
        ("execve_errors", execve_errors),
        ("exit_statuses", exit_statuses),
        (
            "exit_vs_exit_group_with_threads",
            exit_vs_exit_group_with_threads,
        ),
        ("wait_killed_by_signal", killed_by_signal),
        ("wait_core_dump_bit", core_dump_bit),
        ("wait_wnohang_and_echild", wnohang_and_echild),
        ("waitid_siginfo", waitid_siginfo),
        (
            "clone_settid_fault_is_ignored",
            clone_settid_fault_is_ignored,
        ),
        ("orphans_are_reparented", orphans_are_reparented),
        (
            "zombies_keep_their_pid_until_reaped",
            zombies_keep_their_pid_until_reaped,
        ),
        (
            "dying_pids_never_vanish_before_reaped",
            dying_pids_never_vanish_before_reaped,
        ),
    ])
}

entry!(main);
