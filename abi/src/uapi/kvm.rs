//! Linux's KVM API as arm64 userspace sees it (include/uapi/linux/kvm.h and
//! arch/arm64/include/uapi/asm/kvm.h, Documentation/virt/kvm/api.rst): ioctl numbers, the
//! structures they pass, the `kvm_run` page, register IDs, and the pure rules by which Linux
//! checks their arguments and decodes a guest's exits (a data abort's syndrome into an MMIO
//! access, an HVC into a PSCI or SMCCC call).

use super::errno::Errno;
use super::kvm_services as sv;
use super::tty::{io, ior, iow, iowr};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const KVMIO: u8 = 0xae;
/// What KVM_GET_API_VERSION has answered since Linux 2.6.22.
pub const KVM_API_VERSION: usize = 12;

// ---- system (/dev/kvm) ----
pub const KVM_GET_API_VERSION: u32 = io(KVMIO, 0x00);
pub const KVM_CREATE_VM: u32 = io(KVMIO, 0x01);
pub const KVM_CHECK_EXTENSION: u32 = io(KVMIO, 0x03);
pub const KVM_GET_VCPU_MMAP_SIZE: u32 = io(KVMIO, 0x04);

// ---- VM ----
pub const KVM_CREATE_VCPU: u32 = io(KVMIO, 0x41);
pub const KVM_SET_USER_MEMORY_REGION: u32 = iow(KVMIO, 0x46, 32);
/// `struct kvm_userspace_memory_region2`: the first one's 32 bytes, then guest_memfd_offset,
/// guest_memfd and padding, 160 bytes in all.
pub const KVM_SET_USER_MEMORY_REGION2: u32 = iow(KVMIO, 0x49, 160);
pub const KVM_ARM_PREFERRED_TARGET: u32 = ior(KVMIO, 0xaf, 32);
pub const KVM_ENABLE_CAP: u32 = iow(KVMIO, 0xa3, 104);

// ---- vCPU ----
pub const KVM_RUN: u32 = io(KVMIO, 0x80);
pub const KVM_GET_ONE_REG: u32 = iow(KVMIO, 0xab, 16);
pub const KVM_SET_ONE_REG: u32 = iow(KVMIO, 0xac, 16);
pub const KVM_ARM_VCPU_INIT: u32 = iow(KVMIO, 0xae, 32);
pub const KVM_GET_REG_LIST: u32 = iowr(KVMIO, 0xb0, 8);
pub const KVM_CREATE_DEVICE: u32 = iowr(KVMIO, 0xe0, 12);
pub const KVM_SET_DEVICE_ATTR: u32 = iow(KVMIO, 0xe1, 24);
pub const KVM_GET_DEVICE_ATTR: u32 = iow(KVMIO, 0xe2, 24);
pub const KVM_HAS_DEVICE_ATTR: u32 = iow(KVMIO, 0xe3, 24);
pub const KVM_GET_MP_STATE: u32 = ior(KVMIO, 0x98, 4);
/// On a VM or a vCPU: a new read-only descriptor of its binary statistics (`kvm_stats`).
pub const KVM_GET_STATS_FD: u32 = io(KVMIO, 0xce);
pub const KVM_SET_MP_STATE: u32 = iow(KVMIO, 0x99, 4);
pub const KVM_GET_VCPU_EVENTS: u32 = ior(KVMIO, 0x9f, 64);
pub const KVM_SET_VCPU_EVENTS: u32 = iow(KVMIO, 0xa0, 64);

// ---- capabilities (KVM_CHECK_EXTENSION) ----
/// An in-kernel interrupt controller can be made (on arm64: the vGIC).
pub const KVM_CAP_IRQCHIP: u64 = 0;
pub const KVM_CAP_USER_MEMORY: u64 = 3;
pub const KVM_CAP_NR_VCPUS: u64 = 9;
pub const KVM_CAP_NR_MEMSLOTS: u64 = 10;
pub const KVM_CAP_MP_STATE: u64 = 14;
pub const KVM_CAP_SYNC_MMU: u64 = 16;
pub const KVM_CAP_DESTROY_MEMORY_REGION_WORKS: u64 = 21;
pub const KVM_CAP_JOIN_MEMORY_REGIONS_WORKS: u64 = 30;
pub const KVM_CAP_INTERNAL_ERROR_DATA: u64 = 40;
pub const KVM_CAP_VCPU_EVENTS: u64 = 41;
pub const KVM_CAP_VCPU_ATTRIBUTES: u64 = 127;
pub const KVM_CAP_STEAL_TIME: u64 = 187;
pub const KVM_CAP_PTP_KVM: u64 = 198;
pub const KVM_CAP_MAX_VCPUS: u64 = 66;
pub const KVM_CAP_ONE_REG: u64 = 70;
pub const KVM_CAP_ARM_PSCI: u64 = 87;
pub const KVM_CAP_DEVICE_CTRL: u64 = 89;
pub const KVM_CAP_ENABLE_CAP_VM: u64 = 98;
pub const KVM_CAP_CHECK_EXTENSION_VM: u64 = 105;
pub const KVM_CAP_SYSTEM_EVENT_DATA: u64 = 215;
pub const KVM_CAP_READONLY_MEM: u64 = 81;
pub const KVM_CAP_ARM_PSCI_0_2: u64 = 102;
pub const KVM_CAP_MAX_VCPU_ID: u64 = 128;
pub const KVM_CAP_ARM_INJECT_SERROR_ESR: u64 = 158;
pub const KVM_CAP_IMMEDIATE_EXIT: u64 = 136;
pub const KVM_CAP_ARM_VM_IPA_SIZE: u64 = 165;
pub const KVM_CAP_ARM_NISV_TO_USER: u64 = 177;
pub const KVM_CAP_ARM_INJECT_EXT_DABT: u64 = 178;
pub const KVM_CAP_USER_MEMORY2: u64 = 231;
pub const KVM_CAP_BINARY_STATS_FD: u64 = 203;

/// The vCPU limit Linux's arm64 KVM reports with a GICv3 (KVM_MAX_VCPUS).
pub const KVM_MAX_VCPUS: usize = 512;
/// Memory slots a VM may have (KVM_USER_MEM_SLOTS on arm64: every slot id of an address
/// space, 32767 since Linux 5.x dropped the reserved ones).
pub const KVM_USER_MEM_SLOTS: u32 = 32767;
/// KVM_CREATE_VM's type: bits 7:0 give the IPA size (0: the 40-bit default).
pub const KVM_VM_TYPE_ARM_IPA_SIZE_MASK: u64 = 0xff;
pub const KVM_DEFAULT_IPA_BITS: u32 = 40;
/// The smallest IPA size a VM may ask for (Linux's ARM64_MIN_PARANGE_BITS).
pub const KVM_MIN_IPA_BITS: u32 = 32;

// ---- memory slots ----
pub const KVM_MEM_LOG_DIRTY_PAGES: u32 = 1;
pub const KVM_MEM_READONLY: u32 = 2;

/// `struct kvm_userspace_memory_region`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmUserspaceMemoryRegion {
    pub slot: u32,
    pub flags: u32,
    pub guest_phys_addr: u64,
    pub memory_size: u64,
    pub userspace_addr: u64,
}

/// What a memory-region call asks, once its arguments are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotChange {
    /// Create or replace slot `slot` (id = as_id << 16 | slot).
    Set {
        slot: u32,
        gpa: u64,
        size: u64,
        uaddr: u64,
        flags: u32,
    },
    /// Delete slot `slot` (size 0).
    Delete { slot: u32 },
}

/// Checks a KVM_SET_USER_MEMORY_REGION as `check_memory_region_flags` and
/// `kvm_set_memory_region` do before looking at the VM's slots: known flags, one address
/// space (arm64 has one), a slot number in range, page-aligned sizes and addresses, no wrap,
/// and a user range below `user_end`. `ipa_limit`: the VM's IPA size in bytes.
pub fn check_region(
    r: &KvmUserspaceMemoryRegion,
    page: u64,
    user_end: u64,
    ipa_limit: u64,
) -> Result<SlotChange, Errno> {
    if r.flags & !(KVM_MEM_LOG_DIRTY_PAGES | KVM_MEM_READONLY) != 0 {
        return Err(Errno::EINVAL);
    }
    let (as_id, id) = (r.slot >> 16, r.slot & 0xffff);
    if as_id != 0 || id >= KVM_USER_MEM_SLOTS {
        return Err(Errno::EINVAL);
    }
    if r.memory_size & (page - 1) != 0
        || r.guest_phys_addr & (page - 1) != 0
        || r.userspace_addr & (page - 1) != 0
    {
        return Err(Errno::EINVAL);
    }
    if r.userspace_addr
        .checked_add(r.memory_size)
        .is_none_or(|e| e > user_end)
    {
        return Err(Errno::EINVAL);
    }
    if r.guest_phys_addr.checked_add(r.memory_size).is_none() {
        return Err(Errno::EINVAL);
    }
    if r.memory_size == 0 {
        return Ok(SlotChange::Delete { slot: id });
    }
    // Linux leaves this to kvm_arch_prepare_memory_region: a slot past the IPA space is EFAULT.
    if r.guest_phys_addr + r.memory_size > ipa_limit {
        return Err(Errno::EFAULT);
    }
    Ok(SlotChange::Set {
        slot: id,
        gpa: r.guest_phys_addr,
        size: r.memory_size,
        uaddr: r.userspace_addr,
        flags: r.flags,
    })
}

/// The IPA size KVM_CREATE_VM's `type` asks for, or EINVAL (`kvm_init_stage2_mmu`'s rules:
/// only the IPA field may be set, 0 means the default, otherwise at least 32 and at most
/// what the host offers).
pub fn vm_ipa_bits(ty: u64, max: u32) -> Result<u32, Errno> {
    if ty & !KVM_VM_TYPE_ARM_IPA_SIZE_MASK != 0 {
        return Err(Errno::EINVAL);
    }
    match ty as u32 {
        0 => Ok(KVM_DEFAULT_IPA_BITS.min(max)),
        bits if (KVM_MIN_IPA_BITS..=max).contains(&bits) => Ok(bits),
        _ => Err(Errno::EINVAL),
    }
}

// ---- vCPU init ----
pub const KVM_ARM_TARGET_GENERIC_V8: u32 = 5;
pub const KVM_ARM_VCPU_POWER_OFF: u32 = 0;
pub const KVM_ARM_VCPU_EL1_32BIT: u32 = 1;
pub const KVM_ARM_VCPU_PSCI_0_2: u32 = 2;
pub const KVM_ARM_VCPU_PMU_V3: u32 = 3;
pub const KVM_ARM_VCPU_SVE: u32 = 4;
pub const KVM_ARM_VCPU_PTRAUTH_ADDRESS: u32 = 5;
pub const KVM_ARM_VCPU_PTRAUTH_GENERIC: u32 = 6;
pub const KVM_ARM_VCPU_HAS_EL2: u32 = 7;

