//! The N_TTY line discipline as plain data: what a terminal does with each byte typed (input
//! modes, signal characters, canonical line editing, echo) and with each byte written (output
//! post-processing), as Linux's n_tty does, over a fixed 4096-byte ring so that input can never
//! make it allocate.
//!
//! The kernel owns the hardware and the processes: it hands each received byte to
//! [`Ldisc::receive`], writes the echo bytes it is given to the UART, and sends the signal it is
//! told to the foreground process group. Reads take whole lines (canonical mode) or what is
//! there (non-canonical, timed by [`ReadPlan`]).

use crate::uapi::signal::{SIGINT, SIGQUIT, SIGTSTP};
use crate::uapi::tty::*;

/// The input ring's size (Linux's N_TTY_BUF_SIZE); at most one less is ever held.
pub const N_TTY_BUF_SIZE: usize = 4096;
const MASK: usize = N_TTY_BUF_SIZE - 1;
/// The most bytes the ring holds.
const CAPACITY: usize = N_TTY_BUF_SIZE - 1;

/// `c_oflag` tab delay field and its "expand tabs to spaces" value.
pub const TABDLY: u32 = 0o14000;
pub const XTABS: u32 = 0o14000;

/// A control character in Linux's (Latin-1) ctype table: C0, DEL and C1.
fn iscntrl(c: u8) -> bool {
    c < 0x20 || c == 0x7f || (0x80..0xa0).contains(&c)
}

fn isalnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// The terminal's input state and the output column (shared by echoes and written data).
pub struct Ldisc {
    t: Termios,
    buf: [u8; N_TTY_BUF_SIZE],
    /// One bit per ring slot: the byte there ends a line (canonical mode).
    eol: [u64; N_TTY_BUF_SIZE / 64],
    /// Free-running positions (masked to index): read_tail <= canon_head <= read_head.
    read_tail: usize,
    canon_head: usize,
    read_head: usize,
    /// The last line end is a real byte pushed out by a switch to canonical mode, not an EOF
    /// marker to drop.
    pushing: bool,
    /// The next byte is taken literally (VLNEXT).
    lnext: bool,
    /// Inside a `\...` run of erased characters (ECHOPRT).
    erasing: bool,
    column: u32,
    /// The output column where the line being edited began (for erasing tabs).
    canon_column: u32,
    /// Output stopped by VSTOP (IXON) or TCOOFF.
    stopped: bool,
}

/// How a read waits, from VMIN and VTIME (non-canonical) or for a line (canonical).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    /// Return once this many bytes are read (0: after the first copy, as canonical reads do).
    pub minimum: usize,
    /// How long to wait for input when there is none, in tenths of a second; `None` waits
    /// for ever, `Some(0)` not at all.
    pub timeout_ds: Option<u32>,
    /// Once some bytes arrived, the wait for more becomes this (VTIME as an inter-byte timer).
    pub inter_byte_ds: Option<u32>,
}

impl Ldisc {
    pub const fn new(t: Termios) -> Ldisc {
        Ldisc {
            t,
            buf: [0; N_TTY_BUF_SIZE],
            eol: [0; N_TTY_BUF_SIZE / 64],
            read_tail: 0,
            canon_head: 0,
            read_head: 0,
            pushing: false,
            lnext: false,
            erasing: false,
            column: 0,
            canon_column: 0,
            stopped: false,
        }
    }

    pub fn termios(&self) -> &Termios {
        &self.t
    }

    fn l(&self, f: u32) -> bool {
        self.t.c_lflag & f != 0
    }
    fn i(&self, f: u32) -> bool {
        self.t.c_iflag & f != 0
    }
    fn o(&self, f: u32) -> bool {
        self.t.c_oflag & f != 0
    }
    fn cc(&self, i: usize) -> u8 {
        self.t.c_cc[i]
    }
    /// `c` is control character `i`; a slot holding 0 is disabled.
    fn is(&self, c: u8, i: usize) -> bool {
        c != 0 && c == self.cc(i)
    }

    /// Output is stopped (^S with IXON, or TCOOFF): writers wait.
    pub fn stopped(&self) -> bool {
        self.stopped
    }
    pub fn set_stopped(&mut self, on: bool) {
        self.stopped = on;
    }

