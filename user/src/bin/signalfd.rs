//! signalfd4: a descriptor whose reads take the reader's pending signals in its mask as
//! 128-byte `signalfd_siginfo` records (the thread's own queue before its process's, lowest
//! signal first within each), EAGAIN when non-blocking and nothing is pending, EINVAL for a
//! buffer shorter than one record, bad flags or a bad mask size; a second signalfd4 on it
//! replaces the mask; poll and epoll say POLLIN while a signal in the mask is pending; a
//! child that inherits it over fork reads its own signals, not its parent's; SIGCHLD's record
//! carries the child's pid and status.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

const MS: u64 = 1_000_000;
const SIGNALFD4: usize = 74;
const RT_SIGQUEUEINFO: usize = 138;
const SFD_NONBLOCK: u32 = O_NONBLOCK;
const SFD_CLOEXEC: u32 = O_CLOEXEC;
const SI_QUEUE: i32 = -1;
const CLD_EXITED: i32 = 1;
const REC: usize = 128;

fn bit(s: i32) -> u64 {
    1u64 << (s - 1)
}

fn signalfd(fd: i32, mask: u64, flags: u32) -> SysResult<i32> {
    sys::syscall(
        SIGNALFD4,
        &[fd as usize, &mask as *const u64 as usize, 8, flags as usize],
    )
    .map(|r| r as i32)
}

/// One `signalfd_siginfo` record, the members the tests look at.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Rec {
    signo: u32,
    code: i32,
    pid: u32,
    uid: u32,
    status: i32,
    int: i32,
    ptr: u64,
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes(b[o..o + 4].try_into().unwrap())
}

fn rec(b: &[u8]) -> Rec {
    Rec {
        signo: u32_at(b, 0),
        code: u32_at(b, 8) as i32,
        pid: u32_at(b, 12),
        uid: u32_at(b, 16),
        status: u32_at(b, 40) as i32,
        int: u32_at(b, 44) as i32,
        ptr: u64::from_ne_bytes(b[48..56].try_into().unwrap()),
    }
}

/// Reads up to `n` records.
fn read_recs(fd: i32, n: usize) -> SysResult<Vec<Rec>> {
    let mut b = vec![0u8; n * REC];
    let got = sys::read(fd, &mut b)?;
    Ok(b[..got].chunks(REC).map(rec).collect())
}

fn sigqueue(pid: i32, signo: i32, value: u64) -> SysResult {
    let mut info = [0u8; 128];
    info[0..4].copy_from_slice(&(signo as u32).to_ne_bytes());
    info[8..12].copy_from_slice(&SI_QUEUE.to_ne_bytes());
    info[16..20].copy_from_slice(&sys::getpid().to_ne_bytes());
    info[24..32].copy_from_slice(&value.to_ne_bytes());
    sys::syscall(
        RT_SIGQUEUEINFO,
        &[pid as usize, signo as usize, info.as_ptr() as usize],
    )
}

fn poll_now(fd: i32) -> SysResult<i16> {
    let mut p = [Pollfd {
        fd,
        events: POLLIN,
        revents: 0,
    }];
    sys::ppoll(&mut p, Some(&Timespec::default()))?;
    Ok(p[0].revents)
}

/// Runs `f` with `blocked` added to the signal mask, then takes back whatever of `blocked`
/// is still pending (with a signalfd) and restores the mask.
fn with_blocked(blocked: u64, f: impl FnOnce() -> TestResult) -> TestResult {
    let old = t!(sigprocmask(SIG_BLOCK, Some(blocked)));
    let r = f();
    if let Ok(fd) = signalfd(-1, blocked, SFD_NONBLOCK | SFD_CLOEXEC) {
        while read_recs(fd, 8).is_ok() {}
        let _ = sys::close(fd);
    }
    t!(sigprocmask(SIG_SETMASK, Some(old)));
    r
}

