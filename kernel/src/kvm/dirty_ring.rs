//! The dirty ring: each vCPU's list of the pages its guest dirtied, shared with the VMM
//! (virt/kvm/dirty_ring.c; the rules in `abi::uapi::kvm_dirty_ring`; docs/kvm.md).
//!
//! Once KVM_CAP_DIRTY_LOG_RING_ACQ_REL gives a VM a ring size, every vCPU created after has a
//! ring of that many bytes in pages of its own, which the VMM maps from the vCPU's file. A
//! write that dirties a page of a logging slot while a vCPU's KVM_RUN is on the writing thread
//! (Linux's running vCPU) appends (slot, offset) to that vCPU's ring instead of the slot's
//! bitmap; other writes go to the bitmap, which a VM with rings keeps only with
//! KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP. A ring holding its soft limit (all but 64 entries)
//! ends KVM_RUN with KVM_EXIT_DIRTY_RING_FULL until KVM_RESET_DIRTY_RINGS takes back the
//! entries the VMM marked harvested and write-protects their pages again.
//!
//! Pushes and resets happen under the VM's `inner` lock (the ring list lives there); the
//! indices are atomics so that the run loop reads them without it.

use super::vcpu::Vcpu;
use super::vm::{Slot, Vm};
use crate::mm::frame::Page;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm::KVM_USER_MEM_SLOTS;
use svelt_abi::uapi::kvm_dirty_ring as dr;

const PAGE: u32 = 4096;

/// One vCPU's ring.
pub struct Ring {
    pages: Vec<Page>,
    entries: u32,
    soft_limit: u32,
    /// Free-running counts: entries pushed, entries taken back by a reset.
    dirty_index: AtomicU32,
    reset_index: AtomicU32,
    /// The task in this vCPU's KVM_RUN (its per-CPU `current_task` word), 0 when none.
    runner: AtomicUsize,
}

/// The running task's identity, as `Ring::runner` keeps it (the kernel is not preemptible, so
/// the CPU's current task is the caller).
fn me() -> usize {
    crate::percpu::this().current_task.load(Ordering::Relaxed)
}

impl Ring {
    fn new(size: u32) -> SysResult<Ring> {
        let (entries, soft_limit) = dr::entries(size);
        let n = (size / PAGE) as usize;
        let mut pages = Vec::new();
        pages.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
        for _ in 0..n {
            pages.push(Page::new_user().ok_or(Errno::ENOMEM)?);
        }
        Ok(Ring {
            pages,
            entries,
            soft_limit,
            dirty_index: AtomicU32::new(0),
            reset_index: AtomicU32::new(0),
            runner: AtomicUsize::new(0),
        })
    }

    fn used(&self) -> u32 {
        let d = self.dirty_index.load(Ordering::Acquire);
        d.wrapping_sub(self.reset_index.load(Ordering::Acquire))
    }

    /// The ring holds its soft limit: the vCPU may not enter the guest.
    pub fn soft_full(&self) -> bool {
        self.used() >= self.soft_limit
    }

    /// The page and byte offset of entry `index` (entries never straddle pages).
    fn entry(&self, index: u32) -> (&Page, usize) {
        let at = (index & (self.entries - 1)) as usize * dr::GFN_SIZE as usize;
        (&self.pages[at / PAGE as usize], at % PAGE as usize)
    }

    /// Appends (slot, offset): the fields first, then the DIRTY flag with release order, as
    /// the VMM reads the flag with acquire (`kvm_dirty_ring_push`). A full ring (which the
    /// soft limit keeps from happening) drops the entry.
    fn push(&self, slot: u32, offset: u64) {
        if self.used() >= self.entries {
            return;
        }
        let d = self.dirty_index.load(Ordering::Relaxed);
        let (page, at) = self.entry(d);
        let w = page.writer();
        w.write(at + dr::GFN_SLOT, &slot.to_le_bytes());
        w.write(at + dr::GFN_OFFSET, &offset.to_le_bytes());
        fence(Ordering::Release);
        w.write(at + dr::GFN_FLAGS, &dr::KVM_DIRTY_GFN_F_DIRTY.to_le_bytes());
        self.dirty_index.store(d.wrapping_add(1), Ordering::Release);
    }