    /// TCSETS*: new modes. Switching canonical mode on or off re-cuts the buffered input as
    /// Linux does: into canonical mode, what is pending becomes one line; out of it, everything
    /// pending becomes readable.
    pub fn set_termios(&mut self, t: Termios) {
        let old = self.t;
        self.t = t;
        if (old.c_lflag ^ t.c_lflag) & (ICANON | EXTPROC) != 0 {
            self.eol = [0; N_TTY_BUF_SIZE / 64];
            if !self.l(ICANON) || self.count() == 0 {
                self.canon_head = self.read_tail;
                self.pushing = false;
            } else {
                self.mark_eol(self.read_head.wrapping_sub(1));
                self.canon_head = self.read_head;
                self.pushing = true;
            }
            self.erasing = false;
            self.lnext = false;
        }
        if self.stopped && !self.i(IXON) && old.c_iflag & IXON != 0 {
            self.stopped = false;
        }
    }

    /// Drops all buffered input (TCIFLUSH, a signal character without NOFLSH).
    pub fn flush_input(&mut self) {
        self.read_tail = 0;
        self.canon_head = 0;
        self.read_head = 0;
        self.eol = [0; N_TTY_BUF_SIZE / 64];
        self.pushing = false;
        self.lnext = false;
        self.erasing = false;
    }

    fn count(&self) -> usize {
        self.read_head.wrapping_sub(self.read_tail)
    }
    fn at(&self, pos: usize) -> u8 {
        self.buf[pos & MASK]
    }
    fn is_eol(&self, pos: usize) -> bool {
        let p = pos & MASK;
        self.eol[p / 64] & (1 << (p % 64)) != 0
    }
    fn mark_eol(&mut self, pos: usize) {
        let p = pos & MASK;
        self.eol[p / 64] |= 1 << (p % 64);
    }
    fn clear_eol(&mut self, pos: usize) {
        let p = pos & MASK;
        self.eol[p / 64] &= !(1 << (p % 64));
    }
    fn canonical(&self) -> bool {
        self.l(ICANON)
    }
    fn is_continuation(&self, c: u8) -> bool {
        self.i(IUTF8) && c & 0xc0 == 0x80
    }

    /// Room for one more byte: in canonical mode the last slot is kept for a line end, so a
    /// full line can always be finished (and read).
    fn room_for(&self, line_end: bool) -> bool {
        let keep = usize::from(self.canonical() && !line_end);
        self.count() + keep < CAPACITY
    }

    fn put(&mut self, c: u8) {
        self.buf[self.read_head & MASK] = c;
        self.clear_eol(self.read_head);
        self.read_head = self.read_head.wrapping_add(1);
    }

    // ---- input ------------------------------------------------------------------------------

    /// One byte from the terminal. Echo output goes to `out`; the result is the signal to send
    /// to the foreground process group, if the byte was a signal character.
    pub fn receive(&mut self, c: u8, out: &mut impl FnMut(&[u8])) -> Option<u32> {
        let mut c = c;
        if self.i(ISTRIP) {
            c &= 0x7f;
        }
        if self.i(IUCLC) && self.l(IEXTEN) {
            c = c.to_ascii_lowercase();
        }
        if self.lnext {
            self.lnext = false;
            self.receive_normal(c, out);
            return None;
        }
        if self.is_special(c) {
            self.receive_special(c, out)
        } else {
            self.receive_normal(c, out);
            None
        }
    }

    /// Bytes that take the slow path (Linux's char_map).
    fn is_special(&self, c: u8) -> bool {
        if c == 0 {
            return false;
        }
        if c == b'\r' && (self.i(IGNCR) || self.i(ICRNL)) {
            return true;
        }
        if c == b'\n' && self.i(INLCR) {
            return true;
        }
        if self.canonical() {
            if c == b'\n' || [VERASE, VKILL, VEOF, VEOL].iter().any(|&i| self.is(c, i)) {
                return true;
            }
            if self.l(IEXTEN)
                && ([VWERASE, VLNEXT, VEOL2].iter().any(|&i| self.is(c, i))
                    || (self.l(ECHO) && self.is(c, VREPRINT)))
            {
                return true;
            }
        }
        if self.i(IXON) && (self.is(c, VSTART) || self.is(c, VSTOP)) {
            return true;
        }
        self.l(ISIG) && [VINTR, VQUIT, VSUSP].iter().any(|&i| self.is(c, i))
    }

