//! seccomp: strict mode, every filter action (ERRNO, TRAP, KILL_PROCESS, KILL_THREAD, LOG,
//! ALLOW, TRACE and USER_NOTIF without a tracer or listener), stacked filters' precedence,
//! inheritance over fork and execve, the no_new_privs rule, TSYNC, the validator's EINVAL
//! matrix and instruction budget, GET_ACTION_AVAIL, and random programs. Each case runs in a
//! child: a filter cannot be removed.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use svelt_abi::uapi::bpf::*;
use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::{self, SigInfo, SIGSYS};
use svelt_user::sys::*;
use svelt_user::*;

const SELF: &str = "/bin/tests/seccomp";
const NR_SECCOMP: usize = 277;
const PR_GET_SECCOMP: usize = 21;
const PR_SET_SECCOMP: usize = 22;
const PR_SET_NO_NEW_PRIVS: usize = 38;
const PR_GET_NO_NEW_PRIVS: usize = 39;
const RLIMIT_CORE: u32 = 4;

/// `struct sock_fprog`.
#[repr(C)]
struct Fprog {
    len: u16,
    filter: *const SockFilter,
}

fn seccomp(op: u32, flags: u32, args: usize) -> SysResult {
    sys::syscall(NR_SECCOMP, &[op as usize, flags as usize, args])
}

fn install(prog: &[SockFilter], flags: u32) -> SysResult {
    let fp = Fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr(),
    };
    seccomp(SECCOMP_SET_MODE_FILTER, flags, &fp as *const Fprog as usize)
}

fn prctl(op: usize, a2: usize, a3: usize) -> SysResult {
    sys::syscall(nr::PRCTL, &[op, a2, a3, 0, 0])
}

fn no_new_privs() -> SysResult {
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0)
}

/// `ret` for syscall `nr`, ALLOW for the rest.
fn on(nr: usize, ret: u32) -> Vec<SockFilter> {
    vec![
        SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, 0),
        SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, nr as u32, 0, 1),
        SockFilter::stmt(BPF_RET | BPF_K, ret),
        SockFilter::stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    ]
}

fn always(ret: u32) -> Vec<SockFilter> {
    vec![SockFilter::stmt(BPF_RET | BPF_K, ret)]
}

/// Runs `f` in a child (bounded); a failure's message is printed there and the child exits 1.
fn child(f: impl FnOnce() -> TestResult) -> SysResult<i32> {
    let (st, timed_out) = in_child_bounded(
        || match f() {
            Ok(()) => 0,
            Err(m) => {
                eprintln!("# {m}");
                1
            }
        },
        30_000_000_000,
    )?;
    if timed_out {
        eprintln!("# child timed out");
    }
    Ok(st)
}

macro_rules! child_ok {
    ($f:expr) => {{
        let st = t!(child($f));
        check!(st == 0, "child: {}", describe(st));
    }};
}

fn no_core() {
    let _ = sys::setrlimit(RLIMIT_CORE, &Rlimit { cur: 0, max: 0 });
}

fn prctl_values() -> TestResult {
    child_ok!(|| {
        check_eq!(prctl(PR_GET_SECCOMP, 0, 0), Ok(0));
        check_eq!(prctl(PR_GET_NO_NEW_PRIVS, 0, 0), Ok(0));
        check_eq!(prctl(PR_SET_NO_NEW_PRIVS, 2, 0), Err(EINVAL));
        check_eq!(prctl(PR_SET_NO_NEW_PRIVS, 1, 1), Err(EINVAL));
        check_eq!(prctl(PR_GET_NO_NEW_PRIVS, 1, 0), Err(EINVAL));
        check_eq!(prctl(PR_SET_SECCOMP, 3, 0), Err(EINVAL));
        check_eq!(no_new_privs(), Ok(0));
        check_eq!(prctl(PR_GET_NO_NEW_PRIVS, 0, 0), Ok(1));
        let allow = always(SECCOMP_RET_ALLOW);
        let fp = Fprog {
            len: 1,
            filter: allow.as_ptr(),
        };
        check_eq!(
            prctl(PR_SET_SECCOMP, 2, &fp as *const Fprog as usize),
            Ok(0)
        );
        check_eq!(prctl(PR_GET_SECCOMP, 0, 0), Ok(2));
        // Filter mode cannot become strict.
        check_eq!(seccomp(SECCOMP_SET_MODE_STRICT, 0, 0), Err(EINVAL));
        check_eq!(prctl(PR_SET_SECCOMP, 1, 0), Err(EINVAL));
        Ok(())
    });
    Ok(())
}

