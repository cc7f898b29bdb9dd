//! The console's line discipline with someone typing: run as the first process by the host
//! harness (tests/tests/tty.rs), which waits for each `# READY <step>` line and types into the
//! serial line. Canonical editing (erase, word erase, kill), ^D as end of file, ^C and ^Z to the
//! foreground process group, and a non-canonical read of VMIN bytes. Run any other way (by the
//! test init) it skips, since nobody types.
#![no_std]
#![no_main]

use svelt_abi::uapi::tty::{self as tt, Termios};
use svelt_user::ktap::{self, TestResult};
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;
use zerocopy::FromZeros;

/// The console, opened once.
static mut CONSOLE: i32 = -1;

fn con() -> i32 {
    // SAFETY: written once in main before any test runs; single-threaded.
    unsafe { (&raw const CONSOLE).read() }
}

fn ready(step: &str) {
    println!("# READY {step}");
}

fn read_once(n: usize) -> Result<Vec<u8>, String> {
    let mut b = vec![0u8; n];
    let k = sys::read(con(), &mut b).map_err(|e| format!("read: {e:?}"))?;
    b.truncate(k);
    Ok(b)
}

fn tcgets() -> SysResult<Termios> {
    let mut t = Termios::new_zeroed();
    sys::ioctl(con(), tt::TCGETS as usize, &mut t as *mut Termios as usize)?;
    Ok(t)
}

fn tcsets(t: &Termios) -> SysResult {
    sys::ioctl(con(), tt::TCSETSF as usize, t as *const Termios as usize)
}

fn set_fg(g: i32) -> SysResult {
    sys::ioctl(con(), tt::TIOCSPGRP as usize, &g as *const i32 as usize)
}

fn line_editing() -> TestResult {
    ready("line");
    check_eq!(t!(read_once(100)), b"hello world\n");
    Ok(())
}

fn kill_line() -> TestResult {
    ready("kill");
    check_eq!(t!(read_once(100)), b"ok\n");
    Ok(())
}

fn end_of_file() -> TestResult {
    ready("eof");
    check_eq!(t!(read_once(100)), b"", "^D on an empty line");
    ready("eof2");
    check_eq!(
        t!(read_once(100)),
        b"abc",
        "^D after text ends the line without itself"
    );
    Ok(())
}

/// A child made the foreground group, blocked reading the console until `step`'s typing
/// reaches it; returns its status as WUNTRACED sees it (killed if stopped).
fn foreground_reader(step: &'static str) -> SysResult<i32> {
    let pid = spawn(|| {
        let _ = sys::setpgid(0, 0);
        let _ = set_fg(sys::getpid());
        let _ = sigprocmask(SIG_UNBLOCK, Some(bit(SIGTTOU)));
        ready(step);
        let mut b = [0u8; 16];
        let _ = sys::read(con(), &mut b);
        0
    })?;
    let _ = sys::setpgid(pid, pid);
    let (_, st) = sys::waitpid(pid, WUNTRACED)?;
    if wifstopped(st) {
        let _ = sys::kill(pid, SIGKILL);
        let _ = sys::waitpid(pid, 0);
    }
    set_fg(sys::getpgid(0)?)?;
    Ok(st)
}

/// Runs `check` on the status of a foreground reader started by a child of this process:
/// the reader's group then has a parent outside it in the session, so it is not orphaned
/// (an orphaned group would not stop on ^Z, as on Linux).
fn with_reader(step: &'static str, check: fn(i32) -> TestResult) -> TestResult {
    let st = t!(in_child(|| {
        let r = foreground_reader(step).map_err(|e| format!("{e:?}"));
        ktap::child_status(step, r.and_then(check))
    }));
    check_eq!(st, 0, "{}", describe(st));
    Ok(())
}

fn interrupt() -> TestResult {
    with_reader("sigint", |st| {
        check!(
            wifsignaled(st) && wtermsig(st) == SIGINT,
            "{}",
            describe(st)
        );
        Ok(())
    })
}

fn suspend() -> TestResult {
    with_reader("sigtstp", |st| {
        check!(
            wifstopped(st) && wstopsig(st) == SIGTSTP,
            "{}",
            describe(st)
        );
        Ok(())
    })
}

fn raw_read() -> TestResult {
    let orig = t!(tcgets());
    let mut t = orig;
    t.c_lflag &= !(tt::ICANON | tt::ECHO | tt::ISIG | tt::IEXTEN);
    t.c_iflag &= !(tt::ICRNL | tt::IXON);
    t.c_cc[tt::VMIN] = 3;
    t.c_cc[tt::VTIME] = 0;
    t!(tcsets(&t));
    ready("raw");
    let got = read_once(16);
    t!(tcsets(&orig));
    check_eq!(t!(got), b"a\x03\r", "VMIN 3, no translation, no signal");
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    if sys::getpid() != 1 {
        return ktap::run(&[("typed_input", || {
            ktap::skip("needs typing: tests/tests/tty.rs runs it as the first process")
        })]);
    }
    if sys::stat("/dev/full").is_err() {
        let _ = sys::mount("devtmpfs", "/dev", "devtmpfs", 0);
    }
    // A session of its own with the console as its controlling terminal (Linux starts the
    // first process outside any session; Svelt makes it a session leader).
    let _ = sys::syscall(nr::SETSID, &[]);
    let fd = sys::open("/dev/console", O_RDWR).unwrap_or(0);
    // SAFETY: single-threaded, before any reader.
    unsafe { (&raw mut CONSOLE).write(fd) };
    let ctty = sys::ioctl(fd, tt::TIOCSCTTY as usize, 0);
    // Taking the foreground back from a child needs SIGTTOU out of the way.
    let _ = sigprocmask(SIG_BLOCK, Some(bit(SIGTTOU)));
    let status = if let Err(e) = ctty {
        println!("# TIOCSCTTY: {e:?}");
        1
    } else {
        ktap::run(&[
            ("line_editing", line_editing),
            ("kill_line", kill_line),
            ("end_of_file", end_of_file),
            ("interrupt", interrupt),
            ("suspend", suspend),
            ("raw_read", raw_read),
        ])
    };
    println!("svelt-init: exit status {status}");
    if sys::field_str(&sys::uname().release).contains("svelt") {
        return status;
    }
    sys::sync();
    let _ = sys::reboot(sys::LINUX_REBOOT_CMD_POWER_OFF);
    status
}

entry!(main);