/// Records for kill and sigqueue, several per read; signals outside the mask stay pending;
/// the descriptor's flags and name.
fn reads_pending_signals() -> TestResult {
    with_blocked(bit(SIGUSR1) | bit(SIGUSR2) | bit(SIGRTMIN), || {
        let fd = t!(signalfd(
            -1,
            bit(SIGUSR1) | bit(SIGRTMIN),
            SFD_NONBLOCK | SFD_CLOEXEC
        ));
        check_eq!(sys::fcntl(fd, F_GETFD, 0), Ok(1), "SFD_CLOEXEC");
        check!(
            t!(sys::fcntl(fd, F_GETFL, 0)) as u32 & (O_NONBLOCK | 3) == O_NONBLOCK | O_RDWR,
            "O_RDWR | O_NONBLOCK"
        );
        let mut link = [0u8; 64];
        let n = t!(sys::readlinkat(
            AT_FDCWD,
            &format!("/proc/self/fd/{fd}"),
            &mut link
        ));
        check_eq!(&link[..n], b"anon_inode:[signalfd]");
        check_eq!(read_recs(fd, 1), Err(EAGAIN));
        check_eq!(poll_now(fd), Ok(0));
        let me = sys::getpid();
        t!(sys::kill(me, SIGUSR2));
        check_eq!(read_recs(fd, 1), Err(EAGAIN), "SIGUSR2 is not in the mask");
        check_eq!(poll_now(fd), Ok(0));
        t!(sys::kill(me, SIGUSR1));
        check_eq!(poll_now(fd), Ok(POLLIN));
        let r = t!(read_recs(fd, 4));
        check_eq!(r.len(), 1);
        check_eq!(
            (r[0].signo, r[0].code, r[0].pid as i32, r[0].uid),
            (SIGUSR1 as u32, SI_USER, me, 0)
        );
        check_eq!(read_recs(fd, 1), Err(EAGAIN));
        // Real-time signals queue: both come, in order, in one read.
        t!(sigqueue(me, SIGRTMIN, 0x1_0000_0005));
        t!(sigqueue(me, SIGRTMIN, 6));
        let r = t!(read_recs(fd, 3));
        check_eq!(r.len(), 2);
        check_eq!(
            (r[0].signo, r[0].code, r[0].int, r[0].ptr),
            (SIGRTMIN as u32, SI_QUEUE, 5, 0x1_0000_0005)
        );
        check_eq!((r[1].int, r[1].ptr), (6, 6));
        // A buffer shorter than a record; writes.
        let mut short = [0u8; REC - 1];
        check_eq!(sys::read(fd, &mut short), Err(EINVAL));
        check_eq!(sys::write(fd, &[0u8; 8]), Err(EINVAL));
        // SIGUSR2 is still pending for the thread; a new mask through the same descriptor.
        check!(t!(sigpending()) & bit(SIGUSR2) != 0);
        check_eq!(signalfd(fd, bit(SIGUSR2), 0), Ok(fd));
        check_eq!(poll_now(fd), Ok(POLLIN));
        let r = t!(read_recs(fd, 1));
        check_eq!(r[0].signo, SIGUSR2 as u32);
        check_eq!(t!(sigpending()) & (bit(SIGUSR1) | bit(SIGUSR2)), 0);
        t!(sys::close(fd));
        Ok(())
    })
}

/// The line of /proc/self/fdinfo/FD that starts with `key`.
fn fdinfo_line(fd: i32, key: &str) -> Result<String, String> {
    let text = io::read_file(&format!("/proc/self/fdinfo/{fd}")).map_err(|e| format!("{e:?}"))?;
    String::from_utf8_lossy(&text)
        .lines()
        .find(|l| l.starts_with(key))
        .map(String::from)
        .ok_or_else(|| format!("no {key} in fdinfo"))
}

/// Bad flags, sizes, masks and descriptors; SIGKILL and SIGSTOP in the mask are no error.
fn errors() -> TestResult {
    check_eq!(signalfd(-1, bit(SIGUSR1), 1), Err(EINVAL), "flags");
    for size in [0usize, 4, 16, 128] {
        let m = bit(SIGUSR1);
        let r = sys::syscall(SIGNALFD4, &[usize::MAX, &m as *const u64 as usize, size, 0]);
        check_eq!(r, Err(EINVAL), "sizemask {size}");
    }
    check_eq!(
        sys::syscall(SIGNALFD4, &[usize::MAX, 8, 8, 0]),
        Err(EFAULT),
        "mask at a bad address"
    );
    check_eq!(
        sys::syscall(SIGNALFD4, &[usize::MAX, 8, 8, 1]),
        Err(EFAULT),
        "the mask is read before the flags are checked"
    );
    let [r, w] = t!(sys::pipe2(O_CLOEXEC));
    check_eq!(signalfd(r, bit(SIGUSR1), 0), Err(EINVAL), "not a signalfd");
    t!(sys::close(r));
    t!(sys::close(w));
    check_eq!(
        signalfd(r, bit(SIGUSR1), 0),
        Err(EBADF),
        "a closed descriptor"
    );
    check_eq!(signalfd(-2, bit(SIGUSR1), 0), Err(EBADF));
    // SIGKILL and SIGSTOP leave the mask (fdinfo's `sigmask:` shows it).
    let fd = t!(signalfd(
        -1,
        bit(SIGKILL) | bit(SIGSTOP) | bit(SIGUSR1),
        SFD_CLOEXEC
    ));
    check_eq!(
        sys::fcntl(fd, F_GETFL, 0).map(|f| f as u32 & O_NONBLOCK),
        Ok(0)
    );
    check_eq!(
        t!(fdinfo_line(fd, "sigmask:")),
        "sigmask:\t0000000000000200"
    );
    check_eq!(signalfd(fd, bit(SIGKILL) | bit(SIGRTMIN), 0), Ok(fd));
    check_eq!(
        t!(fdinfo_line(fd, "sigmask:")),
        "sigmask:\t0000000080000000"
    );
    t!(sys::close(fd));
    Ok(())
}

