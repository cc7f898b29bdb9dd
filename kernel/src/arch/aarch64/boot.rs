//! Entry from a Linux Image loader: boot/head.s, with the constants it needs from Rust.
//!
//! head.s stays at EL2 with VHE (or drops from EL2 to EL1) as `el` describes, zeroes BSS, builds
//! `EARLY_TABLES`, turns the MMU on and calls `kernel_main(dtb_pa, entry_el, image_pa)` on
//! `BOOT_STACK`. Secondary CPUs enter at
//! `secondary_entry` with the physical address of a [`SecondaryBoot`] (PSCI CPU_ON's argument),
//! or, released from a spin table with no argument, at `spin_table_entry`, which finds that
//! address by MPIDR in [`SPIN_BOOT_TABLE`].

use super::mmu::{self, PAGE_SIZE};
use svelt_abi::boot::smpboot::{SpinBootTable, MPIDR_AFFINITY_MASK};
use svelt_abi::uapi::cpumask::NR_CPUS;

/// Boot CPU stack size.
pub const BOOT_STACK_SIZE: usize = 64 * 1024;

#[repr(C, align(4096))]
pub struct Stack<const N: usize>(pub [u8; N]);

/// The boot CPU's stack (in BSS).
pub static mut BOOT_STACK: Stack<BOOT_STACK_SIZE> = Stack([0; BOOT_STACK_SIZE]);

/// Nine page-table pages for the early map; see head.s for their roles. Page 0 (the identity
/// map's root) stays in use: secondary CPUs turn their MMU on through it.
#[repr(C, align(4096))]
pub struct EarlyTables(pub [[u64; 512]; 9]);
pub static mut EARLY_TABLES: EarlyTables = EarlyTables([[0; 512]; 9]);

/// What a secondary CPU reads, with its MMU off, before it can run Rust. Layout shared with head.s.
#[repr(C)]
pub struct SecondaryBoot {
    pub ttbr1: u64,
    pub stack_top: u64,
    pub arg: u64,
    /// 1 if the kernel runs at EL2 (VHE): the secondary stays there too, or stays out.
    pub vhe: u64,
}
const _: () = assert!(core::mem::offset_of!(SecondaryBoot, ttbr1) == 0);
const _: () = assert!(core::mem::offset_of!(SecondaryBoot, stack_top) == 8);
const _: () = assert!(core::mem::offset_of!(SecondaryBoot, arg) == 16);
const _: () = assert!(core::mem::offset_of!(SecondaryBoot, vhe) == 24);

/// Boot records of CPUs released from spin tables, by MPIDR; head.s reads it with the MMU off.
/// Written only by the boot CPU before it releases any CPU (`spin_table_add`), then cleaned to
/// the point of coherency (`spin_table_publish`).
static mut SPIN_BOOT_TABLE: SpinBootTable<NR_CPUS> = SpinBootTable::new();

/// Adds a CPU to be released from a spin table, with the physical address of its
/// [`SecondaryBoot`]. False if the table is full or the CPU is already in it.
///
/// # Safety
/// Only the boot CPU calls this, and only before it releases any CPU from a spin table: no
/// other CPU reads or writes the table meanwhile.
pub unsafe fn spin_table_add(mpidr: u64, record_pa: u64) -> bool {
    let table = &raw mut SPIN_BOOT_TABLE;
    // SAFETY: the caller's contract: nothing else touches the table now.
    unsafe { (*table).add(mpidr, record_pa) }
}

/// Makes the table visible to CPUs whose MMU and caches are off.
pub fn spin_table_publish() {
    super::cpu::clean_dcache_to_poc(
        &raw const SPIN_BOOT_TABLE as usize,
        core::mem::size_of::<SpinBootTable<NR_CPUS>>(),
    );
}

/// SCTLR_EL1 with the MMU on: M, C, SA, SA0, I, DZE, UCT, nTWI, nTWE, UCI and the v8.0 RES1 bits.
const SCTLR_EL1_MMU_ON: u64 = 0x30d0_0800
    | (1 << 0)
    | (1 << 2)
    | (1 << 3)
    | (1 << 4)
    | (1 << 12)
    | (1 << 14)
    | (1 << 15)
    | (1 << 16)
    | (1 << 18)
    | (1 << 26);

/// TCR_EL1: 48-bit VAs in both halves, 4 KiB granules, inner-shareable write-back walks, and
/// TBI0: EL0 addresses may carry a tag in their top byte, which translation ignores (as on
/// Linux; the tagged address ABI extends it to syscall arguments).
/// IPS and AS are filled in by head.s from ID_AA64MMFR0_EL1.
const TCR_EL1: u64 = 16 // T0SZ
    | (1 << 8) | (1 << 10) | (3 << 12) // IRGN0, ORGN0, SH0; TG0 = 4 KiB
    | (16 << 16) // T1SZ
    | (1 << 24) | (1 << 26) | (3 << 28) // IRGN1, ORGN1, SH1
    | (2 << 30) // TG1 = 4 KiB
    | (1 << 37); // TBI0

/// The early map's 2 MiB blocks: normal write-back memory, inner shareable, accessed.
const EARLY_BLOCK: u64 =
    mmu::DESC_VALID | mmu::attr_index(mmu::MAIR_NORMAL) | mmu::SH_INNER | mmu::AF;

const _: () = assert!(PAGE_SIZE == 4096);

core::arch::global_asm!(
    include_str!("../../../../boot/head.s"),
    early = sym EARLY_TABLES,
    boot_stack = sym BOOT_STACK,
    boot_stack_size = const BOOT_STACK_SIZE,
    kernel_main = sym super::entry::kernel_main,
    secondary_main = sym super::entry::secondary_main,
    spin_table = sym SPIN_BOOT_TABLE,
    spin_entries = const NR_CPUS,
    affinity_mask = const MPIDR_AFFINITY_MASK,
    efi_main = sym super::entry::svelt_efi_main,
    block = const EARLY_BLOCK,
    mair = const mmu::MAIR_VALUE,
    tcr = const TCR_EL1,
    sctlr = const SCTLR_EL1_MMU_ON,
);

/// The boot stack's bounds, for backtraces.
pub fn boot_stack_range() -> (usize, usize) {
    let base = &raw const BOOT_STACK as usize;
    (base, base + BOOT_STACK_SIZE)
}
