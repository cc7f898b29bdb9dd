//! The console as a terminal, without anyone typing: termios get/set round trips on
//! /dev/console and /dev/tty, the window size, ENOTTY and ENXIO without a controlling terminal,
//! /dev/full, O_NONBLOCK reads, FIONREAD and poll, and in a session of its own: TIOCSCTTY,
//! TIOCGPGRP/TIOCSPGRP/TIOCGSID with their errors, SIGTTOU for background writers (TOSTOP) and
//! tcsetpgrp, SIGTTIN for background readers (EIO when ignored), /dev/console exempt.
//! Everything it changes on the console is put back.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicI32, Ordering};
use svelt_abi::uapi::tty::{self as tt, Termios, Termios2, Winsize};
use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;
use zerocopy::FromZeros;

const BOUND_NS: u64 = 20_000_000_000;

fn ioctl_ptr<T>(fd: i32, req: u32, v: &mut T) -> SysResult {
    sys::ioctl(fd, req as usize, v as *mut T as usize)
}

fn tcgets(fd: i32) -> SysResult<Termios> {
    let mut t = Termios::new_zeroed();
    ioctl_ptr(fd, tt::TCGETS, &mut t)?;
    Ok(t)
}

fn tcsets(fd: i32, req: u32, t: &Termios) -> SysResult {
    let mut t = *t;
    ioctl_ptr(fd, req, &mut t)
}

fn console() -> SysResult<i32> {
    sys::open("/dev/console", O_RDWR | O_NOCTTY)
}

fn setsid() -> SysResult {
    sys::syscall(nr::SETSID, &[])
}

/// /dev as devtmpfs has it (a program run as the first process on Linux finds only the
/// initramfs's two nodes).
fn ensure_dev() {
    if sys::stat("/dev/full").is_err() {
        let _ = sys::mount("devtmpfs", "/dev", "devtmpfs", 0);
    }
}

fn termios_round_trip() -> TestResult {
    let fd = t!(console());
    let orig = t!(tcgets(fd));
    check!(orig.c_lflag & (tt::ICANON | tt::ECHO | tt::ISIG) == tt::ICANON | tt::ECHO | tt::ISIG);
    check_eq!(orig.c_cc[tt::VINTR], 3);
    check_eq!(orig.c_cc[tt::VEOF], 4);
    check_eq!(orig.c_cc[tt::VMIN], 1);
    let mut t = orig;
    t.c_lflag &= !(tt::ECHO | tt::ICANON);
    t.c_cc[tt::VMIN] = 0;
    t.c_cc[tt::VTIME] = 3;
    for req in [tt::TCSETS, tt::TCSETSW, tt::TCSETSF] {
        t!(tcsets(fd, req, &t));
        check_eq!(t!(tcgets(fd)), t, "after {req:#x}");
    }
    let mut t2 = Termios2 {
        termios: Termios::new_zeroed(),
        c_ispeed: 0,
        c_ospeed: 0,
    };
    t!(ioctl_ptr(fd, tt::TCGETS2, &mut t2));
    check_eq!(t2.termios, t, "TCGETS2");
    check!(t2.c_ospeed > 0, "a line speed");
    t2.termios = orig;
    t!(ioctl_ptr(fd, tt::TCSETS2, &mut t2));
    check_eq!(t!(tcgets(fd)), orig, "restored through TCSETS2");
    check_eq!(
        sys::ioctl(fd, tt::TCGETS as usize, 8),
        Err(EFAULT),
        "a bad pointer"
    );
    t!(sys::close(fd));
    Ok(())
}

fn window_size() -> TestResult {
    let fd = t!(console());
    let mut orig = Winsize::default();
    t!(ioctl_ptr(fd, tt::TIOCGWINSZ, &mut orig));
    let mut w = Winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 1,
        ws_ypixel: 2,
    };
    t!(ioctl_ptr(fd, tt::TIOCSWINSZ, &mut w));
    let mut got = Winsize::default();
    t!(ioctl_ptr(fd, tt::TIOCGWINSZ, &mut got));
    check_eq!(got, w);
    t!(ioctl_ptr(fd, tt::TIOCSWINSZ, &mut orig));
    t!(sys::close(fd));
    Ok(())
}

