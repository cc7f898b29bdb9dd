//! Unix98 pseudo-terminals: /dev/ptmx gives a master at the lowest free index with its slave
//! locked (TIOCGPTN, TIOCGPTLCK, TIOCSPTLCK, TIOCGPTPEER), /dev/pts/N's owner, mode and device
//! number, the slave's line discipline seen through the master (echo, erase, ONLCR, raw
//! mode, FIONREAD), ^C typed at the master reaching the slave's foreground group, the window
//! size and SIGWINCH, the hang-up when the master closes, EIO on the master once the slave
//! closed, poll and epoll readiness of both sides, and packet mode (TIOCPKT): data after a
//! TIOCPKT_DATA byte, and the status bytes the slave's flushes, flow control, mode changes and
//! signal characters leave for the master, each read alone and flagged by POLLPRI; TCFLSH on
//! either side with both directions full (what each side's line discipline holds survives an
//! output flush from the other), and the master's termios being the slave's.
//!
//! Run as the first process on Linux /dev/pts is not mounted: the test mounts devpts there
//! itself (and devtmpfs on /dev if /dev/ptmx is missing), with gid=5,mode=620,ptmxmode=666.
#![no_std]
#![no_main]

use svelt_abi::uapi::tty::{self as tt, Termios, Winsize};
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

fn ioctl_int(fd: i32, req: u32) -> SysResult<i32> {
    let mut v = -1i32;
    ioctl_ptr(fd, req, &mut v)?;
    Ok(v)
}

fn setsid() -> SysResult {
    sys::syscall(nr::SETSID, &[])
}

/// devtmpfs on /dev (for /dev/ptmx) and a devpts on /dev/pts with known options.
fn ensure_devpts() {
    if sys::stat("/dev/ptmx").is_err() {
        let _ = sys::mount("devtmpfs", "/dev", "devtmpfs", 0);
    }
    let _ = sys::mkdirat(AT_FDCWD, "/dev/pts", 0o755);
    let r = sys::mount_data(
        "devpts",
        "/dev/pts",
        "devpts",
        0,
        "gid=5,mode=620,ptmxmode=666",
    );
    if r.is_err() {
        println!("# mount devpts on /dev/pts: {r:?}");
    }
}

/// A pty: (master, index), the slave still locked.
fn open_master(flags: u32) -> SysResult<(i32, u32)> {
    let m = sys::open("/dev/ptmx", O_RDWR | O_NOCTTY | flags)?;
    let mut n = 0u32;
    ioctl_ptr(m, tt::TIOCGPTN, &mut n)?;
    Ok((m, n))
}

fn slave_path(n: u32) -> String {
    format!("/dev/pts/{n}")
}

/// A pty with its slave unlocked and open (O_NOCTTY): (master, slave, index).
fn open_pair() -> SysResult<(i32, i32, u32)> {
    let (m, n) = open_master(0)?;
    let mut zero = 0i32;
    ioctl_ptr(m, tt::TIOCSPTLCK, &mut zero)?;
    let s = sys::open(&slave_path(n), O_RDWR | O_NOCTTY)?;
    Ok((m, s, n))
}

fn poll1(fd: i32, events: i16, timeout_ns: u64) -> i16 {
    let mut fds = [Pollfd {
        fd,
        events,
        revents: 0,
    }];
    match sys::ppoll(&mut fds, Some(&Timespec::from_ns(timeout_ns))) {
        Ok(_) => fds[0].revents,
        Err(_) => -1,
    }
}

/// Reads `fd` until `want` bytes came (or 2 s of nothing): what a pty's other side sent
/// arrives in its own time on Linux.
fn read_until(fd: i32, want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    let mut b = [0u8; 256];
    while got.len() < want {
        if poll1(fd, POLLIN, 2_000_000_000) & POLLIN == 0 {
            break;
        }
        match sys::read(fd, &mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&b[..n]),
        }
    }
    got
}

fn show(b: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(b))
}

