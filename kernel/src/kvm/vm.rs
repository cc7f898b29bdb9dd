//! A VM: its memory slots, its stage-2 tables and VMID, its vCPUs, and the VM file's ioctls.
//!
//! Guest memory stays the VMM's memory: a slot names a range of the VMM's address space, and a
//! stage-2 fault maps the frame the VMM's own page tables hold there (faulting it in as the VMM
//! would). The VM hears of every change to those pages through the address space's notifier
//! (munmap, mprotect, mremap, MADV_DONTNEED, fork's copy-on-write) and drops its leaves first,
//! as Linux's mmu notifier does. Locks: the address space's, then the VM's `inner`.

use super::smccc::SmcccFilter;
use super::stage2::Stage2;
use super::stats::VmStats;
use super::vcpu::{Vcpu, VcpuFile};
use super::vmid::VmVmid;
use crate::arch::guest;
use crate::fs::{Caller, File, FileOps};
use crate::mm::aspace::{Access, AddrSpace, MmNotifier};
use crate::mm::uaccess::UserPtr;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::O_RDWR;
use svelt_abi::uapi::kvm::{self as k, KvmUserspaceMemoryRegion, KvmVcpuInit, SlotChange};
use svelt_abi::uapi::kvm_dirty as kd;
use svelt_abi::uapi::kvm_eventfd as ke;
use svelt_abi::uapi::kvm_gmem as kg;
use svelt_abi::uapi::kvm_idregs as ki;
use svelt_abi::uapi::kvm_vgic_its as its;

/// VMs alive now (/proc/svelt/kvm).
pub static VMS: AtomicUsize = AtomicUsize::new(0);

/// One memory slot: `size` bytes of guest physical space at `gpa`, backed by the VMM's memory
/// at `uaddr`.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub gpa: u64,
    pub size: u64,
    pub uaddr: u64,
    pub flags: u32,
}

impl Slot {
    fn contains(&self, ipa: u64) -> bool {
        ipa >= self.gpa && ipa - self.gpa < self.size
    }
    pub fn readonly(&self) -> bool {
        self.flags & k::KVM_MEM_READONLY != 0
    }
    /// The slot logs dirty pages: its pages are mapped writable only once the guest writes.
    fn logging(&self) -> bool {
        self.flags & k::KVM_MEM_LOG_DIRTY_PAGES != 0
    }
    fn npages(&self) -> u64 {
        self.size / 4096
    }
}

pub struct VmInner {
    pub slots: BTreeMap<u32, Slot>,
    pub s2: Stage2,
    /// The dirty bitmap of each slot that logs, by slot id (`abi::uapi::kvm_dirty`'s layout).
    pub dirty: BTreeMap<u32, Vec<u64>>,
    /// KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2's value (kvm->manual_dirty_log_protect).
    pub manual_protect: u64,
    /// The guest_memfd binding of each KVM_MEM_GUEST_MEMFD slot, by slot id.
    pub gmem: BTreeMap<u32, super::gmem::Binding>,
    /// The dirty ring's size and the vCPUs' rings (dirty_ring.rs).
    pub dring: super::dirty_ring::VmRings,
}

impl VmInner {
    /// Marks the page at `ipa` dirty in whichever logging slot holds it
    /// (`mark_page_dirty_in_slot`).
    fn mark_dirty(&mut self, ipa: u64) {
        let Some((&id, s)) = self.slots.iter().find(|(_, s)| s.contains(ipa)) else {
            return;
        };
        let page = (ipa - s.gpa) / 4096;
        // With rings, a running vCPU's write goes to its ring (dirty_ring.rs).
        if s.logging() && self.dring.push_running(id, page) {
            return;
        }
        if let Some(bits) = self.dirty.get_mut(&id) {
            kd::mark(bits, page);
        }
    }

    /// Takes write permission away from the slot's pages `pages` (slot page numbers), so
    /// that the guest's next write to each is seen. Returns whether a leaf changed.
    fn write_protect(&mut self, slot: &Slot, pages: impl Iterator<Item = u64>) -> bool {
        let mut any = false;
        for p in pages {
            any |= self.s2.write_protect(slot.gpa + p * 4096);
        }
        any
    }
}

