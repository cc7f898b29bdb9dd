//! Boot-time parsing and building: what the firmware, the device tree, ACPI and the EFI stub
//! describe (RAM, CPUs, consoles, the command line), and the initramfs archive.

pub mod acpi;
pub mod cmdline;
pub mod cpio;
pub mod efi;
pub mod fdt;
pub mod guest;
pub mod memrange;
pub mod smpboot;
pub mod uart;
