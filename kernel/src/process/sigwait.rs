//! The POSIX waits that are about signals themselves (rt_sigsuspend, rt_sigtimedwait).

#![forbid(unsafe_code)]

use super::Thread;
use crate::task::wait::WaitQueue;
use alloc::sync::Arc;
use svelt_abi::uapi::errno::{Errno, SysResult};

/// Sleeps until a signal is pending (rt_sigsuspend).
pub fn sleep_forever_interruptible(_me: &Arc<Thread>) -> SysResult<()> {
    static NOBODY: WaitQueue = WaitQueue::new();
    NOBODY.wait(|| None::<()>)
}

/// Waits for a signal in `want` (blocked ones included) or the deadline (rt_sigtimedwait).
/// Another, deliverable signal ends the wait with EINTR.
pub fn wait_for_signal(
    me: &Arc<Thread>,
    want: u64,
    deadline: Option<u64>,
) -> SysResult<Option<crate::process::signal::SigInfo>> {
    static SIGWAIT: WaitQueue = WaitQueue::new();
    SIGWAIT
        .wait_deadline(|| crate::process::signal::take_wanted(me, want), deadline)
        .map_err(|_| Errno::EINTR)
}