pub struct Vm {
    pub ipa_bits: u32,
    /// Its VMID, given at the first entry and renewed by generations (vmid.rs).
    pub vmid: VmVmid,
    /// VTTBR_EL2 without the VMID (the stage-2 root), and VTCR_EL2: they never change.
    pub s2_root: u64,
    pub vtcr: u64,
    /// The VMM's address space (KVM's kvm->mm): only its threads may use the VM.
    mm: Weak<Mutex<AddrSpace>>,
    pub inner: Mutex<VmInner>,
    pub vcpus: Mutex<Vec<Arc<Vcpu>>>,
    /// KVM_CAP_ARM_NISV_TO_USER is on: an MMIO access without a syndrome exits to the VMM.
    pub nisv_to_user: AtomicBool,
    /// KVM_CAP_ARM_SYSTEM_SUSPEND is on: PSCI SYSTEM_SUSPEND exits to the VMM.
    pub system_suspend: AtomicBool,
    /// CNTVOFF_EL2 for every vCPU (the counter the guest sees starts near 0 at creation).
    pub cntvoff: AtomicU64,
    /// The physical counter's offset a VMM wrote through CNTPCT_EL0 (kept for
    /// KVM_GET_ONE_REG; without FEAT_ECV the guest's own reads are not offset).
    pub cntpoff: AtomicU64,
    /// HCRX_EL2 for this VM's vCPUs, from its ID registers when KVM_RUN starts.
    pub hcrx: AtomicU64,
    /// HFGITR_EL2 trap bits for this VM's vCPUs (the TLBIs its VMM hid), where the CPU has
    /// FEAT_FGT; from its ID registers when KVM_RUN starts.
    pub hfgitr: AtomicU64,
    /// The guest PMU's counter count and event filter (kvm::pmu).
    pub pmu: Mutex<super::pmu::VmPmu>,
    /// HFGRTR_EL2/HFGWTR_EL2 bits cleared for this VM's vCPUs (the GCS registers' traps).
    pub hfgrtr_clear: AtomicU64,
    /// `hcrx`, `hfgitr` and `hfgrtr_clear` are set: once, by the VM's first KVM_RUN, after
    /// which its ID registers no longer change.
    pub run_controls: spin::Once<()>,
    /// A vCPU of this VM has entered KVM_RUN: its ID registers and firmware bitmaps are fixed.
    pub ran: AtomicBool,
    /// The VM's view of the ID registers (`k::id_reg_index` order), which the VMM may lower
    /// until the VM runs, and their highest values: the CPU's, less what guests are not given.
    pub id_regs: Mutex<[u64; k::ID_REGS]>,
    pub id_limits: [u64; k::ID_REGS],
    /// The hypercall service bitmaps (KVM_REG_ARM_*_BMAP): what the guest is offered.
    pub fw_bmaps: Mutex<[u64; k::FW_FEAT_BMAP_REGS as usize]>,
    /// MIDR_EL1, REVIDR_EL1, CLIDR_EL1, AIDR_EL1, CTR_EL0 as the VM reports them (CLIDR_EL1
    /// there is only each new vCPU's first value), and the CPU's own.
    pub impl_regs: Mutex<[u64; 5]>,
    pub impl_limits: [u64; 5],
    /// KVM_CAP_ARM_WRITABLE_IMP_ID_REGS is on: MIDR_EL1, REVIDR_EL1 and AIDR_EL1 may change.
    pub writable_imp: AtomicBool,
    /// The SMCCC calls the VMM denies or answers itself (KVM_ARM_VM_SMCCC_FILTER).
    pub smccc_filter: SmcccFilter,
    /// The thread that created the VM (its statistics' id), and the statistics.
    pub creator: u32,
    pub stats: VmStats,
    /// The in-kernel vGICv3, once the VMM made one.
    pub vgic: Mutex<Option<super::vgic::Vgic>>,
    /// Zones of coalesced MMIO writes and their ring.
    pub coalesced: super::coalesced::Coalesced,
    /// The GSI routing, irqfds and ioeventfds.
    pub events: super::eventfd::VmEvents,
    /// The VM is dead (kvm_vm_dead): every ioctl on it, its vCPUs and its devices is EIO.
    pub dead: AtomicBool,
    /// The vCPU features of the VM's first KVM_ARM_VCPU_INIT, less POWER_OFF: every vCPU has
    /// these (kvm->arch.vcpu_features).
    pub vcpu_features: Mutex<Option<u32>>,
}

