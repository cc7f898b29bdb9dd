//! Who a file operation runs for, as the file layer sees it.
//!
//! Paths start at the caller's cwd or one of its descriptors, new nodes belong to its effective
//! user, its descriptor table is bounded by its RLIMIT_NOFILE, and a write to a pipe nobody
//! reads raises SIGPIPE in it. Those are POSIX process matters, above this layer: the process
//! layer's token for the running thread (`process::CurrentTask`) answers them, and is handed
//! down to every operation that asks (`FileOps`, `Inode::open`, `Inode::readlink`, the path
//! walk) as a `&dyn Caller`, where Linux's VFS would read `current`. Layers above the process
//! layer (the terminal, /proc, sockets) find the thread again from `core()`.

#![forbid(unsafe_code)]

use super::{FdTable, FsContext};
use crate::task::CurrentTask;
use alloc::sync::Arc;
use spin::Mutex;

pub trait Caller {
    /// The task core's token for the running task (its locals, and the task a wait is for).
    fn core(&self) -> &CurrentTask;
    /// Its effective user ID (the owner of the nodes it makes).
    fn euid(&self) -> u32;
    /// Its file-system user and group IDs (permission checks).
    fn fs_ids(&self) -> (u32, u32);
    /// Its RLIMIT_NOFILE soft limit.
    fn nofile(&self) -> u64;
    /// Its cwd and root.
    fn fs(&self) -> Arc<Mutex<FsContext>>;
    /// Its descriptor table.
    fn files(&self) -> Arc<Mutex<FdTable>>;
    /// Sends it SIGPIPE (a write found no reader).
    fn broken_pipe(&self);
}
