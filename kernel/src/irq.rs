//! Interrupt handling: acknowledge, dispatch, end of interrupt.

use crate::drivers::{gic, timer};
use core::sync::atomic::{AtomicU32, Ordering};

/// The timer's interrupt ID (a PPI), from the DTB.
static TIMER_INTID: AtomicU32 = AtomicU32::new(27);

pub fn set_timer_intid(id: u32) {
    TIMER_INTID.store(id, Ordering::Relaxed);
}

pub fn timer_intid() -> u32 {
    TIMER_INTID.load(Ordering::Relaxed)
}

/// The console UART's interrupt ID (an SPI) once its input is on; 0 before.
static UART_INTID: AtomicU32 = AtomicU32::new(0);

/// Routes the console UART's interrupt `id` to this CPU and turns its input on.
pub fn enable_console_input(id: u32) {
    let Some(gic) = gic::get() else { return };
    UART_INTID.store(id, Ordering::Relaxed);
    gic.enable_spi(id);
    crate::console::enable_input();
}

/// The SGI that asks a CPU to reschedule (a task was queued for it, or a signal needs a
/// running task's attention).
pub const SGI_RESCHEDULE: u32 = 0;

/// Called from the IRQ vector with IRQs masked.
pub fn handle() {
    let Some(gic) = gic::get() else { return };
    while let Some(id) = gic.ack() {
        if id == timer_intid() {
            timer::arm_next_tick();
            crate::percpu::this().ticks.fetch_add(1, Ordering::Relaxed);
            crate::task::timer::tick();
            crate::fs::tty::send_deferred();
            if crate::task::sched::started() {
                crate::task::sched::tick();
            }
        } else if id != 0 && id == UART_INTID.load(Ordering::Relaxed) {
            crate::fs::tty::uart_interrupt();
        } else if id == SGI_RESCHEDULE {
            crate::task::sched::set_need_resched();
        } else {
            log::warn!("unexpected interrupt {id}");
        }
        gic.eoi(id);
    }
}

/// Asks CPU `cpu` to look at its run queue.
pub fn send_reschedule(cpu: usize) {
    if let Some(g) = gic::get() {
        let mpidr = crate::percpu::get(cpu).mpidr.load(Ordering::Relaxed);
        g.send_sgi(SGI_RESCHEDULE, cpu, mpidr);
    }
}
