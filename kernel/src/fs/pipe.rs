//! Pipes: a 64 KiB ring shared by a read end and a write end; a FIFO (a named pipe, made by
//! mknod) hands the same ends out at open, by Linux's fifo_open rules.

#![forbid(unsafe_code)]

use super::{epoll, new_ino, Attrs, Caller, File, FileOps, Inode, Kind};
use crate::mm::uaccess::{Partial, UserPtr, UserSlice};
use crate::task::wait::WaitQueue;
use alloc::collections::VecDeque;
use alloc::sync::{Arc, Weak};
use core::any::Any;
use core::sync::atomic::{AtomicUsize, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{
    O_ACCMODE, O_NONBLOCK, O_PATH, O_RDONLY, O_RDWR, O_WRONLY, POLLERR, POLLHUP, POLLIN, POLLOUT,
    POLLRDNORM, POLLWRNORM,
};

pub const PIPE_SIZE: usize = 65536;
pub const PIPE_BUF: usize = 4096;
/// fs.pipe-max-size: the most an unprivileged F_SETPIPE_SZ may ask for.
pub static PIPE_MAX_SIZE: AtomicUsize = AtomicUsize::new(1 << 20);

/// A pipe size as F_SETPIPE_SZ rounds it: at least a page, a power of two of pages; None
/// beyond 2 GiB.
pub fn round_size(size: usize) -> Option<usize> {
    if size > 1 << 31 {
        return None;
    }
    Some(size.max(PAGE).next_power_of_two())
}

const PAGE: usize = 4096;

struct Ring {
    data: VecDeque<u8>,
    /// Bytes the pipe holds at most (F_SETPIPE_SZ).
    capacity: usize,
    readers: usize,
    writers: usize,
    /// Opens for reading and for writing so far (a FIFO's opener waits for the other count to
    /// move; a reader sees POLLHUP only once a writer came after its open).
    r_counter: u64,
    w_counter: u64,
}

pub struct Pipe {
    ring: Mutex<Ring>,
    readable: WaitQueue,
    writable: WaitQueue,
    /// A FIFO's openers waiting for their partner.
    partner: WaitQueue,
}

pub struct PipeEnd {
    pipe: Arc<Pipe>,
    read: bool,
    write: bool,
    /// A FIFO reader opened O_NONBLOCK with no writer: the writers' opens then, POLLHUP
    /// waiting for that count to move (Linux's f_pipe); `None` for every other end.
    hup_after: Option<u64>,
}

fn empty_pipe() -> Arc<Pipe> {
    Arc::new(Pipe {
        ring: Mutex::new(Ring {
            data: VecDeque::new(),
            capacity: PIPE_SIZE,
            readers: 0,
            writers: 0,
            r_counter: 0,
            w_counter: 0,
        }),
        readable: WaitQueue::new(),
        writable: WaitQueue::new(),
        partner: WaitQueue::new(),
    })
}

/// Counts a new end among a pipe's readers and/or writers; the ring is locked.
fn count_end(r: &mut Ring, read: bool, write: bool) {
    if read {
        r.readers += 1;
        r.r_counter += 1;
    }
    if write {
        r.writers += 1;
        r.w_counter += 1;
    }
}

/// A new pipe's (read end, write end).
pub fn new_pipe() -> (Arc<PipeEnd>, Arc<PipeEnd>) {
    let pipe = empty_pipe();
    {
        let mut r = pipe.ring.lock();
        count_end(&mut r, true, false);
        count_end(&mut r, false, true);
    }
    let end = |read: bool| PipeEnd {
        pipe: pipe.clone(),
        read,
        write: !read,
        hup_after: None,
    };
    (Arc::new(end(true)), Arc::new(end(false)))
}

impl PipeEnd {
    /// Waits for bytes (or EOF, or EAGAIN) and hands up to `count` of them, as the ring's two
    /// contiguous pieces, to `copy`; they leave the pipe only if `copy` succeeds, so a fault
    /// while copying to user memory is EFAULT with nothing consumed (as on Linux).
    fn take(
        &self,
        file: &File,
        count: usize,
        mut copy: impl FnMut(&[u8], &[u8]) -> SysResult<()>,
    ) -> SysResult<usize> {
        if !self.read {
            return Err(Errno::EBADF);
        }
        if count == 0 {
            return Ok(0);
        }
        let p = &self.pipe;
        let n = p
            .readable
            .wait(|| {
                let mut r = p.ring.lock();
                if !r.data.is_empty() {
                    let n = count.min(r.data.len());
                    let (a, b) = r.data.as_slices();
                    let (a, b) = if n <= a.len() {
                        (&a[..n], &b[..0])
                    } else {
                        (a, &b[..n - a.len()])
                    };
                    if let Err(e) = copy(a, b) {
                        return Some(Err(e));
                    }
                    r.data.drain(..n);
                    Some(Ok(n))
                } else if r.writers == 0 {
                    Some(Ok(0))
                } else if file.nonblocking() {
                    Some(Err(Errno::EAGAIN))
                } else {
                    None
                }
            })
            .map_err(|_| Errno::ERESTARTSYS)??;
        if n > 0 {
            p.changed();
        }
        Ok(n)
    }

    pub fn capacity(&self) -> usize {
        self.pipe.ring.lock().capacity
    }

    /// F_SETPIPE_SZ: the new capacity (rounded), EBUSY if the pipe holds more than that,
    /// EPERM beyond fs.pipe-max-size for users other than root.
    pub fn set_capacity(&self, size: usize, privileged: bool) -> SysResult<usize> {
        let size = round_size(size).ok_or(Errno::EINVAL)?;
        if size > PIPE_MAX_SIZE.load(Ordering::Relaxed) && !privileged {
            return Err(Errno::EPERM);
        }
        let mut r = self.pipe.ring.lock();
        if r.data.len() > size {
            return Err(Errno::EBUSY);
        }
        r.capacity = size;
        drop(r);
        self.pipe.changed();
        Ok(size)
    }
}

impl Pipe {
    fn changed(&self) {
        self.readable.wake_all();
        self.writable.wake_all();
        epoll::notify();
    }
}

/// A FIFO: a node whose opens share one pipe while any end is open (the bytes go with the
/// last close, as on Linux).
pub struct FifoNode {
    ino: u64,
    attrs: Attrs,
    pipe: Mutex<Weak<Pipe>>,
}

impl FifoNode {
    pub fn new(perm: u32) -> Arc<FifoNode> {
        Arc::new(FifoNode {
            ino: new_ino(),
            attrs: Attrs::new(perm),
            pipe: Mutex::new(Weak::new()),
        })
    }

    /// Linux's fifo_open: a reader waits for a writer to open and a writer for a reader,
    /// unless one is there; O_NONBLOCK makes a reader open at once and a writer with no reader
    /// fail with ENXIO; O_RDWR never waits.
    fn open_fifo(&self, flags: u32) -> SysResult<PipeEnd> {
        let (read, write) = match flags & O_ACCMODE {
            O_RDONLY => (true, false),
            O_WRONLY => (false, true),
            O_RDWR => (true, true),
            _ => return Err(Errno::EINVAL),
        };
        let nonblock = flags & O_NONBLOCK != 0;
        // The other side's opens so far, and how many are open now.
        let watched = |r: &Ring| if read { r.w_counter } else { r.r_counter };
        let others = |r: &Ring| if read { r.writers } else { r.readers };
        // This end is counted and the other side looked at in one hold of the ring's lock (as
        // Linux holds the pipe's mutex from its count to wait_for_partner's snapshot): a
        // partner that opens after our count, does its I/O and closes before we look must
        // still move the count we wait on, or the wait would never end.
        let (end, waiting_from) = {
            // Under the slot's lock: an open racing the last close gets this pipe or a new one.
            let mut slot = self.pipe.lock();
            let pipe = match slot.upgrade() {
                Some(p) => p,
                None => {
                    let p = empty_pipe();
                    *slot = Arc::downgrade(&p);
                    p
                }
            };
            let mut r = pipe.ring.lock();
            if write && !read && nonblock && r.readers == 0 {
                return Err(Errno::ENXIO);
            }
            count_end(&mut r, read, write);
            let alone = !(read && write) && others(&r) == 0;
            let hup_after = (read && !write && nonblock && alone).then_some(r.w_counter);
            let waiting_from = (alone && !nonblock).then_some(watched(&r));
            drop(r);
            let end = PipeEnd {
                pipe: pipe.clone(),
                read,
                write,
                hup_after,
            };
            (end, waiting_from)
        };
        let p = end.pipe.clone();
        p.partner.wake_all();
        p.changed();
        let Some(start) = waiting_from else {
            return Ok(end);
        };
        // The wait ends when the other side's count moves (a partner that opened and closed
        // meanwhile still counts) or one is open now.
        p.partner
            .wait(|| {
                let r = p.ring.lock();
                (watched(&r) != start || others(&r) > 0).then_some(())
            })
            // Dropping `end` takes it out of the counts again.
            .map_err(|_| Errno::ERESTARTSYS)?;
        Ok(end)
    }
}

impl Inode for FifoNode {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Fifo
    }
    fn attrs(&self) -> Option<&Attrs> {
        Some(&self.attrs)
    }
    fn open(&self, _cur: &dyn Caller, flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        if flags & O_PATH != 0 {
            return Ok(None);
        }
        let end = self.open_fifo(flags)?;
        Ok(Some(Arc::new(end)))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        {
            let mut r = self.pipe.ring.lock();
            if self.write {
                r.writers -= 1;
            }
            if self.read {
                r.readers -= 1;
            }
        }
        self.pipe.changed();
    }
}

