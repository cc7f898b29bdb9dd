//! Terminal uapi: the kernel `struct termios` TCGETS fills on arm64, `struct winsize`, and the
//! ioctl request numbers (asm-generic `ioctls.h`, which arm64 uses).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// ---- _IOC request encoding (asm-generic ioctl.h): nr 8 bits, type 8, size 14, dir 2 ----

pub const IOC_NONE: u32 = 0;
pub const IOC_WRITE: u32 = 1;
pub const IOC_READ: u32 = 2;

pub const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u32 {
    (dir << 30) | ((size as u32 & 0x3fff) << 16) | ((ty as u32) << 8) | nr as u32
}
pub const fn io(ty: u8, nr: u8) -> u32 {
    ioc(IOC_NONE, ty, nr, 0)
}
pub const fn ior(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_READ, ty, nr, size)
}
pub const fn iow(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_WRITE, ty, nr, size)
}
pub const fn iowr(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_READ | IOC_WRITE, ty, nr, size)
}

// ---- terminal ioctls (old-style numbers, no _IOC encoding) ----

pub const TCGETS: u32 = 0x5401;
pub const TCSETS: u32 = 0x5402;
pub const TCSETSW: u32 = 0x5403;
pub const TCSETSF: u32 = 0x5404;
pub const TCGETA: u32 = 0x5405;
pub const TCSETA: u32 = 0x5406;
pub const TCSETAW: u32 = 0x5407;
pub const TCSETAF: u32 = 0x5408;
pub const TCSBRK: u32 = 0x5409;
pub const TCXONC: u32 = 0x540A;
pub const TCFLSH: u32 = 0x540B;
pub const TIOCEXCL: u32 = 0x540C;
pub const TIOCNXCL: u32 = 0x540D;
pub const TIOCSCTTY: u32 = 0x540E;
pub const TIOCGPGRP: u32 = 0x540F;
pub const TIOCSPGRP: u32 = 0x5410;
pub const TIOCOUTQ: u32 = 0x5411;
pub const TIOCSTI: u32 = 0x5412;
pub const TIOCGWINSZ: u32 = 0x5413;
pub const TIOCSWINSZ: u32 = 0x5414;
pub const TIOCMGET: u32 = 0x5415;
pub const TIOCMBIS: u32 = 0x5416;
pub const TIOCMBIC: u32 = 0x5417;
pub const TIOCMSET: u32 = 0x5418;
pub const TIOCGSOFTCAR: u32 = 0x5419;
pub const TIOCSSOFTCAR: u32 = 0x541A;
pub const FIONREAD: u32 = 0x541B;
pub const TIOCINQ: u32 = FIONREAD;
pub const TIOCLINUX: u32 = 0x541C;
pub const TIOCCONS: u32 = 0x541D;
pub const TIOCGSERIAL: u32 = 0x541E;
pub const TIOCSSERIAL: u32 = 0x541F;
pub const TIOCPKT: u32 = 0x5420;
pub const FIONBIO: u32 = 0x5421;
pub const TIOCNOTTY: u32 = 0x5422;
pub const TIOCSETD: u32 = 0x5423;
pub const TIOCGETD: u32 = 0x5424;
pub const TCSBRKP: u32 = 0x5425;
pub const TIOCSBRK: u32 = 0x5427;
pub const TIOCCBRK: u32 = 0x5428;
pub const TIOCGSID: u32 = 0x5429;
/// `_IOR('T', 0x2A, struct termios2)` (44 bytes).
pub const TCGETS2: u32 = ior(b'T', 0x2A, 44);
pub const TCSETS2: u32 = iow(b'T', 0x2B, 44);
pub const TCSETSW2: u32 = iow(b'T', 0x2C, 44);
pub const TCSETSF2: u32 = iow(b'T', 0x2D, 44);
pub const TIOCGPTN: u32 = ior(b'T', 0x30, 4);
pub const TIOCSPTLCK: u32 = iow(b'T', 0x31, 4);
pub const TIOCSIG: u32 = iow(b'T', 0x36, 4);
pub const TIOCGPKT: u32 = ior(b'T', 0x38, 4);
pub const TIOCGPTLCK: u32 = ior(b'T', 0x39, 4);
pub const TIOCGPTPEER: u32 = io(b'T', 0x41);
pub const FIONCLEX: u32 = 0x5450;
pub const FIOCLEX: u32 = 0x5451;
pub const FIOASYNC: u32 = 0x5452;
pub const TIOCSERGETLSR: u32 = 0x5459;
pub const FIOQSIZE: u32 = 0x5460;