/// Pointer authentication for guests (KVM_ARM_VCPU_PTRAUTH_ADDRESS and _GENERIC, asked for
/// together): the capabilities, and the ten key registers' ONE_REG IDs (APIAKeyLo_EL1 ..
/// APGAKeyHi_EL1, op0 3, op1 0, CRn 2, CRm 1..3), listed only for a vCPU that has it.
pub const KVM_CAP_ARM_PTRAUTH_ADDRESS: u64 = 171;
pub const KVM_CAP_ARM_PTRAUTH_GENERIC: u64 = 172;
pub const PAUTH_KEYS: [u64; 10] = [
    sysreg_id(3, 0, 2, 1, 0),
    sysreg_id(3, 0, 2, 1, 1),
    sysreg_id(3, 0, 2, 1, 2),
    sysreg_id(3, 0, 2, 1, 3),
    sysreg_id(3, 0, 2, 2, 0),
    sysreg_id(3, 0, 2, 2, 1),
    sysreg_id(3, 0, 2, 2, 2),
    sysreg_id(3, 0, 2, 2, 3),
    sysreg_id(3, 0, 2, 3, 0),
    sysreg_id(3, 0, 2, 3, 1),
];
/// The pointer-authentication fields: ID_AA64ISAR1_EL1's APA, API, GPA and GPI, and
/// ID_AA64ISAR2_EL1's GPA3 and APA3.
pub const ISAR1_PAUTH: u64 = 0xf << 4 | 0xf << 8 | 0xf << 24 | 0xf << 28;
pub const ISAR2_PAUTH: u64 = 0xf << 8 | 0xf << 12;

/// Whether a CPU with these ID_AA64ISAR1_EL1 and ID_AA64ISAR2_EL1 can give guests pointer
/// authentication (Linux's `kvm_has_full_ptr_auth`): exactly one algorithm (QARMA5, the
/// implementation's own, or QARMA3), with both address and generic authentication.
pub fn full_pauth(isar1: u64, isar2: u64) -> bool {
    let field = |v: u64, sh: u32| (v >> sh) & 0xf;
    // (address authentication present, generic authentication present) per algorithm.
    let algos = [
        (field(isar1, 4) != 0, field(isar1, 24) == 1),
        (field(isar1, 8) != 0, field(isar1, 28) == 1),
        (field(isar2, 12) != 0, field(isar2, 8) == 1),
    ];
    algos.iter().all(|(a, g)| a == g) && algos.iter().filter(|(a, _)| *a).count() == 1
}

/// `struct kvm_vcpu_init`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmVcpuInit {
    pub target: u32,
    pub features: [u32; 7],
}

/// Every feature bit Linux 7.3 knows (KVM_VCPU_VALID_FEATURES).
pub const KVM_VCPU_VALID_FEATURES: u32 = (1 << 8) - 1;

/// Checks KVM_ARM_VCPU_INIT as `kvm_vcpu_init_check_features` and `kvm_arch_vcpu_ioctl_init`
/// do: the generic target (else EINVAL), no bit Linux does not know (ENOENT), none it knows
/// but this host does not offer (EINVAL).
pub fn check_init(init: &KvmVcpuInit, offered: u32) -> Result<u32, Errno> {
    if init.target != KVM_ARM_TARGET_GENERIC_V8 {
        return Err(Errno::EINVAL);
    }
    let f = init.features[0];
    if init.features[1..].iter().any(|&w| w != 0) || f & !KVM_VCPU_VALID_FEATURES != 0 {
        return Err(Errno::ENOENT);
    }
    if f & !offered != 0 {
        return Err(Errno::EINVAL);
    }
    // The two pointer-authentication features go together.
    let pauth = |b: u32| f & (1 << b) != 0;
    if pauth(KVM_ARM_VCPU_PTRAUTH_ADDRESS) != pauth(KVM_ARM_VCPU_PTRAUTH_GENERIC) {
        return Err(Errno::EINVAL);
    }
    Ok(f)
}

/// `struct kvm_one_reg`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmOneReg {
    pub id: u64,
    pub addr: u64,
}

/// `struct kvm_create_device`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmCreateDevice {
    pub ty: u32,
    pub fd: u32,
    pub flags: u32,
}
/// KVM_CREATE_DEVICE only asks whether the type exists.
pub const KVM_CREATE_DEVICE_TEST: u32 = 1;

/// `struct kvm_device_attr`: a device's (or a VM's, or a vCPU's) attribute `attr` of `group`,
/// read or written at the user address `addr`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmDeviceAttr {
    pub flags: u32,
    pub group: u32,
    pub attr: u64,
    pub addr: u64,
}

/// The vCPU attribute group of the timers' interrupt numbers, and its attributes: the EL1
/// virtual and physical timers' PPIs (the EL2 ones exist only with nested virtualization).
pub const KVM_ARM_VCPU_TIMER_CTRL: u32 = 1;
pub const KVM_ARM_VCPU_TIMER_IRQ_VTIMER: u64 = 0;
pub const KVM_ARM_VCPU_TIMER_IRQ_PTIMER: u64 = 1;
/// The PPIs a VM's timers use until the VMM chooses others (Linux's defaults, which are the
/// `virt` machine's).
pub const DEFAULT_VTIMER_PPI: u32 = 27;
pub const DEFAULT_PTIMER_PPI: u32 = 30;

// ---- vCPU events (KVM_GET_VCPU_EVENTS, KVM_SET_VCPU_EVENTS) ----

/// `struct kvm_vcpu_events` (arm64): a pending virtual SError and its syndrome, and an external
/// data abort to take now. 64 bytes.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmVcpuEvents {
    pub serror_pending: u8,
    pub serror_has_esr: u8,
    pub ext_dabt_pending: u8,
    pub pad: [u8; 5],
    pub serror_esr: u64,
    pub reserved: [u32; 12],
}

/// ESR_ELx's syndrome field (ISS, bits 24:0): all an injected SError's ESR may hold.
pub const ESR_ISS_MASK: u64 = 0x1ff_ffff;
/// ESR_ELx.IDS (once ISV) of an SError: the syndrome is IMPLEMENTATION DEFINED. What an SError
/// injected without a syndrome carries (kvm_inject_serror).
pub const ESR_SERROR_IDS: u64 = 1 << 24;

/// What a KVM_SET_VCPU_EVENTS asks, once its padding is checked: an external data abort first,
/// then an SError with this syndrome (or the error that refuses the SError after the abort has
/// been taken, as kvm_arm_vcpu_set_events orders them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventsRequest {
    pub ext_dabt: bool,
    pub serror: Result<Option<u64>, Errno>,
}

/// Checks a KVM_SET_VCPU_EVENTS as Linux does: reserved words and padding must be zero
/// (EINVAL); an SError's syndrome needs FEAT_RAS (`ras`) and may hold only ISS bits (EINVAL,
/// reported after the abort is injected); an SError without one is injected with IDS set.
pub fn check_vcpu_events(e: &KvmVcpuEvents, ras: bool) -> Result<EventsRequest, Errno> {
    if e.reserved.iter().any(|&r| r != 0) || e.pad.iter().any(|&p| p != 0) {
        return Err(Errno::EINVAL);
    }
    let has_esr = e.serror_has_esr != 0;
    let serror = if e.serror_pending == 0 {
        Ok(None)
    } else if has_esr && (!ras || e.serror_esr & !ESR_ISS_MASK != 0) {
        Err(Errno::EINVAL)
    } else if has_esr {
        Ok(Some(e.serror_esr))
    } else {
        Ok(Some(ESR_SERROR_IDS))
    };
    Ok(EventsRequest {
        ext_dabt: e.ext_dabt_pending != 0,
        serror,
    })
}

/// The syndrome (ESR_ELx) of a synchronous external abort taken to the guest's EL1:
/// instruction or data abort, from EL1 (`from_el1`) or EL0, IL set, the fault status code
/// `fsc` (0x10 external abort, 0x14 + level on a translation table walk: inject_abt64).
pub fn sea_esr(iabt: bool, from_el1: bool, fsc: u64) -> u64 {
    let ec: u64 = match (iabt, from_el1) {
        (true, false) => 0x20,
        (true, true) => 0x21,
        (false, false) => 0x24,
        (false, true) => 0x25,
    };
    (ec << 26) | (1 << 25) | fsc
}

/// ESR_ELx of an SError exception with syndrome `iss` (EC 0x2f, IL set).
pub fn serror_esr(iss: u64) -> u64 {
    (0x2f << 26) | (1 << 25) | (iss & ESR_ISS_MASK)
}

// ---- register IDs ----
pub const KVM_REG_ARCH_MASK: u64 = 0xff00_0000_0000_0000;
pub const KVM_REG_ARM64: u64 = 0x6000_0000_0000_0000;
pub const KVM_REG_SIZE_SHIFT: u32 = 52;
pub const KVM_REG_SIZE_MASK: u64 = 0x00f0_0000_0000_0000;
pub const KVM_REG_SIZE_U32: u64 = 0x0020_0000_0000_0000;
pub const KVM_REG_SIZE_U64: u64 = 0x0030_0000_0000_0000;
pub const KVM_REG_SIZE_U128: u64 = 0x0040_0000_0000_0000;
pub const KVM_REG_ARM_COPROC_MASK: u64 = 0x0000_0000_0fff_0000;
pub const KVM_REG_ARM_CORE: u64 = 0x0010 << 16;
pub const KVM_REG_ARM64_SYSREG: u64 = 0x0013 << 16;
pub const KVM_REG_ARM_FW: u64 = 0x0014 << 16;

/// Bytes of a register of this ID (1 << the size field).
pub fn reg_size(id: u64) -> usize {
    1 << ((id & KVM_REG_SIZE_MASK) >> KVM_REG_SIZE_SHIFT)
}

/// `struct kvm_regs`' layout, in the 32-bit words core register IDs count in.
pub mod core_reg {
    /// X0..X30, then SP (SP_EL0), PC, PSTATE: 64-bit each.
    pub const X0: u64 = 0;
    pub const SP: u64 = 62;
    pub const PC: u64 = 64;
    pub const PSTATE: u64 = 66;
    pub const SP_EL1: u64 = 68;
    pub const ELR_EL1: u64 = 70;
    /// SPSR_EL1 and the four AArch32 SPSRs.
    pub const SPSR: u64 = 72;
    /// V0..V31, 128-bit each.
    pub const V0: u64 = 84;
    pub const FPSR: u64 = 212;
    pub const FPCR: u64 = 213;
    /// One past the last word.
    pub const END: u64 = 214;
}

/// A core register, as a KVM_REG_ARM_CORE ID names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreReg {
    X(usize),
    Sp,
    Pc,
    Pstate,
    SpEl1,
    ElrEl1,
    Spsr(usize),
    V(usize),
    Fpsr,
    Fpcr,
}

impl CoreReg {
    pub fn id(self) -> u64 {
        let (off, size) = match self {
            CoreReg::X(n) => (core_reg::X0 + 2 * n as u64, KVM_REG_SIZE_U64),
            CoreReg::Sp => (core_reg::SP, KVM_REG_SIZE_U64),
            CoreReg::Pc => (core_reg::PC, KVM_REG_SIZE_U64),
            CoreReg::Pstate => (core_reg::PSTATE, KVM_REG_SIZE_U64),
            CoreReg::SpEl1 => (core_reg::SP_EL1, KVM_REG_SIZE_U64),
            CoreReg::ElrEl1 => (core_reg::ELR_EL1, KVM_REG_SIZE_U64),
            CoreReg::Spsr(n) => (core_reg::SPSR + 2 * n as u64, KVM_REG_SIZE_U64),
            CoreReg::V(n) => (core_reg::V0 + 4 * n as u64, KVM_REG_SIZE_U128),
            CoreReg::Fpsr => (core_reg::FPSR, KVM_REG_SIZE_U32),
            CoreReg::Fpcr => (core_reg::FPCR, KVM_REG_SIZE_U32),
        };
        KVM_REG_ARM64 | size | KVM_REG_ARM_CORE | off
    }

