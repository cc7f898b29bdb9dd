//! The console as a terminal, as Linux's ttyAMA0 with the N_TTY line discipline: the UART's
//! receive interrupt feeds `abi::uapi::ldisc`, reads wait for what it makes readable, writes go out
//! through its output processing. One terminal, reachable as /dev/ttyAMA0, /dev/console and
//! /dev/tty, with a controlling session, a foreground process group and job control.
//!
//! As on Linux, /dev/console is the "redirected" console: opening it never makes it a
//! controlling terminal, and reads and writes through it skip the background checks
//! (SIGTTIN/SIGTTOU); its ioctls act on the terminal like any other.

#![forbid(unsafe_code)]

use crate::fs::{epoll, File, FileOps};
use crate::mm::uaccess::UserPtr;
use crate::process::{self, Process};
use crate::sync::IrqLock;
use crate::task::wait::WaitQueue;
use alloc::sync::Arc;
use core::any::Any;
use core::sync::atomic::{AtomicBool, Ordering};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use svelt_abi::uapi::ldisc::Ldisc;
use svelt_abi::uapi::signal as sig;
use svelt_abi::uapi::tty::{self, Termios, Termios2, Winsize};

/// The console's line speed as TCGETS2 reports it.
const BAUD: u32 = 115_200;

struct Tty {
    ld: Ldisc,
    winsize: Winsize,
    /// The session whose controlling terminal this is (0: none) and its foreground group.
    session: u32,
    pgrp: u32,
    /// Bumped each time a session takes the terminal; a process whose `ctty` holds the current
    /// value (while a session has it) has it as its controlling terminal.
    generation: u32,
    /// Signals typed for the foreground group that the interrupt handler could not send yet
    /// (the process table was busy): bit n-1 for signal n, and the group.
    deferred: u64,
    deferred_pgrp: u32,
}

// Lock order: TTY -> the UART's console lock. Nothing that takes process-table locks runs
// under TTY.
static TTY: IrqLock<Tty> = IrqLock::new(Tty {
    ld: Ldisc::new(Termios::console_default()),
    winsize: Winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    },
    session: 0,
    pgrp: 0,
    generation: 0,
    deferred: 0,
    deferred_pgrp: 0,
});
/// `deferred` is non-zero: a cheap test for every timer tick.
static DEFERRED: AtomicBool = AtomicBool::new(false);
static READABLE: WaitQueue = WaitQueue::new();
/// Writers wait here while output is stopped (^S, TCOOFF).
static WRITABLE: WaitQueue = WaitQueue::new();

fn changed() {
    READABLE.wake_all();
    WRITABLE.wake_all();
    epoll::notify();
}

// ---- input from the UART -------------------------------------------------------------------

/// Turns console input on, with the UART's interrupt `id`: its receive interrupt runs
/// `uart_interrupt`, and each timer tick retries the signals typed while the process table was
/// busy. Boot time, on the boot CPU.
/// Registers the terminal's nodes with /dev and its part in a process's exit. Boot time.
pub fn init() {
    crate::fs::dev::register_tty(open);
    process::exit::on_exit(process_exit);
}

pub fn enable_input(id: u32) {
    if crate::irq::enable_spi(id, uart_interrupt) {
        crate::irq::on_tick(send_deferred);
        crate::console::enable_input();
    }
}

/// The UART's receive interrupt: each byte through the line discipline (echoes straight out),
/// readers woken, a signal character's signal sent to the foreground group.
fn uart_interrupt() {
    let mut buf = [0u8; 64];
    loop {
        let n = crate::console::read_input(&mut buf);
        if n == 0 {
            break;
        }
        {
            let mut t = TTY.lock();
            for &c in &buf[..n] {
                if let Some(s) =
                    t.ld.receive(c, &mut |b: &[u8]| crate::console::write_raw(b))
                {
                    if t.pgrp != 0 {
                        let g = t.pgrp;
                        if t.deferred_pgrp != g {
                            t.deferred = 0;
                        }
                        t.deferred |= 1 << (s - 1);
                        t.deferred_pgrp = g;
                        DEFERRED.store(true, Ordering::Release);
                    }
                }
            }
        }
        changed();
        if n < buf.len() {
            break;
        }
    }
    send_deferred();
}