fn allocate_lock_unlock() -> TestResult {
    let (m, n) = t!(open_master(0));
    check_eq!(ioctl_int(m, tt::TIOCGPTLCK), Ok(1), "a new slave is locked");
    check_eq!(
        sys::open(&slave_path(n), O_RDWR | O_NOCTTY),
        Err(EIO),
        "opening a locked slave"
    );
    let mut zero = 0i32;
    t!(ioctl_ptr(m, tt::TIOCSPTLCK, &mut zero));
    check_eq!(ioctl_int(m, tt::TIOCGPTLCK), Ok(0));
    let s = t!(sys::open(&slave_path(n), O_RDWR | O_NOCTTY));
    check_eq!(
        ioctl_int(s, tt::TIOCGPTN),
        Err(ENOTTY),
        "TIOCGPTN on a slave"
    );
    // The next pair takes the next index; closed, that index is the lowest free again.
    let (m2, n2) = t!(open_master(0));
    check!(n2 != n, "two pairs, one index {n}");
    t!(sys::close(m2));
    let (m3, n3) = t!(open_master(0));
    check_eq!(n3, n2, "the freed index is taken again");
    // TIOCGPTPEER opens the slave from the master, without a path.
    let peer = sys::ioctl(m, tt::TIOCGPTPEER as usize, (O_RDWR | O_NOCTTY) as usize);
    let peer = t!(peer) as i32;
    let a = t!(sys::fstat(peer));
    let b = t!(sys::fstat(s));
    check_eq!(a.st_rdev, b.st_rdev, "the peer is the slave");
    check!(sys::fcntl(peer, F_GETFD, 0) == Ok(0), "no O_CLOEXEC asked");
    let peer2 = t!(sys::ioctl(
        m,
        tt::TIOCGPTPEER as usize,
        (O_RDWR | O_NOCTTY | O_CLOEXEC) as usize
    )) as i32;
    check_eq!(sys::fcntl(peer2, F_GETFD, 0), Ok(1), "FD_CLOEXEC");
    check_eq!(
        sys::ioctl(m3, tt::TIOCGPTPEER as usize, O_RDWR as usize),
        Err(EIO),
        "the peer of a locked slave"
    );
    for fd in [peer2, peer, s, m3, m] {
        t!(sys::close(fd));
    }
    Ok(())
}

fn slave_node() -> TestResult {
    let (m, n) = t!(open_master(0));
    let st = t!(sys::stat(&slave_path(n)));
    check_eq!(st.st_mode, S_IFCHR | 0o620, "mode");
    let rdev = ((136 + u64::from(n) / 256) << 8) | u64::from(n % 256);
    check_eq!(st.st_rdev, rdev, "136:{n}");
    check_eq!(st.st_uid, sys::getuid(), "the opener owns it");
    check_eq!(st.st_gid, 5, "gid=5");
    let ptmx = t!(sys::stat("/dev/pts/ptmx"));
    check_eq!(ptmx.st_mode, S_IFCHR | 0o666, "ptmxmode=666");
    check_eq!(ptmx.st_rdev, (5 << 8) | 2);
    check_eq!(
        t!(sys::fstat(m)).st_rdev,
        (5 << 8) | 2,
        "the master is ptmx"
    );
    // /dev/pts lists it.
    let d = t!(sys::open("/dev/pts", O_RDONLY | O_DIRECTORY));
    let mut buf = [0u8; 2048];
    let len = t!(sys::getdents64(d, &mut buf));
    t!(sys::close(d));
    let name = format!("{n}\0");
    check!(
        buf[..len].windows(name.len()).any(|w| w == name.as_bytes()),
        "{n} in /dev/pts"
    );
    t!(sys::close(m));
    check_eq!(
        sys::stat(&slave_path(n)).map(|_| ()),
        Err(ENOENT),
        "gone with its master"
    );
    Ok(())
}

