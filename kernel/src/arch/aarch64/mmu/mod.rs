//! The kernel's page tables (TTBR1): 4 KiB granule, 48-bit virtual addresses, four levels.
//!
//! Upper-half layout:
//! - `LINEAR_BASE + pa`: every RAM region the DTB describes, read-write, never executable (the
//!   kernel image's own alias is read-only);
//! - `DEVICE_BASE + pa`: MMIO regions, mapped on request by [`ioremap`], Device-nGnRE;
//! - `KIMAGE_VADDR`: the kernel image, text read-execute, rodata read-only, data/BSS read-write.
//!
//! TTBR0 is left to user address spaces. Table pages for the kernel's own map come from a pool in
//! BSS, so the map can be built before any allocator exists.

use core::ptr;
use spin::Mutex;

pub const PAGE_SIZE: usize = 4096;
pub const KIMAGE_VADDR: usize = 0xffff_ff80_0000_0000;
pub const LINEAR_BASE: usize = 0xffff_0000_0000_0000;
pub const DEVICE_BASE: usize = 0xffff_8000_0000_0000;

/// MAIR_EL1 attribute indexes.
/// MAIR_EL1: 0 Device-nGnRnE (0x00), 1 Normal write-back (0xff), 2 Device-nGnRE (0x04),
/// 3 Normal non-cacheable (0x44).
pub const MAIR_VALUE: u64 = (0xff << 8) | (0x04 << 16) | (0x44 << 24);
pub const MAIR_NORMAL: u64 = 1;
pub const MAIR_DEVICE_NGNRE: u64 = 2;

// Descriptor bits.
pub const DESC_VALID: u64 = 1 << 0;
pub const DESC_TABLE_OR_PAGE: u64 = 1 << 1;
pub const AP_RO: u64 = 1 << 7;
pub const AP_EL0: u64 = 1 << 6;
pub const NG: u64 = 1 << 11;
pub const SH_INNER: u64 = 3 << 8;
pub const AF: u64 = 1 << 10;
pub const PXN: u64 = 1 << 53;
/// Set on every writable entry: hardware dirty management is off (TCR_EL1.HD clear), so it
/// means nothing to the direct encoding; with permission indirection it is the index bit that
/// says "writable" (arch::gcs).
pub const WRITABLE: u64 = 1 << 51;
pub const UXN: u64 = 1 << 54;
pub const ADDR_MASK: u64 = 0x0000_ffff_ffff_f000;

pub const fn attr_index(idx: u64) -> u64 {
    idx << 2
}

/// Kinds of kernel mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prot {
    /// Kernel text: read-only, executable at EL1.
    KernelText,
    /// Read-only data.
    KernelRo,
    /// Read-write data, never executable.
    KernelRw,
    /// MMIO.
    Device,
}

