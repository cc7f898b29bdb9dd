//! Pure, hardware-free logic shared by the Svelt kernel, its userland and the host tests.
//!
//! Nothing here touches a register or a device: the kernel reads the hardware and hands the raw
//! values to these functions, which are unit-tested on the host.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod cmdline;
pub mod cpio;
pub mod cpu;
pub mod esr;
pub mod memrange;
pub mod vl;
pub mod errno;
pub mod nr;
pub mod bytes;
pub mod fs;
pub mod tty;
pub mod time;
pub mod mm;
pub mod sched;
pub mod hwcap;
pub mod sys;
pub mod auxv;
pub mod elf;
pub mod stack;
pub mod signal;
pub mod sigframe;
