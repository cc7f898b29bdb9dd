//! The console as a terminal, as Linux's ttyAMA0: the UART's receive interrupt feeds the line
//! discipline, output goes straight to the UART. Reachable as /dev/ttyAMA0, /dev/console and
//! (as a controlling terminal) /dev/tty.
//!
//! As on Linux, /dev/console is the "redirected" console: opening it never makes it a
//! controlling terminal, and reads and writes through it skip the background checks
//! (SIGTTIN/SIGTTOU); its ioctls act on the terminal like any other.

#![forbid(unsafe_code)]

use super::{Line, TermRef, Terminal, TtyFile};
use crate::fs::{Caller, FileOps};
use crate::process;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use svelt_abi::uapi::errno::SysResult;
use svelt_abi::uapi::tty::Termios;

pub(super) static CONSOLE: Terminal = Terminal::new(Line::Serial, Termios::console_default());

/// The console has signals deferred: a cheap test for every timer tick.
static DEFERRED: AtomicBool = AtomicBool::new(false);

/// Turns console input on, with the UART's interrupt `id`: its receive interrupt runs
/// `uart_interrupt`, and each timer tick retries the signals typed while the process table was
/// busy. Boot time, on the boot CPU.
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
            let mut t = CONSOLE.st.lock();
            let (mask, g) = Terminal::receive(&mut t, Line::Serial, &buf[..n]);
            if mask != 0 && g != 0 {
                if t.deferred_pgrp != g {
                    t.deferred = 0;
                }
                t.deferred |= mask;
                t.deferred_pgrp = g;
                DEFERRED.store(true, Ordering::Release);
            }
        }
        CONSOLE.changed();
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
        let t = CONSOLE.st.lock();
        (t.deferred, t.deferred_pgrp)
    };
    if mask == 0 {
        return;
    }
    let Some(all) = process::try_all_processes() else {
        return;
    };
    {
        let mut t = CONSOLE.st.lock();
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

pub use crate::fs::dev::TtyKind as Kind;

/// Opening a console node. /dev/tty is the caller's controlling terminal, whichever it is
/// (ENXIO without one); opening /dev/ttyAMA0 for reading without O_NOCTTY makes it the
/// controlling terminal of a session leader that has none, if no session has it.
pub fn open(cur: &dyn Caller, kind: Kind, flags: u32) -> SysResult<Arc<dyn FileOps>> {
    if kind == Kind::CurrentTty {
        return super::open_current(cur, flags);
    }
    if kind == Kind::Device {
        let p = process::caller_thread(cur).process();
        let has = CONSOLE.is_ctty_of(&p) || super::ioctl::has_other_ctty(&CONSOLE, &p);
        CONSOLE.st.lock().open_sets_ctty(&p, flags, has);
    }
    Ok(Arc::new(TtyFile {
        term: TermRef::Console,
        redirected: kind == Kind::Console,
    }))
}
