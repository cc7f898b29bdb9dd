//! Svelt as a KVM host: Linux's arm64 KVM API on `/dev/kvm` (misc 10:232), for VMMs and Linux's
//! KVM selftests unchanged (Documentation/virt/kvm/api.rst is the reference; docs/kvm.md says
//! what is there and what is not yet).
//!
//! - `vm`: a VM's memory slots, stage-2 tables (`stage2`) and VMID, and its file's ioctls.
//! - `vcpu`: a vCPU, its `kvm_run` page, its file's ioctls, and the run loop.
//! - `exit`: what each kind of guest exit becomes.
//! - `inject`: exceptions given to the guest, and the vCPU events ioctls.
//! - `regs`: the vCPU's registers by KVM's register IDs.
//! - `smccc`: the VM's SMCCC filter (calls the VMM denies or answers).
//! - `pvtime`: stolen time for guests (PV_TIME_ST).
//! - `coalesced`: MMIO writes queued in a ring instead of exiting.
//! - `eventfd`: irqfds, ioeventfds and the GSI routing.
//! - `stats`: the binary statistics files (KVM_GET_STATS_FD).
//! - `sme`: SME for guests (the vCPU feature, streaming lengths, SVCR, ZA and ZT0, ID registers).
//! - `sve`: SVE for guests (the vCPU feature, its registers, their lazy switch).
//! - `vgic`: the in-kernel vGICv3 device (begun: its configuration).
//! - `vmid`: VMIDs, handed out by generations.
//!
//! A vCPU is the VMM thread that calls KVM_RUN: the guest runs on that thread's kernel stack,
//! so the scheduler, signals and the lazy FP machine treat it as that thread. Only a kernel at
//! EL2 with VHE offers the device (at EL1 there is no hypervisor to be).

mod aarch32;
mod coalesced;
mod debug;
mod dirty_ring;
pub(crate) mod eventfd;
mod exit;
mod fpmr;
mod gmem;
mod inject;
mod pauth;
mod pmu;
mod poe;
mod pvtime;
mod regs;
mod smccc;
mod sme;
mod stage2;
mod stats;
mod sve;
mod vcpu;
mod vgic;
mod vm;
mod vmid;

use crate::fs::{dev, Caller, File, FileOps};
use alloc::sync::Arc;
use core::any::Any;
use core::sync::atomic::{AtomicU64, Ordering};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::kvm as k;
use svelt_abi::uapi::kvm_eventfd as ke;

/// Guest exits of every kind, MMIO exits to a VMM, WFI sleeps, guest FP loads (/proc/svelt/kvm).
pub static EXITS: AtomicU64 = AtomicU64::new(0);
pub static MMIO_EXITS: AtomicU64 = AtomicU64::new(0);
pub static WFI_SLEEPS: AtomicU64 = AtomicU64::new(0);
pub static GUEST_FP_LOADS: AtomicU64 = AtomicU64::new(0);

/// Guest vector-state saves and restores over every vCPU, counted apart from the host tasks'
/// (/proc/svelt/fpstat's `guest_` lines).
pub struct GuestFpCounters {
    pub fpsimd_saves: AtomicU64,
    pub fpsimd_restores: AtomicU64,
    pub sve_saves: AtomicU64,
    pub sve_restores: AtomicU64,
    pub bytes_saved: AtomicU64,
    pub bytes_restored: AtomicU64,
}

pub static GUEST_FP: GuestFpCounters = GuestFpCounters {
    fpsimd_saves: AtomicU64::new(0),
    fpsimd_restores: AtomicU64::new(0),
    sve_saves: AtomicU64::new(0),
    sve_restores: AtomicU64::new(0),
    bytes_saved: AtomicU64::new(0),
    bytes_restored: AtomicU64::new(0),
};

