//! Character devices: null, zero, full, (u)random, kmsg, and the terminal's nodes (the tty
//! module opens those: `register_tty`), /dev/ptmx and the pty slaves (`register_pty`).

#![forbid(unsafe_code)]

use super::ramfs::DevNode;
use super::{Caller, File, FileOps, Inode};
use crate::mm::uaccess::UserSlice;
use alloc::sync::Arc;
use core::any::Any;
use spin::{Mutex, Once};
use svelt_abi::uapi::errno::{Errno, SysResult};

/// (name, major, minor, mode) of the nodes /dev always has (devtmpfs-like).
const NODES: [(&str, u32, u32, u32); 10] = [
    ("console", 5, 1, 0o600),
    ("tty", 5, 0, 0o666),
    ("ttyAMA0", 204, 64, 0o620),
    ("null", 1, 3, 0o666),
    ("zero", 1, 5, 0o666),
    ("full", 1, 7, 0o666),
    ("random", 1, 8, 0o666),
    ("urandom", 1, 9, 0o666),
    ("kmsg", 1, 11, 0o644),
    ("ptmx", 5, 2, 0o666),
];

/// The device nodes, and devpts at /dev/pts (over any directory the initramfs put there).
pub fn populate(dev: &dyn Inode) {
    for (name, major, minor, mode) in NODES {
        if dev.lookup(name).is_err() {
            let _ = dev.link(name, DevNode::new(mode, major, minor));
        }
    }
    for d in DRIVERS.lock().iter() {
        if dev.lookup(d.name).is_err() {
            let _ = dev.link(d.name, DevNode::new(d.mode, d.major, d.minor));
        }
    }
    let pts: Arc<dyn Inode> = super::devpts::root();
    match dev.lookup("pts") {
        Err(_) => {
            let _ = dev.link("pts", pts);
        }
        Ok(old) if old.kind() == super::Kind::Dir => {
            if let Some(d) = dev.as_any().downcast_ref::<super::ramfs::RamDir>() {
                d.replace("pts", pts);
            }
        }
        Ok(_) => {}
    }
}

/// An open device's operations, or why it did not open.
pub type OpenResult = SysResult<Arc<dyn FileOps>>;
/// What opens a device node for a caller, with open(2)'s flags.
pub type DevOpen = fn(&dyn Caller, u32) -> OpenResult;

/// A character device a module above fs drives (KVM's /dev/kvm): its node and how to open it.
pub struct Driver {
    pub name: &'static str,
    pub major: u32,
    pub minor: u32,
    pub mode: u32,
    pub open: DevOpen,
}

static DRIVERS: Mutex<alloc::vec::Vec<Driver>> = Mutex::new(alloc::vec::Vec::new());

/// Makes `d` the driver of its (major, minor) and gives it a node in /dev (boot time, before
/// the root file system is built).
pub fn register(d: Driver) {
    DRIVERS.lock().push(d);
}

/// The terminal nodes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TtyKind {
    /// /dev/ttyAMA0.
    Device,
    /// /dev/console.
    Console,
    /// /dev/tty: the caller's controlling terminal.
    CurrentTty,
}

/// What opens a terminal node (the tty module, which registers at boot).
pub type TtyOpen = fn(&dyn Caller, TtyKind, u32) -> OpenResult;

static TTY_OPEN: Once<TtyOpen> = Once::new();

/// Makes `open` the driver of the terminal nodes.
pub fn register_tty(open: TtyOpen) {
    TTY_OPEN.call_once(|| open);
}

fn tty_open(cur: &dyn Caller, kind: TtyKind, flags: u32) -> SysResult<Arc<dyn FileOps>> {
    TTY_OPEN.get().ok_or(Errno::ENXIO)?(cur, kind, flags)
}

/// What opens the pty nodes (the tty module's pty driver, registered at boot): /dev/ptmx
/// (a new pair) and slave `index`, each with open(2)'s flags.
pub struct PtyDriver {
    pub open_ptmx: DevOpen,
    /// Slave `index` (the first `u32`).
    pub open_slave: fn(&dyn Caller, u32, u32) -> OpenResult,
}

static PTY: Once<PtyDriver> = Once::new();

/// Makes `d` the driver of /dev/ptmx and the pty slaves.
pub fn register_pty(d: PtyDriver) {
    PTY.call_once(|| d);
}

/// Opens device (major, minor) for `cur` with open(2)'s `flags`.
pub fn open(cur: &dyn Caller, major: u32, minor: u32, flags: u32) -> SysResult<Arc<dyn FileOps>> {
    Ok(match (major, minor) {
        (5, 0) => tty_open(cur, TtyKind::CurrentTty, flags)?,
        (5, 1) | (4, _) => tty_open(cur, TtyKind::Console, flags)?,
        (204, 64) => tty_open(cur, TtyKind::Device, flags)?,
        (5, 2) => (PTY.get().ok_or(Errno::ENODEV)?.open_ptmx)(cur, flags)?,
        (1, 3) => Arc::new(Null),
        (1, 5) => Arc::new(Zero),
        (1, 7) => Arc::new(Full),
        (1, 8) | (1, 9) => Arc::new(Random),
        (1, 11) => Arc::new(Kmsg {
            seq: Mutex::new(crate::klog::bounds().0),
        }),
        (m, n) => match super::devpts::slave_index(m, n) {
            Some(i) => (PTY.get().ok_or(Errno::ENXIO)?.open_slave)(cur, i, flags)?,
            None => {
                let open = DRIVERS
                    .lock()
                    .iter()
                    .find(|d| (d.major, d.minor) == (major, minor))
                    .map(|d| d.open);
                return open.ok_or(Errno::ENXIO)?(cur, flags);
            }
        },
    })
}