// ---- c_iflag ----
pub const IGNBRK: u32 = 0o1;
pub const BRKINT: u32 = 0o2;
pub const IGNPAR: u32 = 0o4;
pub const PARMRK: u32 = 0o10;
pub const INPCK: u32 = 0o20;
pub const ISTRIP: u32 = 0o40;
pub const INLCR: u32 = 0o100;
pub const IGNCR: u32 = 0o200;
pub const ICRNL: u32 = 0o400;
pub const IUCLC: u32 = 0o1000;
pub const IXON: u32 = 0o2000;
pub const IXANY: u32 = 0o4000;
pub const IXOFF: u32 = 0o10000;
pub const IMAXBEL: u32 = 0o20000;
pub const IUTF8: u32 = 0o40000;

// ---- c_oflag ----
pub const OPOST: u32 = 0o1;
pub const OLCUC: u32 = 0o2;
pub const ONLCR: u32 = 0o4;
pub const OCRNL: u32 = 0o10;
pub const ONOCR: u32 = 0o20;
pub const ONLRET: u32 = 0o40;
pub const OFILL: u32 = 0o100;
pub const OFDEL: u32 = 0o200;

// ---- c_cflag ----
pub const CBAUD: u32 = 0o10017;
pub const B0: u32 = 0o0;
pub const B9600: u32 = 0o15;
pub const B19200: u32 = 0o16;
pub const B38400: u32 = 0o17;
pub const CSIZE: u32 = 0o60;
pub const CS5: u32 = 0o0;
pub const CS6: u32 = 0o20;
pub const CS7: u32 = 0o40;
pub const CS8: u32 = 0o60;
pub const CSTOPB: u32 = 0o100;
pub const CREAD: u32 = 0o200;
pub const PARENB: u32 = 0o400;
pub const PARODD: u32 = 0o1000;
pub const HUPCL: u32 = 0o2000;
pub const CLOCAL: u32 = 0o4000;
pub const CBAUDEX: u32 = 0o10000;
pub const BOTHER: u32 = 0o10000;
pub const B57600: u32 = 0o10001;
pub const B115200: u32 = 0o10002;
pub const B230400: u32 = 0o10003;
pub const CIBAUD: u32 = 0o2003600000;
pub const CMSPAR: u32 = 0o10000000000;
pub const CRTSCTS: u32 = 0o20000000000;

// ---- c_lflag ----
pub const ISIG: u32 = 0o1;
pub const ICANON: u32 = 0o2;
pub const XCASE: u32 = 0o4;
pub const ECHO: u32 = 0o10;
pub const ECHOE: u32 = 0o20;
pub const ECHOK: u32 = 0o40;
pub const ECHONL: u32 = 0o100;
pub const NOFLSH: u32 = 0o200;
pub const TOSTOP: u32 = 0o400;
pub const ECHOCTL: u32 = 0o1000;
pub const ECHOPRT: u32 = 0o2000;
pub const ECHOKE: u32 = 0o4000;
pub const FLUSHO: u32 = 0o10000;
pub const PENDIN: u32 = 0o40000;
pub const IEXTEN: u32 = 0o100000;
pub const EXTPROC: u32 = 0o200000;

// ---- c_cc indices ----
pub const VINTR: usize = 0;
pub const VQUIT: usize = 1;
pub const VERASE: usize = 2;
pub const VKILL: usize = 3;
pub const VEOF: usize = 4;
pub const VTIME: usize = 5;
pub const VMIN: usize = 6;
pub const VSWTC: usize = 7;
pub const VSTART: usize = 8;
pub const VSTOP: usize = 9;
pub const VSUSP: usize = 10;
pub const VEOL: usize = 11;
pub const VREPRINT: usize = 12;
pub const VDISCARD: usize = 13;
pub const VWERASE: usize = 14;
pub const VLNEXT: usize = 15;
pub const VEOL2: usize = 16;
/// Size of `c_cc` in the kernel `struct termios` (glibc's user struct has 32).
pub const NCCS: usize = 19;

/// TCFLSH / TCXONC arguments.
pub const TCIFLUSH: u32 = 0;
pub const TCOFLUSH: u32 = 1;
pub const TCIOFLUSH: u32 = 2;
pub const TCOOFF: u32 = 0;
pub const TCOON: u32 = 1;
pub const TCIOFF: u32 = 2;
pub const TCION: u32 = 3;

/// The line discipline in `c_line` (N_TTY).
pub const N_TTY: u8 = 0;