/// /proc/self/status reports the state (with /proc mounted here if the init did not).
fn proc_status() -> TestResult {
    if sys::stat("/proc/self/status").is_err() {
        t!(sys::mount("proc", "/proc", "proc", 0));
    }
    child_ok!(|| {
        let before = t!(io::read_file("/proc/self/status"));
        let before = alloc::string::String::from_utf8_lossy(&before).into_owned();
        check!(
            before.contains("NoNewPrivs:\t0\n") && before.contains("Seccomp:\t0\n"),
            "{before}"
        );
        t!(no_new_privs());
        t!(install(&always(SECCOMP_RET_ALLOW), 0));
        t!(install(&always(SECCOMP_RET_LOG), 0));
        let after = t!(io::read_file("/proc/self/status"));
        let after = alloc::string::String::from_utf8_lossy(&after).into_owned();
        for line in ["NoNewPrivs:\t1\n", "Seccomp:\t2\n", "Seccomp_filters:\t2\n"] {
            check!(after.contains(line), "no {line:?} in {after}");
        }
        Ok(())
    });
    Ok(())
}

fn strict_mode() -> TestResult {
    check_eq!(seccomp(SECCOMP_SET_MODE_STRICT, 1, 0), Err(EINVAL));
    check_eq!(seccomp(SECCOMP_SET_MODE_STRICT, 0, 8), Err(EINVAL));
    check_eq!(prctl(PR_GET_SECCOMP, 0, 0), Ok(0));
    let [r, w] = t!(sys::pipe2(0));
    // write works, getpid kills the thread with SIGKILL. No allocation after entering: brk
    // and mmap are not allowed either.
    let pid = t!(spawn(|| {
        if seccomp(SECCOMP_SET_MODE_STRICT, 0, 0) != Ok(0) {
            sys::exit(2);
        }
        if sys::write(w, b"ok") != Ok(2) {
            sys::exit(3);
        }
        sys::getpid();
        sys::exit(4)
    }));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check_eq!(st, sig::SIGKILL, "{}", describe(st));
    let mut buf = [0u8; 4];
    check_eq!(sys::read(r, &mut buf), Ok(2));
    check_eq!(&buf[..2], b"ok");
    // exit (not exit_group) is allowed; through prctl too.
    let pid = t!(spawn(|| {
        if prctl(PR_SET_SECCOMP, 1, 0) != Ok(0) {
            sys::exit(2);
        }
        sys::exit(7)
    }));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check_eq!(st, 7 << 8, "{}", describe(st));
    // exit_group is not.
    let st = t!(in_child(|| {
        let _ = seccomp(SECCOMP_SET_MODE_STRICT, 0, 0);
        0
    }));
    check_eq!(st, sig::SIGKILL, "{}", describe(st));
    let _ = sys::close(r);
    let _ = sys::close(w);
    Ok(())
}