    /// Every core register, in `kvm_regs` order (what KVM_GET_REG_LIST lists).
    pub fn all() -> impl Iterator<Item = CoreReg> {
        (0..31)
            .map(CoreReg::X)
            .chain([
                CoreReg::Sp,
                CoreReg::Pc,
                CoreReg::Pstate,
                CoreReg::SpEl1,
                CoreReg::ElrEl1,
            ])
            .chain((0..5).map(CoreReg::Spsr))
            .chain((0..32).map(CoreReg::V))
            .chain([CoreReg::Fpsr, CoreReg::Fpcr])
    }

    /// Decodes a KVM_REG_ARM_CORE ID as `core_reg_offset_from_id` and
    /// `validate_core_offset` do: an offset inside `kvm_regs` (else ENOENT) that starts a
    /// register and whose size field matches it (else EINVAL).
    pub fn from_id(id: u64) -> Result<CoreReg, Errno> {
        let off = id & !(KVM_REG_ARCH_MASK | KVM_REG_SIZE_MASK | KVM_REG_ARM_CORE);
        if off >= core_reg::END {
            return Err(Errno::ENOENT);
        }
        let r = match off {
            o if o < core_reg::SP => o.is_multiple_of(2).then_some(CoreReg::X(o as usize / 2)),
            core_reg::SP => Some(CoreReg::Sp),
            core_reg::PC => Some(CoreReg::Pc),
            core_reg::PSTATE => Some(CoreReg::Pstate),
            core_reg::SP_EL1 => Some(CoreReg::SpEl1),
            core_reg::ELR_EL1 => Some(CoreReg::ElrEl1),
            o if (core_reg::SPSR..core_reg::SPSR + 10).contains(&o) => (o - core_reg::SPSR)
                .is_multiple_of(2)
                .then_some(CoreReg::Spsr((o - core_reg::SPSR) as usize / 2)),
            o if (core_reg::V0..core_reg::FPSR).contains(&o) => (o - core_reg::V0)
                .is_multiple_of(4)
                .then_some(CoreReg::V((o - core_reg::V0) as usize / 4)),
            core_reg::FPSR => Some(CoreReg::Fpsr),
            core_reg::FPCR => Some(CoreReg::Fpcr),
            _ => None,
        };
        let r = r.ok_or(Errno::EINVAL)?;
        if r.id() != id {
            return Err(Errno::EINVAL);
        }
        Ok(r)
    }
}

/// Whether a PSTATE written through KVM_SET_ONE_REG names a mode a 64-bit vCPU may be in
/// (`validate_core_offset`'s companion in `set_core_reg`): EL0t, EL1t or EL1h, AArch64.
pub fn pstate_mode_ok(pstate: u64) -> bool {
    matches!(pstate & 0x1f, 0b00000 | 0b00100 | 0b00101)
}

/// A system register's ID from its encoding (`ARM64_SYS_REG`).
pub const fn sysreg_id(op0: u64, op1: u64, crn: u64, crm: u64, op2: u64) -> u64 {
    KVM_REG_ARM64
        | KVM_REG_SIZE_U64
        | KVM_REG_ARM64_SYSREG
        | (op0 << 14)
        | (op1 << 11)
        | (crn << 7)
        | (crm << 3)
        | op2
}

/// The firmware pseudo-register holding the PSCI version the guest sees.
pub const KVM_REG_ARM_PSCI_VERSION: u64 = KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_FW;
/// The firmware pseudo-registers of the three Spectre workarounds (1: branch predictor
/// hardening, 2: speculative store bypass, 3: branch history): what the guest's SMCCC
/// ARCH_FEATURES calls are told. 0 is "not available" for each, which is what Svelt's SMCCC
/// answers (it offers none of the workaround calls).
pub const KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_1: u64 = KVM_REG_ARM_PSCI_VERSION | 1;
pub const KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_2: u64 = KVM_REG_ARM_PSCI_VERSION | 2;
pub const KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_3: u64 = KVM_REG_ARM_PSCI_VERSION | 3;
/// The hypercall service bitmaps (Documentation/virt/kvm/arm/fw-pseudo-registers.rst): standard
/// services (TRNG), standard hypervisor services (PV time), KVM's vendor services (feature
/// discovery, PTP) and the second vendor bitmap. A set bit offers the service to the guest.
pub const KVM_REG_ARM_FW_FEAT_BMAP: u64 = 0x0016 << 16;
pub const fn fw_feat_bmap_reg(r: u64) -> u64 {
    KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_FW_FEAT_BMAP | r
}
pub const FW_FEAT_BMAP_REGS: u64 = 4;

/// HCRX_EL2 for a guest whose ID_AA64ISAR2_EL1 is `isar2` and ID_AA64PFR2_EL1 `pfr2`: FEAT_MOPS's
/// instructions enabled (MSCEn) exactly when the VM has MOPS, and FPMR with the FP8 instructions
/// (EnFPM) exactly when it has FPMR, so that a VMM that hides either gets UNDEF in the guest
/// (Linux's kvm_calculate_traps). The MOPS exceptions of EL1 stay the guest's (MCE2 clear).
/// Nothing else of HCRX_EL2 (TCR2, GCS, ...) is given yet.
pub fn guest_hcrx(isar2: u64, pfr2: u64) -> u64 {
    const MSCEN: u64 = 1 << 11;
    let mut v = 0;
    if (isar2 >> 16) & 0xf != 0 {
        v |= MSCEN;
    }
    if pfr2 & ID_AA64PFR2_FPMR != 0 {
        v |= HCRX_ENFPM;
    }
    v
}

/// HCRX_EL2.EnFPM: FPMR and the FP8 instructions usable at EL1 and EL0 (when clear, the FP8
/// instructions are UNDEFINED and FPMR accesses trap to EL2, as Linux's emulate-nested.c
/// describes with CGT_HCRX_EnFPM).
pub const HCRX_ENFPM: u64 = 1 << 23;
/// ID_AA64PFR2_EL1.FPMR: FEAT_FPMR.
pub const ID_AA64PFR2_FPMR: u64 = 0xf << 32;
/// FPMR's KVM_{GET,SET}_ONE_REG ID (op0 3, op1 3, CRn 4, CRm 4, op2 2).
pub const FPMR: u64 = sysreg_id(3, 3, 4, 4, 2);

/// HFGRTR_EL2's and HFGWTR_EL2's nGCS_EL1 (bit 53) and nGCS_EL0 (bit 52): clear, a guest's
/// accesses to the GCS registers trap to EL2 (the Arm ARM; QEMU traps them only this way).
pub const FGT_NGCS: u64 = 3 << 52;

/// The HFGRTR_EL2/HFGWTR_EL2 "n" bits to clear for a guest (its register accesses then trap,
/// to be UNDEFINED): the GCS registers where the CPU has GCS (`host_pfr1`'s
/// ID_AA64PFR1_EL1.GCS), as Svelt gives guests no GCS; 0 without FEAT_FGT or GCS.
pub fn guest_fgt_read_write_clear(has_fgt: bool, host_pfr1: u64) -> u64 {
    if has_fgt && (host_pfr1 >> 44) & 0xf != 0 {
        FGT_NGCS
    } else {
        0
    }
}

/// HFGITR_EL2's trap bits for the TLBI instructions of FEAT_TLBIOS (the Outer Shareable EL1
/// ones: VMALLE1OS, VAE1OS, ASIDE1OS, VAAE1OS, VALE1OS, VAALE1OS; bits 18..=23) and of
/// FEAT_TLBIRANGE (RVAE1, RVAAE1, RVALE1, RVAALE1 in their OS, IS and non-shareable forms;
/// bits 24..=27, 34..=37, 38..=41), as the Arm ARM lays HFGITR_EL2 out.
pub const HFGITR_TLBIOS: u64 = 0x3f << 18;
pub const HFGITR_TLBIRANGE: u64 = (0xf << 24) | (0xf << 34) | (0xf << 38);

/// HFGITR_EL2 bits a guest runs with, where the CPU has FEAT_FGT: the TLBI instructions of a
/// feature the CPU has (`host_isar0`'s ID_AA64ISAR0_EL1.TLB) and the VM's VMM hid
/// (`vm_isar0`'s) trap to EL2, to be UNDEFINED there (Linux's hfgitr_feat_map in config.c with
/// FEAT_TLBIOS and FEAT_TLBIRANGE, whose fine-grained-undef bits triage_sysreg_trap turns into
/// an UNDEF).
pub fn guest_hfgitr(host_isar0: u64, vm_isar0: u64) -> u64 {
    let tlb = |isar0: u64| (isar0 >> 56) & 0xf;
    let (host, vm) = (tlb(host_isar0), tlb(vm_isar0));
    let mut bits = 0;
    if host >= 1 && vm < 1 {
        bits |= HFGITR_TLBIOS;
    }
    if host >= 2 && vm < 2 {
        bits |= HFGITR_TLBIRANGE;
    }
    bits
}

/// The HFGITR_EL2 bit that traps the EL1 TLBI instruction a trapped access's ISS names
/// (op0 1, op1 0, CRn 8, or 9 for its nXS form; CRm and op2 pick the instruction), if any.
pub fn hfgitr_tlbi_bit(op0: u32, op1: u32, crn: u32, crm: u32, op2: u32) -> Option<u64> {
    if op0 != 1 || op1 != 0 || !(crn == 8 || crn == 9) {
        return None;
    }
    // VMALLE1, VAE1, ASIDE1, VAAE1, VALE1, VAALE1 at op2 0, 1, 2, 3, 5, 7.
    let plain = match op2 {
        0..=3 => Some(op2),
        5 => Some(4),
        7 => Some(5),
        _ => None,
    };
    // RVAE1, RVAAE1, RVALE1, RVAALE1 at op2 1, 3, 5, 7.
    let range = (op2 & 1 == 1).then_some(op2 / 2);
    let (base, idx) = match crm {
        1 => (18, plain?), // Outer Shareable
        3 => (28, plain?), // Inner Shareable
        7 => (42, plain?), // non-shareable
        5 => (24, range?), // range, Outer Shareable
        2 => (34, range?), // range, Inner Shareable
        6 => (38, range?), // range, non-shareable
        _ => return None,
    };
    Some(1 << (base + idx))
}

/// The ID register space HCR_EL2.TID3 traps: op0=3, op1=0, CRn=0, CRm 1..=7, op2 0..=7.
pub const ID_REGS: usize = 56;

/// A sysreg ID's encoding (its low 16 bits) as (op0, op1, CRn, CRm, op2).
pub fn sysreg_fields(id: u64) -> (u64, u64, u64, u64, u64) {
    let enc = id & 0xffff;
    (
        enc >> 14,
        (enc >> 11) & 7,
        (enc >> 7) & 0xf,
        (enc >> 3) & 0xf,
        enc & 7,
    )
}

/// The index in a VM's ID register array of the register with this sysreg ID, if it is one.
pub fn id_reg_index(id: u64) -> Option<usize> {
    let (op0, op1, crn, crm, op2) = sysreg_fields(id);
    (op0 == 3 && op1 == 0 && crn == 0 && (1..=7).contains(&crm))
        .then(|| ((crm - 1) * 8 + op2) as usize)
}

/// The sysreg ID of ID register `index` (the inverse of `id_reg_index`).
pub const fn id_reg_id(index: usize) -> u64 {
    sysreg_id(3, 0, 0, 1 + (index / 8) as u64, (index % 8) as u64)
}

// ---- coalesced MMIO (virt/kvm/coalesced_mmio.c) ----