    /// Takes back the harvested entries from the reset index on, in order, up to the first
    /// the VMM has not marked RESET (`kvm_dirty_ring_reset`); `protect` gets each one's slot
    /// and offset. Returns how many.
    fn reset(&self, mut protect: impl FnMut(u32, u64)) -> usize {
        let mut n = 0;
        // Each entry taken back has its flags cleared, so one pass sees each at most once.
        while n < self.entries as usize {
            let r = self.reset_index.load(Ordering::Relaxed);
            let (page, at) = self.entry(r);
            let rd = page.reader();
            let mut b4 = [0u8; 4];
            rd.read(at + dr::GFN_FLAGS, &mut b4);
            fence(Ordering::Acquire);
            if u32::from_le_bytes(b4) & dr::KVM_DIRTY_GFN_F_RESET == 0 {
                break;
            }
            let mut b8 = [0u8; 8];
            rd.read(at + dr::GFN_SLOT, &mut b4);
            rd.read(at + dr::GFN_OFFSET, &mut b8);
            fence(Ordering::Release);
            page.writer().write(at + dr::GFN_FLAGS, &0u32.to_le_bytes());
            self.reset_index.store(r.wrapping_add(1), Ordering::Release);
            n += 1;
            protect(u32::from_le_bytes(b4), u64::from_le_bytes(b8));
        }
        n
    }
}

/// A VM's ring size and its vCPUs' rings (in the VM's `inner`, under its lock).
#[derive(Default)]
pub struct VmRings {
    /// Bytes per ring (kvm->dirty_ring_size), 0 without rings.
    pub size: u32,
    /// KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP is on (kvm->dirty_ring_with_bitmap).
    pub with_bitmap: bool,
    /// The vCPUs' rings in creation order.
    rings: Vec<Arc<Ring>>,
}

impl VmRings {
    /// Logging slots keep bitmaps (`kvm_use_dirty_bitmap`).
    pub fn uses_bitmap(&self) -> bool {
        self.size == 0 || self.with_bitmap
    }

    /// Pushes a dirtied page to the ring of the vCPU whose KVM_RUN is on this thread; false
    /// when the VM has no rings or no such vCPU (the write then goes to the bitmap, if any:
    /// `mark_page_dirty_in_slot`).
    pub fn push_running(&self, slot: u32, offset: u64) -> bool {
        if self.size == 0 {
            return false;
        }
        let me = me();
        match self
            .rings
            .iter()
            .find(|r| r.runner.load(Ordering::Relaxed) == me)
        {
            Some(r) => {
                r.push(slot, offset);
                true
            }
            None => false,
        }
    }
}

/// KVM_CHECK_EXTENSION for the ring capabilities; None for another.
pub fn check_extension(cap: u64) -> Option<usize> {
    dr::check_extension(cap)
}

/// KVM_ENABLE_CAP for the ring capabilities (`kvm_vm_ioctl_enable_cap_generic`); None for
/// another. `arg` is the caller's `struct kvm_enable_cap`. The ring's own cap ignores the
/// flags, as Linux does.
pub fn enable_cap(vm: &Vm, cap: u64, arg: usize) -> Option<SysResult<usize>> {
    use crate::mm::uaccess::UserPtr;
    let r = match cap {
        // x86's total-store-order ring: not offered on arm64.
        dr::KVM_CAP_DIRTY_LOG_RING => Err(Errno::EINVAL),
        dr::KVM_CAP_DIRTY_LOG_RING_ACQ_REL => (|| {
            let arg0 = UserPtr::<u64>::new(arg + 8).read()?;
            let already = vm.inner.lock().dring.size;
            let size = dr::ring_size(arg0, already, PAGE)?;
            // Only before the first vCPU: `create_vcpu` reads the size with `vcpus` held.
            let vcpus = vm.vcpus.lock();
            if !vcpus.is_empty() {
                return Err(Errno::EINVAL);
            }
            let mut inner = vm.inner.lock();
            if inner.dring.size != 0 {
                return Err(Errno::EINVAL);
            }
            inner.dring.size = size;
            Ok(0)
        })(),
        dr::KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP => (|| {
            let flags = UserPtr::<u32>::new(arg + 4).read()?;
            let mut inner = vm.inner.lock();
            // Only with a ring, and while there are no memory slots, so that every slot
            // made after has its bitmap.
            if inner.dring.size == 0 || flags != 0 || !inner.slots.is_empty() {
                return Err(Errno::EINVAL);
            }
            inner.dring.with_bitmap = true;
            Ok(0)
        })(),
        _ => return None,
    };
    Some(r)
}

