//! /proc/sys files that hold integers: what a read or a write at a file position does, as
//! Linux's `proc_sys_call_handler` over `do_proc_vec` (fs/proc/proc_sysctl.c, kernel/sysctl.c)
//! behaves with `kernel.sysctl_writes_strict` at its default (1). The value's own syntax is the
//! file's (`vlctl::parse_dointvec` for `proc_dointvec`).
//!
//! The value is formatted afresh by every read at position 0 and parsed by every write at
//! position 0; the file position only advances. A read anywhere else is end of file, even after
//! a first read that took only part of the text; a write anywhere else is ignored and reported
//! fully written. Opening with O_TRUNC, and ftruncate, succeed and change nothing.

use crate::uapi::errno::Errno;

/// A read of up to `count` bytes at file position `pos`, the value formatted as `text` (e.g.
/// `"64\n"`): the bytes it returns.
pub fn int_read(text: &[u8], pos: u64, count: usize) -> &[u8] {
    if pos != 0 {
        return &[];
    }
    &text[..count.min(text.len())]
}

/// What a write of `len` bytes at file position `pos` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntWrite {
    /// Nothing is parsed and nothing changes; write() returns this count (all of `len`, or 0
    /// for an empty write) and the position advances by it.
    Done(usize),
    /// The bytes are parsed at position 0: write() returns what the parse consumed (or its
    /// error, the position then unchanged).
    Parse,
}

pub fn int_write(pos: u64, len: usize) -> IntWrite {
    if len == 0 {
        IntWrite::Done(0)
    } else if pos != 0 {
        IntWrite::Done(len)
    } else {
        IntWrite::Parse
    }
}

/// A write at position 0 of an `int` sysctl handled by `proc_dointvec_minmax`: one number as
/// `proc_dointvec` reads it (leading blanks, an optional `-`, C notation; see
/// `vlctl::parse_dointvec`), EINVAL when it is missing, malformed, or outside
/// `[min, max]`. A file holds one value, so a second number is not read: the write consumes
/// the first and the blanks after it, and write() returns that count (a following write at
/// the new position is then ignored, as Linux ignores writes past position 0).
pub fn dointvec_minmax(text: &[u8], min: i32, max: i32) -> Result<(i32, usize), Errno> {
    let (v, used) = crate::fp::vlctl::parse_dointvec(text)?;
    if v < min || v > max {
        return Err(Errno::EINVAL);
    }
    Ok((v, used))
}

/// A write at position 0 of an `unsigned int` sysctl (`proc_douintvec`): as
/// [`dointvec_minmax`], but a sign is refused and the value may reach `u32::MAX`.
pub fn douintvec(text: &[u8]) -> Result<(u32, usize), Errno> {
    crate::fp::vlctl::parse_one(text, |neg, v| {
        if neg {
            return Err(Errno::EINVAL);
        }
        u32::try_from(v).map_err(|_| Errno::EINVAL)
    })
}

/// A read of a string sysctl (`proc_dostring`: hostname, osrelease, ostype) at file position
/// `pos`: the value (at most `maxlen` bytes) from `pos` on, then a newline if the buffer has
/// room. Returns the bytes to copy out (into `out`, which must hold `count.min(value.len() -
/// pos + 1)` bytes) and their count; 0 past the end.
pub fn string_read(value: &[u8], maxlen: usize, pos: u64, count: usize, out: &mut [u8]) -> usize {
    let len = value.len().min(maxlen);
    let Ok(pos) = usize::try_from(pos) else {
        return 0;
    };
    if count == 0 || pos > len {
        return 0;
    }
    let n = (len - pos).min(count).min(out.len());
    out[..n].copy_from_slice(&value[pos..pos + n]);
    if n < count && n < out.len() {
        out[n] = b'\n';
        return n + 1;
    }
    n
}