pub const KVM_CAP_COALESCED_MMIO: u64 = 15;
pub const KVM_CAP_COALESCED_PIO: u64 = 162;
/// The page of the vCPU mapping that holds the VM's ring (KVM_COALESCED_MMIO_PAGE_OFFSET), and
/// KVM_CHECK_EXTENSION(KVM_CAP_COALESCED_MMIO)'s answer.
pub const KVM_COALESCED_MMIO_PAGE_OFFSET: usize = 1;
pub const KVM_REGISTER_COALESCED_MMIO: u32 = iow(KVMIO, 0x67, 16);
pub const KVM_UNREGISTER_COALESCED_MMIO: u32 = iow(KVMIO, 0x68, 16);

/// `struct kvm_coalesced_mmio_zone`: `size` bytes at `addr`, on the MMIO bus (`pio` 0) or the
/// port I/O bus (1, which arm64 guests never reach).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmCoalescedMmioZone {
    pub addr: u64,
    pub size: u32,
    pub pio: u32,
}

/// The ring (`struct kvm_coalesced_mmio_ring`): `first` (the VMM's next entry to take) and
/// `last` (KVM's next entry to fill) as u32s, then 24-byte entries (`struct
/// kvm_coalesced_mmio`: u64 phys_addr, u32 len, u32 pio, u8 data[8]) to the end of the page.
pub mod ring {
    pub const FIRST: usize = 0;
    pub const LAST: usize = 4;
    pub const ENTRIES: usize = 8;
    pub const ENTRY_SIZE: usize = 24;
    /// KVM_COALESCED_MMIO_MAX for 4 KiB pages.
    pub const MAX: u32 = ((4096 - ENTRIES) / ENTRY_SIZE) as u32;
}

/// Whether an access of `len` bytes at `addr` lies inside the zone (`coalesced_mmio_in_range`).
pub fn in_zone(z: &KvmCoalescedMmioZone, addr: u64, len: u64) -> bool {
    match addr.checked_add(len) {
        Some(end) => addr >= z.addr && end <= z.addr + z.size as u64,
        None => false,
    }
}

/// The entry a write may fill with the ring's indices as read (`coalesced_mmio_write`): none if
/// the VMM left `last` out of range or the ring is full (one entry always stays free, so that
/// a full ring differs from an empty one).
pub fn ring_slot(first: u32, last: u32) -> Option<u32> {
    (last < ring::MAX && (last + 1) % ring::MAX != first).then_some(last)
}

// ---- the kvm_run page ----
pub mod run {
    /// u8: set by userspace, KVM_RUN returns EINTR at once.
    pub const IMMEDIATE_EXIT: usize = 1;
    pub const EXIT_REASON: usize = 8;
    /// u16, after ready_for_interrupt_injection and if_flag.
    pub const FLAGS: usize = 14;
    /// The exit's union.
    pub const U: usize = 32;
    pub const MMIO_PHYS_ADDR: usize = U;
    pub const MMIO_DATA: usize = U + 8;
    pub const MMIO_LEN: usize = U + 16;
    pub const MMIO_IS_WRITE: usize = U + 20;
    pub const SYSTEM_EVENT_TYPE: usize = U;
    pub const SYSTEM_EVENT_NDATA: usize = U + 4;
    pub const SYSTEM_EVENT_DATA: usize = U + 8;
    pub const NISV_ESR_ISS: usize = U;
    pub const NISV_FAULT_IPA: usize = U + 8;
    pub const INTERNAL_SUBERROR: usize = U;
    /// KVM_EXIT_HYPERCALL: the function ID, six argument words and a return word (unused on
    /// arm64, zeroed), then the flags (KVM_HYPERCALL_EXIT_*).
    pub const HYPERCALL_NR: usize = U;
    pub const HYPERCALL_FLAGS: usize = U + 64;
}

pub const KVM_EXIT_UNKNOWN: u32 = 0;
pub const KVM_EXIT_HYPERCALL: u32 = 3;
pub const KVM_EXIT_MMIO: u32 = 6;
pub const KVM_EXIT_FAIL_ENTRY: u32 = 9;
pub const KVM_EXIT_INTR: u32 = 10;
pub const KVM_EXIT_INTERNAL_ERROR: u32 = 17;
pub const KVM_EXIT_SYSTEM_EVENT: u32 = 24;
pub const KVM_EXIT_ARM_NISV: u32 = 28;

pub const KVM_SYSTEM_EVENT_SHUTDOWN: u32 = 1;
pub const KVM_SYSTEM_EVENT_RESET: u32 = 2;
pub const KVM_SYSTEM_EVENT_RESET_FLAG_PSCI_RESET2: u64 = 1;
pub const KVM_SYSTEM_EVENT_WAKEUP: u32 = 4;
pub const KVM_SYSTEM_EVENT_SUSPEND: u32 = 5;
pub const KVM_SYSTEM_EVENT_SHUTDOWN_FLAG_PSCI_OFF2: u64 = 1;
pub const KVM_CAP_ARM_SYSTEM_SUSPEND: u64 = 216;
pub const KVM_CAP_ARM_IRQ_LINE_LAYOUT_2: u64 = 174;

pub const KVM_MP_STATE_RUNNABLE: u32 = 0;
pub const KVM_MP_STATE_STOPPED: u32 = 5;
pub const KVM_MP_STATE_SUSPENDED: u32 = 10;

// ---- exits: a data abort's syndrome as an MMIO access ----

/// The access a data abort with a valid instruction syndrome (ISS.ISV) describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmioAccess {
    /// Bytes: 1, 2, 4 or 8.
    pub len: u32,
    pub write: bool,
    /// The register (31: XZR for a store, which writes 0).
    pub reg: u8,
    /// Sign-extend a load (SSE) into a 64-bit (SF) or 32-bit register.
    pub sign_extend: bool,
    pub sixty_four: bool,
}

/// Decodes a data abort's ISS (`kvm_vcpu_dabt_*`); None without a valid syndrome (ISV = 0),
/// the case KVM reports as KVM_EXIT_ARM_NISV or refuses.
pub fn mmio_access(iss: u32) -> Option<MmioAccess> {
    if iss & (1 << 24) == 0 {
        return None;
    }
    Some(MmioAccess {
        len: 1 << ((iss >> 22) & 3),
        write: iss & (1 << 6) != 0,
        reg: ((iss >> 16) & 0x1f) as u8,
        sign_extend: iss & (1 << 21) != 0,
        sixty_four: iss & (1 << 15) != 0,
    })
}

impl MmioAccess {
    /// The register's new value after a load of `data` (little-endian, `len` bytes).
    pub fn load_value(&self, data: u64) -> u64 {
        let bits = 8 * self.len;
        let mut v = if bits == 64 {
            data
        } else {
            data & ((1u64 << bits) - 1)
        };
        if self.sign_extend && bits < 64 && v & (1 << (bits - 1)) != 0 {
            v |= !0u64 << bits;
        }
        if !self.sixty_four {
            v &= 0xffff_ffff;
        }
        v
    }

    /// The bytes a store of `reg_value` writes.
    pub fn store_value(&self, reg_value: u64) -> u64 {
        if self.len == 8 {
            reg_value
        } else {
            reg_value & ((1u64 << (8 * self.len)) - 1)
        }
    }

    /// The access's `len` bytes of `data` in the other byte order: how a big-endian guest's
    /// data (SCTLR_EL1.EE, or E0E at EL0) meets the VMM's little-endian `kvm_run`
    /// (vcpu_data_guest_to_host and back).
    pub fn byte_swap(&self, data: u64) -> u64 {
        data.swap_bytes() >> (64 - 8 * self.len)
    }
}

// ---- exits: SMCCC and PSCI calls (Documentation/virt/kvm/arm/hypercalls.rst, the PSCI
// and SMCCC specifications) ----

pub const PSCI_0_2_FN_PSCI_VERSION: u32 = 0x8400_0000;
/// The standard PSCI function ranges (SMC32 and SMC64).
pub const PSCI_FN_FIRST: u32 = 0x8400_0000;
pub const PSCI_FN_LAST: u32 = 0x8400_001f;
pub const PSCI_FN64_FIRST: u32 = 0xc400_0000;
pub const PSCI_FN64_LAST: u32 = 0xc400_001f;
/// PSCI 0.1 as KVM numbers it (KVM_PSCI_FN_*), for vCPUs without KVM_ARM_VCPU_PSCI_0_2.
pub const KVM_PSCI_FN_CPU_OFF: u32 = 0x95c1_ba5f;
pub const KVM_PSCI_FN_CPU_ON: u32 = 0x95c1_ba60;
pub const PSCI_0_2_FN_CPU_SUSPEND: u32 = 0x8400_0001;
pub const PSCI_0_2_FN_CPU_OFF: u32 = 0x8400_0002;
pub const PSCI_0_2_FN_CPU_ON: u32 = 0x8400_0003;
pub const PSCI_0_2_FN_AFFINITY_INFO: u32 = 0x8400_0004;
pub const PSCI_0_2_FN_MIGRATE_INFO_TYPE: u32 = 0x8400_0006;
pub const PSCI_0_2_FN_SYSTEM_OFF: u32 = 0x8400_0008;
pub const PSCI_0_2_FN_SYSTEM_RESET: u32 = 0x8400_0009;
pub const PSCI_1_0_FN_PSCI_FEATURES: u32 = 0x8400_000a;
pub const PSCI_0_2_FN64_CPU_SUSPEND: u32 = 0xc400_0001;
pub const PSCI_0_2_FN64_CPU_ON: u32 = 0xc400_0003;
pub const PSCI_0_2_FN64_AFFINITY_INFO: u32 = 0xc400_0004;
pub const PSCI_1_1_FN_SYSTEM_RESET2: u32 = 0x8400_0012;
pub const PSCI_1_1_FN64_SYSTEM_RESET2: u32 = 0xc400_0012;
pub const PSCI_1_0_FN_SYSTEM_SUSPEND: u32 = 0x8400_000e;
pub const PSCI_1_0_FN64_SYSTEM_SUSPEND: u32 = 0xc400_000e;
pub const PSCI_1_3_FN_SYSTEM_OFF2: u32 = 0x8400_0015;
pub const PSCI_1_3_FN64_SYSTEM_OFF2: u32 = 0xc400_0015;
/// SYSTEM_OFF2's hibernation type, and PSCI_FEATURES' answer for it (the types offered).
pub const PSCI_1_3_OFF_TYPE_HIBERNATE_OFF: u64 = 1;

pub const ARM_SMCCC_VERSION_FUNC_ID: u32 = 0x8000_0000;
pub const ARM_SMCCC_ARCH_FEATURES_FUNC_ID: u32 = 0x8000_0001;

pub const PSCI_RET_SUCCESS: i64 = 0;
pub const PSCI_RET_NOT_SUPPORTED: i64 = -1;
pub const PSCI_RET_INVALID_PARAMS: i64 = -2;
pub const PSCI_RET_ALREADY_ON: i64 = -4;
pub const PSCI_RET_INTERNAL_FAILURE: i64 = -6;
pub const SMCCC_RET_NOT_SUPPORTED: i64 = -1;

// ---- the SMCCC filter (Documentation/virt/kvm/devices/vm.rst, KVM_ARM_VM_SMCCC_CTRL) ----

/// The VM attribute group of the SMCCC filter, and its one attribute (write-only).
pub const KVM_ARM_VM_SMCCC_CTRL: u32 = 0;
pub const KVM_ARM_VM_SMCCC_FILTER: u64 = 0;

/// `struct kvm_smccc_filter`: `nr_functions` function IDs from `base` get `action`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KvmSmcccFilter {
    pub base: u32,
    pub nr_functions: u32,
    pub action: u8,
    pub pad: [u8; 15],
}

