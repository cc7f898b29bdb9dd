//! Character devices: the console, null, zero, (u)random.

use super::ramfs::DevNode;
use super::{File, FileOps, Inode};
use crate::mm::uaccess::{UserPtr, UserSlice};
use alloc::sync::Arc;
use core::any::Any;
use spin::Mutex;
use svelt_abi::errno::{Errno, SysResult};
use svelt_abi::fs::POLLOUT;
use svelt_abi::tty;

/// (name, major, minor, mode) of the nodes /dev always has (devtmpfs-like).
const NODES: [(&str, u32, u32, u32); 6] = [
    ("console", 5, 1, 0o600),
    ("tty", 5, 0, 0o666),
    ("null", 1, 3, 0o666),
    ("zero", 1, 5, 0o666),
    ("random", 1, 8, 0o666),
    ("urandom", 1, 9, 0o666),
];

pub fn populate(dev: &dyn Inode) {
    for (name, major, minor, mode) in NODES {
        if dev.lookup(name).is_err() {
            let _ = dev.link(name, DevNode::new(mode, major, minor));
        }
    }
}

pub fn open(major: u32, minor: u32) -> SysResult<Arc<dyn FileOps>> {
    Ok(match (major, minor) {
        (5, 0) | (5, 1) | (4, _) => Arc::new(Console),
        (1, 3) => Arc::new(Null),
        (1, 5) => Arc::new(Zero),
        (1, 8) | (1, 9) => Arc::new(Random),
        _ => return Err(Errno::ENXIO),
    })
}

/// The kernel console as a terminal: output to the UART; input is not wired up yet (reads see
/// end of file).
pub struct Console;

impl FileOps for Console {
    fn read(&self, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Ok(0)
    }
    fn write(&self, _file: &File, buf: &[u8]) -> SysResult<usize> {
        crate::console::write_bytes(buf);
        Ok(buf.len())
    }
    fn poll(&self) -> u32 {
        POLLOUT as u32
    }
    fn ioctl(&self, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        match cmd {
            tty::TCGETS => {
                UserPtr::new(arg).write(&tty::Termios::console_default())?;
                Ok(0)
            }
            tty::TCSETS | tty::TCSETSW | tty::TCSETSF => {
                UserPtr::<[u8; tty::Termios::SIZE]>::new(arg).read()?;
                Ok(0)
            }
            tty::TIOCGWINSZ => {
                UserSlice::new(arg, 8).clear()?;
                Ok(0)
            }
            tty::TIOCGPGRP => {
                let pgid = crate::task::current()
                    .process()
                    .pgid
                    .load(core::sync::atomic::Ordering::Relaxed);
                UserPtr::new(arg).write(&pgid)?;
                Ok(0)
            }
            tty::TIOCSPGRP | tty::TIOCSCTTY => Ok(0),
            _ => Err(Errno::ENOTTY),
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct Null;

impl FileOps for Null {
    fn read(&self, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Ok(0)
    }
    fn write(&self, _file: &File, buf: &[u8]) -> SysResult<usize> {
        Ok(buf.len())
    }
    fn pread(&self, _file: &File, _buf: &mut [u8], _off: u64) -> SysResult<usize> {
        Ok(0)
    }
    fn pwrite(&self, _file: &File, buf: &[u8], _off: u64) -> SysResult<usize> {
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
    fn read(&self, _file: &File, buf: &mut [u8]) -> SysResult<usize> {
        buf.fill(0);
        Ok(buf.len())
    }
    fn write(&self, _file: &File, buf: &[u8]) -> SysResult<usize> {
        Ok(buf.len())
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct Random;

impl FileOps for Random {
    fn read(&self, _file: &File, buf: &mut [u8]) -> SysResult<usize> {
        fill_random(buf);
        Ok(buf.len())
    }
    fn write(&self, _file: &File, buf: &[u8]) -> SysResult<usize> {
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
