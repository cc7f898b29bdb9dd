//! Scheduling attributes Svelt keeps and reports but does not act on (its scheduler treats
//! every task alike): nice values (getpriority/setpriority), policies and parameters
//! (sched_*scheduler, sched_*param, sched_getattr, priority ranges) and I/O priorities
//! (ioprio_get/set), with Linux's checks and errors. The real-time and deadline policies are
//! refused with EPERM, as Linux refuses them where no real-time runtime is granted (a
//! cgroup with CONFIG_RT_GROUP_SCHED and no budget); the normal ones are accepted.

#![forbid(unsafe_code)]

use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::process::{self, CurrentTask, Thread};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::sched::SCHED_RESET_ON_FORK;

const SCHED_OTHER: u32 = 0;
const SCHED_FIFO: u32 = 1;
const SCHED_RR: u32 = 2;
const SCHED_BATCH: u32 = 3;
const SCHED_IDLE: u32 = 5;
const SCHED_DEADLINE: u32 = 6;
/// sched_attr.sched_flags' SCHED_FLAG_RESET_ON_FORK.
const SCHED_FLAG_RESET_ON_FORK: u64 = 1;
const SCHED_ATTR_SIZE_VER0: usize = 48;
const SCHED_ATTR_SIZE_VER1: usize = 56;
/// ioprio classes (the top bits of an I/O priority) and levels per class.
const IOPRIO_CLASS_SHIFT: u32 = 13;
const IOPRIO_CLASS_NONE: u32 = 0;
const IOPRIO_CLASS_RT: u32 = 1;
const IOPRIO_CLASS_BE: u32 = 2;
const IOPRIO_CLASS_IDLE: u32 = 3;
const IOPRIO_NR_LEVELS: u32 = 8;

/// The threads `which`/`who` name (PRIO_PROCESS: a thread, 0 the caller; PRIO_PGRP: a process
/// group's threads, 0 the caller's; PRIO_USER: a real user ID's, 0 the caller's).
fn targets(cur: &CurrentTask, which: u32, who: u32) -> SysResult<Vec<Arc<Thread>>> {
    const PRIO_PROCESS: u32 = 0;
    const PRIO_PGRP: u32 = 1;
    const PRIO_USER: u32 = 2;
    let me = cur.to_arc();
    let v = match which {
        PRIO_PROCESS if who == 0 => alloc::vec![me],
        PRIO_PROCESS => process::find_task(who).into_iter().collect(),
        PRIO_PGRP => {
            let pgid = if who == 0 {
                me.process().pgid.load(Relaxed)
            } else {
                who
            };
            process::all_processes()
                .into_iter()
                .filter(|p| p.pgid.load(Relaxed) == pgid)
                .flat_map(|p| p.live_threads())
                .collect()
        }
        PRIO_USER => {
            let uid = if who == 0 {
                me.process().uid.load(Relaxed)
            } else {
                who
            };
            process::all_processes()
                .into_iter()
                .filter(|p| p.uid.load(Relaxed) == uid)
                .flat_map(|p| p.live_threads())
                .collect()
        }
        _ => return Err(Errno::EINVAL),
    };
    if v.is_empty() {
        return Err(Errno::ESRCH);
    }
    Ok(v)
}

/// Whether the caller may change `t`'s scheduling (Linux's set_one_prio and check_same_owner):
/// root, or the owner; lowering a nice value (`raising`) needs root.
fn may_change(cur: &CurrentTask, t: &Thread, raising: bool) -> SysResult<()> {
    if super::cred::privileged(cur) {
        return Ok(());
    }
    let me = cur.process();
    let other = t.process();
    let my_euid = me.euid.load(Relaxed);
    if my_euid != other.euid.load(Relaxed) && my_euid != other.uid.load(Relaxed) {
        return Err(Errno::EPERM);
    }
    if raising {
        return Err(Errno::EACCES);
    }
    Ok(())
}

/// getpriority: 20 minus the lowest nice value among the targets (1..=40; the C library
/// turns it back into a nice value).
pub fn getpriority(cur: &CurrentTask, which: u32, who: u32) -> SysResult<usize> {
    let best = targets(cur, which, who)?
        .iter()
        .map(|t| t.nice.load(Relaxed))
        .min()
        .unwrap_or(0);
    Ok((20 - best) as usize)
}

/// setpriority: every target's nice value, clamped to -20..=19.
pub fn setpriority(cur: &CurrentTask, which: u32, who: u32, nice: i32) -> SysResult<usize> {
    let nice = nice.clamp(-20, 19);
    let ts = targets(cur, which, who)?;
    let mut err = None;
    for t in &ts {
        match may_change(cur, t, nice < t.nice.load(Relaxed)) {
            Ok(()) => t.nice.store(nice, Relaxed),
            Err(e) => err = Some(e),
        }
    }
    err.map_or(Ok(0), Err)
}

/// The thread a sched_* call names: the caller for 0; EINVAL below 0, ESRCH if none.
fn sched_target(cur: &CurrentTask, pid: i32) -> SysResult<Arc<Thread>> {
    match pid {
        0 => Ok(cur.to_arc()),
        p if p < 0 => Err(Errno::EINVAL),
        p => process::find_task(p as u32).ok_or(Errno::ESRCH),
    }
}