/// What the filter does with a call (`enum kvm_smccc_filter_action`): KVM handles it, KVM
/// answers NOT_SUPPORTED, or KVM_RUN returns with KVM_EXIT_HYPERCALL for the VMM to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmcccAction {
    Handle = 0,
    Deny = 1,
    FwdToUser = 2,
}

/// KVM_EXIT_HYPERCALL's flags on arm64: the guest used SMC (else HVC); a 16-bit instruction
/// (never for an AArch64 guest).
pub const KVM_HYPERCALL_EXIT_SMC: u64 = 1 << 0;
pub const KVM_HYPERCALL_EXIT_16BIT: u64 = 1 << 1;

/// The Arm Architecture Calls (SMC32 and SMC64, function numbers 0..=0xffff), which the filter
/// keeps for KVM itself once it has any range: a range touching them is refused (EEXIST).
pub const SMCCC_ARCH_RANGES: [(u32, u32); 2] =
    [(0x8000_0000, 0x8000_ffff), (0xc000_0000, 0xc000_ffff)];

/// Checks a filter range as `kvm_smccc_set_filter` does before looking at the VM: zero padding,
/// at least one function, no wrap past 0xffff_ffff and a known action, each refused with
/// EINVAL. The inclusive range and its action.
pub fn check_smccc_filter(f: &KvmSmcccFilter) -> Result<(u32, u32, SmcccAction), Errno> {
    if f.pad.iter().any(|&b| b != 0) || f.nr_functions == 0 {
        return Err(Errno::EINVAL);
    }
    let end = f
        .base
        .checked_add(f.nr_functions - 1)
        .ok_or(Errno::EINVAL)?;
    let action = match f.action {
        0 => SmcccAction::Handle,
        1 => SmcccAction::Deny,
        2 => SmcccAction::FwdToUser,
        _ => return Err(Errno::EINVAL),
    };
    Ok((f.base, end, action))
}

/// KVM_EXIT_HYPERCALL's flags for a call trapped with syndrome `esr` (EC 0x13 or 0x17 is an
/// SMC; IL clear is a 16-bit instruction), as `kvm_prepare_hypercall_exit` sets them.
pub fn hypercall_exit_flags(esr: u64) -> u64 {
    let ec = (esr >> 26) & 0x3f;
    let mut flags = 0;
    if ec == 0x13 || ec == 0x17 {
        flags |= KVM_HYPERCALL_EXIT_SMC;
    }
    if esr & (1 << 25) == 0 {
        flags |= KVM_HYPERCALL_EXIT_16BIT;
    }
    flags
}

/// The PSCI version Svelt's guests see (1.1: SYSTEM_RESET2 and PSCI_FEATURES).
pub const PSCI_VERSION_1_1: u64 = 0x1_0001;
/// PSCI 0.1: a vCPU initialised without KVM_ARM_VCPU_PSCI_0_2.
pub const PSCI_VERSION_0_1: u64 = 1;
/// What Linux 7.3's KVM tells guests (KVM_ARM_PSCI_LATEST), and Svelt too.
pub const PSCI_VERSION_1_3: u64 = 0x1_0003;
/// The versions a VMM may choose for a vCPU with PSCI 0.2 or later.
pub const PSCI_VERSIONS: [u64; 5] = [0x2, 0x1_0000, 0x1_0001, 0x1_0002, 0x1_0003];
/// SMCCC 1.1.
pub const SMCCC_VERSION_1_1: u64 = 0x1_0001;

/// What a guest's SMCCC call asks of the hypervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// Answer in x0 and go on.
    Return(u64),
    /// Power this vCPU off.
    CpuOff,
    /// Power on the vCPU with MPIDR `target`, at `entry` with x0 = `context`.
    CpuOn {
        target: u64,
        entry: u64,
        context: u64,
    },
    /// Is the vCPU with MPIDR `target` on?
    AffinityInfo { target: u64, level: u64 },
    /// Every vCPU stops, and KVM_RUN ends with KVM_EXIT_SYSTEM_EVENT of this type and flags.
    /// The caller's x0 is set to INTERNAL_FAILURE first, what the call returns if the VMM runs
    /// the vCPU again (Linux's kvm_psci_0_2_call and kvm_psci_1_x_call), and with
    /// `clear_x1_x3` x1..x3 become 0 too (SYSTEM_OFF and SYSTEM_RESET return through
    /// smccc_set_retval there; SYSTEM_RESET2 and SYSTEM_OFF2 set x0 alone).
    SystemEvent {
        ty: u32,
        flags: u64,
        clear_x1_x3: bool,
    },
    /// KVM_EXIT_SYSTEM_EVENT(SUSPEND) for this vCPU alone, its registers untouched.
    SystemSuspend,
    /// CPU_SUSPEND: wait as WFI does, then return SUCCESS.
    CpuSuspend,
    /// The answer for x0..x3 (a UID).
    Words([u64; 4]),
    /// ARCH_FEATURES(PV_TIME_FEATURES): SUCCESS while the VM offers PV time.
    ArchFeaturesPvTime,
    /// KVM_FEATURES: the VM's vendor bitmaps in x0 and x2.
    VendorFeatures,
    /// PV_TIME_FEATURES(feature): SUCCESS for PV_TIME_FEATURES and PV_TIME_ST once the VMM gave
    /// this vCPU a stolen-time structure.
    PvTimeFeatures(u64),
    /// PV_TIME_ST: the structure's IPA, its counting started afresh.
    PvTimeSt,
    /// TRNG_RND32 or TRNG_RND64: `bits` random bits.
    TrngRnd { bits: u64, size: u32 },
    /// KVM's PTP call: the wall clock with the virtual (0) or physical (1) counter.
    Ptp(u64),
}
/// ARM_SMCCC_VENDOR_HYP_CALL_UID and ARM_SMCCC_VENDOR_HYP_KVM_FEATURES.
pub const VENDOR_HYP_CALL_UID_FUNC_ID: u32 = 0x8600_ff01;
pub const VENDOR_HYP_KVM_FEATURES_FUNC_ID: u32 = 0x8600_0000;
/// KVM's UID in x0..x3 (28b46fb6-2ec5-11e9-a9ca-4b564d003a74, as Linux's
/// ARM_SMCCC_VENDOR_HYP_UID_KVM_REG_*).
pub const KVM_UID: [u64; 4] = [0xb66f_b428, 0xe911_c52e, 0x564b_caa9, 0x743a_004d];

/// What a vCPU's PSCI offers: the version its VMM chose (KVM_REG_ARM_PSCI_VERSION) and
/// whether SYSTEM_SUSPEND exits to the VMM (KVM_CAP_ARM_SYSTEM_SUSPEND is on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Psci {
    pub version: u64,
    pub system_suspend: bool,
}

/// Decides an SMCCC call (x0 = `func`, x1.. = `args`) for a vCPU with PSCI 0.2 or later, as
/// `kvm_psci_call` and `kvm_smccc_call_handler` do: the PSCI functions of `psci.version` and no
/// newer ones. The function ID is x0's low 32 bits (`smccc_get_function`); SMC32 arguments are
/// truncated to 32 bits. Unknown functions return NOT_SUPPORTED (-1).
pub fn smccc_call(func: u64, args: [u64; 3], psci: Psci) -> Call {
    let ret = |v: i64| Call::Return(v as u64);
    let func32 = func as u32;
    let a = |i: usize| {
        if func32 & 0x4000_0000 == 0 {
            args[i] & 0xffff_ffff
        } else {
            args[i]
        }
    };
    // PSCI 0.2 has no minor functions; 1.x has those of its minor version and below.
    let minor = if psci.version >> 16 >= 1 {
        Some(psci.version & 0xffff)
    } else {
        None
    };
    let at_least = |m: u64| minor.is_some_and(|v| v >= m);
    if psci.version == PSCI_VERSION_0_1 {
        // KVM's own PSCI 0.1 numbering, and none of the standard PSCI functions.
        return match func32 {
            KVM_PSCI_FN_CPU_OFF => Call::CpuOff,
            KVM_PSCI_FN_CPU_ON => Call::CpuOn {
                target: a(0),
                entry: a(1),
                context: a(2),
            },
            PSCI_FN_FIRST..=PSCI_FN_LAST | PSCI_FN64_FIRST..=PSCI_FN64_LAST => {
                ret(PSCI_RET_NOT_SUPPORTED)
            }
            _ => smccc_call(func, args, Psci { version: 2, ..psci }),
        };
    }
    match func32 {
        ARM_SMCCC_VERSION_FUNC_ID => Call::Return(SMCCC_VERSION_1_1),
        VENDOR_HYP_CALL_UID_FUNC_ID => Call::Words(KVM_UID),
        VENDOR_HYP_KVM_FEATURES_FUNC_ID => Call::VendorFeatures,
        ARM_SMCCC_ARCH_FEATURES_FUNC_ID if a(0) as u32 == sv::PV_TIME_FEATURES => {
            Call::ArchFeaturesPvTime
        }
        sv::PV_TIME_FEATURES => Call::PvTimeFeatures(a(0)),
        sv::PV_TIME_ST => Call::PvTimeSt,
        sv::VENDOR_HYP_KVM_PTP => Call::Ptp(a(0)),
        sv::TRNG_VERSION => Call::Return(sv::TRNG_VERSION_1_0),
        sv::TRNG_FEATURES => match a(0) as u32 {
            sv::TRNG_VERSION
            | sv::TRNG_FEATURES
            | sv::TRNG_GET_UUID
            | sv::TRNG_RND32
            | sv::TRNG_RND64 => Call::Return(0),
            _ => ret(SMCCC_RET_NOT_SUPPORTED),
        },
        sv::TRNG_GET_UUID => Call::Words(sv::TRNG_UUID),
        sv::TRNG_RND32 => Call::TrngRnd {
            bits: a(0),
            size: 32,
        },
        sv::TRNG_RND64 => Call::TrngRnd {
            bits: a(0),
            size: 64,
        },
        PSCI_0_2_FN_PSCI_VERSION => Call::Return(psci.version),
        PSCI_0_2_FN_CPU_SUSPEND | PSCI_0_2_FN64_CPU_SUSPEND => Call::CpuSuspend,
        PSCI_0_2_FN_CPU_OFF => Call::CpuOff,
        PSCI_0_2_FN_CPU_ON | PSCI_0_2_FN64_CPU_ON => Call::CpuOn {
            target: a(0),
            entry: a(1),
            context: a(2),
        },
        PSCI_0_2_FN_AFFINITY_INFO | PSCI_0_2_FN64_AFFINITY_INFO => Call::AffinityInfo {
            target: a(0),
            level: a(1),
        },
        // Trusted OS: not present (2), as KVM says.
        PSCI_0_2_FN_MIGRATE_INFO_TYPE => ret(2),
        PSCI_0_2_FN_SYSTEM_OFF => Call::SystemEvent {
            ty: KVM_SYSTEM_EVENT_SHUTDOWN,
            flags: 0,
            clear_x1_x3: true,
        },
        PSCI_0_2_FN_SYSTEM_RESET => Call::SystemEvent {
            ty: KVM_SYSTEM_EVENT_RESET,
            flags: 0,
            clear_x1_x3: true,
        },
        PSCI_1_1_FN_SYSTEM_RESET2 | PSCI_1_1_FN64_SYSTEM_RESET2 if at_least(1) => {
            // Architectural warm reset (type 0) or a vendor type (bit 31); nothing else.
            let ty = a(0);
            if ty == 0 || ty & (1 << 31) != 0 && ty <= u32::MAX as u64 {
                Call::SystemEvent {
                    ty: KVM_SYSTEM_EVENT_RESET,
                    flags: KVM_SYSTEM_EVENT_RESET_FLAG_PSCI_RESET2,
                    clear_x1_x3: false,
                }
            } else {
                ret(PSCI_RET_INVALID_PARAMS)
            }
        }
        // Hibernation (type HIBERNATE_OFF, or 0, its alias) with a zero cookie. The guest is
        // not meant to come back; if the VMM runs it again, the call failed.
        PSCI_1_3_FN_SYSTEM_OFF2 | PSCI_1_3_FN64_SYSTEM_OFF2 if at_least(3) => {
            let ty = a(0);
            if (ty != 0 && ty != PSCI_1_3_OFF_TYPE_HIBERNATE_OFF) || a(1) != 0 {
                ret(PSCI_RET_INVALID_PARAMS)
            } else {
                Call::SystemEvent {
                    ty: KVM_SYSTEM_EVENT_SHUTDOWN,
                    flags: KVM_SYSTEM_EVENT_SHUTDOWN_FLAG_PSCI_OFF2,
                    clear_x1_x3: false,
                }
            }
        }
        // The VMM implements the suspend; the registers stay as the guest left them.
        PSCI_1_0_FN_SYSTEM_SUSPEND | PSCI_1_0_FN64_SYSTEM_SUSPEND
            if at_least(0) && psci.system_suspend =>
        {
            Call::SystemSuspend
        }
        PSCI_1_0_FN_PSCI_FEATURES if at_least(0) => match a(0) as u32 {
            PSCI_0_2_FN_PSCI_VERSION
            | PSCI_0_2_FN_CPU_SUSPEND
            | PSCI_0_2_FN64_CPU_SUSPEND
            | PSCI_0_2_FN_CPU_OFF
            | PSCI_0_2_FN_CPU_ON
            | PSCI_0_2_FN64_CPU_ON
            | PSCI_0_2_FN_AFFINITY_INFO
            | PSCI_0_2_FN64_AFFINITY_INFO
            | PSCI_0_2_FN_MIGRATE_INFO_TYPE
            | PSCI_0_2_FN_SYSTEM_OFF
            | PSCI_0_2_FN_SYSTEM_RESET
            | PSCI_1_0_FN_PSCI_FEATURES
            | ARM_SMCCC_VERSION_FUNC_ID => ret(0),
            PSCI_1_0_FN_SYSTEM_SUSPEND | PSCI_1_0_FN64_SYSTEM_SUSPEND if psci.system_suspend => {
                ret(0)
            }
            PSCI_1_1_FN_SYSTEM_RESET2 | PSCI_1_1_FN64_SYSTEM_RESET2 if at_least(1) => ret(0),
            PSCI_1_3_FN_SYSTEM_OFF2 | PSCI_1_3_FN64_SYSTEM_OFF2 if at_least(3) => {
                Call::Return(PSCI_1_3_OFF_TYPE_HIBERNATE_OFF)
            }
            _ => ret(PSCI_RET_NOT_SUPPORTED),
        },
        _ => ret(SMCCC_RET_NOT_SUPPORTED),
    }
}

