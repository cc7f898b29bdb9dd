//! The runtime of Svelt's userland test programs: ordinary static Linux arm64 executables with no
//! libc, so that the same binaries run on Svelt and on real Linux (reference mode).
//!
//! - `rt`: `_start` (stack → argc/argv/envp/auxv), the panic handler, a bump allocator
//! - `sys`: raw `svc #0` wrappers returning `Result<usize, Errno>` and the uapi constants they use
//! - `sig`: signal actions, the SA_RESTORER trampoline, siginfo/ucontext/sigframe-record access
//! - `ktap`: KTAP output and the test-list runner every program uses
//! - `proc`: helpers built on the above (run a closure in a child and get its wait status, ...)
//! - `sve`: SVE helpers (RDVL, PR_SVE_*, routines that load/store all of Z/P/FFR around one
//!   syscall, `udf` or spin)
//! - `sme`: SME helpers (hwcaps, PR_SME_*, a streaming/ZA register machine, sigframe records)
//! - `fuzz`: the fuzzers' random-number generators and their bystander process
//! - `cpuid`: the hwcap words, the ID registers as EL0 reads them, which kernel this is
//!
//! Programs are built for `aarch64-unknown-none` and linked at 0x400000 by `link.ld`.
#![no_std]
#![deny(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

pub mod cpuid;
pub mod elfimg;
pub mod fuzz;
pub mod io;
pub mod ktap;
pub mod kvm;
pub mod proc;
pub mod ptrace;
pub mod rt;
pub mod sig;
pub mod sme;
pub mod sve;
pub mod sys;
pub mod vdso;

pub use alloc::{format, string::String, vec, vec::Vec};
pub use sys::Errno;

/// Fails the current test with a message unless `cond` holds.
#[macro_export]
macro_rules! check {
    ($cond:expr) => {
        if !$cond {
            return Err($crate::format!("{}:{}: check failed: {}", file!(), line!(), stringify!($cond)));
        }
    };
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::format!("{}:{}: {}", file!(), line!(), $crate::format!($($fmt)+)));
        }
    };
}

/// Fails the current test unless `left == right`, printing both.
#[macro_export]
macro_rules! check_eq {
    ($left:expr, $right:expr $(,)?) => {{
        let (l, r) = (&$left, &$right);
        if *l != *r {
            return Err($crate::format!(
                "{}:{}: {} == {}: got {:?}, want {:?}",
                file!(), line!(), stringify!($left), stringify!($right), l, r
            ));
        }
    }};
    ($left:expr, $right:expr, $($fmt:tt)+) => {{
        let (l, r) = (&$left, &$right);
        if *l != *r {
            return Err($crate::format!(
                "{}:{}: {}: got {:?}, want {:?}",
                file!(), line!(), $crate::format!($($fmt)+), l, r
            ));
        }
    }};
}

/// Unwraps a syscall result inside a test, failing the test with the errno otherwise.
#[macro_export]
macro_rules! t {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => {
                return Err($crate::format!(
                    "{}:{}: {} failed: {:?}",
                    file!(),
                    line!(),
                    stringify!($e),
                    e
                ))
            }
        }
    };
}

/// Prints to stdout (unbuffered: one write per call).
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::io::print_fd(1, format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::io::print_fd(1, format_args!("{}\n", format_args!($($arg)*))) };
}

#[macro_export]
macro_rules! eprintln {
    ($($arg:tt)*) => { $crate::io::print_fd(2, format_args!("{}\n", format_args!($($arg)*))) };
}

/// Declares `main(args) -> i32` as the program's entry point.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[no_mangle]
        extern "Rust" fn svelt_main(args: &$crate::rt::Args) -> i32 {
            $main(args)
        }
    };
}