/// What one stage-2 fault became.
pub enum Fault {
    /// Mapped: run the guest again.
    Mapped,
    /// Not guest RAM (or a write to a read-only slot): an MMIO access.
    Mmio,
    /// The slot's VMM memory cannot be had (unmapped, no permission): KVM_RUN fails EFAULT.
    Efault,
    /// A guest_memfd slot's page cannot be had (its file is gone): KVM_RUN fails EFAULT with
    /// KVM_EXIT_MEMORY_FAULT (`gmem::memory_fault_exit`).
    Memory,
}

impl Vm {
    /// The VM's ID register at op0=3, op1=0, CRn=0, `crm` (1..=7), `op2`.
    pub fn id_reg(&self, crm: u32, op2: u32) -> u64 {
        self.id_regs.lock()[((crm - 1) * 8 + op2) as usize]
    }

    pub fn new(cur: &dyn Caller, ipa_bits: u32) -> SysResult<Arc<Vm>> {
        let mm = crate::process::caller_thread(cur)
            .mm()
            .ok_or(Errno::EINVAL)?;
        let s2 = Stage2::new(ipa_bits)?;
        let (s2_root, vtcr) = (s2.root(), s2.vtcr());
        let mut id_limits: [u64; k::ID_REGS] = core::array::from_fn(|i| {
            let (crm, op2) = (1 + i / 8, i % 8);
            k::guest_id_reg(
                crm as u8,
                op2 as u8,
                guest::read_id_reg(crm as u8, op2 as u8),
            )
        });
        // SVE is shown once a vCPU asks for it (sve::init_id_regs), up to the host's.
        let id_regs = id_limits;
        super::sve::widen_limits(
            &mut id_limits,
            guest::read_id_reg(4, 0),
            guest::read_id_reg(4, 4),
        );
        super::pauth::widen_limits(&mut id_limits);
        super::sme::widen_limits(
            &mut id_limits,
            guest::read_id_reg(4, 1),
            guest::read_id_reg(4, 4),
            guest::read_id_reg(4, 5),
        );
        let vm = Arc::new(Vm {
            ipa_bits,
            vmid: VmVmid::new(),
            s2_root,
            vtcr,
            mm: Arc::downgrade(&mm),
            inner: Mutex::new(VmInner {
                slots: BTreeMap::new(),
                s2,
                dirty: BTreeMap::new(),
                manual_protect: 0,
                dring: Default::default(),
                gmem: BTreeMap::new(),
            }),
            vcpus: Mutex::new(Vec::new()),
            nisv_to_user: AtomicBool::new(false),
            system_suspend: AtomicBool::new(false),
            cntvoff: AtomicU64::new(crate::arch::cpu::counter()),
            cntpoff: AtomicU64::new(0),
            hcrx: AtomicU64::new(0),
            hfgitr: AtomicU64::new(0),
            pmu: Mutex::new(super::pmu::VmPmu::default()),
            hfgrtr_clear: AtomicU64::new(0),
            run_controls: spin::Once::new(),
            ran: AtomicBool::new(false),
            id_regs: Mutex::new(id_regs),
            id_limits,
            fw_bmaps: Mutex::new(svelt_abi::uapi::kvm_services::FW_BMAPS_RESET),
            impl_regs: Mutex::new(guest::impl_regs()),
            impl_limits: guest::impl_regs(),
            writable_imp: AtomicBool::new(false),
            smccc_filter: SmcccFilter::new(),
            creator: cur.core().tid,
            stats: VmStats::new(),
            vgic: Mutex::new(None),
            coalesced: super::coalesced::Coalesced::new()?,
            events: super::eventfd::VmEvents::default(),
            dead: AtomicBool::new(false),
            vcpu_features: Mutex::new(None),
        });
        let weak: Weak<dyn MmNotifier> = Arc::downgrade(&vm) as Weak<dyn MmNotifier>;
        mm.lock().add_notifier(weak)?;
        VMS.fetch_add(1, Ordering::Relaxed);
        Ok(vm)
    }