// ---- the ID registers a guest reads (HCR_EL2.TID3) ----

/// Fields of one ID register (op0=3, op1=0, CRn=0, CRm, op2) a guest reads as 0: features the
/// host does not give guests yet. Each mask covers whole 4-bit fields.
const GUEST_HIDDEN: &[(u8, u8, u64)] = &[
    // ID_DFR0_EL1.PerfMon (no PMU for guests); ID_AFR0_EL1, ID_DFR1_EL1, ID_AA64AFR0_EL1 and
    // ID_AA64AFR1_EL1 read as 0 (Linux's ID_HIDDEN).
    (1, 2, 0xf << 24),
    (1, 3, u64::MAX),
    (3, 5, u64::MAX),
    (5, 4, u64::MAX),
    (5, 5, u64::MAX),
    // ID_AA64PFR0_EL1: SVE, MPAM, AMU, RME. (GIC stays, at most 1: a VM without a vGICv3
    // sees 0 once it runs.)
    (4, 0, 0xf << 32 | 0xf << 40 | 0xf << 44 | 0xf << 52),
    // ID_AA64PFR1_EL1: MTE, MPAM_frac, SME, RNDR_trap, NMI, MTE_frac, GCS, THE, MTEX, PFAR.
    (
        4,
        1,
        0xf << 8
            | 0xf << 16
            | 0xf << 24
            | 0xf << 28
            | 0xf << 36
            | 0xf << 40
            | 0xf << 44
            | 0xf << 48
            | 0xf << 52
            | 0xf << 60,
    ),
    // ID_AA64PFR2_EL1: all but FPMR (MTE's extensions, GICv5), as Linux's
    // sanitise_id_aa64pfr2_el1 for a VM without MTE; ID_AA64ZFR0_EL1, ID_AA64SMFR0_EL1: all of
    // it. ID_AA64FPFR0_EL1 (the FP8 formats) is the CPU's, as Linux shows it.
    (4, 2, !ID_AA64PFR2_FPMR),
    (4, 4, u64::MAX),
    (4, 5, u64::MAX),
    // ID_AA64DFR0_EL1: TraceVer, PMUVer, PMSVer, TraceFilt, TraceBuffer, MTPMU, BRBE,
    // ExtTrcBuff, HPMN0 (debug registers stay, emulated).
    (
        5,
        0,
        0xf << 4
            | 0xf << 8
            | 0xf << 32
            | 0xf << 40
            | 0xf << 44
            | 0xf << 48
            | 0xf << 52
            | 0xf << 56
            | 0xf << 60,
    ),
    (5, 1, u64::MAX),
    // ID_AA64ISAR1_EL1: APA, API, GPA, GPI (pointer authentication traps for guests).
    (6, 1, 0xf << 4 | 0xf << 8 | 0xf << 24 | 0xf << 28),
    // ID_AA64ISAR2_EL1: GPA3, APA3 (MOPS is given: HCRX_EL2.MSCEn while the VM has it).
    (6, 2, 0xf << 8 | 0xf << 12),
    // ID_MMFR4_EL1.CCIDX and ID_AA64MMFR2_EL1's CCIDX and NV, as Linux hides them (the
    // cache geometry registers are the CPU's; no nested virtualization).
    (2, 6, 0xf << 24),
    (7, 2, 0xf << 20 | 0xf << 24),
    // ID_AA64ISAR3_EL1: all but FPRCVT, LSUI, LSFE and FAMINMAX.
    (6, 3, !(0xf << 28 | 0xf << 24 | 0xf << 16 | 0xf << 4)),
    // ID_AA64MMFR3_EL1: all but TCRX, S1PIE, S1POE and SCTLRX (`kvm_poe`), as Linux's
    // __kvm_read_sanitised_id_reg keeps only those.
    (7, 3, !super::kvm_poe::MMFR3_GIVEN),
];

/// What a guest reads from the ID register at CRm, op2 when the CPU's value is `host`: the
/// host's, with the features guests are not given yet (SVE and SME, MTE, PMU and trace, pointer
/// authentication, FPMR, GCS, the EL1 controls behind HCRX_EL2 other than MOPS's) read as
/// absent. Linux's
/// KVM shows SVE only to vCPUs initialised with it and SME to none, as here.
pub fn guest_id_reg(crm: u8, op2: u8, host: u64) -> u64 {
    let v = match GUEST_HIDDEN.iter().find(|h| h.0 == crm && h.1 == op2) {
        Some(h) => host & !h.2,
        None => host,
    };
    if (crm, op2) == (4, 0) {
        // A CPU that is not affected by Spectre-v2 or Meltdown says so with CSV2 and CSV3 at
        // 1 (FEAT_CSV2, FEAT_CSV3), whatever later CSV2 level it has (Linux's
        // sanitise_id_aa64pfr0_el1).
        let mut v = v;
        for sh in [ID_AA64PFR0_CSV2_SHIFT, ID_AA64PFR0_CSV3_SHIFT] {
            if (v >> sh) & 0xf != 0 {
                v = (v & !(0xf << sh)) | (1 << sh);
            }
        }
        if v & ID_AA64PFR0_GIC != 0 {
            // A GICv3 CPU interface (GICv4.1's system registers are the same to a guest).
            return (v & !ID_AA64PFR0_GIC) | (1 << 24);
        }
        return v;
    }
    // The debug architecture a guest is offered stops at Armv8.8 (ID_AA64DFR0_EL1.DebugVer,
    // ID_DFR0_EL1.CopDbg), as Linux's sanitise_id_aa64dfr0_el1 and read_sanitised_id_dfr0_el1.
    let cap = |v: u64, sh: u32, max: u64| {
        if (v >> sh) & 0xf > max {
            v & !(0xf << sh) | max << sh
        } else {
            v
        }
    };
    match (crm, op2) {
        (5, 0) | (1, 2) => cap(v, 0, 0b1010),
        _ => v,
    }
}

/// ID_AA64PFR0_EL1.GIC: the GIC CPU interface's system registers.
pub const ID_AA64PFR0_GIC: u64 = 0xf << 24;
/// ID_AA64PFR0_EL1.CSV2 and CSV3.
pub const ID_AA64PFR0_CSV2_SHIFT: u32 = 56;
pub const ID_AA64PFR0_CSV3_SHIFT: u32 = 60;

#[cfg(test)]
mod tests {
    #[test]
    fn full_pauth_wants_one_algorithm_with_both_kinds() {
        // QARMA5 (APA 1, GPA 1), the implementation's (API, GPI), QARMA3 (APA3, GPA3).
        assert!(full_pauth(1 << 4 | 1 << 24, 0));
        assert!(full_pauth(5 << 8 | 1 << 28, 0));
        assert!(full_pauth(0, 3 << 12 | 1 << 8));
        // Address without generic, or generic without address.
        assert!(!full_pauth(1 << 4, 0));
        assert!(!full_pauth(1 << 24, 0));
        // Two algorithms.
        assert!(!full_pauth(1 << 4 | 1 << 24 | 1 << 8 | 1 << 28, 0));
        assert!(!full_pauth(0, 0));
    }

    #[test]
    fn pauth_features_go_together() {
        let init = |f: u32| KvmVcpuInit {
            target: KVM_ARM_TARGET_GENERIC_V8,
            features: [f, 0, 0, 0, 0, 0, 0],
        };
        let both = 1 << KVM_ARM_VCPU_PTRAUTH_ADDRESS | 1 << KVM_ARM_VCPU_PTRAUTH_GENERIC;
        assert_eq!(check_init(&init(both), both), Ok(both));
        assert_eq!(
            check_init(&init(1 << KVM_ARM_VCPU_PTRAUTH_ADDRESS), both),
            Err(Errno::EINVAL)
        );
        assert_eq!(check_init(&init(both), 0), Err(Errno::EINVAL));
    }

    #[test]
    fn gcs_registers_trap_for_guests_where_the_cpu_has_gcs() {
        assert_eq!(guest_fgt_read_write_clear(true, 1 << 44), 3 << 52);
        assert_eq!(guest_fgt_read_write_clear(false, 1 << 44), 0);
        assert_eq!(guest_fgt_read_write_clear(true, 0xf << 40), 0);
    }

