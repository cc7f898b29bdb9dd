//! Locks. `IrqLock` is a spin lock that masks IRQs on this CPU while held, for data that
//! interrupt handlers also touch (run queues, wait queues, timers) and so for anything taken
//! under those. Lock order, outermost first: task tables → process state → wait queue → run queue.

#![forbid(unsafe_code)]

use crate::arch::cpu;
use core::ops::{Deref, DerefMut};
use spin::{Mutex, MutexGuard};

pub struct IrqLock<T> {
    inner: Mutex<T>,
}

/// The lock held and IRQs masked. Fields drop in order: the lock is released before the
/// interrupt mask is restored.
pub struct IrqLockGuard<'a, T> {
    guard: MutexGuard<'a, T>,
    _irqs: cpu::IrqGuard,
}

impl<T> IrqLock<T> {
    pub const fn new(v: T) -> IrqLock<T> {
        IrqLock {
            inner: Mutex::new(v),
        }
    }

    pub fn try_lock(&self) -> Option<IrqLockGuard<'_, T>> {
        let irqs = cpu::IrqGuard::new();
        let guard = self.inner.try_lock()?;
        Some(IrqLockGuard { guard, _irqs: irqs })
    }

    pub fn lock(&self) -> IrqLockGuard<'_, T> {
        let irqs = cpu::IrqGuard::new();
        IrqLockGuard {
            guard: self.inner.lock(),
            _irqs: irqs,
        }
    }
}

impl<T> Deref for IrqLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for IrqLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}
