//! Pure, hardware-free logic shared by the Svelt kernel, its userland and the host tests.
//!
//! The rule: abi decides, the kernel carries out, arch touches registers. Everything here is
//! plain data in and plain data out: no `unsafe`, no registers, no devices. The kernel reads the
//! hardware and the user's memory and hands the raw values to these functions, which are
//! unit-tested on the host.
//!
//! The modules are grouped by what they hold:
//! - [`uapi`]: Linux's user ABI (syscall numbers, flags, structures, argument rules, /proc texts);
//! - [`boot`]: boot-time parsing (device tree, ACPI, EFI, command line, initramfs);
//! - [`fp`]: FP/SVE/SME state, vector lengths, signal frames and ptrace regsets;
//! - [`isa`]: CPU features, HWCAPs, exception syndromes and the optional features' rules;
//! - [`format`]: file formats (ELF, core files, `#!` scripts, the initial stack, KTAP);
//! - [`util`]: shared helpers (byte fields, a test RNG).
#![no_std]
// Pure logic: nothing here needs unsafe, and the compiler holds it to that.
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

pub mod boot;
pub mod format;
pub mod fp;
pub mod isa;
pub mod uapi;
pub mod util;
