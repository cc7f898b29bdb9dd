//! VMIDs: the tag that keeps each VM's TLB entries apart (VTTBR_EL2[63:48]). There are only
//! 255 or 65,535 of them (ID_AA64MMFR1_EL1.VMIDBits), fewer than the VMs a host may create
//! over its life, so they are handed out by generations, as Linux's arm64/kvm/vmid.c does:
//!
//! - A VM's word holds its VMID and the generation it was given in; it is given one the first
//!   time a vCPU of it enters on some CPU, and again whenever its generation is an old one.
//! - When the current generation has none left, the next one begins: every CPU's TLB entries
//!   of every VM are invalidated once (TLBI ALLE1IS) and the map starts empty, except for the
//!   VMIDs the CPUs are using at that moment, which stay with their VMs (a vCPU running a
//!   guest cannot be given a new tag under its feet).
//! - Each CPU publishes the VMID it enters a guest with (`PerCpu::kvm_vmid`), so the common entry is a
//!   compare-and-swap of that word, without the lock. A new generation swaps every CPU's word
//!   to 0, which sends that CPU's next entry through the lock.
//!
//! Unlike Linux, a VM that dies gives its VMID back at once if it is of the current
//! generation (after its TLB entries were invalidated), so a host that creates and destroys VMs
//! one after another rarely needs a new generation. `svelt.vmid_bits=N` (2..=16) uses fewer
//! VMIDs than the CPU has, so that the tests reach new generations quickly.

use crate::arch::guest;
use crate::percpu;
use crate::sync::IrqLock;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// A VM's VMID word: (generation << 16) | VMID, 0 before its first entry.
pub struct VmVmid(AtomicU64);

/// Where the generation starts in a word: above the widest VMID.
const GEN_SHIFT: u32 = 16;
const ID_MASK: u64 = (1 << GEN_SHIFT) - 1;

/// The current generation, shifted (the first is 1, so no word of it is 0).
static GENERATION: AtomicU64 = AtomicU64::new(1 << GEN_SHIFT);
/// `svelt.vmid_bits=` (0: the CPU's).
static ASKED_BITS: AtomicU32 = AtomicU32::new(0);
/// New generations begun, and VMs holding a VMID (/proc/svelt/kvm).
pub static ROLLOVERS: AtomicUsize = AtomicUsize::new(0);
pub static HELD: AtomicUsize = AtomicUsize::new(0);

struct Map {
    /// VMIDs of the current generation given out: bit n of word n / 64.
    used: Vec<u64>,
    /// Per CPU: the word it was using when the last generation began (kept for its VM).
    reserved: Vec<u64>,
    /// Where the search for a free VMID goes on from.
    next: usize,
    /// VMIDs 1..2^bits are given (VMID 0 never: it is the host's).
    bits: u32,
}

static MAP: IrqLock<Map> = IrqLock::new(Map {
    used: Vec::new(),
    reserved: Vec::new(),
    next: 1,
    bits: 0,
});

/// `svelt.vmid_bits=`, noted at boot (before the CPU count is known).
pub fn init(cmdline_bits: Option<u8>) {
    ASKED_BITS.store(cmdline_bits.map_or(0, u32::from), Ordering::Relaxed);
}

fn current_gen(word: u64) -> bool {
    word & !ID_MASK == GENERATION.load(Ordering::Relaxed)
}

impl Map {
    fn ready(&mut self) -> bool {
        if self.used.is_empty() {
            let cpus = percpu::possible();
            // At most what the CPU has, and more VMIDs than CPUs, so that a new generation,
            // which keeps one VMID per CPU, always has one free.
            let hw = guest::vmid_bits();
            let mut bits = match ASKED_BITS.load(Ordering::Relaxed) {
                0 => hw,
                b => b.clamp(2, hw),
            };
            while (1usize << bits) - 1 <= cpus && bits < hw {
                bits += 1;
            }
            self.bits = bits;
            let words = (1usize << bits).div_ceil(64);
            if self.used.try_reserve_exact(words).is_err()
                || self.reserved.try_reserve_exact(cpus).is_err()
            {
                return false;
            }
            self.used.resize(words, 0);
            self.used[0] = 1;
            self.reserved.resize(cpus, 0);
        }
        true
    }

    /// Marks `id` used; false if it already was.
    fn take(&mut self, id: usize) -> bool {
        let (w, b) = (id / 64, 1u64 << (id % 64));
        let free = self.used[w] & b == 0;
        self.used[w] |= b;
        free
    }

    fn find_free(&mut self) -> Option<usize> {
        let n = 1usize << self.bits;
        (self.next..n)
            .chain(1..self.next)
            .find(|&id| self.used[id / 64] & (1 << (id % 64)) == 0)
    }

