//! A terminal's ioctls (Linux's tty_ioctl, tty_mode_ioctl and n_tty_ioctl): termios, window
//! size, the controlling terminal, the foreground group, flushing and flow control. The
//! console and every pty slave answer them alike; a pty master answers its own (pty.rs).

#![forbid(unsafe_code)]

use super::{emit, kill_pgrp, Line, Terminal};
use crate::fs::Caller;
use crate::mm::uaccess::UserPtr;
use crate::process;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::signal as sig;
use svelt_abi::uapi::tty::{self, Termios, Termios2, Winsize};

/// The console's line speed as TCGETS2 reports it.
const SERIAL_BAUD: u32 = 115_200;

/// How much of a pty's output its master's line discipline holds (Linux's N_TTY_BUF_SIZE
/// less the one byte n_tty keeps free); an output flush drops what is beyond it.
const MASTER_LDISC_BYTES: usize = 4095;

impl Terminal {
    /// Waits for written output to leave (the console's UART; a pty's output is already in
    /// its master's buffer).
    fn drain(&self) {
        if self.line == Line::Serial {
            crate::console::drain();
        }
    }

    /// (input, output) speeds as TCGETS2 reports them.
    fn speeds(&self) -> (u32, u32) {
        match self.line {
            Line::Serial => (SERIAL_BAUD, SERIAL_BAUD),
            Line::Pty => self.st.lock().link.speeds,
        }
    }

    fn tcsets(&self, cur: &dyn Caller, cmd: u32, arg: usize) -> SysResult<usize> {
        self.check_change(cur, sig::SIGTTOU)?;
        let (mut ispeed, mut ospeed) = self.speeds();
        let mut new: Termios = if matches!(cmd, tty::TCSETS2 | tty::TCSETSW2 | tty::TCSETSF2) {
            let t2 = UserPtr::<Termios2>::new(arg).read()?;
            (ispeed, ospeed) = (t2.c_ispeed, t2.c_ospeed);
            t2.termios
        } else {
            UserPtr::new(arg).read()?
        };
        if self.line == Line::Pty {
            // A pty's line is always 8 bits without parity (Linux's pty_set_termios).
            new.c_cflag = (new.c_cflag & !(tty::CSIZE | tty::PARENB)) | tty::CS8 | tty::CREAD;
        }
        if matches!(
            cmd,
            tty::TCSETSW | tty::TCSETSF | tty::TCSETSW2 | tty::TCSETSF2
        ) {
            self.drain();
        }
        {
            let mut t = self.st.lock();
            if matches!(cmd, tty::TCSETSF | tty::TCSETSF2) {
                t.ld.flush_input();
                t.link.packet.flushed(true, false);
            }
            let (old, was) = (*t.ld.termios(), t.ld.stopped());
            t.ld.set_termios(new);
            if self.line == Line::Pty {
                t.link.speeds = tty::termios_speeds(new.c_cflag, ispeed, ospeed);
            }
            // What a pty master in packet mode hears of it (Linux's pty_set_termios, then
            // n_tty_set_termios restarting output stopped by a ^S once IXON is off).
            let new = *t.ld.termios();
            t.link.packet.termios_changed(&old, &new);
            if t.ld.stopped() != was {
                let stopped = t.ld.stopped();
                t.link.packet.flow(stopped);
            }
        }
        self.changed();
        Ok(0)
    }

    /// TIOCSCTTY: the caller, a session leader without a controlling terminal, takes this
    /// one (from another session only as root, with `arg` 1).
    pub(super) fn tiocsctty(&self, cur: &dyn Caller, arg: usize) -> SysResult<usize> {
        let p = process::caller_thread(cur).process();
        let leader = p.sid.load(Ordering::Relaxed) == p.pid;
        let others = has_other_ctty(self, &p);
        let mut t = self.st.lock();
        if leader && t.session == p.pid {
            return Ok(0);
        }
        if !leader || t.is_ctty(&p) || others {
            return Err(Errno::EPERM);
        }
        if t.session != 0 {
            // Another session has it: only root may take it (arg 1).
            if arg != 1 || p.euid.load(Ordering::Relaxed) != 0 {
                return Err(Errno::EPERM);
            }
        }
        t.set_ctty(&p);
        Ok(0)
    }

