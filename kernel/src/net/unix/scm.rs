//! What an AF_UNIX message carries besides its bytes: descriptors (SCM_RIGHTS) and the
//! sender's credentials (SCM_CREDENTIALS). The control buffer itself is parsed and built by the
//! sendmsg/recvmsg system calls.

#![forbid(unsafe_code)]

use crate::fs::File;
use crate::process::Thread;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::net::Ucred;

/// Rights and credentials a message carries.
#[derive(Default)]
pub struct Scm {
    pub fds: Vec<Arc<File>>,
    pub cred: Ucred,
}

/// A thread's credentials, as a message or a connection records its sender's.
pub fn cred_of(t: &Thread) -> Ucred {
    Ucred {
        pid: t.pid() as i32,
        uid: t.process().euid.load(Ordering::Relaxed),
        gid: 0,
    }
}