    /// Invalidates the VM's stage-2 TLB entries on every CPU, counted as KVM's
    /// `kvm_flush_remote_tlbs` counts them.
    pub(super) fn flush_tlbs(&self) {
        use svelt_abi::uapi::kvm_stats::vm as st;
        self.stats.inc(st::REMOTE_TLB_FLUSH_REQUESTS);
        self.stats.inc(st::REMOTE_TLB_FLUSH);
        self.flush_tlb_entries();
    }

    /// VTTBR_EL2 for this VM under VMID `vmid`.
    pub fn vttbr(&self, vmid: u16) -> u64 {
        u64::from(vmid) << 48 | self.s2_root
    }

    /// Invalidates the VM's TLB entries on every CPU, under the VMID it has now (one it had
    /// before lost its entries when the generation changed); every VM's if it has none yet,
    /// as a vCPU may be taking its first one.
    fn flush_tlb_entries(&self) {
        match self.vmid.current() {
            0 => guest::flush_tlb_all_vms(),
            id => guest::flush_tlb_vm(self.vttbr(id)),
        }
    }

    /// EIO unless the caller is a thread of the VMM that created the VM (as KVM checks
    /// `kvm->mm != current->mm` on every ioctl), and once the VM is dead.
    pub fn check_caller(&self, cur: &dyn Caller) -> SysResult<Arc<Mutex<AddrSpace>>> {
        if self.dead.load(Ordering::Relaxed) {
            return Err(Errno::EIO);
        }
        let mine = crate::process::caller_thread(cur).mm().ok_or(Errno::EIO)?;
        match self.mm.upgrade() {
            Some(mm) if Arc::ptr_eq(&mm, &mine) => Ok(mm),
            _ => Err(Errno::EIO),
        }
    }

    /// The 8 bytes of guest memory at `ipa` (8-aligned), read through the VMM's mapping of its
    /// slot (the caller is the VMM's thread); None outside every slot or where the VMM's memory
    /// cannot be read.
    pub fn read_guest_u64(&self, ipa: u64) -> Option<u64> {
        let slot = self
            .inner
            .lock()
            .slots
            .values()
            .find(|s| s.contains(ipa))
            .copied()?;
        let va = slot.uaddr + (ipa & !7) - slot.gpa;
        crate::mm::uaccess::UserPtr::<u64>::new(va as usize)
            .read()
            .ok()
    }

    /// Whether `ipa` lies in a memory slot.
    pub fn in_slot(&self, ipa: u64) -> bool {
        self.inner.lock().slots.values().any(|s| s.contains(ipa))
    }

    /// Writes `bytes` to guest memory at `ipa` through the VMM's mapping of its slot (the caller
    /// is the VMM's thread); false where there is no slot or the VMM's memory refuses.
    pub fn write_guest(&self, ipa: u64, bytes: &[u8]) -> bool {
        let Some(slot) = self
            .inner
            .lock()
            .slots
            .values()
            .find(|s| s.contains(ipa) && s.contains(ipa + bytes.len() as u64 - 1))
            .copied()
        else {
            return false;
        };
        let va = slot.uaddr + ipa - slot.gpa;
        if UserPtr::<u8>::new(va as usize).write_slice(bytes).is_err() {
            return false;
        }
        // A write on the guest's behalf dirties its pages as the guest's own would
        // (kvm_write_guest).
        let mut inner = self.inner.lock();
        let mut page = ipa & !0xfff;
        while page < ipa + bytes.len() as u64 {
            inner.mark_dirty(page);
            page += 4096;
        }
        true
    }

