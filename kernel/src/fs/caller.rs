//! What the file layer asks about the caller: the process layer answers (`process::init`).
//!
//! Paths start at the caller's cwd or one of its descriptors, new nodes belong to its effective
//! user, its descriptor table is bounded by its RLIMIT_NOFILE, and a write to a pipe nobody
//! reads raises SIGPIPE in it. Those are POSIX process matters, above this layer; it reaches
//! them through these functions, registered once at boot, as Linux's VFS reaches `current`.

#![forbid(unsafe_code)]

use super::{FdTable, FsContext};
use alloc::sync::Arc;
use spin::{Mutex, Once};

pub struct Caller {
    /// Its effective user ID (the owner of the nodes it makes).
    pub euid: fn() -> u32,
    /// Its RLIMIT_NOFILE soft limit.
    pub nofile: fn() -> u64,
    /// Its cwd and root.
    pub fs: fn() -> Arc<Mutex<FsContext>>,
    /// Its descriptor table.
    pub files: fn() -> Arc<Mutex<FdTable>>,
    /// Sends it SIGPIPE (a write found no reader).
    pub broken_pipe: fn(),
}

static CALLER: Once<Caller> = Once::new();

/// Makes `c` the answer to the questions above. Boot time.
pub fn register(c: Caller) {
    CALLER.call_once(|| c);
}

fn get() -> &'static Caller {
    CALLER
        .get()
        .expect("the process layer registers fs::caller at boot")
}

/// The caller's effective user ID; 0 (root: the kernel's own nodes) before the process layer
/// has registered.
pub fn euid() -> u32 {
    CALLER.get().map_or(0, |c| (c.euid)())
}

pub fn nofile() -> u64 {
    (get().nofile)()
}

pub fn fs() -> Arc<Mutex<FsContext>> {
    (get().fs)()
}

pub fn files() -> Arc<Mutex<FdTable>> {
    (get().files)()
}

pub fn broken_pipe() {
    (get().broken_pipe)()
}
