//! /proc: generated files. Each file's text is produced when it is opened (a snapshot, as
//! Linux's seq files behave for small files) and read from that snapshot; the integer files of
//! /proc/sys instead format and parse their value on every read and write at position 0, as
//! Linux's sysctls do (`SysctlFile`).

use super::ramfs::RamDir;
use super::{new_ino, File, FileOps, Inode, Kind};
use crate::task::{self, Process, Task};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::fmt::Write;
use core::sync::atomic::{AtomicUsize, Ordering};
use spin::Mutex;
use svelt_abi::errno::{Errno, SysResult};
use svelt_abi::procfs::{
    self, MapsLine, MountInfo, Sink, SmapsFields, StatusMem, TaskStat, TaskState, TaskStatus,
    VmFlags,
};
use svelt_abi::sysctl;

type Gen = fn(Option<u32>) -> String;

/// A generated file; `pid` for the per-process ones.
pub struct GenFile {
    ino: u64,
    pid: Option<u32>,
    gen: Gen,
}

impl GenFile {
    pub fn new(gen: Gen) -> Arc<GenFile> {
        Arc::new(GenFile {
            ino: new_ino(),
            pid: None,
            gen,
        })
    }
}

impl Inode for GenFile {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::File
    }
    fn perm(&self) -> u32 {
        0o444
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<usize> {
        let text = (self.gen)(self.pid);
        let b = text.as_bytes();
        let off = (off as usize).min(b.len());
        let n = buf.len().min(b.len() - off);
        buf[..n].copy_from_slice(&b[off..off + n]);
        Ok(n)
    }
    fn open(&self, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        Ok(Some(Arc::new(Snapshot {
            text: (self.gen)(self.pid).into_bytes(),
        })))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct Snapshot {
    text: Vec<u8>,
}

impl FileOps for Snapshot {
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        let n = self.pread(file, buf, *pos)?;
        *pos += n as u64;
        Ok(n)
    }
    fn pread(&self, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let off = (off as usize).min(self.text.len());
        let n = buf.len().min(self.text.len() - off);
        buf[..n].copy_from_slice(&self.text[off..off + n]);
        Ok(n)
    }
    fn write(&self, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EACCES)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The text of an integer sysctl, formatted when a read needs it.
type SysctlRead = fn() -> String;
/// A write at position 0 of an integer sysctl: the bytes it consumed (what write() returns).
type SysctlWrite = fn(&[u8]) -> SysResult<usize>;

/// A /proc/sys file holding integers: read and written at the file position as Linux's
/// proc_sys_call_handler does (`svelt_abi::sysctl`), the value formatted or parsed on each call.
pub struct SysctlFile {
    ino: u64,
    read: SysctlRead,
    write: Option<SysctlWrite>,
}

impl SysctlFile {
    fn new(read: SysctlRead, write: Option<SysctlWrite>) -> Arc<SysctlFile> {
        Arc::new(SysctlFile {
            ino: new_ino(),
            read,
            write,
        })
    }
}

impl Inode for SysctlFile {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::File
    }
    fn perm(&self) -> u32 {
        if self.write.is_some() {
            0o644
        } else {
            0o444
        }
    }
    /// Linux's proc_sys_setattr takes a size change and keeps nothing of it: open with O_TRUNC
    /// (`fopen(path, "w")`) and ftruncate succeed.
    fn truncate(&self, _len: u64) -> SysResult<()> {
        Ok(())
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<usize> {
        let text = (self.read)();
        let b = sysctl::int_read(text.as_bytes(), off, buf.len());
        buf[..b.len()].copy_from_slice(b);
        Ok(b.len())
    }
    fn open(&self, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        Ok(Some(Arc::new(SysctlOps {
            read: self.read,
            write: self.write,
        })))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct SysctlOps {
    read: SysctlRead,
    write: Option<SysctlWrite>,
}

impl SysctlOps {
    fn write_at(&self, buf: &[u8], pos: u64) -> SysResult<usize> {
        let write = self.write.ok_or(Errno::EACCES)?;
        match sysctl::int_write(pos, buf.len()) {
            sysctl::IntWrite::Done(n) => Ok(n),
            sysctl::IntWrite::Parse => write(buf),
        }
    }
}

impl FileOps for SysctlOps {
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        let n = self.pread(file, buf, *pos)?;
        *pos += n as u64;
        Ok(n)
    }
    fn pread(&self, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let text = (self.read)();
        let b = sysctl::int_read(text.as_bytes(), off, buf.len());
        buf[..b.len()].copy_from_slice(b);
        Ok(b.len())
    }
    fn write(&self, file: &File, buf: &[u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        let n = self.write_at(buf, *pos)?;
        *pos += n as u64;
        Ok(n)
    }
    fn pwrite(&self, _file: &File, buf: &[u8], off: u64) -> SysResult<usize> {
        self.write_at(buf, off)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
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
    fn open(&self, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        let p = task::find_process(self.pid).ok_or(Errno::ENOENT)?;
        if !crate::ptrace::may_access(&p) {
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
    fn access(&self, off: u64, buf: &mut [u8], write: bool) -> SysResult<usize> {
        let t = task::find_process(self.pid)
            .and_then(|p| p.live_threads().into_iter().next())
            .ok_or(Errno::EIO)?;
        crate::ptrace::access_mem(&t, off as usize, buf, write)
    }

    /// Writes through a small bounce buffer (the memory writer takes a mutable slice).
    fn write_from(&self, off: u64, buf: &[u8]) -> SysResult<usize> {
        let mut chunk = [0u8; 512];
        let mut done = 0;
        while done < buf.len() {
            let n = (buf.len() - done).min(chunk.len());
            chunk[..n].copy_from_slice(&buf[done..done + n]);
            match self.access(off + done as u64, &mut chunk[..n], true) {
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
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        let n = self.access(*pos, buf, false)?;
        *pos += n as u64;
        Ok(n)
    }
    fn write(&self, file: &File, buf: &[u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        let n = self.write_from(*pos, buf)?;
        *pos += n as u64;
        Ok(n)
    }
    fn pread(&self, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        self.access(off, buf, false)
    }
    fn pwrite(&self, _file: &File, buf: &[u8], off: u64) -> SysResult<usize> {
        self.write_from(off, buf)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A symlink whose target is computed at lookup time.
struct DynLink {
    ino: u64,
    pid: Option<u32>,
    target: fn(Option<u32>) -> SysResult<String>,
}

impl Inode for DynLink {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Symlink
    }
    fn perm(&self) -> u32 {
        0o777
    }
    fn readlink(&self) -> SysResult<String> {
        (self.target)(self.pid)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A /proc/sys file holding a string (hostname, osrelease, ostype): read and written at the
/// file position as Linux's `proc_dostring` does (`svelt_abi::sysctl::string_*`).
struct StrSysctl {
    ino: u64,
    read: fn() -> ([u8; crate::uts::NEW_UTS_LEN + 1], usize),
    /// Writes `text` at a position: the whole write is reported done.
    write: Option<fn(u64, &[u8])>,
}

/// Every string sysctl here is a UTS name: 65 bytes with the NUL.
const UTS_MAXLEN: usize = crate::uts::NEW_UTS_LEN + 1;

impl StrSysctl {
    fn new(
        read: fn() -> ([u8; UTS_MAXLEN], usize),
        write: Option<fn(u64, &[u8])>,
    ) -> Arc<StrSysctl> {
        Arc::new(StrSysctl {
            ino: new_ino(),
            read,
            write,
        })
    }
}

impl Inode for StrSysctl {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::File
    }
    fn perm(&self) -> u32 {
        if self.write.is_some() {
            0o644
        } else {
            0o444
        }
    }
    fn truncate(&self, _len: u64) -> SysResult<()> {
        Ok(())
    }
    fn open(&self, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        Ok(Some(Arc::new(StrSysctlOps {
            read: self.read,
            write: self.write,
        })))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct StrSysctlOps {
    read: fn() -> ([u8; UTS_MAXLEN], usize),
    write: Option<fn(u64, &[u8])>,
}

impl FileOps for StrSysctlOps {
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        let n = self.pread(file, buf, *pos)?;
        *pos += n as u64;
        Ok(n)
    }
    fn pread(&self, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let (v, len) = (self.read)();
        let mut out = [0u8; UTS_MAXLEN + 1];
        let n = sysctl::string_read(&v[..len], UTS_MAXLEN, off, buf.len(), &mut out);
        buf[..n].copy_from_slice(&out[..n]);
        Ok(n)
    }
    fn write(&self, file: &File, buf: &[u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        let n = self.pwrite(file, buf, *pos)?;
        *pos += n as u64;
        Ok(n)
    }
    fn pwrite(&self, _file: &File, buf: &[u8], off: u64) -> SysResult<usize> {
        let write = self.write.ok_or(Errno::EACCES)?;
        // Linux looks at one page of a write.
        let buf = &buf[..buf.len().min(4096)];
        write(off, buf);
        Ok(buf.len())
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn uts_const(s: &str) -> ([u8; UTS_MAXLEN], usize) {
    let mut b = [0u8; UTS_MAXLEN];
    let n = s.len().min(UTS_MAXLEN - 1);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    (b, n)
}

/// kernel.pid_max: kept and shown; Svelt hands out PIDs without wrapping at it.
static PID_MAX: AtomicUsize = AtomicUsize::new(32768);
/// Linux's bounds for pid_max: RESERVED_PIDS + 1 and PID_MAX_LIMIT (64-bit).
const PID_MAX_MIN: i32 = 301;
const PID_MAX_LIMIT: i32 = 4 * 1024 * 1024;

/// /proc itself.
pub struct ProcRoot {
    ino: u64,
    fixed: Arc<RamDir>,
}

static SYS_DIR: spin::Once<Arc<RamDir>> = spin::Once::new();

/// /proc/sys, where sysctls such as abi/sve_default_vector_length live.
pub fn sys_dir() -> Arc<RamDir> {
    SYS_DIR
        .call_once(|| {
            let d = RamDir::new(0o555);
            let abi = RamDir::new(0o555);
            if crate::cpufeature::features().sve {
                abi.replace(
                    "sve_default_vector_length",
                    SysctlFile::new(
                        crate::fpstate::sve_default_read,
                        Some(crate::fpstate::sve_default_write),
                    ),
                );
            }
            if crate::cpufeature::offer().sme {
                abi.replace(
                    "sme_default_vector_length",
                    SysctlFile::new(
                        crate::fpstate::sme_default_read,
                        Some(crate::fpstate::sme_default_write),
                    ),
                );
            }
            d.replace("abi", abi);
            let kernel = RamDir::new(0o555);
            kernel.replace(
                "threads-max",
                SysctlFile::new(
                    || int_read(&crate::task::MAX_THREADS),
                    Some(|t| int_write(&crate::task::MAX_THREADS, t, 20, 0x3fff_ffff)),
                ),
            );
            kernel.replace(
                "pid_max",
                SysctlFile::new(
                    || int_read(&PID_MAX),
                    Some(|t| int_write(&PID_MAX, t, PID_MAX_MIN, PID_MAX_LIMIT)),
                ),
            );
            kernel.replace(
                "hostname",
                StrSysctl::new(
                    crate::uts::hostname,
                    Some(|pos, text| {
                        crate::uts::with_hostname(|h| {
                            h.len = sysctl::string_write(&mut h.buf, h.len, UTS_MAXLEN, pos, text);
                            h.buf[h.len..].fill(0);
                        })
                    }),
                ),
            );
            kernel.replace(
                "osrelease",
                StrSysctl::new(|| uts_const(crate::uts::RELEASE), None),
            );
            kernel.replace("ostype", StrSysctl::new(|| uts_const("Linux"), None));
            d.replace("kernel", kernel);
            let vm = RamDir::new(0o555);
            vm.replace(
                "max_map_count",
                SysctlFile::new(
                    || int_read(&crate::mm::aspace::MAX_MAP_COUNT),
                    Some(|t| int_write(&crate::mm::aspace::MAX_MAP_COUNT, t, 0, i32::MAX)),
                ),
            );
            d.replace("vm", vm);
            let fsd = RamDir::new(0o555);
            fsd.replace(
                "pipe-max-size",
                SysctlFile::new(
                    || int_read(&super::pipe::PIPE_MAX_SIZE),
                    Some(|t| {
                        // proc_dopipe_max_size: an unsigned number, stored rounded as a
                        // pipe's size would be.
                        let (v, used) = sysctl::douintvec(t)?;
                        let r = super::pipe::round_size(v as usize).ok_or(Errno::EINVAL)?;
                        super::pipe::PIPE_MAX_SIZE.store(r, Ordering::Relaxed);
                        Ok(used)
                    }),
                ),
            );
            fsd.replace(
                "nr_open",
                SysctlFile::new(|| format!("{}\n", super::NR_OPEN), None),
            );
            d.replace("fs", fsd);
            d
        })
        .clone()
}

impl ProcRoot {
    pub fn new() -> Arc<ProcRoot> {
        let fixed = RamDir::new(0o555);
        fixed.replace("cpuinfo", GenFile::new(cpuinfo));
        fixed.replace("meminfo", GenFile::new(meminfo));
        fixed.replace("uptime", GenFile::new(uptime));
        fixed.replace("loadavg", GenFile::new(loadavg));
        fixed.replace("stat", GenFile::new(kernel_stat));
        fixed.replace("version", GenFile::new(version));
        fixed.replace("cmdline", GenFile::new(kernel_cmdline));
        fixed.replace("mounts", GenFile::new(mounts));
        fixed.replace(
            "filesystems",
            GenFile::new(|_| {
                "nodev\tproc\nnodev\tsysfs\nnodev\tdevtmpfs\nnodev\ttmpfs\nnodev\tramfs\n"
                    .to_string()
            }),
        );
        fixed.replace("sys", sys_dir());
        let svelt = RamDir::new(0o555);
        svelt.replace(
            "fpstat",
            GenFile::new(|_| crate::fpstate::format_system_fpstat()),
        );
        svelt.replace("meminfo", GenFile::new(svelt_meminfo));
        fixed.replace("svelt", svelt);
        fixed.replace(
            "self",
            Arc::new(DynLink {
                ino: new_ino(),
                pid: None,
                target: |_| Ok(format!("{}", task::current().pid())),
            }),
        );
        fixed.replace(
            "thread-self",
            Arc::new(DynLink {
                ino: new_ino(),
                pid: None,
                target: |_| {
                    Ok(format!(
                        "{}/task/{}",
                        task::current().pid(),
                        task::current().tid
                    ))
                },
            }),
        );
        Arc::new(ProcRoot {
            ino: new_ino(),
            fixed,
        })
    }
}

impl Inode for ProcRoot {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Dir
    }
    fn perm(&self) -> u32 {
        0o555
    }
    fn lookup(&self, name: &str) -> SysResult<Arc<dyn Inode>> {
        if let Ok(n) = self.fixed.lookup(name) {
            return Ok(n);
        }
        let id: u32 = name.parse().map_err(|_| Errno::ENOENT)?;
        if name.starts_with('0') || name.starts_with('+') {
            return Err(Errno::ENOENT);
        }
        // A thread's ID names its process's directory too (not listed, as on Linux). A zombie
        // has one until it is reaped.
        let Some(t) = task::find_task(id) else {
            return task::find_pid(id)
                .map(|_| PidDir::new(id, None) as Arc<dyn Inode>)
                .ok_or(Errno::ENOENT);
        };
        if t.is_idle() {
            return Err(Errno::ENOENT);
        }
        let pid = t.pid();
        Ok(PidDir::new(pid, (id != pid).then_some(id)))
    }
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
        let mut v = self.fixed.entries()?;
        // Every pid until it is reaped (sorted, once each).
        for pid in task::processes()?.iter().map(|p| p.pid).filter(|&p| p != 0) {
            v.push((format!("{pid}"), dir_ino(pid, false), Kind::Dir));
        }
        Ok(v)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

// ---- /proc/<pid> ----------------------------------------------------------------------------

/// Whose file: a process (`tid` None) or one of its threads (task/TID); `fd` for fdinfo.
#[derive(Clone, Copy, Debug)]
struct Target {
    pid: u32,
    tid: Option<u32>,
    fd: i32,
}

impl Target {
    fn process(&self) -> SysResult<Arc<Process>> {
        task::find_pid(self.pid).ok_or(Errno::ESRCH)
    }

    /// The process, if it is a zombie and this names it (not one of its threads).
    fn zombie(&self) -> Option<Arc<Process>> {
        if self.tid.is_some_and(|t| t != self.pid) {
            return None;
        }
        let p = self.process().ok()?;
        let zombie = matches!(*p.state.lock(), task::ProcState::Zombie(_));
        zombie.then_some(p)
    }

    /// The thread named, or for the process its leader (or any live thread once the leader
    /// has gone).
    fn task(&self) -> SysResult<Arc<Task>> {
        let tid = self.tid.unwrap_or(self.pid);
        if let Some(t) = task::find_task(tid).filter(|t| t.pid() == self.pid) {
            return Ok(t);
        }
        if self.tid.is_none() {
            if let Some(t) = self.process()?.live_threads().into_iter().next() {
                return Ok(t);
            }
        }
        Err(Errno::ESRCH)
    }
}

/// Inode numbers of the per-process entries: stable, and apart from everything `new_ino`
/// hands out.
fn dir_ino(id: u32, thread: bool) -> u64 {
    (1 << 40) | (u64::from(thread) << 39) | (u64::from(id) << 8) | 0xff
}

fn entry_ino(dir: u64, slot: usize) -> u64 {
    (dir & !0xff) | slot as u64
}

/// Text being generated: an allocation that fails is remembered (ENOMEM), never fatal.
struct Text {
    buf: Vec<u8>,
    oom: bool,
}

impl Text {
    fn new() -> Text {
        Text {
            buf: Vec::new(),
            oom: false,
        }
    }
    fn finish(self) -> SysResult<Vec<u8>> {
        if self.oom {
            Err(Errno::ENOMEM)
        } else {
            Ok(self.buf)
        }
    }
}

impl Write for Text {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.raw(s.as_bytes());
        Ok(())
    }
}

impl Sink for Text {
    fn raw(&mut self, bytes: &[u8]) {
        if self.oom || self.buf.try_reserve(bytes.len()).is_err() {
            self.oom = true;
            return;
        }
        self.buf.extend_from_slice(bytes);
    }
}

type PidGen = fn(Target, &mut Text) -> SysResult<()>;
type PidWrite = fn(Target, &[u8]) -> SysResult<usize>;

/// A generated per-process file. The text is made at a read from position 0 (or the first
/// read), as Linux's seq files make it; a process that has gone by then is ESRCH.
struct PidFile {
    ino: u64,
    target: Target,
    gen: PidGen,
    write: Option<PidWrite>,
    perm: u32,
    /// Only for those who may trace the process (PTRACE_MODE_READ): environ, auxv, maps.
    private: bool,
}

impl Inode for PidFile {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::File
    }
    fn perm(&self) -> u32 {
        self.perm
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<usize> {
        let mut t = Text::new();
        (self.gen)(self.target, &mut t)?;
        let text = t.finish()?;
        Ok(copy_from(&text, off, buf))
    }
    fn open(&self, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        if self.private {
            let p = self.target.process()?;
            if !crate::ptrace::may_access(&p) {
                return Err(Errno::EACCES);
            }
        }
        Ok(Some(Arc::new(PidOps {
            target: self.target,
            gen: self.gen,
            write: self.write,
            text: Mutex::new(None),
        })))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn copy_from(text: &[u8], off: u64, buf: &mut [u8]) -> usize {
    let off = usize::try_from(off).unwrap_or(usize::MAX).min(text.len());
    let n = buf.len().min(text.len() - off);
    buf[..n].copy_from_slice(&text[off..off + n]);
    n
}

struct PidOps {
    target: Target,
    gen: PidGen,
    write: Option<PidWrite>,
    text: Mutex<Option<Vec<u8>>>,
}

impl FileOps for PidOps {
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        let n = self.pread(file, buf, *pos)?;
        *pos += n as u64;
        Ok(n)
    }
    fn pread(&self, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let mut text = self.text.lock();
        if off == 0 || text.is_none() {
            let mut t = Text::new();
            (self.gen)(self.target, &mut t)?;
            *text = Some(t.finish()?);
        }
        Ok(copy_from(text.as_deref().unwrap_or_default(), off, buf))
    }
    fn write(&self, _file: &File, buf: &[u8]) -> SysResult<usize> {
        let write = self.write.ok_or(Errno::EINVAL)?;
        write(self.target, buf)
    }
    fn pwrite(&self, file: &File, buf: &[u8], _off: u64) -> SysResult<usize> {
        self.write(file, buf)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[derive(Clone, Copy, Debug)]
enum LinkTo {
    Cwd,
    Exe,
    Root,
    Fd(i32),
}

/// cwd, exe, root and fd/N: symlinks whose targets are the process's (Linux's are magic
/// links that open the object itself; here they are followed by name).
struct PidLink {
    ino: u64,
    target: Target,
    to: LinkTo,
}

impl Inode for PidLink {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Symlink
    }
    fn perm(&self) -> u32 {
        0o777
    }
    fn readlink(&self) -> SysResult<String> {
        let t = self.target.task().map_err(|_| Errno::ENOENT)?;
        match self.to {
            LinkTo::Cwd => Ok(t.fs().lock().cwd.clone()),
            LinkTo::Root => Ok("/".to_string()),
            LinkTo::Exe => {
                let exe = t.process().exe.lock().clone();
                if exe.is_empty() {
                    return Err(Errno::ENOENT);
                }
                Ok(exe)
            }
            LinkTo::Fd(fd) => {
                let f = t.files().lock().get(fd).map_err(|_| Errno::ENOENT)?;
                Ok(fd_name(&f))
            }
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The inode number fstat reports for a file without a node (stat.rs makes it the same way).
fn anon_ino(f: &File) -> u64 {
    Arc::as_ptr(&f.ops) as *const u8 as u64 & 0xffff_ffff
}

/// What /proc/PID/fd/N reads as: the path, or `pipe:[ino]` and `anon_inode:[kind]`.
fn fd_name(f: &File) -> String {
    if f.node.is_none() && f.path == "pipe:" {
        format!("pipe:[{}]", anon_ino(f))
    } else if let Ok(s) = crate::net::unix::of(f) {
        format!("socket:[{}]", s.ino)
    } else {
        f.path.clone()
    }
}

#[derive(Clone, Copy)]
enum Entry {
    Gen(PidGen, u32, bool),
    Comm,
    Link(LinkTo),
    Fd,
    FdInfo,
    Mem,
    Task,
}

/// The entries of /proc/PID (task/TID has all but `task`): name, what it is.
const PID_ENTRIES: [(&str, Entry); 20] = [
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
    ("maps", Entry::Gen(maps, 0o444, true)),
    ("mem", Entry::Mem),
    ("mountinfo", Entry::Gen(mountinfo, 0o444, false)),
    (
        "mounts",
        Entry::Gen(|_, out| write_str(out, &mounts(None)), 0o444, false),
    ),
    ("root", Entry::Link(LinkTo::Root)),
    ("smaps", Entry::Gen(smaps, 0o444, true)),
    ("stat", Entry::Gen(stat, 0o444, false)),
    ("statm", Entry::Gen(statm, 0o444, false)),
    ("status", Entry::Gen(status, 0o444, false)),
    ("task", Entry::Task),
];

fn write_str(out: &mut Text, s: &str) -> SysResult<()> {
    out.raw(s.as_bytes());
    Ok(())
}

/// /proc/<pid>, or /proc/<pid>/task/<tid> (`tid` set).
struct PidDir {
    ino: u64,
    target: Target,
}

impl PidDir {
    fn new(pid: u32, tid: Option<u32>) -> Arc<PidDir> {
        Arc::new(PidDir {
            ino: dir_ino(tid.unwrap_or(pid), tid.is_some()),
            target: Target { pid, tid, fd: -1 },
        })
    }

    fn entries_here(&self) -> impl Iterator<Item = (usize, &'static (&'static str, Entry))> {
        let thread = self.target.tid.is_some();
        PID_ENTRIES
            .iter()
            .enumerate()
            .filter(move |(_, (_, e))| !(thread && matches!(e, Entry::Task)))
    }
}

impl Inode for PidDir {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Dir
    }
    fn perm(&self) -> u32 {
        0o555
    }
    fn lookup(&self, name: &str) -> SysResult<Arc<dyn Inode>> {
        let (slot, (_, entry)) = self
            .entries_here()
            .find(|(_, (n, _))| *n == name)
            .ok_or(Errno::ENOENT)?;
        if self.target.task().is_err() && self.target.zombie().is_none() {
            return Err(Errno::ENOENT);
        }
        let ino = entry_ino(self.ino, slot);
        let target = self.target;
        Ok(match *entry {
            Entry::Gen(gen, perm, private) => Arc::new(PidFile {
                ino,
                target,
                gen,
                write: None,
                perm,
                private,
            }),
            Entry::Comm => Arc::new(PidFile {
                ino,
                target,
                gen: comm,
                write: Some(comm_write),
                perm: 0o644,
                private: false,
            }),
            Entry::Link(to) => Arc::new(PidLink { ino, target, to }),
            Entry::Fd | Entry::FdInfo => Arc::new(FdDir {
                ino,
                target,
                info: matches!(entry, Entry::FdInfo),
            }),
            Entry::Mem => Arc::new(MemFile {
                ino,
                pid: target.pid,
            }),
            Entry::Task => Arc::new(TaskDir {
                ino,
                pid: target.pid,
            }),
        })
    }
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
        let mut v = Vec::new();
        v.try_reserve(PID_ENTRIES.len())
            .map_err(|_| Errno::ENOMEM)?;
        for (slot, (name, e)) in self.entries_here() {
            let kind = match e {
                Entry::Link(_) => Kind::Symlink,
                Entry::Fd | Entry::FdInfo | Entry::Task => Kind::Dir,
                _ => Kind::File,
            };
            v.push((name.to_string(), entry_ino(self.ino, slot), kind));
        }
        Ok(v)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// /proc/<pid>/task: a directory per thread.
struct TaskDir {
    ino: u64,
    pid: u32,
}

impl Inode for TaskDir {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Dir
    }
    fn perm(&self) -> u32 {
        0o555
    }
    fn lookup(&self, name: &str) -> SysResult<Arc<dyn Inode>> {
        let tid: u32 = name.parse().map_err(|_| Errno::ENOENT)?;
        task::find_task(tid)
            .filter(|t| t.pid() == self.pid)
            .ok_or(Errno::ENOENT)?;
        Ok(PidDir::new(self.pid, Some(tid)))
    }
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
        let p = task::find_process(self.pid).ok_or(Errno::ENOENT)?;
        let mut v = Vec::new();
        for t in p.live_threads() {
            v.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            v.push((format!("{}", t.tid), dir_ino(t.tid, true), Kind::Dir));
        }
        Ok(v)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// /proc/<pid>/fd (links) and /proc/<pid>/fdinfo (files).
struct FdDir {
    ino: u64,
    target: Target,
    info: bool,
}

impl FdDir {
    fn child_ino(&self, fd: usize) -> u64 {
        (2 << 40) | (u64::from(self.info) << 39) | (u64::from(self.target.pid) << 20) | fd as u64
    }
}

impl Inode for FdDir {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Dir
    }
    fn perm(&self) -> u32 {
        if self.info {
            0o555
        } else {
            0o500
        }
    }
    fn lookup(&self, name: &str) -> SysResult<Arc<dyn Inode>> {
        let fd: i32 = name.parse().map_err(|_| Errno::ENOENT)?;
        if name.starts_with('+') || (name.starts_with('0') && name.len() > 1) {
            return Err(Errno::ENOENT);
        }
        let t = self.target.task().map_err(|_| Errno::ENOENT)?;
        t.files().lock().get(fd).map_err(|_| Errno::ENOENT)?;
        let ino = self.child_ino(fd as usize);
        let target = Target { fd, ..self.target };
        Ok(if self.info {
            Arc::new(PidFile {
                ino,
                target,
                gen: fdinfo,
                write: None,
                perm: 0o444,
                private: false,
            })
        } else {
            Arc::new(PidLink {
                ino,
                target,
                to: LinkTo::Fd(fd),
            })
        })
    }
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
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
    fn as_any(&self) -> &dyn Any {
        self
    }
}

// ---- what the per-process files say ---------------------------------------------------------

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
        flags |= svelt_abi::fs::O_CLOEXEC;
    }
    let ino = file
        .node
        .as_ref()
        .map_or_else(|| anon_ino(&file), |n| n.ino());
    let _ = write!(
        out,
        "pos:\t{pos}\nflags:\t0{flags:o}\nmnt_id:\t1\nino:\t{ino}\n"
    );
    Ok(())
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
fn comm_write(t: Target, buf: &[u8]) -> SysResult<usize> {
    let task = t.task()?;
    if task.pid() != task::current().pid() {
        return Err(Errno::EINVAL);
    }
    task.set_comm(&buf[..buf.len().min(procfs::TASK_COMM_LEN - 1)]);
    Ok(buf.len())
}

/// Reads `[start, end)` of another process's memory into `out` (what a fault leaves
/// unreadable ends it).
fn copy_user_area(
    mm: &crate::task::Mm,
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
        &crate::fpstate::format_counters(&crate::fpstate::process_counters(&p)),
    )
}

fn limits(t: Target, out: &mut Text) -> SysResult<()> {
    let l = *t.process()?.rlimits.lock();
    let _ = procfs::write_limits(out, &l);
    Ok(())
}

/// The state a task shows: stops first, then what the scheduler says.
fn task_state(p: &Process, t: &Task) -> TaskState {
    if t.traced.load(Ordering::Relaxed) && t.ptrace.lock().stop.is_some() {
        TaskState::TracingStop
    } else if p.stopped.load(Ordering::Relaxed) {
        TaskState::Stopped
    } else {
        match t.state() {
            task::State::Running | task::State::Runnable => TaskState::Running,
            task::State::Sleeping => TaskState::Sleeping,
            // Waiting for a core dump to finish, as Linux's uninterruptible wait shows.
            task::State::Parked => TaskState::DiskSleep,
            task::State::Dead => TaskState::Zombie,
        }
    }
}

/// The signals a thread's handlers ignore and catch.
fn sig_dispositions(t: &Task) -> (u64, u64) {
    let h = t.sighand();
    let h = h.lock();
    let (mut ign, mut catch) = (0u64, 0u64);
    for signo in 1..=svelt_abi::signal::NSIG {
        match h.get(signo).sa_handler {
            svelt_abi::signal::SIG_DFL => {}
            svelt_abi::signal::SIG_IGN => ign |= 1 << (signo - 1),
            _ => catch |= 1 << (signo - 1),
        }
    }
    (ign, catch)
}

/// What status, stat and statm say about an address space.
#[derive(Default)]
struct MmFigures {
    info: crate::mm::aspace::ExecInfo,
    total: usize,
    locked: usize,
    data: usize,
    stack: usize,
    exec_vm: usize,
    rss_anon: usize,
    rss_file: usize,
    rss_shmem: usize,
    brk_start: usize,
    arg_start: usize,
    arg_end: usize,
}

impl MmFigures {
    /// The figures; `split` walks the page tables to count resident pages by kind (without
    /// it they all count as anonymous, from the table's running count).
    fn of(mm: &crate::task::Mm, split: bool) -> MmFigures {
        use crate::mm::aspace::Backing;
        let g = mm.lock();
        let mut f = MmFigures {
            info: g.exec,
            total: g.total_vm(),
            locked: g.locked_vm(),
            data: g.data_vm(),
            brk_start: g.brk_start,
            arg_start: g.arg_start,
            arg_end: g.arg_end,
            ..Default::default()
        };
        if !split {
            f.rss_anon = g.resident_pages();
        }
        for v in g.vmas() {
            if split {
                let pages = g.resident_in(v.start, v.end);
                match v.backing {
                    Backing::Anon => f.rss_anon += pages,
                    Backing::Shared(..) => f.rss_shmem += pages,
                    Backing::File { .. } => f.rss_file += pages,
                }
            }
            if is_stack(v.start, v.end, &f.info) {
                f.stack += v.size();
            } else if v.prot.x() && !v.prot.w() {
                f.exec_vm += v.size();
            }
        }
        f
    }
    fn rss_pages(&self) -> usize {
        self.rss_anon + self.rss_file + self.rss_shmem
    }
    /// Text (the program's code) and the rest of the executable memory.
    fn text_lib(&self) -> (usize, usize) {
        let code = self.info.end_code.next_multiple_of(PAGE) - (self.info.start_code & !(PAGE - 1));
        let text = code.min(self.exec_vm);
        (text, self.exec_vm - text)
    }
}

const PAGE: usize = crate::arch::mmu::PAGE_SIZE;

fn is_stack(start: usize, end: usize, info: &crate::mm::aspace::ExecInfo) -> bool {
    if info.start_stack != 0 {
        start <= info.start_stack && end >= info.start_stack
    } else {
        end == crate::mm::aspace::STACK_TOP
    }
}

fn stat(t: Target, out: &mut Text) -> SysResult<()> {
    let p = t.process()?;
    let th = match t.task() {
        Ok(th) => th,
        Err(_) if t.zombie().is_some() => return zombie_stat(&p, out),
        Err(e) => return Err(e),
    };
    let comm = th.comm();
    let state = task_state(&p, &th);
    let mm = th.mm().map(|m| MmFigures::of(&m, false));
    let (pending, blocked) = {
        let s = th.sig.lock();
        (s.pending_mask(), s.blocked)
    };
    let (ign, catch) = sig_dispositions(&th);
    let threads = p.live_threads().len();
    let leader = th.tid == p.pid;
    let exit_signal = if leader {
        p.exit_signal.load(Ordering::Relaxed) as i32
    } else {
        -1
    };
    let m = mm.as_ref();
    let info = m.map(|m| m.info).unwrap_or_default();
    let s = TaskStat {
        pid: t.tid.unwrap_or(p.pid),
        comm: procfs::comm_str(&comm),
        state: state.letter(),
        ppid: p.ppid() as i32,
        pgrp: p.pgid.load(Ordering::Relaxed) as i32,
        session: p.sid.load(Ordering::Relaxed) as i32,
        tty_nr: 0,
        tpgid: -1,
        priority: 20 + i64::from(th.nice.load(Ordering::Relaxed)),
        nice: i64::from(th.nice.load(Ordering::Relaxed)),
        num_threads: threads as i64,
        starttime: procfs::ns_to_clock_t(th.start_ns),
        vsize: m.map_or(0, |m| m.total as u64),
        rss: m.map_or(0, |m| m.rss_pages() as u64),
        rsslim: p.rlimit(svelt_abi::sys::RLIMIT_RSS),
        startcode: info.start_code as u64,
        endcode: info.end_code as u64,
        startstack: info.start_stack as u64,
        signal: pending,
        blocked,
        sigignore: ign,
        sigcatch: catch,
        wchan: u64::from(state == TaskState::Sleeping && (t.tid.is_some() || threads < 2)),
        exit_signal,
        processor: th.cpu.load(Ordering::Relaxed) as i32,
        start_data: info.start_data as u64,
        end_data: info.end_data as u64,
        start_brk: m.map_or(0, |m| m.brk_start as u64),
        arg_start: m.map_or(0, |m| m.arg_start as u64),
        arg_end: m.map_or(0, |m| m.arg_end as u64),
        env_start: info.env_start as u64,
        env_end: info.env_end as u64,
        ..Default::default()
    };
    let _ = s.write(out);
    Ok(())
}

/// A zombie's stat: its name, state Z, its family and exit signal; no memory, no signals.
fn zombie_stat(p: &Process, out: &mut Text) -> SysResult<()> {
    let comm = *p.zombie_comm.lock();
    let s = TaskStat {
        pid: p.pid,
        comm: procfs::comm_str(&comm),
        state: TaskState::Zombie.letter(),
        ppid: p.ppid() as i32,
        pgrp: p.pgid.load(Ordering::Relaxed) as i32,
        session: p.sid.load(Ordering::Relaxed) as i32,
        tty_nr: 0,
        tpgid: -1,
        priority: 20,
        num_threads: 1,
        rsslim: p.rlimit(svelt_abi::sys::RLIMIT_RSS),
        exit_signal: p.exit_signal.load(Ordering::Relaxed) as i32,
        ..Default::default()
    };
    let _ = s.write(out);
    Ok(())
}

fn statm(t: Target, out: &mut Text) -> SysResult<()> {
    let th = t.task()?;
    let Some(m) = th.mm().map(|m| MmFigures::of(&m, true)) else {
        return write_str(out, "0 0 0 0 0 0 0\n");
    };
    let code = m.info.end_code.next_multiple_of(PAGE) - (m.info.start_code & !(PAGE - 1));
    let _ = writeln!(
        out,
        "{} {} {} {} 0 {} 0",
        m.total / PAGE,
        m.rss_pages(),
        m.rss_file + m.rss_shmem,
        code / PAGE,
        (m.data + m.stack) / PAGE
    );
    Ok(())
}

/// All capabilities of Linux 7.3 (CAP_LAST_CAP 40): what uid 0 holds.
const CAP_FULL: u64 = (1 << 41) - 1;

fn status(t: Target, out: &mut Text) -> SysResult<()> {
    let p = t.process()?;
    let th = match t.task() {
        Ok(th) => th,
        Err(_) if t.zombie().is_some() => return zombie_status(&p, out),
        Err(e) => return Err(e),
    };
    let comm = th.comm();
    let threads = p.live_threads();
    let (blocked, pending) = {
        let s = th.sig.lock();
        (s.blocked, s.pending_mask())
    };
    let shared = p.shared_sig.lock().pending_mask();
    let (ign, catch) = sig_dispositions(&th);
    let kb = |b: usize| (b / 1024) as u64;
    let mem = th.mm().map(|m| {
        let f = MmFigures::of(&m, true);
        let (text, lib) = f.text_lib();
        let rss = kb(f.rss_pages() * PAGE);
        StatusMem {
            peak: kb(f.total),
            size: kb(f.total),
            lck: kb(f.locked),
            hwm: rss,
            rss,
            rss_anon: kb(f.rss_anon * PAGE),
            rss_file: kb(f.rss_file * PAGE),
            rss_shmem: kb(f.rss_shmem * PAGE),
            data: kb(f.data),
            stk: kb(f.stack),
            exe: kb(text),
            lib: kb(lib),
            ..Default::default()
        }
    });
    let euid = p.euid.load(Ordering::Relaxed);
    let caps = if euid == 0 { CAP_FULL } else { 0 };
    let sc = &th.seccomp;
    let files = th.files();
    let fd_size = files.lock().capacity() as u32;
    let s = TaskStatus {
        comm: procfs::comm_str(&comm),
        umask: th.fs().lock().umask,
        state: Some(task_state(&p, &th)),
        tgid: p.pid,
        pid: th.tid,
        ppid: p.ppid(),
        tracer_pid: crate::ptrace::tracer_pid(&th),
        uid: [
            p.uid.load(Ordering::Relaxed),
            euid,
            p.suid.load(Ordering::Relaxed),
            euid,
        ],
        gid: [0; 4],
        fd_size,
        pgid: p.pgid.load(Ordering::Relaxed),
        sid: p.sid.load(Ordering::Relaxed),
        mem,
        core_dumping: p.core_state.lock().is_some(),
        threads: threads.len() as u32,
        sigq: (
            u64::from((pending | shared).count_ones()),
            p.rlimit(svelt_abi::sys::RLIMIT_SIGPENDING),
        ),
        sig_pending: pending,
        shared_pending: shared,
        blocked,
        ignored: ign,
        caught: catch,
        cap_prm: caps,
        cap_eff: caps,
        cap_bnd: CAP_FULL,
        no_new_privs: sc.no_new_privs.load(Ordering::Relaxed),
        seccomp: u32::from(sc.mode.load(Ordering::Relaxed).min(2)),
        seccomp_filters: sc.filter_count() as u32,
        cpus_allowed: th.affinity.load(),
        nr_cpu_ids: crate::percpu::possible() as u32,
        ..Default::default()
    };
    let _ = s.write(out);
    Ok(())
}

/// A zombie's status: name, state, ids and limits; no memory, files or signal lines' sources.
fn zombie_status(p: &Process, out: &mut Text) -> SysResult<()> {
    let comm = *p.zombie_comm.lock();
    let euid = p.euid.load(Ordering::Relaxed);
    let s = TaskStatus {
        comm: procfs::comm_str(&comm),
        state: Some(TaskState::Zombie),
        tgid: p.pid,
        pid: p.pid,
        ppid: p.ppid(),
        uid: [
            p.uid.load(Ordering::Relaxed),
            euid,
            p.suid.load(Ordering::Relaxed),
            euid,
        ],
        pgid: p.pgid.load(Ordering::Relaxed),
        sid: p.sid.load(Ordering::Relaxed),
        threads: 1,
        sigq: (0, p.rlimit(svelt_abi::sys::RLIMIT_SIGPENDING)),
        cap_bnd: CAP_FULL,
        nr_cpu_ids: crate::percpu::possible() as u32,
        ..Default::default()
    };
    let _ = s.write(out);
    Ok(())
}

/// One maps line's worth of a VMA: the VMA is cut where the executable's file bytes and the
/// heap begin and end, as Linux has them in separate mappings.
struct Piece {
    start: usize,
    end: usize,
    /// The executable's file offset at `start`, for its pages.
    image: Option<u64>,
}

fn pieces(
    start: usize,
    end: usize,
    info: &crate::mm::aspace::ExecInfo,
    brk_start: usize,
) -> impl Iterator<Item = Piece> + '_ {
    let mut cuts = [0usize; 2 * crate::mm::aspace::ExecInfo::MAX_IMAGE + 1];
    let mut n = 0;
    for r in info.image() {
        for c in [r.start, r.end] {
            if c > start && c < end {
                cuts[n] = c;
                n += 1;
            }
        }
    }
    if brk_start > start && brk_start < end {
        cuts[n] = brk_start;
        n += 1;
    }
    cuts[..n].sort_unstable();
    let mut bounds = [0usize; 2 * crate::mm::aspace::ExecInfo::MAX_IMAGE + 3];
    bounds[0] = start;
    bounds[1..=n].copy_from_slice(&cuts[..n]);
    bounds[n + 1] = end;
    (0..=n).filter_map(move |i| {
        let (s, e) = (bounds[i], bounds[i + 1]);
        (s < e).then(|| Piece {
            start: s,
            end: e,
            image: info
                .image()
                .iter()
                .find(|r| r.start <= s && e <= r.end)
                .map(|r| r.offset + (s - r.start) as u64),
        })
    })
}

fn maps(t: Target, out: &mut Text) -> SysResult<()> {
    write_maps(t, out, false)
}

fn smaps(t: Target, out: &mut Text) -> SysResult<()> {
    write_maps(t, out, true)
}

fn write_maps(t: Target, out: &mut Text, smaps: bool) -> SysResult<()> {
    use crate::mm::aspace::Backing;
    let th = t.task()?;
    let Some(mm) = th.mm() else {
        return Ok(());
    };
    let exe = th.process().exe.lock().clone();
    let g = mm.lock();
    let info = g.exec;
    let heap_end = g.brk.next_multiple_of(PAGE);
    for v in g.vmas() {
        for piece in pieces(v.start, v.end, &info, g.brk_start) {
            let mut line = MapsLine {
                start: piece.start as u64,
                end: piece.end as u64,
                read: v.prot.r(),
                write: v.prot.w(),
                exec: v.prot.x(),
                shared: v.backing.is_shared(),
                ..Default::default()
            };
            let special = crate::vdso::vma_name(v);
            let name: &[u8] = match (&v.backing, piece.image) {
                _ if special.is_some() => special.unwrap_or_default(),
                (_, Some(off)) => {
                    line.offset = off;
                    (line.major, line.minor) = procfs::dev_split(1);
                    line.ino = info.exe_ino;
                    exe.as_bytes()
                }
                (Backing::File { node, off, .. }, _) => {
                    line.offset = off + (piece.start - v.start) as u64;
                    (line.major, line.minor) = procfs::dev_split(1);
                    line.ino = node.file_ino();
                    b""
                }
                (Backing::Shared(_, off), _) => {
                    line.offset = (off + (piece.start - v.start)) as u64;
                    (line.major, line.minor) = procfs::dev_split(1);
                    b"/dev/zero (deleted)"
                }
                _ if is_stack(piece.start, piece.end, &info) => b"[stack]",
                _ if g.brk > g.brk_start
                    && piece.start >= g.brk_start
                    && piece.start < heap_end =>
                {
                    b"[heap]"
                }
                _ => b"",
            };
            let _ = line.write(out, name);
            if smaps {
                let kb = |pages: usize| (pages * PAGE / 1024) as u64;
                let rss = kb(g.resident_in(piece.start, piece.end));
                let shared = v.backing.is_shared();
                let anon = matches!(v.backing, Backing::Anon);
                let f = SmapsFields {
                    size: ((piece.end - piece.start) / 1024) as u64,
                    rss,
                    shared_dirty: if shared { rss } else { 0 },
                    private_dirty: if !shared && v.prot.w() { rss } else { 0 },
                    private_clean: if !shared && !v.prot.w() { rss } else { 0 },
                    anonymous: if anon { rss } else { 0 },
                    locked: if v.locked { rss } else { 0 },
                    ..Default::default()
                };
                let _ = f.write(
                    out,
                    VmFlags {
                        read: v.prot.r(),
                        write: v.prot.w(),
                        exec: v.prot.x(),
                        shared,
                        may_write: !shared || v.prot.w(),
                        stack: is_stack(piece.start, piece.end, &info),
                        locked: v.locked,
                    },
                );
            }
        }
    }
    Ok(())
}

/// The mounts every Svelt system has, before those a program made: (point, type).
const BASE_MOUNTS: [(&str, &str); 4] = [
    ("/", "rootfs"),
    ("/proc", "proc"),
    ("/sys", "sysfs"),
    ("/dev", "devtmpfs"),
];

fn mountinfo(_t: Target, out: &mut Text) -> SysResult<()> {
    // Mount points by ID (1-based), to find each one's parent: the deepest one containing it.
    let mut points: Vec<String> = Vec::new();
    let parent_of = |points: &[String], path: &str| -> u32 {
        let mut best = (0usize, 1u32);
        for (i, p) in points.iter().enumerate() {
            let inside = p == "/" || path == p || path.starts_with(&format!("{p}/"));
            if inside && p != path && p.len() >= best.0 {
                best = (p.len(), i as u32 + 1);
            }
        }
        best.1
    };
    let (major, minor) = procfs::dev_split(1);
    for (path, fstype) in BASE_MOUNTS {
        let id = points.len() as u32 + 1;
        let _ = MountInfo {
            id,
            parent: if id == 1 { 1 } else { parent_of(&points, path) },
            major,
            minor,
            root: "/",
            mount_point: path,
            mount_opts: "rw,relatime",
            fstype,
            source: fstype,
            super_opts: "rw",
        }
        .write(out);
        points.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        points.push(path.to_string());
    }
    let mut err = Ok(());
    super::for_each_mount(|path, source, fstype, flags, opts| {
        let id = points.len() as u32 + 1;
        let mut mflags = String::new();
        let _ = svelt_abi::mount::write_mount_flags(&mut mflags, flags);
        // The superblock's options: rw or ro, then the file system's own.
        let fs_opts = opts.strip_prefix(mflags.as_str()).unwrap_or("");
        let ro = if flags & svelt_abi::mount::MS_RDONLY != 0 {
            "ro"
        } else {
            "rw"
        };
        let _ = MountInfo {
            id,
            parent: parent_of(&points, path),
            major,
            minor,
            root: "/",
            mount_point: path,
            mount_opts: &mflags,
            fstype,
            source,
            super_opts: &format!("{ro}{fs_opts}"),
        }
        .write(out);
        if points.try_reserve(1).is_err() {
            err = Err(Errno::ENOMEM);
            return;
        }
        points.push(path.to_string());
    });
    err
}

fn cpuinfo(_: Option<u32>) -> String {
    let features: Vec<&str> = crate::cpufeature::hwcaps().names().collect();
    let midr = crate::cpufeature::midr();
    let freq = crate::arch::cpu::counter_freq();
    let mut s = String::new();
    for c in crate::percpu::all()
        .iter()
        .filter(|c| c.online.load(Ordering::Acquire))
    {
        let _ = write!(
            s,
            "processor\t: {}\nBogoMIPS\t: {}.{:02}\nFeatures\t: {}\nCPU implementer\t: {:#04x}\n\
             CPU architecture: 8\nCPU variant\t: {:#x}\nCPU part\t: {:#05x}\nCPU revision\t: {}\n\n",
            c.id,
            freq * 2 / 1_000_000,
            (freq * 2 / 10_000) % 100,
            features.join(" "),
            (midr >> 24) & 0xff,
            (midr >> 20) & 0xf,
            (midr >> 4) & 0xfff,
            midr & 0xf
        );
    }
    s
}

fn int_read(v: &core::sync::atomic::AtomicUsize) -> String {
    format!("{}\n", v.load(Ordering::Relaxed))
}

/// A write to an int sysctl in `[min, max]` (`proc_dointvec_minmax`): the bytes consumed.
fn int_write(
    v: &core::sync::atomic::AtomicUsize,
    text: &[u8],
    min: i32,
    max: i32,
) -> SysResult<usize> {
    let (n, used) = sysctl::dointvec_minmax(text, min, max)?;
    // In range, so not negative when min is not.
    v.store(
        usize::try_from(n).map_err(|_| Errno::EINVAL)?,
        Ordering::Relaxed,
    );
    Ok(used)
}

fn meminfo(_: Option<u32>) -> String {
    use crate::mm::frame::{self, ANON_PAGES, CACHE_PAGES, HEAP_LARGE_PAGES, KSTACK_PAGES};
    use crate::mm::frame::{SLAB_PAGES, TABLE_PAGES};
    use core::sync::atomic::Ordering::Relaxed;
    let kb = |pages: usize| (pages * (crate::arch::mmu::PAGE_SIZE / 1024)) as u64;
    let total = kb(frame::total());
    let free = kb(frame::free_count());
    let cached = kb(CACHE_PAGES.load(Relaxed));
    let slab = kb(SLAB_PAGES.load(Relaxed) + HEAP_LARGE_PAGES.load(Relaxed));
    let anon = kb(ANON_PAGES.load(Relaxed));
    let tables = kb(TABLE_PAGES.load(Relaxed));
    let kstack = kb(KSTACK_PAGES.load(Relaxed));
    // File pages live in RAM only (as tmpfs's do): they are shared memory, swap-backed and
    // not reclaimable, so what is available is what is free. No swap, no huge pages.
    let lines: [(&str, u64); 42] = [
        ("MemTotal", total),
        ("MemFree", free),
        ("MemAvailable", free),
        ("Buffers", 0),
        ("Cached", cached),
        ("SwapCached", 0),
        ("Active", anon + cached),
        ("Inactive", 0),
        ("Active(anon)", anon + cached),
        ("Inactive(anon)", 0),
        ("Active(file)", 0),
        ("Inactive(file)", 0),
        ("Unevictable", 0),
        ("Mlocked", 0),
        ("SwapTotal", 0),
        ("SwapFree", 0),
        ("Zswap", 0),
        ("Zswapped", 0),
        ("Dirty", 0),
        ("Writeback", 0),
        ("AnonPages", anon),
        ("Mapped", 0),
        ("Shmem", cached),
        ("KReclaimable", 0),
        ("Slab", slab),
        ("SReclaimable", 0),
        ("SUnreclaim", slab),
        ("KernelStack", kstack),
        ("PageTables", tables),
        ("SecPageTables", 0),
        ("NFS_Unstable", 0),
        ("Bounce", 0),
        ("WritebackTmp", 0),
        ("CommitLimit", total / 2),
        ("Committed_AS", anon + cached),
        ("VmallocTotal", 0),
        ("VmallocUsed", 0),
        ("VmallocChunk", 0),
        ("Percpu", 0),
        ("AnonHugePages", 0),
        ("ShmemHugePages", 0),
        ("ShmemPmdMapped", 0),
    ];
    let mut out = String::new();
    for (name, v) in lines {
        let _ = procfs::write_meminfo_line(&mut out, name, v);
    }
    let _ = procfs::write_meminfo_line(&mut out, "FileHugePages", 0);
    let _ = procfs::write_meminfo_line(&mut out, "FilePmdMapped", 0);
    out.push_str(
        "HugePages_Total:       0\nHugePages_Free:        0\nHugePages_Rsvd:        0\nHugePages_Surp:        0\n",
    );
    let _ = procfs::write_meminfo_line(&mut out, "Hugepagesize", 2048);
    let _ = procfs::write_meminfo_line(&mut out, "Hugetlb", 0);
    out
}

/// Svelt's own memory figures (the kernel heap), apart from Linux's meminfo.
fn svelt_meminfo(_: Option<u32>) -> String {
    let used = crate::mm::heap::IN_USE.load(Ordering::Relaxed) / 1024;
    let mut out = String::new();
    let _ = procfs::write_meminfo_line(&mut out, "HeapInUse", used as u64);
    out
}

fn uptime(_: Option<u32>) -> String {
    // Idle time is not counted: 0.
    let mut s = String::new();
    let _ = procfs::write_uptime(&mut s, crate::time::now_ns(), 0);
    s
}

/// Threads running or waiting to run (loadavg's and /proc/stat's count).
fn runnable_threads() -> u64 {
    let mut running = 0;
    for p in task::all_processes() {
        running += p
            .live_threads()
            .iter()
            .filter(|t| {
                !t.is_idle() && matches!(t.state(), task::State::Running | task::State::Runnable)
            })
            .count() as u64;
    }
    running
}

fn loadavg(_: Option<u32>) -> String {
    // No load average is kept; the task counts are real (runnable/total, last pid).
    let mut s = String::new();
    let _ = procfs::write_loadavg(
        &mut s,
        [0; 3],
        runnable_threads(),
        task::NR_THREADS.load(Ordering::Relaxed) as u64,
        task::last_pid(),
    );
    s
}

/// /proc/stat: Linux's lines. CPU times are 0 (no accounting is kept); the boot time, context
/// switches, processes created and the runnable count are real.
fn kernel_stat(_: Option<u32>) -> String {
    let mut s = String::new();
    let zeros = " 0 0 0 0 0 0 0 0 0 0";
    s.push_str("cpu ");
    s.push_str(zeros);
    s.push('\n');
    for cpu in crate::percpu::online_mask().iter() {
        s.push_str(&format!("cpu{cpu}{zeros}\n"));
    }
    let now = crate::time::now_ns();
    let btime = crate::time::realtime_ns().saturating_sub(now) / 1_000_000_000;
    s.push_str(&format!(
        "intr 0\nctxt {}\nbtime {btime}\nprocesses {}\nprocs_running {}\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
        task::sched::SWITCHES.load(Ordering::Relaxed),
        task::last_pid(),
        runnable_threads().max(1),
    ));
    s
}

/// The kernel command line, kept at boot for /proc/cmdline.
static CMDLINE: spin::Once<String> = spin::Once::new();

/// Records the kernel command line (once, after the heap is up).
pub fn set_kernel_cmdline(raw: &str) {
    CMDLINE.call_once(|| raw.to_string());
}

/// /proc/cmdline: the command line the kernel booted with, as Linux prints it.
fn kernel_cmdline(_: Option<u32>) -> String {
    format!("{}\n", CMDLINE.get().map_or("", |s| s.as_str()))
}

fn version(_: Option<u32>) -> String {
    format!("Linux version {} (svelt) #1 SMP\n", crate::uts::RELEASE)
}

fn mounts(_: Option<u32>) -> String {
    "rootfs / rootfs rw 0 0\nproc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\ndevtmpfs /dev devtmpfs rw 0 0\n".to_string()
        + &super::mounts_text()
}