/// Sends the signals typed for the foreground group, unless the process table is busy (we
/// may have interrupted its holder): then the next timer tick tries again.
fn send_deferred() {
    if !DEFERRED.load(Ordering::Acquire) {
        return;
    }
    let (mask, g) = {
        let t = TTY.lock();
        (t.deferred, t.deferred_pgrp)
    };
    if mask == 0 {
        return;
    }
    let Some(all) = process::try_all_processes() else {
        return;
    };
    {
        let mut t = TTY.lock();
        if t.deferred_pgrp == g {
            t.deferred &= !mask;
        }
        DEFERRED.store(t.deferred != 0, Ordering::Release);
    }
    for s in 1..=64u32 {
        if mask & (1 << (s - 1)) != 0 {
            for p in all.iter().filter(|p| p.pgid.load(Ordering::Relaxed) == g) {
                crate::process::signal::send_to_process(
                    p,
                    s,
                    crate::process::signal::SigInfo::kernel(s),
                );
            }
        }
    }
}

/// A signal from the kernel to every process in group `g` (Linux's kill_pgrp with priv).
fn kill_pgrp(g: u32, s: u32) {
    if g == 0 {
        return;
    }
    for p in process::all_processes()
        .iter()
        .filter(|p| p.pgid.load(Ordering::Relaxed) == g)
    {
        crate::process::signal::send_to_process(p, s, crate::process::signal::SigInfo::kernel(s));
    }
}

// ---- controlling terminal and job control --------------------------------------------------

/// The terminal is `p`'s controlling terminal.
fn is_ctty(t: &Tty, p: &Process) -> bool {
    t.session != 0 && p.ctty.load(Ordering::Relaxed) == t.generation
}

fn current_is_ctty() -> bool {
    is_ctty(&TTY.lock(), &process::current().process())
}

/// Makes the terminal the controlling terminal of `p`'s session, `p`'s group in the
/// foreground (Linux's __proc_set_tty).
fn set_ctty(t: &mut Tty, p: &Process) {
    t.generation = t.generation.wrapping_add(1).max(1);
    t.session = p.sid.load(Ordering::Relaxed);
    t.pgrp = p.pgid.load(Ordering::Relaxed);
    p.ctty.store(t.generation, Ordering::Relaxed);
}

/// `s` is blocked or ignored by the calling thread.
fn ignoring(s: u32) -> bool {
    let me = process::current();
    let blocked = me.sig.lock().blocked & (1 << (s - 1)) != 0;
    blocked || me.sighand().lock().get(s).sa_handler == sig::SIG_IGN
}

/// Linux's tty_check_change: a member of a background group that uses its controlling
/// terminal gets `s` (SIGTTOU or SIGTTIN) sent to its group and the call restarts after it;
/// EIO when it cannot be stopped (SIGTTIN ignored, or an orphaned group).
fn check_change(s: u32) -> SysResult<()> {
    let p = process::current().process();
    let fg = {
        let t = TTY.lock();
        if !is_ctty(&t, &p) {
            return Ok(());
        }
        t.pgrp
    };
    let mine = p.pgid.load(Ordering::Relaxed);
    if fg == 0 || fg == mine {
        return Ok(());
    }
    if ignoring(s) {
        return if s == sig::SIGTTIN {
            Err(Errno::EIO)
        } else {
            Ok(())
        };
    }
    if process::pgrp_orphaned(mine, p.sid.load(Ordering::Relaxed)) {
        return Err(Errno::EIO);
    }
    kill_pgrp(mine, s);
    Err(Errno::ERESTARTSYS)
}

