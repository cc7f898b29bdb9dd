//! /proc/PID and /proc/PID/task/TID (Linux's fs/proc/base.c): the directories, their links
//! (cwd, exe, root), mem, and the small per-process files (comm, cmdline, environ, auxv,
//! limits, fpstat). stat and status are in `array`, the memory views in `task_mmu`, the fd
//! directories in `fd`.

#![forbid(unsafe_code)]

use super::fd::{fd_name, FdDir};
use super::{array, mounts, task_mmu};
use crate::fs::generic::{write_str, Dir, Link, Listing, Render, Text, TextFile};
use crate::fs::{Caller, File, FileOps, Inode, Kind};
use crate::process::{self, Process, Thread};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::procfs::{self, Sink};

/// Whose file: a process (`tid` None) or one of its threads (task/TID); `fd` for fdinfo.
#[derive(Clone, Copy, Debug)]
pub(super) struct Target {
    pub(super) pid: u32,
    pub(super) tid: Option<u32>,
    pub(super) fd: i32,
}

impl Target {
    pub(super) fn process(&self) -> SysResult<Arc<Process>> {
        process::find_pid(self.pid).ok_or(Errno::ESRCH)
    }

    /// The process, if it is a zombie and this names it (not one of its threads).
    pub(super) fn zombie(&self) -> Option<Arc<Process>> {
        if self.tid.is_some_and(|t| t != self.pid) {
            return None;
        }
        let p = self.process().ok()?;
        let zombie = matches!(*p.state.lock(), process::ProcState::Zombie(_));
        zombie.then_some(p)
    }

    /// The thread named, or for the process its leader (or any live thread once the leader
    /// has gone).
    pub(super) fn task(&self) -> SysResult<Arc<Thread>> {
        let tid = self.tid.unwrap_or(self.pid);
        if let Some(t) = process::find_task(tid).filter(|t| t.pid() == self.pid) {
            return Ok(t);
        }
        if self.tid.is_none() {
            if let Some(t) = self.process()?.live_threads().into_iter().next() {
                return Ok(t);
            }
        }
        Err(Errno::ESRCH)
    }