impl FileOps for PipeEnd {
    fn read(&self, _cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        self.take(file, buf.len(), |a, b| {
            buf[..a.len()].copy_from_slice(a);
            buf[a.len()..a.len() + b.len()].copy_from_slice(b);
            Ok(())
        })
    }

    fn read_to_user(
        &self,
        _cur: &dyn Caller,
        file: &File,
        dst: UserSlice,
    ) -> Option<SysResult<usize>> {
        Some(self.take(file, dst.len(), move |a, b| {
            let mut dst = dst;
            dst.copy_out(a)?;
            Ok(dst.copy_out(b)?)
        }))
    }

    fn whole_chunks(&self) -> bool {
        true
    }

    fn write(&self, cur: &dyn Caller, file: &File, buf: &[u8]) -> SysResult<usize> {
        if !self.write {
            return Err(Errno::EBADF);
        }
        let p = &self.pipe;
        let mut done = 0;
        while done < buf.len() {
            let left = &buf[done..];
            let r = p.writable.wait(|| {
                let mut r = p.ring.lock();
                if r.readers == 0 {
                    return Some(Err(Errno::EPIPE));
                }
                let space = r.capacity.saturating_sub(r.data.len());
                // Writes of up to PIPE_BUF bytes are atomic: all or wait.
                let want = if left.len() <= PIPE_BUF {
                    left.len()
                } else {
                    1
                };
                if space >= want {
                    let n = space.min(left.len());
                    // Growing the ring is memory the writer asked for: not from the kernel's
                    // reserve (small growth rides on the slabs like any small object).
                    let grow = n.saturating_sub(r.data.capacity() - r.data.len());
                    let fits = grow < PAGE || crate::mm::frame::user_can_alloc(grow.div_ceil(PAGE));
                    if !fits || r.data.try_reserve(n).is_err() {
                        // No memory for the bytes: a short write, or ENOMEM if none went in.
                        return Some(Err(Errno::ENOMEM));
                    }
                    r.data.extend(&left[..n]);
                    Some(Ok(n))
                } else if file.nonblocking() {
                    Some(Err(Errno::EAGAIN))
                } else {
                    None
                }
            });
            match r {
                Ok(Ok(n)) => {
                    done += n;
                    p.changed();
                }
                Ok(Err(Errno::EPIPE)) => {
                    cur.broken_pipe();
                    return Partial {
                        done,
                        err: Errno::EPIPE,
                    }
                    .short_count();
                }
                Ok(Err(err)) => return Partial { done, err }.short_count(),
                Err(_) => {
                    return Partial {
                        done,
                        err: Errno::ERESTARTSYS,
                    }
                    .short_count()
                }
            }
        }
        Ok(done)
    }

    fn poll(&self, _cur: &dyn Caller) -> u32 {
        let r = self.pipe.ring.lock();
        let mut ev = 0u32;
        if self.write {
            if r.readers == 0 {
                ev |= POLLERR as u32;
            } else if r.data.len() < r.capacity {
                ev |= (POLLOUT | POLLWRNORM) as u32;
            }
        }
        if self.read {
            if !r.data.is_empty() {
                ev |= (POLLIN | POLLRDNORM) as u32;
            }
            // A FIFO reader that opened O_NONBLOCK with no writer sees no hang-up until one
            // has come.
            if r.writers == 0 && self.hup_after != Some(r.w_counter) {
                ev |= POLLHUP as u32;
            }
        }
        ev
    }

    fn ioctl(&self, _cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        if cmd == svelt_abi::uapi::tty::FIONREAD {
            let n = self.pipe.ring.lock().data.len() as u32;
            UserPtr::new(arg).write(&n)?;
            return Ok(0);
        }
        Err(Errno::ENOTTY)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