fn errno_action() -> TestResult {
    child_ok!(|| {
        t!(no_new_privs());
        t!(install(&on(nr::GETPPID, SECCOMP_RET_ERRNO | 42), 0));
        t!(install(&on(nr::GETUID, SECCOMP_RET_ERRNO | 0xffff), 0));
        t!(install(&on(nr::GETTID, SECCOMP_RET_ERRNO), 0));
        check_eq!(sys::syscall(nr::GETPPID, &[]), Err(Errno(42)));
        // The data is capped at MAX_ERRNO.
        check_eq!(sys::syscall(nr::GETUID, &[]), Err(Errno(4095)));
        // ERRNO with 0 skips the call and returns 0.
        check_eq!(sys::syscall(nr::GETTID, &[]), Ok(0));
        check!(sys::getpid() > 0);
        Ok(())
    });
    Ok(())
}

static TRAP_INFO: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

extern "C" fn on_sigsys(signo: i32, info: *mut SigInfo, uc: *mut u8) {
    // SAFETY: the kernel passes a valid siginfo and ucontext to an SA_SIGINFO handler.
    let (i, ucx) = unsafe { (&*info, sig::Ucontext(uc)) };
    let v = [
        signo as u64,
        i.errno as u64,
        i.code as u64,
        i.fields[0],
        i.fields[1],
        ucx.reg(0),
        ucx.reg(8),
        ucx.pc(),
    ];
    for (s, v) in TRAP_INFO.iter().zip(v) {
        s.store(v, SeqCst);
    }
    // Emulate the call: its result is what the handler leaves in x0.
    ucx.write_u64(sig::uc::REGS, 777);
}

/// getppid with x0 = 0x55, x1 = 0x66; returns (x0 after, address of the svc).
fn traced_getppid() -> (isize, u64) {
    let ret: isize;
    let pc: u64;
    // SAFETY: a plain syscall; x0 and x1 are its arguments and x0 its result.
    unsafe {
        core::arch::asm!(
            "adr {pc}, 2f",
            "2: svc #0",
            pc = out(reg) pc,
            inlateout("x0") 0x55isize => ret,
            in("x1") 0x66usize,
            in("x8") nr::GETPPID,
            options(nostack)
        );
    }
    (ret, pc)
}

fn trap_action() -> TestResult {
    child_ok!(|| {
        t!(sig::set_handler(SIGSYS, on_sigsys, 0, 0));
        t!(no_new_privs());
        t!(install(&on(nr::GETPPID, SECCOMP_RET_TRAP | 0x1234), 0));
        let (ret, pc) = traced_getppid();
        check_eq!(ret, 777, "the handler's x0 is the call's result");
        let got: Vec<u64> = TRAP_INFO.iter().map(|a| a.load(SeqCst)).collect();
        check_eq!(got[0], SIGSYS as u64, "si_signo");
        check_eq!(got[1], 0x1234, "si_errno = the action's data");
        check_eq!(got[2], 1, "si_code = SYS_SECCOMP");
        check_eq!(got[3], pc + 4, "si_call_addr = after the svc");
        check_eq!(got[4] as u32, nr::GETPPID as u32, "si_syscall");
        check_eq!((got[4] >> 32) as u32, AUDIT_ARCH_AARCH64, "si_arch");
        check_eq!(got[5], 0x55, "x0 in the handler is the argument");
        check_eq!(got[6], nr::GETPPID as u64, "x8");
        check_eq!(got[7], pc + 4, "pc");
        Ok(())
    });
    // With SIGSYS blocked, the forced signal takes the default action.
    let st = t!(in_child(|| {
        no_core();
        let _ = sig::sigprocmask(sig::SIG_BLOCK, Some(sig::bit(SIGSYS)));
        let _ = no_new_privs();
        let _ = install(&on(nr::GETPPID, SECCOMP_RET_TRAP), 0);
        sys::getppid();
        3
    }));
    check_eq!(st, SIGSYS, "{}", describe(st));
    Ok(())
}

extern "C" fn call_getppid(_: usize) -> i32 {
    sys::getppid();
    sys::exit(5)
}

