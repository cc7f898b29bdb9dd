//! /proc/sys (Linux's fs/proc/proc_sysctl.c): sysctls read and written at the file position.
//! Unlike the generated files, a sysctl's value is formatted or parsed on every read and
//! write, as Linux's proc_sys_call_handler does.

#![forbid(unsafe_code)]

use crate::fs::ramfs::RamDir;
use crate::fs::{new_ino, Caller, File, FileOps, Inode, Kind};
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use core::any::Any;
use core::sync::atomic::{AtomicUsize, Ordering};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::sysctl;

/// Every string sysctl here is a UTS name: 65 bytes with the NUL.
const UTS_MAXLEN: usize = crate::uts::NEW_UTS_LEN + 1;

/// Formats an integer sysctl's value.
type IntGet = fn() -> String;
/// Parses a write at position 0 of an integer sysctl: the bytes it consumed.
type IntSet = fn(&[u8]) -> SysResult<usize>;
/// A string sysctl's bytes and length.
type StrGet = fn() -> ([u8; UTS_MAXLEN], usize);
/// Puts text at a position of a string sysctl.
type StrSet = fn(u64, &[u8]);

/// What a sysctl holds, and how it is read and written at a file position. An open sysctl is
/// this value (its `FileOps`).
#[derive(Clone, Copy)]
enum Sysctl {
    /// Integers (Linux's proc_dointvec family, `svelt_abi::uapi::sysctl::int_*`): `read` formats the
    /// text; `write`, called for a write at position 0, parses it and returns the bytes it
    /// consumed (what write() returns).
    Int { read: IntGet, write: Option<IntSet> },
    /// A string (hostname, osrelease, ostype), as Linux's `proc_dostring` has it
    /// (`svelt_abi::uapi::sysctl::string_*`): `write` puts text at a position, the whole write done.
    Str { read: StrGet, write: Option<StrSet> },
}

