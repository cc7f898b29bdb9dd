//! System calls: one dispatch table, one file per area. A handler gets a `Syscall` (the running
//! task and its registers) and takes its arguments typed through `Syscall::arg`; it returns
//! `SysResult<usize>` (the dispatcher puts the value, or `-errno`, in x0), or `NoReturn` when it
//! has set the registers itself (rt_sigreturn, execve).

#![forbid(unsafe_code)]

pub mod attr;
mod copy;
pub mod cred;
pub mod file;
pub mod misc;
pub mod mm;
pub mod namei;
pub mod net;
mod net_other;
pub mod poll;
pub mod proc;
pub mod ptrace;
pub mod sched;
pub mod signal;
pub mod stat;
pub mod time;

use crate::arch::exception::TrapFrame;
use crate::process::{self, CurrentTask};
use crate::task::work;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::nr;

/// A system call being made: the task making it, and its registers.
pub struct Syscall<'a> {
    pub cur: &'a CurrentTask,
    pub tf: &'a mut TrapFrame,
}

impl Syscall<'_> {
    /// Argument `i` (x0-x5) as the type the handler's parameter has: 32-bit types take the
    /// register's low half, as Linux's syscall wrappers do for `int` arguments.
    pub fn arg<T: FromArg>(&self, i: usize) -> T {
        T::from_arg(self.tf.x[i])
    }
}

/// How a syscall argument register becomes a handler's parameter.
pub trait FromArg {
    fn from_arg(reg: u64) -> Self;
}

/// Integers: the register, or its low 32 bits for the 32-bit types.
macro_rules! from_arg_as {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            fn from_arg(reg: u64) -> $t {
                reg as $t
            }
        }
    )*};
}
from_arg_as!(u64, i64, usize, u32, i32);

/// A pointer argument, typed by what the handler reads or writes there.
impl<T> FromArg for crate::mm::uaccess::UserPtr<T> {
    fn from_arg(reg: u64) -> Self {
        Self::new(reg as usize)
    }
}

/// A handler's result when it has set the user registers itself (rt_sigreturn, a successful
/// execve): x0 is left as it made it.
pub struct NoReturn;

#[derive(Clone, Copy)]
enum Handler {
    /// Returns x0.
    Value(fn(&mut Syscall) -> SysResult<usize>),
    /// Sets the registers itself on success.
    NoReturn(fn(&mut Syscall) -> SysResult<NoReturn>),
}

const fn v(h: fn(&mut Syscall) -> SysResult<usize>) -> Option<Handler> {
    Some(Handler::Value(h))
}

const fn regs(h: fn(&mut Syscall) -> SysResult<NoReturn>) -> Option<Handler> {
    Some(Handler::NoReturn(h))
}

const TABLE_LEN: usize = 512;

/// Unknown numbers already logged: one bit per table slot, and one for every number beyond it
/// (a fixed size: a program trying every number must not grow the kernel heap).
static UNKNOWN_LOGGED: [AtomicU64; TABLE_LEN / 64 + 1] =
    [const { AtomicU64::new(0) }; TABLE_LEN / 64 + 1];

/// A syscall from EL0 (x8 the number, x0-x5 the arguments, x0 the result). True when it took
/// the entry-work path: the way back is then the full one (the FP bit that sent it there is
/// still set), so the caller need not test the work word again.
pub fn dispatch(cur: &CurrentTask, tf: &mut TrapFrame) -> bool {
    let n = tf.x[8];
    let l = cur.local();
    l.orig_x0.set(tf.x[0]);
    l.in_syscall.set(n as i64);
    // One load and one branch unless there is entry work (task/work.rs).
    let w = cur.core().task().work.get();
    if w & work::ENTRY != 0 {
        dispatch_work(cur, tf, w);
        return true;
    }
    call(n, &mut Syscall { cur, tf });
    false
}

