//! System calls: one dispatch table, one file per area. Handlers return `SysResult<usize>`; the
//! dispatcher turns errors into `-errno` in x0.

pub mod cred;
pub mod file;
pub mod misc;
pub mod mm;
pub mod namei;
pub mod poll;
pub mod proc;
pub mod ptrace;
pub mod signal;
pub mod stat;
pub mod time;

use crate::arch::aarch64::exception::TrapFrame;
use crate::task;
use alloc::collections::BTreeSet;
use spin::Mutex;
use svelt_abi::errno::{Errno, SysResult};
use svelt_abi::nr;

/// The six argument registers.
#[derive(Clone, Copy)]
pub struct Args(pub [u64; 6]);

impl Args {
    pub fn u(&self, i: usize) -> usize {
        self.0[i] as usize
    }
    pub fn i(&self, i: usize) -> i32 {
        self.0[i] as i32
    }
    pub fn u32(&self, i: usize) -> u32 {
        self.0[i] as u32
    }
}

static UNKNOWN_LOGGED: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

pub fn dispatch(tf: &mut TrapFrame) {
    let mut n = tf.x[8];
    {
        // SAFETY: the current task's own locals.
        let l = unsafe { task::current().local() };
        l.orig_x0 = tf.x[0];
        l.in_syscall = n as i64;
    }
    let me = task::current();
    crate::fpstate::fp_user_discard(me);
    if me.syscall_trace.load(core::sync::atomic::Ordering::Relaxed) {
        return dispatch_traced(tf);
    }
    // One load and one branch unless the task is under seccomp.
    if me.seccomp.mode.load(core::sync::atomic::Ordering::Relaxed) != 0 {
        match crate::seccomp::check(tf) {
            crate::seccomp::Verdict::Run(nr) => n = nr,
            crate::seccomp::Verdict::Skip => return,
        }
    }
    let a = Args([tf.x[0], tf.x[1], tf.x[2], tf.x[3], tf.x[4], tf.x[5]]);
    let r = call(n as usize, a, tf);
    set_return(n, r, tf);
}

fn set_return(n: u64, r: SysResult<usize>, tf: &mut TrapFrame) {
    // rt_sigreturn sets every register itself, x0 included.
    if n as usize != nr::RT_SIGRETURN || r.is_err() {
        tf.x[0] = match r {
            Ok(v) => v as u64,
            Err(e) => (-(e as i64)) as u64,
        };
    }
}

/// A syscall under PTRACE_SYSCALL: entry and exit stops around it. At the entry stop the
/// tracer may change x0-x5 and the number (NT_ARM_SYSTEM_CALL); number -1 skips the call,
/// leaving x0 as the tracer set it (-ENOSYS for a user's own syscall(-1)).
#[cold]
fn dispatch_traced(tf: &mut TrapFrame) {
    use core::sync::atomic::Ordering::Relaxed;
    let me = task::current();
    if tf.x[8] as i64 == -1 {
        tf.x[0] = (-(Errno::ENOSYS as i64)) as u64;
    }
    crate::ptrace::syscall_entry(tf);
    let n = {
        // SAFETY: the current task's own locals.
        let l = unsafe { me.local() };
        // The tracer's x0 is the first argument from here on (seccomp's and a restart's).
        l.orig_x0 = tf.x[0];
        l.in_syscall
    };
    // A kill during the stop: the syscall does not run (the exit follows on the way out).
    let mut run = (n != -1 && !crate::signal::fatal_pending(me)).then_some(n as u64);
    // seccomp sees the call as the tracer left it (Linux: ptrace first, then seccomp).
    if run.is_some() && me.seccomp.mode.load(Relaxed) != 0 {
        run = match crate::seccomp::check(tf) {
            crate::seccomp::Verdict::Run(nr) => Some(nr),
            crate::seccomp::Verdict::Skip => None,
        };
    }
    if let Some(n) = run {
        let a = Args([tf.x[0], tf.x[1], tf.x[2], tf.x[3], tf.x[4], tf.x[5]]);
        let r = call(n as usize, a, tf);
        set_return(n, r, tf);
    }
    if me.syscall_trace.load(Relaxed) {
        crate::ptrace::syscall_exit(tf);
    }
}