fn not_a_terminal() -> TestResult {
    let mut t = Termios::new_zeroed();
    let [r, w] = t!(sys::pipe2(0));
    let null = t!(sys::open("/dev/null", O_RDWR));
    for fd in [r, null] {
        check_eq!(ioctl_ptr(fd, tt::TCGETS, &mut t), Err(ENOTTY));
        check_eq!(ioctl_ptr(fd, tt::TCSETS, &mut t), Err(ENOTTY));
        let mut ws = Winsize::default();
        check_eq!(ioctl_ptr(fd, tt::TIOCGWINSZ, &mut ws), Err(ENOTTY));
    }
    for fd in [r, w, null] {
        t!(sys::close(fd));
    }
    // This process has no controlling terminal (the console never becomes one by opening
    // /dev/console).
    let c = t!(console());
    let mut g = 0i32;
    check_eq!(ioctl_ptr(c, tt::TIOCGPGRP, &mut g), Err(ENOTTY));
    check_eq!(ioctl_ptr(c, tt::TIOCGSID, &mut g), Err(ENOTTY));
    g = sys::getpgid(0).unwrap_or(0);
    check_eq!(ioctl_ptr(c, tt::TIOCSPGRP, &mut g), Err(ENOTTY));
    check_eq!(sys::ioctl(c, tt::TIOCNOTTY as usize, 0), Err(ENOTTY));
    check_eq!(
        sys::open("/dev/tty", O_RDWR),
        Err(ENXIO),
        "/dev/tty without one"
    );
    t!(sys::close(c));
    Ok(())
}

fn dev_full() -> TestResult {
    let fd = t!(sys::open("/dev/full", O_RDWR));
    check_eq!(sys::write(fd, b"x"), Err(ENOSPC));
    let mut b = [0xffu8; 16];
    check_eq!(sys::read(fd, &mut b), Ok(16));
    check_eq!(b, [0u8; 16]);
    t!(sys::close(fd));
    Ok(())
}

fn nonblocking_read_and_poll() -> TestResult {
    let fd = t!(sys::open("/dev/console", O_RDWR | O_NOCTTY | O_NONBLOCK));
    let mut n = -1i32;
    t!(ioctl_ptr(fd, tt::FIONREAD, &mut n));
    check_eq!(n, 0, "FIONREAD");
    let mut b = [0u8; 8];
    check_eq!(sys::read(fd, &mut b), Err(EAGAIN));
    let mut fds = [Pollfd {
        fd,
        events: POLLIN | POLLOUT,
        revents: 0,
    }];
    // Nothing to read. POLLOUT depends on room in the output buffer, which Linux's UART may
    // not have at that moment while it sends the test's own output.
    let n = t!(sys::ppoll(&mut fds, Some(&Timespec::from_ns(0))));
    check!(n <= 1, "ppoll counted {n} descriptors");
    check_eq!(fds[0].revents & POLLIN, 0, "nothing to read");
    // Non-canonical with VMIN = VTIME = 0: a read returns at once with nothing.
    let orig = t!(tcgets(fd));
    let mut t = orig;
    t.c_lflag &= !tt::ICANON;
    t.c_cc[tt::VMIN] = 0;
    t.c_cc[tt::VTIME] = 0;
    t!(tcsets(fd, tt::TCSETS, &t));
    let r = sys::read(fd, &mut b);
    // VTIME 1: a tenth of a second, then 0 bytes.
    t.c_cc[tt::VTIME] = 1;
    t!(tcsets(fd, tt::TCSETS, &t));
    t!(sys::fcntl(fd, F_SETFL, O_RDWR as usize));
    let start = sys::now_ns();
    let r2 = sys::read(fd, &mut b);
    let took = sys::now_ns() - start;
    t!(tcsets(fd, tt::TCSETS, &orig));
    check_eq!(r, Ok(0), "VMIN 0 VTIME 0 (O_NONBLOCK too)");
    check_eq!(r2, Ok(0), "VTIME expired");
    check!(took >= 50_000_000, "waited {took} ns");
    t!(sys::close(fd));
    Ok(())
}

/// Runs `f` as the leader of a new session with the console as its controlling terminal
/// (given as a descriptor of /dev/tty), in a child; the console's modes are put back after.
fn in_session(f: fn(i32) -> TestResult) -> TestResult {
    let c = t!(console());
    let orig = t!(tcgets(c));
    let r = in_child_bounded(
        || {
            ktap::child_status(
                "session",
                (|| {
                    let me = sys::getpid();
                    check_eq!(setsid(), Ok(me as usize));
                    let mut g = 0i32;
                    check_eq!(ioctl_ptr(c, tt::TIOCGPGRP, &mut g), Err(ENOTTY), "none yet");
                    check_eq!(sys::open("/dev/tty", O_RDWR), Err(ENXIO));
                    t!(sys::ioctl(c, tt::TIOCSCTTY as usize, 0));
                    let tty = t!(sys::open("/dev/tty", O_RDWR));
                    f(tty)
                })(),
            )
        },
        BOUND_NS,
    );
    let _ = tcsets(c, tt::TCSETS, &orig);
    t!(sys::close(c));
    let (st, timed_out) = t!(r);
    check!(!timed_out, "timed out");
    check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
    Ok(())
}