/// /dev/full: reads zeros, every write fails with ENOSPC.
pub struct Full;

impl FileOps for Full {
    fn read(&self, _cur: &dyn Caller, _file: &File, buf: &mut [u8]) -> SysResult<usize> {
        buf.fill(0);
        Ok(buf.len())
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::ENOSPC)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct Null;

impl FileOps for Null {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Ok(0)
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, buf: &[u8]) -> SysResult<usize> {
        Ok(buf.len())
    }
    fn pread(
        &self,
        _cur: &dyn Caller,
        _file: &File,
        _buf: &mut [u8],
        _off: u64,
    ) -> SysResult<usize> {
        Ok(0)
    }
    fn pwrite(&self, _cur: &dyn Caller, _file: &File, buf: &[u8], _off: u64) -> SysResult<usize> {
        Ok(buf.len())
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct Zero;

impl FileOps for Zero {
    fn read(&self, _cur: &dyn Caller, _file: &File, buf: &mut [u8]) -> SysResult<usize> {
        buf.fill(0);
        Ok(buf.len())
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, buf: &[u8]) -> SysResult<usize> {
        Ok(buf.len())
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// /dev/kmsg: each read gives one record of the kernel log (`prio,seq,usec,-;text`), from the
/// oldest kept on; EPIPE once when records were overwritten before this reader got to them;
/// a write adds a record (LOG_USER unless a `<N>` prefix names another facility).
pub struct Kmsg {
    seq: Mutex<u64>,
}

impl FileOps for Kmsg {
    fn read(&self, _cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        use crate::klog::Next;
        let mut seq = self.seq.lock();
        loop {
            match crate::klog::read_at(*seq)? {
                Next::Record(r) => {
                    let mut line = alloc::vec::Vec::new();
                    svelt_abi::uapi::klog::kmsg_line(&mut line, r.prio, r.seq, r.ts_ns, &r.text);
                    if line.len() > buf.len() {
                        return Err(Errno::EINVAL);
                    }
                    buf[..line.len()].copy_from_slice(&line);
                    *seq += 1;
                    return Ok(line.len());
                }
                Next::Lost(first) => {
                    *seq = first;
                    return Err(Errno::EPIPE);
                }
                Next::Empty if file.nonblocking() => return Err(Errno::EAGAIN),
                Next::Empty => crate::klog::pause(crate::task::wait::sleep_until)?,
            }
        }
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, buf: &[u8]) -> SysResult<usize> {
        let (prio, text) = svelt_abi::uapi::klog::parse_kmsg_write(buf);
        let t = crate::arch::cpu::counter();
        if crate::klog::record(prio, crate::time::counter_to_ns(t), text) {
            let level = match prio & 7 {
                0..=3 => "ERROR",
                4 => "WARN",
                5 | 6 => "INFO",
                _ => "DEBUG",
            };
            let text = core::str::from_utf8(text).unwrap_or("(not UTF-8)");
            crate::console::log_line(t, level, format_args!("{text}"));
        }
        Ok(buf.len())
    }
    fn poll(&self, _cur: &dyn Caller) -> u32 {
        let seq = *self.seq.lock();
        let (_, next) = crate::klog::bounds();
        if seq < next {
            (svelt_abi::uapi::fs::POLLIN | svelt_abi::uapi::fs::POLLRDNORM) as u32
        } else {
            0
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct Random;

impl FileOps for Random {
    fn read(&self, _cur: &dyn Caller, _file: &File, buf: &mut [u8]) -> SysResult<usize> {
        fill_random(buf);
        Ok(buf.len())
    }
    fn read_to_user(
        &self,
        cur: &dyn Caller,
        _file: &File,
        dst: UserSlice,
    ) -> Option<SysResult<usize>> {
        Some(fill_random_user(cur, dst))
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, buf: &[u8]) -> SysResult<usize> {
        Ok(buf.len())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A xorshift generator seeded from the DTB's rng-seed and the counter: unpredictable enough
/// for AT_RANDOM and getrandom in a test kernel, not for cryptography.
static RNG: Mutex<u64> = Mutex::new(0x9e37_79b9_7f4a_7c15);

pub fn seed_random(seed: &[u8]) {
    let mut s = RNG.lock();
    for chunk in seed.chunks(8) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *s ^= u64::from_le_bytes(b);
        *s = s.rotate_left(17).wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
}

/// Fills a user buffer of any size (read of /dev/urandom, getrandom), as Linux's
/// get_random_bytes_user: whole, unless a signal is pending at a page boundary after some bytes,
/// or a fault stops it (EFAULT only when nothing was written).
pub fn fill_random_user(cur: &dyn Caller, mut dst: UserSlice) -> SysResult<usize> {
    const PAGE: usize = 4096;
    let len = dst.len();
    let mut chunk = [0u8; 256];
    let mut done = 0;
    while done < len {
        let n = chunk.len().min(len - done);
        fill_random(&mut chunk[..n]);
        if let Err(p) = dst.copy_out(&chunk[..n]) {
            return p.after(done).short_count();
        }
        done += n;
        if done % PAGE == 0 && done < len && crate::task::hooks::interrupted(cur.core()) {
            break;
        }
    }
    Ok(done)
}

pub fn fill_random(buf: &mut [u8]) {
    let mut s = RNG.lock();
    *s ^= crate::arch::cpu::counter();
    for chunk in buf.chunks_mut(8) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        let v = s.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}
