//! System calls: one dispatch table, one file per area. Handlers return `SysResult<usize>`; the
//! dispatcher turns errors into `-errno` in x0.

pub mod cred;
pub mod fs;
pub mod misc;
pub mod mm;
pub mod proc;
pub mod signal;
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
    let n = tf.x[8];
    let a = Args([tf.x[0], tf.x[1], tf.x[2], tf.x[3], tf.x[4], tf.x[5]]);
    {
        // SAFETY: the current task's own locals.
        let l = unsafe { task::current().local() };
        l.orig_x0 = tf.x[0];
        l.in_syscall = n as i64;
    }
    let me = task::current();
    crate::fpstate::syscall_entry(me);
    let r = call(n as usize, a, tf);
    // rt_sigreturn sets every register itself, x0 included.
    if n as usize != nr::RT_SIGRETURN || r.is_err() {
        tf.x[0] = match r {
            Ok(v) => v as u64,
            Err(e) => (-(e as i64)) as u64,
        };
    }
}

fn call(n: usize, a: Args, tf: &mut TrapFrame) -> SysResult<usize> {
    match n {
        // files
        nr::OPENAT => fs::openat(a.i(0), a.u(1), a.u32(2), a.u32(3)),
        nr::CLOSE => fs::close(a.i(0)),
        nr::READ => fs::read(a.i(0), a.u(1), a.u(2)),
        nr::WRITE => fs::write(a.i(0), a.u(1), a.u(2)),
        nr::READV => fs::readv(a.i(0), a.u(1), a.u(2)),
        nr::WRITEV => fs::writev(a.i(0), a.u(1), a.u(2)),
        nr::PREAD64 => fs::pread64(a.i(0), a.u(1), a.u(2), a.0[3] as i64),
        nr::PWRITE64 => fs::pwrite64(a.i(0), a.u(1), a.u(2), a.0[3] as i64),
        nr::LSEEK => fs::lseek(a.i(0), a.0[1] as i64, a.u32(2)),
        nr::NEWFSTATAT => fs::newfstatat(a.i(0), a.u(1), a.u(2), a.u32(3)),
        nr::FSTAT => fs::fstat(a.i(0), a.u(1)),
        nr::STATX => fs::statx(a.i(0), a.u(1), a.u32(2), a.u32(3), a.u(4)),
        nr::GETDENTS64 => fs::getdents64(a.i(0), a.u(1), a.u(2)),
        nr::READLINKAT => fs::readlinkat(a.i(0), a.u(1), a.u(2), a.u(3)),
        nr::FACCESSAT => fs::faccessat(a.i(0), a.u(1), a.u32(2), 0),
        nr::FACCESSAT2 => fs::faccessat(a.i(0), a.u(1), a.u32(2), a.u32(3)),
        nr::CHDIR => fs::chdir(a.u(0)),
        nr::FCHDIR => fs::fchdir(a.i(0)),
        nr::GETCWD => fs::getcwd(a.u(0), a.u(1)),
        nr::MKDIRAT => fs::mkdirat(a.i(0), a.u(1), a.u32(2)),
        nr::UNLINKAT => fs::unlinkat(a.i(0), a.u(1), a.u32(2)),
        nr::SYMLINKAT => fs::symlinkat(a.u(0), a.i(1), a.u(2)),
        nr::MKNODAT => fs::mknodat(a.i(0), a.u(1), a.u32(2), a.0[3]),
        nr::FTRUNCATE => fs::ftruncate(a.i(0), a.0[1] as i64),
        nr::FSYNC | nr::FDATASYNC => fs::fsync(a.i(0)),
        nr::SYNC => Ok(0),
        nr::PIPE2 => fs::pipe2(a.u(0), a.u32(1)),
        nr::DUP => fs::dup(a.i(0)),
        nr::DUP3 => fs::dup3(a.i(0), a.i(1), a.u32(2)),
        nr::FCNTL => fs::fcntl(a.i(0), a.u32(1), a.u(2)),
        nr::IOCTL => fs::ioctl(a.i(0), a.u32(1), a.u(2)),
        nr::EPOLL_CREATE1 => fs::epoll_create1(a.u32(0)),
        nr::EPOLL_CTL => fs::epoll_ctl(a.i(0), a.u32(1), a.i(2), a.u(3)),
        nr::EPOLL_PWAIT => fs::epoll_pwait(a.i(0), a.u(1), a.i(2), a.i(3), a.u(4), a.u(5)),
        nr::PPOLL => fs::ppoll(a.u(0), a.u(1), a.u(2), a.u(3), a.u(4)),
        nr::PSELECT6 => fs::pselect6(a.i(0), a.u(1), a.u(2), a.u(3), a.u(4), a.u(5)),
        nr::MOUNT => fs::mount(a.u(0), a.u(1), a.u(2), a.u(3) as u64, a.u(4)),
        nr::UMOUNT2 => fs::umount2(a.u(0), a.u32(1)),
        nr::UMASK => fs::umask(a.u32(0)),
        nr::STATFS => fs::statfs(a.u(0), a.u(1)),
        nr::FSTATFS => fs::fstatfs(a.i(0), a.u(1)),
        nr::FCHMOD | nr::FCHMODAT | nr::FCHOWN | nr::FCHOWNAT | nr::UTIMENSAT => Ok(0),
        // memory
        nr::BRK => mm::brk(a.u(0)),
        nr::MMAP => mm::mmap(a.u(0), a.u(1), a.u32(2), a.u32(3), a.i(4), a.0[5]),
        nr::MUNMAP => mm::munmap(a.u(0), a.u(1)),
        nr::MPROTECT => mm::mprotect(a.u(0), a.u(1), a.u32(2)),
        nr::MADVISE => mm::madvise(a.u(0), a.u(1), a.u32(2)),
        nr::MREMAP => mm::mremap(a.u(0), a.u(1), a.u(2), a.u32(3), a.u(4)),
        nr::MSYNC => mm::msync(a.u(0), a.u(1), a.u32(2)),
        // processes
        nr::CLONE => proc::clone(a.0[0], a.u(1), a.u(2), a.0[3], a.u(4), tf),
        nr::CLONE3 => Err(Errno::ENOSYS),
        nr::EXECVE => proc::execve(a.u(0), a.u(1), a.u(2), tf),
        nr::EXIT => proc::exit(a.i(0)),
        nr::EXIT_GROUP => proc::exit_group(a.i(0)),
        nr::WAIT4 => proc::wait4(a.i(0), a.u(1), a.u32(2), a.u(3)),
        nr::WAITID => proc::waitid(a.u32(0), a.i(1), a.u(2), a.u32(3), a.u(4)),
        nr::GETPID => Ok(task::current().pid() as usize),
        nr::GETTID => Ok(task::current().tid as usize),
        nr::GETPPID => Ok(task::current().process().ppid() as usize),
        nr::GETUID => Ok(cred::getuid(false)),
        nr::GETEUID => Ok(cred::getuid(true)),
        nr::GETGID | nr::GETEGID => Ok(0),
        nr::SETUID => cred::setuid(a.u32(0)),
        nr::GETRESUID | nr::GETRESGID => proc::getres(a.u(0), a.u(1), a.u(2)),
        nr::SETGID | nr::SETRESUID | nr::SETRESGID | nr::SETREUID | nr::SETREGID => Ok(0),
        nr::GETGROUPS => Ok(0),
        nr::SETPGID => proc::setpgid(a.i(0), a.i(1)),
        nr::GETPGID => proc::getpgid(a.i(0)),
        nr::GETSID => proc::getsid(a.i(0)),
        nr::SETSID => proc::setsid(),
        nr::SET_TID_ADDRESS => proc::set_tid_address(a.u(0)),
        nr::SET_ROBUST_LIST => proc::set_robust_list(a.u(0), a.u(1)),
        nr::GET_ROBUST_LIST => proc::get_robust_list(a.i(0), a.u(1), a.u(2)),
        nr::FUTEX => {
            crate::task::futex::futex(a.u(0), a.u32(1), a.u32(2), a.u(3), a.u(4), a.u32(5))
        }
        nr::SCHED_YIELD => {
            task::sched::yield_now();
            Ok(0)
        }
        nr::SCHED_GETAFFINITY => proc::sched_getaffinity(a.i(0), a.u(1), a.u(2)),
        nr::SCHED_SETAFFINITY => proc::sched_setaffinity(a.i(0), a.u(1), a.u(2)),
        nr::PRLIMIT64 => proc::prlimit64(a.i(0), a.u32(1), a.u(2), a.u(3)),
        nr::GETRLIMIT => proc::prlimit64(0, a.u32(0), 0, a.u(1)),
        nr::SETRLIMIT => proc::prlimit64(0, a.u32(0), a.u(1), 0),
        nr::GETRUSAGE => proc::getrusage(a.i(0), a.u(1)),
        nr::PRCTL => proc::prctl(a.u32(0), a.u(1), a.u(2), a.u(3), a.u(4)),
        nr::RSEQ => Err(Errno::ENOSYS),
        // signals
        nr::RT_SIGACTION => signal::rt_sigaction(a.i(0), a.u(1), a.u(2), a.u(3)),
        nr::RT_SIGPROCMASK => signal::rt_sigprocmask(a.u32(0), a.u(1), a.u(2), a.u(3)),
        nr::RT_SIGPENDING => signal::rt_sigpending(a.u(0), a.u(1)),
        nr::RT_SIGSUSPEND => signal::rt_sigsuspend(a.u(0), a.u(1)),
        nr::RT_SIGRETURN => signal::rt_sigreturn(tf),
        nr::RT_SIGTIMEDWAIT => signal::rt_sigtimedwait(a.u(0), a.u(1), a.u(2), a.u(3)),
        nr::SIGALTSTACK => signal::sigaltstack(a.u(0), a.u(1), tf),
        nr::KILL => signal::kill(a.i(0), a.i(1)),
        nr::TKILL => signal::tgkill(-1, a.i(0), a.i(1)),
        nr::TGKILL => signal::tgkill(a.i(0), a.i(1), a.i(2)),
        // time
        nr::CLOCK_GETTIME => time::clock_gettime(a.u32(0), a.u(1)),
        nr::CLOCK_GETRES => time::clock_getres(a.u32(0), a.u(1)),
        nr::GETTIMEOFDAY => time::gettimeofday(a.u(0)),
        nr::NANOSLEEP => time::nanosleep(a.u(0), a.u(1)),
        nr::CLOCK_NANOSLEEP => time::clock_nanosleep(a.u32(0), a.u32(1), a.u(2), a.u(3)),
        nr::SETITIMER => time::setitimer(a.u32(0), a.u(1), a.u(2)),
        nr::GETITIMER => time::getitimer(a.u32(0), a.u(1)),
        nr::TIMES => time::times(a.u(0)),
        // system
        nr::UNAME => misc::uname(a.u(0)),
        nr::GETRANDOM => misc::getrandom(a.u(0), a.u(1), a.u32(2)),
        nr::REBOOT => misc::reboot(a.u32(0), a.u32(1), a.u32(2)),
        nr::SYSINFO => misc::sysinfo(a.u(0)),
        nr::GETCPU => misc::getcpu(a.u(0), a.u(1)),
        _ => {
            if UNKNOWN_LOGGED.lock().insert(n as u64) {
                log::warn!(
                    "unknown syscall {n} ({}) from pid {}",
                    nr::name(n).unwrap_or("?"),
                    task::current().pid()
                );
            }
            Err(Errno::ENOSYS)
        }
    }
}