/// A syscall with entry work: an SVE/SME task's state to discard, PTRACE_SYSCALL, seccomp.
#[cold]
#[inline(never)]
fn dispatch_work(cur: &CurrentTask, tf: &mut TrapFrame, w: u32) {
    let mut n = tf.x[8];
    crate::task::fpstate::fp_user_discard(cur.core());
    // Each state is asked only under its bit (set after the state, work.rs), so an SVE task's
    // syscall, which comes here for the FP bit alone, tests the word it has and loads nothing.
    if w & work::SYSCALL_TRACE != 0 && cur.syscall_trace.load(Relaxed) {
        return dispatch_traced(cur, tf);
    }
    if w & work::SECCOMP != 0 && cur.seccomp.mode.load(Relaxed) != 0 {
        match crate::process::seccomp::check(cur, cur, tf) {
            Some(nr) => n = nr,
            None => return,
        }
    }
    call(n, &mut Syscall { cur, tf });
}

/// A syscall under PTRACE_SYSCALL: entry and exit stops around it. At the entry stop the
/// tracer may change x0-x5 and the number (NT_ARM_SYSTEM_CALL); number -1 skips the call,
/// leaving x0 as the tracer set it (-ENOSYS for a user's own syscall(-1)).
#[cold]
fn dispatch_traced(cur: &CurrentTask, tf: &mut TrapFrame) {
    if tf.x[8] as i64 == -1 {
        tf.x[0] = (-(Errno::ENOSYS as i64)) as u64;
    }
    crate::process::ptrace::syscall_entry(cur, tf);
    let l = cur.local();
    // The tracer's x0 is the first argument from here on (seccomp's and a restart's).
    l.orig_x0.set(tf.x[0]);
    let n = l.in_syscall.get();
    // A kill during the stop: the syscall does not run (the exit follows on the way out).
    let mut run = (n != -1 && !crate::process::signal::fatal_pending(cur)).then_some(n as u64);
    // seccomp sees the call as the tracer left it (Linux: ptrace first, then seccomp).
    if run.is_some() && cur.seccomp.mode.load(Relaxed) != 0 {
        run = crate::process::seccomp::check(cur, cur, tf);
    }
    if let Some(n) = run {
        call(n, &mut Syscall { cur, tf });
    }
    if cur.syscall_trace.load(Relaxed) {
        crate::process::ptrace::syscall_exit(cur, tf);
    }
}

/// Runs handler `n` and puts its result (or `-errno`) in x0.
fn call(n: u64, c: &mut Syscall) {
    let r = match TABLE.get(n as usize).copied().flatten() {
        Some(Handler::Value(h)) => h(c),
        Some(Handler::NoReturn(h)) => match h(c) {
            Ok(NoReturn) => return,
            Err(e) => Err(e),
        },
        None => unknown(c.cur, n as usize),
    };
    c.tf.x[0] = match r {
        Ok(v) => v as u64,
        Err(e) => (-(e as i64)) as u64,
    };
}