    /// The thread named (as `task` finds it), or `None` when this names a zombie (which has
    /// none left).
    pub(super) fn task_or_zombie(&self) -> SysResult<Option<Arc<Thread>>> {
        match self.task() {
            Ok(th) => Ok(Some(th)),
            Err(_) if self.zombie().is_some() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Private files (environ, auxv, maps...) open only for those who may trace the process
    /// (PTRACE_MODE_READ).
    pub(super) fn may_trace(cur: &dyn Caller, target: Target) -> SysResult<()> {
        let p = target.process()?;
        if crate::process::ptrace::may_access(&process::caller_thread(cur).process, &p) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }
}

/// Inode numbers of the per-process entries: stable, and apart from everything `new_ino`
/// hands out.
pub(super) fn dir_ino(id: u32, thread: bool) -> u64 {
    (1 << 40) | (u64::from(thread) << 39) | (u64::from(id) << 8) | 0xff
}

fn entry_ino(dir: u64, slot: usize) -> u64 {
    (dir & !0xff) | slot as u64
}

#[derive(Clone, Copy, Debug)]
pub(super) enum LinkTo {
    Cwd,
    Exe,
    Root,
    Fd(i32),
}

/// cwd, exe, root and fd/N: symlinks whose targets are the process's (Linux's are magic
/// links that open the object itself; here they are followed by name). A path reads as from
/// the reader's root (chroot), and one outside that root from the global root, as Linux's
/// d_path prints it.
fn link_target(cur: &dyn Caller, (target, to): (Target, LinkTo)) -> SysResult<String> {
    let t = target.task().map_err(|_| Errno::ENOENT)?;
    let path = match to {
        LinkTo::Cwd => t.fs().lock().cwd.clone(),
        LinkTo::Root => String::from(&*t.fs().lock().root),
        LinkTo::Exe => {
            let exe = t.process().exe.lock().clone();
            if exe.is_empty() {
                return Err(Errno::ENOENT);
            }
            exe
        }
        LinkTo::Fd(fd) => {
            let f = t.files().lock().get(fd).map_err(|_| Errno::ENOENT)?;
            fd_name(&f)
        }
    };
    if !path.starts_with('/') {
        // pipe:[N], socket:[N], anon_inode:[...]
        return Ok(path);
    }
    let root = cur.fs().lock().root.clone();
    Ok(crate::fs::relative_to_root(&path, &root).map_or(path.clone(), String::from))
}

/// A link of /proc/PID (or fd/N) to what `to` names.
pub(super) fn pid_link(ino: u64, target: Target, to: LinkTo) -> Arc<dyn Inode> {
    Arc::new(Link::new(ino, (target, to), link_target))
}

#[derive(Clone, Copy)]
enum Entry {
    /// A generated file: its text, permissions, and whether it is private (for those who
    /// may trace the process).
    Gen(Render<Target>, u32, bool),
    Comm,
    Link(LinkTo),
    Fd,
    FdInfo,
    Mem,
    Task,
}

/// The entries of /proc/PID (task/TID has all but `task`): name, what it is.
const PID_ENTRIES: [(&str, Entry); 21] = [
    ("auxv", Entry::Gen(auxv, 0o400, true)),
    ("cmdline", Entry::Gen(cmdline, 0o444, false)),
    ("comm", Entry::Comm),
    ("cwd", Entry::Link(LinkTo::Cwd)),
    ("environ", Entry::Gen(environ, 0o400, true)),
    ("exe", Entry::Link(LinkTo::Exe)),
    ("fd", Entry::Fd),
    ("fdinfo", Entry::FdInfo),
    ("fpstat", Entry::Gen(fpstat, 0o444, false)),
    ("limits", Entry::Gen(limits, 0o444, false)),
    ("maps", Entry::Gen(task_mmu::maps, 0o444, true)),
    ("mem", Entry::Mem),
    ("mountinfo", Entry::Gen(mounts::mountinfo, 0o444, false)),
    (
        "mounts",
        Entry::Gen(|_, out| write_str(out, &mounts::mounts()), 0o444, false),
    ),
    ("root", Entry::Link(LinkTo::Root)),
    ("schedstat", Entry::Gen(schedstat, 0o444, false)),
    ("smaps", Entry::Gen(task_mmu::smaps, 0o444, true)),
    ("stat", Entry::Gen(array::stat, 0o444, false)),
    ("statm", Entry::Gen(task_mmu::statm, 0o444, false)),
    ("status", Entry::Gen(array::status, 0o444, false)),
    ("task", Entry::Task),
];

/// /proc/<pid>, or /proc/<pid>/task/<tid> (`tid` set).
pub(super) struct PidDir {
    target: Target,
}

impl PidDir {
    pub(super) fn new(pid: u32, tid: Option<u32>) -> Arc<Dir<PidDir>> {
        let target = Target { pid, tid, fd: -1 };
        Dir::new(
            dir_ino(tid.unwrap_or(pid), tid.is_some()),
            0o555,
            PidDir { target },
        )
    }

    fn entries_here(&self) -> impl Iterator<Item = (usize, &'static (&'static str, Entry))> {
        let thread = self.target.tid.is_some();
        PID_ENTRIES
            .iter()
            .enumerate()
            .filter(move |(_, (_, e))| !(thread && matches!(e, Entry::Task)))
    }
}

impl Listing for PidDir {
    fn lookup(&self, dir: u64, name: &str) -> SysResult<Arc<dyn Inode>> {
        let (slot, (_, entry)) = self
            .entries_here()
            .find(|(_, (n, _))| *n == name)
            .ok_or(Errno::ENOENT)?;
        if self.target.task().is_err() && self.target.zombie().is_none() {
            return Err(Errno::ENOENT);
        }
        let ino = entry_ino(dir, slot);
        let target = self.target;
        Ok(match *entry {
            Entry::Gen(render, perm, private) => {
                let file = TextFile::new(ino, perm, target, render);
                if private {
                    Arc::new(file.checked(Target::may_trace))
                } else {
                    Arc::new(file)
                }
            }
            Entry::Comm => Arc::new(TextFile::new(ino, 0o644, target, comm).writer(comm_write)),
            Entry::Link(to) => pid_link(ino, target, to),
            Entry::Fd | Entry::FdInfo => FdDir::new(ino, target, matches!(entry, Entry::FdInfo)),
            Entry::Mem => Arc::new(MemFile {
                ino,
                pid: target.pid,
            }),
            Entry::Task => Dir::new(ino, 0o555, TaskDir { pid: target.pid }),
        })
    }
    fn entries(&self, dir: u64) -> SysResult<Vec<(String, u64, Kind)>> {
        let mut v = Vec::new();
        v.try_reserve(PID_ENTRIES.len())
            .map_err(|_| Errno::ENOMEM)?;
        for (slot, (name, e)) in self.entries_here() {
            let kind = match e {
                Entry::Link(_) => Kind::Symlink,
                Entry::Fd | Entry::FdInfo | Entry::Task => Kind::Dir,
                _ => Kind::File,
            };
            v.push((name.to_string(), entry_ino(dir, slot), kind));
        }
        Ok(v)
    }
}

/// /proc/<pid>/task: a directory per thread.
struct TaskDir {
    pid: u32,
}

impl Listing for TaskDir {
    fn lookup(&self, _ino: u64, name: &str) -> SysResult<Arc<dyn Inode>> {
        let tid: u32 = name.parse().map_err(|_| Errno::ENOENT)?;
        process::find_task(tid)
            .filter(|t| t.pid() == self.pid)
            .ok_or(Errno::ENOENT)?;
        Ok(PidDir::new(self.pid, Some(tid)))
    }
    fn entries(&self, _ino: u64) -> SysResult<Vec<(String, u64, Kind)>> {
        let p = process::find_process(self.pid).ok_or(Errno::ENOENT)?;
        let mut v = Vec::new();
        for t in p.live_threads() {
            v.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            v.push((format!("{}", t.tid), dir_ino(t.tid, true), Kind::Dir));
        }
        Ok(v)
    }
}

/// /proc/<pid>/mem: the process's memory at the file offset, for those who may trace it.
struct MemFile {
    ino: u64,
    pid: u32,
}

impl Inode for MemFile {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::File
    }
    fn perm(&self) -> u32 {
        0o600
    }
    fn open(&self, cur: &dyn Caller, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        let p = process::find_process(self.pid).ok_or(Errno::ENOENT)?;
        if !crate::process::ptrace::may_access(&process::caller_thread(cur).process, &p) {
            return Err(Errno::EACCES);
        }
        Ok(Some(Arc::new(MemOps { pid: self.pid })))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct MemOps {
    pid: u32,
}

impl MemOps {
    fn access(&self, cur: &dyn Caller, off: u64, buf: &mut [u8], write: bool) -> SysResult<usize> {
        let t = process::find_process(self.pid)
            .and_then(|p| p.live_threads().into_iter().next())
            .ok_or(Errno::EIO)?;
        crate::process::ptrace::access_mem(
            &process::caller_thread(cur).process,
            &t,
            off as usize,
            buf,
            write,
        )
    }

    /// Writes through a small bounce buffer (the memory writer takes a mutable slice).
    fn write_from(&self, cur: &dyn Caller, off: u64, buf: &[u8]) -> SysResult<usize> {
        let mut chunk = [0u8; 512];
        let mut done = 0;
        while done < buf.len() {
            let n = (buf.len() - done).min(chunk.len());
            chunk[..n].copy_from_slice(&buf[done..done + n]);
            match self.access(cur, off + done as u64, &mut chunk[..n], true) {
                Ok(k) => {
                    done += k;
                    if k < n {
                        break;
                    }
                }
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(done)
    }
}

impl FileOps for MemOps {
    fn read(&self, cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        file.at_pos(|pos| self.access(cur, pos, buf, false))
    }
    fn write(&self, cur: &dyn Caller, file: &File, buf: &[u8]) -> SysResult<usize> {
        file.at_pos(|pos| self.write_from(cur, pos, buf))
    }
    fn pread(&self, cur: &dyn Caller, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        self.access(cur, off, buf, false)
    }
    fn pwrite(&self, cur: &dyn Caller, _file: &File, buf: &[u8], off: u64) -> SysResult<usize> {
        self.write_from(cur, off, buf)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn comm(t: Target, out: &mut Text) -> SysResult<()> {
    let c = match (t.task(), t.zombie()) {
        (Ok(th), _) => th.comm(),
        (Err(_), Some(z)) => *z.zombie_comm.lock(),
        (Err(e), None) => return Err(e),
    };
    out.raw(procfs::comm_str(&c));
    out.raw(b"\n");
    Ok(())
}

/// A write to comm renames the thread (the first 15 bytes, newline and all, as Linux keeps
/// them); only threads of the writer's own process may be renamed (EINVAL otherwise).
fn comm_write(cur: &dyn Caller, t: Target, buf: &[u8]) -> SysResult<usize> {
    let task = t.task()?;
    if task.pid() != process::caller_thread(cur).pid() {
        return Err(Errno::EINVAL);
    }
    task.set_comm(&buf[..buf.len().min(procfs::TASK_COMM_LEN - 1)]);
    Ok(buf.len())
}

/// Reads `[start, end)` of another process's memory into `out` (what a fault leaves
/// unreadable ends it).
fn copy_user_area(
    mm: &crate::process::Mm,
    start: usize,
    end: usize,
    out: &mut Vec<u8>,
) -> SysResult<()> {
    let len = end.saturating_sub(start);
    out.try_reserve(len).map_err(|_| Errno::ENOMEM)?;
    let mut chunk = [0u8; 256];
    let mut at = start;
    while at < end {
        let n = (end - at).min(chunk.len());
        if mm.lock().read(at, &mut chunk[..n]).is_err() {
            break;
        }
        out.extend_from_slice(&chunk[..n]);
        at += n;
    }
    Ok(())
}

fn cmdline(t: Target, out: &mut Text) -> SysResult<()> {
    // A zombie's is empty (it has no memory left).
    if t.zombie().is_some() {
        return Ok(());
    }
    let Some(mm) = t.task()?.mm() else {
        return Ok(());
    };
    let (arg_start, arg_end, env_start, env_end) = {
        let g = mm.lock();
        (g.arg_start, g.arg_end, g.exec.env_start, g.exec.env_end)
    };
    if arg_start >= arg_end {
        return Ok(());
    }
    // The environment counts only when it directly follows the arguments.
    let end = if env_start == arg_end && env_end >= env_start {
        env_end
    } else {
        arg_end
    };
    let mut area = Vec::new();
    copy_user_area(&mm, arg_start, end, &mut area)?;
    let n = procfs::cmdline_len(&area, arg_end - arg_start);
    out.raw(&area[..n.min(area.len())]);
    Ok(())
}

fn environ(t: Target, out: &mut Text) -> SysResult<()> {
    let Some(mm) = t.task()?.mm() else {
        return Ok(());
    };
    let (start, end) = {
        let g = mm.lock();
        (g.exec.env_start, g.exec.env_end)
    };
    let mut area = Vec::new();
    copy_user_area(&mm, start, end, &mut area)?;
    out.raw(&area);
    Ok(())
}

fn auxv(t: Target, out: &mut Text) -> SysResult<()> {
    if let Some(mm) = t.task()?.mm() {
        out.raw(&mm.lock().saved_auxv);
    }
    Ok(())
}

fn fpstat(t: Target, out: &mut Text) -> SysResult<()> {
    let p = t.process()?;
    write_str(
        out,
        &crate::task::fpstate::format_counters(&process::fp_counters(&p)),
    )
}

/// schedstat (Linux's proc_pid_schedstat): the thread's time on a CPU and its time queued
/// runnable waiting for one (run_delay), in nanoseconds, and how often it left a CPU.
fn schedstat(t: Target, out: &mut Text) -> SysResult<()> {
    let th = t.task()?;
    let c = th.core();
    let u = c.cputime.usage();
    let on_cpu = crate::time::counter_to_ns(u.user + u.system);
    let delay = crate::task::cputime::run_delay_ns(c);
    write_str(out, &format!("{on_cpu} {delay} {}\n", u.nvcsw + u.nivcsw))
}

fn limits(t: Target, out: &mut Text) -> SysResult<()> {
    let l = *t.process()?.rlimits.lock();
    let _ = procfs::write_limits(out, &l);
    Ok(())
}