impl GuestFpCounters {
    /// One save (`restore` false) or restore of `bytes`, of an SVE state or an FP/SIMD one.
    pub fn count(&self, sve: bool, restore: bool, bytes: usize) {
        let (n, b) = match (sve, restore) {
            (false, false) => (&self.fpsimd_saves, &self.bytes_saved),
            (false, true) => (&self.fpsimd_restores, &self.bytes_restored),
            (true, false) => (&self.sve_saves, &self.bytes_saved),
            (true, true) => (&self.sve_restores, &self.bytes_restored),
        };
        n.fetch_add(1, Ordering::Relaxed);
        b.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// The guests' lines of /proc/svelt/fpstat.
pub fn fpstat_lines() -> alloc::string::String {
    let g = &GUEST_FP;
    let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
    alloc::format!(
        "guest_fpsimd_saves {}\nguest_fpsimd_restores {}\nguest_sve_saves {}\nguest_sve_restores {}\nguest_bytes_saved {}\nguest_bytes_restored {}\n",
        l(&g.fpsimd_saves),
        l(&g.fpsimd_restores),
        l(&g.sve_saves),
        l(&g.sve_restores),
        l(&g.bytes_saved),
        l(&g.bytes_restored),
    ) + &alloc::format!(
        "guest_sme_saves {}\nguest_sme_restores {}\n",
        l(&sme::SME_SAVES),
        l(&sme::SME_RESTORES)
    )
}

/// The largest IPA size a VM may have: what the CPU's physical addresses reach, at most 48 bits
/// (no 52-bit stage-2 descriptors yet).
pub(crate) fn max_ipa_bits() -> u32 {
    crate::arch::guest::pa_bits().min(48)
}

/// KVM_CHECK_EXTENSION's answer (on /dev/kvm, a VM or a vCPU): exactly what is implemented.
pub fn check_extension(cap: u64) -> usize {
    use svelt_abi::uapi::kvm_debug as kd;
    if let Some(v) = dirty_ring::check_extension(cap) {
        return v;
    }
    match cap {
        k::KVM_CAP_USER_MEMORY
        | k::KVM_CAP_USER_MEMORY2
        | k::KVM_CAP_DESTROY_MEMORY_REGION_WORKS
        | k::KVM_CAP_JOIN_MEMORY_REGIONS_WORKS
        | k::KVM_CAP_SYNC_MMU
        | k::KVM_CAP_ONE_REG
        | k::KVM_CAP_ARM_PSCI
        | k::KVM_CAP_ARM_PSCI_0_2
        | k::KVM_CAP_IMMEDIATE_EXIT
        | k::KVM_CAP_READONLY_MEM
        | k::KVM_CAP_ARM_NISV_TO_USER
        | k::KVM_CAP_ARM_SYSTEM_SUSPEND
        | k::KVM_CAP_BINARY_STATS_FD
        // Generic ones QEMU requires (virt/kvm/kvm_main.c's
        // kvm_vm_ioctl_check_extension_generic): KVM_EXIT_INTERNAL_ERROR with its data
        // words (never raised here), KVM_CHECK_EXTENSION and KVM_ENABLE_CAP on a VM,
        // KVM_CREATE_DEVICE, and KVM_EXIT_SYSTEM_EVENT's ndata/data.
        | k::KVM_CAP_INTERNAL_ERROR_DATA
        | k::KVM_CAP_CHECK_EXTENSION_VM
        | k::KVM_CAP_ENABLE_CAP_VM
        | k::KVM_CAP_DEVICE_CTRL
        | k::KVM_CAP_SYSTEM_EVENT_DATA
        | k::KVM_CAP_VCPU_EVENTS
        // KVM_GET/SET_MP_STATE (QEMU powers its secondary vCPUs off through it).
        | k::KVM_CAP_MP_STATE
        // KVM_SET/GET/HAS_DEVICE_ATTR on vCPUs (the timers, stolen time); stolen time for
        // guests (`pvtime`; QEMU turns its kvm-steal-time on when offered); the PTP
        // hypercall (KVM_PTP_VIRT/PHYS_COUNTER).
        | k::KVM_CAP_VCPU_ATTRIBUTES
        | k::KVM_CAP_STEAL_TIME
        | k::KVM_CAP_PTP_KVM
        // KVM_IRQ_LINE's vcpu2_index (bits 31:28: vCPUs past 255).
        | k::KVM_CAP_ARM_IRQ_LINE_LAYOUT_2
        | k::KVM_CAP_ARM_INJECT_EXT_DABT
        | svelt_abi::uapi::kvm_idregs::KVM_CAP_ARM_WRITABLE_IMP_ID_REGS
        | ke::KVM_CAP_IRQFD
        | ke::KVM_CAP_IRQFD_RESAMPLE
        | ke::KVM_CAP_IOEVENTFD
        | ke::KVM_CAP_IOEVENTFD_ANY_LENGTH
        // KVM_SIGNAL_MSI (delivered through an ITS; ENODEV without one).
        | svelt_abi::uapi::kvm_vgic_its::KVM_CAP_SIGNAL_MSI => 1,
        ke::KVM_CAP_IRQ_ROUTING => ke::KVM_MAX_IRQ_ROUTES as usize,
        svelt_abi::uapi::kvm_dirty::KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 => {
            svelt_abi::uapi::kvm_dirty::KVM_DIRTY_LOG_MANUAL_CAPS as usize
        }
        // Only the feature ID range (KVM_ARM_FEATURE_ID_RANGE).
        svelt_abi::uapi::kvm_idregs::KVM_CAP_ARM_SUPPORTED_REG_MASK_RANGES => 1,
        k::KVM_CAP_ARM_INJECT_SERROR_ESR => inject::has_ras() as usize,
        // The vGICv3 needs the CPU's GICv3 system registers (Linux's vgic_present).
        k::KVM_CAP_IRQCHIP => crate::arch::guest::ich_vtr().is_some() as usize,
        k::KVM_CAP_NR_VCPUS => crate::percpu::online_count().min(k::KVM_MAX_VCPUS),
        k::KVM_CAP_MAX_VCPUS | k::KVM_CAP_MAX_VCPU_ID => k::KVM_MAX_VCPUS,
        k::KVM_CAP_COALESCED_MMIO => k::KVM_COALESCED_MMIO_PAGE_OFFSET,
        k::KVM_CAP_COALESCED_PIO => 1,
        // guest_memfd, mappable and shared with the host from the start (`gmem`).
        svelt_abi::uapi::kvm_gmem::KVM_CAP_GUEST_MEMFD => 1,
        svelt_abi::uapi::kvm_gmem::KVM_CAP_GUEST_MEMFD_FLAGS => {
            svelt_abi::uapi::kvm_gmem::GUEST_MEMFD_FLAGS as usize
        }
        k::KVM_CAP_NR_MEMSLOTS => k::KVM_USER_MEM_SLOTS as usize,
        k::KVM_CAP_ARM_VM_IPA_SIZE => max_ipa_bits() as usize,
        svelt_abi::uapi::kvm_aarch32::KVM_CAP_ARM_EL1_32BIT => aarch32::offered() as usize,
        svelt_abi::uapi::kvm_sve::KVM_CAP_ARM_SVE => sve::offered() as usize,
        svelt_abi::uapi::kvm_pmu::KVM_CAP_ARM_PMU_V3 => pmu::offered() as usize,
        svelt_abi::uapi::kvm_sme::KVM_CAP_ARM_SME => sme::offered() as usize,
        k::KVM_CAP_ARM_PTRAUTH_ADDRESS | k::KVM_CAP_ARM_PTRAUTH_GENERIC => {
            pauth::offered() as usize
        }
        // Guest debugging from the VMM (kvm::debug).
        kd::KVM_CAP_SET_GUEST_DEBUG => 1,
        kd::KVM_CAP_SET_GUEST_DEBUG2 => kd::KVM_GUESTDBG_VALID_MASK as usize,
        kd::KVM_CAP_GUEST_DEBUG_HW_BPS => debug::hw_counts().0,
        kd::KVM_CAP_GUEST_DEBUG_HW_WPS => debug::hw_counts().1,
        _ => 0,
    }
}

/// /dev/kvm.
struct KvmDev;

impl FileOps for KvmDev {
    fn read(&self, _cur: &dyn Caller, _file: &File, _buf: &mut [u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }
    fn ioctl(&self, cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        match cmd {
            k::KVM_GET_API_VERSION if arg == 0 => Ok(k::KVM_API_VERSION),
            k::KVM_CREATE_VM => {
                let bits = k::vm_ipa_bits(arg as u64, max_ipa_bits())?;
                let vm = vm::Vm::new(cur, bits)?;
                vm::install(cur, vm::vm_file(vm))
            }
            k::KVM_CHECK_EXTENSION => Ok(check_extension(arg as u64)),
            // The kvm_run page and the VM's coalesced MMIO ring after it.
            k::KVM_GET_VCPU_MMAP_SIZE if arg == 0 => Ok(2 * 4096),
            _ => Err(Errno::EINVAL),
        }
    }
    fn poll(&self, _cur: &dyn Caller) -> u32 {
        0
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Offers /dev/kvm when the kernel runs at EL2 with VHE (boot time, before the root file
/// system is built).
pub fn init(vmid_bits: Option<u8>) {
    vmid::init(vmid_bits);
    if !crate::arch::el::vhe() {
        return;
    }
    dev::register(dev::Driver {
        name: "kvm",
        major: 10,
        minor: 232,
        mode: 0o660,
        open: |_, _flags| Ok(Arc::new(KvmDev)),
    });
}

/// /proc/svelt/kvm: VMs alive, and the exit counters.
pub fn stats() -> alloc::string::String {
    alloc::format!(
        "vms {}\nvmids {}\nstage2_pages {}\nstage2_tables {}\nexits {}\nmmio_exits {}\nwfi_sleeps {}\nguest_fp_loads {}\nvmid_generations {}\n",
        vm::VMS.load(Ordering::Relaxed),
        vmid::HELD.load(Ordering::Relaxed),
        stage2::LEAVES.load(Ordering::Relaxed),
        stage2::TABLE_PAGES.load(Ordering::Relaxed),
        EXITS.load(Ordering::Relaxed),
        MMIO_EXITS.load(Ordering::Relaxed),
        WFI_SLEEPS.load(Ordering::Relaxed),
        GUEST_FP_LOADS.load(Ordering::Relaxed),
        vmid::ROLLOVERS.load(Ordering::Relaxed) + 1,
    )
}