    #[test]
    fn hidden_tlbi_os_traps_only_what_the_cpu_has() {
        let tlb = |v: u64| v << 56;
        // Nothing hidden: nothing traps.
        assert_eq!(guest_hfgitr(tlb(2), tlb(2)), 0);
        assert_eq!(guest_hfgitr(tlb(1), tlb(1)), 0);
        // TLB cleared on a CPU with ranges: both groups trap.
        assert_eq!(guest_hfgitr(tlb(2), 0), HFGITR_TLBIOS | HFGITR_TLBIRANGE);
        // Ranges hidden, OS kept.
        assert_eq!(guest_hfgitr(tlb(2), tlb(1)), HFGITR_TLBIRANGE);
        // A CPU without ranges never gets their (RES0) bits.
        assert_eq!(guest_hfgitr(tlb(1), 0), HFGITR_TLBIOS);
        assert_eq!(guest_hfgitr(0, 0), 0);
        // Other ID_AA64ISAR0_EL1 fields do not matter.
        assert_eq!(guest_hfgitr(tlb(2) | 0xffff, tlb(2)), 0);
    }

    #[test]
    fn tlbi_encodings_map_to_their_hfgitr_bits() {
        // TLBI VMALLE1OS: sys #0, c8, c1, #0 (bit 18); its nXS form at CRn 9.
        assert_eq!(hfgitr_tlbi_bit(1, 0, 8, 1, 0), Some(1 << 18));
        assert_eq!(hfgitr_tlbi_bit(1, 0, 9, 1, 0), Some(1 << 18));
        assert_eq!(hfgitr_tlbi_bit(1, 0, 8, 1, 7), Some(1 << 23)); // VAALE1OS
        assert_eq!(hfgitr_tlbi_bit(1, 0, 8, 3, 0), Some(1 << 28)); // VMALLE1IS
        assert_eq!(hfgitr_tlbi_bit(1, 0, 8, 7, 5), Some(1 << 46)); // VALE1
        assert_eq!(hfgitr_tlbi_bit(1, 0, 8, 5, 1), Some(1 << 24)); // RVAE1OS
        assert_eq!(hfgitr_tlbi_bit(1, 0, 8, 2, 7), Some(1 << 37)); // RVAALE1IS
        assert_eq!(hfgitr_tlbi_bit(1, 0, 8, 6, 3), Some(1 << 39)); // RVAAE1
                                                                   // Not EL1 TLBIs: EL2's (op1 4), an unallocated op2, DC/IC (CRn 7), a register.
        assert_eq!(hfgitr_tlbi_bit(1, 4, 8, 1, 0), None);
        assert_eq!(hfgitr_tlbi_bit(1, 0, 8, 1, 4), None);
        assert_eq!(hfgitr_tlbi_bit(1, 0, 8, 5, 0), None);
        assert_eq!(hfgitr_tlbi_bit(1, 0, 7, 5, 1), None);
        assert_eq!(hfgitr_tlbi_bit(3, 0, 8, 1, 0), None);
        // Every OS bit is one of HFGITR_TLBIOS's, every range bit one of HFGITR_TLBIRANGE's.
        for op2 in [0, 1, 2, 3, 5, 7] {
            assert_ne!(hfgitr_tlbi_bit(1, 0, 8, 1, op2).unwrap() & HFGITR_TLBIOS, 0);
        }
        for crm in [2, 5, 6] {
            for op2 in [1, 3, 5, 7] {
                assert_ne!(
                    hfgitr_tlbi_bit(1, 0, 8, crm, op2).unwrap() & HFGITR_TLBIRANGE,
                    0
                );
            }
        }
    }
    use super::*;

    #[test]
    fn ioctl_numbers_are_linuxs() {
        assert_eq!(KVM_GET_API_VERSION, 0xae00);
        assert_eq!(KVM_CREATE_VM, 0xae01);
        assert_eq!(KVM_CREATE_VCPU, 0xae41);
        assert_eq!(KVM_SET_USER_MEMORY_REGION, 0x4020_ae46);
        assert_eq!(KVM_SET_USER_MEMORY_REGION2, 0x40a0_ae49);
        assert_eq!(KVM_CREATE_DEVICE, 0xc00c_aee0);
        assert_eq!(KVM_SET_DEVICE_ATTR, 0x4018_aee1);
        assert_eq!(KVM_HAS_DEVICE_ATTR, 0x4018_aee3);
        assert_eq!(KVM_RUN, 0xae80);
        assert_eq!(KVM_GET_ONE_REG, 0x4010_aeab);
        assert_eq!(KVM_SET_ONE_REG, 0x4010_aeac);
        assert_eq!(KVM_ARM_VCPU_INIT, 0x4020_aeae);
        assert_eq!(KVM_ARM_PREFERRED_TARGET, 0x8020_aeaf);
        assert_eq!(KVM_GET_REG_LIST, 0xc008_aeb0);
        assert_eq!(KVM_ENABLE_CAP, 0x4068_aea3);
        assert_eq!(KVM_GET_VCPU_EVENTS, 0x8040_ae9f);
        assert_eq!(KVM_SET_VCPU_EVENTS, 0x4040_aea0);
        assert_eq!(core::mem::size_of::<KvmVcpuEvents>(), 64);
        assert_eq!(core::mem::offset_of!(KvmVcpuEvents, serror_esr), 8);
    }

    #[test]
    fn vcpu_events_are_checked_as_linux() {
        let ok = |e: &KvmVcpuEvents, ras| check_vcpu_events(e, ras);
        let mut e = KvmVcpuEvents::default();
        assert_eq!(
            ok(&e, true),
            Ok(EventsRequest {
                ext_dabt: false,
                serror: Ok(None)
            })
        );
        e.pad[4] = 1;
        assert_eq!(ok(&e, true), Err(Errno::EINVAL));
        e.pad[4] = 0;
        e.reserved[11] = 1;
        assert_eq!(ok(&e, true), Err(Errno::EINVAL));
        e.reserved[11] = 0;
        // No syndrome: IDS; a syndrome needs RAS and only ISS bits; both events at once.
        e.serror_pending = 1;
        e.ext_dabt_pending = 1;
        assert_eq!(ok(&e, false).unwrap().serror, Ok(Some(ESR_SERROR_IDS)));
        e.serror_has_esr = 1;
        e.serror_esr = 0x1_d1ed;
        assert_eq!(ok(&e, false).unwrap().serror, Err(Errno::EINVAL));
        assert_eq!(
            ok(&e, true),
            Ok(EventsRequest {
                ext_dabt: true,
                serror: Ok(Some(0x1_d1ed))
            })
        );
        e.serror_esr = 1 << 25;
        let r = ok(&e, true).unwrap();
        assert!(r.ext_dabt);
        assert_eq!(r.serror, Err(Errno::EINVAL));
        // has_esr without serror_pending asks nothing.
        e.serror_pending = 0;
        assert_eq!(ok(&e, false).unwrap().serror, Ok(None));
    }

    #[test]
    fn injected_syndromes() {
        assert_eq!(sea_esr(false, true, 0x10), 0x9600_0010);
        assert_eq!(sea_esr(false, false, 0x10), 0x9200_0010);
        assert_eq!(sea_esr(true, true, 0x17), 0x8600_0017);
        assert_eq!(sea_esr(true, false, 0x10), 0x8200_0010);
        assert_eq!(serror_esr(ESR_SERROR_IDS | 0x1_d1ed), 0xbf01_d1ed);
    }

    #[test]
    fn id_register_indices() {
        assert_eq!(id_reg_index(sysreg_id(3, 0, 0, 1, 0)), Some(0));
        assert_eq!(id_reg_index(sysreg_id(3, 0, 0, 7, 7)), Some(55));
        assert_eq!(id_reg_index(sysreg_id(3, 0, 0, 0, 5)), None); // MPIDR_EL1
        assert_eq!(id_reg_index(sysreg_id(3, 0, 1, 0, 0)), None); // SCTLR_EL1
        for i in 0..ID_REGS {
            assert_eq!(id_reg_index(id_reg_id(i)), Some(i));
        }
        assert_eq!(fw_feat_bmap_reg(2), 0x6030_0000_0016_0002);
        assert_eq!(KVM_REG_ARM_SMCCC_ARCH_WORKAROUND_3, 0x6030_0000_0014_0003);
    }

    #[test]
    fn coalesced_ring_and_zones() {
        assert_eq!(ring::MAX, 170);
        assert_eq!(KVM_REGISTER_COALESCED_MMIO, 0x4010_ae67);
        assert_eq!(ring_slot(0, 0), Some(0));
        assert_eq!(ring_slot(0, 169), None); // full: one entry stays free
        assert_eq!(ring_slot(5, 4), None);
        assert_eq!(ring_slot(0, 170), None); // the VMM's index out of range
        assert_eq!(ring_slot(1, 169), Some(169));
        let z = KvmCoalescedMmioZone {
            addr: 0x1000,
            size: 8,
            pio: 0,
        };
        assert!(in_zone(&z, 0x1000, 8));
        assert!(in_zone(&z, 0x1004, 4));
        assert!(!in_zone(&z, 0x1004, 8));
        assert!(!in_zone(&z, 0xffc, 8));
        assert!(!in_zone(&z, u64::MAX, 2));
    }

    #[test]
    fn core_register_ids() {
        assert_eq!(CoreReg::X(0).id(), 0x6030_0000_0010_0000);
        assert_eq!(CoreReg::Pc.id(), 0x6030_0000_0010_0040);
        assert_eq!(CoreReg::V(1).id(), 0x6040_0000_0010_0058);
        assert_eq!(CoreReg::Fpcr.id(), 0x6020_0000_0010_00d5);
        for r in CoreReg::all() {
            assert_eq!(CoreReg::from_id(r.id()), Ok(r));
        }
        assert_eq!(CoreReg::all().count(), 31 + 5 + 5 + 32 + 2);
        // The middle of X0, a wrong size, past the end.
        assert_eq!(CoreReg::from_id(CoreReg::X(0).id() + 1), Err(Errno::EINVAL));
        let x0_32 = (CoreReg::X(0).id() & !KVM_REG_SIZE_MASK) | KVM_REG_SIZE_U32;
        assert_eq!(CoreReg::from_id(x0_32), Err(Errno::EINVAL));
        assert_eq!(
            CoreReg::from_id(KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | 214),
            Err(Errno::ENOENT)
        );
    }

    #[test]
    fn regions_are_checked() {
        let ok = KvmUserspaceMemoryRegion {
            slot: 0,
            flags: 0,
            guest_phys_addr: 0x10000,
            memory_size: 0x4000,
            userspace_addr: 0x40_0000,
        };
        let lim = 1 << 40;
        assert!(matches!(
            check_region(&ok, 4096, 1 << 48, lim),
            Ok(SlotChange::Set { .. })
        ));
        let bad = |f: fn(&mut KvmUserspaceMemoryRegion)| {
            let mut r = ok;
            f(&mut r);
            check_region(&r, 4096, 1 << 48, lim)
        };
        assert_eq!(bad(|r| r.flags = 4), Err(Errno::EINVAL));
        assert_eq!(bad(|r| r.slot = 1 << 16), Err(Errno::EINVAL));
        assert_eq!(bad(|r| r.slot = KVM_USER_MEM_SLOTS), Err(Errno::EINVAL));
        assert_eq!(bad(|r| r.guest_phys_addr = 0x10001), Err(Errno::EINVAL));
        assert_eq!(bad(|r| r.memory_size = 0x1001), Err(Errno::EINVAL));
        assert_eq!(bad(|r| r.userspace_addr = 0x40_0010), Err(Errno::EINVAL));
        assert_eq!(
            bad(|r| r.guest_phys_addr = (1 << 40) - 0x1000),
            Err(Errno::EFAULT)
        );
        assert_eq!(
            bad(|r| r.memory_size = 0),
            Ok(SlotChange::Delete { slot: 0 })
        );
    }

