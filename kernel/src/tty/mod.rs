//! Terminals, as Linux's tty layer with the N_TTY line discipline. The serial console
//! (`serial`: /dev/ttyAMA0, /dev/console) and each pseudo-terminal's slave (`pty`:
//! /dev/pts/N) are one `Terminal`: the line discipline (`abi::uapi::ldisc`), the window size,
//! the controlling session and foreground group, job control, and the file operations and
//! ioctls of a terminal. They differ only in where output goes (the UART, or the bytes the pty
//! master reads) and where input comes from (the UART's interrupt, or writes to the master).
//!
//! A process's controlling terminal is the one whose `generation` its `ctty` holds while a
//! session has that terminal: generations come from one counter, so they name one terminal.

#![forbid(unsafe_code)]

mod ioctl;
mod pty;
mod serial;

pub use serial::enable_input;

use crate::fs::{epoll, Caller, File, FileOps};
use crate::process::{self, Process};
use crate::sync::IrqLock;
use crate::task::wait::WaitQueue;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::any::Any;
use core::sync::atomic::{AtomicU32, Ordering};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use svelt_abi::uapi::ldisc::Ldisc;
use svelt_abi::uapi::signal as sig;
use svelt_abi::uapi::tty::{self, Termios, Winsize};

/// Registers the terminals' nodes with /dev (the console's, /dev/ptmx and the pty slaves)
/// and their part in a process's exit. Boot time.
pub fn init() {
    crate::fs::dev::register_tty(serial::open);
    crate::fs::dev::register_pty(crate::fs::dev::PtyDriver {
        open_ptmx: pty::open_ptmx,
        open_slave: pty::open_slave,
    });
    process::exit::on_exit(process_exit);
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Line {
    Serial,
    Pty,
}

/// How much slave output a pty keeps for its master before slave writers wait (Linux's pty
/// port buffer limit); echoes beyond `OUT_LIMIT` are dropped, as a full port drops them.
const OUT_CAP: usize = 8192;
const OUT_LIMIT: usize = OUT_CAP + 4096;

/// What a pty adds to its slave's state (the console leaves it as made).
struct PtyLink {
    /// The slave may not be opened (TIOCSPTLCK).
    locked: bool,
    /// Open slave files.
    slaves: u32,
    /// The last slave file closed (Linux's TTY_OTHER_CLOSED on the master): master reads
    /// find EIO once the slave's output is read, and poll shows POLLHUP.
    slave_closed: bool,
    /// The master closed: the slave is hung up (reads 0, writes EIO).
    hung_up: bool,
    /// The line's (input, output) speeds as last set (TCGETS2 shows them; a pty keeps what
    /// it is given, as Linux's pty driver does).
    speeds: (u32, u32),
    /// The master's packet mode and the status the slave's events left for it.
    packet: tty::Packet,
}

struct TermState {
    ld: Ldisc,
    winsize: Winsize,
    /// The session whose controlling terminal this is (0: none) and its foreground group.
    session: u32,
    pgrp: u32,
    /// Set each time a session takes the terminal (see the module comment).
    generation: u32,
    /// A pty slave's output the master has not read yet.
    out: VecDeque<u8>,
    link: PtyLink,
    /// Signals typed at the console for the foreground group that its interrupt handler
    /// could not send yet (the process table was busy): bit n-1 for signal n, and the group.
    deferred: u64,
    deferred_pgrp: u32,
}

pub struct Terminal {
    line: Line,
    /// Lock order: a terminal's state -> the UART's console lock. Nothing that takes
    /// process-table locks runs under it.
    st: IrqLock<TermState>,
    /// Readers and writers of either side wait here for any change.
    wq: WaitQueue,
}

static NEXT_GENERATION: AtomicU32 = AtomicU32::new(1);

/// Where a terminal's output goes: the UART, or the bytes its pty master reads.
fn emit(line: Line, out: &mut VecDeque<u8>, b: &[u8]) {
    match line {
        Line::Serial => crate::console::write_raw(b),
        Line::Pty => {
            if out.len() < OUT_LIMIT && out.try_reserve(b.len()).is_ok() {
                out.extend(b.iter().copied());
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

/// Each signal of `mask` (bit n-1 for signal n) to group `g`.
fn kill_pgrp_mask(g: u32, mask: u64) {
    for s in 1..=64u32 {
        if mask & (1 << (s - 1)) != 0 {
            kill_pgrp(g, s);
        }
    }
}

/// `s` is blocked or ignored by the calling thread.
fn ignoring(me: &process::Thread, s: u32) -> bool {
    let blocked = me.sig.lock().blocked & (1 << (s - 1)) != 0;
    blocked || me.sighand().lock().get(s).sa_handler == sig::SIG_IGN
}

impl TermState {
    /// The terminal is `p`'s controlling terminal.
    fn is_ctty(&self, p: &Process) -> bool {
        self.session != 0 && p.ctty.load(Ordering::Relaxed) == self.generation
    }

    /// Makes the terminal the controlling terminal of `p`'s session, `p`'s group in the
    /// foreground (Linux's __proc_set_tty).
    fn set_ctty(&mut self, p: &Process) {
        self.generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed).max(1);
        self.session = p.sid.load(Ordering::Relaxed);
        self.pgrp = p.pgid.load(Ordering::Relaxed);
        p.ctty.store(self.generation, Ordering::Relaxed);
    }

    /// An open of the terminal's device (not /dev/tty, not /dev/console): without O_NOCTTY
    /// and for reading, it becomes the controlling terminal of a session leader that has
    /// none, if no session has it (Linux's tty_open_proc_set_tty).
    fn open_sets_ctty(&mut self, p: &Process, flags: u32, has_ctty: bool) {
        use svelt_abi::uapi::fs::{O_ACCMODE, O_NOCTTY, O_WRONLY};
        let leader = p.sid.load(Ordering::Relaxed) == p.pid;
        if flags & O_NOCTTY == 0
            && flags & O_ACCMODE != O_WRONLY
            && leader
            && !has_ctty
            && self.session == 0
        {
            self.set_ctty(p);
        }
    }
}

impl Terminal {
    const fn new(line: Line, t: Termios) -> Terminal {
        Terminal {
            line,
            st: IrqLock::new(TermState {
                ld: Ldisc::new(t),
                winsize: Winsize {
                    ws_row: 0,
                    ws_col: 0,
                    ws_xpixel: 0,
                    ws_ypixel: 0,
                },
                session: 0,
                pgrp: 0,
                generation: 0,
                out: VecDeque::new(),
                link: PtyLink {
                    locked: true,
                    slaves: 0,
                    slave_closed: false,
                    hung_up: false,
                    speeds: (tty::PTY_BAUD, tty::PTY_BAUD),
                    packet: tty::Packet::new(),
                },
                deferred: 0,
                deferred_pgrp: 0,
            }),
            wq: WaitQueue::new(),
        }
    }

    fn changed(&self) {
        self.wq.wake_all();
        epoll::notify();
    }

    fn is_ctty_of(&self, p: &Process) -> bool {
        self.st.lock().is_ctty(p)
    }

    /// Bytes typed at the terminal, through the line discipline: echoes go out, and the
    /// signal characters' signals are returned (a mask, bit n-1 for signal n) with the
    /// foreground group to send them to. A pty master in packet mode is told of flushes and
    /// of output stopped or started.
    fn receive(st: &mut TermState, line: Line, bytes: &[u8]) -> (u64, u32) {
        let TermState { ld, out, link, .. } = &mut *st;
        let mut mask = 0u64;
        for &c in bytes {
            let was = ld.stopped();
            if let Some(s) = ld.receive(c, &mut |b: &[u8]| emit(line, out, b)) {
                mask |= 1 << (s - 1);
                link.packet.signal_char(ld.termios());
            }
            if ld.stopped() != was {
                link.packet.flow(ld.stopped());
            }
        }
        (mask, st.pgrp)
    }

    /// Linux's tty_check_change: a member of a background group that uses its controlling
    /// terminal gets `s` (SIGTTOU or SIGTTIN) sent to its group and the call restarts after
    /// it; EIO when it cannot be stopped (SIGTTIN ignored, or an orphaned group).
    fn check_change(&self, cur: &dyn Caller, s: u32) -> SysResult<()> {
        let me = process::caller_thread(cur);
        let p = me.process();
        let fg = {
            let t = self.st.lock();
            if !t.is_ctty(&p) {
                return Ok(());
            }
            t.pgrp
        };
        let mine = p.pgid.load(Ordering::Relaxed);
        if fg == 0 || fg == mine {
            return Ok(());
        }
        if ignoring(me, s) {
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

    /// A session leader `p` exits: the terminal it controlled is free. The console's
    /// foreground group is told with SIGHUP and SIGCONT; a pty's gets SIGHUP alone, the
    /// leader's own group included (Linux's disassociate_ctty on exit).
    fn leader_exit(&self, p: &Process) {
        let fg = {
            let mut t = self.st.lock();
            if t.session == 0 || t.session != p.pid {
                return;
            }
            let fg = t.pgrp;
            t.session = 0;
            t.pgrp = 0;
            fg
        };
        if fg == 0 {
            return;
        }
        if self.line == Line::Pty {
            for q in process::all_processes()
                .iter()
                .filter(|q| q.pgid.load(Ordering::Relaxed) == fg && q.pid != p.pid)
            {
                let info = crate::process::signal::SigInfo::kernel(sig::SIGHUP);
                crate::process::signal::send_to_process(q, sig::SIGHUP, info);
            }
        } else if fg != p.pgid.load(Ordering::Relaxed) {
            kill_pgrp(fg, sig::SIGHUP);
            kill_pgrp(fg, sig::SIGCONT);
        }
    }

    /// A new window size; the foreground group gets SIGWINCH when it differs.
    fn set_winsize(&self, w: Winsize) {
        let fg = {
            let mut t = self.st.lock();
            let differs = t.winsize != w;
            t.winsize = w;
            if differs {
                t.pgrp
            } else {
                0
            }
        };
        kill_pgrp(fg, sig::SIGWINCH);
    }

    fn deadline(ds: u32) -> u64 {
        let f = crate::arch::cpu::counter_freq();
        crate::arch::cpu::counter() + u64::from(ds) * f / 10
    }

    /// read(2) of the terminal; `redirected` (/dev/console) skips the background check.
    fn read(
        &self,
        cur: &dyn Caller,
        file: &File,
        buf: &mut [u8],
        redirected: bool,
    ) -> SysResult<usize> {
        enum Got {
            Bytes(usize),
            TimedOut,
            Again,
            HungUp,
        }
        if self.st.lock().link.hung_up {
            return Ok(0);
        }
        if !redirected {
            self.check_change(cur, sig::SIGTTIN)?;
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let plan = self.st.lock().ld.read_plan();
        let mut wait = plan.timeout_ds.map(Self::deadline);
        let mut no_wait = plan.timeout_ds == Some(0);
        let mut done = 0;
        loop {
            let r = self.wq.wait_deadline(
                || {
                    let mut t = self.st.lock();
                    if t.ld.available(false) {
                        Some(Got::Bytes(t.ld.read(&mut buf[done..])))
                    } else if t.link.hung_up {
                        Some(Got::HungUp)
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
                Ok(Some(Got::Again | Got::HungUp)) if done > 0 => return Ok(done),
                Ok(Some(Got::Again)) => return Err(Errno::EAGAIN),
                // A reader waiting when the master closed (Linux: TTY_OTHER_CLOSED).
                Ok(Some(Got::HungUp)) => return Err(Errno::EIO),
                Ok(Some(Got::Bytes(n))) => {
                    done += n;
                    if self.line == Line::Pty {
                        // Room for the master's writers.
                        self.changed();
                    }
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

    /// Writes that many bytes at most under the lock with IRQs masked.
    const OUT_CHUNK: usize = 256;

    /// write(2) of the terminal; `redirected` (/dev/console) skips the background check.
    fn write(
        &self,
        cur: &dyn Caller,
        file: &File,
        buf: &[u8],
        redirected: bool,
    ) -> SysResult<usize> {
        let (tostop, hung_up) = {
            let t = self.st.lock();
            (t.ld.termios().c_lflag & tty::TOSTOP != 0, t.link.hung_up)
        };
        if hung_up {
            return Err(Errno::EIO);
        }
        if !redirected && tostop {
            self.check_change(cur, sig::SIGTTOU)?;
        }
        let line = self.line;
        let mut done = 0;
        while done < buf.len() {
            let r = self.wq.wait(|| {
                let mut t = self.st.lock();
                if t.link.hung_up {
                    return Some(Err(Errno::EIO));
                }
                let full = line == Line::Pty && t.out.len() >= OUT_CAP;
                if t.ld.stopped() || full {
                    return if file.nonblocking() {
                        Some(Err(Errno::EAGAIN))
                    } else {
                        None
                    };
                }
                let mut n = (buf.len() - done).min(Self::OUT_CHUNK);
                if line == Line::Pty {
                    n = n.min(OUT_CAP - t.out.len());
                }
                let TermState { ld, out, .. } = &mut *t;
                ld.write(&buf[done..done + n], &mut |b: &[u8]| emit(line, out, b));
                Some(Ok(n))
            });
            match r {
                Ok(Ok(n)) => {
                    done += n;
                    if line == Line::Pty {
                        self.changed();
                    }
                }
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
        let t = self.st.lock();
        if t.link.hung_up {
            return (POLLIN | POLLOUT | POLLERR | POLLHUP | POLLRDNORM | POLLWRNORM) as u32;
        }
        let mut ev = 0;
        if self.line == Line::Serial || t.out.len() < OUT_CAP {
            ev |= (POLLOUT | POLLWRNORM) as u32;
        }
        if t.ld.available(true) {
            ev |= (POLLIN | POLLRDNORM) as u32;
        }
        ev
    }
}

/// Every terminal that exists now: the console, then the ptys.
fn for_each_terminal(mut f: impl FnMut(&Terminal)) {
    f(&serial::CONSOLE);
    pty::for_each(|t| f(t));
}

/// A process exits: a session leader's exit frees its controlling terminal. A terminal's
/// session is its leader's pid, so the exit of any other process leaves every terminal as it
/// is and need not list them (Linux's do_exit also disassociates only for a leader).
pub fn process_exit(p: &Process) {
    if p.sid.load(Ordering::Relaxed) != p.pid {
        return;
    }
    for_each_terminal(|t| t.leader_exit(p));
}

/// Opens /dev/tty: the caller's controlling terminal, ENXIO without one.
fn open_current(cur: &dyn Caller, flags: u32) -> SysResult<Arc<dyn FileOps>> {
    let p = process::caller_thread(cur).process();
    if serial::CONSOLE.is_ctty_of(&p) {
        return Ok(Arc::new(TtyFile {
            term: TermRef::Console,
            redirected: false,
        }));
    }
    pty::open_ctty(cur, &p, flags)
}

/// The terminal a file is open on.
enum TermRef {
    Console,
    Pty(Arc<pty::Pair>),
}

/// An open terminal: the console (through /dev/ttyAMA0, /dev/console, /dev/tty) or a pty
/// slave.
pub struct TtyFile {
    term: TermRef,
    /// Opened as /dev/console: never a controlling terminal, no background checks.
    redirected: bool,
}

impl TtyFile {
    fn term(&self) -> &Terminal {
        match &self.term {
            TermRef::Console => &serial::CONSOLE,
            TermRef::Pty(p) => &p.slave,
        }
    }
}

impl Drop for TtyFile {
    fn drop(&mut self) {
        if let TermRef::Pty(p) = &self.term {
            pty::slave_released(p);
        }
    }
}

impl FileOps for TtyFile {
    fn read(&self, cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        self.term().read(cur, file, buf, self.redirected)
    }

    fn write(&self, cur: &dyn Caller, file: &File, buf: &[u8]) -> SysResult<usize> {
        self.term().write(cur, file, buf, self.redirected)
    }

    fn poll(&self, _cur: &dyn Caller) -> u32 {
        self.term().poll()
    }

    fn ioctl(&self, cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        self.term().ioctl(cur, cmd, arg)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
