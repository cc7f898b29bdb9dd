//! Device drivers: PL011 and 16550 consoles, GIC (v3 and v2), the generic timer, PSCI.
pub mod gic;
pub mod ns16550;
pub mod pl011;
pub mod psci;
pub mod timer;