impl Sysctl {
    fn writable(&self) -> bool {
        match self {
            Sysctl::Int { write, .. } => write.is_some(),
            Sysctl::Str { write, .. } => write.is_some(),
        }
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> usize {
        match self {
            Sysctl::Int { read, .. } => {
                let text = read();
                let b = sysctl::int_read(text.as_bytes(), off, buf.len());
                buf[..b.len()].copy_from_slice(b);
                b.len()
            }
            Sysctl::Str { read, .. } => {
                let (v, len) = read();
                let mut out = [0u8; UTS_MAXLEN + 1];
                let n = sysctl::string_read(&v[..len], UTS_MAXLEN, off, buf.len(), &mut out);
                buf[..n].copy_from_slice(&out[..n]);
                n
            }
        }
    }

    fn write_at(&self, buf: &[u8], off: u64) -> SysResult<usize> {
        match self {
            Sysctl::Int { write, .. } => {
                let write = write.ok_or(Errno::EACCES)?;
                match sysctl::int_write(off, buf.len()) {
                    sysctl::IntWrite::Done(n) => Ok(n),
                    sysctl::IntWrite::Parse => write(buf),
                }
            }
            Sysctl::Str { write, .. } => {
                let write = write.ok_or(Errno::EACCES)?;
                // Linux looks at one page of a write.
                let buf = &buf[..buf.len().min(4096)];
                write(off, buf);
                Ok(buf.len())
            }
        }
    }
}

impl FileOps for Sysctl {
    fn read(&self, _cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        file.at_pos(|pos| Ok(self.read_at(pos, buf)))
    }
    fn pread(&self, _cur: &dyn Caller, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        Ok(self.read_at(off, buf))
    }
    fn write(&self, _cur: &dyn Caller, file: &File, buf: &[u8]) -> SysResult<usize> {
        file.at_pos(|pos| self.write_at(buf, pos))
    }
    fn pwrite(&self, _cur: &dyn Caller, _file: &File, buf: &[u8], off: u64) -> SysResult<usize> {
        self.write_at(buf, off)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A /proc/sys file.
struct SysctlFile {
    ino: u64,
    value: Sysctl,
}

impl SysctlFile {
    fn int(read: IntGet, write: Option<IntSet>) -> Arc<SysctlFile> {
        Arc::new(SysctlFile {
            ino: new_ino(),
            value: Sysctl::Int { read, write },
        })
    }

    fn string(read: StrGet, write: Option<StrSet>) -> Arc<SysctlFile> {
        Arc::new(SysctlFile {
            ino: new_ino(),
            value: Sysctl::Str { read, write },
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
        if self.value.writable() {
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
        Ok(self.value.read_at(off, buf))
    }
    fn open(&self, _cur: &dyn Caller, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        Ok(Some(Arc::new(self.value)))
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

static SYS_DIR: spin::Once<Arc<RamDir>> = spin::Once::new();

/// /proc/sys, where sysctls such as abi/sve_default_vector_length live.
pub(super) fn sys_dir() -> Arc<RamDir> {
    SYS_DIR
        .call_once(|| {
            let d = RamDir::new(0o555);
            let abi = RamDir::new(0o555);
            use crate::task::fpstate::{sme_default_read, sme_default_write};
            use crate::task::fpstate::{sve_default_read, sve_default_write};
            let vls: [(bool, &str, IntGet, IntSet); 2] = [
                (
                    crate::cpufeature::features().sve,
                    "sve_default_vector_length",
                    sve_default_read,
                    sve_default_write,
                ),
                (
                    crate::cpufeature::offer().sme,
                    "sme_default_vector_length",
                    sme_default_read,
                    sme_default_write,
                ),
            ];
            for (present, name, read, write) in vls {
                if present {
                    abi.replace(name, SysctlFile::int(read, Some(write)));
                }
            }
            d.replace("abi", abi);
            let kernel = RamDir::new(0o555);
            kernel.replace(
                "threads-max",
                SysctlFile::int(
                    || int_read(&crate::process::MAX_THREADS),
                    Some(|t| int_write(&crate::process::MAX_THREADS, t, 20, 0x3fff_ffff)),
                ),
            );
            kernel.replace(
                "pid_max",
                SysctlFile::int(
                    || int_read(&PID_MAX),
                    Some(|t| int_write(&PID_MAX, t, PID_MAX_MIN, PID_MAX_LIMIT)),
                ),
            );
            kernel.replace(
                "hostname",
                SysctlFile::string(
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
                SysctlFile::string(|| uts_const(crate::uts::RELEASE), None),
            );
            kernel.replace("ostype", SysctlFile::string(|| uts_const("Linux"), None));
            d.replace("kernel", kernel);
            let vm = RamDir::new(0o555);
            vm.replace(
                "max_map_count",
                SysctlFile::int(
                    || int_read(&crate::mm::aspace::MAX_MAP_COUNT),
                    Some(|t| int_write(&crate::mm::aspace::MAX_MAP_COUNT, t, 0, i32::MAX)),
                ),
            );
            d.replace("vm", vm);
            let fsd = RamDir::new(0o555);
            fsd.replace(
                "pipe-max-size",
                SysctlFile::int(
                    || int_read(&crate::fs::pipe::PIPE_MAX_SIZE),
                    Some(|t| {
                        // proc_dopipe_max_size: an unsigned number, stored rounded as a
                        // pipe's size would be.
                        let (v, used) = sysctl::douintvec(t)?;
                        let r = crate::fs::pipe::round_size(v as usize).ok_or(Errno::EINVAL)?;
                        crate::fs::pipe::PIPE_MAX_SIZE.store(r, Ordering::Relaxed);
                        Ok(used)
                    }),
                ),
            );
            fsd.replace(
                "nr_open",
                SysctlFile::int(|| format!("{}\n", crate::fs::NR_OPEN), None),
            );
            d.replace("fs", fsd);
            d
        })
        .clone()
}