/// A policy and priority for a normal task: the real-time and deadline ones are refused with
/// EPERM (see the module comment); a normal policy takes priority 0 only.
fn check_policy(policy: u32, priority: i32) -> SysResult<()> {
    match policy {
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE if priority == 0 => Ok(()),
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE => Err(Errno::EINVAL),
        SCHED_FIFO | SCHED_RR if !(1..=99).contains(&priority) => Err(Errno::EINVAL),
        SCHED_FIFO | SCHED_RR | SCHED_DEADLINE => Err(Errno::EPERM),
        _ => Err(Errno::EINVAL),
    }
}

pub fn sched_getscheduler(cur: &CurrentTask, pid: i32) -> SysResult<usize> {
    Ok(sched_target(cur, pid)?.policy.load(Relaxed) as usize)
}

pub fn sched_setscheduler(
    cur: &CurrentTask,
    pid: i32,
    policy: i32,
    param: UserPtr<i32>,
) -> SysResult<usize> {
    if param.is_null() || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let priority = param.read()?;
    let t = sched_target(cur, pid)?;
    let policy = policy as u32;
    check_policy(policy & !SCHED_RESET_ON_FORK, priority)?;
    may_change(cur, &t, false)?;
    t.policy.store(policy, Relaxed);
    Ok(0)
}

pub fn sched_getparam(cur: &CurrentTask, pid: i32, param: UserPtr<i32>) -> SysResult<usize> {
    if param.is_null() || pid < 0 {
        return Err(Errno::EINVAL);
    }
    sched_target(cur, pid)?;
    param.write(&0)?;
    Ok(0)
}

pub fn sched_setparam(cur: &CurrentTask, pid: i32, param: UserPtr<i32>) -> SysResult<usize> {
    if param.is_null() || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let priority = param.read()?;
    let t = sched_target(cur, pid)?;
    check_policy(t.policy.load(Relaxed) & !SCHED_RESET_ON_FORK, priority)?;
    may_change(cur, &t, false)?;
    Ok(0)
}

/// sched_getattr: `struct sched_attr` (VER1, 56 bytes) cut to the caller's `size`.
pub fn sched_getattr(
    cur: &CurrentTask,
    pid: i32,
    attr: usize,
    size: u32,
    flags: u32,
) -> SysResult<usize> {
    let size = size as usize;
    if attr == 0 || pid < 0 || flags != 0 || !(SCHED_ATTR_SIZE_VER0..=4096).contains(&size) {
        return Err(Errno::EINVAL);
    }
    let t = sched_target(cur, pid)?;
    let policy = t.policy.load(Relaxed);
    let n = size.min(SCHED_ATTR_SIZE_VER1);
    let mut b = [0u8; SCHED_ATTR_SIZE_VER1];
    b[0..4].copy_from_slice(&(n as u32).to_ne_bytes());
    b[4..8].copy_from_slice(&(policy & !SCHED_RESET_ON_FORK).to_ne_bytes());
    let sflags = if policy & SCHED_RESET_ON_FORK != 0 {
        SCHED_FLAG_RESET_ON_FORK
    } else {
        0
    };
    b[8..16].copy_from_slice(&sflags.to_ne_bytes());
    b[16..20].copy_from_slice(&t.nice.load(Relaxed).to_ne_bytes());
    // sched_priority, runtime, deadline, period: 0; util_min 0, util_max 1024.
    b[52..56].copy_from_slice(&1024u32.to_ne_bytes());
    UserSlice::new(attr, n).copy_out(&b[..n])?;
    Ok(0)
}

pub fn sched_get_priority(policy: i32, max: bool) -> SysResult<usize> {
    match policy as u32 {
        SCHED_FIFO | SCHED_RR => Ok(if max { 99 } else { 1 }),
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// ioprio_get: the best (lowest) I/O priority among the targets (IOPRIO_WHO_PROCESS 1,
/// PGRP 2, USER 3: getpriority's selectors plus one); 0 (class NONE) when none was set, as
/// Linux 7.3 reports it.
pub fn ioprio_get(cur: &CurrentTask, which: i32, who: u32) -> SysResult<usize> {
    let which = u32::try_from(which - 1).map_err(|_| Errno::EINVAL)?;
    let ts = targets(cur, which, who)?;
    Ok(ts.iter().map(|t| t.ioprio.load(Relaxed)).min().unwrap_or(0) as usize)
}

/// ioprio_set (Linux's ioprio_check_cap): class NONE at level 0, RT (root only) or BE at
/// levels 0-7, or IDLE; anything else is EINVAL. The bits above the level (hints) are kept.
pub fn ioprio_set(cur: &CurrentTask, which: i32, who: u32, ioprio: u32) -> SysResult<usize> {
    let class = ioprio >> IOPRIO_CLASS_SHIFT;
    let level = ioprio & (IOPRIO_NR_LEVELS - 1);
    match class {
        IOPRIO_CLASS_NONE if level != 0 => return Err(Errno::EINVAL),
        IOPRIO_CLASS_RT if !super::cred::privileged(cur) => return Err(Errno::EPERM),
        IOPRIO_CLASS_NONE | IOPRIO_CLASS_RT | IOPRIO_CLASS_BE | IOPRIO_CLASS_IDLE => {}
        _ => return Err(Errno::EINVAL),
    }
    let which = u32::try_from(which - 1).map_err(|_| Errno::EINVAL)?;
    for t in targets(cur, which, who)? {
        may_change(cur, &t, false)?;
        t.ioprio.store(ioprio, Relaxed);
    }
    Ok(0)
}