fn kill_actions() -> TestResult {
    for action in [
        SECCOMP_RET_KILL_PROCESS,
        SECCOMP_RET_KILL_THREAD,
        0x0001_0000,
    ] {
        let st = t!(in_child(|| {
            no_core();
            // A handler does not help.
            let _ = sig::set_handler(SIGSYS, on_sigsys, 0, 0);
            let _ = no_new_privs();
            let _ = install(&on(nr::GETPPID, action | 9), 0);
            sys::getppid();
            3
        }));
        check_eq!(st, SIGSYS, "action {:#x}: {}", action, describe(st));
    }
    // KILL_THREAD in one of two threads ends only that thread.
    child_ok!(|| {
        t!(no_new_privs());
        t!(install(&on(nr::GETPPID, SECCOMP_RET_KILL_THREAD), 0));
        let th = t!(spawn_thread(call_getppid, 0, 0));
        th.join();
        check_eq!(prctl(PR_GET_SECCOMP, 0, 0), Ok(2));
        Ok(())
    });
    // KILL_PROCESS in a second thread ends the process.
    let st = t!(in_child(|| {
        no_core();
        let _ = no_new_privs();
        let _ = install(&on(nr::GETPPID, SECCOMP_RET_KILL_PROCESS), 0);
        if let Ok(th) = spawn_thread(call_getppid, 0, 0) {
            th.join();
        }
        3
    }));
    check_eq!(st, SIGSYS, "{}", describe(st));
    Ok(())
}

fn log_allow_trace_notif() -> TestResult {
    let ppid = sys::getpid();
    child_ok!(|| {
        t!(no_new_privs());
        t!(install(&on(nr::GETPPID, SECCOMP_RET_LOG), 0));
        t!(install(&always(SECCOMP_RET_ALLOW), SECCOMP_FILTER_FLAG_LOG));
        check_eq!(sys::getppid(), ppid, "LOG runs the call");
        // No tracer: TRACE fails with ENOSYS; no listener: USER_NOTIF likewise.
        t!(install(&on(nr::GETUID, SECCOMP_RET_TRACE | 3), 0));
        check_eq!(sys::syscall(nr::GETUID, &[]), Err(ENOSYS));
        t!(install(&on(nr::GETEUID, SECCOMP_RET_USER_NOTIF), 0));
        check_eq!(sys::syscall(nr::GETEUID, &[]), Err(ENOSYS));
        check_eq!(sys::getppid(), ppid);
        Ok(())
    });
    Ok(())
}

fn precedence() -> TestResult {
    child_ok!(|| {
        t!(no_new_privs());
        t!(install(&on(nr::GETPPID, SECCOMP_RET_ERRNO | 1), 0));
        t!(install(&always(SECCOMP_RET_LOG), 0));
        check_eq!(
            sys::syscall(nr::GETPPID, &[]),
            Err(Errno(1)),
            "ERRNO over LOG"
        );
        t!(install(&on(nr::GETPPID, SECCOMP_RET_TRACE), 0));
        check_eq!(sys::syscall(nr::GETPPID, &[]), Err(Errno(1)), "over TRACE");
        t!(install(&on(nr::GETPPID, SECCOMP_RET_ERRNO | 2), 0));
        check_eq!(
            sys::syscall(nr::GETPPID, &[]),
            Err(Errno(2)),
            "equal actions: the newest filter's data"
        );
        t!(install(&always(SECCOMP_RET_ALLOW), 0));
        check_eq!(sys::syscall(nr::GETPPID, &[]), Err(Errno(2)));
        Ok(())
    });
    // TRAP beats ERRNO; KILL_PROCESS beats everything (and KILL_THREAD).
    let st = t!(in_child(|| {
        no_core();
        let _ = no_new_privs();
        let _ = install(&on(nr::GETPPID, SECCOMP_RET_KILL_PROCESS), 0);
        let _ = install(&on(nr::GETPPID, SECCOMP_RET_KILL_THREAD), 0);
        let _ = install(&on(nr::GETPPID, SECCOMP_RET_ERRNO | 1), 0);
        let _ = install(&always(SECCOMP_RET_ALLOW), 0);
        sys::getppid();
        3
    }));
    check_eq!(st, SIGSYS, "{}", describe(st));
    child_ok!(|| {
        t!(sig::set_handler(SIGSYS, on_sigsys, 0, 0));
        t!(no_new_privs());
        t!(install(&on(nr::GETPPID, SECCOMP_RET_ERRNO | 1), 0));
        t!(install(&on(nr::GETPPID, SECCOMP_RET_TRAP | 8), 0));
        t!(install(&on(nr::GETPPID, SECCOMP_RET_ERRNO | 1), 0));
        let (ret, _) = traced_getppid();
        check_eq!(ret, 777);
        check_eq!(TRAP_INFO[1].load(SeqCst), 8);
        Ok(())
    });
    Ok(())
}

