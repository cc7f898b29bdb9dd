//! Unix98 pseudo-terminals (Linux's drivers/tty/pty.c): opening /dev/ptmx makes a pair at the
//! lowest free index N, its slave /dev/pts/N (fs::devpts) locked until TIOCSPTLCK(0). The
//! slave is a `Terminal` like the console; what the master writes is typed at it, and what it
//! outputs (echoes, written data after OPOST) is what the master reads.
//!
//! Closing the master hangs the slave up: its session leader gets SIGHUP and SIGCONT, the
//! session loses it, its files read 0 (a reader waiting then gets EIO) and write EIO, and
//! /dev/pts/N goes. Once every slave file that was opened is closed, master reads find EIO
//! after the output left. The index is free again when both sides are closed.
//!
//! Packet mode (TIOCPKT on the master; TIOCGPKT asks; the slave answers both ENOTTY): each
//! master read returns either one status byte alone, when the slave's events left one, or a
//! `TIOCPKT_DATA` (0) byte then data (a 1-byte buffer gets the 0 alone, the data staying).
//! Statuses (`abi::uapi::tty::Packet`): FLUSHREAD and FLUSHWRITE for the slave's TCFLSH,
//! TCSETSF and signal characters without NOFLSH; STOP and START when its output stops or
//! starts (^S/^Q with IXON, TCOOFF/TCOON, IXON turned off); DOSTOP and NOSTOP when its modes
//! turn ^S/^Q flow control on or off; IOCTL for a mode change with EXTPROC. A pending status
//! makes the master poll POLLPRI as well as POLLIN; reading it clears it, and so does turning
//! the mode on.

#![forbid(unsafe_code)]

use super::{kill_pgrp, kill_pgrp_mask, Line, TermRef, Terminal, TtyFile};
use crate::fs::{devpts, Caller, File, FileOps};
use crate::mm::uaccess::UserPtr;
use crate::process::{self, Process};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::Ordering;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{O_CLOEXEC, POLLHUP, POLLIN, POLLOUT, POLLPRI, POLLRDNORM, POLLWRNORM};
use svelt_abi::uapi::signal as sig;
use svelt_abi::uapi::tty::{self, Termios, Winsize};

/// The most pairs at once (Linux's kernel.pty.max default).
const PTY_MAX: u32 = 4096;

/// A pty pair: its index and its slave terminal (which also holds the master's few bits).
pub struct Pair {
    index: u32,
    pub(super) slave: Terminal,
}

/// The pairs by index. Weak: a pair lives while its master or a slave file is open.
static PAIRS: Mutex<BTreeMap<u32, Weak<Pair>>> = Mutex::new(BTreeMap::new());

impl Drop for Pair {
    fn drop(&mut self) {
        PAIRS.lock().remove(&self.index);
    }
}

/// Every live pair, taken out of the table first (a pair's last reference may go here, and
/// its drop takes the table's lock).
fn pairs() -> Vec<Arc<Pair>> {
    let all: Vec<Weak<Pair>> = PAIRS.lock().values().cloned().collect();
    all.iter().filter_map(Weak::upgrade).collect()
}

pub(super) fn for_each(mut f: impl FnMut(&Terminal)) {
    for p in pairs() {
        f(&p.slave);
    }
}

fn find(index: u32) -> Option<Arc<Pair>> {
    let w = PAIRS.lock().get(&index).cloned()?;
    w.upgrade()
}

/// open(2) of /dev/ptmx: a new pair at the lowest free index, its slave locked.
pub(super) fn open_ptmx(_cur: &dyn Caller, _flags: u32) -> SysResult<Arc<dyn FileOps>> {
    let limit = devpts::max().min(PTY_MAX);
    let pair = {
        let mut table = PAIRS.lock();
        let index = (0..limit)
            .find(|i| !table.contains_key(i))
            .ok_or(Errno::ENOSPC)?;
        let pair = Arc::new(Pair {
            index,
            slave: Terminal::new(Line::Pty, Termios::pty_slave_default()),
        });
        table.insert(index, Arc::downgrade(&pair));
        pair
    };
    devpts::add_slave(pair.index);
    Ok(Arc::new(Master { pair }))
}

/// A slave file on `pair`, counted as open (Linux's pty_open: EIO while locked or once the
/// master closed). `flags` may make it the caller's controlling terminal.
fn slave_file(
    cur: &dyn Caller,
    pair: Arc<Pair>,
    flags: u32,
    ctty_rules: bool,
) -> SysResult<Arc<TtyFile>> {
    let p = process::caller_thread(cur).process();
    let has = ctty_rules && (pair.slave.is_ctty_of(&p) || has_any_ctty(&p));
    {
        let mut t = pair.slave.st.lock();
        if t.link.hung_up || t.link.locked {
            return Err(Errno::EIO);
        }
        t.link.slaves += 1;
        t.link.slave_closed = false;
        if ctty_rules {
            t.open_sets_ctty(&p, flags, has);
        }
    }
    Ok(Arc::new(TtyFile {
        term: TermRef::Pty(pair),
        redirected: false,
    }))
}