    fn receive_special(&mut self, c: u8, out: &mut impl FnMut(&[u8])) -> Option<u32> {
        let mut c = c;
        if self.i(IXON) {
            let (start, stop) = (self.is(c, VSTART), self.is(c, VSTOP));
            if start || stop {
                self.stopped = if start && stop { !self.stopped } else { stop };
                return None;
            }
        }
        if self.l(ISIG) {
            let sig = if self.is(c, VINTR) {
                Some(SIGINT)
            } else if self.is(c, VQUIT) {
                Some(SIGQUIT)
            } else if self.is(c, VSUSP) {
                Some(SIGTSTP)
            } else {
                None
            };
            if let Some(sig) = sig {
                if !self.l(NOFLSH) {
                    self.flush_input();
                }
                if self.i(IXON) {
                    self.stopped = false;
                }
                if self.l(ECHO) {
                    self.echo_char(c, out);
                }
                return Some(sig);
            }
        }
        if self.stopped && self.i(IXON) && self.i(IXANY) {
            self.stopped = false;
        }
        if c == b'\r' {
            if self.i(IGNCR) {
                return None;
            }
            if self.i(ICRNL) {
                c = b'\n';
            }
        } else if c == b'\n' && self.i(INLCR) {
            c = b'\r';
        }
        if self.canonical() {
            if self.is(c, VERASE) || self.is(c, VKILL) || (self.is(c, VWERASE) && self.l(IEXTEN)) {
                self.eraser(c, out);
                return None;
            }
            if self.is(c, VLNEXT) && self.l(IEXTEN) {
                self.lnext = true;
                if self.l(ECHO) {
                    self.finish_erasing(out);
                    if self.l(ECHOCTL) {
                        self.output_char(b'^', out);
                        self.output_char(b'\x08', out);
                    }
                }
                return None;
            }
            if self.is(c, VREPRINT) && self.l(ECHO) && self.l(IEXTEN) {
                self.echo_char(c, out);
                self.output_char(b'\n', out);
                let mut p = self.canon_head;
                while p != self.read_head {
                    self.echo_char(self.at(p), out);
                    p = p.wrapping_add(1);
                }
                return None;
            }
            if c == b'\n' {
                if !self.room_for(true) {
                    return None;
                }
                if self.l(ECHO) || self.l(ECHONL) {
                    self.output_char(b'\n', out);
                }
                self.end_line(c);
                return None;
            }
            if self.is(c, VEOF) {
                if self.room_for(true) {
                    // Stored as a NUL marking the line's end; reads drop it.
                    self.end_line(0);
                }
                return None;
            }
            if self.is(c, VEOL) || (self.is(c, VEOL2) && self.l(IEXTEN)) {
                if !self.room_for(true) {
                    return None;
                }
                if self.l(ECHO) {
                    if self.canon_head == self.read_head {
                        self.canon_column = self.column;
                    }
                    self.echo_char(c, out);
                }
                self.end_line(c);
                return None;
            }
        }
        // A converted CR/LF, or a byte special only outside canonical mode.
        if !self.room_for(false) {
            return None;
        }
        if self.l(ECHO) {
            self.finish_erasing(out);
            if c == b'\n' {
                self.output_char(b'\n', out);
            } else {
                if self.canon_head == self.read_head {
                    self.canon_column = self.column;
                }
                self.echo_char(c, out);
            }
        }
        self.put(c);
        None
    }

    fn end_line(&mut self, c: u8) {
        self.mark_eol(self.read_head);
        self.buf[self.read_head & MASK] = c;
        self.read_head = self.read_head.wrapping_add(1);
        self.canon_head = self.read_head;
        self.pushing = false;
    }

    fn receive_normal(&mut self, c: u8, out: &mut impl FnMut(&[u8])) {
        if self.stopped && self.i(IXON) && self.i(IXANY) {
            self.stopped = false;
        }
        if !self.room_for(false) {
            return;
        }
        if self.l(ECHO) {
            self.finish_erasing(out);
            if self.canon_head == self.read_head {
                self.canon_column = self.column;
            }
            self.echo_char(c, out);
        }
        self.put(c);
    }

