//! Calls Debian's programs use, with Linux's semantics: a sleep stopped and continued resumes
//! towards its first deadline (restart_syscall), large reads of /dev/urandom and getrandom
//! come back whole.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

const MS: u64 = 1_000_000;

/// A child sleeps 300 ms (nanosleep, or clock_nanosleep if `clock`); the parent stops it at
/// 100 ms and continues it at 150 ms. Linux resumes the sleep through restart_syscall, towards
/// the first deadline: it returns 0 at 300 ms (a sleep started over would end at 450 ms or
/// later; an EINTR would end at 150 ms).
fn stopped_sleep_resumes(clock: bool) -> TestResult {
    let pid = t!(spawn(move || {
        let t0 = sys::now_ns();
        let req = Timespec::from_ns(300 * MS);
        let r = if clock {
            sys::syscall(
                nr::CLOCK_NANOSLEEP,
                &[CLOCK_MONOTONIC as usize, 0, &req as *const _ as usize, 0],
            )
        } else {
            sys::nanosleep(&req, None)
        };
        let took = (sys::now_ns() - t0) / MS;
        match r {
            Ok(0) if (300..420).contains(&took) => 0,
            Ok(0) if took >= 420 => 2,
            Ok(_) => 3,
            Err(_) => 4,
        }
    }));
    sys::sleep_ns(100 * MS);
    t!(sys::kill(pid, SIGSTOP));
    let (_, st) = t!(sys::waitpid(pid, WUNTRACED));
    check!(wifstopped(st), "{}", describe(st));
    sys::sleep_ns(50 * MS);
    t!(sys::kill(pid, SIGCONT));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check!(
        wifexited(st) && wexitstatus(st) == 0,
        "{} (2: the sleep started over, 4: it failed, EINTR)",
        describe(st)
    );
    Ok(())
}

fn nanosleep_resumes_after_stop() -> TestResult {
    stopped_sleep_resumes(false)
}

fn clock_nanosleep_resumes_after_stop() -> TestResult {
    stopped_sleep_resumes(true)
}

/// restart_syscall with nothing to restart is EINTR.
fn restart_syscall_alone_is_eintr() -> TestResult {
    check_eq!(sys::syscall(128, &[]), Err(EINTR));
    Ok(())
}

/// Reads of /dev/urandom and getrandom of 1 MiB and 8 MiB return every byte in one call (Linux
/// 7.3 returns 64 MiB whole too; smaller here to keep the run short).
fn large_random_reads_are_whole() -> TestResult {
    const BIG: usize = 8 << 20;
    let buf = t!(sys::mmap_anon(BIG));
    // SAFETY: a fresh private mapping of BIG bytes, used only here.
    let b = unsafe { core::slice::from_raw_parts_mut(buf as *mut u8, BIG) };
    let fd = t!(sys::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
    for len in [1 << 20, BIG] {
        check_eq!(sys::read(fd, &mut b[..len]), Ok(len), "read of {len} bytes");
        check_eq!(
            sys::getrandom(&mut b[..len], 0),
            Ok(len),
            "getrandom of {len}"
        );
    }
    // Not all zero (a fill that stopped early would leave the fresh mapping's zeros).
    check!(b[BIG - 4096..].iter().any(|&x| x != 0));
    t!(sys::close(fd));
    t!(sys::munmap(buf, BIG));
    Ok(())
}

/// As the first process (a lone boot), mounts what the tests use: /dev, /proc and /tmp.
fn mount_when_init() {
    if sys::getpid() != 1 {
        return;
    }
    for (target, fstype) in [("/dev", "devtmpfs"), ("/proc", "proc"), ("/tmp", "tmpfs")] {
        let _ = sys::mkdirat(AT_FDCWD, target, 0o755);
        let _ = sys::mount(fstype, target, fstype, 0);
    }
}

fn main(_a: &rt::Args) -> i32 {
    mount_when_init();
    ktap::run(&[
        ("nanosleep_resumes_after_stop", nanosleep_resumes_after_stop),
        (
            "clock_nanosleep_resumes_after_stop",
            clock_nanosleep_resumes_after_stop,
        ),
        (
            "restart_syscall_alone_is_eintr",
            restart_syscall_alone_is_eintr,
        ),
        ("large_random_reads_are_whole", large_random_reads_are_whole),
    ])
}

entry!(main);