/// A system call's handler: the arguments, and the trap frame for the few that need it.
type Handler = fn(Args, &mut TrapFrame) -> SysResult<usize>;

/// Handlers by syscall number (arm64's asm-generic numbering). A table rather than one large
/// `match`: each handler is its own function, so every syscall pays the same small dispatch
/// (an indexed indirect call), not the register saves of a function holding them all.
static TABLE: [Option<Handler>; 512] = {
    let mut t: [Option<Handler>; 512] = [None; 512];
    // files
    t[nr::OPENAT] = Some(|a, _| file::openat(a.i(0), a.u(1), a.u32(2), a.u32(3)));
    t[nr::CLOSE] = Some(|a, _| file::close(a.i(0)));
    t[nr::READ] = Some(|a, _| file::read(a.i(0), a.u(1), a.u(2)));
    t[nr::WRITE] = Some(|a, _| file::write(a.i(0), a.u(1), a.u(2)));
    t[nr::READV] = Some(|a, _| file::readv(a.i(0), a.u(1), a.u(2)));
    t[nr::WRITEV] = Some(|a, _| file::writev(a.i(0), a.u(1), a.u(2)));
    t[nr::PREAD64] = Some(|a, _| file::pread64(a.i(0), a.u(1), a.u(2), a.0[3] as i64));
    t[nr::PWRITE64] = Some(|a, _| file::pwrite64(a.i(0), a.u(1), a.u(2), a.0[3] as i64));
    t[nr::LSEEK] = Some(|a, _| file::lseek(a.i(0), a.0[1] as i64, a.u32(2)));
    t[nr::NEWFSTATAT] = Some(|a, _| stat::newfstatat(a.i(0), a.u(1), a.u(2), a.u32(3)));
    t[nr::FSTAT] = Some(|a, _| stat::fstat(a.i(0), a.u(1)));
    t[nr::STATX] = Some(|a, _| stat::statx(a.i(0), a.u(1), a.u32(2), a.u32(3), a.u(4)));
    t[nr::GETDENTS64] = Some(|a, _| stat::getdents64(a.i(0), a.u(1), a.u(2)));
    t[nr::READLINKAT] = Some(|a, _| stat::readlinkat(a.i(0), a.u(1), a.u(2), a.u(3)));
    t[nr::FACCESSAT] = Some(|a, _| stat::faccessat(a.i(0), a.u(1), a.u32(2), 0));
    t[nr::FACCESSAT2] = Some(|a, _| stat::faccessat(a.i(0), a.u(1), a.u32(2), a.u32(3)));
    t[nr::CHDIR] = Some(|a, _| namei::chdir(a.u(0)));
    t[nr::FCHDIR] = Some(|a, _| namei::fchdir(a.i(0)));
    t[nr::GETCWD] = Some(|a, _| namei::getcwd(a.u(0), a.u(1)));
    t[nr::MKDIRAT] = Some(|a, _| namei::mkdirat(a.i(0), a.u(1), a.u32(2)));
    t[nr::UNLINKAT] = Some(|a, _| namei::unlinkat(a.i(0), a.u(1), a.u32(2)));
    t[nr::SYMLINKAT] = Some(|a, _| namei::symlinkat(a.u(0), a.i(1), a.u(2)));
    t[nr::MKNODAT] = Some(|a, _| namei::mknodat(a.i(0), a.u(1), a.u32(2), a.0[3]));
    t[nr::FTRUNCATE] = Some(|a, _| file::ftruncate(a.i(0), a.0[1] as i64));
    t[nr::FSYNC] = Some(|a, _| file::fsync(a.i(0)));
    t[nr::FDATASYNC] = Some(|a, _| file::fsync(a.i(0)));
    t[nr::SYNC] = Some(|_, _| Ok(0));
    t[nr::PIPE2] = Some(|a, _| file::pipe2(a.u(0), a.u32(1)));
    t[nr::DUP] = Some(|a, _| file::dup(a.i(0)));
    t[nr::DUP3] = Some(|a, _| file::dup3(a.i(0), a.i(1), a.u32(2)));
    t[nr::FCNTL] = Some(|a, _| file::fcntl(a.i(0), a.u32(1), a.u(2)));
    t[nr::IOCTL] = Some(|a, _| file::ioctl(a.i(0), a.u32(1), a.u(2)));
    t[nr::EPOLL_CREATE1] = Some(|a, _| poll::epoll_create1(a.u32(0)));
    t[nr::EPOLL_CTL] = Some(|a, _| poll::epoll_ctl(a.i(0), a.u32(1), a.i(2), a.u(3)));
    t[nr::EPOLL_PWAIT] =
        Some(|a, _| poll::epoll_pwait(a.i(0), a.u(1), a.i(2), a.i(3), a.u(4), a.u(5)));
    t[nr::PPOLL] = Some(|a, _| poll::ppoll(a.u(0), a.u(1), a.u(2), a.u(3), a.u(4)));
    t[nr::PSELECT6] = Some(|a, _| poll::pselect6(a.i(0), a.u(1), a.u(2), a.u(3), a.u(4), a.u(5)));
    t[nr::MOUNT] = Some(|a, _| namei::mount(a.u(0), a.u(1), a.u(2), a.u(3) as u64, a.u(4)));
    t[nr::UMOUNT2] = Some(|a, _| namei::umount2(a.u(0), a.u32(1)));
    t[nr::UMASK] = Some(|a, _| namei::umask(a.u32(0)));
    t[nr::STATFS] = Some(|a, _| stat::statfs(a.u(0), a.u(1)));
    t[nr::FSTATFS] = Some(|a, _| stat::fstatfs(a.i(0), a.u(1)));
    t[nr::FCHMOD] = Some(|_, _| Ok(0));
    t[nr::FCHMODAT] = Some(|_, _| Ok(0));
    t[nr::FCHOWN] = Some(|_, _| Ok(0));
    t[nr::FCHOWNAT] = Some(|_, _| Ok(0));
    t[nr::UTIMENSAT] = Some(|_, _| Ok(0));
    // memory
    t[nr::BRK] = Some(|a, _| mm::brk(a.u(0)));
    t[nr::MMAP] = Some(|a, _| mm::mmap(a.u(0), a.u(1), a.u32(2), a.u32(3), a.i(4), a.0[5]));
    t[nr::MUNMAP] = Some(|a, _| mm::munmap(a.u(0), a.u(1)));
    t[nr::MPROTECT] = Some(|a, _| mm::mprotect(a.u(0), a.u(1), a.u32(2)));
    t[nr::MADVISE] = Some(|a, _| mm::madvise(a.u(0), a.u(1), a.u32(2)));
    t[nr::MREMAP] = Some(|a, _| mm::mremap(a.u(0), a.u(1), a.u(2), a.u32(3), a.u(4)));
    t[nr::MLOCK] = Some(|a, _| mm::mlock(a.u(0), a.u(1), true, 0));
    t[nr::MLOCK2] = Some(|a, _| mm::mlock(a.u(0), a.u(1), true, a.u32(2)));
    t[nr::MUNLOCK] = Some(|a, _| mm::mlock(a.u(0), a.u(1), false, 0));
    t[nr::MLOCKALL] = Some(|a, _| mm::mlockall(a.u32(0)));
    t[nr::MUNLOCKALL] = Some(|_, _| mm::munlockall());
    t[nr::MSYNC] = Some(|a, _| mm::msync(a.u(0), a.u(1), a.u32(2)));
    // processes
    t[nr::CLONE] = Some(|a, tf| proc::clone(a.0[0], a.u(1), a.u(2), a.0[3], a.u(4), tf));
    t[nr::CLONE3] = Some(|_, _| Err(Errno::ENOSYS));
    t[nr::EXECVE] = Some(|a, tf| proc::execve(a.u(0), a.u(1), a.u(2), tf));
    t[nr::EXIT] = Some(|a, _| proc::exit(a.i(0)));
    t[nr::EXIT_GROUP] = Some(|a, _| proc::exit_group(a.i(0)));
    t[nr::WAIT4] = Some(|a, _| proc::wait4(a.i(0), a.u(1), a.u32(2), a.u(3)));
    t[nr::WAITID] = Some(|a, _| proc::waitid(a.u32(0), a.i(1), a.u(2), a.u32(3), a.u(4)));
    t[nr::GETPID] = Some(|_, _| Ok(task::current().pid() as usize));
    t[nr::GETTID] = Some(|_, _| Ok(task::current().tid as usize));
    t[nr::GETPPID] = Some(|_, _| Ok(task::current().process().ppid() as usize));
    t[nr::GETUID] = Some(|_, _| Ok(cred::getuid(false)));
    t[nr::GETEUID] = Some(|_, _| Ok(cred::getuid(true)));
    t[nr::GETGID] = Some(|_, _| Ok(0));
    t[nr::GETEGID] = Some(|_, _| Ok(0));
    t[nr::SETUID] = Some(|a, _| cred::setuid(a.u32(0)));
    t[nr::GETRESUID] = Some(|a, _| proc::getres(a.u(0), a.u(1), a.u(2)));
    t[nr::GETRESGID] = Some(|a, _| proc::getres(a.u(0), a.u(1), a.u(2)));
    t[nr::SETGID] = Some(|_, _| Ok(0));
    t[nr::SETRESUID] = Some(|_, _| Ok(0));
    t[nr::SETRESGID] = Some(|_, _| Ok(0));
    t[nr::SETREUID] = Some(|_, _| Ok(0));
    t[nr::SETREGID] = Some(|_, _| Ok(0));
    t[nr::GETGROUPS] = Some(|_, _| Ok(0));
    t[nr::SETPGID] = Some(|a, _| proc::setpgid(a.i(0), a.i(1)));
    t[nr::GETPGID] = Some(|a, _| proc::getpgid(a.i(0)));
    t[nr::GETSID] = Some(|a, _| proc::getsid(a.i(0)));
    t[nr::SETSID] = Some(|_, _| proc::setsid());
    t[nr::SET_TID_ADDRESS] = Some(|a, _| proc::set_tid_address(a.u(0)));
    t[nr::SET_ROBUST_LIST] = Some(|a, _| proc::set_robust_list(a.u(0), a.u(1)));
    t[nr::GET_ROBUST_LIST] = Some(|a, _| proc::get_robust_list(a.i(0), a.u(1), a.u(2)));
    t[nr::FUTEX] = Some(|a, _| {
        crate::task::futex::futex(a.u(0), a.u32(1), a.u32(2), a.u(3), a.u(4), a.u32(5))
    });
    t[nr::SCHED_YIELD] = Some(|_, _| {
        task::sched::yield_now();
        Ok(0)
    });
    t[nr::SCHED_GETAFFINITY] = Some(|a, _| proc::sched_getaffinity(a.i(0), a.u(1), a.u(2)));
    t[nr::SCHED_SETAFFINITY] = Some(|a, _| proc::sched_setaffinity(a.i(0), a.u(1), a.u(2)));
    t[nr::PRLIMIT64] = Some(|a, _| proc::prlimit64(a.i(0), a.u32(1), a.u(2), a.u(3)));
    t[nr::GETRLIMIT] = Some(|a, _| proc::prlimit64(0, a.u32(0), 0, a.u(1)));
    t[nr::SETRLIMIT] = Some(|a, _| proc::prlimit64(0, a.u32(0), a.u(1), 0));
    t[nr::GETRUSAGE] = Some(|a, _| proc::getrusage(a.i(0), a.u(1)));
    t[nr::PRCTL] = Some(|a, _| proc::prctl(a.u32(0), a.u(1), a.u(2), a.u(3), a.u(4)));
    t[nr::SECCOMP] = Some(|a, _| crate::seccomp::seccomp(a.u32(0), a.u32(1), a.u(2)));
    t[nr::RSEQ] = Some(|_, _| Err(Errno::ENOSYS));
    // tracing
    t[nr::PTRACE] = Some(|a, _| ptrace::ptrace(a.0[0], a.i(1), a.u(2), a.u(3)));
    t[nr::PROCESS_VM_READV] =
        Some(|a, _| ptrace::process_vm(a.i(0), a.u(1), a.u(2), a.u(3), a.u(4), a.0[5], false));
    t[nr::PROCESS_VM_WRITEV] =
        Some(|a, _| ptrace::process_vm(a.i(0), a.u(1), a.u(2), a.u(3), a.u(4), a.0[5], true));
    // signals
    t[nr::RT_SIGACTION] = Some(|a, _| signal::rt_sigaction(a.i(0), a.u(1), a.u(2), a.u(3)));
    t[nr::RT_SIGPROCMASK] = Some(|a, _| signal::rt_sigprocmask(a.u32(0), a.u(1), a.u(2), a.u(3)));
    t[nr::RT_SIGPENDING] = Some(|a, _| signal::rt_sigpending(a.u(0), a.u(1)));
    t[nr::RT_SIGSUSPEND] = Some(|a, _| signal::rt_sigsuspend(a.u(0), a.u(1)));
    t[nr::RT_SIGRETURN] = Some(|_, tf| signal::rt_sigreturn(tf));
    t[nr::RT_SIGTIMEDWAIT] = Some(|a, _| signal::rt_sigtimedwait(a.u(0), a.u(1), a.u(2), a.u(3)));
    t[nr::SIGALTSTACK] = Some(|a, tf| signal::sigaltstack(a.u(0), a.u(1), tf));
    t[nr::KILL] = Some(|a, _| signal::kill(a.i(0), a.i(1)));
    t[nr::TKILL] = Some(|a, _| signal::tgkill(-1, a.i(0), a.i(1)));
    t[nr::TGKILL] = Some(|a, _| signal::tgkill(a.i(0), a.i(1), a.i(2)));
    // time
    t[nr::CLOCK_GETTIME] = Some(|a, _| time::clock_gettime(a.u32(0), a.u(1)));
    t[nr::CLOCK_GETRES] = Some(|a, _| time::clock_getres(a.u32(0), a.u(1)));
    t[nr::GETTIMEOFDAY] = Some(|a, _| time::gettimeofday(a.u(0)));
    t[nr::NANOSLEEP] = Some(|a, _| time::nanosleep(a.u(0), a.u(1)));
    t[nr::CLOCK_NANOSLEEP] = Some(|a, _| time::clock_nanosleep(a.u32(0), a.u32(1), a.u(2), a.u(3)));
    t[nr::SETITIMER] = Some(|a, _| time::setitimer(a.u32(0), a.u(1), a.u(2)));
    t[nr::GETITIMER] = Some(|a, _| time::getitimer(a.u32(0), a.u(1)));
    t[nr::TIMES] = Some(|a, _| time::times(a.u(0)));
    // system
    t[nr::UNAME] = Some(|a, _| misc::uname(a.u(0)));
    t[nr::GETRANDOM] = Some(|a, _| misc::getrandom(a.u(0), a.u(1), a.u32(2)));
    t[nr::REBOOT] = Some(|a, _| misc::reboot(a.u32(0), a.u32(1), a.u32(2)));
    t[nr::SYSINFO] = Some(|a, _| misc::sysinfo(a.u(0)));
    t[nr::GETCPU] = Some(|a, _| misc::getcpu(a.u(0), a.u(1)));
    t
};

fn call(n: usize, a: Args, tf: &mut TrapFrame) -> SysResult<usize> {
    match TABLE.get(n).copied().flatten() {
        Some(h) => h(a, tf),
        None => unknown(n),
    }
}

#[cold]
fn unknown(n: usize) -> SysResult<usize> {
    if UNKNOWN_LOGGED.lock().insert(n as u64) {
        log::warn!(
            "unknown syscall {n} ({}) from pid {}",
            nr::name(n).unwrap_or("?"),
            task::current().pid()
        );
    }
    Err(Errno::ENOSYS)
}