/// A process exits: a session leader's exit frees its controlling terminal, its foreground
/// group told with SIGHUP and SIGCONT.
pub fn process_exit(p: &Process) {
    let fg = {
        let mut t = TTY.lock();
        if t.session == 0 || t.session != p.pid {
            return;
        }
        let fg = t.pgrp;
        t.session = 0;
        t.pgrp = 0;
        fg
    };
    if fg != 0 && fg != p.pgid.load(Ordering::Relaxed) {
        kill_pgrp(fg, sig::SIGHUP);
        kill_pgrp(fg, sig::SIGCONT);
    }
}

/// Opening a terminal device. /dev/tty needs a controlling terminal (ENXIO); opening
/// /dev/ttyAMA0 for reading without O_NOCTTY makes it the controlling terminal of a session
/// leader that has none, if no session has it.
pub fn open(kind: Kind, flags: u32) -> SysResult<Arc<dyn FileOps>> {
    use svelt_abi::uapi::fs::{O_ACCMODE, O_NOCTTY, O_WRONLY};
    let p = process::current().process();
    let mut t = TTY.lock();
    match kind {
        Kind::CurrentTty => {
            if !is_ctty(&t, &p) {
                return Err(Errno::ENXIO);
            }
        }
        Kind::Device => {
            let leader = p.sid.load(Ordering::Relaxed) == p.pid;
            if flags & O_NOCTTY == 0
                && flags & O_ACCMODE != O_WRONLY
                && leader
                && !is_ctty(&t, &p)
                && t.session == 0
            {
                set_ctty(&mut t, &p);
            }
        }
        Kind::Console => {}
    }
    Ok(Arc::new(TtyFile {
        console: kind == Kind::Console,
    }))
}

pub use crate::fs::dev::TtyKind as Kind;

pub struct TtyFile {
    console: bool,
}

enum Got {
    Bytes(usize),
    TimedOut,
    Again,
}

impl TtyFile {
    fn deadline(ds: u32) -> u64 {
        let f = crate::arch::cpu::counter_freq();
        crate::arch::cpu::counter() + u64::from(ds) * f / 10
    }

    fn tcsets(&self, cmd: u32, arg: usize) -> SysResult<usize> {
        check_change(sig::SIGTTOU)?;
        let new: Termios = if matches!(cmd, tty::TCSETS2 | tty::TCSETSW2 | tty::TCSETSF2) {
            UserPtr::<Termios2>::new(arg).read()?.termios
        } else {
            UserPtr::new(arg).read()?
        };
        if matches!(
            cmd,
            tty::TCSETSW | tty::TCSETSF | tty::TCSETSW2 | tty::TCSETSF2
        ) {
            crate::console::drain();
        }
        {
            let mut t = TTY.lock();
            if matches!(cmd, tty::TCSETSF | tty::TCSETSF2) {
                t.ld.flush_input();
            }
            t.ld.set_termios(new);
        }
        changed();
        Ok(0)
    }

    /// Writes that many bytes at most under the lock with IRQs masked.
    const OUT_CHUNK: usize = 256;
}

impl FileOps for TtyFile {
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        if !self.console {
            check_change(sig::SIGTTIN)?;
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let plan = TTY.lock().ld.read_plan();
        let mut wait = plan.timeout_ds.map(Self::deadline);
        let mut no_wait = plan.timeout_ds == Some(0);
        let mut done = 0;
        loop {
            let r = READABLE.wait_deadline(
                || {
                    let mut t = TTY.lock();
                    if t.ld.available(false) {
                        Some(Got::Bytes(t.ld.read(&mut buf[done..])))
                    } else if no_wait {
                        Some(Got::TimedOut)
                    } else if file.nonblocking() {
                        Some(Got::Again)
                    } else {
                        None
                    }
                },
                wait,
            );
            match r {
                Err(_) if done > 0 => return Ok(done),
                Err(_) => return Err(Errno::ERESTARTSYS),
                Ok(None) | Ok(Some(Got::TimedOut)) => return Ok(done),
                Ok(Some(Got::Again)) if done > 0 => return Ok(done),
                Ok(Some(Got::Again)) => return Err(Errno::EAGAIN),
                Ok(Some(Got::Bytes(n))) => {
                    done += n;
                    if done >= plan.minimum || done == buf.len() {
                        return Ok(done);
                    }
                    if let Some(ds) = plan.inter_byte_ds {
                        wait = Some(Self::deadline(ds));
                        no_wait = ds == 0;
                    }
                }
            }
        }
    }