    /// Resolves a stage-2 fault at `ipa` (a write if `write`): maps the slot's page, or says
    /// why not. The VMM's page is faulted in writable for a writable slot, so that neither
    /// side's later write moves it to another frame (copy-on-write) behind the guest's back.
    pub fn fault(&self, mm: &Mutex<AddrSpace>, ipa: u64, write: bool) -> Fault {
        let page = ipa & !0xfff;
        if let Some(f) = super::gmem::fault(self, page) {
            return f;
        }
        let Some(slot) = self
            .inner
            .lock()
            .slots
            .values()
            .find(|s| s.contains(page))
            .copied()
        else {
            return Fault::Mmio;
        };
        if write && slot.readonly() {
            return Fault::Mmio;
        }
        let va = (slot.uaddr + (page - slot.gpa)) as usize;
        let mut aspace = mm.lock();
        let (pa, mut writable) = if slot.readonly() {
            match aspace.translate(va, Access::Read) {
                Ok(pa) => (pa, false),
                Err(_) => return Fault::Efault,
            }
        } else {
            match aspace.translate(va, Access::Write) {
                Ok(pa) => (pa, true),
                Err(_) if !write => match aspace.translate(va, Access::Read) {
                    Ok(pa) => (pa, false),
                    Err(_) => return Fault::Efault,
                },
                Err(_) => return Fault::Efault,
            }
        };
        let mut inner = self.inner.lock();
        // The slot may have gone or changed while the address space was being asked.
        let Some(now) = inner.slots.values().find(|s| s.contains(page)) else {
            return Fault::Mmio;
        };
        // A logging slot's page becomes writable only on a write, which is logged
        // (arch/arm64/kvm/mmu.c: only a write fault maps writable while logging).
        let logging = now.logging();
        if logging && !write {
            writable = false;
        }
        match inner.s2.map(page, pa & !0xfff, writable) {
            Ok(replaced) => {
                if replaced {
                    self.flush_tlbs();
                }
                if logging && writable {
                    inner.mark_dirty(page);
                }
                Fault::Mapped
            }
            Err(_) => Fault::Efault,
        }
    }

    fn set_region(&self, r: &KvmUserspaceMemoryRegion) -> SysResult<usize> {
        let change = k::check_region(
            r,
            4096,
            crate::mm::aspace::USER_END as u64,
            1u64 << self.ipa_bits,
        )?;
        self.change_region(change, None)
    }

    /// Carries out a checked memory-region call; `gmem`: the guest_memfd a new
    /// KVM_MEM_GUEST_MEMFD slot binds (`gmem::set_region2`).
    pub(super) fn change_region(
        &self,
        change: SlotChange,
        gmem: Option<super::gmem::ToBind>,
    ) -> SysResult<usize> {
        let mut inner = self.inner.lock();
        match change {
            SlotChange::Delete { slot } => {
                let old = inner.slots.remove(&slot).ok_or(Errno::EINVAL)?;
                inner.dirty.remove(&slot);
                if let Some(b) = inner.gmem.remove(&slot) {
                    b.unbind(slot);
                }
                if inner.s2.unmap(old.gpa, old.gpa + old.size) {
                    self.flush_tlbs();
                }
            }
            SlotChange::Set {
                slot,
                gpa,
                size,
                uaddr,
                flags,
            } => {
                if let Some(old) = inner.slots.get(&slot).copied() {
                    // An existing slot may move or change its dirty logging, nothing else.
                    if old.size != size
                        || old.uaddr != uaddr
                        || (old.flags ^ flags) & k::KVM_MEM_READONLY != 0
                        // A guest_memfd slot can only be deleted.
                        || gmem.is_some()
                        || (old.flags ^ flags) & kg::KVM_MEM_GUEST_MEMFD != 0
                    {
                        return Err(Errno::EINVAL);
                    }
                }
                let overlaps = inner
                    .slots
                    .iter()
                    .any(|(&id, s)| id != slot && gpa < s.gpa + s.size && s.gpa < gpa + size);
                if overlaps {
                    return Err(Errno::EEXIST);
                }
                if let Some(g) = gmem {
                    let b = super::gmem::bind(g, slot, gpa, size)?;
                    inner.gmem.insert(slot, b);
                }
                // The dirty bitmap: kept while the slot goes on logging, a new one (empty,
                // or all set with INITIALLY_SET) when it starts, none when it stops
                // (kvm_prepare_memory_region). The slot's leaves are all dropped below, so
                // the guest's writes fault and are logged from now on.
                if flags & k::KVM_MEM_LOG_DIRTY_PAGES == 0 {
                    inner.dirty.remove(&slot);
                } else if !inner.dirty.contains_key(&slot) && inner.dring.uses_bitmap() {
                    let npages = size / 4096;
                    let mut bits = Vec::new();
                    bits.try_reserve_exact(kd::bitmap_words(npages))
                        .map_err(|_| Errno::ENOMEM)?;
                    bits.resize(kd::bitmap_words(npages), 0);
                    kd::init_bitmap(&mut bits, npages, kd::initially_set(inner.manual_protect));
                    inner.dirty.insert(slot, bits);
                }
                if let Some(old) = inner.slots.insert(
                    slot,
                    Slot {
                        gpa,
                        size,
                        uaddr,
                        flags,
                    },
                ) {
                    if inner.s2.unmap(old.gpa, old.gpa + old.size) {
                        self.flush_tlbs();
                    }
                }
            }
        }
        Ok(0)
    }

