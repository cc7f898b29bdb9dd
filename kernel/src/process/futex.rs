//! Futexes: sleep while a user word holds an expected value; wake sleepers on an address.
//!
//! A key is (address space, address) for private futexes and private memory, or (shared
//! object, offset) for MAP_SHARED memory, so processes sharing memory meet on the same key.

#![forbid(unsafe_code)]

use super::{sched, CurrentTask, State, Thread};
use crate::mm::uaccess::UserPtr;
use crate::sync::IrqLock;
use alloc::sync::Arc;
use alloc::vec::Vec;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::futex::{FutexClock, FutexCmd, FutexOp, FutexTimeout};
use svelt_abi::uapi::time::Timespec;

type Key = (u64, usize);

struct Waiter {
    key: Key,
    bitset: u32,
    task: Arc<Thread>,
}

/// Held while a waiter compares the word and queues itself, and while a waker dequeues, so no
/// wake-up falls between the two.
static FUTEX_LOCK: Mutex<()> = Mutex::new(());
static WAITERS: IrqLock<Vec<Waiter>> = IrqLock::new(Vec::new());

fn key_of(t: &Thread, uaddr: usize, private: bool) -> SysResult<Key> {
    if !uaddr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    if uaddr >= crate::mm::aspace::USER_END - 4 {
        return Err(Errno::EFAULT);
    }
    let mm = t.mm().ok_or(Errno::EFAULT)?;
    let mut g = mm.lock();
    if !private {
        // A shared futex is keyed by the memory behind it, so the page must exist.
        g.translate(uaddr, crate::mm::aspace::Access::Read)
            .map_err(|_| Errno::EFAULT)?;
        if let Some((obj, off)) = g.shared_key(uaddr) {
            return Ok((obj as u64 | 1 << 63, off));
        }
    }
    Ok((g.id, uaddr))
}

pub fn futex(
    cur: &CurrentTask,
    uaddr: usize,
    op: u32,
    val: u32,
    timeout: usize,
    uaddr2: usize,
    val3: u32,
) -> SysResult<usize> {
    // Linux reads the timeout before it looks at the rest of the call.
    let deadline = match FutexOp::timeout(op, timeout) {
        Some(t) => Some(read_deadline(t)?),
        None => None,
    };
    let FutexOp { cmd, private, .. } = FutexOp::decode(op, val, timeout, uaddr2, val3)?;
    match cmd {
        FutexCmd::Wait { val, bitset } => wait(cur, uaddr, val, deadline, bitset, private),
        FutexCmd::Wake { count, bitset } => wake(cur, uaddr, count as usize, bitset, private),
        FutexCmd::Requeue {
            wake,
            requeue: nreq,
            uaddr2,
            cmp,
        } => requeue(
            cur,
            uaddr,
            uaddr2,
            wake as usize,
            nreq as usize,
            cmp,
            private,
        ),
        // WAKE_OP needs an atomic read-modify-write of user memory, and the PI commands
        // priority inheritance: neither exists here.
        FutexCmd::WakeOp { .. }
        | FutexCmd::LockPi { .. }
        | FutexCmd::UnlockPi
        | FutexCmd::TrylockPi
        | FutexCmd::WaitRequeuePi { .. }
        | FutexCmd::CmpRequeuePi { .. } => Err(Errno::ENOSYS),
    }
}

/// The deadline (counter) of a futex timeout.
fn read_deadline(t: FutexTimeout) -> SysResult<u64> {
    let ts = UserPtr::<Timespec>::new(t.addr).read()?.validate()?;
    let ns = (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64);
    let rel = match t.clock {
        FutexClock::Relative => ns,
        FutexClock::Monotonic => ns.saturating_sub(crate::time::now_ns()),
        FutexClock::Realtime => ns.saturating_sub(crate::time::realtime_ns()),
    };
    Ok(crate::time::deadline_after_ns(rel))
}

