//! Core dumps, as Linux writes them with its default core_pattern ("core", core_uses_pid 0):
//! the thread a core-dumping signal kills stops the other threads of its process, writes an
//! ELF core file `core` in the process's working directory (layout in svelt_abi::format::coredump),
//! and only then lets the process exit. With `svelt.coredump=semihosting` the same bytes also
//! go to the host as `DIR/core.COMM.PID`.
//!
//! None of this is on a hot path: it runs once per fatal signal. Nothing here may panic or
//! abort on a user-sized allocation; any failure just means no core.
//!
//! This file is the stop protocol (the dumper parks the other threads and lets them go when
//! the core is written); `write` builds the file and holds no `unsafe` code.

#![deny(unsafe_code)]

mod write;

use crate::arch::exception::TrapFrame;
use crate::process::signal::SigInfo;
use crate::process::{exit, sched, CurrentTask, Held, Process, State, Thread};
use crate::sync::IrqLock;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use svelt_abi::uapi::sched::wstatus;

const PAGE: u64 = 4096;

/// A dump in progress: the threads that have stopped for it, and whether it is over.
pub struct CoreState {
    dumper: u32,
    parked: IrqLock<Vec<Arc<Thread>>>,
    done: AtomicBool,
}

static SEMIHOSTING: AtomicBool = AtomicBool::new(false);
static HOST_DIR: spin::Once<String> = spin::Once::new();

/// From the command line: whether cores also go to the host, and into which directory.
pub fn configure(semihosting: bool, dir: Option<&str>) {
    SEMIHOSTING.store(semihosting, Ordering::Relaxed);
    if let Some(d) = dir {
        HOST_DIR.call_once(|| String::from(d));
    }
}

/// At the start of every thread exit: while another thread of the process dumps core, wait
/// (parked, so the dumper may read this thread's registers) until the core is written.
pub fn task_exit(cur: &CurrentTask) {
    let Some(cs) = cur.process.core_state.lock().clone() else {
        return;
    };
    if cs.dumper == cur.tid {
        return;
    }
    let t = &cur.to_arc();
    loop {
        {
            let mut parked = cs.parked.lock();
            if cs.done.load(Ordering::Acquire) {
                return;
            }
            if !parked.iter().any(|x| Arc::ptr_eq(x, t)) {
                parked.push(t.clone());
            }
            // Parked, not Sleeping: a SIGKILL (or any wake-up) must not run it while the
            // dumper reads its registers.
            t.set_state(State::Parked);
        }
        // The dumper unparks every parked thread once `done` is set (under the same lock).
        sched::schedule();
    }
}

/// The current thread was killed by core-dumping signal `info`, with its user registers in
/// `tf`: when RLIMIT_CORE allows, stops the other threads and writes the core. Returns the
/// wait status the process exits with, already recorded as the group's: the core bit is set
/// when a core file was created with its notes (as on Linux, also when RLIMIT_CORE or a full
/// file system then cut it short).
pub fn do_coredump(cur: &CurrentTask, tf: &TrapFrame, info: &SigInfo) -> i32 {
    let me = cur.to_arc();
    let p = me.process();
    let signo = info.signo();
    let plain = wstatus::signaled(signo, false);
    let limit = p.rlimit(svelt_abi::uapi::sys::RLIMIT_CORE);
    // Linux's smallest ELF core: one page.
    if limit < PAGE {
        return plain;
    }
    let cs = Arc::new(CoreState {
        dumper: me.tid,
        parked: IrqLock::new(Vec::new()),
        done: AtomicBool::new(false),
    });
    {
        let mut slot = p.core_state.lock();
        // Another thread already ends the group (exit_group, another fatal signal): no core.
        if slot.is_some() || p.exiting.swap(true, Ordering::AcqRel) {
            return plain;
        }
        p.group_status.store(plain, Ordering::Release);
        *slot = Some(cs.clone());
    }
    exit::kill_group(&p, plain, Some(me.tid));
    let threads = stop_others(&p, &me, &cs);
    let written = write::write_core(cur, &p, tf, info, &threads, limit).is_ok();
    drop(threads);
    let status = wstatus::signaled(signo, written);
    p.group_status.store(status, Ordering::Release);
    {
        let parked = cs.parked.lock();
        cs.done.store(true, Ordering::Release);
        for t in parked.iter() {
            sched::unpark(t.core());
        }
    }
    *p.core_state.lock() = None;
    status
}

/// Waits until every other thread has either stopped for the dump (and left its CPU) or is
/// gone; returns the stopped ones.
fn stop_others(p: &Arc<Process>, me: &Arc<Thread>, cs: &CoreState) -> Stopped {
    let others: Vec<Arc<Thread>> = p
        .live_threads()
        .into_iter()
        .filter(|t| !Arc::ptr_eq(t, me))
        .collect();
    loop {
        let parked = cs.parked.lock().clone();
        let ready = others.iter().all(|t| {
            t.state() == State::Dead
                || (parked.iter().any(|x| Arc::ptr_eq(x, t))
                    && t.state() == State::Parked
                    && !t.on_cpu.load(Ordering::Acquire))
        });
        if ready {
            return Stopped(
                others
                    .into_iter()
                    .filter(|t| parked.iter().any(|x| Arc::ptr_eq(x, t)))
                    .collect(),
            );
        }
        sched::yield_now();
    }
}

/// The other threads of the dumping process, as `stop_others` left them: each asleep in
/// `task_exit`, parked and off its CPU. `do_coredump` unparks them only after dropping this.
struct Stopped(Vec<Arc<Thread>>);

impl Stopped {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// Each stopped thread's user state, for its notes.
    // The file's one unsafe: vouching that the stopped threads stay parked (Held::parked).
    #[allow(unsafe_code)]
    fn held(&self) -> impl Iterator<Item = Held<'_>> {
        self.0.iter().map(|t| {
            // SAFETY: the thread is parked in task_exit and off its CPU (`stop_others`), and
            // stays so until the dump is done (`CoreState::done`), which `do_coredump` sets
            // only after this borrow of `self` has ended.
            Held::new(unsafe { crate::task::Held::parked(t) }, t)
        })
    }
}