    #[test]
    fn vcpu_init_checks() {
        let mut i = KvmVcpuInit {
            target: KVM_ARM_TARGET_GENERIC_V8,
            features: [0; 7],
        };
        assert_eq!(check_init(&i, 5), Ok(0));
        i.features[0] = 4;
        assert_eq!(check_init(&i, 5), Ok(4));
        i.features[0] = 2;
        assert_eq!(check_init(&i, 5), Err(Errno::EINVAL));
        i.features[0] = 1 << 8;
        assert_eq!(check_init(&i, 5), Err(Errno::ENOENT));
        i.features = [0, 0, 0, 0, 0, 0, 1];
        assert_eq!(check_init(&i, 5), Err(Errno::ENOENT));
        i.features = [0; 7];
        i.target = 0;
        assert_eq!(check_init(&i, 5), Err(Errno::EINVAL));
    }

    #[test]
    fn guests_do_not_see_sve_or_sme() {
        let pfr0 = 0x0000_0001_1111_0011; // SVE = 1, GIC = 1, EL0/EL1 AArch64
        assert_eq!(guest_id_reg(4, 0, pfr0), 0x0000_0000_1111_0011);
        assert_eq!(guest_id_reg(4, 0, 0x0300_0011), 0x0100_0011);
        // CSV2 = 3 (FEAT_CSV2_3), CSV3 = 1: both shown as 1; 0 stays 0.
        assert_eq!(
            guest_id_reg(4, 0, 0x1300_0000_0000_0011),
            0x1100_0000_0000_0011
        );
        assert_eq!(guest_id_reg(4, 0, 0x0000_0000_0000_0011), 0x11);
        let pfr1 = 0x0000_0000_0200_0021; // SME = 2, MTE = 0, BT = 1, SSBS = 2
        assert_eq!(guest_id_reg(4, 1, pfr1), 0x21);
        assert_eq!(guest_id_reg(4, 5, u64::MAX), 0);
        assert_eq!(guest_id_reg(7, 0, 0x1234), 0x1234);
    }

    #[test]
    fn guests_see_fpmr_and_enable_it_only_when_shown() {
        // ID_AA64PFR2_EL1: FPMR = 1, GCIE = 1, MTEFAR = 1: only FPMR stays.
        assert_eq!(guest_id_reg(4, 2, 0x1_0000_1100), 0x1_0000_0000);
        assert_eq!(guest_id_reg(4, 7, 0x4000_0001), 0x4000_0001);
        assert_eq!(guest_hcrx(0, 0x1_0000_0000), HCRX_ENFPM);
        assert_eq!(guest_hcrx(1 << 16, 0), 1 << 11);
        assert_eq!(guest_hcrx(0, 0x1100), 0);
        assert_eq!(FPMR, 0x6030_0000_0013_da22);
    }

    #[test]
    fn ipa_sizes() {
        assert_eq!(vm_ipa_bits(0, 48), Ok(40));
        assert_eq!(vm_ipa_bits(36, 48), Ok(36));
        assert_eq!(vm_ipa_bits(31, 48), Err(Errno::EINVAL));
        assert_eq!(vm_ipa_bits(49, 48), Err(Errno::EINVAL));
        assert_eq!(vm_ipa_bits(0x100, 48), Err(Errno::EINVAL));
    }

    #[test]
    fn mmio_syndromes() {
        // STR X2, [X1]: ISV, SAS 3, SRT 2, SF, WnR.
        let iss = (1 << 24) | (3 << 22) | (2 << 16) | (1 << 15) | (1 << 6);
        let a = mmio_access(iss).unwrap();
        assert_eq!((a.len, a.write, a.reg, a.sixty_four), (8, true, 2, true));
        // LDRSB X5: sign-extends into 64 bits; LDRSB W5 into 32.
        let b = mmio_access((1 << 24) | (5 << 16) | (1 << 21) | (1 << 15)).unwrap();
        assert_eq!(b.load_value(0x80), 0xffff_ffff_ffff_ff80);
        let w = mmio_access((1 << 24) | (5 << 16) | (1 << 21)).unwrap();
        assert_eq!(w.load_value(0x80), 0xffff_ff80);
        assert_eq!(w.store_value(0x1234), 0x34);
        assert_eq!(mmio_access(3 << 22), None);
        // A big-endian guest's halfword 0x8001 is 0x0180 in kvm_run.
        let h = mmio_access((1 << 24) | (1 << 22)).unwrap();
        assert_eq!(h.byte_swap(0x0180), 0x8001);
        let d = mmio_access((1 << 24) | (3 << 22)).unwrap();
        assert_eq!(d.byte_swap(0x0102_0304_0506_0708), 0x0807_0605_0403_0201);
    }

    #[test]
    fn psci_calls() {
        let v13 = Psci {
            version: PSCI_VERSION_1_3,
            system_suspend: false,
        };
        let call = |f: u64, a: [u64; 3]| smccc_call(f, a, v13);
        assert_eq!(call(0x8400_0000, [0; 3]), Call::Return(PSCI_VERSION_1_3));
        assert_eq!(
            call(0x8400_0008, [0; 3]),
            Call::SystemEvent {
                ty: KVM_SYSTEM_EVENT_SHUTDOWN,
                flags: 0,
                clear_x1_x3: true,
            }
        );
        assert_eq!(call(0x8600_0000, [0; 3]), Call::VendorFeatures);
        assert_eq!(call(0x8600_ff01, [0; 3]), Call::Words(KVM_UID));
        assert_eq!(call(0x8600_0001, [0; 3]), Call::Ptp(0));
        assert_eq!(call(0x8600_0002, [0; 3]), Call::Return(u64::MAX));
        assert_eq!(call(0x8400_0051, [0xc400_0053, 0, 0]), Call::Return(0));
        assert_eq!(
            call(0x8000_0001, [0xc500_0020, 0, 0]),
            Call::ArchFeaturesPvTime
        );
        // The function ID is W0: the upper half of x0 is not looked at.
        assert_eq!(call(0x1_8400_0000, [0; 3]), Call::Return(PSCI_VERSION_1_3));
        // An SMC32 CPU_ON's arguments are 32 bits.
        assert_eq!(
            call(0x8400_0003, [0x1_0000_0001, 0x8000_0000_1000, 7]),
            Call::CpuOn {
                target: 1,
                entry: 0x1000,
                context: 7
            }
        );
        // SYSTEM_OFF2: hibernation (1, or its alias 0) with a zero cookie; from PSCI 1.3 on.
        let off2 = Call::SystemEvent {
            ty: KVM_SYSTEM_EVENT_SHUTDOWN,
            flags: KVM_SYSTEM_EVENT_SHUTDOWN_FLAG_PSCI_OFF2,
            clear_x1_x3: false,
        };
        assert_eq!(call(0xc400_0015, [1, 0, 0]), off2);
        assert_eq!(call(0x8400_0015, [0, 0, 0]), off2);
        let invalid = Call::Return(PSCI_RET_INVALID_PARAMS as u64);
        assert_eq!(call(0xc400_0015, [1, 1, 0]), invalid);
        assert_eq!(call(0xc400_0015, [2, 0, 0]), invalid);
        assert_eq!(call(0x8400_000a, [0xc400_0015, 0, 0]), Call::Return(1));
        let v11 = Psci {
            version: PSCI_VERSION_1_1,
            ..v13
        };
        let nope = Call::Return(u64::MAX);
        assert_eq!(smccc_call(0xc400_0015, [1, 0, 0], v11), nope);
        assert_eq!(smccc_call(0x8400_000a, [0xc400_0015, 0, 0], v11), nope);
        // PSCI 0.2: no PSCI_FEATURES, no SYSTEM_RESET2.
        let v02 = Psci { version: 2, ..v13 };
        assert_eq!(smccc_call(0x8400_000a, [0x8400_0000, 0, 0], v02), nope);
        assert_eq!(smccc_call(0x8400_0012, [0, 0, 0], v02), nope);
        // PSCI 0.1: KVM's numbers only, SMCCC's own calls as ever.
        let v01 = Psci { version: 1, ..v13 };
        assert_eq!(smccc_call(0x8400_0000, [0; 3], v01), nope);
        assert_eq!(smccc_call(0x95c1_ba5f, [0; 3], v01), Call::CpuOff);
        assert_eq!(smccc_call(0x95c1_ba5f, [0; 3], v13), nope);
        assert_eq!(smccc_call(0x8600_ff01, [0; 3], v01), Call::Words(KVM_UID));
        assert_eq!(smccc_call(0x8000_0000, [0; 3], v01), Call::Return(0x1_0001));
        // SYSTEM_SUSPEND only once the VMM enabled it.
        assert_eq!(call(0xc400_000e, [0x1000, 1, 0]), nope);
        assert_eq!(call(0x8400_000a, [0xc400_000e, 0, 0]), nope);
        let susp = Psci {
            system_suspend: true,
            ..v13
        };
        assert_eq!(
            smccc_call(0xc400_000e, [0, 0, 0], susp),
            Call::SystemSuspend
        );
        assert_eq!(
            smccc_call(0x8400_000a, [0xc400_000e, 0, 0], susp),
            Call::Return(0)
        );
    }

    #[test]
    fn smccc_filter_checks_as_linux() {
        let f = |base, nr_functions, action| KvmSmcccFilter {
            base,
            nr_functions,
            action,
            pad: [0; 15],
        };
        assert_eq!(
            check_smccc_filter(&f(0xc400_0003, 1, 1)),
            Ok((0xc400_0003, 0xc400_0003, SmcccAction::Deny))
        );
        assert_eq!(
            check_smccc_filter(&f(0xffff_ffff, 1, 2)),
            Ok((0xffff_ffff, 0xffff_ffff, SmcccAction::FwdToUser))
        );
        assert_eq!(
            check_smccc_filter(&f(0, u32::MAX, 0)),
            Ok((0, u32::MAX - 1, SmcccAction::Handle))
        );
        // No functions, a wrap, an unknown action, padding.
        assert_eq!(check_smccc_filter(&f(0, 0, 1)), Err(Errno::EINVAL));
        assert_eq!(check_smccc_filter(&f(!0, !0, 1)), Err(Errno::EINVAL));
        assert_eq!(
            check_smccc_filter(&f(0x8400_0000, 1, 3)),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check_smccc_filter(&f(0x8400_0000, 1, 0xff)),
            Err(Errno::EINVAL)
        );
        let mut padded = f(0x8400_0000, 1, 1);
        padded.pad[14] = 1;
        assert_eq!(check_smccc_filter(&padded), Err(Errno::EINVAL));
        assert_eq!(core::mem::size_of::<KvmSmcccFilter>(), 24);
    }

    #[test]
    fn hypercall_exit_flags_from_the_syndrome() {
        let il = 1 << 25;
        assert_eq!(hypercall_exit_flags((0x16 << 26) | il), 0);
        assert_eq!(
            hypercall_exit_flags((0x17 << 26) | il),
            KVM_HYPERCALL_EXIT_SMC
        );
        assert_eq!(
            hypercall_exit_flags(0x13 << 26),
            KVM_HYPERCALL_EXIT_SMC | KVM_HYPERCALL_EXIT_16BIT
        );
        assert_eq!(hypercall_exit_flags(0x12 << 26), KVM_HYPERCALL_EXIT_16BIT);
    }
}