fn wait(
    cur: &CurrentTask,
    uaddr: usize,
    val: u32,
    deadline: Option<u64>,
    bitset: u32,
    private: bool,
) -> SysResult<usize> {
    let me = cur.to_arc();
    let key = key_of(&me, uaddr, private)?;
    {
        let _g = FUTEX_LOCK.lock();
        let cur = UserPtr::<u32>::new(uaddr).read()?;
        if cur != val {
            return Err(Errno::EAGAIN);
        }
        me.set_state(State::Sleeping);
        WAITERS.lock().push(Waiter {
            key,
            bitset,
            task: me.clone(),
        });
    }
    // A signal that arrived before we were Sleeping found nothing to wake: look now (one
    // arriving from here on wakes us).
    if crate::process::signal::interrupted(&me) {
        let _g = FUTEX_LOCK.lock();
        let mut w = WAITERS.lock();
        let queued = w.iter().position(|x| Arc::ptr_eq(&x.task, &me));
        if let Some(i) = queued {
            w.remove(i);
        }
        drop(w);
        drop(_g);
        sched::cancel_sleep(me.core());
        // Already taken off the queue by a waker: that wake-up is ours.
        return if queued.is_some() {
            Err(Errno::ERESTARTSYS)
        } else {
            Ok(0)
        };
    }
    if let Some(d) = deadline {
        crate::task::timer::wake_at(d, me.core());
    }
    sched::schedule();
    if deadline.is_some() {
        crate::task::timer::cancel_wake(&me);
    }
    let _g = FUTEX_LOCK.lock();
    let mut w = WAITERS.lock();
    match w.iter().position(|x| Arc::ptr_eq(&x.task, &me)) {
        None => Ok(0),
        Some(i) => {
            w.remove(i);
            if deadline.is_some_and(|d| crate::arch::cpu::counter() >= d) {
                Err(Errno::ETIMEDOUT)
            } else {
                Err(Errno::ERESTARTSYS)
            }
        }
    }
}

fn wake_key(key: Key, n: usize, bitset: u32) -> usize {
    let woken: Vec<Arc<Thread>> = {
        let mut w = WAITERS.lock();
        let mut out = Vec::new();
        let mut i = 0;
        while i < w.len() && out.len() < n {
            if w[i].key == key && w[i].bitset & bitset != 0 {
                out.push(w.remove(i).task);
            } else {
                i += 1;
            }
        }
        out
    };
    let n = woken.len();
    for t in woken {
        crate::process::ptrace::wake_unless_frozen(&t);
    }
    n
}

fn wake(cur: &CurrentTask, uaddr: usize, n: usize, bitset: u32, private: bool) -> SysResult<usize> {
    let key = key_of(cur, uaddr, private)?;
    let _g = FUTEX_LOCK.lock();
    Ok(wake_key(key, n, bitset))
}

/// Wakes waiters on `uaddr` in `t`'s address space (thread exit with CLONE_CHILD_CLEARTID).
pub fn wake_addr(t: &Thread, uaddr: usize, n: usize) -> SysResult<usize> {
    let key = key_of(t, uaddr, false)?;
    let _g = FUTEX_LOCK.lock();
    Ok(wake_key(key, n, u32::MAX))
}

fn requeue(
    cur: &CurrentTask,
    uaddr: usize,
    uaddr2: usize,
    nwake: usize,
    nreq: usize,
    cmp: Option<u32>,
    private: bool,
) -> SysResult<usize> {
    let (k1, k2) = (key_of(cur, uaddr, private)?, key_of(cur, uaddr2, private)?);
    let _g = FUTEX_LOCK.lock();
    if let Some(v) = cmp {
        if UserPtr::<u32>::new(uaddr).read()? != v {
            return Err(Errno::EAGAIN);
        }
    }
    let woken = wake_key(k1, nwake, u32::MAX);
    let mut moved = 0;
    for w in WAITERS.lock().iter_mut().filter(|w| w.key == k1) {
        if moved == nreq {
            break;
        }
        w.key = k2;
        moved += 1;
    }
    Ok(woken + moved)
}