    /// TIOCSPGRP: the caller's controlling terminal gets group `arg` of its session in the
    /// foreground.
    pub(super) fn tiocspgrp(&self, cur: &dyn Caller, arg: usize) -> SysResult<usize> {
        let p = process::caller_thread(cur).process();
        match self.check_change(cur, sig::SIGTTOU) {
            Err(Errno::EIO) => return Err(Errno::ENOTTY),
            r => r?,
        }
        let g: i32 = UserPtr::new(arg).read()?;
        if g < 0 {
            return Err(Errno::EINVAL);
        }
        if !self.is_ctty_of(&p) {
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
        self.st.lock().pgrp = g as u32;
        Ok(0)
    }

    pub(super) fn ioctl(&self, cur: &dyn Caller, cmd: u32, arg: usize) -> SysResult<usize> {
        let p = process::caller_thread(cur).process();
        if self.st.lock().link.hung_up {
            // Linux's hung_up_tty_ioctl.
            return Err(if cmd == tty::TIOCSPGRP {
                Errno::ENOTTY
            } else {
                Errno::EIO
            });
        }
        match cmd {
            tty::TCGETS => {
                let t = *self.st.lock().ld.termios();
                UserPtr::new(arg).write(&t)?;
                Ok(0)
            }
            tty::TCGETS2 => {
                let (c_ispeed, c_ospeed) = self.speeds();
                let t = Termios2 {
                    termios: *self.st.lock().ld.termios(),
                    c_ispeed,
                    c_ospeed,
                };
                UserPtr::new(arg).write(&t)?;
                Ok(0)
            }
            tty::TCSETS | tty::TCSETSW | tty::TCSETSF => self.tcsets(cur, cmd, arg),
            tty::TCSETS2 | tty::TCSETSW2 | tty::TCSETSF2 => self.tcsets(cur, cmd, arg),
            tty::TIOCGWINSZ => {
                let w = self.st.lock().winsize;
                UserPtr::new(arg).write(&w)?;
                Ok(0)
            }
            tty::TIOCSWINSZ => {
                let w: Winsize = UserPtr::new(arg).read()?;
                self.set_winsize(w);
                Ok(0)
            }
            tty::TIOCGPGRP => {
                let g = {
                    let t = self.st.lock();
                    if !t.is_ctty(&p) {
                        return Err(Errno::ENOTTY);
                    }
                    t.pgrp
                };
                UserPtr::new(arg).write(&g)?;
                Ok(0)
            }
            tty::TIOCSPGRP => self.tiocspgrp(cur, arg),
            tty::TIOCGSID => {
                let s = {
                    let t = self.st.lock();
                    if !t.is_ctty(&p) {
                        return Err(Errno::ENOTTY);
                    }
                    t.session
                };
                UserPtr::new(arg).write(&s)?;
                Ok(0)
            }
            tty::TIOCSCTTY => self.tiocsctty(cur, arg),
            tty::TIOCNOTTY => {
                let fg = {
                    let mut t = self.st.lock();
                    if !t.is_ctty(&p) {
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
                let n = self.st.lock().ld.inq() as i32;
                UserPtr::new(arg).write(&n)?;
                Ok(0)
            }
            tty::TIOCOUTQ => {
                UserPtr::new(arg).write(&0i32)?;
                Ok(0)
            }
            tty::TCFLSH => {
                self.check_change(cur, sig::SIGTTOU)?;
                let how = arg as u32;
                if how > tty::TCIOFLUSH {
                    return Err(Errno::EINVAL);
                }
                let (input, output) = (how != tty::TCOFLUSH, how != tty::TCIFLUSH);
                let mut t = self.st.lock();
                if input {
                    t.ld.flush_input();
                }
                // A pty's output the master has not read: Linux's master holds the first
                // N_TTY_BUF_SIZE - 1 bytes in its line discipline, which a flush leaves, and
                // the rest in its flip buffers, which pty_flush_buffer drops. A pty master in
                // packet mode hears of it (n_tty_packet_mode_flush and pty_flush_buffer).
                if output && self.line == Line::Pty {
                    t.out.truncate(MASTER_LDISC_BYTES);
                }
                t.link.packet.flushed(input, output);
                drop(t);
                self.changed();
                Ok(0)
            }
            tty::TCXONC => {
                self.check_change(cur, sig::SIGTTOU)?;
                let mut t = self.st.lock();
                match arg as u32 {
                    tty::TCOOFF | tty::TCOON => {
                        let stop = arg as u32 == tty::TCOOFF;
                        if t.ld.stopped() != stop {
                            t.ld.set_stopped(stop);
                            t.link.packet.flow(stop);
                        }
                    }
                    tty::TCIOFF | tty::TCION => {
                        let i = if arg as u32 == tty::TCIOFF {
                            tty::VSTOP
                        } else {
                            tty::VSTART
                        };
                        let c = t.ld.termios().c_cc[i];
                        if c != 0 {
                            emit(self.line, &mut t.out, &[c]);
                        }
                    }
                    _ => return Err(Errno::EINVAL),
                }
                drop(t);
                self.changed();
                Ok(0)
            }
            tty::TCSBRK | tty::TCSBRKP | tty::TIOCSBRK | tty::TIOCCBRK => {
                self.check_change(cur, sig::SIGTTOU)?;
                // Output is written synchronously: draining is waiting for the UART.
                self.drain();
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
}

/// `p` has a controlling terminal other than `me`.
pub(super) fn has_other_ctty(me: &Terminal, p: &process::Process) -> bool {
    let mut found = false;
    super::for_each_terminal(|t| {
        if !core::ptr::eq(t, me) && t.is_ctty_of(p) {
            found = true;
        }
    });
    found
}
