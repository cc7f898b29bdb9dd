//! Dirty-page logging (Documentation/virt/kvm/api.rst: KVM_MEM_LOG_DIRTY_PAGES,
//! KVM_GET_DIRTY_LOG, KVM_CLEAR_DIRTY_LOG, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2): the argument
//! layouts and the rules of virt/kvm/kvm_main.c (`kvm_get_dirty_log_protect`,
//! `kvm_clear_dirty_log_protect`, `kvm_prepare_memory_region`, the capability's ENABLE_CAP).
//!
//! A slot that logs keeps one bit per page in 64-bit words (Linux's `unsigned long` on arm64):
//! bit p of word p / 64 is the slot's page p. The kernel keeps the words and write-protects the
//! pages these functions say were cleared.

use super::errno::Errno;
use super::kvm::{KVMIO, KVM_USER_MEM_SLOTS};
use super::tty::{iow, iowr};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const KVM_GET_DIRTY_LOG: u32 = iow(KVMIO, 0x42, 16);
pub const KVM_CLEAR_DIRTY_LOG: u32 = iowr(KVMIO, 0xc0, 24);

pub const KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2: u64 = 168;
pub const KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE: u64 = 1 << 0;
pub const KVM_DIRTY_LOG_INITIALLY_SET: u64 = 1 << 1;
/// What arm64 offers (arch/arm64/include/asm/kvm_host.h): both bits.
pub const KVM_DIRTY_LOG_MANUAL_CAPS: u64 =
    KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE | KVM_DIRTY_LOG_INITIALLY_SET;

/// `struct kvm_dirty_log`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmDirtyLog {
    pub slot: u32,
    pub padding1: u32,
    pub dirty_bitmap: u64,
}
const _: () = assert!(core::mem::size_of::<KvmDirtyLog>() == 16);

/// `struct kvm_clear_dirty_log`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmClearDirtyLog {
    pub slot: u32,
    pub num_pages: u32,
    pub first_page: u64,
    pub dirty_bitmap: u64,
}
const _: () = assert!(core::mem::size_of::<KvmClearDirtyLog>() == 24);

/// Words of a slot's bitmap for `npages` pages (`kvm_dirty_bitmap_bytes` / 8).
pub fn bitmap_words(npages: u64) -> usize {
    npages.div_ceil(64) as usize
}

/// The value KVM_ENABLE_CAP(KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2) stores from its `args[0]`:
/// INITIALLY_SET only with ENABLE, nothing else (and 0 turns manual protection off).
pub fn manual_protect_arg(arg0: u64) -> Result<u64, Errno> {
    let allowed = if arg0 & KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE != 0 {
        KVM_DIRTY_LOG_MANUAL_CAPS
    } else {
        KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE
    };
    if arg0 & !allowed != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(arg0)
}

/// Whether a slot that starts logging starts with every page dirty
/// (`kvm_dirty_log_manual_protect_and_init_set`).
pub fn initially_set(manual: u64) -> bool {
    manual & KVM_DIRTY_LOG_INITIALLY_SET != 0
}

/// The slot id a GET or CLEAR names: address space in bits 31:16 (arm64 has only 0), the
/// slot below. EINVAL out of range; whether the slot exists and logs (ENOENT) is the caller's.
pub fn log_slot(slot: u32) -> Result<u32, Errno> {
    let (as_id, id) = (slot >> 16, slot & 0xffff);
    if as_id != 0 || id >= KVM_USER_MEM_SLOTS {
        return Err(Errno::EINVAL);
    }
    Ok(id)
}

