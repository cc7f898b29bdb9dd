//! The shapes /proc's nodes share (Linux's fs/proc/generic.c and seq_file.c), each written
//! once: a text file whose text a render function makes, a symlink whose target is computed
//! when it is read, and a directory whose entries are listed when asked.

#![forbid(unsafe_code)]

use crate::fs::{new_ino, Caller, File, FileOps, Inode, Kind};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::fmt::Write;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::procfs::Sink;

/// Text being generated: an allocation that fails is remembered (ENOMEM), never fatal.
pub struct Text {
    buf: Vec<u8>,
    oom: bool,
}

impl Text {
    pub fn new() -> Text {
        Text {
            buf: Vec::new(),
            oom: false,
        }
    }
    pub fn finish(self) -> SysResult<Vec<u8>> {
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

pub fn write_str(out: &mut Text, s: &str) -> SysResult<()> {
    out.raw(s.as_bytes());
    Ok(())
}

fn copy_from(text: &[u8], off: u64, buf: &mut [u8]) -> usize {
    let off = usize::try_from(off).unwrap_or(usize::MAX).min(text.len());
    let n = buf.len().min(text.len() - off);
    buf[..n].copy_from_slice(&text[off..off + n]);
    n
}

/// Writes a generated file's text for its subject (`C`: a process, or nothing for the
/// system-wide files).
pub type Render<C> = fn(C, &mut Text) -> SysResult<()>;
/// A write to a generated file by `cur`: the bytes taken (it moves no file position).
pub type Take<C> = fn(&dyn Caller, C, &[u8]) -> SysResult<usize>;
/// Whether `cur` may open a generated file.
pub type MayOpen<C> = fn(&dyn Caller, C) -> SysResult<()>;

/// What an open of a generated file keeps of it.
#[derive(Clone, Copy)]
struct Source<C> {
    ctx: C,
    render: Render<C>,
    write: Take<C>,
}

impl<C: Copy> Source<C> {
    fn text(&self) -> SysResult<Vec<u8>> {
        let mut t = Text::new();
        (self.render)(self.ctx, &mut t)?;
        t.finish()
    }
}

/// A generated text file. The text is made at a read from position 0 (or the first read), as
/// Linux's seq files make it; for a process that has gone by then the render fails (ESRCH).
pub struct TextFile<C> {
    ino: u64,
    perm: u32,
    /// Whether the caller may open the file (private per-process files check ptrace access).
    may_open: MayOpen<C>,
    src: Source<C>,
}

impl<C: Copy> TextFile<C> {
    /// A read-only file about `ctx` (a write is EINVAL, as on Linux for files without one).
    pub fn new(ino: u64, perm: u32, ctx: C, render: Render<C>) -> TextFile<C> {
        TextFile {
            ino,
            perm,
            may_open: |_, _| Ok(()),
            src: Source {
                ctx,
                render,
                write: |_, _, _| Err(Errno::EINVAL),
            },
        }
    }

    /// Writes go to `write`.
    pub fn writer(mut self, write: Take<C>) -> TextFile<C> {
        self.src.write = write;
        self
    }

    /// Opens only when `check` allows it.
    pub fn checked(mut self, check: MayOpen<C>) -> TextFile<C> {
        self.may_open = check;
        self
    }
}

/// Makes a system-wide file's text.
pub type Gen = fn() -> String;

/// A system-wide generated file: its text is what `gen` returns.
pub type GenFile = TextFile<Gen>;

impl GenFile {
    /// Read-only; a write is EACCES.
    pub fn system(gen: Gen) -> Arc<GenFile> {
        let file = TextFile::new(new_ino(), 0o444, gen, |gen, out| write_str(out, &gen()));
        Arc::new(file.writer(|_, _, _| Err(Errno::EACCES)))
    }
}

impl<C: Copy + Send + Sync + 'static> Inode for TextFile<C> {
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
        Ok(copy_from(&self.src.text()?, off, buf))
    }
    fn open(&self, cur: &dyn Caller, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        (self.may_open)(cur, self.src.ctx)?;
        Ok(Some(Arc::new(TextOps {
            src: self.src,
            text: Mutex::new(None),
        })))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct TextOps<C> {
    src: Source<C>,
    text: Mutex<Option<Vec<u8>>>,
}

impl<C: Copy + Send + Sync + 'static> FileOps for TextOps<C> {
    fn read(&self, cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        file.at_pos(|pos| self.pread(cur, file, buf, pos))
    }
    fn pread(&self, _cur: &dyn Caller, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        let mut text = self.text.lock();
        if off == 0 || text.is_none() {
            *text = Some(self.src.text()?);
        }
        Ok(copy_from(text.as_deref().unwrap_or_default(), off, buf))
    }
    fn write(&self, cur: &dyn Caller, _file: &File, buf: &[u8]) -> SysResult<usize> {
        (self.src.write)(cur, self.src.ctx, buf)
    }
    fn pwrite(&self, cur: &dyn Caller, file: &File, buf: &[u8], _off: u64) -> SysResult<usize> {
        self.write(cur, file, buf)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A symlink's target, computed for its reader when it is read.
pub type Target<C> = fn(&dyn Caller, C) -> SysResult<String>;

/// A symlink whose target is computed when it is read (/proc/self, /proc/PID/cwd...).
pub struct Link<C> {
    ino: u64,
    ctx: C,
    target: Target<C>,
}

impl<C> Link<C> {
    pub fn new(ino: u64, ctx: C, target: Target<C>) -> Link<C> {
        Link { ino, ctx, target }
    }
}

impl<C: Copy + Send + Sync + 'static> Inode for Link<C> {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Symlink
    }
    fn perm(&self) -> u32 {
        0o777
    }
    fn readlink(&self, cur: &dyn Caller) -> SysResult<String> {
        (self.target)(cur, self.ctx)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a generated directory holds: entries listed and looked up when asked.
pub trait Listing: Send + Sync + 'static {
    /// The entry `name` of the directory numbered `ino`.
    fn lookup(&self, ino: u64, name: &str) -> SysResult<Arc<dyn Inode>>;
    /// The entries other than "." and "..".
    fn entries(&self, ino: u64) -> SysResult<Vec<(String, u64, Kind)>>;
}

/// A generated directory (/proc, /proc/PID, its task and fd directories).
pub struct Dir<L> {
    ino: u64,
    perm: u32,
    listing: L,
}

impl<L> Dir<L> {
    pub fn new(ino: u64, perm: u32, listing: L) -> Arc<Dir<L>> {
        Arc::new(Dir { ino, perm, listing })
    }
}

impl<L: Listing> Inode for Dir<L> {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Dir
    }
    fn perm(&self) -> u32 {
        self.perm
    }
    fn lookup(&self, name: &str) -> SysResult<Arc<dyn Inode>> {
        self.listing.lookup(self.ino, name)
    }
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
        self.listing.entries(self.ino)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
