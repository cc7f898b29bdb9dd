//! Locks. `IrqLock` is a spin lock that masks IRQs on this CPU while held, for data that
//! interrupt handlers also touch (run queues, wait queues, timers) and so for anything taken
//! under those. Lock order, outermost first: task tables → process state → wait queue → run queue.

use core::ops::{Deref, DerefMut};
use spin::{Mutex, MutexGuard};

pub struct IrqLock<T> {
    inner: Mutex<T>,
}

pub struct IrqGuard<'a, T> {
    guard: Option<MutexGuard<'a, T>>,
    daif: u64,
}

impl<T> IrqLock<T> {
    pub const fn new(v: T) -> IrqLock<T> {
        IrqLock {
            inner: Mutex::new(v),
        }
    }

    pub fn try_lock(&self) -> Option<IrqGuard<'_, T>> {
        let daif = crate::arch::aarch64::cpu::irq_save();
        match self.inner.try_lock() {
            Some(g) => Some(IrqGuard {
                guard: Some(g),
                daif,
            }),
            None => {
                crate::arch::aarch64::cpu::irq_restore(daif);
                None
            }
        }
    }

    pub fn lock(&self) -> IrqGuard<'_, T> {
        let daif = crate::arch::aarch64::cpu::irq_save();
        IrqGuard {
            guard: Some(self.inner.lock()),
            daif,
        }
    }
}

impl<T> Deref for IrqGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().unwrap()
    }
}

impl<T> DerefMut for IrqGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().unwrap()
    }
}

impl<T> Drop for IrqGuard<'_, T> {
    fn drop(&mut self) {
        self.guard = None;
        crate::arch::aarch64::cpu::irq_restore(self.daif);
    }
}