    /// KVM_GET_DIRTY_LOG (`kvm_get_dirty_log_protect`): the slot's bitmap to the caller;
    /// without manual protection the bitmap is also cleared and those pages write-protected
    /// again, so that the next call sees only newer writes.
    fn get_dirty_log(&self, arg: usize) -> SysResult<usize> {
        let log = UserPtr::<kd::KvmDirtyLog>::new(arg).read()?;
        super::dirty_ring::check_bitmap(self)?;
        let id = kd::log_slot(log.slot)?;
        let out = {
            let mut inner = self.inner.lock();
            let slot = inner.slots.get(&id).copied().ok_or(Errno::ENOENT)?;
            let manual = inner.manual_protect != 0;
            let bits = inner.dirty.get_mut(&id).ok_or(Errno::ENOENT)?;
            let mut out = Vec::new();
            out.try_reserve_exact(bits.len())
                .map_err(|_| Errno::ENOMEM)?;
            out.resize(bits.len(), 0);
            if manual {
                out.copy_from_slice(bits);
            } else if kd::get_and_clear(bits, &mut out)
                && inner.write_protect(&slot, kd::pages(0, &out))
            {
                self.flush_tlbs();
            }
            out
        };
        // Copied out with the VM unlocked: the caller's memory may need faulting in, which
        // takes the address space's lock (the order is address space, then VM).
        UserPtr::<u64>::new(log.dirty_bitmap as usize).write_slice(&out)?;
        Ok(0)
    }

    /// KVM_CLEAR_DIRTY_LOG (`kvm_clear_dirty_log_protect`): clears the bits the caller names
    /// from `first_page` on and write-protects those pages again.
    fn clear_dirty_log(&self, arg: usize) -> SysResult<usize> {
        let log = UserPtr::<kd::KvmClearDirtyLog>::new(arg).read()?;
        super::dirty_ring::check_bitmap(self)?;
        let id = kd::log_slot(log.slot)?;
        kd::check_clear_start(log.first_page)?;
        let words = {
            let inner = self.inner.lock();
            let slot = inner.slots.get(&id).ok_or(Errno::ENOENT)?;
            if !inner.dirty.contains_key(&id) {
                return Err(Errno::ENOENT);
            }
            kd::check_clear_range(log.first_page, log.num_pages, slot.npages())?
        };
        let mut mask = Vec::new();
        mask.try_reserve_exact(words).map_err(|_| Errno::ENOMEM)?;
        mask.resize(words, 0);
        UserPtr::<u64>::new(log.dirty_bitmap as usize).read_slice(&mut mask)?;
        let mut inner = self.inner.lock();
        // The slot may have changed while the caller's bitmap was read.
        let slot = inner.slots.get(&id).copied().ok_or(Errno::ENOENT)?;
        kd::check_clear_range(log.first_page, log.num_pages, slot.npages())?;
        let bits = inner.dirty.get_mut(&id).ok_or(Errno::ENOENT)?;
        if kd::clear(bits, log.first_page, &mut mask)
            && inner.write_protect(&slot, kd::pages(log.first_page, &mask))
        {
            self.flush_tlbs();
        }
        Ok(0)
    }

