//! Per-process file descriptor tables (Linux's fs/file.c): descriptors to open files, with
//! their close-on-exec flags, bounded by RLIMIT_NOFILE.

#![forbid(unsafe_code)]

use super::{Caller, File};
use alloc::sync::Arc;
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};

/// fs.nr_open: no descriptor table grows beyond this (RLIMIT_NOFILE's ceiling).
pub const NR_OPEN: usize = 1 << 20;

/// RLIMIT_NOFILE of the caller's process: descriptors it may have are below this.
pub fn nofile_limit(cur: &dyn Caller) -> usize {
    let l = cur.nofile();
    (l.min(NR_OPEN as u64)) as usize
}

#[derive(Clone)]
pub struct FdEntry {
    pub file: Arc<File>,
    pub cloexec: bool,
}

#[derive(Clone, Default)]
pub struct FdTable {
    fds: Vec<Option<FdEntry>>,
}

impl FdTable {
    pub fn new() -> FdTable {
        FdTable { fds: Vec::new() }
    }

    pub fn get(&self, fd: i32) -> SysResult<Arc<File>> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.fds.get(i))
            .and_then(|e| e.as_ref())
            .map(|e| e.file.clone())
            .ok_or(Errno::EBADF)
    }

    pub fn entry_mut(&mut self, fd: i32) -> SysResult<&mut FdEntry> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.fds.get_mut(i))
            .and_then(|e| e.as_mut())
            .ok_or(Errno::EBADF)
    }

    /// Installs at the lowest free descriptor >= `min` below the caller's limit.
    pub fn install_from(
        &mut self,
        cur: &dyn Caller,
        min: usize,
        file: Arc<File>,
        cloexec: bool,
    ) -> SysResult<i32> {
        let idx = (min..nofile_limit(cur))
            .find(|&i| self.fds.get(i).is_none_or(Option::is_none))
            .ok_or(Errno::EMFILE)?;
        if idx >= self.fds.len() {
            self.fds
                .try_reserve(idx + 1 - self.fds.len())
                .map_err(|_| Errno::ENOMEM)?;
            self.fds.resize(idx + 1, None);
        }
        self.fds[idx] = Some(FdEntry { file, cloexec });
        Ok(idx as i32)
    }

    /// The open descriptors in order (/proc/PID/fd).
    pub fn iter(&self) -> impl Iterator<Item = (usize, &FdEntry)> {
        self.fds
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
    }

    /// The size Linux's table would have for these descriptors (FDSize): 64 slots, doubled
    /// as needed.
    pub fn capacity(&self) -> usize {
        let used = self
            .fds
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |i| i + 1);
        used.max(64).next_power_of_two()
    }

    pub fn install(&mut self, cur: &dyn Caller, file: Arc<File>, cloexec: bool) -> SysResult<i32> {
        self.install_from(cur, 0, file, cloexec)
    }

    /// Puts `file` at `fd`, returning what was there.
    pub fn install_at(
        &mut self,
        cur: &dyn Caller,
        fd: usize,
        file: Arc<File>,
        cloexec: bool,
    ) -> SysResult<Option<FdEntry>> {
        if fd >= nofile_limit(cur) {
            return Err(Errno::EBADF);
        }
        if fd >= self.fds.len() {
            self.fds
                .try_reserve(fd + 1 - self.fds.len())
                .map_err(|_| Errno::ENOMEM)?;
            self.fds.resize(fd + 1, None);
        }
        Ok(self.fds[fd].replace(FdEntry { file, cloexec }))
    }

    pub fn close(&mut self, fd: i32) -> SysResult<FdEntry> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.fds.get_mut(i))
            .and_then(Option::take)
            .ok_or(Errno::EBADF)
    }

    pub fn close_on_exec(&mut self) {
        for e in self.fds.iter_mut() {
            if e.as_ref().is_some_and(|e| e.cloexec) {
                *e = None;
            }
        }
    }
}