fn inheritance() -> TestResult {
    child_ok!(|| {
        t!(no_new_privs());
        t!(install(&on(nr::GETPPID, SECCOMP_RET_ERRNO | 33), 0));
        let st = t!(in_child(|| {
            let ok = sys::syscall(nr::GETPPID, &[]) == Err(Errno(33))
                && prctl(PR_GET_SECCOMP, 0, 0) == Ok(2)
                && prctl(PR_GET_NO_NEW_PRIVS, 0, 0) == Ok(1);
            if ok {
                0
            } else {
                1
            }
        }));
        check_eq!(st, 0, "fork: {}", describe(st));
        let st = t!(in_child(|| {
            let e = sys::execve(SELF, &["seccomp", "--probe"], &[]);
            eprintln!("# execve: {e:?}");
            9
        }));
        check_eq!(st, 0, "execve: {}", describe(st));
        Ok(())
    });
    Ok(())
}

/// After execve in `inheritance`: the filter and no_new_privs are still there.
fn probe() -> i32 {
    if sys::syscall(nr::GETPPID, &[]) != Err(Errno(33)) {
        return 2;
    }
    if prctl(PR_GET_SECCOMP, 0, 0) != Ok(2) || prctl(PR_GET_NO_NEW_PRIVS, 0, 0) != Ok(1) {
        return 3;
    }
    0
}

fn no_new_privs_rule() -> TestResult {
    child_ok!(|| {
        // Root may install without no_new_privs.
        t!(install(&always(SECCOMP_RET_ALLOW), 0));
        t!(sys::setuid(1000));
        check_eq!(install(&always(SECCOMP_RET_ALLOW), 0), Err(EACCES));
        // A bad length is found first.
        check_eq!(install(&[], 0), Err(EINVAL));
        t!(no_new_privs());
        check_eq!(install(&always(SECCOMP_RET_ALLOW), 0), Ok(0));
        Ok(())
    });
    Ok(())
}

