//! eventfd: a 64-bit counter that writes add to and reads take (all of it, or one with
//! EFD_SEMAPHORE), with poll/epoll readiness; reads wait while it is 0, writes while the sum
//! would pass 2^64 - 2 (Linux's fs/eventfd.c rules).

#![forbid(unsafe_code)]

use super::{epoll, Caller, File, FileOps};
use crate::task::wait::WaitQueue;
use alloc::sync::Arc;
use core::any::Any;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};

/// The largest value the counter holds.
const MAX: u64 = u64::MAX - 1;

/// A kernel listener that takes an eventfd's signals before any reader sees them (KVM's irqfd:
/// Linux's exclusive priority waiter on the eventfd's wait queue).
pub trait EventHook: Send + Sync {
    /// The counter went up: the hook may take it (`EventFd::take`).
    fn signalled(&self, ef: &EventFd);
    /// Whether the hook still listens (a dead one may be replaced).
    fn alive(&self) -> bool;
}

pub struct EventFd {
    count: Mutex<u64>,
    semaphore: bool,
    readable: WaitQueue,
    writable: WaitQueue,
    hook: Mutex<Option<Arc<dyn EventHook>>>,
}

impl EventFd {
    pub fn new(initval: u32, semaphore: bool) -> EventFd {
        EventFd {
            count: Mutex::new(initval.into()),
            semaphore,
            readable: WaitQueue::new(),
            writable: WaitQueue::new(),
            hook: Mutex::new(None),
        }
    }

    /// Attaches `h` as the one hook; EBUSY while another live one is there.
    pub fn set_hook(&self, h: Arc<dyn EventHook>) -> SysResult<()> {
        let mut hook = self.hook.lock();
        if hook.as_ref().is_some_and(|o| o.alive()) {
            return Err(Errno::EBUSY);
        }
        *hook = Some(h);
        Ok(())
    }

    /// Detaches the hook if it is `h`.
    pub fn clear_hook(&self, h: &Arc<dyn EventHook>) {
        let mut hook = self.hook.lock();
        if hook.as_ref().is_some_and(|o| Arc::ptr_eq(o, h)) {
            *hook = None;
        }
    }

    /// Whether the counter is above 0 now.
    pub fn ready(&self) -> bool {
        *self.count.lock() > 0
    }

    /// Takes the whole counter (eventfd_ctx_do_read), waking writers.
    pub fn take(&self) -> u64 {
        let v = core::mem::take(&mut *self.count.lock());
        if v != 0 {
            self.changed();
        }
        v
    }

    /// Adds `n`, stopping at the largest value (eventfd_signal), from inside the kernel.
    pub fn signal(&self, n: u64) {
        {
            let mut c = self.count.lock();
            *c += n.min(MAX - *c);
        }
        self.notify_hook();
        self.changed();
    }

    fn notify_hook(&self) {
        let hook = self.hook.lock().clone();
        if let Some(h) = hook {
            h.signalled(self);
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
            self.notify_hook();
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
