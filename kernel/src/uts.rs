//! The names uname reports: the release, and the one a program may change, the host name
//! (sethostname and /proc/sys/kernel/hostname write the same one).

#![forbid(unsafe_code)]

use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};

/// The release Svelt reports (uname, /proc/version, kernel.osrelease): the Linux whose ABI it
/// follows (7.3, the reference kernel the tests compare with), marked as Svelt
/// (user/src/cpuid.rs tells the kernels apart by the mark).
pub const RELEASE: &str = "7.3.0-svelt";

/// `__NEW_UTS_LEN`: the longest host name; its buffer holds one more byte (the NUL).
pub const NEW_UTS_LEN: usize = 64;

pub struct HostName {
    pub buf: [u8; NEW_UTS_LEN + 1],
    pub len: usize,
}

static HOSTNAME: Mutex<HostName> = Mutex::new(HostName {
    buf: *b"svelt\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
    len: 5,
});

/// The host name's bytes (a copy) and length.
pub fn hostname() -> ([u8; NEW_UTS_LEN + 1], usize) {
    let h = HOSTNAME.lock();
    (h.buf, h.len)
}

/// Replaces the host name; EINVAL beyond 64 bytes.
pub fn set_hostname(name: &[u8]) -> SysResult<()> {
    if name.len() > NEW_UTS_LEN {
        return Err(Errno::EINVAL);
    }
    let mut h = HOSTNAME.lock();
    h.buf = [0; NEW_UTS_LEN + 1];
    h.buf[..name.len()].copy_from_slice(name);
    h.len = name.len();
    Ok(())
}

/// Runs `f` on the host name under its lock (a /proc/sys write that continues the string).
pub fn with_hostname<R>(f: impl FnOnce(&mut HostName) -> R) -> R {
    f(&mut HOSTNAME.lock())
}
