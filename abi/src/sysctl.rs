//! /proc/sys files that hold integers: what a read or a write at a file position does, as
//! Linux's `proc_sys_call_handler` over `do_proc_vec` (fs/proc/proc_sysctl.c, kernel/sysctl.c)
//! behaves with `kernel.sysctl_writes_strict` at its default (1). The value's own syntax is the
//! file's (`vlctl::parse_dointvec` for `proc_dointvec`).
//!
//! The value is formatted afresh by every read at position 0 and parsed by every write at
//! position 0; the file position only advances. A read anywhere else is end of file, even after
//! a first read that took only part of the text; a write anywhere else is ignored and reported
//! fully written. Opening with O_TRUNC, and ftruncate, succeed and change nothing.

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
}
