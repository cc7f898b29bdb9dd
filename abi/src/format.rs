//! File and text formats the kernel reads or writes: ELF executables and core files, `#!`
//! scripts, a new program's initial stack, and KTAP reports.

pub mod coredump;
pub mod elf;
pub mod ktap;
pub mod script;
pub mod stack;