fn bad_programs() -> TestResult {
    child_ok!(|| {
        t!(no_new_privs());
        let ret = SockFilter::stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        let ld = |k| SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, k);
        let cases: [(&str, Vec<SockFilter>); 14] = [
            ("empty", vec![]),
            ("too long", vec![ret; 4097]),
            ("no RET at the end", vec![ret, ld(0)]),
            (
                "JA past the end",
                vec![SockFilter::stmt(BPF_JMP | BPF_JA, 1), ret],
            ),
            (
                "JEQ past the end",
                vec![SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), ret],
            ),
            ("unknown opcode", vec![SockFilter::stmt(0xffff, 0), ret]),
            (
                "byte load",
                vec![SockFilter::stmt(BPF_LD | BPF_B | BPF_ABS, 0), ret],
            ),
            ("load at 64", vec![ld(64), ret]),
            ("unaligned load", vec![ld(2), ret]),
            (
                "division by zero",
                vec![SockFilter::stmt(BPF_ALU | BPF_DIV | BPF_K, 0), ret],
            ),
            (
                "MOD",
                vec![SockFilter::stmt(BPF_ALU | BPF_MOD | BPF_K, 3), ret],
            ),
            ("M[16]", vec![SockFilter::stmt(BPF_ST, 16), ret]),
            (
                "load before store",
                vec![SockFilter::stmt(BPF_LD | BPF_MEM, 0), ret],
            ),
            (
                "shift by 32",
                vec![SockFilter::stmt(BPF_ALU | BPF_LSH | BPF_K, 32), ret],
            ),
        ];
        for (what, p) in &cases {
            check_eq!(install(p, 0), Err(EINVAL), "{}", what);
        }
        let fp = Fprog {
            len: 1,
            filter: core::ptr::null(),
        };
        let fpa = &fp as *const Fprog as usize;
        check_eq!(
            seccomp(SECCOMP_SET_MODE_FILTER, 0, fpa),
            Err(EINVAL),
            "NULL"
        );
        let fp = Fprog {
            len: 1,
            filter: 0x10 as *const SockFilter,
        };
        let fpa = &fp as *const Fprog as usize;
        check_eq!(seccomp(SECCOMP_SET_MODE_FILTER, 0, fpa), Err(EFAULT));
        check_eq!(seccomp(SECCOMP_SET_MODE_FILTER, 0, 0x10), Err(EFAULT));
        let allow = always(SECCOMP_RET_ALLOW);
        check_eq!(install(&allow, 1 << 6), Err(EINVAL), "unknown flag");
        let both = SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_NEW_LISTENER;
        check_eq!(install(&allow, both), Err(EINVAL), "TSYNC|NEW_LISTENER");
        check_eq!(seccomp(9, 0, 0), Err(EINVAL), "unknown op");
        check_eq!(prctl(PR_GET_SECCOMP, 0, 0), Ok(0), "nothing installed");
        // The longest program is fine.
        let mut long = vec![SockFilter::stmt(BPF_LD | BPF_W | BPF_LEN, 0); 4096];
        long[4095] = ret;
        check_eq!(install(&long, 0), Ok(0));
        Ok(())
    });
    Ok(())
}

fn instruction_budget() -> TestResult {
    child_ok!(|| {
        t!(no_new_privs());
        // 32768 instructions in all, counted as Linux's eBPF translation (3 more than the
        // classic length here, 2 per RET K), each installed filter 4 more: 7 of these fill
        // 7 * 4104 = 28728 of the budget.
        let mut big = vec![SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, 0); 4096];
        big[4095] = SockFilter::stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        for i in 0..7 {
            check_eq!(install(&big, 0), Ok(0), "filter {}", i);
        }
        check_eq!(install(&big, 0), Err(ENOMEM));
        // 3 + 2 * 2019 = 4041 > 32768 - 28728; 2018 fit.
        let mut last = vec![SockFilter::stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW); 2019];
        check_eq!(install(&last, 0), Err(ENOMEM), "one too many");
        last.pop();
        check_eq!(install(&last, 0), Ok(0), "exactly the budget");
        check_eq!(install(&always(SECCOMP_RET_ALLOW), 0), Err(ENOMEM));
        Ok(())
    });
    Ok(())
}

fn action_avail() -> TestResult {
    for a in [
        SECCOMP_RET_KILL_PROCESS,
        SECCOMP_RET_KILL_THREAD,
        SECCOMP_RET_TRAP,
        SECCOMP_RET_ERRNO,
        SECCOMP_RET_USER_NOTIF,
        SECCOMP_RET_TRACE,
        SECCOMP_RET_LOG,
        SECCOMP_RET_ALLOW,
    ] {
        check_eq!(
            seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &a as *const u32 as usize),
            Ok(0),
            "{:#x}",
            a
        );
    }
    for a in [0x7ffe_0000u32, SECCOMP_RET_ERRNO | 5, 0x0001_0000] {
        check_eq!(
            seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &a as *const u32 as usize),
            Err(EOPNOTSUPP),
            "{:#x}",
            a
        );
    }
    let a = SECCOMP_RET_ALLOW;
    check_eq!(
        seccomp(SECCOMP_GET_ACTION_AVAIL, 1, &a as *const u32 as usize),
        Err(EINVAL)
    );
    check_eq!(seccomp(SECCOMP_GET_ACTION_AVAIL, 0, 0x10), Err(EFAULT));
    let mut sizes = [0u16; 3];
    check_eq!(
        seccomp(SECCOMP_GET_NOTIF_SIZES, 0, sizes.as_mut_ptr() as usize),
        Ok(0)
    );
    check_eq!(sizes, [80, 24, 64]);
    Ok(())
}