/// A process group outside the session the tests make (a sleeping child in a group of its
/// own), for TIOCSPGRP's EPERM.
static OTHER_PGRP: AtomicI32 = AtomicI32::new(0);

fn controlling_terminal() -> TestResult {
    let other = t!(spawn(|| {
        let _ = sys::setpgid(0, 0);
        sys::sleep_ns(BOUND_NS);
        0
    }));
    let _ = sys::setpgid(other, other);
    OTHER_PGRP.store(other, Ordering::Relaxed);
    let r = in_session(|tty| {
        let me = sys::getpid();
        let mut g = 0i32;
        t!(ioctl_ptr(tty, tt::TIOCGPGRP, &mut g));
        check_eq!(g, me, "the leader's group is in the foreground");
        t!(ioctl_ptr(tty, tt::TIOCGSID, &mut g));
        check_eq!(g, me);
        check_eq!(
            sys::ioctl(tty, tt::TIOCSCTTY as usize, 0),
            Ok(0),
            "already ours"
        );
        check_eq!(
            tcgets(tty).map(|t| t.c_cc[tt::VINTR]),
            Ok(3),
            "/dev/tty is a terminal"
        );
        g = -1;
        check_eq!(ioctl_ptr(tty, tt::TIOCSPGRP, &mut g), Err(EINVAL));
        g = 0x3fff_fff0;
        check_eq!(ioctl_ptr(tty, tt::TIOCSPGRP, &mut g), Err(ESRCH));
        g = OTHER_PGRP.load(Ordering::Relaxed);
        check_eq!(
            ioctl_ptr(tty, tt::TIOCSPGRP, &mut g),
            Err(EPERM),
            "a group of another session"
        );
        // A child that gives up the terminal (not a leader: only itself).
        let st = t!(in_child(|| {
            let ok = sys::ioctl(tty, tt::TIOCNOTTY as usize, 0) == Ok(0)
                && sys::open("/dev/tty", O_RDWR) == Err(ENXIO);
            i32::from(!ok)
        }));
        check_eq!(st, 0, "TIOCNOTTY in a member");
        check!(sys::open("/dev/tty", O_RDWR).is_ok(), "the leader keeps it");
        Ok(())
    });
    let _ = sys::kill(other, SIGKILL);
    let _ = sys::waitpid(other, 0);
    r
}

/// A child in a group of its own (so in the background) running `f`; returns its wait status
/// as a blocking `waitpid(pid, WUNTRACED)` reports it (as a shell waits for its foreground
/// job), killing it if it stopped. A SIGALRM 5 s on (no SA_RESTART) ends a wait that never
/// returns, which is then an error: the child is killed and `ETIMEDOUT` returned.
fn background(f: impl FnOnce() -> i32) -> SysResult<i32> {
    let pid = spawn(|| {
        let _ = sys::setpgid(0, 0);
        f()
    })?;
    let _ = sys::setpgid(pid, pid);
    let old = set_handler(SIGALRM, note, 0, 0)?;
    let _ = sys::setitimer_real(5_000_000_000, 0);
    let r = sys::waitpid(pid, WUNTRACED);
    let _ = sys::setitimer_real(0, 0);
    let _ = sigaction_raw(SIGALRM, Some(&old));
    let st = match r {
        Ok((_, st)) => st,
        Err(EINTR) => {
            println!("# background child {pid}: waitpid(WUNTRACED) still waiting after 5 s");
            let _ = sys::kill(pid, SIGKILL);
            let _ = wait_bounded(pid, 5_000_000_000)?;
            return Err(ETIMEDOUT);
        }
        Err(e) => return Err(e),
    };
    if wifstopped(st) {
        let _ = sys::kill(pid, SIGKILL);
        let (st2, _) = wait_bounded(pid, 5_000_000_000)?;
        if !wifsignaled(st2) {
            println!("# stopped child {pid} after SIGKILL: {}", describe(st2));
        }
    }
    Ok(st)
}

static mut GOT: i32 = 0;

extern "C" fn note(sig: i32, _: *mut SigInfo, _: *mut u8) {
    // SAFETY: a plain store from a signal handler of a single-threaded process.
    unsafe { (&raw mut GOT).write_volatile(sig) };
}

fn got() -> i32 {
    // SAFETY: as in `note`.
    unsafe { (&raw const GOT).read_volatile() }
}

