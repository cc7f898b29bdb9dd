//! Pure, hardware-free logic shared by the Svelt kernel, its userland and the host tests.
//!
//! Nothing here touches a register or a device: the kernel reads the hardware and hands the raw
//! values to these functions, which are unit-tested on the host.
#![no_std]
// Pure logic: nothing here needs unsafe, and the compiler holds it to that.
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

pub mod acpi;
pub mod auxv;
pub mod bpf;
pub mod bytes;
pub mod cmdline;
pub mod coredump;
pub mod cpio;
pub mod cpu;
pub mod cpumask;
pub mod efi;
pub mod elf;
pub mod errno;
pub mod esr;
pub mod fcntl;
pub mod fdt;
pub mod fppolicy;
pub mod fpstate;
pub mod fs;
pub mod futex;
pub mod gcs;
pub mod hwcap;
pub mod idregs;
pub mod klog;
pub mod ktap;
pub mod ldisc;
pub mod memrange;
pub mod mm;
pub mod mops;
pub mod mount;
pub mod net;
pub mod nr;
pub mod path;
pub mod prctl;
pub mod procfs;
pub mod ptrace;
pub mod regset;
pub mod rng;
pub mod sched;
pub mod script;
pub mod sigframe;
pub mod signal;
pub mod smpboot;
pub mod stack;
pub mod sys;
pub mod sysctl;
pub mod time;
pub mod tty;
pub mod uart;
pub mod vl;
pub mod vlctl;
