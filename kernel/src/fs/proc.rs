//! /proc: generated files. Each file's text is produced when it is opened (a snapshot, as
//! Linux's seq files behave for small files) and read from that snapshot; the integer files of
//! /proc/sys instead format and parse their value on every read and write at position 0, as
//! Linux's sysctls do (`SysctlFile`).

use super::ramfs::RamDir;
use super::{new_ino, File, FileOps, Inode, Kind};
use crate::task;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::fmt::Write;
use core::sync::atomic::Ordering;
use svelt_abi::errno::{Errno, SysResult};
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
    fn for_pid(pid: u32, gen: Gen) -> Arc<GenFile> {
        Arc::new(GenFile {
            ino: new_ino(),
            pid: Some(pid),
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
            d.replace("kernel", kernel);
            let vm = RamDir::new(0o555);
            vm.replace(
                "max_map_count",
                SysctlFile::new(
                    || int_read(&crate::mm::aspace::MAX_MAP_COUNT),
                    Some(|t| int_write(&crate::mm::aspace::MAX_MAP_COUNT, t, 0, i32::MAX as usize)),
                ),
            );
            d.replace("vm", vm);
            let fsd = RamDir::new(0o555);
            fsd.replace(
                "pipe-max-size",
                SysctlFile::new(
                    || int_read(&super::pipe::PIPE_MAX_SIZE),
                    Some(|t| {
                        // Stored rounded as a pipe's size would be (Linux does the same).
                        let v = parse_int(t)?;
                        let r = super::pipe::round_size(v).ok_or(Errno::EINVAL)?;
                        super::pipe::PIPE_MAX_SIZE.store(r, Ordering::Relaxed);
                        Ok(t.len())
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
        fixed.replace(
            "loadavg",
            GenFile::new(|_| {
                // No load average is kept; the task counts are real (running/total, last pid).
                format!(
                    "0.00 0.00 0.00 1/{} {}\n",
                    task::NR_THREADS.load(Ordering::Relaxed),
                    task::last_pid()
                )
            }),
        );
        fixed.replace("version", GenFile::new(version));
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
            GenFile::new(|_| crate::fpstate::format_counters(&crate::fpstate::TOTALS)),
        );
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
        let pid: u32 = name.parse().map_err(|_| Errno::ENOENT)?;
        task::find_process(pid).ok_or(Errno::ENOENT)?;
        Ok(PidDir::new(pid))
    }
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
        let mut v = self.fixed.entries()?;
        for p in task::all_processes() {
            if p.pid != 0 {
                v.push((format!("{}", p.pid), 0x1000_0000 + p.pid as u64, Kind::Dir));
            }
        }
        Ok(v)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// /proc/<pid>.
struct PidDir {
    ino: u64,
    pid: u32,
}

impl PidDir {
    fn new(pid: u32) -> Arc<PidDir> {
        Arc::new(PidDir {
            ino: 0x1000_0000 + pid as u64,
            pid,
        })
    }
}

const PID_ENTRIES: [&str; 7] = ["exe", "status", "cmdline", "stat", "fpstat", "maps", "mem"];

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
        Ok(match name {
            "exe" => Arc::new(DynLink {
                ino: new_ino(),
                pid: Some(self.pid),
                target: |pid| {
                    let p = task::find_process(pid.unwrap_or(0)).ok_or(Errno::ENOENT)?;
                    let exe = p.exe.lock().clone();
                    Ok(exe)
                },
            }),
            "status" => GenFile::for_pid(self.pid, status),
            "cmdline" => GenFile::for_pid(self.pid, |_| String::new()),
            "stat" => GenFile::for_pid(self.pid, stat),
            "maps" => GenFile::for_pid(self.pid, maps),
            "mem" => Arc::new(MemFile {
                ino: self.ino * 16 + 6,
                pid: self.pid,
            }),
            "fpstat" => GenFile::for_pid(self.pid, |pid| {
                task::find_process(pid.unwrap_or(0))
                    .map(|p| crate::fpstate::format_counters(&p.fpstat))
                    .unwrap_or_default()
            }),
            _ => return Err(Errno::ENOENT),
        })
    }
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
        Ok(PID_ENTRIES
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (
                    n.to_string(),
                    self.ino * 16 + i as u64,
                    if *n == "exe" {
                        Kind::Symlink
                    } else {
                        Kind::File
                    },
                )
            })
            .collect())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// /proc/<pid>/maps in Linux's format (file mappings without their path: the mapping keeps
/// the inode, not the name).
fn maps(pid: Option<u32>) -> String {
    use crate::mm::aspace::{Backing, SIGPAGE, STACK_TOP};
    let Some(mm) = pid
        .and_then(task::find_process)
        .and_then(|p| p.live_threads().first().and_then(|t| t.mm()))
    else {
        return String::new();
    };
    let mm = mm.lock();
    let mut s = String::new();
    for v in mm.vmas() {
        let (off, ino, shared) = match &v.backing {
            Backing::Anon => (0, 0, false),
            Backing::Shared(_, o) => (*o as u64, 0, true),
            Backing::File {
                node, off, shared, ..
            } => (*off, node.file_ino(), *shared),
        };
        let name = if v.end == STACK_TOP {
            "[stack]"
        } else if v.start == SIGPAGE {
            "[sigpage]"
        } else if v.start >= mm.brk_start
            && v.end <= mm.brk.next_multiple_of(4096)
            && v.start < v.end
            && mm.brk > mm.brk_start
        {
            "[heap]"
        } else {
            ""
        };
        let line = format!(
            "{:08x}-{:08x} {}{}{}{} {:08x} 00:{:02x} {}",
            v.start,
            v.end,
            if v.prot.r() { 'r' } else { '-' },
            if v.prot.w() { 'w' } else { '-' },
            if v.prot.x() { 'x' } else { '-' },
            if shared { 's' } else { 'p' },
            off,
            if ino != 0 { 1 } else { 0 },
            ino
        );
        if name.is_empty() {
            let _ = writeln!(s, "{line}");
        } else {
            let _ = writeln!(s, "{line:<72} {name}");
        }
    }
    s
}

fn comm(exe: &str) -> &str {
    let base = exe.rsplit('/').next().unwrap_or(exe);
    &base[..base.len().min(15)]
}

fn status(pid: Option<u32>) -> String {
    let Some(p) = pid.and_then(task::find_process) else {
        return String::new();
    };
    let exe = p.exe.lock().clone();
    let threads = p.live_threads();
    let (blocked, pending) = threads.first().map_or((0, 0), |t| {
        let s = t.sig.lock();
        (s.blocked, s.pending_mask())
    });
    let shared = p.shared_sig.lock().pending_mask();
    let (vm, lck, rss) = threads
        .first()
        .and_then(|t| t.mm())
        .map_or((0, 0, 0), |mm| {
            let g = mm.lock();
            (
                g.total_vm() / 1024,
                g.locked_vm() / 1024,
                g.resident_pages() * 4,
            )
        });
    let tracing_stop = threads
        .iter()
        .any(|t| t.traced.load(Ordering::Relaxed) && t.ptrace.lock().stop.is_some());
    let state = if tracing_stop {
        "t (tracing stop)"
    } else if p.stopped.load(Ordering::Relaxed) {
        "T (stopped)"
    } else {
        "R (running)"
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "Name:\t{}\nUmask:\t0022\nState:\t{}\nTgid:\t{}\nNgid:\t0\nPid:\t{}\nPPid:\t{}\nTracerPid:\t{}\n\
         Uid:\t{}\t{}\t{}\t{}\nGid:\t0\t0\t0\t0\nFDSize:\t64\nGroups:\t\nVmSize:\t{vm:8} kB\nVmLck:\t{lck:8} kB\nVmRSS:\t{:8} kB\nThreads:\t{}\n\
         SigPnd:\t{:016x}\nShdPnd:\t{:016x}\nSigBlk:\t{:016x}\n",
        comm(&exe),
        state,
        p.pid,
        p.pid,
        p.ppid(),
        p.live_threads()
            .first()
            .map_or(0, |t| crate::ptrace::tracer_pid(t)),
        p.uid.load(Ordering::Relaxed),
        p.euid.load(Ordering::Relaxed),
        p.suid.load(Ordering::Relaxed),
        p.euid.load(Ordering::Relaxed),
        rss,
        threads.len(),
        pending,
        shared,
        blocked
    );
    if let Some(t) = threads.first() {
        let sc = &t.seccomp;
        let _ = write!(
            s,
            "NoNewPrivs:\t{}\nSeccomp:\t{}\nSeccomp_filters:\t{}\n",
            sc.no_new_privs.load(Ordering::Relaxed) as u8,
            sc.mode.load(Ordering::Relaxed).min(2),
            sc.filter_count()
        );
    }
    s
}

fn stat(pid: Option<u32>) -> String {
    let Some(p) = pid.and_then(task::find_process) else {
        return String::new();
    };
    let exe = p.exe.lock().clone();
    format!(
        "{} ({}) R {} {} {} 0 -1 0 0 0 0 0 0 0 0 0 20 0 {} 0 0\n",
        p.pid,
        comm(&exe),
        p.ppid(),
        p.pgid.load(Ordering::Relaxed),
        p.sid.load(Ordering::Relaxed),
        p.live_threads().len()
    )
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

/// An integer as sysctl writes take it: blanks around an optionally signed decimal number.
fn parse_int(text: &[u8]) -> SysResult<usize> {
    let t = core::str::from_utf8(text)
        .map_err(|_| Errno::EINVAL)?
        .trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    t.parse::<usize>().map_err(|_| Errno::EINVAL)
}

fn int_write(
    v: &core::sync::atomic::AtomicUsize,
    text: &[u8],
    min: usize,
    max: usize,
) -> SysResult<usize> {
    let n = parse_int(text)?;
    if !(min..=max).contains(&n) {
        return Err(Errno::EINVAL);
    }
    v.store(n, Ordering::Relaxed);
    Ok(text.len())
}

fn meminfo(_: Option<u32>) -> String {
    use crate::mm::frame::{self, ANON_PAGES, CACHE_PAGES, HEAP_LARGE_PAGES, KSTACK_PAGES};
    use crate::mm::frame::{SLAB_PAGES, TABLE_PAGES};
    use core::sync::atomic::Ordering::Relaxed;
    let kb = |pages: usize| pages * (crate::arch::mmu::PAGE_SIZE / 1024);
    let total = kb(frame::total());
    let free = kb(frame::free_count());
    let cached = kb(CACHE_PAGES.load(Relaxed));
    let slab = kb(SLAB_PAGES.load(Relaxed));
    let heap_large = kb(HEAP_LARGE_PAGES.load(Relaxed));
    let heap_used = crate::mm::heap::IN_USE.load(Relaxed) / 1024;
    let anon = kb(ANON_PAGES.load(Relaxed));
    let tables = kb(TABLE_PAGES.load(Relaxed));
    let kstack = kb(KSTACK_PAGES.load(Relaxed));
    // File pages are in RAM only (tmpfs-like): not reclaimable, so "available" is what is free.
    let lines: [(&str, usize); 13] = [
        ("MemTotal", total),
        ("MemFree", free),
        ("MemAvailable", free),
        ("Buffers", 0),
        ("Cached", cached),
        ("Shmem", cached),
        ("AnonPages", anon),
        ("Slab", slab + heap_large),
        ("SReclaimable", 0),
        ("SUnreclaim", slab + heap_large),
        ("KernelStack", kstack),
        ("PageTables", tables),
        ("SveltHeapInUse", heap_used),
    ];
    let mut out = String::new();
    for (name, v) in lines {
        let _ = writeln!(out, "{:<16}{v:8} kB", alloc::format!("{name}:"));
    }
    out
}

fn uptime(_: Option<u32>) -> String {
    let ns = crate::time::now_ns();
    format!(
        "{}.{:02} 0.00\n",
        ns / 1_000_000_000,
        (ns / 10_000_000) % 100
    )
}

fn version(_: Option<u32>) -> String {
    format!(
        "Linux version {} (svelt) #1 SMP\n",
        crate::syscall::misc::RELEASE
    )
}

fn mounts(_: Option<u32>) -> String {
    "rootfs / rootfs rw 0 0\nproc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\ndevtmpfs /dev devtmpfs rw 0 0\n".to_string()
        + &super::mounts_text()
}