/// The kernel `struct termios` (asm-generic termbits.h) that TCGETS/TCSETS* copy: 36 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Termios {
    pub c_iflag: u32,
    pub c_oflag: u32,
    pub c_cflag: u32,
    pub c_lflag: u32,
    pub c_line: u8,
    pub c_cc: [u8; NCCS],
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<Termios>() == 36);
    assert!(offset_of!(Termios, c_line) == 16);
    assert!(offset_of!(Termios, c_cc) == 17);
};

/// Linux's default control characters (`INIT_C_CC`): ^C ^\ DEL ^U ^D, TIME 0, MIN 1, 0,
/// ^Q ^S ^Z, EOL 0, ^R ^O ^W ^V, EOL2 0; the two spare slots 0.
pub const INIT_C_CC: [u8; NCCS] = [
    0x03, 0x1c, 0x7f, 0x15, 0x04, 0, 1, 0, 0x11, 0x13, 0x1a, 0, 0x12, 0x0f, 0x17, 0x16, 0, 0, 0,
];

impl Termios {
    pub const SIZE: usize = 36;

    /// What TCGETS reports for Svelt's console before anyone changes it.
    ///
    /// Linux's `tty_std_termios` flags (iflag ICRNL|IXON, oflag OPOST|ONLCR, lflag
    /// ISIG|ICANON|ECHO|ECHOE|ECHOK|ECHOCTL|ECHOKE|IEXTEN) with the cflag a serial console
    /// ends up with once the console driver has set its line: B115200|CS8|CREAD|HUPCL|CLOCAL
    /// (CLOCAL because a console ignores modem lines; 115200 because that is what QEMU's PL011
    /// and most boards use for `console=ttyAMA0,115200`).
    pub const fn console_default() -> Termios {
        Termios {
            c_iflag: ICRNL | IXON,
            c_oflag: OPOST | ONLCR,
            c_cflag: B115200 | CS8 | CREAD | HUPCL | CLOCAL,
            c_lflag: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
            c_line: N_TTY,
            c_cc: INIT_C_CC,
        }
    }
}

impl Termios {
    /// A pty slave's modes when its pair is made (Linux's `tty_std_termios` with the pts
    /// driver's cflag B38400|CS8|CREAD).
    pub const fn pty_slave_default() -> Termios {
        Termios {
            c_cflag: B38400 | CS8 | CREAD,
            ..Termios::console_default()
        }
    }
}

/// A pty's line speed (B38400), as TCGETS2 reports it.
pub const PTY_BAUD: u32 = 38_400;

/// Where c_cflag's input-speed code sits (CBAUD is the output one).
pub const IBSHIFT: u32 = 16;

/// The rate a Bnnn code names (Linux's baud_table), or `other` for BOTHER.
fn code_rate(code: u32, other: u32) -> u32 {
    const LOW: [u32; 16] = [
        0, 50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800, 9600, 19200, 38400,
    ];
    const HIGH: [u32; 15] = [
        57600, 115200, 230400, 460800, 500000, 576000, 921600, 1000000, 1152000, 1500000, 2000000,
        2500000, 3000000, 3500000, 4000000,
    ];
    match code {
        BOTHER => other,
        c if c & BOTHER == 0 => LOW[(c & 0o17) as usize],
        c => HIGH[((c & 0o17) - 1) as usize],
    }
}

/// The (input, output) speeds a TCSETS* gives a terminal whose driver keeps them as set
/// (Linux's set_termios: tty_termios_input_baud_rate and tty_termios_baud_rate): the output
/// speed from c_cflag's code (c_ospeed for BOTHER), the input one from its own code, the output
/// speed when that is B0.
pub fn termios_speeds(c_cflag: u32, c_ispeed: u32, c_ospeed: u32) -> (u32, u32) {
    let out = code_rate(c_cflag & CBAUD, c_ospeed);
    let in_code = (c_cflag >> IBSHIFT) & CBAUD;
    let input = if in_code == 0 {
        out
    } else {
        code_rate(in_code, c_ispeed)
    };
    (input, out)
}

/// Packet mode's status bits (TIOCPKT): what a pty master in packet mode reads, one byte
/// alone, before any more data; data comes after a `TIOCPKT_DATA` byte.
pub const TIOCPKT_DATA: u8 = 0;
pub const TIOCPKT_FLUSHREAD: u8 = 1;
pub const TIOCPKT_FLUSHWRITE: u8 = 2;
pub const TIOCPKT_STOP: u8 = 4;
pub const TIOCPKT_START: u8 = 8;
pub const TIOCPKT_NOSTOP: u8 = 16;
pub const TIOCPKT_DOSTOP: u8 = 32;
pub const TIOCPKT_IOCTL: u8 = 64;