    /// Begins a new generation: only the VMIDs the CPUs are using stay given.
    fn new_generation(&mut self) {
        GENERATION.fetch_add(1 << GEN_SHIFT, Ordering::Relaxed);
        ROLLOVERS.fetch_add(1, Ordering::Relaxed);
        self.used.fill(0);
        self.used[0] = 1;
        for (cpu, r) in self.reserved.iter_mut().enumerate() {
            let w = percpu::get(cpu).kvm_vmid.swap(0, Ordering::Relaxed);
            // A CPU that has not entered a guest since the last new generation still holds
            // what it held then.
            if w != 0 {
                *r = w;
            }
            if *r != 0 {
                let id = (*r & ID_MASK) as usize;
                self.used[id / 64] |= 1 << (id % 64);
            }
        }
        guest::flush_tlb_all_vms();
    }

    /// A word of the current generation for a VM whose word is `old`.
    fn assign(&mut self, old: u64) -> u64 {
        let gen = GENERATION.load(Ordering::Relaxed);
        if old != 0 {
            let renewed = gen | (old & ID_MASK);
            // Its VMID was in use on a CPU when this generation began: it stays the VM's.
            let mut kept = false;
            for r in self.reserved.iter_mut().filter(|r| **r == old) {
                *r = renewed;
                kept = true;
            }
            if kept || self.take((old & ID_MASK) as usize) {
                return renewed;
            }
        } else {
            HELD.fetch_add(1, Ordering::Relaxed);
        }
        let id = match self.find_free() {
            Some(id) => id,
            None => {
                self.new_generation();
                // More VMIDs than CPUs: the new generation has free ones.
                self.find_free().unwrap_or(1)
            }
        };
        self.take(id);
        self.next = id + 1;
        GENERATION.load(Ordering::Relaxed) | id as u64
    }
}

impl VmVmid {
    pub const fn new() -> VmVmid {
        VmVmid(AtomicU64::new(0))
    }

    /// The VMID the VM's TLB entries carry now (for invalidating them; 0 before its first
    /// entry, when it has none). Read after the change whose stale entries go: an entry made
    /// under a VMID this VM has since lost was invalidated when the generation changed.
    pub fn current(&self) -> u16 {
        (self.0.load(Ordering::Acquire) & ID_MASK) as u16
    }

    /// The VMID to enter the VM's guest with on this CPU, interrupts masked until the guest
    /// has run (a new generation begun on another CPU meanwhile keeps it, as this CPU
    /// publishes it). Never 0: before its first entry a VM's word is 0, which no CPU publishes.
    #[inline]
    pub fn enter(&self) -> u16 {
        let w = self.0.load(Ordering::Relaxed);
        let active = &percpu::this().kvm_vmid;
        let prev = active.load(Ordering::Relaxed);
        // This CPU last entered this VM (the usual case): its word is still published, so it
        // is of the current generation or kept by a new one that swaps it away from now on.
        // (0 is a VM's word before its first entry, and a CPU's after a new generation.)
        if prev == w && w != 0 {
            return (w & ID_MASK) as u16;
        }
        // A new generation swaps `prev` to 0 between the load and the exchange: the exchange
        // fails and the lock decides.
        if prev != 0
            && current_gen(w)
            && active
                .compare_exchange(prev, w, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return (w & ID_MASK) as u16;
        }
        self.enter_slow()
    }

    #[cold]
    fn enter_slow(&self) -> u16 {
        let mut map = MAP.lock();
        if !map.ready() {
            // No memory for the map: VMID 1 for every VM, its TLB entries dropped at each
            // entry (correct, slow, and only after an allocation failure at the first entry).
            guest::flush_tlb_all_vms();
            return 1;
        }
        let mut w = self.0.load(Ordering::Relaxed);
        if !current_gen(w) {
            w = map.assign(w);
            self.0.store(w, Ordering::Release);
        }
        percpu::this().kvm_vmid.store(w, Ordering::Relaxed);
        (w & ID_MASK) as u16
    }

    /// The VM died (its TLB entries invalidated): its VMID, if of the current generation,
    /// may be given to the next VM.
    pub fn release(&self) {
        let w = self.0.swap(0, Ordering::Relaxed);
        if w == 0 {
            return;
        }
        HELD.fetch_sub(1, Ordering::Relaxed);
        let mut map = MAP.lock();
        if current_gen(w) && !map.used.is_empty() && !map.reserved.contains(&w) {
            let id = (w & ID_MASK) as usize;
            map.used[id / 64] &= !(1 << (id % 64));
        }
    }
}