fn job_control() -> TestResult {
    in_session(|tty| {
        let mut t = t!(tcgets(tty));
        t.c_lflag |= tt::TOSTOP;
        t!(tcsets(tty, tt::TCSETS, &t));
        let st = t!(background(|| {
            let _ = sys::write(tty, b"\r");
            0
        }));
        check!(
            wifstopped(st) && wstopsig(st) == SIGTTOU,
            "background write with TOSTOP: {}",
            describe(st)
        );
        let st = t!(background(|| {
            let _ = set_disposition(SIGTTOU, SIG_IGN);
            i32::from(sys::write(tty, b"\r") != Ok(1))
        }));
        check_eq!(st, 0, "SIGTTOU ignored: the write goes through");
        let st = t!(background(|| {
            let c = console().unwrap_or(-1);
            i32::from(sys::write(c, b"\r") != Ok(1))
        }));
        check_eq!(st, 0, "/dev/console is exempt");
        let st = t!(background(|| {
            let _ = set_handler(SIGTTOU, note, 0, 0);
            let r = sys::write(tty, b"\r");
            i32::from(r != Err(EINTR) || got() != SIGTTOU)
        }));
        check_eq!(st, 0, "a handler: the write fails with EINTR");
        let st = t!(background(|| {
            let mut b = [0u8; 4];
            let _ = sys::read(tty, &mut b);
            0
        }));
        check!(
            wifstopped(st) && wstopsig(st) == SIGTTIN,
            "background read: {}",
            describe(st)
        );
        let st = t!(background(|| {
            let _ = set_disposition(SIGTTIN, SIG_IGN);
            let mut b = [0u8; 4];
            i32::from(sys::read(tty, &mut b) != Err(EIO))
        }));
        check_eq!(st, 0, "SIGTTIN ignored: EIO");
        let st = t!(background(|| {
            let t = tcgets(tty).unwrap_or(Termios::new_zeroed());
            let _ = tcsets(tty, tt::TCSETS, &t);
            0
        }));
        check!(
            wifstopped(st) && wstopsig(st) == SIGTTOU,
            "TCSETS from the background: {}",
            describe(st)
        );
        t.c_lflag &= !tt::TOSTOP;
        t!(tcsets(tty, tt::TCSETS, &t));
        // Handing the foreground to another group, and taking it back from the background
        // (with SIGTTOU ignored, as shells do).
        let me = sys::getpid();
        let pid = t!(spawn(|| {
            let _ = sys::setpgid(0, 0);
            sys::sleep_ns(BOUND_NS);
            0
        }));
        let _ = sys::setpgid(pid, pid);
        let mut g = pid;
        t!(ioctl_ptr(tty, tt::TIOCSPGRP, &mut g));
        let mut now = 0i32;
        t!(ioctl_ptr(tty, tt::TIOCGPGRP, &mut now));
        let st = t!(background(|| {
            let mut g = me;
            let _ = ioctl_ptr(tty, tt::TIOCSPGRP, &mut g);
            0
        }));
        check!(
            wifstopped(st) && wstopsig(st) == SIGTTOU,
            "tcsetpgrp from the background: {}",
            describe(st)
        );
        let st = t!(background(|| {
            let mut g = me;
            let _ = set_handler(SIGTTOU, note, 0, 0);
            let r = ioctl_ptr(tty, tt::TIOCSPGRP, &mut g);
            i32::from(r != Err(EINTR) || got() != SIGTTOU)
        }));
        check_eq!(
            st,
            0,
            "tcsetpgrp from the background, SIGTTOU caught: EINTR"
        );
        // The leader's own group is orphaned (its parent is in another session): nobody could
        // continue it after a stop, so instead of SIGTTOU the call fails.
        let st = t!(in_child(|| {
            let mut g = me;
            i32::from(ioctl_ptr(tty, tt::TIOCSPGRP, &mut g) != Err(ENOTTY))
        }));
        check_eq!(st, 0, "an orphaned background group: ENOTTY");
        t!(set_disposition(SIGTTOU, SIG_IGN));
        g = me;
        let back = ioctl_ptr(tty, tt::TIOCSPGRP, &mut g);
        t!(set_disposition(SIGTTOU, SIG_DFL));
        t!(sigprocmask(SIG_UNBLOCK, Some(bit(SIGTTOU))));
        let _ = sys::kill(pid, SIGKILL);
        let _ = sys::waitpid(pid, 0);
        check_eq!(now, pid, "the new foreground group");
        check_eq!(back, Ok(0), "with SIGTTOU ignored it is allowed");
        t!(ioctl_ptr(tty, tt::TIOCGPGRP, &mut now));
        check_eq!(now, me);
        Ok(())
    })
}

fn main(_a: &rt::Args) -> i32 {
    ensure_dev();
    ktap::run(&[
        ("termios_round_trip", termios_round_trip),
        ("window_size", window_size),
        ("not_a_terminal", not_a_terminal),
        ("dev_full", dev_full),
        ("nonblocking_read_and_poll", nonblocking_read_and_poll),
        ("controlling_terminal", controlling_terminal),
        ("job_control", job_control),
    ])
}

entry!(main);