    fn write(&self, file: &File, buf: &[u8]) -> SysResult<usize> {
        let tostop = TTY.lock().ld.termios().c_lflag & tty::TOSTOP != 0;
        if !self.console && tostop {
            check_change(sig::SIGTTOU)?;
        }
        let mut done = 0;
        while done < buf.len() {
            let r = WRITABLE.wait(|| {
                let mut t = TTY.lock();
                if t.ld.stopped() {
                    return if file.nonblocking() {
                        Some(Err(Errno::EAGAIN))
                    } else {
                        None
                    };
                }
                let n = (buf.len() - done).min(Self::OUT_CHUNK);
                t.ld.write(&buf[done..done + n], &mut |b: &[u8]| {
                    crate::console::write_raw(b)
                });
                Some(Ok(n))
            });
            match r {
                Ok(Ok(n)) => done += n,
                Ok(Err(e)) | Err(e) if done == 0 => {
                    return Err(if e == Errno::EINTR {
                        Errno::ERESTARTSYS
                    } else {
                        e
                    })
                }
                _ => break,
            }
        }
        Ok(done)
    }

    fn poll(&self) -> u32 {
        let mut ev = (POLLOUT | POLLWRNORM) as u32;
        if TTY.lock().ld.available(true) {
            ev |= (POLLIN | POLLRDNORM) as u32;
        }
        ev
    }