static STEP: AtomicI64 = AtomicI64::new(0);
static GOT: AtomicI64 = AtomicI64::new(0);

fn wait_step(n: i64) {
    while STEP.load(SeqCst) < n {
        let _ = sys::sched_yield();
    }
}

extern "C" fn tsync_thread(_: usize) -> i32 {
    wait_step(1);
    GOT.store(sys::raw6(nr::GETPPID, 0, 0, 0, 0, 0, 0) as i64, SeqCst);
    let nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0).unwrap_or(9) as i64;
    STEP.store(2 + 10 * nnp, SeqCst);
    wait_step(13);
    // A filter of its own: its chain no longer descends from the other thread's.
    let r = install(&always(SECCOMP_RET_ALLOW), 0);
    STEP.store(if r == Ok(0) { 14 } else { -1 }, SeqCst);
    wait_step(15);
    0
}

fn tsync() -> TestResult {
    child_ok!(|| {
        let th = t!(spawn_thread(tsync_thread, 0, 0));
        t!(no_new_privs());
        check_eq!(
            install(
                &on(nr::GETPPID, SECCOMP_RET_ERRNO | 7),
                SECCOMP_FILTER_FLAG_TSYNC
            ),
            Ok(0)
        );
        STEP.store(1, SeqCst);
        wait_step(2);
        check_eq!(GOT.load(SeqCst), -7, "the other thread got the filter");
        check_eq!(STEP.load(SeqCst), 12, "and no_new_privs");
        STEP.store(13, SeqCst);
        wait_step(14);
        let tsync = SECCOMP_FILTER_FLAG_TSYNC;
        let allow = always(SECCOMP_RET_ALLOW);
        check_eq!(
            install(&allow, tsync),
            Ok(th.tid as usize),
            "the thread in the way"
        );
        check_eq!(
            install(&allow, tsync | SECCOMP_FILTER_FLAG_TSYNC_ESRCH),
            Err(ESRCH)
        );
        check_eq!(install(&allow, 0), Ok(0), "without TSYNC");
        STEP.store(15, SeqCst);
        th.join();
        Ok(())
    });
    Ok(())
}

/// A random filter of 1 to 10 instructions (`svelt_abi::uapi::bpf::random_filter`).
fn random_program(rng: &mut svelt_abi::util::rng::XorShift64) -> Vec<SockFilter> {
    let mut p = vec![SockFilter::default(); 1 + (rng.next() % 10) as usize];
    random_filter(rng, &mut p);
    p
}

extern "C" fn strict_sleeper(fd: usize) -> i32 {
    let _ = seccomp(SECCOMP_SET_MODE_STRICT, 0, 0);
    STEP.store(1, SeqCst);
    let mut b = [0u8; 1];
    let _ = sys::read(fd as i32, &mut b);
    sys::exit(0)
}