/// Gives a new vCPU its ring when the VM has rings; the caller holds `vm.vcpus`.
pub fn vcpu_created(vm: &Vm, vcpu: &Vcpu) -> SysResult<()> {
    let size = vm.inner.lock().dring.size;
    if size == 0 {
        return Ok(());
    }
    let ring = Arc::new(Ring::new(size)?);
    let mut inner = vm.inner.lock();
    inner
        .dring
        .rings
        .try_reserve(1)
        .map_err(|_| Errno::ENOMEM)?;
    inner.dring.rings.push(ring.clone());
    vcpu.dring.call_once(|| ring);
    Ok(())
}

/// Page `index` of a vCPU's file, if it is one of its ring's (`kvm_vcpu_fault`).
pub fn page(vcpu: &Vcpu, index: u64) -> Option<Page> {
    let ring = vcpu.dring.get()?;
    let size = ring.pages.len() as u32 * PAGE;
    dr::in_ring(index, size, PAGE)
        .then(|| ring.pages[(index - dr::KVM_DIRTY_LOG_PAGE_OFFSET) as usize].clone())
}

/// mmap of `pages` pages of a vCPU's file from page `pgoff`: EINVAL where the ring would be
/// mapped private or executable (`kvm_vcpu_mmap`).
pub fn mmap_check(vcpu: &Vcpu, pgoff: u64, pages: u64, exec: bool, shared: bool) -> SysResult<()> {
    let Some(ring) = vcpu.dring.get() else {
        return Ok(());
    };
    let size = ring.pages.len() as u32 * PAGE;
    if dr::mmap_refused(pgoff, pages, size, PAGE, exec, shared) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Marks the vCPU's ring as the running thread's for the life of the value (from KVM_RUN's
/// start to its end: Linux's vcpu_load/vcpu_put of the running vCPU).
pub struct Running<'a>(Option<&'a Ring>);

impl<'a> Running<'a> {
    pub fn new(vcpu: &'a Vcpu) -> Running<'a> {
        let ring = vcpu.dring.get().map(|r| &**r);
        if let Some(r) = ring {
            r.runner.store(me(), Ordering::Relaxed);
        }
        Running(ring)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.0 {
            r.runner.store(0, Ordering::Relaxed);
        }
    }
}

/// Write-protects page `offset` of slot `slot` (address space in bits 31:16) again, if that
/// names a page of an existing slot (`kvm_reset_dirty_gfn`). Whether a leaf changed.
fn protect(
    slots: &BTreeMap<u32, Slot>,
    s2: &mut super::stage2::Stage2,
    slot: u32,
    off: u64,
) -> bool {
    let (as_id, id) = (slot >> 16, slot & 0xffff);
    if as_id != 0 || id >= KVM_USER_MEM_SLOTS {
        return false;
    }
    match slots.get(&id) {
        Some(s) if off < s.size / PAGE as u64 => s2.write_protect(s.gpa + off * PAGE as u64),
        _ => false,
    }
}

/// KVM_RESET_DIRTY_RINGS (`kvm_vm_ioctl_reset_dirty_pages`): every vCPU's harvested entries
/// taken back, their pages write-protected; returns how many. EINVAL without rings.
pub fn reset(vm: &Vm) -> SysResult<usize> {
    let mut inner = vm.inner.lock();
    if inner.dring.size == 0 {
        return Err(Errno::EINVAL);
    }
    let inner = &mut *inner;
    let mut cleared = 0;
    for r in &inner.dring.rings {
        cleared += r.reset(|slot, off| {
            protect(&inner.slots, &mut inner.s2, slot, off);
        });
    }
    if cleared != 0 {
        vm.flush_tlbs();
    }
    Ok(cleared)
}

/// GET_DIRTY_LOG and CLEAR_DIRTY_LOG on a VM with rings and no bitmaps: ENXIO
/// (`kvm_get_dirty_log_protect`).
pub fn check_bitmap(vm: &Vm) -> SysResult<()> {
    if vm.inner.lock().dring.uses_bitmap() {
        Ok(())
    } else {
        Err(Errno::ENXIO)
    }
}
