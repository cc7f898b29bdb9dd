//! The kernel log's user interface: syslog(2) actions, console log levels, and the text of a
//! record as syslog(2) and /dev/kmsg give it (Linux's kernel/printk/printk.c formats).

use crate::uapi::errno::{Errno, SysResult};

/// syslog(2) actions (linux/syslog.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyslogAction {
    Close,
    Open,
    Read,
    ReadAll,
    ReadClear,
    Clear,
    ConsoleOff,
    ConsoleOn,
    ConsoleLevel,
    SizeUnread,
    SizeBuffer,
}

impl SyslogAction {
    pub fn from_raw(n: i32) -> SysResult<SyslogAction> {
        use SyslogAction::*;
        Ok(match n {
            0 => Close,
            1 => Open,
            2 => Read,
            3 => ReadAll,
            4 => ReadClear,
            5 => Clear,
            6 => ConsoleOff,
            7 => ConsoleOn,
            8 => ConsoleLevel,
            9 => SizeUnread,
            10 => SizeBuffer,
            _ => return Err(Errno::EINVAL),
        })
    }
}

/// Record levels (the low three bits of a priority): KERN_ERR, KERN_WARNING, KERN_INFO,
/// KERN_DEBUG.
pub const LEVEL_ERR: u8 = 3;
pub const LEVEL_WARNING: u8 = 4;
pub const LEVEL_INFO: u8 = 6;
pub const LEVEL_DEBUG: u8 = 7;
/// The facility of records written to /dev/kmsg without one (LOG_USER), shifted into place.
pub const FACILITY_USER: u8 = 1 << 3;
/// A /dev/kmsg write's level when it names none (default_message_loglevel).
pub const DEFAULT_MESSAGE_LEVEL: u8 = LEVEL_WARNING;
/// The console log level's bounds (minimum_console_loglevel, and the highest accepted).
pub const MIN_CONSOLE_LEVEL: u8 = 1;
pub const MAX_CONSOLE_LEVEL: u8 = 8;
/// Linux's default console_loglevel (CONSOLE_LOGLEVEL_DEFAULT): everything but KERN_DEBUG.
pub const DEFAULT_CONSOLE_LEVEL: u8 = 7;
/// `quiet` on the command line (CONSOLE_LOGLEVEL_QUIET): errors and worse only.
pub const QUIET_CONSOLE_LEVEL: u8 = 4;

/// Whether a record of priority `prio` reaches a console at `console_level`.
pub fn reaches_console(prio: u8, console_level: u8) -> bool {
    prio & 7 < console_level
}

/// The priority and text of a write to /dev/kmsg: a leading `<N>` sets the level (and the
/// facility, when N names one other than the kernel's); without it, LOG_USER at the default
/// level. The trailing newline goes.
pub fn parse_kmsg_write(buf: &[u8]) -> (u8, &[u8]) {
    let mut prio = FACILITY_USER | DEFAULT_MESSAGE_LEVEL;
    let mut text = buf;
    if let Some(rest) = buf.strip_prefix(b"<") {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && rest.get(digits) == Some(&b'>') {
            let n = rest[..digits].iter().fold(0u32, |a, &d| {
                a.saturating_mul(10).saturating_add((d - b'0') as u32)
            });
            let facility = (n >> 3) & 0xff;
            let facility = if facility != 0 { facility } else { 1 };
            prio = ((facility << 3) | (n & 7)).min(255) as u8;
            text = &rest[digits + 1..];
        }
    }
    (prio, text.strip_suffix(b"\n").unwrap_or(text))
}

fn push_num(out: &mut impl Extend<u8>, mut n: u64, width: usize, pad: u8) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let len = digits.len() - i;
    out.extend(core::iter::repeat_n(pad, width.saturating_sub(len)));
    out.extend(digits[i..].iter().copied());
}

/// A record as syslog(2) gives it: `<prio>[sssss.uuuuuu] text\n`.
pub fn syslog_line(out: &mut impl Extend<u8>, prio: u8, ts_ns: u64, text: &[u8]) {
    out.extend([b'<']);
    push_num(out, prio as u64, 0, b' ');
    out.extend(*b">[");
    push_num(out, ts_ns / 1_000_000_000, 5, b' ');
    out.extend([b'.']);
    push_num(out, ts_ns % 1_000_000_000 / 1000, 6, b'0');
    out.extend(*b"] ");
    out.extend(text.iter().copied());
    out.extend([b'\n']);
}

/// A record as a read of /dev/kmsg gives it: `prio,seq,usec,-;text\n`, with bytes other than
/// printable ASCII (and the backslash) written `\xNN`.
pub fn kmsg_line(out: &mut impl Extend<u8>, prio: u8, seq: u64, ts_ns: u64, text: &[u8]) {
    push_num(out, prio as u64, 0, b' ');
    out.extend([b',']);
    push_num(out, seq, 0, b' ');
    out.extend([b',']);
    push_num(out, ts_ns / 1000, 0, b' ');
    out.extend(*b",-;");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in text {
        if !(b' '..127).contains(&b) || b == b'\\' {
            out.extend([b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        } else {
            out.extend([b]);
        }
    }
    out.extend([b'\n']);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn syslog_and_kmsg_lines() {
        let mut v = Vec::new();
        syslog_line(&mut v, 6, 12_345_678_901, b"hello");
        assert_eq!(v, b"<6>[   12.345678] hello\n");
        let mut v = Vec::new();
        kmsg_line(&mut v, 12, 7, 1_500_000, b"a\tb\\");
        assert_eq!(v, b"12,7,1500,-;a\\x09b\\x5c\n");
    }

    #[test]
    fn kmsg_writes_name_their_level() {
        assert_eq!(parse_kmsg_write(b"plain\n"), (12, &b"plain"[..]));
        assert_eq!(parse_kmsg_write(b"<7>dbg"), (15, &b"dbg"[..]));
        assert_eq!(parse_kmsg_write(b"<30>daemon"), (30, &b"daemon"[..]));
        assert_eq!(parse_kmsg_write(b"<x>odd"), (12, &b"<x>odd"[..]));
    }

    #[test]
    fn console_levels() {
        assert!(reaches_console(LEVEL_INFO, DEFAULT_CONSOLE_LEVEL));
        assert!(!reaches_console(LEVEL_DEBUG, DEFAULT_CONSOLE_LEVEL));
        assert!(!reaches_console(LEVEL_WARNING, QUIET_CONSOLE_LEVEL));
        assert!(reaches_console(LEVEL_ERR, QUIET_CONSOLE_LEVEL));
        assert_eq!(SyslogAction::from_raw(10), Ok(SyslogAction::SizeBuffer));
        assert_eq!(SyslogAction::from_raw(11), Err(Errno::EINVAL));
    }
}