/// The kernel's verdict on random programs agrees with the abi validator: a thread in strict
/// mode makes TSYNC fail after validation, so a valid program answers with that thread's id
/// and is never installed.
fn random_programs_validated() -> TestResult {
    child_ok!(|| {
        let [r, _w] = t!(sys::pipe2(0));
        let th = t!(spawn_thread(strict_sleeper, r as usize, 0));
        wait_step(1);
        let mut rng = svelt_abi::util::rng::XorShift64(0x2545_f491_4f6c_dd1d);
        let (mut valid, mut invalid) = (0, 0);
        for i in 0..4000 {
            let p = random_program(&mut rng);
            let mut q = p.clone();
            let mut scratch = vec![0u16; q.len()];
            let want = check_seccomp_filter(&mut q, &mut scratch).is_ok();
            let got = install(&p, SECCOMP_FILTER_FLAG_TSYNC);
            if want {
                valid += 1;
                check_eq!(got, Ok(th.tid as usize), "program {}: {:?}", i, p);
            } else {
                invalid += 1;
                check_eq!(got, Err(EINVAL), "program {}: {:?}", i, p);
            }
        }
        check_eq!(prctl(PR_GET_SECCOMP, 0, 0), Ok(0));
        check!(
            valid > 100 && invalid > 100,
            "{valid} valid, {invalid} invalid"
        );
        Ok(())
    });
    Ok(())
}

/// Random programs installed for real, then a few calls: whatever they do, the child ends.
fn random_programs_installed() -> TestResult {
    let mut rng = svelt_abi::util::rng::XorShift64(0x1234_5678_9abc_def1);
    let mut installed = 0;
    // Exited, killed by another signal, killed by SIGSYS.
    let mut outcomes = [0; 3];
    for _ in 0..60 {
        let seed = rng.next();
        let pid = t!(spawn(|| {
            no_core();
            let _ = no_new_privs();
            let mut rng = svelt_abi::util::rng::XorShift64(seed | 1);
            for _ in 0..200 {
                let mut p = random_program(&mut rng);
                // Returns of A would mostly be small numbers (KILL_THREAD): return actions.
                for f in p.iter_mut().filter(|f| f.code == BPF_RET | BPF_A) {
                    let r = rng.next();
                    *f = SockFilter::stmt(
                        BPF_RET | BPF_K,
                        SECCOMP_ACTIONS[r as usize % SECCOMP_ACTIONS.len()]
                            | (r >> 32) as u32 & 0xff,
                    );
                }
                if install(&p, 0) == Ok(0) {
                    for n in [nr::GETPPID, nr::GETTID, nr::GETUID, nr::SCHED_YIELD] {
                        let _ = sys::syscall(n, &[rng.next() as usize]);
                    }
                    return 100;
                }
            }
            0
        }));
        let (st, timed_out) = t!(wait_bounded(pid, 10_000_000_000));
        check!(!timed_out, "child {pid} hung");
        if st == 100 << 8 || wifsignaled(st) {
            installed += 1;
        }
        outcomes[(wifsignaled(st) as usize) * (1 + (wtermsig(st) == SIGSYS) as usize)] += 1;
    }
    check!(
        installed > 10,
        "only {installed} children installed a filter"
    );
    check!(
        outcomes.iter().all(|&n| n > 0),
        "exited / other signal / SIGSYS: {outcomes:?}"
    );
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--probe") {
        return probe();
    }
    let status = ktap::run(&[
        ("prctl_values", prctl_values),
        ("proc_status", proc_status),
        ("strict_mode", strict_mode),
        ("errno_action", errno_action),
        ("trap_action", trap_action),
        ("kill_actions", kill_actions),
        ("log_allow_trace_notif", log_allow_trace_notif),
        ("precedence", precedence),
        ("inheritance_fork_exec", inheritance),
        ("no_new_privs_rule", no_new_privs_rule),
        ("bad_programs_einval", bad_programs),
        ("instruction_budget", instruction_budget),
        ("get_action_avail", action_avail),
        ("tsync", tsync),
        ("random_programs_validated", random_programs_validated),
        ("random_programs_installed", random_programs_installed),
    ]);
    // As the first process, give the console time to print the totals before the exit.
    if sys::getpid() == 1 {
        sys::sleep_ns(500_000_000);
    }
    status
}

entry!(main);
