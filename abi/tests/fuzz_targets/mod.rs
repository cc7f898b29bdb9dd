//! Fuzz targets for the parsers in `svelt-abi` that see bytes a user program controls.
//!
//! Each target is a plain `fn(&[u8])` that panics when a property fails. The same module is
//! compiled into the budgeted run in `abi/tests/fuzz.rs` and into the cargo-fuzz crate in
//! `abi/fuzz`, so a crash found by either reproduces in both.

pub mod bpf;
pub mod cpio;
pub mod decode;
pub mod elf;
pub mod regset;
pub mod sigframe;
pub mod stack;
pub mod text;
pub mod uapi;
pub mod util;
pub mod vlctl;

/// A target: its name (the cargo-fuzz binary is called the same) and its function.
pub type Target = (&'static str, fn(&[u8]));

pub const TARGETS: &[Target] = &[
    ("sigreturn", sigframe::sigreturn),
    ("sigdeliver", sigframe::sigdeliver),
    ("regset", regset::regset),
    ("elf", elf::elf),
    ("cpio", cpio::cpio),
    ("cpio_writer", cpio::cpio_writer),
    ("vlctl", vlctl::vlctl),
    ("bpf", bpf::bpf),
    ("cmdline", text::cmdline),
    ("path", text::path),
    ("mount", text::mount),
    ("stack", stack::stack),
    ("uapi", uapi::uapi),
    ("decode", decode::decode),
];

/// Valid inputs to start mutating from, per target.
pub fn seeds(name: &str) -> std::vec::Vec<std::vec::Vec<u8>> {
    match name {
        "sigreturn" => vec![sigframe::seed_frame(false), sigframe::seed_frame(true)],
        "sigdeliver" => vec![sigframe::seed_delivery()],
        "regset" => regset::seeds(),
        "elf" => elf::seeds(),
        "cpio" => cpio::seeds(),
        "cpio_writer" => cpio::writer_seeds(),
        "vlctl" => vlctl::seeds(),
        "bpf" => bpf::seeds(),
        "cmdline" => text::cmdline_seeds(),
        "path" => text::path_seeds(),
        "mount" => text::mount_seeds(),
        "stack" => stack::seeds(),
        "uapi" => uapi::seeds(),
        "decode" => decode::seeds(),
        _ => vec![],
    }
}
