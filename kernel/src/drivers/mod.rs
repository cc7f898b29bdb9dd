//! Device drivers: PL011 console, GIC (v3 and v2), the generic timer, PSCI.
pub mod gic;
pub mod pl011;
pub mod psci;
pub mod timer;
