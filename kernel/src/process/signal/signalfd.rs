//! signalfd4's descriptors (Linux's fs/signalfd.c): a read takes the reader's pending signals
//! that are in the descriptor's mask, its own thread's first and then its process's, as
//! delivery would (blocked or not), and returns each as a 128-byte `signalfd_siginfo`; poll and
//! epoll say POLLIN while one is pending for the caller.
//!
//! The descriptor keeps only its mask: whoever reads or polls it is asked, so one inherited over
//! fork reads the child's signals, as on Linux. The file kind lives with the signal queues it
//! reads (this layer is above fs, whose `FileOps` it implements) rather than in fs asking up.

#![forbid(unsafe_code)]

use super::SigInfo;
use crate::fs::{epoll, Caller, File, FileOps};
use crate::process::{self, Thread};
use crate::task::wait::WaitQueue;
use core::any::Any;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::POLLIN;
use svelt_abi::uapi::signal::{self as sig, SIGNALFD_SIGINFO_SIZE};

/// Readers waiting for a signal (Linux's per-sighand signalfd_wqh, one for all here: a
/// signal wakes them all and each looks at its own queues).
static READERS: WaitQueue = WaitQueue::new();

/// signalfds that exist: while there are none, a new signal wakes nobody here.
static LIVE: AtomicUsize = AtomicUsize::new(0);

pub struct SignalFd {
    /// The signals it reads (never SIGKILL or SIGSTOP).
    mask: AtomicU64,
}

impl SignalFd {
    pub fn new(mask: u64) -> SignalFd {
        LIVE.fetch_add(1, Ordering::Relaxed);
        SignalFd {
            mask: AtomicU64::new(mask & !sig::Sigset::UNBLOCKABLE.0),
        }
    }

    /// signalfd4 on an existing descriptor: the new mask, and readers look again.
    pub fn set_mask(&self, mask: u64) {
        self.mask
            .store(mask & !sig::Sigset::UNBLOCKABLE.0, Ordering::Relaxed);
        notify();
    }

    fn take(&self, t: &Thread) -> Option<SigInfo> {
        super::take_wanted(t, self.mask.load(Ordering::Relaxed))
    }
}

impl Drop for SignalFd {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A signal was queued: signalfd readers and pollers look again.
pub(super) fn notify() {
    if LIVE.load(Ordering::Relaxed) != 0 {
        READERS.wake_all();
        epoll::notify();
    }
}

impl FileOps for SignalFd {
    fn read(&self, cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        let n = buf.len() / SIGNALFD_SIGINFO_SIZE;
        if n == 0 {
            return Err(Errno::EINVAL);
        }
        let t = process::caller_thread(cur);
        let first = if file.nonblocking() {
            self.take(t).ok_or(Errno::EAGAIN)?
        } else {
            READERS
                .wait(|| self.take(t))
                .map_err(|_| Errno::ERESTARTSYS)?
        };
        let mut done = 0;
        let mut next = Some(first);
        while let Some(info) = next {
            let rec = sig::signalfd_siginfo(&info);
            buf[done..done + SIGNALFD_SIGINFO_SIZE].copy_from_slice(&rec);
            done += SIGNALFD_SIGINFO_SIZE;
            next = if done / SIGNALFD_SIGINFO_SIZE < n {
                self.take(t)
            } else {
                None
            };
        }
        Ok(done)
    }

    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    fn poll(&self, cur: &dyn Caller) -> u32 {
        let t = process::caller_thread(cur);
        let mask = self.mask.load(Ordering::Relaxed);
        let pending = t.sig.lock().pending.pending_mask() | t.process.shared_sig.lock().mask;
        if pending & mask != 0 {
            POLLIN as u32
        } else {
            0
        }
    }

    /// The signals it reads, as /proc/PID/status shows a set.
    fn fdinfo(&self, out: &mut dyn core::fmt::Write) {
        let _ = writeln!(out, "sigmask:\t{:016x}", self.mask.load(Ordering::Relaxed));
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
