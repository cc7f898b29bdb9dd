//! Pipes: a 64 KiB ring shared by a read end and a write end.

#![forbid(unsafe_code)]

use super::{epoll, File, FileOps};
use crate::mm::uaccess::{Partial, UserPtr, UserSlice};
use crate::task::wait::WaitQueue;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::any::Any;
use core::sync::atomic::{AtomicUsize, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};

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
}

pub struct Pipe {
    ring: Mutex<Ring>,
    readable: WaitQueue,
    writable: WaitQueue,
}

pub struct PipeEnd {
    pipe: Arc<Pipe>,
    write: bool,
}

/// A new pipe's (read end, write end).
pub fn new_pipe() -> (Arc<PipeEnd>, Arc<PipeEnd>) {
    let pipe = Arc::new(Pipe {
        ring: Mutex::new(Ring {
            data: VecDeque::new(),
            capacity: PIPE_SIZE,
            readers: 1,
            writers: 1,
        }),
        readable: WaitQueue::new(),
        writable: WaitQueue::new(),
    });
    (
        Arc::new(PipeEnd {
            pipe: pipe.clone(),
            write: false,
        }),
        Arc::new(PipeEnd { pipe, write: true }),
    )
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
        if self.write {
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

impl Drop for PipeEnd {
    fn drop(&mut self) {
        {
            let mut r = self.pipe.ring.lock();
            if self.write {
                r.writers -= 1;
            } else {
                r.readers -= 1;
            }
        }
        self.pipe.changed();
    }
}

impl FileOps for PipeEnd {
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        self.take(file, buf.len(), |a, b| {
            buf[..a.len()].copy_from_slice(a);
            buf[a.len()..a.len() + b.len()].copy_from_slice(b);
            Ok(())
        })
    }

    fn read_to_user(&self, file: &File, dst: UserSlice) -> Option<SysResult<usize>> {
        Some(self.take(file, dst.len(), move |a, b| {
            let mut dst = dst;
            dst.copy_out(a)?;
            Ok(dst.copy_out(b)?)
        }))
    }

    fn whole_chunks(&self) -> bool {
        true
    }

    fn write(&self, file: &File, buf: &[u8]) -> SysResult<usize> {
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
                    super::caller::broken_pipe();
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

    fn poll(&self) -> u32 {
        let r = self.pipe.ring.lock();
        let mut ev = 0u32;
        if self.write {
            if r.readers == 0 {
                ev |= POLLERR as u32;
            } else if r.data.len() < r.capacity {
                ev |= (POLLOUT | POLLWRNORM) as u32;
            }
        } else {
            if !r.data.is_empty() {
                ev |= (POLLIN | POLLRDNORM) as u32;
            }
            if r.writers == 0 {
                ev |= POLLHUP as u32;
            }
        }
        ev
    }

    fn ioctl(&self, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
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