    fn create_vcpu(self: &Arc<Vm>, cur: &dyn Caller, id: usize) -> SysResult<usize> {
        if id >= k::KVM_MAX_VCPUS {
            return Err(Errno::EINVAL);
        }
        if super::vgic::refuses_vcpus(self) {
            return Err(Errno::EBUSY);
        }
        let vcpu = {
            let mut vcpus = self.vcpus.lock();
            if vcpus.len() >= k::KVM_MAX_VCPUS {
                return Err(Errno::EINVAL);
            }
            if vcpus.iter().any(|v| v.id == id as u32) {
                return Err(Errno::EEXIST);
            }
            let clidr = self.impl_regs.lock()[2];
            let vcpu = Vcpu::new(cur, id as u32, clidr, self.coalesced.ring.clone())?;
            super::dirty_ring::vcpu_created(self, &vcpu)?;
            vcpus.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            vcpus.push(vcpu.clone());
            vcpu
        };
        if let Err(e) = super::vgic::vcpu_created(self, id as u32) {
            self.vcpus.lock().retain(|v| !Arc::ptr_eq(v, &vcpu));
            return Err(e);
        }
        let ops = Arc::new(VcpuFile {
            vm: self.clone(),
            vcpu,
        });
        let f = File::new(None, ops, O_RDWR, format!("anon_inode:kvm-vcpu:{id}"));
        install(cur, f)
    }
}

/// Installs `f` as a new descriptor of the caller, close-on-exec (as KVM's anon_inode_getfd).
pub fn install(cur: &dyn Caller, f: Arc<File>) -> SysResult<usize> {
    cur.files()
        .lock()
        .install(cur, f, true)
        .map(|fd| fd as usize)
}