fn echo_and_line_editing() -> TestResult {
    let (m, s, _) = t!(open_pair());
    // Typed: "ab", DEL (VERASE), "c", CR (ICRNL makes it the line end).
    check_eq!(sys::write(m, b"ab\x7fc\r"), Ok(5));
    let mut b = [0u8; 64];
    let n = t!(sys::read(s, &mut b));
    check_eq!(show(&b[..n]), show(b"ac\n"), "the edited line");
    let echo = read_until(m, 10);
    check_eq!(show(&echo), show(b"ab\x08 \x08c\r\n"), "the echo");
    // Output: ONLCR.
    check_eq!(sys::write(s, b"hi\n"), Ok(3));
    check_eq!(show(&read_until(m, 4)), show(b"hi\r\n"), "slave output");
    // FIONREAD counts a whole line.
    check_eq!(sys::write(m, b"xyz\n"), Ok(4));
    check!(poll1(s, POLLIN, 2_000_000_000) & POLLIN != 0, "a line");
    check_eq!(ioctl_int(s, tt::FIONREAD), Ok(4));
    let _ = read_until(m, 5);
    check_eq!(sys::read(s, &mut b), Ok(4));
    // Raw and no echo: each byte at once, nothing back.
    let mut t = Termios::new_zeroed();
    t!(ioctl_ptr(s, tt::TCGETS, &mut t));
    t.c_lflag &= !(tt::ICANON | tt::ECHO);
    t!(ioctl_ptr(s, tt::TCSETS, &mut t));
    check_eq!(sys::write(m, b"q"), Ok(1));
    check_eq!(sys::read(s, &mut b), Ok(1));
    check_eq!(b[0], b'q');
    check_eq!(poll1(m, POLLIN, 100_000_000), 0, "no echo");
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

/// A child that makes itself a session leader with the slave as its controlling terminal
/// (setsid, then TIOCSCTTY, or the open itself when `by_open`), writes "R" on it, then runs
/// `then`. The parent has read the "R" when this returns (child's pid).
fn session_child(n: u32, m: i32, by_open: bool, then: fn(i32) -> i32) -> SysResult<i32> {
    let pid = spawn(|| {
        // The master stays the parent's alone (its close hangs the slave up).
        let _ = sys::close(m);
        if setsid().is_err() {
            return 10;
        }
        let flags = if by_open { O_RDWR } else { O_RDWR | O_NOCTTY };
        let Ok(s) = sys::open(&slave_path(n), flags) else {
            return 11;
        };
        if !by_open && sys::ioctl(s, tt::TIOCSCTTY as usize, 0).is_err() {
            return 12;
        }
        let mut sid = 0i32;
        if ioctl_ptr(s, tt::TIOCGSID, &mut sid).is_err() || sid != sys::getpid() {
            return 13;
        }
        then(s)
    })?;
    let r = read_until(m, 1);
    if r != b"R" {
        println!("# the session child said {}", show(&r));
        let _ = sys::kill(pid, SIGKILL);
        let _ = sys::waitpid(pid, 0);
        return Err(ETIMEDOUT);
    }
    Ok(pid)
}

fn ready_then_pause(s: i32) -> i32 {
    let _ = sys::write(s, b"R");
    sys::sleep_ns(BOUND_NS);
    20
}

fn interrupt_reaches_foreground() -> TestResult {
    let (m, s, n) = t!(open_pair());
    let pid = t!(session_child(n, m, false, ready_then_pause));
    let mut g = 0i32;
    t!(ioctl_ptr(m, tt::TIOCGPGRP, &mut g));
    check_eq!(
        g,
        pid,
        "the child's group is the foreground (TIOCGPGRP on the master)"
    );
    check_eq!(sys::write(m, b"\x03"), Ok(1));
    let (st, timed_out) = t!(wait_bounded(pid, BOUND_NS));
    check!(!timed_out, "^C did not end the child");
    check!(
        wifsignaled(st) && wtermsig(st) == SIGINT,
        "{}",
        describe(st)
    );
    check_eq!(show(&read_until(m, 2)), show(b"^C"), "the echo");
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

static mut WINCHED: bool = false;

extern "C" fn on_winch(_: i32, _: *mut SigInfo, _: *mut u8) {
    // SAFETY: a plain store from a signal handler of a single-threaded process.
    unsafe { (&raw mut WINCHED).write_volatile(true) };
}

fn wait_winch(s: i32) -> i32 {
    if set_handler(SIGWINCH, on_winch, 0, 0).is_err()
        || sigprocmask(SIG_BLOCK, Some(bit(SIGWINCH))).is_err()
    {
        return 30;
    }
    let _ = sys::write(s, b"R");
    // SAFETY: as in on_winch (the handler runs only inside sigsuspend).
    while !unsafe { (&raw const WINCHED).read_volatile() } {
        let _ = sigsuspend(0);
    }
    let mut w = Winsize::default();
    if ioctl_ptr(s, tt::TIOCGWINSZ, &mut w).is_err() {
        return 31;
    }
    if (w.ws_row, w.ws_col) == (24, 80) {
        0
    } else {
        32
    }
}

fn window_size_and_sigwinch() -> TestResult {
    let (m, s, n) = t!(open_pair());
    let mut w = Winsize::default();
    t!(ioctl_ptr(s, tt::TIOCGWINSZ, &mut w));
    check_eq!(w, Winsize::default(), "a new pty has no size");
    let pid = t!(session_child(n, m, true, wait_winch));
    let mut set = Winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    t!(ioctl_ptr(m, tt::TIOCSWINSZ, &mut set));
    let (st, timed_out) = t!(wait_bounded(pid, BOUND_NS));
    check!(!timed_out, "no SIGWINCH");
    check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
    t!(ioctl_ptr(m, tt::TIOCGWINSZ, &mut w));
    check_eq!(w, set, "the master sees it");
    t!(ioctl_ptr(s, tt::TIOCGWINSZ, &mut w));
    check_eq!(w, set, "the slave sees it");
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

fn hangup_on_master_close() -> TestResult {
    let (m, s, n) = t!(open_pair());
    let pid = t!(session_child(n, m, true, ready_then_pause));
    t!(sys::close(m));
    let (st, timed_out) = t!(wait_bounded(pid, BOUND_NS));
    check!(!timed_out, "the session leader was not told");
    check!(
        wifsignaled(st) && wtermsig(st) == SIGHUP,
        "{}",
        describe(st)
    );
    // The parent's slave file is hung up.
    let mut b = [0u8; 8];
    check_eq!(sys::read(s, &mut b), Ok(0), "read after the hang-up");
    check_eq!(sys::write(s, b"x"), Err(EIO), "write after the hang-up");
    let ev = poll1(s, POLLIN | POLLOUT, 0);
    check_eq!(
        ev & (POLLIN | POLLOUT | POLLHUP | POLLERR),
        POLLIN | POLLOUT | POLLHUP | POLLERR,
        "poll {ev:#x}"
    );
    let mut t = Termios::new_zeroed();
    check_eq!(ioctl_ptr(s, tt::TCGETS, &mut t), Err(EIO));
    check_eq!(
        sys::open(&slave_path(n), O_RDWR | O_NOCTTY),
        Err(ENOENT),
        "its node is gone"
    );
    t!(sys::close(s));
    Ok(())
}

/// The session leader forks a member of its own (foreground) group, says "R" once the member
/// runs, then exits.
fn leader_then_member(s: i32) -> i32 {
    let Ok([r, w]) = sys::pipe2(0) else {
        return 41;
    };
    match sys::fork() {
        Ok(0) => {
            let _ = sys::write(w, b"x");
            sys::sleep_ns(BOUND_NS);
            0
        }
        Ok(_) => {
            let mut b = [0u8; 1];
            let _ = sys::read(r, &mut b);
            let _ = sys::write(s, b"R");
            0
        }
        Err(_) => 40,
    }
}

fn leader_exit_hangs_up_its_group() -> TestResult {
    let (m, s, n) = t!(open_pair());
    let pid = t!(session_child(n, m, true, leader_then_member));
    let (st, _) = t!(wait_bounded(pid, BOUND_NS));
    check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
    let mut sid = 0i32;
    check_eq!(
        ioctl_ptr(m, tt::TIOCGSID, &mut sid),
        Err(ENOTTY),
        "the session let the terminal go"
    );
    // The member got SIGHUP: with it gone, no slave file is left open.
    t!(sys::close(s));
    let ev = poll1(m, POLLIN, 5_000_000_000);
    check!(
        ev & POLLHUP != 0,
        "the member still holds the slave: poll {ev:#x}"
    );
    t!(sys::close(m));
    Ok(())
}

fn master_after_slave_close() -> TestResult {
    let (m, n) = t!(open_master(O_NONBLOCK));
    let mut b = [0u8; 16];
    check_eq!(sys::read(m, &mut b), Err(EAGAIN), "no slave opened yet");
    check_eq!(sys::write(m, b"x"), Ok(1), "typed before any slave opened");
    let mut zero = 0i32;
    t!(ioctl_ptr(m, tt::TIOCSPTLCK, &mut zero));
    let s = t!(sys::open(&slave_path(n), O_RDWR | O_NOCTTY));
    check_eq!(sys::write(s, b"bye\n"), Ok(4));
    t!(sys::close(s));
    check!(poll1(m, POLLIN, 2_000_000_000) & POLLHUP != 0, "POLLHUP");
    // What the slave wrote is still read, then EIO. The echo of "x" may come anywhere in it
    // or not at all: Linux's line discipline echoes from a work item, which the slave's write
    // and close can overtake (seen in CI runs on Linux at EL2 with 2 CPUs: "bye\r\nx", and
    // "byex\r\n", the echo between the write's "bye" and the "\r\n" its newline became).
    let got = read_until(m, 6);
    let mut rest = got.clone();
    if let Some(i) = rest.iter().position(|&c| c == b'x') {
        rest.remove(i);
    }
    check!(rest == b"bye\r\n", "master read {}", show(&got));
    check_eq!(sys::read(m, &mut b), Err(EIO), "nothing left, no slave");
    // A slave opened again: waiting for input once more.
    let s = t!(sys::open(&slave_path(n), O_RDWR | O_NOCTTY));
    check_eq!(sys::read(m, &mut b), Err(EAGAIN), "a slave again");
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

fn poll_readiness() -> TestResult {
    let (m, s, _) = t!(open_pair());
    check_eq!(poll1(m, POLLIN | POLLOUT, 0), POLLOUT, "master: writable");
    check_eq!(poll1(s, POLLIN | POLLOUT, 0), POLLOUT, "slave: writable");
    // Half a line: the echo is readable on the master, the slave has no line yet.
    check_eq!(sys::write(m, b"a"), Ok(1));
    check!(poll1(m, POLLIN, 2_000_000_000) & POLLIN != 0, "the echo");
    check_eq!(poll1(s, POLLIN, 50_000_000), 0, "half a line");
    let _ = read_until(m, 1);
    let ep = t!(sys::epoll_create1(0)) as i32;
    for fd in [m, s] {
        let ev = EpollEvent {
            events: POLLIN as u32,
            data: fd as u64,
        };
        t!(sys::epoll_ctl(ep, EPOLL_CTL_ADD, fd, Some(&ev)));
    }
    let mut evs = [EpollEvent::default(); 4];
    check_eq!(epoll_wait(ep, &mut evs, 0), Ok(0), "nothing to read");
    check_eq!(sys::write(m, b"\n"), Ok(1));
    // Both: the slave's line and the master's echo of it.
    let mut seen = 0;
    for _ in 0..100 {
        let k = t!(epoll_wait(ep, &mut evs, 2000));
        seen = evs[..k].iter().fold(0, |a, e| a | (1 << e.data));
        if seen == (1 << m) | (1 << s) {
            break;
        }
        sys::sleep_ns(10_000_000);
    }
    check_eq!(seen, (1 << m) | (1 << s), "epoll: both readable");
    t!(sys::close(ep));
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

fn set_packet(m: i32, on: i32) -> SysResult {
    let mut v = on;
    ioctl_ptr(m, tt::TIOCPKT, &mut v)
}

fn tcflush(fd: i32, how: u32) -> SysResult {
    sys::ioctl(fd, tt::TCFLSH as usize, how as usize)
}

/// The slave's modes changed by `f` (TCSETS).
fn change_modes(s: i32, f: impl FnOnce(&mut Termios)) -> SysResult {
    let mut t = Termios::new_zeroed();
    ioctl_ptr(s, tt::TCGETS, &mut t)?;
    f(&mut t);
    ioctl_ptr(s, tt::TCSETS, &mut t)
}

/// What one read of master `m` (packet mode, a 64-byte buffer) returns once it polls
/// POLLPRI (2 s at most; nothing if it never does): a status comes in its own time on Linux
/// when the master's writes caused it.
fn status(m: i32) -> Vec<u8> {
    if poll1(m, POLLPRI, 2_000_000_000) & POLLPRI == 0 {
        return Vec::new();
    }
    let mut b = [0u8; 64];
    match sys::read(m, &mut b) {
        Ok(n) => b[..n].to_vec(),
        Err(_) => Vec::new(),
    }
}

/// Reads master `m` in packet mode until `want` data bytes came (or 2 s of nothing); each
/// read must begin with TIOCPKT_DATA. The data, or the read that did not.
fn read_packets(m: i32, want: usize) -> Result<Vec<u8>, Vec<u8>> {
    let mut got = Vec::new();
    let mut b = [0u8; 256];
    while got.len() < want {
        if poll1(m, POLLIN, 2_000_000_000) & POLLIN == 0 {
            break;
        }
        match sys::read(m, &mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) if b[0] != tt::TIOCPKT_DATA => return Err(b[..n].to_vec()),
            Ok(n) => got.extend_from_slice(&b[1..n]),
        }
    }
    Ok(got)
}

fn packet_mode_switch() -> TestResult {
    let (m, s, _) = t!(open_pair());
    check_eq!(ioctl_int(m, tt::TIOCGPKT), Ok(0), "off in a new pair");
    t!(set_packet(m, 2));
    check_eq!(
        ioctl_int(m, tt::TIOCGPKT),
        Ok(1),
        "any non-zero turns it on"
    );
    check_eq!(set_packet(s, 1), Err(ENOTTY), "TIOCPKT on the slave");
    check_eq!(
        ioctl_int(s, tt::TIOCGPKT),
        Err(ENOTTY),
        "TIOCGPKT on the slave"
    );
    t!(set_packet(m, 0));
    check_eq!(ioctl_int(m, tt::TIOCGPKT), Ok(0));
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

fn packet_data() -> TestResult {
    let (m, s, _) = t!(open_pair());
    t!(set_packet(m, 1));
    check_eq!(sys::write(s, b"hi\n"), Ok(3));
    let ev = poll1(m, POLLIN | POLLPRI, 2_000_000_000);
    check_eq!(
        ev & (POLLIN | POLLPRI),
        POLLIN,
        "data, no status: poll {ev:#x}"
    );
    // A 1-byte buffer has room for the TIOCPKT_DATA byte alone: the data stays.
    let mut one = [0xffu8; 1];
    check_eq!(sys::read(m, &mut one), Ok(1));
    check_eq!(one[0], tt::TIOCPKT_DATA);
    let got = read_packets(m, 4).map(|d| show(&d));
    check_eq!(
        got,
        Ok(show(b"hi\r\n")),
        "each read: TIOCPKT_DATA, then data"
    );
    // Off again: data alone.
    t!(set_packet(m, 0));
    check_eq!(sys::write(s, b"x"), Ok(1));
    check_eq!(show(&read_until(m, 1)), show(b"x"), "packet mode off");
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

fn packet_flush_status() -> TestResult {
    let (m, s, _) = t!(open_pair());
    t!(set_packet(m, 1));
    for (how, want) in [
        (tt::TCIFLUSH, tt::TIOCPKT_FLUSHREAD),
        (tt::TCOFLUSH, tt::TIOCPKT_FLUSHWRITE),
        (
            tt::TCIOFLUSH,
            tt::TIOCPKT_FLUSHREAD | tt::TIOCPKT_FLUSHWRITE,
        ),
    ] {
        t!(tcflush(s, how));
        let ev = poll1(m, POLLIN | POLLPRI, 0);
        check_eq!(ev, POLLIN | POLLPRI, "tcflush({how}): a status pending");
        // Read with a 1-byte buffer: the status alone.
        let mut b = [0xffu8; 1];
        check_eq!(sys::read(m, &mut b), Ok(1));
        check_eq!(b[0], want, "tcflush({how})");
        check_eq!(poll1(m, POLLIN | POLLPRI, 0), 0, "read: nothing pending");
    }
    // TCSETSF flushes the slave's input.
    let mut t = Termios::new_zeroed();
    t!(ioctl_ptr(s, tt::TCGETS, &mut t));
    t!(ioctl_ptr(s, tt::TCSETSF, &mut t));
    check_eq!(status(m), [tt::TIOCPKT_FLUSHREAD], "TCSETSF");
    // Statuses gather, and come before data, alone.
    check_eq!(sys::write(s, b"x"), Ok(1));
    check!(poll1(m, POLLIN, 2_000_000_000) & POLLIN != 0, "the data");
    t!(tcflush(s, tt::TCIFLUSH));
    t!(tcflush(s, tt::TCOFLUSH));
    let mut b = [0u8; 64];
    check_eq!(sys::read(m, &mut b), Ok(1), "the status alone");
    check_eq!(b[0], tt::TIOCPKT_FLUSHREAD | tt::TIOCPKT_FLUSHWRITE);
    check_eq!(poll1(m, POLLIN | POLLPRI, 0), POLLIN, "the data left");
    check_eq!(sys::read(m, &mut b), Ok(2));
    check_eq!(b[..2], [tt::TIOCPKT_DATA, b'x']);
    // Turning packet mode on while on keeps a status; off, none shows; on again, it is gone.
    t!(tcflush(s, tt::TCIFLUSH));
    t!(set_packet(m, 1));
    check_eq!(poll1(m, POLLPRI, 0), POLLPRI, "on again while on");
    t!(set_packet(m, 0));
    check_eq!(poll1(m, POLLIN | POLLPRI, 0), 0, "off: no status");
    t!(set_packet(m, 1));
    check_eq!(
        poll1(m, POLLIN | POLLPRI, 0),
        0,
        "turned on: the old status is gone"
    );
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

fn packet_flow_status() -> TestResult {
    let (m, s, _) = t!(open_pair());
    t!(set_packet(m, 1));
    // ^S and ^Q typed with IXON (a new slave's default).
    check_eq!(sys::write(m, b"\x13"), Ok(1));
    check_eq!(status(m), [tt::TIOCPKT_STOP], "^S");
    check_eq!(sys::write(m, b"\x11"), Ok(1));
    check_eq!(status(m), [tt::TIOCPKT_START], "^Q");
    // tcflow on the slave.
    t!(sys::ioctl(s, tt::TCXONC as usize, tt::TCOOFF as usize));
    check_eq!(status(m), [tt::TIOCPKT_STOP], "TCOOFF");
    t!(sys::ioctl(s, tt::TCXONC as usize, tt::TCOON as usize));
    check_eq!(status(m), [tt::TIOCPKT_START], "TCOON");
    // ^S/^Q flow control turned off and on by the slave's modes.
    t!(change_modes(s, |t| t.c_iflag &= !tt::IXON));
    check_eq!(status(m), [tt::TIOCPKT_NOSTOP], "IXON off");
    t!(change_modes(s, |_| {}));
    check_eq!(poll1(m, POLLPRI, 0), 0, "the same modes again");
    t!(change_modes(s, |t| t.c_iflag |= tt::IXON));
    check_eq!(status(m), [tt::TIOCPKT_DOSTOP], "IXON on");
    t!(change_modes(s, |t| t.c_cc[tt::VSTOP] = 0x10));
    check_eq!(status(m), [tt::TIOCPKT_NOSTOP], "VSTOP not ^S");
    t!(change_modes(s, |t| t.c_cc[tt::VSTOP] = 0x13));
    check_eq!(status(m), [tt::TIOCPKT_DOSTOP], "VSTOP ^S again");
    // Stopped by ^S, then IXON off: output starts again.
    check_eq!(sys::write(m, b"\x13"), Ok(1));
    check_eq!(status(m), [tt::TIOCPKT_STOP], "^S");
    t!(change_modes(s, |t| t.c_iflag &= !tt::IXON));
    check_eq!(
        status(m),
        [tt::TIOCPKT_NOSTOP | tt::TIOCPKT_START],
        "IXON off while stopped"
    );
    // EXTPROC: every mode change is reported.
    t!(change_modes(s, |t| t.c_lflag |= tt::EXTPROC));
    check_eq!(status(m), [tt::TIOCPKT_IOCTL], "EXTPROC on");
    t!(change_modes(s, |t| t.c_lflag &= !tt::EXTPROC));
    check_eq!(status(m), [tt::TIOCPKT_IOCTL], "EXTPROC off");
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

fn packet_signal_char() -> TestResult {
    // The slave is no one's controlling terminal: ^C signals no one, but flushes both ways.
    let (m, s, _) = t!(open_pair());
    t!(set_packet(m, 1));
    check_eq!(sys::write(m, b"\x03"), Ok(1));
    check_eq!(
        status(m),
        [tt::TIOCPKT_FLUSHREAD | tt::TIOCPKT_FLUSHWRITE],
        "^C"
    );
    let got = read_packets(m, 2).map(|d| show(&d));
    check_eq!(got, Ok(show(b"^C")), "the echo after the status");
    // NOFLSH: the echo alone.
    t!(change_modes(s, |t| t.c_lflag |= tt::NOFLSH));
    check_eq!(sys::write(m, b"\x03"), Ok(1));
    let got = read_packets(m, 2).map(|d| show(&d));
    check_eq!(got, Ok(show(b"^C")), "NOFLSH: no status");
    t!(sys::close(s));
    t!(sys::close(m));
    Ok(())
}

/// Writes `fd` (non-blocking) with 256-byte blocks until it would block: the bytes written.
fn fill(fd: i32, byte: u8) -> usize {
    let b = [byte; 256];
    let mut n = 0;
    while let Ok(k) = sys::write(fd, &b) {
        if k == 0 {
            break;
        }
        n += k;
        if n > 1 << 20 {
            break;
        }
    }
    n
}

/// Reads `fd` (non-blocking) until it would block: the bytes read.
fn drain(fd: i32) -> usize {
    let mut b = [0u8; 1024];
    let mut n = 0;
    while let Ok(k) = sys::read(fd, &mut b) {
        if k == 0 {
            break;
        }
        n += k;
    }
    n
}

/// A pair with the slave raw and both sides non-blocking.
fn raw_pair() -> SysResult<(i32, i32)> {
    let (m, s, _) = open_pair()?;
    change_modes(s, |t| {
        t.c_iflag = 0;
        t.c_oflag = 0;
        t.c_lflag = 0;
        t.c_cc[tt::VMIN] = 1;
        t.c_cc[tt::VTIME] = 0;
    })?;
    for fd in [m, s] {
        sys::fcntl(fd, F_SETFL, O_NONBLOCK as usize)?;
    }
    Ok((m, s))
}

/// Reads `fd` until nothing more comes for 100 ms: the bytes read.
fn drain_quiet(fd: i32) -> usize {
    let mut total = 0;
    for _ in 0..50 {
        let n = drain(fd);
        total += n;
        if n == 0 {
            sys::sleep_ns(100_000_000);
            if poll1(fd, POLLIN, 0) & POLLIN == 0 {
                break;
            }
        }
    }
    total
}

/// TCFLSH on either side of a pty whose both directions are full: TCIFLUSH drops everything
/// the caller's side has not read; TCOFLUSH drops what the other side's line discipline has
/// not taken in yet, all but its first 4095 bytes (Linux's pty_flush_buffer empties the
/// other side's flip buffers, not its n_tty buffer); TCIOFLUSH both.
fn pty_flush_queued() -> TestResult {
    const LDISC: usize = 4095;
    for (who, how) in [
        ("none", None),
        ("slave", Some(tt::TCOFLUSH)),
        ("slave", Some(tt::TCIFLUSH)),
        ("slave", Some(tt::TCIOFLUSH)),
        ("master", Some(tt::TCOFLUSH)),
        ("master", Some(tt::TCIFLUSH)),
        ("master", Some(tt::TCIOFLUSH)),
    ] {
        let (m, s) = t!(raw_pair());
        let up = fill(s, b'u');
        let down = fill(m, b'd');
        sys::sleep_ns(100_000_000);
        if let Some(how) = how {
            t!(tcflush(if who == "slave" { s } else { m }, how));
        }
        let at_m = drain_quiet(m);
        let at_s = drain_quiet(s);
        let _ = sys::close(s);
        let _ = sys::close(m);
        let input = how.is_some_and(|h| h != tt::TCOFLUSH);
        let output = how.is_some_and(|h| h != tt::TCIFLUSH);
        let want_m = match who {
            "slave" if output => up.min(LDISC),
            "master" if input => 0,
            _ => up,
        };
        let want_s = match who {
            "master" if output => down.min(LDISC),
            "slave" if input => 0,
            _ => down,
        };
        check!(up > LDISC && down >= LDISC, "wrote {up} up, {down} down");
        check_eq!(
            (at_m, at_s),
            (want_m, want_s),
            "{who} {how:?}: wrote {up} up and {down} down"
        );
    }
    Ok(())
}

fn termios_of(fd: i32) -> SysResult<(Termios, (u32, u32))> {
    let mut t = Termios::new_zeroed();
    ioctl_ptr(fd, tt::TCGETS, &mut t)?;
    let mut t2 = [0u32; 11];
    ioctl_ptr(fd, tt::TCGETS2, &mut t2)?;
    Ok((t, (t2[9], t2[10])))
}

/// The master's modes are its slave's (Linux's tty_mode_ioctl acts on the pty's other side):
/// TCGETS on either shows the same, TCSETS on the master changes the slave's. A pty's line is
/// CS8 without parity whatever is asked; its speeds are kept as set (B9600 reads 9600,
/// BOTHER the given output speed, which the input takes without an input code).
fn master_termios() -> TestResult {
    let (m, s, _) = t!(open_pair());
    let (ms, ss) = (t!(termios_of(m)), t!(termios_of(s)));
    check_eq!(ms, ss);
    check_eq!(
        (ms.0.c_iflag, ms.0.c_oflag, ms.0.c_cflag, ms.0.c_lflag),
        (0o2400, 0o5, 0o277, 0o105073)
    );
    check_eq!(ms.1, (38400, 38400));
    let mut t = ms.0;
    t.c_iflag = tt::ICRNL | tt::IXON;
    t.c_oflag = tt::OPOST;
    t.c_cflag = tt::CS7 | tt::PARENB | tt::HUPCL | tt::CLOCAL | tt::B9600;
    t.c_lflag = tt::ISIG;
    t.c_cc[tt::VMIN] = 5;
    t!(ioctl_ptr(m, tt::TCSETS, &mut t));
    let (ms, ss) = (t!(termios_of(m)), t!(termios_of(s)));
    check_eq!(ms, ss);
    check_eq!(
        (ss.0.c_iflag, ss.0.c_oflag, ss.0.c_cflag, ss.0.c_lflag),
        (0o2400, 0o1, 0o6275, 0o1)
    );
    check_eq!((ss.0.c_cc[tt::VMIN], ss.1), (5, (9600, 9600)));
    let mut t2 = [0u32; 11];
    t!(ioctl_ptr(m, tt::TCGETS2, &mut t2));
    t2[2] = tt::CS8 | tt::CREAD | 0o10000; // BOTHER
    t2[9] = 1234;
    t2[10] = 5678;
    t!(ioctl_ptr(m, tt::TCSETS2, &mut t2));
    let ss = t!(termios_of(s));
    check_eq!((ss.0.c_cflag, ss.1), (0o10260, (5678, 5678)));
    let _ = sys::close(s);
    let _ = sys::close(m);
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ensure_devpts();
    ktap::run(&[
        ("allocate_lock_unlock", allocate_lock_unlock),
        ("slave_node", slave_node),
        ("echo_and_line_editing", echo_and_line_editing),
        ("interrupt_reaches_foreground", interrupt_reaches_foreground),
        ("window_size_and_sigwinch", window_size_and_sigwinch),
        ("hangup_on_master_close", hangup_on_master_close),
        (
            "leader_exit_hangs_up_its_group",
            leader_exit_hangs_up_its_group,
        ),
        ("master_after_slave_close", master_after_slave_close),
        ("poll_readiness", poll_readiness),
        ("packet_mode_switch", packet_mode_switch),
        ("packet_data", packet_data),
        ("packet_flush_status", packet_flush_status),
        ("packet_flow_status", packet_flow_status),
        ("packet_signal_char", packet_signal_char),
        ("pty_flush_queued", pty_flush_queued),
        ("master_termios", master_termios),
    ])
}

entry!(main);