    /// VERASE, VWERASE and VKILL: remove characters of the line being edited, and show it.
    fn eraser(&mut self, c: u8, out: &mut impl FnMut(&[u8])) {
        #[derive(PartialEq)]
        enum Kind {
            Erase,
            Werase,
            Kill,
        }
        if self.read_head == self.canon_head {
            return;
        }
        let kind = if self.is(c, VERASE) {
            Kind::Erase
        } else if self.is(c, VWERASE) {
            Kind::Werase
        } else {
            if !self.l(ECHO) {
                self.read_head = self.canon_head;
                return;
            }
            if !self.l(ECHOK) || !self.l(ECHOKE) || !self.l(ECHOE) {
                self.read_head = self.canon_head;
                self.finish_erasing(out);
                self.echo_char(c, out);
                if self.l(ECHOK) {
                    self.output_char(b'\n', out);
                }
                return;
            }
            Kind::Kill
        };
        let mut seen_alnums = 0;
        while self.read_head != self.canon_head {
            // One character back (a whole UTF-8 sequence with IUTF8).
            let mut head = self.read_head;
            let mut ch;
            loop {
                head = head.wrapping_sub(1);
                ch = self.at(head);
                if !(self.is_continuation(ch) && head != self.canon_head) {
                    break;
                }
            }
            if kind == Kind::Werase {
                if isalnum(ch) || ch == b'_' {
                    seen_alnums += 1;
                } else if seen_alnums > 0 {
                    break;
                }
            }
            let cnt = self.read_head.wrapping_sub(head);
            self.read_head = head;
            if self.l(ECHO) {
                if self.l(ECHOPRT) {
                    if !self.erasing {
                        self.output_char(b'\\', out);
                        self.erasing = true;
                    }
                    self.echo_char(ch, out);
                    for k in 1..cnt {
                        self.echo_char(self.at(head.wrapping_add(k)), out);
                    }
                } else if kind == Kind::Erase && !self.l(ECHOE) {
                    self.echo_char(self.cc(VERASE), out);
                } else if ch == b'\t' {
                    self.erase_tab(out);
                } else {
                    if iscntrl(ch) && self.l(ECHOCTL) {
                        self.rubout(out);
                    }
                    if !iscntrl(ch) || self.l(ECHOCTL) {
                        self.rubout(out);
                    }
                }
            }
            if kind == Kind::Erase {
                break;
            }
        }
        if self.read_head == self.canon_head && self.l(ECHO) {
            self.finish_erasing(out);
        }
    }

    fn rubout(&mut self, out: &mut impl FnMut(&[u8])) {
        for b in *b"\x08 \x08" {
            self.output_char(b, out);
        }
    }

    /// Backs the cursor over a tab just erased: as many columns as it took, found by
    /// measuring the line up to it (from the previous tab, or the line's start column).
    fn erase_tab(&mut self, out: &mut impl FnMut(&[u8])) {
        let mut cols: u32 = 0;
        let mut after_tab = false;
        let mut p = self.read_head;
        while p != self.canon_head {
            p = p.wrapping_sub(1);
            let c = self.at(p);
            if c == b'\t' {
                after_tab = true;
                break;
            } else if iscntrl(c) {
                if self.l(ECHOCTL) {
                    cols += 2;
                }
            } else if !self.is_continuation(c) {
                cols += 1;
            }
        }
        if !after_tab {
            cols += self.canon_column;
        }
        let n = (8 - (cols & 7)).min(self.column);
        for _ in 0..n {
            out(b"\x08");
            self.column -= 1;
        }
    }

    fn finish_erasing(&mut self, out: &mut impl FnMut(&[u8])) {
        if self.erasing {
            self.output_char(b'/', out);
            self.erasing = false;
        }
    }

    /// Echoes a typed byte: control characters as `^X` with ECHOCTL (tab and newline as they
    /// are).
    fn echo_char(&mut self, c: u8, out: &mut impl FnMut(&[u8])) {
        if self.l(ECHOCTL) && iscntrl(c) && c != b'\t' && c != b'\n' {
            out(&[b'^', c ^ 0o100]);
            self.column += 2;
        } else {
            self.output_char(c, out);
        }
    }

    // ---- reading ----------------------------------------------------------------------------

    /// Input a read (or, with `poll`, a poll for POLLIN) would take now: a whole line in
    /// canonical mode; otherwise a byte, or VMIN bytes for a poll when VTIME is 0.
    pub fn available(&self, poll: bool) -> bool {
        if self.canonical() {
            return self.canon_head != self.read_tail;
        }
        let (min, time) = (self.cc(VMIN) as usize, self.cc(VTIME));
        let amt = if poll && time == 0 && min > 0 { min } else { 1 };
        self.count() >= amt
    }

