//! pidfd_open's descriptors: a process handle that polls readable (POLLIN) once the process
//! has ended (all its threads gone, a zombie or reaped), as Linux's pidfds do. Reading or
//! writing one is EINVAL.

#![forbid(unsafe_code)]

use crate::fs::{Caller, File, FileOps};
use crate::process::{ProcState, Process};
use alloc::sync::{Arc, Weak};
use core::any::Any;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::POLLIN;

pub struct PidFd {
    process: Weak<Process>,
}

impl PidFd {
    pub fn new(p: &Arc<Process>) -> Arc<PidFd> {
        Arc::new(PidFd {
            process: Arc::downgrade(p),
        })
    }
}

impl FileOps for PidFd {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn poll(&self, _cur: &dyn Caller) -> u32 {
        let ended = self
            .process
            .upgrade()
            .is_none_or(|p| matches!(*p.state.lock(), ProcState::Zombie(_)));
        if ended {
            POLLIN as u32
        } else {
            0
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
