//! Interrupt handling: acknowledge, dispatch to the handlers their owners registered, end of
//! interrupt.

#![forbid(unsafe_code)]

use crate::drivers::{gic, timer};
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use spin::Once;

/// The timer's interrupt ID (a PPI), from the DTB.
static TIMER_INTID: AtomicU32 = AtomicU32::new(27);

pub fn set_timer_intid(id: u32) {
    TIMER_INTID.store(id, Ordering::Relaxed);
}

pub fn timer_intid() -> u32 {
    TIMER_INTID.load(Ordering::Relaxed)
}

/// What an interrupt runs. Each owner registers its own at boot (task::timer and the scheduler
/// for the timer and the IPIs, the tty for the console UART), so this file names none of them;
/// dispatch reads a slot and calls through it: no lock, no allocation.
pub type Handler = fn();

/// Most handlers the timer interrupt runs.
const TICK_SLOTS: usize = 6;

/// The timer interrupt's handlers, in the order registered; the first empty slot ends the list.
static TICK: [Once<Handler>; TICK_SLOTS] = [const { Once::new() }; TICK_SLOTS];
static TICK_USED: AtomicUsize = AtomicUsize::new(0);

/// Adds `f` to what every timer interrupt runs, on every CPU. Boot time only.
pub fn on_tick(f: Handler) {
    let i = TICK_USED.fetch_add(1, Ordering::Relaxed);
    assert!(i < TICK_SLOTS, "more than {TICK_SLOTS} timer handlers");
    TICK[i].call_once(|| f);
}

/// Software-generated interrupts (IPIs): INTIDs 0 to 15.
const SGIS: usize = 16;

static IPI: [Once<Handler>; SGIS] = [const { Once::new() }; SGIS];

/// Makes `f` the handler of SGI `sgi` on every CPU. Boot time only.
pub fn on_ipi(sgi: u32, f: Handler) {
    IPI[sgi as usize].call_once(|| f);
}

/// The one device interrupt (an SPI) Svelt takes, the console UART's; 0 before it is routed.
static SPI_INTID: AtomicU32 = AtomicU32::new(0);
static SPI: Once<Handler> = Once::new();

/// The console UART's SPI, once routed.
pub fn uart_intid() -> Option<u32> {
    Some(SPI_INTID.load(Ordering::Relaxed)).filter(|&id| id != 0)
}

/// Routes SPI `id` to this CPU with `f` as its handler. False without a GIC.
pub fn enable_spi(id: u32, f: Handler) -> bool {
    let Some(gic) = gic::get() else { return false };
    SPI.call_once(|| f);
    SPI_INTID.store(id, Ordering::Relaxed);
    gic.enable_spi(id);
    true
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
            for slot in &TICK {
                let Some(f) = slot.get() else { break };
                f();
            }
        } else if id != 0 && id == SPI_INTID.load(Ordering::Relaxed) {
            crate::percpu::this()
                .uart_irqs
                .fetch_add(1, Ordering::Relaxed);
            if let Some(f) = SPI.get() {
                f();
            }
        } else if let Some(f) = IPI.get(id as usize).and_then(Once::get) {
            if id == SGI_RESCHEDULE {
                crate::percpu::this()
                    .resched_ipis
                    .fetch_add(1, Ordering::Relaxed);
            }
            f();
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
