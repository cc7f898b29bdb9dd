//! What the task core asks of the layer above it, registered once at boot.
//!
//! A wait must know whether something should end it early (a signal, a tracer's interrupt) and
//! how to wake a sleeper for such an event without undoing what that layer holds it for (a
//! tracer keeps a stopped tracee frozen). The core knows neither signals nor tracers, so the
//! POSIX layer answers (`process::init`); until it does, only a kill ends a wait and a wake-up
//! is a plain one.

#![forbid(unsafe_code)]

use super::{sched, Task};
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use spin::Once;

pub struct Hooks {
    /// `t` has an event that ends an interruptible wait (Linux's signal_pending).
    pub interrupted: fn(&Task) -> bool,
    /// Wakes `t` for such an event (or a timer's), unless the layer holds it asleep.
    pub wake: fn(&Arc<Task>),
}

static HOOKS: Once<Hooks> = Once::new();

pub fn register(h: Hooks) {
    HOOKS.call_once(|| h);
}

pub fn interrupted(t: &Task) -> bool {
    match HOOKS.get() {
        Some(h) => (h.interrupted)(t),
        None => t.killed.load(Ordering::Acquire),
    }
}

pub fn wake(t: &Arc<Task>) {
    match HOOKS.get() {
        Some(h) => (h.wake)(t),
        None => sched::wake(t),
    }
}
