//! eventfd: a 64-bit counter that writes add to and reads take (all of it, or one with
//! EFD_SEMAPHORE), with poll/epoll readiness; reads wait while it is 0, writes while the sum
//! would pass 2^64 - 2 (Linux's fs/eventfd.c rules).

#![forbid(unsafe_code)]

use super::{epoll, Caller, File, FileOps};
use crate::task::wait::WaitQueue;
use core::any::Any;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};

/// The largest value the counter holds.
const MAX: u64 = u64::MAX - 1;

pub struct EventFd {
    count: Mutex<u64>,
    semaphore: bool,
    readable: WaitQueue,
    writable: WaitQueue,
}

impl EventFd {
    pub fn new(initval: u32, semaphore: bool) -> EventFd {
        EventFd {
            count: Mutex::new(initval.into()),
            semaphore,
            readable: WaitQueue::new(),
            writable: WaitQueue::new(),
        }
    }

    fn changed(&self) {
        self.readable.wake_all();
        self.writable.wake_all();
        epoll::notify();
    }
}

impl FileOps for EventFd {
    fn read(&self, _cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let v = self
            .readable
            .wait(|| {
                let mut c = self.count.lock();
                if *c > 0 {
                    let v = if self.semaphore { 1 } else { *c };
                    *c -= v;
                    Some(Ok(v))
                } else if file.nonblocking() {
                    Some(Err(Errno::EAGAIN))
                } else {
                    None
                }
            })
            .map_err(|_| Errno::ERESTARTSYS)??;
        self.changed();
        buf[..8].copy_from_slice(&v.to_ne_bytes());
        Ok(8)
    }

    fn write(&self, _cur: &dyn Caller, file: &File, buf: &[u8]) -> SysResult<usize> {
        let Some(bytes) = buf.get(..8) else {
            return Err(Errno::EINVAL);
        };
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        let v = u64::from_ne_bytes(b);
        if v == u64::MAX {
            return Err(Errno::EINVAL);
        }
        self.writable
            .wait(|| {
                let mut c = self.count.lock();
                if MAX - *c >= v {
                    *c += v;
                    Some(Ok(()))
                } else if file.nonblocking() {
                    Some(Err(Errno::EAGAIN))
                } else {
                    None
                }
            })
            .map_err(|_| Errno::ERESTARTSYS)??;
        if v != 0 {
            self.changed();
        }
        Ok(8)
    }

    fn poll(&self, _cur: &dyn Caller) -> u32 {
        let c = *self.count.lock();
        let mut ev = 0;
        if c > 0 {
            ev |= (POLLIN | POLLRDNORM) as u32;
        }
        if c < MAX {
            ev |= (POLLOUT | POLLWRNORM) as u32;
        }
        ev
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