impl Prot {
    fn attrs(self) -> u64 {
        let normal = attr_index(MAIR_NORMAL) | SH_INNER | AF | UXN;
        match self {
            Prot::KernelText => normal | AP_RO,
            Prot::KernelRo => normal | AP_RO | PXN,
            Prot::KernelRw => normal | PXN | WRITABLE,
            Prot::Device => attr_index(MAIR_DEVICE_NGNRE) | AF | PXN | UXN | WRITABLE,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    OutOfTables,
    /// The range overlaps an existing mapping with another shape (Svelt never splits blocks).
    Overlap,
    Misaligned,
}

const POOL_PAGES: usize = 64;

#[repr(C, align(4096))]
struct Pool([[u64; 512]; POOL_PAGES]);
static mut POOL: Pool = Pool([[0; 512]; POOL_PAGES]);

/// The kernel map: its root and where its table pages come from.
pub struct KernelMap {
    root_pa: u64,
    used: usize,
    /// `pa - image_pa + KIMAGE_VADDR` translates a pool page's physical address.
    image_pa: u64,
}

static KERNEL_MAP: Mutex<Option<KernelMap>> = Mutex::new(None);

/// Image-relative address translation (valid for anything inside the kernel image).
fn image_pa_to_va(image_pa: u64, pa: u64) -> usize {
    (pa - image_pa) as usize + KIMAGE_VADDR
}
fn image_va_to_pa(image_pa: u64, va: usize) -> u64 {
    (va - KIMAGE_VADDR) as u64 + image_pa
}

impl KernelMap {
    fn alloc_table(&mut self) -> Result<u64, MapError> {
        if self.used == POOL_PAGES {
            return Err(MapError::OutOfTables);
        }
        // SAFETY: pool pages are handed out once each (self.used only grows) and only through
        // the KERNEL_MAP lock; the page is zeroed already (BSS) and unused until linked in.
        let va = unsafe { (&raw mut POOL.0[self.used]) as usize };
        self.used += 1;
        Ok(image_va_to_pa(self.image_pa, va))
    }

    /// Maps `[va, va + size)` to `[pa, pa + size)` using the largest blocks alignment allows.
    pub fn map(&mut self, va: usize, pa: u64, size: usize, prot: Prot) -> Result<(), MapError> {
        if !va.is_multiple_of(PAGE_SIZE)
            || !pa.is_multiple_of(PAGE_SIZE as u64)
            || !size.is_multiple_of(PAGE_SIZE)
        {
            return Err(MapError::Misaligned);
        }
        let attrs = prot.attrs();
        let (mut va, mut pa, mut left) = (va, pa, size);
        while left > 0 {
            let step = self.map_one(va, pa, left, attrs)?;
            va += step;
            pa += step as u64;
            left -= step;
        }
        Ok(())
    }

    /// Maps the largest block or page that fits at `va`; returns its size.
    fn map_one(&mut self, va: usize, pa: u64, left: usize, attrs: u64) -> Result<usize, MapError> {
        let mut table_pa = self.root_pa;
        for level in 0..4 {
            let shift = 39 - 9 * level;
            let size = 1usize << shift;
            let index = (va >> shift) & 511;
            let table = image_pa_to_va(self.image_pa, table_pa) as *mut u64;
            // SAFETY: `table` is a pool page (the root or a table linked below), mapped in the
            // kernel image; index < 512.
            let slot = unsafe { table.add(index) };
            // SAFETY: `slot` is inside the pool page just computed.
            let entry = unsafe { ptr::read_volatile(slot) };
            let fits = level >= 1
                && va.is_multiple_of(size)
                && pa.is_multiple_of(size as u64)
                && left >= size;
            if fits {
                if entry & DESC_VALID != 0 {
                    return Err(MapError::Overlap);
                }
                let kind = if level == 3 { DESC_TABLE_OR_PAGE } else { 0 };
                // SAFETY: `slot` is an entry of a pool table page; it was invalid, so no TLB entry can
                // exist for it.
                unsafe { ptr::write_volatile(slot, pa | attrs | kind | DESC_VALID) };
                return Ok(size);
            }
            if level == 3 {
                return Err(MapError::Misaligned);
            }
            table_pa = if entry & DESC_VALID == 0 {
                let new = self.alloc_table()?;
                // SAFETY: `slot` is an entry of a pool table page; a new, zeroed table is linked into
                // an invalid slot.
                unsafe { ptr::write_volatile(slot, new | DESC_TABLE_OR_PAGE | DESC_VALID) };
                new
            } else if entry & DESC_TABLE_OR_PAGE != 0 {
                entry & ADDR_MASK
            } else {
                return Err(MapError::Overlap);
            };
        }
        unreachable!("level 3 returns")
    }
}

/// Starts the kernel map (nothing is live until [`activate`]).
pub fn init(image_pa: u64) {
    let mut map = KernelMap {
        root_pa: 0,
        used: 0,
        image_pa,
    };
    map.root_pa = map.alloc_table().expect("first pool page");
    *KERNEL_MAP.lock() = Some(map);
}

/// Adds a mapping to the kernel map.
pub fn map(va: usize, pa: u64, size: usize, prot: Prot) -> Result<(), MapError> {
    let mut guard = KERNEL_MAP.lock();
    let map = guard.as_mut().ok_or(MapError::OutOfTables)?;
    let r = map.map(va, pa, size, prot);
    crate::arch::aarch64::cpu::barrier_after_table_write();
    r
}

/// Maps an MMIO range (rounded out to pages) and returns the virtual address of `pa`.
pub fn ioremap(pa: u64, size: usize) -> Result<usize, MapError> {
    let start = pa & !(PAGE_SIZE as u64 - 1);
    let end = (pa + size as u64).next_multiple_of(PAGE_SIZE as u64);
    match map(
        DEVICE_BASE + start as usize,
        start,
        (end - start) as usize,
        Prot::Device,
    ) {
        Ok(()) | Err(MapError::Overlap) => Ok(DEVICE_BASE + pa as usize),
        Err(e) => Err(e),
    }
}

/// The kernel map's root table, for TTBR1 (on this CPU and on secondaries).
pub fn root_pa() -> u64 {
    KERNEL_MAP.lock().as_ref().map_or(0, |m| m.root_pa)
}

/// Table pages used so far, out of the pool.
pub fn pool_usage() -> (usize, usize) {
    (KERNEL_MAP.lock().as_ref().map_or(0, |m| m.used), POOL_PAGES)
}

/// A root table with no valid entries: TTBR0 while no user address space is current, so no
/// CPU ever walks tables that are being freed.
#[repr(C, align(4096))]
struct EmptyTable([u64; 512]);
static EMPTY_ROOT: EmptyTable = EmptyTable([0; 512]);

fn empty_root_pa() -> u64 {
    let image_pa = KERNEL_MAP.lock().as_ref().map_or(0, |m| m.image_pa);
    image_va_to_pa(image_pa, &raw const EMPTY_ROOT as usize)
}

/// Points TTBR0 at a user address space's root with its ASID.
pub fn set_user_table(root_pa: u64, asid: u16) {
    set_user_ttbr0(user_ttbr0(root_pa, asid));
}

/// The TTBR0 value for a user table's root and ASID.
pub fn user_ttbr0(root_pa: u64, asid: u16) -> u64 {
    root_pa | (asid as u64) << 48
}

/// TTBR0 := `v`, a value `user_ttbr0` made for a live user table.
pub fn set_user_ttbr0(v: u64) {
    // SAFETY: the root is a live user table (or the empty table); the kernel never runs code
    // from TTBR0 and the user mapping in force only matters after the next ERET.
    unsafe { core::arch::asm!("msr ttbr0_el1, {}", "isb", in(reg) v, options(nostack)) };
}

/// TTBR0 := the empty table (ASID 0, never given to an address space).
pub fn clear_user_table() {
    set_user_table(empty_root_pa(), 0);
}

/// Number of ASIDs the CPU supports (TCR_EL1.AS chose 16 bits when implemented).
pub fn asid_count() -> usize {
    let tcr: u64;
    // SAFETY: reads TCR_EL1.
    unsafe { core::arch::asm!("mrs {}, tcr_el1", out(reg) tcr, options(nomem, nostack)) };
    if tcr & (1 << 36) != 0 {
        1 << 16
    } else {
        1 << 8
    }
}

/// Invalidates one user page's translations for `asid` on every CPU.
pub fn flush_tlb_user_page(asid: u16, va: usize) {
    let arg = (asid as u64) << 48 | ((va as u64 >> 12) & 0xfff_ffff_ffff);
    // SAFETY: TLB maintenance only; the barriers complete it before the caller goes on.
    unsafe {
        core::arch::asm!("dsb ishst", "tlbi vale1is, {}", "dsb ish", "isb", in(reg) arg, options(nostack))
    };
}

/// Invalidates every translation tagged with `asid` on every CPU.
pub fn flush_tlb_asid(asid: u16) {
    let arg = (asid as u64) << 48;
    // SAFETY: TLB maintenance for user translations only; the kernel's global mappings are not
    // tagged with an ASID, so nothing the kernel uses goes.
    unsafe {
        core::arch::asm!("dsb ishst", "tlbi aside1is, {}", "dsb ish", "isb", in(reg) arg, options(nostack))
    };
}

/// Switches this CPU's TTBR1 to the kernel map, and TTBR0 to the empty table.
///
/// The new map must map the running code, stack and data at the same addresses as the old one.
pub fn activate() {
    let root = root_pa();
    // SAFETY: the kernel map covers the kernel image at KIMAGE_VADDR exactly as the early map
    // did, so the instruction stream and the stack stay valid across the switch; TLBs are
    // invalidated before any access relies on the new attributes.
    unsafe {
        core::arch::asm!(
            "dsb ishst",
            "msr ttbr1_el1, {root}",
            "isb",
            "msr ttbr0_el1, {empty}",
            "isb",
            "tlbi vmalle1",
            "dsb nsh",
            "isb",
            root = in(reg) root,
            empty = in(reg) empty_root_pa(),
            options(nostack),
        )
    };
}

/// Linear-map virtual address of a RAM physical address.
pub const fn phys_to_virt(pa: u64) -> usize {
    LINEAR_BASE + pa as usize
}

/// The physical address behind a linear-map address.
pub const fn virt_to_phys(va: usize) -> u64 {
    (va - LINEAR_BASE) as u64
}