/// Handlers by syscall number (arm64's asm-generic numbering). A table rather than one large
/// `match`: each handler is its own function, so every syscall pays the same small dispatch
/// (an indexed indirect call), not the register saves of a function holding them all.
static TABLE: [Option<Handler>; TABLE_LEN] = {
    let mut t: [Option<Handler>; TABLE_LEN] = [None; TABLE_LEN];
    // files
    t[nr::OPENAT] = v(|c| file::openat(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::CLOSE] = v(|c| file::close(c.cur, c.arg(0)));
    t[nr::READ] = v(|c| file::read(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::WRITE] = v(|c| file::write(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::READV] = v(|c| file::readv(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::WRITEV] = v(|c| file::writev(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::PREAD64] = v(|c| file::pread64(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::PWRITE64] = v(|c| file::pwrite64(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::LSEEK] = v(|c| file::lseek(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::NEWFSTATAT] = v(|c| stat::newfstatat(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::FSTAT] = v(|c| stat::fstat(c.cur, c.arg(0), c.arg(1)));
    t[nr::STATX] = v(|c| stat::statx(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::GETDENTS64] = v(|c| stat::getdents64(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::READLINKAT] = v(|c| stat::readlinkat(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::FACCESSAT] = v(|c| stat::faccessat(c.cur, c.arg(0), c.arg(1), c.arg(2), 0));
    t[nr::FACCESSAT2] = v(|c| stat::faccessat(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::CHDIR] = v(|c| namei::chdir(c.cur, c.arg(0)));
    t[nr::FCHDIR] = v(|c| namei::fchdir(c.cur, c.arg(0)));
    t[nr::CHROOT] = v(|c| namei::chroot(c.cur, c.arg(0)));
    t[nr::GETCWD] = v(|c| namei::getcwd(c.cur, c.arg(0), c.arg(1)));
    t[nr::MKDIRAT] = v(|c| namei::mkdirat(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::UNLINKAT] = v(|c| namei::unlinkat(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::RENAMEAT] = v(|c| namei::renameat2(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), 0));
    t[nr::RENAMEAT2] =
        v(|c| namei::renameat2(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::LINKAT] = v(|c| namei::linkat(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::SYMLINKAT] = v(|c| namei::symlinkat(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::MKNODAT] = v(|c| namei::mknodat(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::FTRUNCATE] = v(|c| file::ftruncate(c.cur, c.arg(0), c.arg(1)));
    t[nr::FSYNC] = v(|c| file::fsync(c.cur, c.arg(0)));
    t[nr::FDATASYNC] = v(|c| file::fsync(c.cur, c.arg(0)));
    t[nr::CLOSE_RANGE] = v(|c| file::close_range(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SENDFILE] = v(|c| copy::sendfile(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::COPY_FILE_RANGE] = v(|c| {
        copy::copy_file_range(
            c.cur,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            c.arg(3),
            c.arg(4),
            c.arg(5),
        )
    });
    t[nr::FADVISE64] = v(|c| file::fadvise64(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::SYNC] = v(|_| Ok(0));
    t[nr::PIPE2] = v(|c| file::pipe2(c.cur, c.arg(0), c.arg(1)));
    t[nr::EVENTFD2] = v(|c| file::eventfd2(c.cur, c.arg(0), c.arg(1)));
    t[nr::RT_SIGQUEUEINFO] = v(|c| signal::rt_sigqueueinfo(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::RT_TGSIGQUEUEINFO] =
        v(|c| signal::rt_tgsigqueueinfo(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::SIGNALFD4] = v(|c| signal::signalfd4(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::TIMERFD_CREATE] = v(|c| time::timerfd_create(c.cur, c.arg(0), c.arg(1)));
    t[nr::TIMERFD_SETTIME] =
        v(|c| time::timerfd_settime(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::TIMERFD_GETTIME] = v(|c| time::timerfd_gettime(c.cur, c.arg(0), c.arg(1)));
    t[nr::MEMFD_CREATE] = v(|c| file::memfd_create(c.cur, c.arg(0), c.arg(1)));
    t[nr::FLOCK] = v(|c| file::flock(c.cur, c.arg(0), c.arg(1)));
    t[nr::FALLOCATE] = v(|c| file::fallocate(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::DUP] = v(|c| file::dup(c.cur, c.arg(0)));
    t[nr::DUP3] = v(|c| file::dup3(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::FCNTL] = v(|c| file::fcntl(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::IOCTL] = v(|c| file::ioctl(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::EPOLL_CREATE1] = v(|c| poll::epoll_create1(c.cur, c.arg(0)));
    t[nr::EPOLL_CTL] = v(|c| poll::epoll_ctl(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::EPOLL_PWAIT] = v(|c| {
        poll::epoll_pwait(
            c.cur,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            c.arg(3),
            c.arg(4),
            c.arg(5),
        )
    });
    t[nr::PPOLL] = v(|c| poll::ppoll(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::PSELECT6] = v(|c| {
        poll::pselect6(
            c.cur,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            c.arg(3),
            c.arg(4),
            c.arg(5),
        )
    });
    t[nr::MOUNT] = v(|c| namei::mount(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::UMOUNT2] = v(|c| namei::umount2(c.cur, c.arg(0), c.arg(1)));
    t[nr::UMASK] = v(|c| namei::umask(c.cur, c.arg(0)));
    t[nr::STATFS] = v(|c| stat::statfs(c.cur, c.arg(0), c.arg(1)));
    t[nr::FSTATFS] = v(|c| stat::fstatfs(c.cur, c.arg(0), c.arg(1)));
    {
        use attr::Xattr::{Fd, Path};
        t[nr::SETXATTR] = v(|c| attr::xattr(c.cur, Path, c.arg(0), true));
        t[nr::LSETXATTR] = v(|c| attr::xattr(c.cur, Path, c.arg(0), false));
        t[nr::FSETXATTR] = v(|c| attr::xattr(c.cur, Fd, c.arg(0), true));
        t[nr::GETXATTR] = v(|c| attr::xattr(c.cur, Path, c.arg(0), true));
        t[nr::LGETXATTR] = v(|c| attr::xattr(c.cur, Path, c.arg(0), false));
        t[nr::FGETXATTR] = v(|c| attr::xattr(c.cur, Fd, c.arg(0), true));
        t[nr::LISTXATTR] = v(|c| attr::listxattr(c.cur, Path, c.arg(0), true));
        t[nr::LLISTXATTR] = v(|c| attr::listxattr(c.cur, Path, c.arg(0), false));
        t[nr::FLISTXATTR] = v(|c| attr::listxattr(c.cur, Fd, c.arg(0), true));
        t[nr::REMOVEXATTR] = v(|c| attr::xattr(c.cur, Path, c.arg(0), true));
        t[nr::LREMOVEXATTR] = v(|c| attr::xattr(c.cur, Path, c.arg(0), false));
        t[nr::FREMOVEXATTR] = v(|c| attr::xattr(c.cur, Fd, c.arg(0), true));
    }
    t[nr::FCHMOD] = v(|c| attr::fchmod(c.cur, c.arg(0), c.arg(1)));
    t[nr::FCHMODAT] = v(|c| attr::fchmodat(c.cur, c.arg(0), c.arg(1), c.arg(2), 0));
    t[nr::FCHMODAT2] = v(|c| attr::fchmodat(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::FCHOWN] = v(|c| attr::fchown(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::FCHOWNAT] =
        v(|c| attr::fchownat(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::UTIMENSAT] = v(|c| attr::utimensat(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    // memory
    t[nr::BRK] = v(|c| mm::brk(c.cur, c.arg(0)));
    t[nr::MMAP] = v(|c| {
        mm::mmap(
            c.cur,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            c.arg(3),
            c.arg(4),
            c.arg(5),
        )
    });
    t[nr::MUNMAP] = v(|c| mm::munmap(c.cur, c.arg(0), c.arg(1)));
    t[nr::MPROTECT] = v(|c| mm::mprotect(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::PIDFD_OPEN] = v(|c| file::pidfd_open(c.cur, c.arg(0), c.arg(1)));
    t[nr::MAP_SHADOW_STACK] =
        v(|c| crate::process::gcs::map_shadow_stack(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::MADVISE] = v(|c| mm::madvise(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::MREMAP] = v(|c| mm::mremap(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::MLOCK] = v(|c| mm::mlock(c.cur, c.arg(0), c.arg(1), true, 0));
    t[nr::MLOCK2] = v(|c| mm::mlock(c.cur, c.arg(0), c.arg(1), true, c.arg(2)));
    t[nr::MUNLOCK] = v(|c| mm::mlock(c.cur, c.arg(0), c.arg(1), false, 0));
    t[nr::MLOCKALL] = v(|c| mm::mlockall(c.cur, c.arg(0)));
    t[nr::MUNLOCKALL] = v(|c| mm::munlockall(c.cur));
    t[nr::MSYNC] = v(|c| mm::msync(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    // processes
    t[nr::CLONE] = v(|c| {
        proc::clone(
            c.cur,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            c.arg(3),
            c.arg(4),
            c.tf,
        )
    });
    t[nr::UNSHARE] = v(|c| proc::unshare(c.cur, c.arg(0)));
    t[nr::CLONE3] = v(|c| proc::clone3(c.cur, c.arg(0), c.arg(1), c.tf));
    t[nr::EXECVE] = regs(|c| proc::execve(c.cur, c.arg(0), c.arg(1), c.arg(2), c.tf));
    t[nr::EXIT] = v(|c| proc::exit(c.cur, c.arg(0)));
    t[nr::EXIT_GROUP] = v(|c| proc::exit_group(c.cur, c.arg(0)));
    t[nr::WAIT4] = v(|c| proc::wait4(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::WAITID] = v(|c| proc::waitid(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::GETPID] = v(|c| Ok(c.cur.pid() as usize));
    t[nr::GETTID] = v(|c| Ok(c.cur.tid as usize));
    t[nr::GETPPID] = v(|c| Ok(c.cur.process().ppid() as usize));
    t[nr::GETUID] = v(|c| Ok(cred::getuid(c.cur, false)));
    t[nr::GETEUID] = v(|c| Ok(cred::getuid(c.cur, true)));
    t[nr::GETGID] = v(|_| Ok(0));
    t[nr::GETEGID] = v(|_| Ok(0));
    t[nr::SETUID] = v(|c| cred::setuid(c.cur, c.arg(0)));
    t[nr::GETRESUID] = v(|c| proc::getres(c.arg(0), c.arg(1), c.arg(2)));
    t[nr::GETRESGID] = v(|c| proc::getres(c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SETGID] = v(|_| Ok(0));
    t[nr::SETRESUID] = v(|_| Ok(0));
    t[nr::SETRESGID] = v(|_| Ok(0));
    t[nr::SETREUID] = v(|_| Ok(0));
    t[nr::SETREGID] = v(|_| Ok(0));
    t[nr::GETGROUPS] = v(|_| Ok(0));
    t[nr::SETPGID] = v(|c| proc::setpgid(c.cur, c.arg(0), c.arg(1)));
    t[nr::GETPGID] = v(|c| proc::getpgid(c.cur, c.arg(0)));
    t[nr::GETSID] = v(|c| proc::getsid(c.cur, c.arg(0)));
    t[nr::SETSID] = v(|c| proc::setsid(c.cur));
    t[nr::PERSONALITY] = v(|c| proc::personality(c.cur, c.arg(0)));
    t[nr::SET_TID_ADDRESS] = v(|c| proc::set_tid_address(c.cur, c.arg(0)));
    t[nr::SET_ROBUST_LIST] = v(|c| proc::set_robust_list(c.cur, c.arg(0), c.arg(1)));
    t[nr::GET_ROBUST_LIST] = v(|c| proc::get_robust_list(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::FUTEX] = v(|c| {
        crate::process::futex::futex(
            c.cur,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            c.arg(3),
            c.arg(4),
            c.arg(5),
        )
    });
    t[nr::SCHED_YIELD] = v(|_| {
        process::sched::yield_now();
        Ok(0)
    });
    t[nr::GETPRIORITY] = v(|c| sched::getpriority(c.cur, c.arg(0), c.arg(1)));
    t[nr::SETPRIORITY] = v(|c| sched::setpriority(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SCHED_GETSCHEDULER] = v(|c| sched::sched_getscheduler(c.cur, c.arg(0)));
    t[nr::SCHED_SETSCHEDULER] =
        v(|c| sched::sched_setscheduler(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SCHED_GETPARAM] = v(|c| sched::sched_getparam(c.cur, c.arg(0), c.arg(1)));
    t[nr::SCHED_SETPARAM] = v(|c| sched::sched_setparam(c.cur, c.arg(0), c.arg(1)));
    t[nr::SCHED_GETATTR] =
        v(|c| sched::sched_getattr(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::SCHED_GET_PRIORITY_MAX] = v(|c| sched::sched_get_priority(c.arg(0), true));
    t[nr::SCHED_GET_PRIORITY_MIN] = v(|c| sched::sched_get_priority(c.arg(0), false));
    t[nr::IOPRIO_GET] = v(|c| sched::ioprio_get(c.cur, c.arg(0), c.arg(1)));
    t[nr::IOPRIO_SET] = v(|c| sched::ioprio_set(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SETFSUID] = v(|c| cred::setfsid(c.cur, c.arg(0), true));
    t[nr::SETFSGID] = v(|c| cred::setfsid(c.cur, c.arg(0), false));
    t[nr::SCHED_GETAFFINITY] = v(|c| proc::sched_getaffinity(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SCHED_SETAFFINITY] = v(|c| proc::sched_setaffinity(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::PRLIMIT64] = v(|c| proc::prlimit64(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::GETRLIMIT] = v(|c| proc::prlimit64(c.cur, 0, c.arg(0), 0, c.arg(1)));
    t[nr::SETRLIMIT] = v(|c| proc::prlimit64(c.cur, 0, c.arg(0), c.arg(1), 0));
    t[nr::GETRUSAGE] = v(|c| proc::getrusage(c.cur, c.arg(0), c.arg(1)));
    t[nr::PRCTL] = v(|c| proc::prctl(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::SECCOMP] = v(|c| {
        crate::process::seccomp::seccomp(
            c.cur,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            cred::privileged(c.cur),
        )
    });
    t[nr::RSEQ] = v(|c| crate::process::rseq::rseq(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    // tracing
    t[nr::PTRACE] = v(|c| ptrace::ptrace(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::PROCESS_VM_READV] = v(|c| ptrace::process_vm(c, false));
    t[nr::PROCESS_VM_WRITEV] = v(|c| ptrace::process_vm(c, true));
    // signals
    t[nr::RT_SIGACTION] =
        v(|c| signal::rt_sigaction(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::RT_SIGPROCMASK] =
        v(|c| signal::rt_sigprocmask(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::RT_SIGPENDING] = v(|c| signal::rt_sigpending(c.cur, c.arg(0), c.arg(1)));
    t[nr::RT_SIGSUSPEND] = v(|c| signal::rt_sigsuspend(c.cur, c.arg(0), c.arg(1)));
    t[nr::RT_SIGRETURN] = regs(|c| signal::rt_sigreturn(c.cur, c.tf));
    t[nr::RT_SIGTIMEDWAIT] =
        v(|c| signal::rt_sigtimedwait(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::SIGALTSTACK] = v(|c| signal::sigaltstack(c.cur, c.arg(0), c.arg(1), c.tf));
    t[nr::KILL] = v(|c| signal::kill(c.cur, c.arg(0), c.arg(1)));
    t[nr::TKILL] = v(|c| signal::tgkill(c.cur, -1, c.arg(0), c.arg(1)));
    t[nr::TGKILL] = v(|c| signal::tgkill(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    // time
    t[nr::CLOCK_GETTIME] = v(|c| time::clock_gettime(c.cur, c.arg(0), c.arg(1)));
    t[nr::CLOCK_GETRES] = v(|c| time::clock_getres(c.cur, c.arg(0), c.arg(1)));
    t[nr::GETTIMEOFDAY] = v(|c| time::gettimeofday(c.arg(0), c.arg(1)));
    t[nr::CLOCK_SETTIME] = v(|c| time::clock_settime(c.cur, c.arg(0), c.arg(1)));
    t[nr::SETTIMEOFDAY] = v(|c| time::settimeofday(c.cur, c.arg(0), c.arg(1)));
    t[nr::NANOSLEEP] = v(|c| time::nanosleep(c.cur, c.arg(0), c.arg(1)));
    t[nr::RESTART_SYSCALL] = v(|c| time::restart_syscall(c.cur));
    t[nr::CLOCK_NANOSLEEP] =
        v(|c| time::clock_nanosleep(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::SETITIMER] = v(|c| time::setitimer(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::GETITIMER] = v(|c| time::getitimer(c.cur, c.arg(0), c.arg(1)));
    t[nr::TIMES] = v(|c| time::times(c.cur, c.arg(0)));
    t[nr::TIMER_CREATE] = v(|c| time::timer_create(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::TIMER_SETTIME] =
        v(|c| time::timer_settime(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::TIMER_GETTIME] = v(|c| time::timer_gettime(c.cur, c.arg(0), c.arg(1)));
    t[nr::TIMER_GETOVERRUN] = v(|c| time::timer_getoverrun(c.cur, c.arg(0)));
    t[nr::TIMER_DELETE] = v(|c| time::timer_delete(c.cur, c.arg(0)));
    // sockets
    t[nr::SOCKET] = v(|c| net::socket(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SOCKETPAIR] = v(|c| net::socketpair(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::BIND] = v(|c| net::bind(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::LISTEN] = v(|c| net::listen(c.cur, c.arg(0), c.arg(1)));
    t[nr::ACCEPT] = v(|c| net::accept4(c.cur, c.arg(0), c.arg(1), c.arg(2), 0));
    t[nr::ACCEPT4] = v(|c| net::accept4(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3)));
    t[nr::CONNECT] = v(|c| net::connect(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::GETSOCKNAME] = v(|c| net::getsockname(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::GETPEERNAME] = v(|c| net::getpeername(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SENDTO] = v(|c| {
        net::sendto(
            c.cur,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            c.arg(3),
            c.arg(4),
            c.arg(5),
        )
    });
    t[nr::RECVFROM] = v(|c| {
        net::recvfrom(
            c.cur,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            c.arg(3),
            c.arg(4),
            c.arg(5),
        )
    });
    t[nr::SENDMSG] = v(|c| net::sendmsg(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::RECVMSG] = v(|c| net::recvmsg(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SETSOCKOPT] =
        v(|c| net::setsockopt(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::GETSOCKOPT] =
        v(|c| net::getsockopt(c.cur, c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4)));
    t[nr::SHUTDOWN] = v(|c| net::shutdown(c.cur, c.arg(0), c.arg(1)));
    // system
    t[nr::UNAME] = v(|c| misc::uname(c.arg(0)));
    t[nr::SETHOSTNAME] = v(|c| misc::sethostname(c.cur, c.arg(0), c.arg(1)));
    t[nr::SYSLOG] = v(|c| misc::syslog(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::GETRANDOM] = v(|c| misc::getrandom(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::REBOOT] = v(|c| misc::reboot(c.cur, c.arg(0), c.arg(1), c.arg(2)));
    t[nr::SYSINFO] = v(|c| misc::sysinfo(c.arg(0)));
    t[nr::GETCPU] = v(|c| misc::getcpu(c.arg(0), c.arg(1)));
    t
};

#[cold]
fn unknown(cur: &CurrentTask, n: usize) -> SysResult<usize> {
    let bit = n.min(TABLE_LEN);
    let word = &UNKNOWN_LOGGED[bit / 64];
    // Debug: kept in the kernel log, not printed over a user's terminal.
    if word.fetch_or(1 << (bit % 64), Relaxed) & (1 << (bit % 64)) == 0 {
        let comm = cur.comm();
        let len = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
        log::debug!(
            "unknown syscall {n} ({}) from pid {} ({})",
            nr::name(n).unwrap_or("?"),
            cur.pid(),
            core::str::from_utf8(&comm[..len]).unwrap_or("?")
        );
    }
    Err(Errno::ENOSYS)
}