/// CLEAR's first check, before the slot is looked up: `first_page` a multiple of 64.
pub fn check_clear_start(first_page: u64) -> Result<(), Errno> {
    if first_page & 63 != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// CLEAR's range check against a slot of `npages` pages: inside the slot, and `num_pages` a
/// multiple of 64 unless the range reaches the slot's end. Returns the words of the caller's
/// bitmap to read.
pub fn check_clear_range(first_page: u64, num_pages: u32, npages: u64) -> Result<usize, Errno> {
    let num = num_pages as u64;
    if first_page > npages
        || num > npages - first_page
        || (num < npages - first_page && num & 63 != 0)
    {
        return Err(Errno::EINVAL);
    }
    Ok(num.div_ceil(64) as usize)
}

/// A new slot's bitmap (or one whose logging was just turned on): empty, or every page of
/// the slot dirty with INITIALLY_SET. Bits past `npages` stay clear.
pub fn init_bitmap(bits: &mut [u64], npages: u64, all_set: bool) {
    bits.fill(0);
    if all_set {
        for p in 0..npages.min(bits.len() as u64 * 64) {
            bits[(p / 64) as usize] |= 1 << (p % 64);
        }
    }
}

/// Marks page `page` of the slot dirty (`mark_page_dirty_in_slot`); a page outside is ignored.
pub fn mark(bits: &mut [u64], page: u64) {
    if let Some(w) = bits.get_mut((page / 64) as usize) {
        *w |= 1 << (page % 64);
    }
}

/// GET_DIRTY_LOG without manual protection: `out` gets the bitmap, which is cleared; the
/// pages whose bits were set are the ones to write-protect again. Returns whether any was.
pub fn get_and_clear(bits: &mut [u64], out: &mut [u64]) -> bool {
    let mut any = false;
    for (b, o) in bits.iter_mut().zip(out.iter_mut()) {
        *o = core::mem::take(b);
        any |= *o != 0;
    }
    any
}

/// CLEAR_DIRTY_LOG: clears in the slot's bitmap the bits of `mask` (the caller's words, from
/// page `first_page`, already checked). On return `mask` holds only the bits that were set
/// and are now clear: the pages to write-protect. Returns whether any was.
pub fn clear(bits: &mut [u64], first_page: u64, mask: &mut [u64]) -> bool {
    let start = (first_page / 64) as usize;
    let mut any = false;
    for (k, m) in mask.iter_mut().enumerate() {
        match bits.get_mut(start + k) {
            Some(b) => {
                *m &= *b;
                *b &= !*m;
                any |= *m != 0;
            }
            None => *m = 0,
        }
    }
    any
}

/// The slot pages a word of cleared bits names: page numbers, from `first_page` on.
pub fn pages(first_page: u64, words: &[u64]) -> impl Iterator<Item = u64> + '_ {
    words.iter().enumerate().flat_map(move |(k, &w)| {
        (0..64u64)
            .filter(move |b| w & (1 << b) != 0)
            .map(move |b| first_page + k as u64 * 64 + b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn ioctl_numbers() {
        assert_eq!(KVM_GET_DIRTY_LOG, 0x4010_ae42);
        assert_eq!(KVM_CLEAR_DIRTY_LOG, 0xc018_aec0);
    }

    #[test]
    fn manual_protect_args() {
        assert_eq!(manual_protect_arg(0), Ok(0));
        assert_eq!(manual_protect_arg(1), Ok(1));
        assert_eq!(manual_protect_arg(3), Ok(3));
        // INITIALLY_SET without ENABLE, and unknown bits.
        assert_eq!(manual_protect_arg(2), Err(Errno::EINVAL));
        assert_eq!(manual_protect_arg(5), Err(Errno::EINVAL));
        assert_eq!(manual_protect_arg(1 << 63), Err(Errno::EINVAL));
        assert!(initially_set(3) && !initially_set(1) && !initially_set(0));
    }

    #[test]
    fn slot_ids() {
        assert_eq!(log_slot(0), Ok(0));
        assert_eq!(log_slot(32766), Ok(32766));
        assert_eq!(log_slot(32767), Err(Errno::EINVAL));
        assert_eq!(log_slot(1 << 16), Err(Errno::EINVAL));
        assert_eq!(log_slot(u32::MAX), Err(Errno::EINVAL));
    }

    #[test]
    fn clear_ranges() {
        assert_eq!(check_clear_start(64), Ok(()));
        assert_eq!(check_clear_start(1), Err(Errno::EINVAL));
        // A 100-page slot: 64 pages from 0, or anything that reaches the end.
        assert_eq!(check_clear_range(0, 64, 100), Ok(1));
        assert_eq!(check_clear_range(0, 100, 100), Ok(2));
        assert_eq!(check_clear_range(64, 36, 100), Ok(1));
        assert_eq!(check_clear_range(0, 0, 100), Ok(0));
        assert_eq!(check_clear_range(100, 0, 100), Ok(0));
        assert_eq!(check_clear_range(0, 32, 100), Err(Errno::EINVAL));
        assert_eq!(check_clear_range(64, 37, 100), Err(Errno::EINVAL));
        assert_eq!(check_clear_range(128, 0, 100), Err(Errno::EINVAL));
        assert_eq!(check_clear_range(0, 128, 100), Err(Errno::EINVAL));
    }

    #[test]
    fn initially_set_covers_only_the_slot() {
        let mut b = vec![u64::MAX; bitmap_words(70)];
        init_bitmap(&mut b, 70, false);
        assert_eq!(b, [0, 0]);
        init_bitmap(&mut b, 70, true);
        assert_eq!(b, [u64::MAX, 0x3f]);
    }

    #[test]
    fn get_takes_and_clears() {
        let mut b = vec![0u64; 2];
        mark(&mut b, 3);
        mark(&mut b, 65);
        mark(&mut b, 1000);
        let mut out = vec![0u64; 2];
        assert!(get_and_clear(&mut b, &mut out));
        assert_eq!(out, [8, 2]);
        assert_eq!(b, [0, 0]);
        assert!(!get_and_clear(&mut b, &mut out));
        assert_eq!(out, [0, 0]);
    }

    #[test]
    fn clear_reports_only_bits_that_were_set() {
        let mut b = vec![0u64; 2];
        init_bitmap(&mut b, 100, true);
        let mut m = vec![0b1010u64, u64::MAX];
        assert!(clear(&mut b, 0, &mut m));
        assert_eq!(m, [0b1010, (1 << 36) - 1]);
        assert_eq!(b, [!0b1010, 0]);
        let mut again = vec![0b1010u64];
        assert!(!clear(&mut b, 0, &mut again));
        assert_eq!(again, [0]);
        // From page 64: the second word.
        mark(&mut b, 64 + 5);
        let mut m = vec![1 << 5];
        assert!(clear(&mut b, 64, &mut m));
        assert_eq!(m, [1 << 5]);
        assert_eq!(b[1], 0);
    }

    #[test]
    fn page_numbers() {
        let p: Vec<u64> = pages(64, &[0b101, 1 << 63]).collect();
        assert_eq!(p, [64, 66, 64 + 127]);
    }
}
