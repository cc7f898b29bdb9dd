//! Where things go in a user address space (48-bit VAs, 4 KiB pages, TTBR0).

pub const PAGE_SIZE: usize = 4096;
/// One past the highest user address.
pub const USER_END: usize = 1 << 48;
/// Top of the main thread's stack and the size reserved for it.
pub const STACK_TOP: usize = 0x0000_ffff_ffff_0000;
pub const STACK_SIZE: usize = 8 << 20;
/// Where top-down mmap placement starts (below the stack, leaving a gap).
pub const MMAP_TOP: usize = STACK_TOP - STACK_SIZE - (256 << 20);
/// Lowest address mmap hands out without MAP_FIXED (mmap_min_addr).
pub const MMAP_MIN: usize = 0x10000;