fn has_any_ctty(p: &Process) -> bool {
    let mut found = false;
    super::for_each_terminal(|t| found |= t.is_ctty_of(p));
    found
}

/// open(2) of /dev/pts/N.
pub(super) fn open_slave(cur: &dyn Caller, index: u32, flags: u32) -> SysResult<Arc<dyn FileOps>> {
    let pair = find(index).ok_or(Errno::EIO)?;
    Ok(slave_file(cur, pair, flags, true)?)
}

/// open(2) of /dev/tty when the caller's controlling terminal is a pty slave.
pub(super) fn open_ctty(cur: &dyn Caller, p: &Process, flags: u32) -> SysResult<Arc<dyn FileOps>> {
    let pair = pairs()
        .into_iter()
        .find(|q| q.slave.is_ctty_of(p))
        .ok_or(Errno::ENXIO)?;
    Ok(slave_file(cur, pair, flags, false)?)
}

/// A slave file closed: after the last, master reads end in EIO.
pub(super) fn slave_released(pair: &Pair) {
    {
        let mut t = pair.slave.st.lock();
        t.link.slaves = t.link.slaves.saturating_sub(1);
        if t.link.slaves == 0 {
            t.link.slave_closed = true;
        }
    }
    pair.slave.changed();
}

/// The master side of a pair (the file /dev/ptmx gave).
pub struct Master {
    pair: Arc<Pair>,
}

impl Drop for Master {
    /// The master closed: the slave hangs up (Linux's pty_close and tty_vhangup).
    fn drop(&mut self) {
        let sid = {
            let mut t = self.pair.slave.st.lock();
            t.link.hung_up = true;
            let sid = t.session;
            t.session = 0;
            t.pgrp = 0;
            sid
        };
        devpts::remove_slave(self.pair.index);
        self.pair.slave.changed();
        if sid == 0 {
            return;
        }
        // The session's leader is told; the session loses its terminal.
        if let Some(leader) = process::find_process(sid) {
            if leader.sid.load(Ordering::Relaxed) == sid {
                for s in [sig::SIGHUP, sig::SIGCONT] {
                    process::signal::send_to_process(
                        &leader,
                        s,
                        process::signal::SigInfo::kernel(s),
                    );
                }
            }
        }
    }
}

impl Master {
    fn term(&self) -> &Terminal {
        &self.pair.slave
    }

    /// TIOCGPTPEER: a new descriptor for the slave, opened with `flags` (O_NOCTTY,
    /// O_CLOEXEC...), without a path walk.
    fn open_peer(&self, cur: &dyn Caller, flags: u32) -> SysResult<usize> {
        let file = slave_file(cur, self.pair.clone(), flags, true)?;
        let node = devpts::slave_node(self.pair.index).ok_or(Errno::EIO)?;
        let path = format!("/dev/pts/{}", self.pair.index);
        let f = File::new(Some(node), file, flags & !O_CLOEXEC, path);
        let fd = cur.files().lock().install(cur, f, flags & O_CLOEXEC != 0)?;
        Ok(fd as usize)
    }
}

impl FileOps for Master {
    /// The slave's output; EIO once every slave file closed and nothing is left. In packet
    /// mode a pending status comes first, alone; data comes after a `TIOCPKT_DATA` byte
    /// (Linux's n_tty_read on the master).
    fn read(&self, _cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let t = self.term();
        let r = t.wq.wait(|| {
            let mut s = t.st.lock();
            if let Some(status) = s.link.packet.take() {
                buf[0] = status;
                Some(Ok(1))
            } else if !s.out.is_empty() {
                let skip = usize::from(s.link.packet.on());
                let dst = &mut buf[skip..];
                let n = s.out.len().min(dst.len());
                for (d, b) in dst.iter_mut().zip(s.out.drain(..n)) {
                    *d = b;
                }
                if skip == 1 {
                    buf[0] = tty::TIOCPKT_DATA;
                }
                Some(Ok(n + skip))
            } else if s.link.slave_closed {
                Some(Err(Errno::EIO))
            } else if file.nonblocking() {
                Some(Err(Errno::EAGAIN))
            } else {
                None
            }
        });
        match r {
            Ok(Ok(n)) => {
                // Room for the slave's writers.
                t.changed();
                Ok(n)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Errno::ERESTARTSYS),
        }
    }