impl MmNotifier for Vm {
    fn invalidate(&self, start: usize, end: usize) {
        let (start, end) = (start as u64, end as u64);
        let mut inner = self.inner.lock();
        let VmInner { slots, s2, .. } = &mut *inner;
        let mut any = false;
        for s in slots.values() {
            let (lo, hi) = (start.max(s.uaddr), end.min(s.uaddr + s.size));
            if lo < hi {
                any |= s2.unmap(s.gpa + (lo - s.uaddr), s.gpa + (hi - s.uaddr));
            }
        }
        if any {
            self.flush_tlbs();
        }
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        if self.vmid.current() != 0 {
            self.flush_tlb_entries();
        }
        self.vmid.release();
        VMS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A VM's file.
pub struct VmFile {
    pub vm: Arc<Vm>,
}

impl FileOps for VmFile {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn ioctl(&self, cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        self.vm.check_caller(cur)?;
        match cmd {
            // Whether MSIs need a DeviceID: once the VM has an ITS (kvm_vm_ioctl_check_extension).
            k::KVM_CHECK_EXTENSION if arg as u64 == its::KVM_CAP_MSI_DEVID => {
                Ok(super::vgic::its::msis_require_devid(&self.vm) as usize)
            }
            k::KVM_CHECK_EXTENSION => Ok(super::check_extension(arg as u64)),
            k::KVM_CREATE_VCPU => self.vm.create_vcpu(cur, arg),
            k::KVM_SET_USER_MEMORY_REGION => {
                let r = UserPtr::<KvmUserspaceMemoryRegion>::new(arg).read()?;
                self.vm.set_region(&r)
            }
            k::KVM_SET_USER_MEMORY_REGION2 => super::gmem::set_region2(&self.vm, cur, arg),
            kg::KVM_CREATE_GUEST_MEMFD => super::gmem::create(&self.vm, cur, arg),
            kd::KVM_GET_DIRTY_LOG => self.vm.get_dirty_log(arg),
            kd::KVM_CLEAR_DIRTY_LOG => self.vm.clear_dirty_log(arg),
            svelt_abi::uapi::kvm_dirty_ring::KVM_RESET_DIRTY_RINGS => {
                super::dirty_ring::reset(&self.vm)
            }
            k::KVM_CREATE_DEVICE => {
                // The vGICv3 and its ITS; every other type is unknown.
                let mut d = UserPtr::<k::KvmCreateDevice>::new(arg).read()?;
                let test = d.flags & k::KVM_CREATE_DEVICE_TEST != 0;
                let made = match d.ty {
                    svelt_abi::uapi::kvm_vgic::KVM_DEV_TYPE_ARM_VGIC_V3 => {
                        super::vgic::create(&self.vm, test)?
                    }
                    its::KVM_DEV_TYPE_ARM_VGIC_ITS => super::vgic::its::create(&self.vm, test)?,
                    _ => return Err(Errno::ENODEV),
                };
                let Some(f) = made else {
                    return Ok(0);
                };
                let fd = install(cur, f)?;
                d.fd = fd as u32;
                UserPtr::<k::KvmCreateDevice>::new(arg).write(&d)?;
                Ok(0)
            }
            // The VM's own attributes: the SMCCC filter.
            k::KVM_SET_DEVICE_ATTR | k::KVM_GET_DEVICE_ATTR | k::KVM_HAS_DEVICE_ATTR => {
                super::smccc::vm_attr(&self.vm, cmd, arg)
            }
            k::KVM_GET_STATS_FD => super::stats::vm_fd(cur, &self.vm),
            ki::KVM_ARM_GET_REG_WRITABLE_MASKS => super::regs::writable_masks(arg),
            k::KVM_REGISTER_COALESCED_MMIO | k::KVM_UNREGISTER_COALESCED_MMIO => {
                self.vm.coalesced.ioctl(cmd, arg)
            }
            svelt_abi::uapi::kvm_vgic::KVM_IRQ_LINE => super::vgic::irq_line(&self.vm, arg),
            its::KVM_SIGNAL_MSI => super::vgic::its::signal_msi(&self.vm, arg),
            ke::KVM_IRQFD => super::eventfd::irqfd(&self.vm, cur, arg),
            ke::KVM_IOEVENTFD => super::eventfd::ioeventfd(&self.vm, cur, arg),
            ke::KVM_SET_GSI_ROUTING => super::eventfd::set_routing(&self.vm, arg),
            k::KVM_ARM_PREFERRED_TARGET => {
                UserPtr::<KvmVcpuInit>::new(arg).write(&KvmVcpuInit {
                    target: k::KVM_ARM_TARGET_GENERIC_V8,
                    features: [0; 7],
                })?;
                Ok(0)
            }
            k::KVM_ENABLE_CAP => {
                // `struct kvm_enable_cap`: u32 cap, u32 flags, then the arguments.
                let cap = UserPtr::<u32>::new(arg).read()? as u64;
                if let Some(r) = super::dirty_ring::enable_cap(&self.vm, cap, arg) {
                    return r;
                }
                let flags = UserPtr::<u32>::new(arg + 4).read()?;
                if flags != 0 {
                    return Err(Errno::EINVAL);
                }
                match cap {
                    k::KVM_CAP_ARM_NISV_TO_USER => {
                        self.vm.nisv_to_user.store(true, Ordering::Relaxed);
                        Ok(0)
                    }
                    k::KVM_CAP_ARM_SYSTEM_SUSPEND => {
                        self.vm.system_suspend.store(true, Ordering::Relaxed);
                        Ok(0)
                    }
                    kd::KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 => {
                        let arg0 = UserPtr::<u64>::new(arg + 8).read()?;
                        self.vm.inner.lock().manual_protect = kd::manual_protect_arg(arg0)?;
                        Ok(0)
                    }
                    // Only before the first vCPU (EINVAL after, as Linux).
                    ki::KVM_CAP_ARM_WRITABLE_IMP_ID_REGS if self.vm.vcpus.lock().is_empty() => {
                        self.vm.writable_imp.store(true, Ordering::Relaxed);
                        Ok(0)
                    }
                    _ => Err(Errno::EINVAL),
                }
            }
            _ => Err(Errno::ENOTTY),
        }
    }
    fn poll(&self, _cur: &dyn Caller) -> u32 {
        0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `anon_inode:kvm-vm`.
pub fn vm_file(vm: Arc<Vm>) -> Arc<File> {
    File::new(
        None,
        Arc::new(VmFile { vm }),
        O_RDWR,
        String::from("anon_inode:kvm-vm"),
    )
}
