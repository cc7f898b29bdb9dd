//! /proc/PID/fd and /proc/PID/fdinfo (Linux's fs/proc/fd.c): a link per open descriptor, and
//! its position, flags and inode.

#![forbid(unsafe_code)]

use super::base::{pid_link, LinkTo, Target};
use crate::fs::generic::{Dir, Listing, Text, TextFile};
use crate::fs::{File, Inode, Kind};
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use svelt_abi::uapi::errno::{Errno, SysResult};

/// The inode number fstat reports for a file without a node (stat.rs makes it the same way).
fn anon_ino(f: &File) -> u64 {
    Arc::as_ptr(&f.ops) as *const u8 as u64 & 0xffff_ffff
}

/// What /proc/PID/fd/N reads as: the path, or `pipe:[ino]` and `anon_inode:[kind]`.
pub(super) fn fd_name(f: &File) -> String {
    if f.node.is_none() && f.path == "pipe:" {
        format!("pipe:[{}]", anon_ino(f))
    } else if let Ok(s) = crate::net::unix::of(f) {
        format!("socket:[{}]", s.ino)
    } else {
        f.path.clone()
    }
}

/// /proc/<pid>/fd (links) and /proc/<pid>/fdinfo (files).
pub(super) struct FdDir {
    target: Target,
    info: bool,
}

impl FdDir {
    pub(super) fn new(ino: u64, target: Target, info: bool) -> Arc<Dir<FdDir>> {
        let perm = if info { 0o555 } else { 0o500 };
        Dir::new(ino, perm, FdDir { target, info })
    }

    fn child_ino(&self, fd: usize) -> u64 {
        (2 << 40) | (u64::from(self.info) << 39) | (u64::from(self.target.pid) << 20) | fd as u64
    }
}

impl Listing for FdDir {
    fn lookup(&self, _ino: u64, name: &str) -> SysResult<Arc<dyn Inode>> {
        let fd: i32 = name.parse().map_err(|_| Errno::ENOENT)?;
        if name.starts_with('+') || (name.starts_with('0') && name.len() > 1) {
            return Err(Errno::ENOENT);
        }
        let t = self.target.task().map_err(|_| Errno::ENOENT)?;
        t.files().lock().get(fd).map_err(|_| Errno::ENOENT)?;
        let ino = self.child_ino(fd as usize);
        let target = Target { fd, ..self.target };
        Ok(if self.info {
            Arc::new(TextFile::new(ino, 0o444, target, fdinfo))
        } else {
            pid_link(ino, target, LinkTo::Fd(fd))
        })
    }
    fn entries(&self, _ino: u64) -> SysResult<Vec<(String, u64, Kind)>> {
        let t = self.target.task().map_err(|_| Errno::ENOENT)?;
        let files = t.files();
        let files = files.lock();
        let mut v = Vec::new();
        for (fd, _) in files.iter() {
            v.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            let kind = if self.info { Kind::File } else { Kind::Symlink };
            v.push((format!("{fd}"), self.child_ino(fd), kind));
        }
        Ok(v)
    }
}

fn fdinfo(t: Target, out: &mut Text) -> SysResult<()> {
    let task = t.task()?;
    let files = task.files();
    let (file, cloexec) = {
        let mut g = files.lock();
        let e = g.entry_mut(t.fd).map_err(|_| Errno::ENOENT)?;
        (e.file.clone(), e.cloexec)
    };
    let pos = *file.pos.lock();
    let mut flags = file.flags();
    if cloexec {
        flags |= svelt_abi::uapi::fs::O_CLOEXEC;
    }
    let ino = file
        .node
        .as_ref()
        .map_or_else(|| anon_ino(&file), |n| n.ino());
    let _ = write!(
        out,
        "pos:\t{pos}\nflags:\t0{flags:o}\nmnt_id:\t1\nino:\t{ino}\n"
    );
    file.ops.fdinfo(out);
    Ok(())
}