    /// Typed at the slave: through its line discipline, as far as its input has room.
    fn write(&self, _cur: &dyn Caller, file: &File, buf: &[u8]) -> SysResult<usize> {
        let t = self.term();
        let mut done = 0;
        while done < buf.len() {
            let r = t.wq.wait(|| {
                let mut s = t.st.lock();
                let room = s.ld.receive_room();
                if room == 0 {
                    return if file.nonblocking() {
                        Some(Err(Errno::EAGAIN))
                    } else {
                        None
                    };
                }
                let n = (buf.len() - done).min(room).min(Terminal::OUT_CHUNK);
                let (mask, g) = Terminal::receive(&mut s, Line::Pty, &buf[done..done + n]);
                Some(Ok((n, mask, g)))
            });
            match r {
                Ok(Ok((n, mask, g))) => {
                    done += n;
                    t.changed();
                    kill_pgrp_mask(g, mask);
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

    fn poll(&self, _cur: &dyn Caller) -> u32 {
        let s = self.term().st.lock();
        let mut ev = 0;
        if !s.out.is_empty() {
            ev |= (POLLIN | POLLRDNORM) as u32;
        }
        if s.link.packet.pending().is_some() {
            ev |= (POLLPRI | POLLIN | POLLRDNORM) as u32;
        }
        if s.link.slave_closed {
            ev |= POLLHUP as u32;
        }
        if s.ld.receive_room() > 0 {
            ev |= (POLLOUT | POLLWRNORM) as u32;
        }
        ev
    }

    fn ioctl(&self, cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        let t = self.term();
        match cmd {
            tty::TIOCGPTN => {
                UserPtr::new(arg).write(&self.pair.index)?;
                Ok(0)
            }
            tty::TIOCSPTLCK => {
                let v: i32 = UserPtr::new(arg).read()?;
                t.st.lock().link.locked = v != 0;
                Ok(0)
            }
            tty::TIOCGPTLCK => {
                let v = i32::from(t.st.lock().link.locked);
                UserPtr::new(arg).write(&v)?;
                Ok(0)
            }
            tty::TIOCGPTPEER => self.open_peer(cur, arg as u32),
            tty::TIOCPKT => {
                let v: i32 = UserPtr::new(arg).read()?;
                t.st.lock().link.packet.set(v != 0);
                t.changed();
                Ok(0)
            }
            tty::TIOCGPKT => {
                let v = i32::from(t.st.lock().link.packet.on());
                UserPtr::new(arg).write(&v)?;
                Ok(0)
            }
            tty::TIOCSIG => {
                let s = arg as u32;
                if ![sig::SIGINT, sig::SIGQUIT, sig::SIGTSTP].contains(&s) {
                    return Err(Errno::EINVAL);
                }
                let g = t.st.lock().pgrp;
                kill_pgrp(g, s);
                Ok(0)
            }
            tty::TIOCGWINSZ => {
                let w = t.st.lock().winsize;
                UserPtr::new(arg).write(&w)?;
                Ok(0)
            }
            tty::TIOCSWINSZ => {
                let w: Winsize = UserPtr::new(arg).read()?;
                t.set_winsize(w);
                Ok(0)
            }
            // The slave's group and session, asked through the master: no controlling
            // terminal needed (Linux's tiocgpgrp and tiocgsid on the pty's other side).
            tty::TIOCGPGRP => {
                let g = t.st.lock().pgrp;
                UserPtr::new(arg).write(&g)?;
                Ok(0)
            }
            tty::TIOCGSID => {
                let s = t.st.lock().session;
                if s == 0 {
                    return Err(Errno::ENOTTY);
                }
                UserPtr::new(arg).write(&s)?;
                Ok(0)
            }
            tty::TIOCSPGRP => t.tiocspgrp(cur, arg),
            tty::TIOCSCTTY => t.tiocsctty(cur, arg),
            // The modes are the slave's: Linux's tty_mode_ioctl acts on the pty's other side.
            tty::TCGETS
            | tty::TCGETS2
            | tty::TCSETS
            | tty::TCSETSW
            | tty::TCSETSF
            | tty::TCSETS2
            | tty::TCSETSW2
            | tty::TCSETSF2 => t.ioctl(cur, cmd, arg),
            tty::FIONREAD => {
                let n = t.st.lock().out.len() as i32;
                UserPtr::new(arg).write(&n)?;
                Ok(0)
            }
            tty::TIOCOUTQ => {
                UserPtr::new(arg).write(&0i32)?;
                Ok(0)
            }
            tty::TCFLSH => {
                match arg as u32 {
                    tty::TCIFLUSH | tty::TCIOFLUSH => t.st.lock().out.clear(),
                    tty::TCOFLUSH => {}
                    _ => return Err(Errno::EINVAL),
                }
                t.changed();
                Ok(0)
            }
            tty::TCSBRK | tty::TCSBRKP | tty::TIOCSBRK | tty::TIOCCBRK => Ok(0),
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
