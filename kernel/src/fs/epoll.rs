//! Readiness waiting: epoll instances and the one wait queue that every readiness change wakes
//! (ppoll and epoll_pwait sleep on it and re-check their files).

#![forbid(unsafe_code)]

use super::{Caller, File, FileOps};
use crate::task::wait::WaitQueue;
use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{
    EpollEvent, EPOLLERR, EPOLLHUP, EPOLLONESHOT, EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD,
    POLLIN,
};

static POLL_WQ: WaitQueue = WaitQueue::new();

/// Some file's readiness may have changed.
pub fn notify() {
    POLL_WQ.wake_all();
}

/// Sleeps until `check` finds something ready, a signal arrives or the deadline passes.
pub fn wait_ready<R>(
    check: impl FnMut() -> Option<R>,
    deadline: Option<u64>,
) -> SysResult<Option<R>> {
    POLL_WQ.wait_deadline(check, deadline)
}

struct Interest {
    file: Weak<File>,
    events: u32,
    data: u64,
    /// EPOLLONESHOT fired: disabled until EPOLL_CTL_MOD.
    disabled: bool,
}

pub struct Epoll {
    interest: Mutex<BTreeMap<(i32, usize), Interest>>,
}

impl Epoll {
    pub fn new() -> Arc<Epoll> {
        Arc::new(Epoll {
            interest: Mutex::new(BTreeMap::new()),
        })
    }

    pub fn ctl(&self, op: u32, fd: i32, file: &Arc<File>, ev: EpollEvent) -> SysResult<()> {
        let key = (fd, Arc::as_ptr(file) as *const u8 as usize);
        let mut m = self.interest.lock();
        match op {
            EPOLL_CTL_ADD => {
                if m.contains_key(&key) {
                    return Err(Errno::EEXIST);
                }
                m.insert(
                    key,
                    Interest {
                        file: Arc::downgrade(file),
                        events: ev.events,
                        data: ev.data,
                        disabled: false,
                    },
                );
            }
            EPOLL_CTL_MOD => {
                let i = m.get_mut(&key).ok_or(Errno::ENOENT)?;
                i.events = ev.events;
                i.data = ev.data;
                i.disabled = false;
            }
            EPOLL_CTL_DEL => {
                m.remove(&key).ok_or(Errno::ENOENT)?;
            }
            _ => return Err(Errno::EINVAL),
        }
        drop(m);
        notify();
        Ok(())
    }

    /// Ready events now (level-triggered), at most `max`.
    pub fn collect(&self, cur: &dyn Caller, max: usize) -> Vec<EpollEvent> {
        let mut out = Vec::new();
        let mut m = self.interest.lock();
        m.retain(|_, i| i.file.strong_count() > 0);
        for i in m.values_mut() {
            if out.len() == max || i.disabled {
                continue;
            }
            let Some(file) = i.file.upgrade() else {
                continue;
            };
            let ready = file.ops.poll(cur) & (i.events | EPOLLERR | EPOLLHUP);
            if ready != 0 {
                out.push(EpollEvent::new(ready, i.data));
                if i.events & EPOLLONESHOT != 0 {
                    i.disabled = true;
                }
            }
        }
        out
    }
}

impl FileOps for Epoll {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn poll(&self, cur: &dyn Caller) -> u32 {
        if self.collect(cur, 1).is_empty() {
            0
        } else {
            POLLIN as u32
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