    /// FIONREAD: the bytes a read could return (canonical: of complete lines, without EOF
    /// markers).
    pub fn inq(&self) -> usize {
        if !self.canonical() {
            return self.count();
        }
        let mut n = 0;
        let mut p = self.read_tail;
        while p != self.canon_head {
            if !(self.is_eol(p) && self.at(p) == 0 && !self.pushing) {
                n += 1;
            }
            p = p.wrapping_add(1);
        }
        n
    }

    /// How many more bytes a pty master may hand in before it waits for a reader (Linux's
    /// receive room): the ring's free slots, except that a canonical line filling the ring
    /// with no line end keeps taking bytes (they are dropped), so that a writer never waits on
    /// a reader that waits for that line's end.
    pub fn receive_room(&self) -> usize {
        let free = CAPACITY - self.count();
        if free == 0 && self.canonical() && self.canon_head == self.read_tail {
            1
        } else {
            free
        }
    }

    /// How a read waits, from the current modes.
    pub fn read_plan(&self) -> ReadPlan {
        if self.canonical() {
            return ReadPlan {
                minimum: 0,
                timeout_ds: None,
                inter_byte_ds: None,
            };
        }
        let (min, time) = (self.cc(VMIN) as usize, u32::from(self.cc(VTIME)));
        if min > 0 {
            ReadPlan {
                minimum: min,
                timeout_ds: None,
                inter_byte_ds: (time > 0).then_some(time),
            }
        } else {
            ReadPlan {
                minimum: 1,
                timeout_ds: Some(time),
                inter_byte_ds: None,
            }
        }
    }

    /// Takes input into `dst` (call when `available(false)`): in canonical mode at most one
    /// line, with an EOF marker consumed but not copied (so a lone ^D reads as 0 bytes); a
    /// line longer than `dst` is taken in pieces.
    pub fn read(&mut self, dst: &mut [u8]) -> usize {
        if !self.canonical() {
            let n = self.count().min(dst.len());
            self.copy_out(&mut dst[..n]);
            return n;
        }
        if self.canon_head == self.read_tail {
            return 0;
        }
        let mut end = self.read_tail;
        while !self.is_eol(end) && end.wrapping_add(1) != self.canon_head {
            end = end.wrapping_add(1);
        }
        let found = self.is_eol(end);
        let eof_marker = found && self.at(end) == 0 && !self.pushing;
        let line = end.wrapping_sub(self.read_tail) + usize::from(!eof_marker);
        let n = line.min(dst.len());
        self.copy_out(&mut dst[..n]);
        if found && self.read_tail.wrapping_add(usize::from(eof_marker)) == end.wrapping_add(1) {
            // The whole line went out: drop the marker and its bit.
            self.clear_eol(end);
            self.read_tail = end.wrapping_add(1);
            self.pushing = false;
        }
        n
    }

    fn copy_out(&mut self, dst: &mut [u8]) {
        for d in dst.iter_mut() {
            *d = self.at(self.read_tail);
            self.read_tail = self.read_tail.wrapping_add(1);
        }
    }

    // ---- output -----------------------------------------------------------------------------

    /// Written data, post-processed (OPOST) and passed to `out`.
    pub fn write(&mut self, data: &[u8], out: &mut impl FnMut(&[u8])) {
        if !self.o(OPOST) {
            out(data);
            return;
        }
        // Runs of bytes that need no translation go out whole.
        let mut start = 0;
        for (i, &c) in data.iter().enumerate() {
            let plain = !iscntrl(c) && !self.o(OLCUC);
            if plain {
                if !self.is_continuation(c) {
                    self.column += 1;
                }
                continue;
            }
            out(&data[start..i]);
            self.output_char(c, out);
            start = i + 1;
        }
        out(&data[start..]);
    }