/// A write of `input` at file position `pos` to a string sysctl of `maxlen` bytes (NUL
/// included) holding `value`: the new value's length in `value` (which must hold `maxlen`
/// bytes). Linux continues the string at `pos` if `pos` is within it (else the write is
/// ignored), copies up to a NUL or newline or until the buffer is full, and reports the whole
/// write done.
pub fn string_write(
    value: &mut [u8],
    cur_len: usize,
    maxlen: usize,
    pos: u64,
    input: &[u8],
) -> usize {
    let cap = maxlen.saturating_sub(1).min(value.len());
    let len = cur_len.min(cap);
    let Ok(pos) = usize::try_from(pos) else {
        return len;
    };
    if input.is_empty() || pos > len {
        return len;
    }
    let mut at = pos;
    for &c in input {
        if at >= cap || c == 0 || c == b'\n' {
            break;
        }
        value[at] = c;
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_formats_at_position_zero_only() {
        assert_eq!(int_read(b"64\n", 0, 100), b"64\n");
        assert_eq!(int_read(b"64\n", 0, 0), b"");
        // A short read takes the start of the text (no newline when it does not fit)...
        assert_eq!(int_read(b"64\n", 0, 2), b"64");
        assert_eq!(int_read(b"64\n", 0, 1), b"6");
        // ...and the next read, at position 1 or 2, is end of file: the rest is lost.
        assert_eq!(int_read(b"64\n", 1, 100), b"");
        assert_eq!(int_read(b"64\n", 2, 100), b"");
        assert_eq!(int_read(b"64\n", 3, 100), b"");
    }

    #[test]
    fn a_write_past_position_zero_is_ignored_but_counted() {
        assert_eq!(int_write(0, 3), IntWrite::Parse);
        assert_eq!(int_write(1, 3), IntWrite::Done(3));
        assert_eq!(int_write(3, 5000), IntWrite::Done(5000));
        assert_eq!(int_write(0, 0), IntWrite::Done(0));
        assert_eq!(int_write(7, 0), IntWrite::Done(0));
    }
    #[test]
    fn dointvec_minmax_parses_as_linux() {
        assert_eq!(dointvec_minmax(b"65530\n", 0, i32::MAX), Ok((65530, 6)));
        assert_eq!(dointvec_minmax(b"  \t42  \n", 0, 100), Ok((42, 8)));
        assert_eq!(dointvec_minmax(b"0x10", 0, 100), Ok((16, 4)));
        assert_eq!(dointvec_minmax(b"010", 0, 100), Ok((8, 3)));
        // A second value is left unread.
        assert_eq!(dointvec_minmax(b"1 2\n", 0, 100), Ok((1, 2)));
        assert_eq!(dointvec_minmax(b"-1", -5, 100), Ok((-1, 2)));
        for bad in [
            &b""[..],
            b"\n",
            b"+5",
            b"5x",
            b"x",
            b"-",
            b"99999999999999999999999",
        ] {
            assert_eq!(dointvec_minmax(bad, -5, 100), Err(Errno::EINVAL), "{bad:?}");
        }
        assert_eq!(dointvec_minmax(b"101", 0, 100), Err(Errno::EINVAL));
        assert_eq!(dointvec_minmax(b"-1", 0, 100), Err(Errno::EINVAL));
        assert_eq!(
            dointvec_minmax(b"2147483648", 0, i32::MAX),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn douintvec_refuses_signs() {
        assert_eq!(douintvec(b"4294967295\n"), Ok((u32::MAX, 11)));
        assert_eq!(douintvec(b" 4096 "), Ok((4096, 6)));
        assert_eq!(douintvec(b"-0"), Err(Errno::EINVAL));
        assert_eq!(douintvec(b"-1"), Err(Errno::EINVAL));
        assert_eq!(douintvec(b"4294967296"), Err(Errno::EINVAL));
        assert_eq!(douintvec(b""), Err(Errno::EINVAL));
    }

    #[test]
    fn string_sysctls() {
        let mut out = [0u8; 80];
        assert_eq!(string_read(b"svelt", 65, 0, 80, &mut out), 6);
        assert_eq!(&out[..6], b"svelt\n");
        assert_eq!(string_read(b"svelt", 65, 0, 3, &mut out), 3);
        assert_eq!(string_read(b"svelt", 65, 3, 80, &mut out), 3);
        assert_eq!(&out[..3], b"lt\n");
        assert_eq!(string_read(b"svelt", 65, 5, 80, &mut out), 1);
        assert_eq!(string_read(b"svelt", 65, 6, 80, &mut out), 0);

        let mut v = [0u8; 65];
        v[..5].copy_from_slice(b"svelt");
        assert_eq!(string_write(&mut v, 5, 65, 0, b"box\nrest"), 3);
        assert_eq!(&v[..3], b"box");
        // Continued at the position, within the string.
        assert_eq!(string_write(&mut v, 3, 65, 3, b"y"), 4);
        assert_eq!(&v[..4], b"boxy");
        // Past the end of the string: ignored.
        assert_eq!(string_write(&mut v, 4, 65, 9, b"zz"), 4);
        // Cut at 64 bytes.
        let long = [b'a'; 100];
        assert_eq!(string_write(&mut v, 4, 65, 0, &long), 64);
        // Empty: unchanged.
        assert_eq!(string_write(&mut v, 64, 65, 0, b""), 64);
    }
}
