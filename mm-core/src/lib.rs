//! The bookkeeping of a user address space, without hardware: the list of mappings (VMAs), where
//! new ones go, how they split and merge, and what Linux's limits count (vm.max_map_count,
//! RLIMIT_AS, RLIMIT_DATA, RLIMIT_MEMLOCK).
//!
//! The page tables are behind [`PageTable`]: the kernel implements it over its TTBR0 tables, the
//! host tests over a map of pages. [`Mm`] keeps the two in step. Demand paging and
//! copy-on-write (filling an entry on a fault) stay with the kernel, which reaches its table
//! directly, so nothing here sits on the fault path but [`Vmas::find`].
#![no_std]

extern crate alloc;

pub mod layout;
mod space;
mod vma;

pub use space::{Mm, PageTable};
pub use vma::{Access, FaultError, Prot, VmBacking, Vma, Vmas};
