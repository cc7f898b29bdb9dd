//! User IDs: enough of Linux's credentials for RLIMIT_NPROC to mean what it does there (root is
//! exempt; other users are counted per real user ID). Groups and capabilities are not modelled:
//! user ID 0 may do anything, others nothing privileged.

#![forbid(unsafe_code)]

use crate::process::{self, CurrentTask};
use core::sync::atomic::Ordering::Relaxed;
use svelt_abi::uapi::errno::{Errno, SysResult};

/// Whether the caller has the capabilities Linux gives root (CAP_IPC_LOCK, CAP_SYS_RESOURCE):
/// effective user ID 0.
pub fn privileged(t: &process::Thread) -> bool {
    t.process().euid.load(Relaxed) == 0
}

pub fn getuid(cur: &CurrentTask, effective: bool) -> usize {
    let p = cur.process();
    (if effective { &p.euid } else { &p.uid }).load(Relaxed) as usize
}

/// setuid: root sets all three IDs; others may only set the effective ID to the real or
/// saved one.
pub fn setuid(t: &CurrentTask, uid: u32) -> SysResult<usize> {
    if uid == u32::MAX {
        return Err(Errno::EINVAL);
    }
    let p = t.process();
    if privileged(t) {
        let old = p.uid.swap(uid, Relaxed);
        p.euid.store(uid, Relaxed);
        p.suid.store(uid, Relaxed);
        p.fsuid.store(uid, Relaxed);
        if old != uid {
            t.recharge(uid);
        }
        Ok(0)
    } else if uid == p.uid.load(Relaxed) || uid == p.suid.load(Relaxed) {
        p.euid.store(uid, Relaxed);
        p.fsuid.store(uid, Relaxed);
        Ok(0)
    } else {
        Err(Errno::EPERM)
    }
}

/// setfsuid/setfsgid: the old ID, always; the new one taken when it is not -1 and the caller is
/// root or names one of its own IDs (Svelt keeps no groups: its only group ID is 0).
pub fn setfsid(cur: &CurrentTask, id: u32, user: bool) -> SysResult<usize> {
    let p = cur.process();
    let (slot, own) = if user {
        let own = [&p.uid, &p.euid, &p.suid, &p.fsuid]
            .iter()
            .any(|i| i.load(Relaxed) == id);
        (&p.fsuid, own)
    } else {
        (&p.fsgid, id == 0)
    };
    let old = slot.load(Relaxed);
    if id != u32::MAX && (privileged(cur) || own) {
        slot.store(id, Relaxed);
    }
    Ok(old as usize)
}