/// A pty master's packet mode and the status its slave's events left for it (Linux's
/// `ctrl.packet` on the master and `ctrl.pktstatus` on the slave, pty.c and n_tty.c). Events
/// are recorded only while the mode is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    on: bool,
    status: u8,
}

/// The slave's modes ask for ^S/^Q flow control as a remote end can do it itself: IXON with
/// the standard characters (what DOSTOP and NOSTOP report).
fn standard_flow(t: &Termios) -> bool {
    t.c_iflag & IXON != 0 && t.c_cc[VSTOP] == 0x13 && t.c_cc[VSTART] == 0x11
}

impl Packet {
    pub const fn new() -> Packet {
        Packet {
            on: false,
            status: 0,
        }
    }

    /// TIOCGPKT.
    pub fn on(&self) -> bool {
        self.on
    }

    /// TIOCPKT: turning the mode on (from off) forgets any old status.
    pub fn set(&mut self, on: bool) {
        if on && !self.on {
            self.status = 0;
        }
        self.on = on;
    }

    /// The status a read would return now.
    pub fn pending(&self) -> Option<u8> {
        (self.on && self.status != 0).then_some(self.status)
    }

    /// The status, read: gone once taken.
    pub fn take(&mut self) -> Option<u8> {
        let s = self.pending()?;
        self.status = 0;
        Some(s)
    }

    fn note(&mut self, bits: u8) {
        if self.on {
            self.status |= bits;
        }
    }

    /// The slave's input was flushed (`read`: TCIFLUSH, TCSETSF, a signal character) or its
    /// output (`write`: TCOFLUSH, a signal character).
    pub fn flushed(&mut self, read: bool, write: bool) {
        let r = if read { TIOCPKT_FLUSHREAD } else { 0 };
        let w = if write { TIOCPKT_FLUSHWRITE } else { 0 };
        self.note(r | w);
    }

    /// A signal character reached the slave with modes `t`: unless NOFLSH, both ways flushed.
    pub fn signal_char(&mut self, t: &Termios) {
        if t.c_lflag & NOFLSH == 0 {
            self.flushed(true, true);
        }
    }

    /// The slave's output stopped or started again (only a change is an event); the newer
    /// replaces the other.
    pub fn flow(&mut self, stopped: bool) {
        if !self.on {
            return;
        }
        let (set, clear) = if stopped {
            (TIOCPKT_STOP, TIOCPKT_START)
        } else {
            (TIOCPKT_START, TIOCPKT_STOP)
        };
        self.status = (self.status & !clear) | set;
    }

    /// The slave's modes changed from `old` to `new`: DOSTOP or NOSTOP when standard flow
    /// control was turned on or off (the newer replaces the other), IOCTL whenever EXTPROC is
    /// in either.
    pub fn termios_changed(&mut self, old: &Termios, new: &Termios) {
        if !self.on {
            return;
        }
        let (was, now) = (standard_flow(old), standard_flow(new));
        if was != now {
            self.status &= !(TIOCPKT_DOSTOP | TIOCPKT_NOSTOP);
            self.status |= if now { TIOCPKT_DOSTOP } else { TIOCPKT_NOSTOP };
        }
        if (old.c_lflag | new.c_lflag) & EXTPROC != 0 {
            self.status |= TIOCPKT_IOCTL;
        }
    }
}

/// The kernel `struct termios2` (TCGETS2/TCSETS2*): `struct termios` and the two speeds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Termios2 {
    pub termios: Termios,
    pub c_ispeed: u32,
    pub c_ospeed: u32,
}

const _: () = {
    assert!(core::mem::size_of::<Termios2>() == 44);
    assert!(core::mem::offset_of!(Termios2, c_ispeed) == 36);
};

/// `struct winsize` (8 bytes). A serial console has no size: Linux reports all zeros until
/// someone sets it with TIOCSWINSZ, and Svelt does the same (`Winsize::default()`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Winsize {
    pub ws_row: u16,
    pub ws_col: u16,
    pub ws_xpixel: u16,
    pub ws_ypixel: u16,
}

const _: () = assert!(core::mem::size_of::<Winsize>() == 8);

impl Winsize {
    pub const SIZE: usize = 8;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::bytes::get_u32;