/// The thread's own queue comes first, then the process's: a tgkill'd SIGUSR2 before a
/// kill'ed SIGUSR1, and the same standard signal may be pending in both.
fn thread_queue_then_process_queue() -> TestResult {
    with_blocked(bit(SIGUSR1) | bit(SIGUSR2), || {
        let fd = t!(signalfd(
            -1,
            bit(SIGUSR1) | bit(SIGUSR2),
            SFD_NONBLOCK | SFD_CLOEXEC
        ));
        let me = sys::getpid();
        t!(sys::kill(me, SIGUSR1));
        t!(sys::tgkill(me, sys::gettid(), SIGUSR2));
        t!(sys::tgkill(me, sys::gettid(), SIGUSR1));
        let r = t!(read_recs(fd, 4));
        let got: Vec<(u32, i32)> = r.iter().map(|r| (r.signo, r.code)).collect();
        check_eq!(
            got,
            vec![
                (SIGUSR1 as u32, SI_TKILL),
                (SIGUSR2 as u32, SI_TKILL),
                (SIGUSR1 as u32, SI_USER)
            ]
        );
        t!(sys::close(fd));
        Ok(())
    })
}

/// A blocking read waits for a signal a child sends; epoll reports the descriptor readable,
/// before and after a wait.
fn blocking_read_and_epoll() -> TestResult {
    with_blocked(bit(SIGUSR1), || {
        let fd = t!(signalfd(-1, bit(SIGUSR1), SFD_CLOEXEC));
        let parent = sys::getpid();
        let child = t!(spawn(move || {
            sys::sleep_ns(50 * MS);
            sys::kill(parent, SIGUSR1).is_err() as i32
        }));
        let r = t!(read_recs(fd, 1));
        check_eq!((r[0].signo, r[0].pid as i32), (SIGUSR1 as u32, child));
        let (_, st) = t!(sys::waitpid(child, 0));
        check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));

        let ep = t!(sys::epoll_create1(O_CLOEXEC)) as i32;
        let ev = EpollEvent {
            events: EPOLLIN,
            data: 77,
        };
        t!(sys::epoll_ctl(ep, EPOLL_CTL_ADD, fd, Some(&ev)));
        let wait = |ms: i32| {
            let mut out = [EpollEvent::default()];
            sys::epoll_wait(ep, &mut out, ms).map(|n| (n, out[0].events, out[0].data))
        };
        check_eq!(wait(0), Ok((0, 0, 0)));
        let child = t!(spawn(move || {
            sys::sleep_ns(50 * MS);
            sys::kill(parent, SIGUSR1).is_err() as i32
        }));
        let t0 = sys::now_ns();
        check_eq!(wait(5000), Ok((1, EPOLLIN, 77)));
        check!(sys::now_ns() - t0 < 4000 * MS, "woken by the signal");
        check_eq!(wait(0), Ok((1, EPOLLIN, 77)), "level-triggered");
        check_eq!(t!(read_recs(fd, 1))[0].signo, SIGUSR1 as u32);
        check_eq!(wait(0), Ok((0, 0, 0)));
        let (_, st) = t!(sys::waitpid(child, 0));
        check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
        t!(sys::close(ep));
        t!(sys::close(fd));
        Ok(())
    })
}

/// Over fork the descriptor reads the reader's signals: the child does not see the parent's
/// pending SIGUSR1 but its own SIGUSR2; the parent's stays for the parent. SIGCHLD's record
/// has the child's pid and exit status.
fn inherited_descriptor_reads_the_reader() -> TestResult {
    with_blocked(bit(SIGUSR1) | bit(SIGUSR2) | bit(SIGCHLD), || {
        let fd = t!(signalfd(
            -1,
            bit(SIGUSR1) | bit(SIGUSR2) | bit(SIGCHLD),
            SFD_NONBLOCK | SFD_CLOEXEC
        ));
        t!(sys::kill(sys::getpid(), SIGUSR1));
        let child = t!(spawn(move || {
            if read_recs(fd, 1) != Err(EAGAIN) || poll_now(fd) != Ok(0) {
                return 2;
            }
            if sys::kill(sys::getpid(), SIGUSR2).is_err() {
                return 3;
            }
            match read_recs(fd, 1) {
                Ok(r) if r.len() == 1 && r[0].signo == SIGUSR2 as u32 => 7,
                _ => 4,
            }
        }));
        let (_, st) = t!(sys::waitpid(child, 0));
        check!(wifexited(st) && wexitstatus(st) == 7, "{}", describe(st));
        let r = t!(read_recs(fd, 4));
        let got: Vec<u32> = r.iter().map(|r| r.signo).collect();
        check_eq!(got, vec![SIGUSR1 as u32, SIGCHLD as u32]);
        check_eq!(
            (r[1].code, r[1].pid as i32, r[1].status),
            (CLD_EXITED, child, 7)
        );
        t!(sys::close(fd));
        Ok(())
    })
}

fn main(_a: &rt::Args) -> i32 {
    mount_when_init();
    ktap::run(&[
        ("reads_pending_signals", reads_pending_signals),
        ("errors", errors),
        (
            "thread_queue_then_process_queue",
            thread_queue_then_process_queue,
        ),
        ("blocking_read_and_epoll", blocking_read_and_epoll),
        (
            "inherited_descriptor_reads_the_reader",
            inherited_descriptor_reads_the_reader,
        ),
    ])
}

entry!(main);