    /// One byte out, with OPOST's translations and the column kept.
    fn output_char(&mut self, c: u8, out: &mut impl FnMut(&[u8])) {
        if !self.o(OPOST) {
            out(&[c]);
            return;
        }
        let mut c = c;
        match c {
            b'\n' => {
                if self.o(ONLRET) {
                    self.column = 0;
                }
                if self.o(ONLCR) {
                    self.column = 0;
                    self.canon_column = 0;
                    out(b"\r\n");
                    return;
                }
                self.canon_column = self.column;
            }
            b'\r' => {
                if self.o(ONOCR) && self.column == 0 {
                    return;
                }
                if self.o(OCRNL) {
                    c = b'\n';
                    if self.o(ONLRET) {
                        self.column = 0;
                        self.canon_column = 0;
                    }
                } else {
                    self.column = 0;
                    self.canon_column = 0;
                }
            }
            b'\t' => {
                let spaces = 8 - (self.column & 7);
                self.column += spaces;
                if self.t.c_oflag & TABDLY == XTABS {
                    out(&b"        "[..spaces as usize]);
                    return;
                }
            }
            0x08 => self.column = self.column.saturating_sub(1),
            _ => {
                if !iscntrl(c) {
                    if self.o(OLCUC) {
                        c = c.to_ascii_uppercase();
                    }
                    if !self.is_continuation(c) {
                        self.column += 1;
                    }
                }
            }
        }
        out(&[c]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn ld() -> Ldisc {
        Ldisc::new(Termios::console_default())
    }

    #[test]
    fn receive_room_never_blocks_an_unfinished_line() {
        let mut l = ld();
        assert_eq!(l.receive_room(), CAPACITY);
        typ(&mut l, &[b'a'; 5000]);
        // Full of one unfinished line: still room (what comes is dropped).
        assert_eq!(l.receive_room(), 1);
        let mut raw = Termios::console_default();
        raw.c_lflag &= !ICANON;
        let mut l = Ldisc::new(raw);
        typ(&mut l, &[b'a'; 5000]);
        assert_eq!(l.receive_room(), 0);
        let mut buf = [0u8; 100];
        assert_eq!(l.read(&mut buf), 100);
        assert_eq!(l.receive_room(), 100);
    }

    /// Types `s`; returns (echo, signals).
    fn typ(l: &mut Ldisc, s: &[u8]) -> (Vec<u8>, Vec<u32>) {
        let mut echo = Vec::new();
        let mut sigs = Vec::new();
        for &c in s {
            if let Some(sig) = l.receive(c, &mut |b: &[u8]| echo.extend_from_slice(b)) {
                sigs.push(sig);
            }
        }
        (echo, sigs)
    }

    fn read(l: &mut Ldisc, n: usize) -> Vec<u8> {
        let mut b = std::vec![0u8; n];
        let k = l.read(&mut b);
        b.truncate(k);
        b
    }

    fn raw(l: &mut Ldisc) {
        let mut t = *l.termios();
        t.c_lflag &= !(ICANON | ECHO | ISIG | IEXTEN);
        t.c_iflag &= !(ICRNL | IXON);
        l.set_termios(t);
    }

    #[test]
    fn canonical_line_with_echo_and_crnl() {
        let mut l = ld();
        let (echo, sigs) = typ(&mut l, b"hi");
        assert_eq!(echo, b"hi");
        assert!(sigs.is_empty());
        assert!(!l.available(false), "no line yet");
        assert_eq!(l.inq(), 0);
        let (echo, _) = typ(&mut l, b"\r");
        assert_eq!(
            echo, b"\r\n",
            "CR is turned into NL, echoed as CR NL (ONLCR)"
        );
        assert!(l.available(false));
        assert_eq!(l.inq(), 3);
        assert_eq!(read(&mut l, 100), b"hi\n");
        assert!(!l.available(false));
    }

    #[test]
    fn one_line_per_read_and_long_lines_in_pieces() {
        let mut l = ld();
        typ(&mut l, b"abc\ndef\n");
        assert_eq!(read(&mut l, 2), b"ab");
        assert_eq!(read(&mut l, 100), b"c\n");
        assert_eq!(read(&mut l, 100), b"def\n");
    }

    #[test]
    fn erase_kill_werase() {
        let mut l = ld();
        let (echo, _) = typ(&mut l, b"ab\x7f");
        assert_eq!(echo, b"ab\x08 \x08", "ECHOE rubs out");
        let (echo, _) = typ(&mut l, b"\x01\x7f");
        assert_eq!(echo, b"^A\x08 \x08\x08 \x08", "an ECHOCTL char takes two");
        typ(&mut l, b"c\n");
        assert_eq!(read(&mut l, 100), b"ac\n");
        let (echo, _) = typ(&mut l, b"xyz\x15");
        assert_eq!(
            echo, b"xyz\x08 \x08\x08 \x08\x08 \x08",
            "ECHOKE rubs out the line"
        );
        typ(&mut l, b"foo bar_1  \x17");
        typ(&mut l, b"\n");
        assert_eq!(
            read(&mut l, 100),
            b"foo \n",
            "^W takes the word and the blanks after it"
        );
        let (echo, _) = typ(&mut l, b"\x7f");
        assert!(echo.is_empty(), "nothing to erase at the line's start");
    }

    #[test]
    fn erase_without_echoe_or_echoke() {
        let mut l = ld();
        let mut t = *l.termios();
        t.c_lflag &= !(ECHOE | ECHOKE);
        l.set_termios(t);
        let (echo, _) = typ(&mut l, b"ab\x7f");
        assert_eq!(echo, b"ab^?");
        let (echo, _) = typ(&mut l, b"\x15");
        assert_eq!(echo, b"^U\r\n", "kill echoed, then a newline for ECHOK");
        typ(&mut l, b"z\n");
        assert_eq!(read(&mut l, 100), b"z\n");
    }

    #[test]
    fn erase_tab() {
        let mut l = ld();
        let (echo, _) = typ(&mut l, b"ab\t\x7f");
        assert_eq!(echo, b"ab\t\x08\x08\x08\x08\x08\x08");
        assert_eq!(l.column, 2);
    }

    #[test]
    fn eof() {
        let mut l = ld();
        let (echo, _) = typ(&mut l, b"\x04");
        assert!(echo.is_empty(), "^D is not echoed");
        assert!(l.available(false));
        assert_eq!(l.inq(), 0);
        assert_eq!(read(&mut l, 100), b"", "end of file");
        assert!(!l.available(false), "consumed");
        typ(&mut l, b"ab\x04");
        assert_eq!(l.inq(), 2);
        assert_eq!(read(&mut l, 2), b"ab", "^D ends a line without itself");
        assert!(!l.available(false));
    }

    #[test]
    fn signal_chars() {
        let mut l = ld();
        let (echo, sigs) = typ(&mut l, b"abc\x03");
        assert_eq!(sigs, [SIGINT]);
        assert_eq!(echo, b"abc^C");
        typ(&mut l, b"\n");
        assert_eq!(read(&mut l, 100), b"\n", "the partial line was flushed");
        assert_eq!(typ(&mut l, b"\x1c").1, [SIGQUIT]);
        assert_eq!(typ(&mut l, b"\x1a").1, [SIGTSTP]);
        let mut t = *l.termios();
        t.c_lflag |= NOFLSH;
        l.set_termios(t);
        typ(&mut l, b"x\x03\n");
        assert_eq!(read(&mut l, 100), b"x\n", "NOFLSH keeps input");
        t.c_lflag &= !ISIG;
        l.set_termios(t);
        let (echo, sigs) = typ(&mut l, b"\x03\n");
        assert!(sigs.is_empty());
        assert_eq!(echo, b"^C\r\n");
        assert_eq!(read(&mut l, 100), b"\x03\n");
    }

    #[test]
    fn no_echo_and_echonl() {
        let mut l = ld();
        let mut t = *l.termios();
        t.c_lflag &= !ECHO;
        l.set_termios(t);
        assert!(typ(&mut l, b"secret\r").0.is_empty());
        t.c_lflag |= ECHONL;
        l.set_termios(t);
        assert_eq!(typ(&mut l, b"pw\r").0, b"\r\n");
        assert_eq!(read(&mut l, 100), b"secret\n");
        assert_eq!(read(&mut l, 100), b"pw\n");
    }

    #[test]
    fn input_translations() {
        let mut l = ld();
        let mut t = *l.termios();
        t.c_iflag = (t.c_iflag & !ICRNL) | IGNCR;
        l.set_termios(t);
        typ(&mut l, b"a\r\n");
        assert_eq!(read(&mut l, 100), b"a\n");
        t.c_iflag = (t.c_iflag & !IGNCR) | INLCR;
        t.c_lflag &= !ICANON;
        l.set_termios(t);
        typ(&mut l, b"\n\r");
        assert_eq!(read(&mut l, 100), b"\r\r", "INLCR without ICRNL");
    }

    #[test]
    fn raw_mode_and_read_plan() {
        let mut l = ld();
        raw(&mut l);
        assert_eq!(
            l.read_plan(),
            ReadPlan {
                minimum: 1,
                timeout_ds: None,
                inter_byte_ds: None
            }
        );
        let (echo, sigs) = typ(&mut l, b"\x03\r\x7f");
        assert!(echo.is_empty() && sigs.is_empty());
        assert!(l.available(false));
        assert_eq!(read(&mut l, 2), b"\x03\r");
        assert_eq!(read(&mut l, 10), b"\x7f");
        let mut t = *l.termios();
        t.c_cc[VMIN] = 3;
        l.set_termios(t);
        typ(&mut l, b"ab");
        assert!(
            l.available(false) && !l.available(true),
            "poll waits for VMIN"
        );
        typ(&mut l, b"c");
        assert!(l.available(true));
        t.c_cc[VTIME] = 5;
        l.set_termios(t);
        assert_eq!(l.read_plan().inter_byte_ds, Some(5));
        assert!(l.available(true), "with VTIME a byte is enough for poll");
        t.c_cc[VMIN] = 0;
        l.set_termios(t);
        assert_eq!(
            l.read_plan(),
            ReadPlan {
                minimum: 1,
                timeout_ds: Some(5),
                inter_byte_ds: None
            }
        );
    }

    #[test]
    fn raw_echo_of_controls() {
        let mut l = ld();
        let mut t = *l.termios();
        t.c_lflag &= !ICANON;
        l.set_termios(t);
        assert_eq!(typ(&mut l, b"a\x01\r").0, b"a^A\r\n");
        assert_eq!(read(&mut l, 10), b"a\x01\n");
    }

    #[test]
    fn mode_switches_recut_input() {
        let mut l = ld();
        typ(&mut l, b"partial");
        raw(&mut l);
        assert_eq!(
            read(&mut l, 3),
            b"par",
            "leaving canonical mode makes it readable"
        );
        let mut t = *l.termios();
        t.c_lflag |= ICANON;
        l.set_termios(t);
        assert!(l.available(false), "the rest is one pushed line");
        assert_eq!(read(&mut l, 100), b"tial");
        assert!(!l.available(false));
    }

    #[test]
    fn lnext_and_reprint() {
        let mut l = ld();
        let (echo, _) = typ(&mut l, b"\x16\x03");
        assert_eq!(echo, b"^\x08^C");
        let (echo, _) = typ(&mut l, b"x\x12");
        assert_eq!(echo, b"x^R\r\n^Cx");
        typ(&mut l, b"\n");
        assert_eq!(read(&mut l, 100), b"\x03x\n");
    }

    #[test]
    fn flow_control() {
        let mut l = ld();
        assert!(typ(&mut l, b"\x13").0.is_empty());
        assert!(l.stopped());
        typ(&mut l, b"a");
        assert!(l.stopped(), "no IXANY");
        typ(&mut l, b"\x11");
        assert!(!l.stopped());
        typ(&mut l, b"\n");
        assert_eq!(read(&mut l, 100), b"a\n", "START/STOP are not input");
    }

    #[test]
    fn bounded_buffer() {
        let mut l = ld();
        for _ in 0..5000 {
            typ(&mut l, b"x");
        }
        assert_eq!(l.count(), CAPACITY - 1, "one slot kept for the line end");
        let (echo, _) = typ(&mut l, b"\n");
        assert_eq!(echo, b"\r\n");
        let mut b = std::vec![0u8; 5000];
        assert_eq!(l.read(&mut b), CAPACITY);
        assert_eq!(b[CAPACITY - 1], b'\n');
        raw(&mut l);
        for _ in 0..5000 {
            typ(&mut l, b"y");
        }
        assert_eq!(l.inq(), CAPACITY);
        // Wrapping around the ring.
        assert_eq!(l.read(&mut b[..4000]), 4000);
        typ(&mut l, b"0123456789");
        assert_eq!(l.read(&mut b), CAPACITY - 4000 + 10);
        assert_eq!(&b[CAPACITY - 4000..CAPACITY - 4000 + 10], b"0123456789");
    }

    #[test]
    fn output_processing() {
        let mut l = ld();
        let mut out = Vec::new();
        l.write(b"a\nb\tc", &mut |b: &[u8]| out.extend_from_slice(b));
        assert_eq!(out, b"a\r\nb\tc");
        assert_eq!(l.column, 9);
        let mut t = *l.termios();
        t.c_oflag |= XTABS | OCRNL;
        l.set_termios(t);
        out.clear();
        l.write(b"\tx\r", &mut |b: &[u8]| out.extend_from_slice(b));
        assert_eq!(out, b"       x\n", "tab to column 16, CR to NL");
        t.c_oflag &= !OPOST;
        l.set_termios(t);
        out.clear();
        l.write(b"\n\t", &mut |b: &[u8]| out.extend_from_slice(b));
        assert_eq!(out, b"\n\t");
    }
}
