//! Boot code that runs before the kernel proper: the EFI stub (`efi`), which UEFI firmware
//! starts and which enters the Image as a Linux Image loader would. The Image header, head.s
//! and the early page tables are arch code (arch/aarch64/boot.rs); `kernel_main` takes over
//! from there.

mod efi;
