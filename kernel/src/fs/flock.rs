//! flock(2): advisory whole-file locks, shared or exclusive, held by an open file description
//! (its dups and a fork's copies share it) until LOCK_UN or its last close. Changing a lock's
//! kind drops the old one first, as Linux does (the change is not atomic).

#![forbid(unsafe_code)]

use super::File;
use crate::task::wait::WaitQueue;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};

const LOCK_SH: u32 = 1;
const LOCK_EX: u32 = 2;
const LOCK_NB: u32 = 4;
const LOCK_UN: u32 = 8;

/// A held lock: the file (inode) it is on, the open file description holding it, whether it
/// is exclusive.
struct Held {
    file_key: usize,
    holder: usize,
    exclusive: bool,
}

static LOCKS: Mutex<Vec<Held>> = Mutex::new(Vec::new());
/// How many locks are held: closes skip the table while it is 0.
static COUNT: AtomicUsize = AtomicUsize::new(0);
static WAITERS: WaitQueue = WaitQueue::new();

/// What a lock is on: the node, or the open file itself for a file without one.
fn file_key(f: &File) -> usize {
    match &f.node {
        Some(n) => alloc::sync::Arc::as_ptr(n) as *const u8 as usize,
        None => alloc::sync::Arc::as_ptr(&f.ops) as *const u8 as usize,
    }
}

fn remove(locks: &mut Vec<Held>, holder: usize) -> bool {
    let before = locks.len();
    locks.retain(|h| h.holder != holder);
    let removed = before - locks.len();
    COUNT.fetch_sub(removed, Ordering::Relaxed);
    removed > 0
}

pub fn flock(f: &File, op: u32) -> SysResult<usize> {
    let holder = f as *const File as usize;
    let key = file_key(f);
    let exclusive = match op & !LOCK_NB {
        LOCK_SH => false,
        LOCK_EX => true,
        LOCK_UN => {
            if remove(&mut LOCKS.lock(), holder) {
                WAITERS.wake_all();
            }
            return Ok(0);
        }
        _ => return Err(Errno::EINVAL),
    };
    {
        let mut locks = LOCKS.lock();
        match locks.iter().find(|h| h.holder == holder) {
            Some(h) if h.exclusive == exclusive => return Ok(0),
            Some(_) => {
                remove(&mut locks, holder);
                WAITERS.wake_all();
            }
            None => {}
        }
    }
    WAITERS
        .wait(|| {
            let mut locks = LOCKS.lock();
            let conflict = locks
                .iter()
                .any(|h| h.file_key == key && (exclusive || h.exclusive));
            if !conflict {
                if locks.try_reserve(1).is_err() {
                    return Some(Err(Errno::ENOMEM));
                }
                locks.push(Held {
                    file_key: key,
                    holder,
                    exclusive,
                });
                COUNT.fetch_add(1, Ordering::Relaxed);
                Some(Ok(0))
            } else if op & LOCK_NB != 0 {
                Some(Err(Errno::EAGAIN))
            } else {
                None
            }
        })
        .map_err(|_| Errno::ERESTARTSYS)?
}

/// The last close of an open file description: its lock goes.
pub fn release(f: &File) {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    if remove(&mut LOCKS.lock(), f as *const File as usize) {
        WAITERS.wake_all();
    }
}