    #[test]
    fn ioctl_numbers() {
        assert_eq!(TCGETS, 0x5401);
        assert_eq!(TIOCGWINSZ, 0x5413);
        assert_eq!(FIONBIO, 0x5421);
        assert_eq!(TCGETS2, 0x802c_542a);
        assert_eq!(TCSETS2, 0x402c_542b);
        assert_eq!(TIOCGPTN, 0x8004_5430);
        assert_eq!(TIOCGPTPEER, 0x5441);
        assert_eq!(TIOCGPTLCK, 0x8004_5439);
        assert_eq!(TIOCSIG, 0x4004_5436);
        assert_eq!(TIOCSPTLCK, 0x4004_5431);
        assert_eq!(TIOCPKT, 0x5420);
        assert_eq!(TIOCGPKT, 0x8004_5438);
    }

    #[test]
    fn packet_status() {
        let mut p = Packet::new();
        p.flushed(true, false);
        assert_eq!(p.pending(), None, "nothing recorded while off");
        p.set(true);
        assert!(p.on());
        p.flushed(true, false);
        p.flushed(false, true);
        p.set(true);
        assert_eq!(p.pending(), Some(3), "on again while on keeps it");
        assert_eq!(p.take(), Some(3));
        assert_eq!(p.take(), None, "read once");
        p.flow(true);
        p.flow(false);
        assert_eq!(p.take(), Some(TIOCPKT_START), "START replaces STOP");
        p.signal_char(&Termios::pty_slave_default());
        assert_eq!(p.pending(), Some(3));
        p.set(false);
        assert_eq!(p.pending(), None, "off: nothing to read");
        p.set(true);
        assert_eq!(p.pending(), None, "turned on: the old status is gone");
        let mut t = Termios::pty_slave_default();
        t.c_lflag |= NOFLSH;
        p.signal_char(&t);
        assert_eq!(p.pending(), None, "NOFLSH");
    }

    #[test]
    fn packet_termios() {
        let std = Termios::pty_slave_default();
        let mut p = Packet::new();
        p.set(true);
        p.termios_changed(&std, &std);
        assert_eq!(p.pending(), None, "no change");
        let mut off = std;
        off.c_iflag &= !IXON;
        p.termios_changed(&std, &off);
        assert_eq!(p.take(), Some(TIOCPKT_NOSTOP));
        p.termios_changed(&std, &off);
        p.termios_changed(&off, &std);
        assert_eq!(p.take(), Some(TIOCPKT_DOSTOP), "DOSTOP replaces NOSTOP");
        let mut other = std;
        other.c_cc[VSTOP] = 0x10;
        p.termios_changed(&std, &other);
        assert_eq!(p.take(), Some(TIOCPKT_NOSTOP), "not ^S");
        let mut ext = std;
        ext.c_lflag |= EXTPROC;
        p.termios_changed(&std, &ext);
        assert_eq!(p.take(), Some(TIOCPKT_IOCTL));
        p.termios_changed(&ext, &std);
        assert_eq!(p.take(), Some(TIOCPKT_IOCTL), "EXTPROC in the old modes");
    }

    #[test]
    fn console_termios_image() {
        let t = Termios::console_default();
        let b = t.as_bytes();
        assert_eq!(get_u32(b, 0), 0o2400); // ICRNL|IXON
        assert_eq!(get_u32(b, 4), 0o5); // OPOST|ONLCR
        assert_eq!(get_u32(b, 8), 0o16262); // B115200|CS8|CREAD|HUPCL|CLOCAL
        assert_eq!(get_u32(b, 12), 0o105073);
        assert_eq!(b[16], 0);
        assert_eq!(b[17 + VINTR], 3);
        assert_eq!(b[17 + VERASE], 0x7f);
        assert_eq!(b[17 + VMIN], 1);
        assert_eq!(Termios::read_from_bytes(b).ok(), Some(t));
        let w = Winsize {
            ws_row: 24,
            ws_col: 80,
            ..Winsize::default()
        };
        assert_eq!(Winsize::read_from_bytes(w.as_bytes()).ok(), Some(w));
        assert_eq!(w.as_bytes(), [24, 0, 80, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn speeds_from_cflag() {
        assert_eq!(termios_speeds(CS8 | CREAD | B38400, 1, 2), (38400, 38400));
        assert_eq!(termios_speeds(CS8 | B9600, 0, 0), (9600, 9600));
        // BOTHER takes c_ospeed; no input code means the output speed.
        assert_eq!(termios_speeds(CS8 | BOTHER, 1234, 5678), (5678, 5678));
        assert_eq!(
            termios_speeds(BOTHER | (BOTHER << IBSHIFT), 1234, 5678),
            (1234, 5678)
        );
        assert_eq!(
            termios_speeds(0o10002 | (B9600 << IBSHIFT), 0, 0),
            (9600, 115200)
        );
        assert_eq!(termios_speeds(0o10017, 0, 0), (4000000, 4000000));
    }
}
