//! Formatted output straight to a file descriptor, one `write` per call so that lines from
//! several processes sharing a pipe do not interleave mid-line.

use core::fmt::{self, Write};

use crate::sys;

struct Buf<'a> {
    fd: i32,
    buf: &'a mut [u8],
    len: usize,
}

impl Buf<'_> {
    fn flush(&mut self) {
        let _ = sys::write_all(self.fd, &self.buf[..self.len]);
        self.len = 0;
    }
}

impl Write for Buf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for chunk in s.as_bytes().chunks(self.buf.len()) {
            if self.len + chunk.len() > self.buf.len() {
                self.flush();
            }
            self.buf[self.len..self.len + chunk.len()].copy_from_slice(chunk);
            self.len += chunk.len();
        }
        Ok(())
    }
}

pub fn print_fd(fd: i32, args: fmt::Arguments) {
    let mut storage = [0u8; 1024];
    let mut b = Buf {
        fd,
        buf: &mut storage,
        len: 0,
    };
    let _ = b.write_fmt(args);
    b.flush();
}

/// Creates (or truncates) `path` holding `data`, created with mode `mode` (less the umask).
pub fn write_file(path: &str, data: &[u8], mode: u32) -> sys::SysResult<()> {
    let fd = sys::openat(
        sys::AT_FDCWD,
        path,
        sys::O_WRONLY | sys::O_CREAT | sys::O_TRUNC | sys::O_CLOEXEC,
        mode,
    )?;
    let r = sys::write_all(fd, data);
    let _ = sys::close(fd);
    r
}

/// Reads a whole file (small files: /proc, /sys, test data).
pub fn read_file(path: &str) -> sys::SysResult<alloc::vec::Vec<u8>> {
    let fd = sys::open(path, sys::O_RDONLY | sys::O_CLOEXEC)?;
    let mut out = alloc::vec::Vec::new();
    let mut buf = [0u8; 4096];
    let r = loop {
        match sys::read(fd, &mut buf) {
            Ok(0) => break Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(sys::EINTR) => {}
            Err(e) => break Err(e),
        }
    };
    let _ = sys::close(fd);
    r
}

/// Gives a process started as init a standard input, output and error: /dev/console on fds
/// 0-2, unless fd 1 is already open (the kernel may have opened the console already).
pub fn ensure_console() {
    if sys::fcntl(1, sys::F_GETFD, 0).is_ok() {
        return;
    }
    if let Ok(fd) = sys::open("/dev/console", sys::O_RDWR | sys::O_NOCTTY) {
        for target in 0..3 {
            if fd != target {
                let _ = sys::dup3(fd, target, 0);
            }
        }
        if fd > 2 {
            let _ = sys::close(fd);
        }
    }
}