    fn ioctl(&self, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        let p = process::current().process();
        match cmd {
            tty::TCGETS => {
                let t = *TTY.lock().ld.termios();
                UserPtr::new(arg).write(&t)?;
                Ok(0)
            }
            tty::TCGETS2 => {
                let t = Termios2 {
                    termios: *TTY.lock().ld.termios(),
                    c_ispeed: BAUD,
                    c_ospeed: BAUD,
                };
                UserPtr::new(arg).write(&t)?;
                Ok(0)
            }
            tty::TCSETS | tty::TCSETSW | tty::TCSETSF => self.tcsets(cmd, arg),
            tty::TCSETS2 | tty::TCSETSW2 | tty::TCSETSF2 => self.tcsets(cmd, arg),
            tty::TIOCGWINSZ => {
                let w = TTY.lock().winsize;
                UserPtr::new(arg).write(&w)?;
                Ok(0)
            }
            tty::TIOCSWINSZ => {
                let w: Winsize = UserPtr::new(arg).read()?;
                let fg = {
                    let mut t = TTY.lock();
                    let differs = t.winsize != w;
                    t.winsize = w;
                    if differs {
                        t.pgrp
                    } else {
                        0
                    }
                };
                kill_pgrp(fg, sig::SIGWINCH);
                Ok(0)
            }
            tty::TIOCGPGRP => {
                let g = {
                    let t = TTY.lock();
                    if !is_ctty(&t, &p) {
                        return Err(Errno::ENOTTY);
                    }
                    t.pgrp
                };
                UserPtr::new(arg).write(&g)?;
                Ok(0)
            }
            tty::TIOCSPGRP => {
                match check_change(sig::SIGTTOU) {
                    Err(Errno::EIO) => return Err(Errno::ENOTTY),
                    r => r?,
                }
                let g: i32 = UserPtr::new(arg).read()?;
                if g < 0 {
                    return Err(Errno::EINVAL);
                }
                if !current_is_ctty() {
                    return Err(Errno::ENOTTY);
                }
                let sid = p.sid.load(Ordering::Relaxed);
                let member = process::all_processes()
                    .into_iter()
                    .find(|q| q.pgid.load(Ordering::Relaxed) == g as u32)
                    .ok_or(Errno::ESRCH)?;
                if member.sid.load(Ordering::Relaxed) != sid {
                    return Err(Errno::EPERM);
                }
                TTY.lock().pgrp = g as u32;
                Ok(0)
            }
            tty::TIOCGSID => {
                let s = {
                    let t = TTY.lock();
                    if !is_ctty(&t, &p) {
                        return Err(Errno::ENOTTY);
                    }
                    t.session
                };
                UserPtr::new(arg).write(&s)?;
                Ok(0)
            }
            tty::TIOCSCTTY => {
                let leader = p.sid.load(Ordering::Relaxed) == p.pid;
                let mut t = TTY.lock();
                if leader && t.session == p.pid {
                    return Ok(0);
                }
                if !leader || is_ctty(&t, &p) {
                    return Err(Errno::EPERM);
                }
                if t.session != 0 {
                    // Another session has it: only root may take it (arg 1).
                    if arg != 1 || p.euid.load(Ordering::Relaxed) != 0 {
                        return Err(Errno::EPERM);
                    }
                }
                set_ctty(&mut t, &p);
                Ok(0)
            }
            tty::TIOCNOTTY => {
                let fg = {
                    let mut t = TTY.lock();
                    if !is_ctty(&t, &p) {
                        return Err(Errno::ENOTTY);
                    }
                    p.ctty.store(0, Ordering::Relaxed);
                    if t.session != p.pid {
                        return Ok(0);
                    }
                    // The session leader gives it up for the whole session.
                    let fg = t.pgrp;
                    t.session = 0;
                    t.pgrp = 0;
                    fg
                };
                kill_pgrp(fg, sig::SIGHUP);
                kill_pgrp(fg, sig::SIGCONT);
                Ok(0)
            }
            tty::FIONREAD => {
                let n = TTY.lock().ld.inq() as i32;
                UserPtr::new(arg).write(&n)?;
                Ok(0)
            }
            tty::TIOCOUTQ => {
                UserPtr::new(arg).write(&0i32)?;
                Ok(0)
            }
            tty::TCFLSH => {
                check_change(sig::SIGTTOU)?;
                match arg as u32 {
                    tty::TCIFLUSH | tty::TCIOFLUSH => TTY.lock().ld.flush_input(),
                    tty::TCOFLUSH => {}
                    _ => return Err(Errno::EINVAL),
                }
                changed();
                Ok(0)
            }
            tty::TCXONC => {
                check_change(sig::SIGTTOU)?;
                let mut t = TTY.lock();
                match arg as u32 {
                    tty::TCOOFF => t.ld.set_stopped(true),
                    tty::TCOON => t.ld.set_stopped(false),
                    tty::TCIOFF | tty::TCION => {
                        let i = if arg as u32 == tty::TCIOFF {
                            tty::VSTOP
                        } else {
                            tty::VSTART
                        };
                        let c = t.ld.termios().c_cc[i];
                        if c != 0 {
                            crate::console::write_raw(&[c]);
                        }
                    }
                    _ => return Err(Errno::EINVAL),
                }
                drop(t);
                changed();
                Ok(0)
            }
            tty::TCSBRK | tty::TCSBRKP | tty::TIOCSBRK | tty::TIOCCBRK => {
                check_change(sig::SIGTTOU)?;
                // Output is written synchronously: draining is waiting for the UART.
                crate::console::drain();
                Ok(0)
            }
            tty::TIOCGETD => {
                UserPtr::new(arg).write(&i32::from(tty::N_TTY))?;
                Ok(0)
            }
            tty::TIOCEXCL | tty::TIOCNXCL => Ok(0),
            _ => Err(Errno::ENOTTY),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
