//! Linux's KVM API from a small VMM of our own: /dev/kvm's system ioctls, VMs and vCPUs and
//! their argument checks, memory slots, the core registers by ONE_REG, and guests that run:
//! RAM shared with the VMM, MMIO exits (loads with sign extension, stores, read-only slots,
//! accesses without a syndrome, coalesced writes), PSCI and SMCCC calls (TRNG, PV time, PTP),
//! the ID registers a VMM may write, a signal or `immediate_exit` ending
//! KVM_RUN, WFI sleeping until a signal, and a guest's FP/SIMD registers kept apart from the
//! VMM's. Every guest is a few instructions assembled into this program and copied into guest
//! memory. Skipped where the kernel offers no KVM (a kernel at EL1).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use svelt_abi::uapi::kvm::{self as k, CoreReg, KvmOneReg, KvmUserspaceMemoryRegion, KvmVcpuInit};
use svelt_abi::uapi::kvm_dirty as kd;
use svelt_abi::uapi::kvm_idregs as ki;
use svelt_abi::uapi::kvm_services as sv;
use svelt_abi::uapi::kvm_stats as ks;
use svelt_abi::uapi::kvm_sve as ks_sve;
use svelt_user::guest_code as code;
use svelt_user::ktap::TestResult;
use svelt_user::kvm::{
    self, finalize, get_one as get_sve, ioctl, open as open_kvm, set_one as set_sve,
};
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

const MADVISE: usize = 233;
const MADV_DONTNEED: usize = 4;
/// Where the guests find their RAM (slot 0) and their MMIO device.
const RAM_IPA: u64 = 0x1_0000;
const RAM_SIZE: usize = 0x1_0000;
const DATA_OFF: usize = 0x8000;
const MMIO: u64 = 0x1000_0000;

core::arch::global_asm!(
    ".section .rodata.guests, \"a\"",
    ".balign 4",
    // Shares RAM with the VMM, stores and loads through MMIO, powers off.
    ".global guest_mmio, guest_mmio_end",
    "guest_mmio:",
    "movz x1, #0x1000, lsl #16",
    "ldr x2, [x3]",
    "add x2, x2, #1",
    "str x2, [x1]",
    "ldr w4, [x1, #8]",
    "ldrsb x5, [x1, #16]",
    "str x4, [x3, #8]",
    "movz x0, #0x8400, lsl #16",
    "add x0, x0, #8",
    "hvc #0",
    "b .",
    "guest_mmio_end:",
    // PSCI_VERSION, SMCCC_VERSION, a SiP call (no SiP services), PSCI_FEATURES(SYSTEM_OFF), by
    // HVC and SMC.
    ".global guest_psci, guest_psci_end",
    "guest_psci:",
    "movz x0, #0x8400, lsl #16",
    "hvc #0",
    "mov x10, x0",
    "movz x0, #0x8000, lsl #16",
    "hvc #0",
    "mov x11, x0",
    "movz x0, #0x8300, lsl #16",
    "hvc #0",
    "mov x12, x0",
    "movz x0, #0x8400, lsl #16",
    "add x0, x0, #0xa",
    "movz x1, #0x8400, lsl #16",
    "add x1, x1, #8",
    "smc #0",
    "mov x13, x0",
    "movz x1, #0x1000, lsl #16",
    "str x10, [x1]",
    "b .",
    "guest_psci_end:",
    // WFI, then spins.
    ".global guest_wfi, guest_wfi_end",
    "guest_wfi:",
    "wfi",
    "b .",
    "guest_wfi_end:",
    // Enables FP, puts x2 in D0, exits, reads D0 and D1 back after the VMM used its own.
    ".global guest_fp, guest_fp_end",
    "guest_fp:",
    "mov x0, #(3 << 20)",
    "msr cpacr_el1, x0",
    "isb",
    "fmov d0, x2",
    "movz x1, #0x1000, lsl #16",
    "str x2, [x1]",
    "fmov x6, d0",
    "fmov x7, d1",
    "str x6, [x1]",
    "b .",
    "guest_fp_end:",
    // Enables FP and writes x2 to D0 forever.
    ".global guest_fp_spin, guest_fp_spin_end",
    "guest_fp_spin:",
    "mov x0, #(3 << 20)",
    "msr cpacr_el1, x0",
    "isb",
    "1: fmov d0, x2",
    "b 1b",
    "guest_fp_spin_end:",
    // Reads ID_AA64PFR0_EL1, ID_AA64PFR1_EL1, ID_AA64ZFR0_EL1 and ID_AA64SMFR0_EL1, exits.
    ".global guest_idregs, guest_idregs_end",
    "guest_idregs:",
    "mrs x4, S3_0_C0_C4_0",
    "mrs x5, S3_0_C0_C4_1",
    "mrs x6, S3_0_C0_C4_4",
    "mrs x7, S3_0_C0_C4_5",
    "movz x1, #0x1000, lsl #16",
    "str x4, [x1]",
    "b .",
    "guest_idregs_end:",
    // SVE: opens FP and SVE at EL1, asks for the largest VL (ZCR_EL1.LEN all ones), reads its
    // VL and ID_AA64PFR0_EL1, writes Z2 = 1, 2, 3, ... (bytes), Z3 = Z1 + Z1 (64-bit lanes,
    // Z1 from the VMM), P1 = all true, and stores the VL to MMIO.
    ".global guest_sve, guest_sve_end",
    "guest_sve:",
    ".arch_extension sve",
    "mov x0, #(3 << 20)",
    "orr x0, x0, #(3 << 16)",
    "msr cpacr_el1, x0",
    "isb",
    "mov x0, #0x1ff",
    "msr S3_0_C1_C2_0, x0",
    "isb",
    "rdvl x4, #1",
    "mrs x5, S3_0_C0_C4_0",
    "index z2.b, #1, #1",
    "add z3.d, z1.d, z1.d",
    "ptrue p1.b",
    "movz x1, #0x1000, lsl #16",
    "str x4, [x1]",
    "b .",
    "guest_sve_end:",
    // SVE live for ever: opens FP and SVE, then counts in Z0.
    ".global guest_sve_spin, guest_sve_spin_end",
    "guest_sve_spin:",
    "mov x0, #(3 << 20)",
    "orr x0, x0, #(3 << 16)",
    "msr cpacr_el1, x0",
    "isb",
    "ptrue p0.b",
    "1: add z0.d, z0.d, #1",
    "b 1b",
    "guest_sve_spin_end:",
    // Enables FP and SVE; then D0 := x2 and an SVE add, forever (the FP/SIMD access comes
    // first after every return to the guest).
    ".global guest_fp_sve_spin, guest_fp_sve_spin_end",
    "guest_fp_sve_spin:",
    "mov x0, #(3 << 20)",
    "orr x0, x0, #(3 << 16)",
    "msr cpacr_el1, x0",
    "isb",
    "1: fmov d0, x2",
    "add z1.d, z1.d, #1",
    "b 1b",
    "guest_fp_sve_spin_end:",
    // With a vGICv3 at QEMU virt's addresses, set up as guest_spi with SPIs 32-47 made
    // level-triggered (GICD_ICFGR2, as they reset edge-triggered): a 4-byte store of 5 to
    // MMIO + 0x40 (no ioeventfd matches it), two of 7 (one does), a store to MMIO, then WFI
    // for SPI 32 raised through an irqfd; reports ICC_IAR1_EL1, EOIs it, stores again, and
    // reports ICC_IAR1_EL1 once more.
    ".global guest_eventfd, guest_eventfd_end",
    "guest_eventfd:",
    "movz x1, #0x800, lsl #16",
    "mov w2, #2",
    "str w2, [x1]",
    "str wzr, [x1, #0xc08]",
    "mov w2, #1",
    "str w2, [x1, #0x104]",
    "mov x3, #0xf0",
    "msr S3_0_C4_C6_0, x3",
    "mov x3, #1",
    "msr S3_0_C12_C12_7, x3",
    "isb",
    "movz x4, #0x1000, lsl #16",
    "mov w2, #5",
    "str w2, [x4, #0x40]",
    "mov w2, #7",
    "str w2, [x4, #0x40]",
    "str w2, [x4, #0x40]",
    "str x2, [x4]",
    "wfi",
    "mrs x5, S3_0_C12_C12_0",
    "str x5, [x4, #8]",
    "msr S3_0_C12_C12_1, x5",
    "isb",
    "str x5, [x4, #16]",
    "mrs x5, S3_0_C12_C12_0",
    "str x5, [x4, #24]",
    "b .",
    "guest_eventfd_end:",
    // With a vGICv3 at QEMU virt's addresses: enables the distributor and SPI 32, unmasks
    // priorities below 0xf0 and Group 1, reports ID_AA64PFR0_EL1, waits in WFI (interrupts
    // masked) for the SPI, and reports what ICC_IAR1_EL1 gave, GICD_ISACTIVER1 before and
    // after ICC_EOIR1_EL1, and ICC_IAR1_EL1 again, each by an MMIO store.
    ".global guest_spi, guest_spi_end",
    "guest_spi:",
    "movz x1, #0x800, lsl #16",
    "mov w2, #2",
    "str w2, [x1]",
    "mov w2, #1",
    "str w2, [x1, #0x104]",
    "mov x3, #0xf0",
    "msr S3_0_C4_C6_0, x3",
    "mov x3, #1",
    "msr S3_0_C12_C12_7, x3",
    "isb",
    "movz x4, #0x1000, lsl #16",
    "mrs x7, S3_0_C0_C4_0",
    "str x7, [x4]",
    "wfi",
    "mrs x5, S3_0_C12_C12_0",
    "str x5, [x4, #8]",
    "ldr w6, [x1, #0x304]",
    "str x6, [x4, #16]",
    "msr S3_0_C12_C12_1, x5",
    "isb",
    "ldr w6, [x1, #0x304]",
    "str x6, [x4, #24]",
    "mrs x5, S3_0_C12_C12_0",
    "str x5, [x4, #32]",
    "b .",
    "guest_spi_end:",
    // A load pair from MMIO (no syndrome), then a store into the read-only slot at x3.
    ".global guest_nisv, guest_nisv_end",
    "guest_nisv:",
    "movz x1, #0x1000, lsl #16",
    "ldp x4, x5, [x1]",
    "ldr x6, [x3]",
    "str x6, [x3, #8]",
    "b .",
    "guest_nisv_end:",
    // Reads ID_AA64ISAR0_EL1 into x10 and stores it to MMIO, then PSCI 1.3's SYSTEM_OFF2
    // (hibernate) and, if the VMM runs it again, the same with a bad cookie.
    ".global guest_isar0_off2, guest_isar0_off2_end",
    "guest_isar0_off2:",
    "mrs x10, S3_0_C0_C6_0",
    "movz x1, #0x1000, lsl #16",
    "str x10, [x1]",
    "movz x0, #0xc400, lsl #16",
    "add x0, x0, #0x15",
    "mov x1, #1",
    "mov x2, #0",
    "hvc #0",
    "mov x11, x0",
    "movz x0, #0xc400, lsl #16",
    "add x0, x0, #0x15",
    "mov x1, #1",
    "mov x2, #1",
    "hvc #0",
    "movz x1, #0x1000, lsl #16",
    "str x0, [x1]",
    "b .",
    "guest_isar0_off2_end:",
    // PSCI_VERSION by HVC and by SMC (forwarded to the VMM: x10 and x11 keep what it left in
    // x0), CPU_ON (denied: x12 and x13 keep x0 and x1), then an MMIO store.
    ".global guest_filtered, guest_filtered_end",
    "guest_filtered:",
    "movz x0, #0x8400, lsl #16",
    "hvc #0",
    "mov x10, x0",
    "movz x0, #0x8400, lsl #16",
    "smc #0",
    "mov x11, x0",
    "movz x0, #0xc400, lsl #16",
    "add x0, x0, #3",
    "mov x1, #5",
    "hvc #0",
    "mov x12, x0",
    "mov x13, x1",
    "movz x1, #0x1000, lsl #16",
    "str x10, [x1]",
    "b .",
    "guest_filtered_end:",
    // Its own vectors; reports through MMIO stores: ready (+0), ISR_EL1 (+8), then unmasks
    // SErrors. The SError vector stores ESR_EL1 (+0x20) and ELR_EL1 (+0x28) and loads from
    // MMIO (+0x30); the EL1h synchronous vector stores ESR_EL1 (+0x10), FAR_EL1 (+0x18) and
    // ELR_EL1 (+0x28), unmasks SErrors and stores to +0x38.
    ".balign 2048",
    ".global guest_events, guest_events_end",
    "guest_events:",
    "adr x0, 1f",
    "msr vbar_el1, x0",
    "isb",
    "movz x1, #0x1000, lsl #16",
    "str xzr, [x1]",
    "mrs x2, isr_el1",
    "str x2, [x1, #8]",
    "msr daifclr, #4",
    "isb",
    "b .",
    ".balign 2048",
    "1:",
    ".skip 0x200",
    "mrs x2, esr_el1",
    "str x2, [x1, #0x10]",
    "mrs x2, far_el1",
    "str x2, [x1, #0x18]",
    "mrs x2, elr_el1",
    "str x2, [x1, #0x28]",
    "msr daifclr, #4",
    "str xzr, [x1, #0x38]",
    "b .",
    ".balign 0x80",
    ".skip 0x100",
    "mrs x2, esr_el1",
    "str x2, [x1, #0x20]",
    "mrs x2, elr_el1",
    "str x2, [x1, #0x28]",
    "ldr x4, [x1, #0x30]",
    "b .",
    "guest_events_end:",
    // TLBI VMALLE1OS (as `sys #0, c8, c1, #0`), then an MMIO store (+0x10). Its EL1h
    // synchronous vector stores ESR_EL1 (+8) and returns past the faulting instruction.
    ".balign 2048",
    ".global guest_tlbi, guest_tlbi_end",
    "guest_tlbi:",
    "adr x0, 1f",
    "msr vbar_el1, x0",
    "isb",
    "movz x1, #0x1000, lsl #16",
    ".inst 0xd508811f",
    "dsb ish",
    "isb",
    "str xzr, [x1, #0x10]",
    "b .",
    ".balign 2048",
    "1:",
    ".skip 0x200",
    "mrs x2, esr_el1",
    "str x2, [x1, #8]",
    "mrs x2, elr_el1",
    "add x2, x2, #4",
    "msr elr_el1, x2",
    "eret",
    "guest_tlbi_end:",
    // FP on at EL1; reads FPMR and stores it (+0), writes x2 to FPMR and stores x2 (+0x10),
    // reads FPMR again and stores it (+0x18), spins. Its EL1h synchronous vector stores ESR_EL1
    // (+8) and returns past the faulting instruction.
    ".balign 2048",
    ".global guest_fpmr, guest_fpmr_end",
    "guest_fpmr:",
    "adr x0, 1f",
    "msr vbar_el1, x0",
    "mov x0, #(3 << 20)",
    "msr cpacr_el1, x0",
    "isb",
    "movz x1, #0x1000, lsl #16",
    "mrs x6, S3_3_C4_C4_2",
    "str x6, [x1]",
    "msr S3_3_C4_C4_2, x2",
    "str x2, [x1, #0x10]",
    "mrs x7, S3_3_C4_C4_2",
    "str x7, [x1, #0x18]",
    "b .",
    ".balign 2048",
    "1:",
    ".skip 0x200",
    "mrs x3, esr_el1",
    "str x3, [x1, #8]",
    "mrs x3, elr_el1",
    "add x3, x3, #4",
    "msr elr_el1, x3",
    "eret",
    "guest_fpmr_end:",
    // Pointer authentication: EnIA on, then in a loop, each result stored to MMIO: PACIA of x2
    // with modifier x4 (+0), AUTIA of that (+8), PACGA of x2 and x4 (+0x10), APIAKeyLo_EL1 as
    // the guest reads it (+0x18), x7 written to APIBKeyLo_EL1 (+0x20). Its EL1h synchronous
    // vector stores ESR_EL1 (+0x28) and returns past the instruction.
    ".balign 2048",
    ".global guest_pauth, guest_pauth_end",
    ".arch_extension pauth",
    "guest_pauth:",
    "adr x0, 1f",
    "msr vbar_el1, x0",
    "mrs x0, sctlr_el1",
    "orr x0, x0, #(1 << 31)",
    "msr sctlr_el1, x0",
    "isb",
    "movz x1, #0x1000, lsl #16",
    "2:",
    "mov x3, x2",
    "pacia x3, x4",
    "str x3, [x1]",
    "autia x3, x4",
    "str x3, [x1, #8]",
    "pacga x5, x2, x4",
    "str x5, [x1, #0x10]",
    "mrs x6, S3_0_C2_C1_0",
    "str x6, [x1, #0x18]",
    "msr S3_0_C2_C1_2, x7",
    "str x7, [x1, #0x20]",
    "b 2b",
    ".balign 2048",
    "1:",
    ".skip 0x200",
    "mrs x3, esr_el1",
    "str x3, [x1, #0x28]",
    "mrs x3, elr_el1",
    "add x3, x3, #4",
    "msr elr_el1, x3",
    "eret",
    "guest_pauth_end:",
    // Its own vectors; stores to MMIO +0 (ready, interrupts masked), unmasks IRQs and FIQs,
    // then stores to +0x30 again and again, or spins while x5 is nonzero. The EL1h IRQ vector
    // stores ISR_EL1 twice (+0x20, +0x28), the FIQ vector likewise (+0x40, +0x48), and both
    // return.
    ".balign 2048",
    ".global guest_irq, guest_irq_end",
    "guest_irq:",
    "adr x0, 1f",
    "msr vbar_el1, x0",
    "isb",
    "movz x1, #0x1000, lsl #16",
    "str xzr, [x1]",
    "msr daifclr, #3",
    "isb",
    "2:",
    "cbnz x5, 3f",
    "str xzr, [x1, #0x30]",
    "b 2b",
    "3:",
    "b 3b",
    ".balign 2048",
    "1:",
    ".skip 0x280",
    "mrs x2, isr_el1",
    "str x2, [x1, #0x20]",
    "mrs x2, isr_el1",
    "str x2, [x1, #0x28]",
    "eret",
    ".balign 0x80",
    "mrs x2, isr_el1",
    "str x2, [x1, #0x40]",
    "mrs x2, isr_el1",
    "str x2, [x1, #0x48]",
    "eret",
    "guest_irq_end:",
    ".text",
);

unsafe extern "C" {
    static guest_mmio: u8;
    static guest_mmio_end: u8;
    static guest_psci: u8;
    static guest_psci_end: u8;
    static guest_wfi: u8;
    static guest_wfi_end: u8;
    static guest_fp: u8;
    static guest_fp_end: u8;
    static guest_fp_spin: u8;
    static guest_fp_spin_end: u8;
    static guest_idregs: u8;
    static guest_idregs_end: u8;
    static guest_sve: u8;
    static guest_sve_end: u8;
    static guest_sve_spin: u8;
    static guest_sve_spin_end: u8;
    static guest_fp_sve_spin: u8;
    static guest_fp_sve_spin_end: u8;
    static guest_spi: u8;
    static guest_spi_end: u8;
    static guest_eventfd: u8;
    static guest_eventfd_end: u8;
    static guest_nisv: u8;
    static guest_nisv_end: u8;
    static guest_isar0_off2: u8;
    static guest_isar0_off2_end: u8;
    static guest_filtered: u8;
    static guest_filtered_end: u8;
    static guest_events: u8;
    static guest_events_end: u8;
    static guest_tlbi: u8;
    static guest_tlbi_end: u8;
    static guest_fpmr: u8;
    static guest_fpmr_end: u8;
    static guest_pauth: u8;
    static guest_pauth_end: u8;
    static guest_irq: u8;
    static guest_irq_end: u8;
}

fn kvm_or_skip() -> Result<i32, TestResult> {
    match open_kvm() {
        Ok(Some(fd)) => Ok(fd),
        Ok(None) => Err(ktap::skip("no KVM in this kernel")),
        Err(e) => Err(Err(e)),
    }
}

macro_rules! kvm {
    () => {
        match kvm_or_skip() {
            Ok(fd) => fd,
            Err(r) => return r,
        }
    };
}

fn set_region(vm: i32, r: &KvmUserspaceMemoryRegion) -> SysResult {
    ioctl(vm, k::KVM_SET_USER_MEMORY_REGION, r as *const _ as usize)
}

fn get_reg(vcpu: i32, id: u64) -> SysResult<u128> {
    let mut v = 0u128;
    let r = KvmOneReg {
        id,
        addr: &mut v as *mut u128 as u64,
    };
    ioctl(vcpu, k::KVM_GET_ONE_REG, &r as *const _ as usize).map(|_| v)
}

fn set_reg(vcpu: i32, id: u64, v: u128) -> SysResult {
    let r = KvmOneReg {
        id,
        addr: &v as *const u128 as u64,
    };
    ioctl(vcpu, k::KVM_SET_ONE_REG, &r as *const _ as usize)
}

fn x(n: usize) -> u64 {
    CoreReg::X(n).id()
}

/// A VM with one slot of guest RAM holding `code` at RAM_IPA and one initialised vCPU about to
/// run it; closes everything when dropped.
struct Guest {
    kvm: i32,
    vm: i32,
    vcpu: i32,
    ram: *mut u8,
    run: *mut u8,
    run_size: usize,
}

impl Guest {
    fn new(kvm: i32, code: &[u8]) -> Result<Guest, String> {
        Guest::with_features(kvm, code, 0)
    }

    /// A guest of a VM on a /dev/kvm of its own (another VM beside a test's first), with
    /// these vCPU features besides PSCI 0.2.
    fn another(code: &[u8], features: u32) -> Result<Guest, String> {
        let kvm = t!(open_kvm()).ok_or("no /dev/kvm")?;
        Guest::with_features(kvm, code, features)
    }

    /// The same with these vCPU features besides PSCI 0.2.
    fn with_features(kvm: i32, code: &[u8], features: u32) -> Result<Guest, String> {
        let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
        Guest::in_vm(kvm, vm, code, features)
    }

    /// The same in `vm`, a VM the caller made (and set up before it has memory or vCPUs).
    fn in_vm(kvm: i32, vm: i32, code: &[u8], features: u32) -> Result<Guest, String> {
        let ram = t!(sys::mmap_anon(RAM_SIZE)) as *mut u8;
        // SAFETY: a fresh private mapping of RAM_SIZE bytes, code shorter than DATA_OFF.
        unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), ram, code.len()) };
        t!(set_region(
            vm,
            &KvmUserspaceMemoryRegion {
                slot: 0,
                flags: 0,
                guest_phys_addr: RAM_IPA,
                memory_size: RAM_SIZE as u64,
                userspace_addr: ram as u64,
            }
        ));
        let vcpu = t!(ioctl(vm, k::KVM_CREATE_VCPU, 0)) as i32;
        let mut init = KvmVcpuInit::default();
        t!(ioctl(
            vm,
            k::KVM_ARM_PREFERRED_TARGET,
            &mut init as *mut _ as usize
        ));
        init.features[0] |= 1 << k::KVM_ARM_VCPU_PSCI_0_2 | features;
        t!(ioctl(
            vcpu,
            k::KVM_ARM_VCPU_INIT,
            &init as *const _ as usize
        ));
        let run_size = t!(ioctl(kvm, k::KVM_GET_VCPU_MMAP_SIZE, 0));
        let run = t!(sys::mmap(
            0,
            run_size,
            PROT_READ | PROT_WRITE,
            MAP_SHARED,
            vcpu,
            0
        )) as *mut u8;
        t!(set_reg(vcpu, CoreReg::Pc.id(), RAM_IPA as u128));
        Ok(Guest {
            kvm,
            vm,
            vcpu,
            ram,
            run,
            run_size,
        })
    }

    fn data(&self, off: usize) -> u64 {
        // SAFETY: inside the RAM mapping; the guest is not running (KVM_RUN returned).
        unsafe { (self.ram.add(DATA_OFF + off) as *const u64).read_volatile() }
    }

    fn set_data(&self, off: usize, v: u64) {
        // SAFETY: as in `data`.
        unsafe { (self.ram.add(DATA_OFF + off) as *mut u64).write_volatile(v) }
    }

    fn run_u32(&self, off: usize) -> u32 {
        // SAFETY: inside the mapped kvm_run page.
        unsafe { (self.run.add(off) as *const u32).read_volatile() }
    }

    fn run_u64(&self, off: usize) -> u64 {
        // SAFETY: inside the mapped kvm_run page.
        unsafe { (self.run.add(off) as *const u64).read_volatile() }
    }

    fn set_run_u8(&self, off: usize, v: u8) {
        // SAFETY: inside the mapped kvm_run page.
        unsafe { self.run.add(off).write_volatile(v) }
    }

    fn set_run_u64(&self, off: usize, v: u64) {
        // SAFETY: inside the mapped kvm_run page.
        unsafe { (self.run.add(off) as *mut u64).write_volatile(v) }
    }

    fn run(&self) -> SysResult {
        ioctl(self.vcpu, k::KVM_RUN, 0)
    }

    fn exit_reason(&self) -> u32 {
        self.run_u32(k::run::EXIT_REASON)
    }

    /// Runs to the next exit, which must be an MMIO access: (address, data, len, is_write).
    fn run_to_mmio(&self) -> Result<(u64, u64, u32, bool), String> {
        t!(self.run());
        check_eq!(self.exit_reason(), k::KVM_EXIT_MMIO, "exit reason");
        Ok((
            self.run_u64(k::run::MMIO_PHYS_ADDR),
            self.run_u64(k::run::MMIO_DATA),
            self.run_u32(k::run::MMIO_LEN),
            self.run_u32(k::run::MMIO_IS_WRITE) & 0xff != 0,
        ))
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = sys::munmap(self.run as usize, self.run_size);
        let _ = sys::munmap(self.ram as usize, RAM_SIZE);
        let _ = sys::close(self.vcpu);
        let _ = sys::close(self.vm);
        let _ = sys::close(self.kvm);
    }
}

fn system_ioctls() -> TestResult {
    let kvm = kvm!();
    check_eq!(ioctl(kvm, k::KVM_GET_API_VERSION, 0), Ok(12));
    check_eq!(ioctl(kvm, k::KVM_GET_API_VERSION, 1), Err(EINVAL));
    check_eq!(ioctl(kvm, k::KVM_GET_VCPU_MMAP_SIZE, 0), Ok(8192));
    for cap in [
        k::KVM_CAP_USER_MEMORY,
        k::KVM_CAP_ONE_REG,
        k::KVM_CAP_ARM_PSCI_0_2,
        k::KVM_CAP_IMMEDIATE_EXIT,
        k::KVM_CAP_READONLY_MEM,
        k::KVM_CAP_ARM_NISV_TO_USER,
        // What QEMU's kvm_init requires or looks at (kvm_required_capabilites).
        k::KVM_CAP_INTERNAL_ERROR_DATA,
        k::KVM_CAP_CHECK_EXTENSION_VM,
        k::KVM_CAP_ENABLE_CAP_VM,
        k::KVM_CAP_DEVICE_CTRL,
        k::KVM_CAP_SYSTEM_EVENT_DATA,
        // And what it turns on when offered: MP states, vCPU attributes, stolen time.
        k::KVM_CAP_MP_STATE,
        k::KVM_CAP_VCPU_ATTRIBUTES,
        k::KVM_CAP_STEAL_TIME,
        k::KVM_CAP_PTP_KVM,
        k::KVM_CAP_ARM_IRQ_LINE_LAYOUT_2,
    ] {
        check_eq!(
            ioctl(kvm, k::KVM_CHECK_EXTENSION, cap as usize),
            Ok(1),
            "cap {cap}"
        );
    }
    check_eq!(ioctl(kvm, k::KVM_CHECK_EXTENSION, 0x7fff_ffff), Ok(0));
    check_eq!(
        ioctl(kvm, k::KVM_CHECK_EXTENSION, k::KVM_CAP_NR_MEMSLOTS as usize),
        Ok(k::KVM_USER_MEM_SLOTS as usize)
    );
    let ipa = t!(ioctl(
        kvm,
        k::KVM_CHECK_EXTENSION,
        k::KVM_CAP_ARM_VM_IPA_SIZE as usize
    ));
    check!(ipa >= 40, "IPA size {ipa}");
    // A request /dev/kvm does not know.
    check_eq!(ioctl(kvm, k::KVM_RUN, 0), Err(EINVAL));
    // VM types: the IPA size only, at least 32 bits, at most what is offered.
    check_eq!(ioctl(kvm, k::KVM_CREATE_VM, 31), Err(EINVAL));
    check_eq!(ioctl(kvm, k::KVM_CREATE_VM, ipa + 1), Err(EINVAL));
    check_eq!(ioctl(kvm, k::KVM_CREATE_VM, 0x100), Err(EINVAL));
    let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 36)) as i32;
    // VM and vCPU descriptors are close-on-exec.
    check_eq!(sys::fcntl(vm, F_GETFD, 0), Ok(FD_CLOEXEC));
    t!(sys::close(vm));
    t!(sys::close(kvm));
    Ok(())
}

fn vcpus_and_their_errors() -> TestResult {
    let kvm = kvm!();
    let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
    let mut init = KvmVcpuInit::default();
    t!(ioctl(
        vm,
        k::KVM_ARM_PREFERRED_TARGET,
        &mut init as *mut _ as usize
    ));
    let vcpu = t!(ioctl(vm, k::KVM_CREATE_VCPU, 0)) as i32;
    check_eq!(ioctl(vm, k::KVM_CREATE_VCPU, 0), Err(EEXIST));
    check_eq!(ioctl(vm, k::KVM_CREATE_VCPU, 1 << 20), Err(EINVAL));
    check_eq!(sys::fcntl(vcpu, F_GETFD, 0), Ok(FD_CLOEXEC));
    // Nothing runs or reads before KVM_ARM_VCPU_INIT.
    check_eq!(ioctl(vcpu, k::KVM_RUN, 0), Err(ENOEXEC));
    let mut v = 0u64;
    let r = KvmOneReg {
        id: CoreReg::Pc.id(),
        addr: &mut v as *mut u64 as u64,
    };
    check_eq!(
        ioctl(vcpu, k::KVM_GET_ONE_REG, &r as *const _ as usize),
        Err(ENOEXEC)
    );
    // Unknown targets and features.
    let bad_target = KvmVcpuInit {
        target: 0x7f,
        ..init
    };
    check_eq!(
        ioctl(vcpu, k::KVM_ARM_VCPU_INIT, &bad_target as *const _ as usize),
        Err(EINVAL)
    );
    let mut bad_feature = init;
    bad_feature.features[6] = 1;
    check_eq!(
        ioctl(
            vcpu,
            k::KVM_ARM_VCPU_INIT,
            &bad_feature as *const _ as usize
        ),
        Err(ENOENT)
    );
    let mut unknown_bit = init;
    unknown_bit.features[0] = 1 << 20;
    check_eq!(
        ioctl(
            vcpu,
            k::KVM_ARM_VCPU_INIT,
            &unknown_bit as *const _ as usize
        ),
        Err(ENOENT)
    );
    check_eq!(ioctl(vcpu, k::KVM_ARM_VCPU_INIT, 8), Err(EFAULT));
    t!(ioctl(
        vcpu,
        k::KVM_ARM_VCPU_INIT,
        &init as *const _ as usize
    ));
    // After init: PSTATE is EL1h with DAIF masked.
    check_eq!(get_reg(vcpu, CoreReg::Pstate.id()), Ok(0x3c5));
    t!(sys::close(vcpu));
    t!(sys::close(vm));
    t!(sys::close(kvm));
    Ok(())
}

fn memory_slots() -> TestResult {
    let kvm = kvm!();
    let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
    let mem = t!(sys::mmap_anon(0x4000));
    let ok = KvmUserspaceMemoryRegion {
        slot: 1,
        flags: 0,
        guest_phys_addr: 0x10_0000,
        memory_size: 0x2000,
        userspace_addr: mem as u64,
    };
    let with = |f: fn(&mut KvmUserspaceMemoryRegion)| {
        let mut r = ok;
        f(&mut r);
        set_region(vm, &r)
    };
    check_eq!(with(|r| r.flags = 1 << 7), Err(EINVAL));
    check_eq!(with(|r| r.slot = 1 << 16), Err(EINVAL));
    check_eq!(with(|r| r.guest_phys_addr += 1), Err(EINVAL));
    check_eq!(with(|r| r.memory_size = 0x1800), Err(EINVAL));
    check_eq!(with(|r| r.userspace_addr += 8), Err(EINVAL));
    // Deleting a slot that does not exist.
    check_eq!(with(|r| r.memory_size = 0), Err(EINVAL));
    t!(set_region(vm, &ok));
    // Another slot over the same guest pages.
    check_eq!(
        with(|r| {
            r.slot = 2;
            r.guest_phys_addr += 0x1000;
        }),
        Err(EEXIST)
    );
    // A slot's size cannot change; it can move, and be deleted.
    check_eq!(with(|r| r.memory_size = 0x4000), Err(EINVAL));
    t!(with(|r| r.guest_phys_addr = 0x20_0000));
    t!(with(|r| {
        r.guest_phys_addr = 0x20_0000;
        r.memory_size = 0;
    }));
    t!(sys::munmap(mem, 0x4000));
    t!(sys::close(vm));
    t!(sys::close(kvm));
    Ok(())
}

fn core_registers() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_wfi, guest_wfi_end)));
    for n in 0..31 {
        t!(set_reg(g.vcpu, x(n), 0x1111_0000_0000_0000 | n as u128));
    }
    for n in 0..31 {
        check_eq!(
            get_reg(g.vcpu, x(n)),
            Ok(0x1111_0000_0000_0000 | n as u128),
            "x{n}"
        );
    }
    t!(set_reg(
        g.vcpu,
        CoreReg::V(3).id(),
        0x0123_4567_89ab_cdef_fedc_ba98_7654_3210
    ));
    check_eq!(
        get_reg(g.vcpu, CoreReg::V(3).id()),
        Ok(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210)
    );
    check_eq!(get_reg(g.vcpu, CoreReg::Pc.id()), Ok(RAM_IPA as u128));
    // The middle of a register, a wrong size, an unknown group, a mode a vCPU cannot be in.
    check_eq!(get_reg(g.vcpu, x(0) + 1), Err(EINVAL));
    let x0_u32 = (x(0) & !k::KVM_REG_SIZE_MASK) | k::KVM_REG_SIZE_U32;
    check_eq!(get_reg(g.vcpu, x0_u32), Err(EINVAL));
    check_eq!(
        get_reg(
            g.vcpu,
            k::KVM_REG_ARM64 | k::KVM_REG_SIZE_U64 | (0x0fff << 16)
        ),
        Err(ENOENT)
    );
    check_eq!(set_reg(g.vcpu, CoreReg::Pstate.id(), 0x3c9), Err(EINVAL));
    let bad = KvmOneReg { id: x(0), addr: 8 };
    check_eq!(
        ioctl(g.vcpu, k::KVM_GET_ONE_REG, &bad as *const _ as usize),
        Err(EFAULT)
    );
    // The list: too short gets the count, then the IDs (core registers among them).
    let mut n = [0u64; 1];
    check_eq!(
        ioctl(g.vcpu, k::KVM_GET_REG_LIST, n.as_mut_ptr() as usize),
        Err(E2BIG)
    );
    let count = n[0] as usize;
    check!(count >= 80, "{count} registers");
    let mut list = vec![0u64; count + 1];
    list[0] = count as u64;
    t!(ioctl(
        g.vcpu,
        k::KVM_GET_REG_LIST,
        list.as_mut_ptr() as usize
    ));
    for r in [
        CoreReg::X(0),
        CoreReg::Pc,
        CoreReg::Pstate,
        CoreReg::V(31),
        CoreReg::Fpcr,
    ] {
        check!(list[1..].contains(&r.id()), "{r:?} not listed");
    }
    // Every listed register reads.
    for &id in &list[1..] {
        check!(get_reg(g.vcpu, id).is_ok(), "{id:#x} does not read");
    }
    Ok(())
}

fn guest_ram_and_mmio() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_mmio, guest_mmio_end)));
    g.set_data(0, 41);
    t!(set_reg(g.vcpu, x(3), (RAM_IPA + DATA_OFF as u64) as u128));
    // str x2, [x1]: eight bytes, the value the guest read from RAM plus one.
    check_eq!(t!(g.run_to_mmio()), (MMIO, 42, 8, true));
    // Until the next KVM_RUN the PC is the access's.
    check_eq!(
        get_reg(g.vcpu, CoreReg::Pc.id()),
        Ok((RAM_IPA + 12) as u128)
    );
    // ldr w4, [x1, #8]: the VMM's answer lands in w4.
    let (addr, _, len, write) = t!(g.run_to_mmio());
    check_eq!((addr, len, write), (MMIO + 8, 4, false));
    g.set_run_u64(k::run::MMIO_DATA, 0xffff_ffff_dead_beef);
    // ldrsb x5, [x1, #16]: one byte, sign-extended to 64 bits.
    let (addr, _, len, write) = t!(g.run_to_mmio());
    check_eq!((addr, len, write), (MMIO + 16, 1, false));
    check_eq!(get_reg(g.vcpu, x(4)), Ok(0xdead_beef));
    g.set_run_u64(k::run::MMIO_DATA, 0x80);
    // Then a store to RAM and PSCI SYSTEM_OFF.
    t!(g.run());
    check_eq!(g.exit_reason(), k::KVM_EXIT_SYSTEM_EVENT);
    check_eq!(
        g.run_u32(k::run::SYSTEM_EVENT_TYPE),
        k::KVM_SYSTEM_EVENT_SHUTDOWN
    );
    check_eq!(get_reg(g.vcpu, x(5)), Ok(0xffff_ffff_ffff_ff80));
    check_eq!(g.data(8), 0xdead_beef);
    // What the call returns if the VMM runs the vCPU again: INTERNAL_FAILURE in x0, x1..x3
    // zero (Linux's kvm_psci_0_2_call).
    check_eq!(
        get_reg(g.vcpu, x(0)),
        Ok(-6i64 as u64 as u128),
        "x0 after SYSTEM_OFF"
    );
    for n in 1..4 {
        check_eq!(get_reg(g.vcpu, x(n)), Ok(0), "x{n} after SYSTEM_OFF");
    }
    // The vCPU is off now.
    let mut mp = 0u32;
    t!(ioctl(
        g.vcpu,
        k::KVM_GET_MP_STATE,
        &mut mp as *mut u32 as usize
    ));
    check_eq!(mp, k::KVM_MP_STATE_STOPPED);
    Ok(())
}

fn psci_and_smccc() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_psci, guest_psci_end)));
    t!(g.run_to_mmio());
    let psci = t!(get_reg(g.vcpu, x(10))) as u64;
    let smccc = t!(get_reg(g.vcpu, x(11))) as u64;
    println!("    # PSCI {:#x}, SMCCC {:#x}", psci, smccc);
    check_eq!(psci >> 16, 1, "PSCI major version");
    check!(smccc >= 0x1_0001, "SMCCC version {smccc:#x}");
    check_eq!(get_reg(g.vcpu, x(12)), Ok(u64::MAX as u128), "a SiP call");
    check_eq!(get_reg(g.vcpu, x(13)), Ok(0), "PSCI_FEATURES(SYSTEM_OFF)");
    check_eq!(
        get_reg(g.vcpu, k::KVM_REG_ARM_PSCI_VERSION).map(|v| v as u64),
        Ok(psci)
    );
    Ok(())
}

static ALARMS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_alarm(_: i32, _: *mut SigInfo, _: *mut u8) {
    ALARMS.fetch_add(1, Ordering::Relaxed);
}

fn signals_end_run() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_wfi, guest_wfi_end)));
    t!(set_handler(SIGALRM, on_alarm, 0, 0));
    // immediate_exit: EINTR before the guest runs, the exit reason reset to UNKNOWN.
    g.set_run_u8(k::run::IMMEDIATE_EXIT, 1);
    check_eq!(g.run(), Err(EINTR));
    check_eq!(g.exit_reason(), k::KVM_EXIT_UNKNOWN);
    check_eq!(get_reg(g.vcpu, CoreReg::Pc.id()), Ok(RAM_IPA as u128));
    g.set_run_u8(k::run::IMMEDIATE_EXIT, 0);
    // WFI sleeps until the alarm; the guest goes on after its WFI.
    let before = ALARMS.load(Ordering::Relaxed);
    t!(sys::setitimer_real(30_000_000, 0));
    check_eq!(g.run(), Err(EINTR));
    check_eq!(g.exit_reason(), k::KVM_EXIT_INTR);
    check_eq!(ALARMS.load(Ordering::Relaxed), before + 1);
    check_eq!(get_reg(g.vcpu, CoreReg::Pc.id()), Ok((RAM_IPA + 4) as u128));
    // A guest spinning in `b .`: the alarm still ends KVM_RUN.
    t!(sys::setitimer_real(30_000_000, 0));
    check_eq!(g.run(), Err(EINTR));
    check_eq!(g.exit_reason(), k::KVM_EXIT_INTR);
    check_eq!(ALARMS.load(Ordering::Relaxed), before + 2);
    check_eq!(get_reg(g.vcpu, CoreReg::Pc.id()), Ok((RAM_IPA + 4) as u128));
    Ok(())
}

/// KVM_RUN with the VMM's own D0 set to `d0` just before the call: returns the call's result
/// and D0 just after it (one asm block, so no compiler-chosen use of V0 comes in between).
fn run_with_d0(vcpu: i32, d0: u64) -> (isize, u64) {
    let ret: isize;
    let after: u64;
    // SAFETY: an ioctl syscall with the VMM's D0 as the only state changed; V0 is declared
    // clobbered.
    unsafe {
        core::arch::asm!(
            "fmov d0, {v}",
            "svc #0",
            "fmov {a}, d0",
            v = in(reg) d0,
            a = lateout(reg) after,
            inlateout("x0") vcpu as isize => ret,
            in("x1") k::KVM_RUN as usize,
            in("x2") 0usize,
            in("x8") 29usize,
            out("v0") _,
        )
    };
    (ret, after)
}

fn fp_registers_stay_apart() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_fp, guest_fp_end)));
    const GUEST: u64 = 0x6e65_7473_6575_6721;
    const VMM: u64 = 0x0766_6d6d_7661_6c21;
    t!(set_reg(g.vcpu, x(2), GUEST as u128));
    t!(set_reg(
        g.vcpu,
        CoreReg::V(1).id(),
        (0x5555_u128 << 64) | 0xd1d1
    ));
    // The guest writes its D0 and exits: the VMM's D0 is its own across the call.
    let (r, d0) = run_with_d0(g.vcpu, VMM);
    check_eq!(r, 0);
    check_eq!(g.exit_reason(), k::KVM_EXIT_MMIO);
    check_eq!(g.run_u64(k::run::MMIO_DATA), GUEST);
    check_eq!(d0, VMM, "the VMM's D0 after the guest wrote its own");
    check_eq!(get_reg(g.vcpu, CoreReg::V(0).id()), Ok(GUEST as u128));
    // The guest's D0 is still its own after the VMM used another; D1 is what ONE_REG set.
    let (r, d0) = run_with_d0(g.vcpu, !VMM);
    check_eq!(r, 0);
    check_eq!(g.exit_reason(), k::KVM_EXIT_MMIO);
    check_eq!(g.run_u64(k::run::MMIO_DATA), GUEST);
    check_eq!(get_reg(g.vcpu, x(7)), Ok(0xd1d1));
    check_eq!(d0, !VMM);
    Ok(())
}

/// D0 and D7 set to `p` around a sched_yield (one asm block): whether both came back.
fn yield_keeps(p: u64) -> bool {
    let (a, b): (u64, u64);
    // SAFETY: a sched_yield syscall with D0 and D7 set; V0, V7 and x0 are declared clobbered.
    unsafe {
        core::arch::asm!(
            "fmov d0, {p}",
            "fmov d7, {p}",
            "svc #0",
            "fmov {a}, d0",
            "fmov {b}, d7",
            p = in(reg) p,
            a = lateout(reg) a,
            b = lateout(reg) b,
            inlateout("x0") 0usize => _,
            in("x8") sys::nr::SCHED_YIELD,
            out("v0") _,
            out("v7") _,
        )
    };
    a == p && b == p
}

/// A vCPU thread and a host task take turns on one CPU within one KVM_RUN: the guest writes
/// its D0 in a loop (each time it is scheduled back, its first FP access loads its registers
/// again), while the host task keeps a pattern in D0 and D7 across sched_yield. The host task
/// must never find the guest's value in its registers, nor the VMM its own changed.
fn fp_registers_stay_apart_across_switches() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_fp_spin, guest_fp_spin_end)));
    const GUEST: u64 = 0x4755_4553_5446_5021;
    const HOST: u64 = 0x484f_5354_5441_534b;
    const VMM: u64 = 0x0766_6d6d_7661_6c21;
    t!(set_reg(g.vcpu, x(2), GUEST as u128));
    let task = |stop: &Shared<u32>| {
        let mut n = 0u32;
        while stop.get() == 0 {
            if !yield_keeps(HOST ^ n as u64) {
                println!("    # the host task's D0/D7 changed across yield {n}");
                return 1;
            }
            n += 1;
        }
        0
    };
    let runs = t!(svelt_user::kvm::beside_a_task(task, 10, 40_000_000, || {
        run_with_d0(g.vcpu, VMM)
    }));
    for (r, d0) in runs {
        check_eq!(r, -(EINTR.0 as isize));
        check_eq!(d0, VMM, "the VMM's D0 after KVM_RUN");
    }
    check_eq!(g.exit_reason(), k::KVM_EXIT_INTR);
    check_eq!(get_reg(g.vcpu, CoreReg::V(0).id()), Ok(GUEST as u128));
    Ok(())
}

/// A host task spinning in streaming mode (SME) and a vCPU thread whose guest spins on SVE
/// share one CPU: the guest's loads find the CPU still in the task's streaming mode after a
/// switch, and must leave it first (the task's Z, P and FFR survive every preemption; the
/// host stays up).
fn sve_guest_beside_a_streaming_task() -> TestResult {
    let kvm = kvm!();
    if !has_sve_guests(kvm) || !svelt_user::sme::has_sme() {
        let _ = sys::close(kvm);
        return ktap::skip("needs SVE for guests and SME on the host");
    }
    let code = code!(guest_fp_sve_spin, guest_fp_sve_spin_end);
    let g = t!(Guest::with_features(
        kvm,
        code,
        1 << ks_sve::KVM_ARM_VCPU_SVE
    ));
    t!(set_reg(g.vcpu, x(2), 0x5354_5245_414d_2121));
    t!(finalize(g.vcpu, ks_sve::KVM_ARM_VCPU_SVE as i32));
    let task = |stop: &Shared<u32>| svelt_user::sme::spin_streaming_until(stop, 31, 200_000);
    let runs = t!(svelt_user::kvm::beside_a_task(task, 10, 40_000_000, || {
        g.run()
    }));
    for r in runs {
        check_eq!(r, Err(EINTR));
    }
    // The guest ran its loop (never an exception of its own: it has no vectors).
    let pc = t!(get_reg(g.vcpu, CoreReg::Pc.id())) as u64;
    check!(
        (RAM_IPA..RAM_IPA + 0x40).contains(&pc),
        "the guest's pc {pc:#x} left its loop"
    );
    Ok(())
}

fn no_syndrome_and_readonly_slots() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_nisv, guest_nisv_end)));
    // A read-only slot at 0x40_0000 over the VMM's page holding 7.
    let ro = t!(sys::mmap_anon(0x1000));
    // SAFETY: a fresh private page.
    unsafe { (ro as *mut u64).write_volatile(7) };
    t!(set_region(
        g.vm,
        &KvmUserspaceMemoryRegion {
            slot: 1,
            flags: k::KVM_MEM_READONLY,
            guest_phys_addr: 0x40_0000,
            memory_size: 0x1000,
            userspace_addr: ro as u64,
        }
    ));
    t!(set_reg(g.vcpu, x(3), 0x40_0000));
    // ldp from MMIO: no syndrome to decode. Without the capability KVM_RUN fails...
    check_eq!(g.run(), Err(ENOSYS));
    // ... with it, the VMM is told the address.
    let cap = [
        k::KVM_CAP_ARM_NISV_TO_USER,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    t!(ioctl(g.vm, k::KVM_ENABLE_CAP, cap.as_ptr() as usize));
    t!(g.run());
    check_eq!(g.exit_reason(), k::KVM_EXIT_ARM_NISV);
    check_eq!(g.run_u64(k::run::NISV_FAULT_IPA), MMIO);
    // The VMM emulates it and moves on.
    let pc = t!(get_reg(g.vcpu, CoreReg::Pc.id()));
    t!(set_reg(g.vcpu, CoreReg::Pc.id(), pc + 4));
    // ldr from the read-only slot reads the VMM's page; the store is an MMIO exit.
    let (addr, data, len, write) = t!(g.run_to_mmio());
    check_eq!((addr, data, len, write), (0x40_0008, 7, 8, true));
    t!(sys::munmap(ro, 0x1000));
    Ok(())
}

/// A vCPU made without the SVE feature sees neither SVE nor SME in its ID registers (Linux 7.3
/// offers SME to no guest).
fn guest_sees_no_sve_or_sme() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_idregs, guest_idregs_end)));
    t!(g.run_to_mmio());
    let pfr0 = t!(get_reg(g.vcpu, x(4))) as u64;
    let pfr1 = t!(get_reg(g.vcpu, x(5))) as u64;
    println!("    # guest ID_AA64PFR0_EL1 {pfr0:#x}, ID_AA64PFR1_EL1 {pfr1:#x}");
    check_eq!((pfr0 >> 32) & 0xf, 0, "SVE in ID_AA64PFR0_EL1 {pfr0:#x}");
    check!(
        (pfr0 >> 4) & 0xf != 0,
        "no EL1 in ID_AA64PFR0_EL1 {pfr0:#x}"
    );
    // No in-kernel GIC was made: the GIC system registers are not offered.
    check_eq!((pfr0 >> 24) & 0xf, 0, "GIC in ID_AA64PFR0_EL1 {pfr0:#x}");
    check_eq!((pfr1 >> 24) & 0xf, 0, "SME in ID_AA64PFR1_EL1 {pfr1:#x}");
    // CSV2 and CSV3 say only "not affected" (1), never a later CSV2 level.
    check!((pfr0 >> 56) & 0xf <= 1, "CSV2 in ID_AA64PFR0_EL1 {pfr0:#x}");
    check!((pfr0 >> 60) & 0xf <= 1, "CSV3 in ID_AA64PFR0_EL1 {pfr0:#x}");
    check_eq!(get_reg(g.vcpu, x(6)), Ok(0), "ID_AA64ZFR0_EL1");
    check_eq!(get_reg(g.vcpu, x(7)), Ok(0), "ID_AA64SMFR0_EL1");
    Ok(())
}

/// The VMM thread's own SVE vector length (RDVL).
fn host_vl() -> u64 {
    let vl: u64;
    // SAFETY: RDVL only writes a general register; the caller checked SVE exists.
    unsafe { core::arch::asm!(".arch_extension sve", "rdvl {}, #1", out(reg) vl) };
    vl
}

/// KVM_CAP_ARM_SVE: vCPUs may have SVE.
fn has_sve_guests(kvm: i32) -> bool {
    kvm::has_cap(kvm, ks_sve::KVM_CAP_ARM_SVE)
}

/// Svelt's guest SVE restores, saves, bytes restored and bytes saved (/proc/svelt/fpstat);
/// None elsewhere.
fn guest_sve_counts() -> Option<[u64; 4]> {
    let text = svelt_user::io::read_file("/proc/svelt/fpstat").ok()?;
    let text = core::str::from_utf8(&text).ok()?;
    let get = |key: &str| {
        let l = text
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))?;
        l.trim().parse().ok()
    };
    Some([
        get("guest_sve_restores")?,
        get("guest_sve_saves")?,
        get("guest_bytes_restored")?,
        get("guest_bytes_saved")?,
    ])
}

/// A vCPU with SVE (KVM_ARM_VCPU_SVE): its vector lengths (every host length, up to the
/// largest, until the VMM lowers it; nothing but a prefix of the host's set; fixed at
/// finalize), what needs finalize (KVM_RUN, the register list, the Z/P/FFR registers), the V
/// registers replaced by the Z registers, and a guest that runs at the VL the VMM chose and
/// whose Z, P and ZCR_EL1 the VMM reads back, while the VMM's own VL stays its own.
fn sve_guest() -> TestResult {
    let kvm = kvm!();
    if !has_sve_guests(kvm) {
        let _ = sys::close(kvm);
        return ktap::skip("no KVM_CAP_ARM_SVE");
    }
    let sve_bit = 1 << ks_sve::KVM_ARM_VCPU_SVE;
    {
        // A VM's vCPUs all have the features of its first: a second one cannot add SVE.
        let kvm2 = t!(sys::open("/dev/kvm", O_RDWR | O_CLOEXEC));
        let g = t!(Guest::new(kvm2, code!(guest_sve, guest_sve_end)));
        let mut init = KvmVcpuInit::default();
        let pt = &mut init as *mut _ as usize;
        t!(ioctl(g.vm, k::KVM_ARM_PREFERRED_TARGET, pt));
        init.features[0] |= 1 << k::KVM_ARM_VCPU_PSCI_0_2 | sve_bit;
        let vcpu = t!(ioctl(g.vm, k::KVM_CREATE_VCPU, 1)) as i32;
        let sve = ks_sve::KVM_ARM_VCPU_SVE as i32;
        check_eq!(finalize(vcpu, sve), Err(ENOEXEC));
        let r = ioctl(vcpu, k::KVM_ARM_VCPU_INIT, &init as *const _ as usize);
        check_eq!(r, Err(EINVAL));
        let mut b = [0u8; 64];
        let vls = ks_sve::KVM_REG_ARM64_SVE_VLS;
        check_eq!(get_sve(g.vcpu, vls, &mut b), Err(ENOENT));
        check_eq!(finalize(g.vcpu, sve), Err(EINVAL));
        let _ = sys::close(vcpu);
    }
    let g = t!(Guest::with_features(
        kvm,
        code!(guest_sve, guest_sve_end),
        sve_bit
    ));
    let vcpu = g.vcpu;
    let mut b = [0u8; 256];
    // The host's lengths: all of them up to its largest (QEMU's CPU has each vq up to its
    // maximum).
    let host_max = t!(svelt_user::sme::sve_set_vl(8192)) as u64 & 0xffff;
    let host_max_vq = host_max / 16;
    t!(get_sve(vcpu, ks_sve::KVM_REG_ARM64_SVE_VLS, &mut b));
    let w0 = u64::from_le_bytes(b[..8].try_into().unwrap());
    check_eq!(w0, (1u64 << host_max_vq) - 1, "VLS of a fresh vCPU");
    check!(b[8..64].iter().all(|&x| x == 0));
    // Before finalize: no run, no register list, no Z registers.
    check_eq!(g.run(), Err(EPERM));
    let mut list = [0u64; 1024];
    list[0] = 1000;
    let lp = list.as_mut_ptr() as usize;
    check_eq!(ioctl(vcpu, k::KVM_GET_REG_LIST, lp), Err(EPERM));
    check_eq!(get_sve(vcpu, ks_sve::zreg(0, 0), &mut b), Err(EPERM));
    // Lengths: a prefix of the host's set, not empty, no larger than the host's.
    let set_vls = |w0: u64, w7: u64| {
        let mut b = [0u8; 64];
        b[..8].copy_from_slice(&w0.to_le_bytes());
        b[56..].copy_from_slice(&w7.to_le_bytes());
        set_sve(vcpu, ks_sve::KVM_REG_ARM64_SVE_VLS, &b)
    };
    check_eq!(set_vls(0, 0), Err(EINVAL));
    check_eq!(set_vls(1 << host_max_vq, 0), Err(EINVAL));
    check_eq!(set_vls(0, 1 << 63), Err(EINVAL));
    let guest_vq = host_max_vq.min(2);
    if host_max_vq >= 3 {
        check_eq!(set_vls(0b101, 0), Err(EINVAL));
    }
    t!(set_vls((1 << guest_vq) - 1, 0));
    t!(get_sve(vcpu, ks_sve::KVM_REG_ARM64_SVE_VLS, &mut b));
    check_eq!(b[0] as u64, (1 << guest_vq) - 1);
    // Finalize: once, for SVE only.
    let sve = ks_sve::KVM_ARM_VCPU_SVE as i32;
    check_eq!(finalize(vcpu, 0), Err(EINVAL));
    t!(finalize(vcpu, sve));
    check_eq!(finalize(vcpu, sve), Err(EPERM));
    check_eq!(set_vls(1, 0), Err(EPERM));
    // The list: VLS, Z0-Z31, P0-P15, FFR and ZCR_EL1; no V registers.
    let zcr = k::sysreg_id(3, 0, 1, 2, 0);
    list[0] = 1000;
    t!(ioctl(vcpu, k::KVM_GET_REG_LIST, lp));
    let ids = &list[1..1 + list[0] as usize];
    for id in ks_sve::reg_ids().chain([zcr]) {
        check!(ids.contains(&id), "{id:#x} missing from the list");
    }
    check!(!ids.contains(&CoreReg::V(0).id()));
    check_eq!(get_reg(vcpu, CoreReg::V(0).id()), Err(EINVAL));
    check_eq!(get_sve(vcpu, ks_sve::zreg(0, 1), &mut b), Err(ENOENT));
    // Z1 from the VMM: 64-bit lanes 1, 2, 3, ...; the bytes past the VL are not read.
    let vl = 16 * guest_vq as usize;
    let mut z1 = [0xeeu8; 256];
    for (i, c) in z1[..vl].chunks_exact_mut(8).enumerate() {
        c.copy_from_slice(&(i as u64 + 1).to_le_bytes());
    }
    t!(set_sve(vcpu, ks_sve::zreg(1, 0), &z1));
    t!(get_sve(vcpu, ks_sve::zreg(1, 0), &mut b));
    check_eq!(&b[..vl], &z1[..vl]);
    check!(b[vl..].iter().all(|&x| x == 0), "Z1 past the VL reads 0");
    // Run it: the guest asks for the largest VL and gets the VMM's choice. Its ZCR_EL1 starts
    // at that already (a guest's own VL change leaves the Z registers' upper bytes UNKNOWN).
    check_eq!(get_reg(vcpu, zcr), Ok(0));
    t!(set_reg(vcpu, zcr, 0xf));
    let vmm_vl = host_vl();
    let counts = guest_sve_counts();
    t!(g.run());
    check_eq!(host_vl(), vmm_vl, "the VMM's VL after KVM_RUN");
    // Svelt counts guest SVE loads and saves apart from the host's: each moved the whole
    // state at the guest's VL, and every load was saved again.
    if let (Some(b), Some(a)) = (counts, guest_sve_counts()) {
        let (loads, saves) = (a[0] - b[0], a[1] - b[1]);
        check!(
            loads >= 1 && loads == saves,
            "guest SVE loads {loads}, saves {saves}"
        );
        let size = 546 * guest_vq;
        check_eq!((a[2] - b[2], a[3] - b[3]), (loads * size, saves * size));
    }
    check_eq!(g.exit_reason(), k::KVM_EXIT_MMIO);
    check_eq!(get_reg(vcpu, x(4)), Ok(vl as u128), "the guest's RDVL");
    let pfr0 = t!(get_reg(vcpu, x(5))) as u64;
    check_eq!((pfr0 >> 32) & 0xf, 1, "SVE in ID_AA64PFR0_EL1 {pfr0:#x}");
    t!(get_sve(vcpu, ks_sve::zreg(2, 0), &mut b));
    let counting = b[..vl]
        .iter()
        .enumerate()
        .all(|(i, &x)| x as usize == i + 1);
    check!(counting, "Z2 {:?}", &b[..vl]);
    check!(b[vl..].iter().all(|&x| x == 0));
    t!(get_sve(vcpu, ks_sve::zreg(3, 0), &mut b));
    for (i, c) in b[..vl].chunks_exact(8).enumerate() {
        let lane = u64::from_le_bytes(c.try_into().unwrap());
        check_eq!(lane, 2 * (i as u64 + 1), "Z3 lane {i}");
    }
    let mut p = [0u8; 32];
    t!(get_sve(vcpu, ks_sve::preg(1, 0), &mut p));
    let ptrue = p[..vl / 8].iter().all(|&x| x == 0xff) && p[vl / 8..].iter().all(|&x| x == 0);
    check!(ptrue, "P1 {p:?}");
    check_eq!(get_reg(vcpu, zcr), Ok(0xf), "ZCR_EL1");
    Ok(())
}

/// A VMM killed (SIGKILL) while its vCPU runs a guest with SVE live: the VMM dies of the
/// signal, and on Svelt the guest's state went back to memory as it left the CPU (as many
/// saves as loads) and the VM is gone once the VMM is reaped.
fn vmm_killed_in_run() -> TestResult {
    let kvm = kvm!();
    let sve = has_sve_guests(kvm);
    let _ = sys::close(kvm);
    let running = Shared::new(0u32);
    let before = guest_sve_counts();
    let pid = t!(spawn(|| {
        let Ok(kvm) = sys::open("/dev/kvm", O_RDWR | O_CLOEXEC) else {
            return 2;
        };
        let features = if sve {
            1 << ks_sve::KVM_ARM_VCPU_SVE
        } else {
            0
        };
        let code = code!(guest_sve_spin, guest_sve_spin_end);
        let Ok(g) = Guest::with_features(kvm, code, features) else {
            return 3;
        };
        if sve && finalize(g.vcpu, ks_sve::KVM_ARM_VCPU_SVE as i32).is_err() {
            return 4;
        }
        running.set(1);
        let _ = g.run();
        5
    }));
    while running.get() == 0 {
        sys::sleep_ns(1_000_000);
    }
    sys::sleep_ns(50_000_000);
    t!(sys::kill(pid, SIGKILL));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGKILL,
        "VMM: {}",
        describe(st)
    );
    if let (true, Some(b), Some(a)) = (sve, before, guest_sve_counts()) {
        let (loads, saves) = (a[0] - b[0], a[1] - b[1]);
        check!(
            loads >= 1 && loads == saves,
            "guest SVE loads {loads}, saves {saves}"
        );
    }
    if let Ok(text) = io::read_file("/proc/svelt/kvm") {
        let text = String::from_utf8_lossy(&text).into_owned();
        check!(text.starts_with("vms 0\n"), "after the VMM died: {text}");
    }
    Ok(())
}

/// Restarts the guest_mmio guest at its first instruction and returns what it stores (RAM's
/// value plus one).
fn rerun_mmio_guest(g: &Guest) -> Result<u64, String> {
    t!(set_reg(g.vcpu, CoreReg::Pc.id(), RAM_IPA as u128));
    let (addr, data, _, write) = t!(g.run_to_mmio());
    check_eq!((addr, write), (MMIO, true));
    Ok(data)
}

fn guest_memory_is_the_vmms() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_mmio, guest_mmio_end)));
    t!(set_reg(g.vcpu, x(3), (RAM_IPA + DATA_OFF as u64) as u128));
    g.set_data(0, 41);
    check_eq!(rerun_mmio_guest(&g), Ok(42));
    // A forked VMM may not use the VM; its writes to its copy of guest RAM stay its own.
    let vm = g.vm;
    let vcpu = g.vcpu;
    let ram = g.ram as usize;
    let st = t!(in_child(|| {
        // SAFETY: the child's own copy of the RAM mapping.
        unsafe { ((ram + DATA_OFF) as *mut u64).write_volatile(1000) };
        let a = ioctl(vm, k::KVM_CHECK_EXTENSION, k::KVM_CAP_ONE_REG as usize);
        let b = ioctl(vcpu, k::KVM_RUN, 0);
        i32::from(a != Err(EIO)) + 2 * i32::from(b != Err(EIO))
    }));
    check_eq!(
        st,
        0,
        "the child's VM and vCPU ioctls were not EIO ({})",
        describe(st)
    );
    // The parent's write after the fork moves its page (copy-on-write); the guest follows it.
    g.set_data(0, 50);
    check_eq!(rerun_mmio_guest(&g), Ok(51));
    // An mprotect, then MADV_DONTNEED of the data page (it reads as zero again, then the VMM
    // writes a new frame): the guest sees what the VMM sees.
    t!(sys::mprotect(
        ram,
        RAM_SIZE,
        PROT_READ | PROT_WRITE | PROT_EXEC
    ));
    g.set_data(0, 60);
    check_eq!(rerun_mmio_guest(&g), Ok(61));
    t!(sys::syscall(
        MADVISE,
        &[ram + DATA_OFF, 0x1000, MADV_DONTNEED]
    ));
    check_eq!(rerun_mmio_guest(&g), Ok(1));
    g.set_data(0, 70);
    check_eq!(rerun_mmio_guest(&g), Ok(71));
    // The slot's memory unmapped: the guest's next fetch cannot be had.
    t!(sys::munmap(ram, RAM_SIZE));
    t!(set_reg(g.vcpu, CoreReg::Pc.id(), RAM_IPA as u128));
    check_eq!(g.run(), Err(EFAULT));
    Ok(())
}

/// On Svelt, /proc/svelt/kvm shows every VM, VMID and stage-2 page given back once the VMs of
/// the tests above are closed.
/// The VM's ID registers are the VMM's to lower (not raise) until the VM first runs, and the
/// guest reads what the VMM wrote; the firmware registers and PSCI 1.3's SYSTEM_OFF2; an
/// unknown device type.
fn id_registers_and_firmware() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(
        kvm,
        code!(guest_isar0_off2, guest_isar0_off2_end)
    ));
    const ISAR0: u64 = k::sysreg_id(3, 0, 0, 6, 0);
    let isar0 = t!(get_reg(g.vcpu, ISAR0)) as u64;
    // The AES field (bits 4..7): raised to 0xf is refused, lowered to 0 taken.
    check_eq!(
        set_reg(g.vcpu, ISAR0, (isar0 | 0xf << 4) as u128),
        Err(EINVAL)
    );
    let lowered = isar0 & !(0xf << 4);
    t!(set_reg(g.vcpu, ISAR0, lowered as u128));
    check_eq!(get_reg(g.vcpu, ISAR0), Ok(lowered as u128));
    // The PSCI version (1.3 by default on Linux 7.3), a version no kernel has, a service
    // bitmap emptied, a bit no kernel offers.
    check_eq!(
        get_reg(g.vcpu, k::KVM_REG_ARM_PSCI_VERSION),
        Ok(k::PSCI_VERSION_1_3 as u128)
    );
    check_eq!(
        set_reg(g.vcpu, k::KVM_REG_ARM_PSCI_VERSION, 0x1_0009),
        Err(EINVAL)
    );
    let vendor = k::fw_feat_bmap_reg(2);
    t!(set_reg(g.vcpu, vendor, 0));
    check_eq!(get_reg(g.vcpu, vendor), Ok(0));
    check_eq!(set_reg(g.vcpu, vendor, 1 << 63), Err(EINVAL));
    let mut dev = k::KvmCreateDevice {
        ty: 0x7fff,
        ..Default::default()
    };
    check_eq!(
        ioctl(g.vm, k::KVM_CREATE_DEVICE, &mut dev as *mut _ as usize),
        Err(ENODEV)
    );

    let (addr, data, _, write) = t!(g.run_to_mmio());
    check_eq!((addr, write), (0x1000_0000, true));
    check_eq!(data, lowered, "the guest's ID_AA64ISAR0_EL1");
    // Once the VM has run: the same value is fine, any other is EBUSY.
    t!(set_reg(g.vcpu, ISAR0, lowered as u128));
    check_eq!(set_reg(g.vcpu, ISAR0, isar0 as u128), Err(EBUSY));
    check_eq!(set_reg(g.vcpu, vendor, 0), Ok(0));

    // SYSTEM_OFF2: a shutdown event flagged PSCI_OFF2, x0 INTERNAL_FAILURE if run again.
    t!(g.run());
    check_eq!(g.exit_reason(), k::KVM_EXIT_SYSTEM_EVENT);
    check_eq!(
        g.run_u32(k::run::SYSTEM_EVENT_TYPE),
        k::KVM_SYSTEM_EVENT_SHUTDOWN
    );
    check_eq!(
        g.run_u64(k::run::SYSTEM_EVENT_DATA) & k::KVM_SYSTEM_EVENT_SHUTDOWN_FLAG_PSCI_OFF2,
        k::KVM_SYSTEM_EVENT_SHUTDOWN_FLAG_PSCI_OFF2
    );
    check_eq!(
        get_reg(g.vcpu, x(0)),
        Ok(k::PSCI_RET_INTERNAL_FAILURE as u64 as u128)
    );
    let runnable: u32 = k::KVM_MP_STATE_RUNNABLE;
    t!(ioctl(
        g.vcpu,
        k::KVM_SET_MP_STATE,
        &runnable as *const u32 as usize
    ));
    let (_, data, _, _) = t!(g.run_to_mmio());
    check_eq!(data, k::PSCI_RET_INVALID_PARAMS as u64, "a non-zero cookie");
    Ok(())
}

/// KVM_SET_DEVICE_ATTR(KVM_ARM_VM_SMCCC_FILTER) on `vm`.
fn set_filter(vm: i32, base: u32, nr_functions: u32, action: u8) -> SysResult {
    let f = k::KvmSmcccFilter {
        base,
        nr_functions,
        action,
        pad: [0; 15],
    };
    filter_attr(vm, k::KVM_SET_DEVICE_ATTR, 0, &f as *const _ as u64)
}

fn filter_attr(vm: i32, cmd: u32, attr: u64, addr: u64) -> SysResult {
    let a = k::KvmDeviceAttr {
        flags: 0,
        group: k::KVM_ARM_VM_SMCCC_CTRL,
        attr,
        addr,
    };
    ioctl(vm, cmd, &a as *const _ as usize)
}

const DENY: u8 = k::SmcccAction::Deny as u8;
const FWD: u8 = k::SmcccAction::FwdToUser as u8;
const PSCI_VERSION: u32 = k::PSCI_0_2_FN_PSCI_VERSION;
const CPU_ON64: u32 = k::PSCI_0_2_FN64_CPU_ON;

/// The SMCCC filter: its argument checks, then a guest whose PSCI_VERSION calls (HVC and SMC)
/// go to the VMM as KVM_EXIT_HYPERCALL and whose CPU_ON is denied.
fn smccc_filter() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_filtered, guest_filtered_end)));
    check_eq!(filter_attr(g.vm, k::KVM_HAS_DEVICE_ATTR, 0, 0), Ok(0));
    check_eq!(filter_attr(g.vm, k::KVM_HAS_DEVICE_ATTR, 1, 0), Err(ENXIO));
    // The first range on a fresh VM already meets the reserved architecture calls.
    check_eq!(set_filter(g.vm, 0x8000_8000, 1, DENY), Err(EEXIST));
    check_eq!(set_filter(g.vm, 0xbfff_ffff, 2, DENY), Err(EEXIST));
    check_eq!(set_filter(g.vm, 0xc000_ffff, 1, FWD), Err(EEXIST));
    // Malformed ranges.
    check_eq!(set_filter(g.vm, CPU_ON64, 0, DENY), Err(EINVAL));
    check_eq!(set_filter(g.vm, !0, !0, DENY), Err(EINVAL));
    check_eq!(set_filter(g.vm, 0xffff_fff0, 0x11, DENY), Err(EINVAL));
    check_eq!(set_filter(g.vm, CPU_ON64, 1, 3), Err(EINVAL));
    let padded = k::KvmSmcccFilter {
        base: CPU_ON64,
        nr_functions: 1,
        action: DENY,
        pad: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    };
    let padded_addr = &padded as *const _ as u64;
    check_eq!(
        filter_attr(g.vm, k::KVM_SET_DEVICE_ATTR, 0, padded_addr),
        Err(EINVAL)
    );
    check_eq!(filter_attr(g.vm, k::KVM_SET_DEVICE_ATTR, 0, 8), Err(EFAULT));
    check_eq!(
        filter_attr(g.vm, k::KVM_SET_DEVICE_ATTR, 1, padded_addr),
        Err(ENXIO)
    );
    // The filter can be set, not read.
    check_eq!(
        filter_attr(g.vm, k::KVM_GET_DEVICE_ATTR, 0, padded_addr),
        Err(EINVAL)
    );
    // The last function ID, then the ranges the guest meets; overlaps are refused.
    t!(set_filter(g.vm, 0xffff_ffff, 1, DENY));
    t!(set_filter(g.vm, PSCI_VERSION, 1, FWD));
    t!(set_filter(g.vm, CPU_ON64, 1, DENY));
    check_eq!(set_filter(g.vm, CPU_ON64, 1, DENY), Err(EEXIST));
    check_eq!(set_filter(g.vm, PSCI_VERSION - 4, 5, DENY), Err(EEXIST));
    check_eq!(set_filter(g.vm, CPU_ON64 - 1, 3, FWD), Err(EEXIST));

    // HVC: the VMM sees the function, the PC is past the call, and what the VMM puts in x0
    // is the guest's result.
    t!(g.run());
    check_eq!(g.exit_reason(), k::KVM_EXIT_HYPERCALL, "exit reason (HVC)");
    check_eq!(g.run_u64(k::run::HYPERCALL_NR), PSCI_VERSION as u64);
    check_eq!(g.run_u64(k::run::HYPERCALL_FLAGS), 0, "flags (HVC)");
    check_eq!(get_reg(g.vcpu, CoreReg::Pc.id()), Ok((RAM_IPA + 8) as u128));
    t!(set_reg(g.vcpu, x(0), 0x1234));
    // SMC: the same, flagged; the VMM leaves x0 as the guest had it.
    t!(g.run());
    check_eq!(g.exit_reason(), k::KVM_EXIT_HYPERCALL, "exit reason (SMC)");
    check_eq!(g.run_u64(k::run::HYPERCALL_NR), PSCI_VERSION as u64);
    check_eq!(
        g.run_u64(k::run::HYPERCALL_FLAGS),
        k::KVM_HYPERCALL_EXIT_SMC,
        "flags (SMC)"
    );
    check_eq!(
        get_reg(g.vcpu, CoreReg::Pc.id()),
        Ok((RAM_IPA + 20) as u128)
    );
    // CPU_ON is denied without leaving the kernel: NOT_SUPPORTED, x1 cleared.
    let (addr, data, _, write) = t!(g.run_to_mmio());
    check_eq!((addr, data, write), (MMIO, 0x1234, true));
    check_eq!(get_reg(g.vcpu, x(10)), Ok(0x1234));
    check_eq!(get_reg(g.vcpu, x(11)), Ok(PSCI_VERSION as u128));
    check_eq!(
        get_reg(g.vcpu, x(12)),
        Ok(u64::MAX as u128),
        "denied CPU_ON"
    );
    check_eq!(get_reg(g.vcpu, x(13)), Ok(0), "x1 after a denied call");
    // Fixed once a vCPU has run; malformed ranges are still EINVAL first.
    check_eq!(set_filter(g.vm, 0xc600_0000, 1, DENY), Err(EBUSY));
    check_eq!(set_filter(g.vm, 0xc600_0000, 0, DENY), Err(EINVAL));
    check_eq!(filter_attr(g.vm, k::KVM_HAS_DEVICE_ATTR, 0, 0), Ok(0));
    Ok(())
}

/// A statistics file's header, id string and named descriptors.
struct StatsFile {
    fd: i32,
    header: ks::KvmStatsHeader,
    id: String,
    descs: Vec<(String, ks::KvmStatsDesc)>,
}

impl StatsFile {
    fn open(fd: i32) -> Result<StatsFile, String> {
        let mut h = [0u8; 24];
        check_eq!(sys::pread(fd, &mut h, 0), Ok(24));
        let header = ks::KvmStatsHeader {
            flags: u32_at(&h, 0),
            name_size: u32_at(&h, 4),
            num_desc: u32_at(&h, 8),
            id_offset: u32_at(&h, 12),
            desc_offset: u32_at(&h, 16),
            data_offset: u32_at(&h, 20),
        };
        let name_size = header.name_size as usize;
        let mut id = vec![0u8; name_size];
        check_eq!(
            sys::pread(fd, &mut id, header.id_offset as u64),
            Ok(name_size)
        );
        let desc_size = 16 + name_size;
        let mut all = vec![0u8; desc_size * header.num_desc as usize];
        check_eq!(
            sys::pread(fd, &mut all, header.desc_offset as u64),
            Ok(all.len())
        );
        let descs = all
            .chunks(desc_size)
            .map(|d| {
                let desc = ks::KvmStatsDesc {
                    flags: u32_at(d, 0),
                    exponent: i16::from_le_bytes([d[4], d[5]]),
                    size: u16::from_le_bytes([d[6], d[7]]),
                    offset: u32_at(d, 8),
                    bucket_size: u32_at(d, 12),
                };
                (cstr(&d[16..]), desc)
            })
            .collect();
        Ok(StatsFile {
            fd,
            header,
            id: cstr(&id),
            descs,
        })
    }

    fn desc(&self, name: &str) -> Result<ks::KvmStatsDesc, String> {
        self.descs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| *d)
            .ok_or(format!("no statistic {name} in {}", self.id))
    }

    /// The first value of statistic `name`.
    fn value(&self, name: &str) -> Result<u64, String> {
        let d = self.desc(name)?;
        let mut b = [0u8; 8];
        let at = self.header.data_offset as u64 + d.offset as u64;
        check_eq!(sys::pread(self.fd, &mut b, at), Ok(8), "{name}");
        Ok(u64::from_le_bytes(b))
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// KVM_GET_STATS_FD: a VM's and a vCPU's statistics files, their layout and Linux's names, a
/// vCPU's exit counters growing as its guest runs, and the files outliving the VM's.
fn binary_stats() -> TestResult {
    let kvm = kvm!();
    check_eq!(
        ioctl(
            kvm,
            k::KVM_CHECK_EXTENSION,
            k::KVM_CAP_BINARY_STATS_FD as usize
        ),
        Ok(1)
    );
    let g = t!(Guest::new(kvm, code!(guest_psci, guest_psci_end)));
    let vm_fd = t!(ioctl(g.vm, k::KVM_GET_STATS_FD, 0)) as i32;
    let vcpu_fd = t!(ioctl(g.vcpu, k::KVM_GET_STATS_FD, 0)) as i32;
    check_eq!(sys::fcntl(vm_fd, F_GETFD, 0), Ok(FD_CLOEXEC));
    check_eq!(
        sys::fcntl(vcpu_fd, F_GETFL, 0).map(|f| f as u32 & O_ACCMODE),
        Ok(O_RDONLY)
    );
    let mut link = [0u8; 64];
    let n = t!(sys::readlinkat(
        AT_FDCWD,
        &format!("/proc/self/fd/{vm_fd}"),
        &mut link
    ));
    check_eq!(&link[..n], b"anon_inode:kvm-vm-stats");
    let n = t!(sys::readlinkat(
        AT_FDCWD,
        &format!("/proc/self/fd/{vcpu_fd}"),
        &mut link
    ));
    check_eq!(&link[..n], b"anon_inode:kvm-vcpu-stats:0");
    let tid = sys::gettid();
    let vm = t!(StatsFile::open(vm_fd));
    let vcpu = t!(StatsFile::open(vcpu_fd));
    check_eq!(vm.id, format!("kvm-{tid}"));
    check_eq!(vcpu.id, format!("kvm-{tid}/vcpu-0"));
    for f in [&vm, &vcpu] {
        let h = f.header;
        check_eq!((h.flags, h.name_size), (0, 48), "{}", f.id);
        check_eq!((h.id_offset, h.desc_offset), (24, 72), "{}", f.id);
        check_eq!(h.data_offset, 72 + h.num_desc * 64, "{}", f.id);
        // Every descriptor as kvm_binary_stats_test wants it: known kinds, exponents that fit
        // the unit, a bucket size only for linear histograms, values in the data block.
        for (name, d) in &f.descs {
            let (ty, unit) = (
                d.flags & ks::KVM_STATS_TYPE_MASK,
                d.flags & ks::KVM_STATS_UNIT_MASK,
            );
            check!(ty <= ks::KVM_STATS_TYPE_LOG_HIST, "{name}: type {ty}");
            check!(unit <= ks::KVM_STATS_UNIT_BOOLEAN, "{name}: unit {unit}");
            check!(
                d.flags & ks::KVM_STATS_BASE_MASK <= ks::KVM_STATS_BASE_POW2,
                "{name}"
            );
            check!(d.size > 0, "{name}: size 0");
            check_eq!(
                d.bucket_size != 0,
                ty == ks::KVM_STATS_TYPE_LINEAR_HIST,
                "{name}"
            );
            check!(name.len() < 48, "{name}");
        }
    }
    check_eq!(vm.desc("remote_tlb_flush")?.flags, 0, "a counter");
    let exits = vcpu.desc("exits")?;
    check_eq!(
        (exits.flags, exits.exponent, exits.size),
        (0, 0, 1),
        "exits"
    );
    let hist = vcpu.desc("halt_wait_hist")?;
    check_eq!(
        (hist.flags, hist.exponent, hist.size),
        (
            ks::KVM_STATS_TYPE_LOG_HIST | ks::KVM_STATS_UNIT_SECONDS,
            -9,
            32
        ),
        "halt_wait_hist"
    );
    let blocking = vcpu.desc("blocking")?;
    check_eq!(
        blocking.flags,
        ks::KVM_STATS_TYPE_INSTANT | ks::KVM_STATS_UNIT_BOOLEAN
    );
    // Read-only, read in order from the file position too, nothing past the end.
    check_eq!(sys::write(vcpu_fd, &[0u8; 8]), Err(EBADF));
    let mut b = [0u8; 24];
    check_eq!(sys::read(vm_fd, &mut b), Ok(24));
    check_eq!(u32_at(&b, 8), vm.header.num_desc);
    check_eq!(sys::read(vm_fd, &mut b[..4]), Ok(4));
    check_eq!(&b[..4], b"kvm-");
    let end = vm.header.data_offset as u64 + 8 * vm.descs.len() as u64;
    check_eq!(sys::pread(vm_fd, &mut b, end), Ok(0));
    check_eq!(sys::pread(vm_fd, &mut b, end - 3), Ok(3));

    // The guest makes three HVCs, an SMC and an MMIO store.
    check_eq!(vcpu.value("exits"), Ok(0));
    check_eq!(vcpu.value("hvc_exit_stat"), Ok(0));
    t!(g.run_to_mmio());
    check_eq!(vcpu.value("hvc_exit_stat"), Ok(3));
    check_eq!(vcpu.value("mmio_exit_user"), Ok(1));
    let first = t!(vcpu.value("exits"));
    check!(first >= 5, "exits {first}");
    // Once more from the start.
    t!(set_reg(g.vcpu, CoreReg::Pc.id(), RAM_IPA as u128));
    t!(g.run_to_mmio());
    check_eq!(vcpu.value("hvc_exit_stat"), Ok(6));
    check_eq!(vcpu.value("mmio_exit_user"), Ok(2));
    let second = t!(vcpu.value("exits"));
    check!(second > first, "exits {first} then {second}");
    check_eq!(vcpu.value("blocking"), Ok(0));
    // The files outlive the VM's and vCPU's own descriptors.
    drop(g);
    check_eq!(vcpu.value("exits"), Ok(second));
    check_eq!(vcpu.value("mmio_exit_user"), Ok(2));
    t!(vm.value("remote_tlb_flush"));
    println!(
        "    # {} vCPU exits, {} statistics per vCPU",
        second,
        vcpu.descs.len()
    );
    t!(sys::close(vm_fd));
    t!(sys::close(vcpu_fd));
    Ok(())
}

fn get_events(vcpu: i32) -> SysResult<k::KvmVcpuEvents> {
    let mut e = k::KvmVcpuEvents::default();
    ioctl(vcpu, k::KVM_GET_VCPU_EVENTS, &mut e as *mut _ as usize)?;
    Ok(e)
}

fn set_events(vcpu: i32, e: &k::KvmVcpuEvents) -> SysResult {
    ioctl(vcpu, k::KVM_SET_VCPU_EVENTS, e as *const _ as usize)
}

/// An SError the VMM injects: pending while the guest masks SErrors (ISR_EL1.A shows it, GET
/// reports it with its syndrome where FEAT_RAS gives one), taken when the guest unmasks them
/// (after which it is no longer pending), taken at once when they are unmasked already; an
/// external data abort on an MMIO load the VMM was answering (the load is abandoned, the guest
/// takes the abort at its PC with the address in FAR_EL1). Linux's errors on the way.
fn vcpu_events() -> TestResult {
    let kvm = kvm!();
    let code = code!(guest_events, guest_events_end);
    let g = t!(Guest::new(kvm, code));
    let vbar = RAM_IPA + 0x800;
    for cap in [k::KVM_CAP_VCPU_EVENTS, k::KVM_CAP_ARM_INJECT_EXT_DABT] {
        check_eq!(
            ioctl(g.vm, k::KVM_CHECK_EXTENSION, cap as usize),
            Ok(1),
            "cap {cap}"
        );
    }
    let ras = t!(ioctl(
        g.vm,
        k::KVM_CHECK_EXTENSION,
        k::KVM_CAP_ARM_INJECT_SERROR_ESR as usize
    )) != 0;
    println!("    # SError syndromes (FEAT_RAS): {ras}");
    // Not before KVM_ARM_VCPU_INIT.
    let raw = t!(ioctl(g.vm, k::KVM_CREATE_VCPU, 1)) as i32;
    check_eq!(get_events(raw), Err(ENOEXEC));
    t!(sys::close(raw));
    check_eq!(g.run_to_mmio(), Ok((MMIO, 0, 8, true)));
    let none = k::KvmVcpuEvents {
        serror_has_esr: ras as u8,
        ..Default::default()
    };
    check_eq!(get_events(g.vcpu), Ok(none));
    // Padding, reserved words, a syndrome beyond ESR's ISS field.
    let serror = k::KvmVcpuEvents {
        serror_pending: 1,
        serror_has_esr: ras as u8,
        serror_esr: if ras { 0x1_d1ed } else { 0 },
        ..Default::default()
    };
    let mut bad = serror;
    bad.pad[2] = 1;
    check_eq!(set_events(g.vcpu, &bad), Err(EINVAL));
    bad = serror;
    bad.reserved[5] = 1;
    check_eq!(set_events(g.vcpu, &bad), Err(EINVAL));
    bad = serror;
    bad.serror_has_esr = 1;
    bad.serror_esr = 1 << 25;
    check_eq!(set_events(g.vcpu, &bad), Err(EINVAL));
    check_eq!(get_events(g.vcpu), Ok(none), "nothing made pending");
    // The guest starts with SErrors masked: the SError waits.
    t!(set_events(g.vcpu, &serror));
    check_eq!(get_events(g.vcpu), Ok(serror));
    let (addr, isr, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 8);
    check!(isr & (1 << 8) != 0, "ISR_EL1 {isr:#x}: no SError pending");
    check_eq!(get_events(g.vcpu), Ok(serror), "still pending");
    // Unmasked: taken; the CPU cleared the pending state.
    let (addr, esr, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 0x20);
    check_eq!(esr >> 26, 0x2f, "SError's ESR_EL1 {esr:#x}");
    if ras {
        check_eq!(esr & k::ESR_ISS_MASK, 0x1_d1ed, "ESR_EL1 {esr:#x}");
    }
    check_eq!(get_events(g.vcpu), Ok(none), "taken");
    let (addr, elr, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 0x28);
    check!(
        (RAM_IPA..RAM_IPA + 0x40).contains(&elr),
        "SError taken at {elr:#x}"
    );
    // An external abort on the MMIO load: not completed, the abort taken at the load.
    t!(set_reg(g.vcpu, x(4), 0x77));
    let (addr, _, len, write) = t!(g.run_to_mmio());
    check_eq!((addr, len, write), (MMIO + 0x30, 8, false));
    g.set_run_u64(k::run::MMIO_DATA, 0x5555);
    let dabt = k::KvmVcpuEvents {
        ext_dabt_pending: 1,
        ..Default::default()
    };
    t!(set_events(g.vcpu, &dabt));
    check_eq!(
        get_reg(g.vcpu, CoreReg::Pc.id()),
        Ok((vbar + 0x200) as u128)
    );
    check_eq!(get_events(g.vcpu), Ok(none), "an abort is never pending");
    check_eq!(g.run_to_mmio(), Ok((MMIO + 0x10, 0x9600_0010, 8, true)));
    check_eq!(g.run_to_mmio(), Ok((MMIO + 0x18, MMIO + 0x30, 8, true)));
    check_eq!(
        g.run_to_mmio(),
        Ok((MMIO + 0x28, vbar + 0x380 + 16, 8, true))
    );
    check_eq!(get_reg(g.vcpu, x(4)), Ok(0x77), "the load was abandoned");
    // SErrors unmasked: an SError is taken at once, at the store the VMM was answering.
    check_eq!(g.run_to_mmio(), Ok((MMIO + 0x38, 0, 8, true)));
    t!(set_events(g.vcpu, &serror));
    check_eq!(
        get_reg(g.vcpu, CoreReg::Pc.id()),
        Ok((vbar + 0x380) as u128)
    );
    check_eq!(get_events(g.vcpu), Ok(none), "taken, not pending");
    let iss = if ras { 0x1_d1ed } else { k::ESR_SERROR_IDS };
    check_eq!(
        g.run_to_mmio(),
        Ok((MMIO + 0x20, (0x2f << 26) | (1 << 25) | iss, 8, true))
    );
    check_eq!(g.run_to_mmio(), Ok((MMIO + 0x28, vbar + 0x21c, 8, true)));
    Ok(())
}

fn dev_attr(fd: i32, cmd: u32, group: u32, attr: u64, addr: usize) -> SysResult {
    let a = k::KvmDeviceAttr {
        flags: 0,
        group,
        attr,
        addr: addr as u64,
    };
    ioctl(fd, cmd, &a as *const _ as usize)
}

fn set_u64(fd: i32, group: u32, attr: u64, v: u64) -> SysResult {
    dev_attr(
        fd,
        k::KVM_SET_DEVICE_ATTR,
        group,
        attr,
        &v as *const u64 as usize,
    )
}

fn get_u64(fd: i32, group: u32, attr: u64, v: u64) -> SysResult<u64> {
    let mut v = v;
    dev_attr(
        fd,
        k::KVM_GET_DEVICE_ATTR,
        group,
        attr,
        &mut v as *mut u64 as usize,
    )?;
    Ok(v)
}

fn get_u32(fd: i32, group: u32, attr: u64) -> SysResult<u32> {
    let mut v = 0u32;
    dev_attr(
        fd,
        k::KVM_GET_DEVICE_ATTR,
        group,
        attr,
        &mut v as *mut u32 as usize,
    )?;
    Ok(v)
}

/// The vGICv3 device's configuration: one per VM; the distributor's address, a redistributor
/// region and the interrupt count with Linux's checks; the first KVM_RUN refused until the
/// VMM initialised the device; GICR_TYPER of the vCPU's redistributor; no vCPUs after the
/// initialisation.
fn vgic_config() -> TestResult {
    use svelt_abi::uapi::kvm_vgic as v;
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_idregs, guest_idregs_end)));
    let mut d = k::KvmCreateDevice {
        ty: v::KVM_DEV_TYPE_ARM_VGIC_V3,
        fd: 0,
        flags: k::KVM_CREATE_DEVICE_TEST,
    };
    check_eq!(
        ioctl(g.vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize),
        Ok(0)
    );
    d.flags = 0;
    t!(ioctl(g.vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize));
    let gic = d.fd as i32;
    check!(gic > 2, "device fd {gic}");
    check_eq!(
        ioctl(g.vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize),
        Err(EEXIST)
    );
    let (addr, nr, ctrl, redist) = (
        v::KVM_DEV_ARM_VGIC_GRP_ADDR,
        v::KVM_DEV_ARM_VGIC_GRP_NR_IRQS,
        v::KVM_DEV_ARM_VGIC_GRP_CTRL,
        v::KVM_DEV_ARM_VGIC_GRP_REDIST_REGS,
    );
    let has = |group, attr| dev_attr(gic, k::KVM_HAS_DEVICE_ATTR, group, attr, 0);
    check_eq!(has(addr, v::KVM_VGIC_V3_ADDR_TYPE_DIST), Ok(0));
    check_eq!(has(addr, v::KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION), Ok(0));
    check_eq!(has(addr, 0xff), Err(ENXIO));
    check_eq!(has(ctrl, v::KVM_DEV_ARM_VGIC_CTRL_INIT), Ok(0));
    // The interrupt count: 64..992 in steps of 32, once.
    let set_nr = |n: u32| {
        dev_attr(
            gic,
            k::KVM_SET_DEVICE_ATTR,
            nr,
            0,
            &n as *const u32 as usize,
        )
    };
    check_eq!(set_nr(48), Err(EINVAL));
    check_eq!(set_nr(100), Err(EINVAL));
    check_eq!(set_nr(96), Ok(0));
    check_eq!(get_u32(gic, nr, 0), Ok(96));
    check_eq!(set_nr(128), Err(EBUSY));
    // The distributor: 64K-aligned, inside the 40-bit IPA space, once.
    let dist = v::KVM_VGIC_V3_ADDR_TYPE_DIST;
    check_eq!(set_u64(gic, addr, dist, 0x800_1000), Err(EINVAL));
    check_eq!(set_u64(gic, addr, dist, 1 << 40), Err(E2BIG));
    check_eq!(set_u64(gic, addr, dist, 0x800_0000), Ok(0));
    check_eq!(get_u64(gic, addr, dist, 0), Ok(0x800_0000));
    check_eq!(set_u64(gic, addr, dist, 0x900_0000), Err(EEXIST));
    // A region of one redistributor (count 1 at 0x80a0000, index 0).
    let region = v::KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION;
    let one = (1u64 << 52) | 0x80a_0000;
    check_eq!(get_u64(gic, addr, region, 0), Err(ENOENT));
    check_eq!(
        set_u64(gic, addr, region, 0x80a_0000),
        Err(EINVAL),
        "count 0"
    );
    check_eq!(
        set_u64(gic, addr, region, one | 1),
        Err(EINVAL),
        "index 1 first"
    );
    // vCPU 0 would take a redistributor whose frames collide with the distributor's.
    check_eq!(
        set_u64(gic, addr, region, (1 << 52) | 0x800_0000),
        Err(EINVAL)
    );
    check_eq!(set_u64(gic, addr, region, one), Ok(0));
    check_eq!(get_u64(gic, addr, region, 0), Ok(one));
    // GICR_TYPER: the vCPU by affinity (none has Aff0 5), once initialised.
    check_eq!(get_u32(gic, redist, (5 << 32) | v::GICR_TYPER), Err(EINVAL));
    check_eq!(get_u32(gic, redist, v::GICR_TYPER), Err(EBUSY));
    t!(init_vgic(gic));
    // Processor 0, the last of its region.
    check_eq!(get_u32(gic, redist, v::GICR_TYPER), Ok(0x10));
    check_eq!(get_u32(gic, redist, v::GICR_TYPER + 4), Ok(0));
    check_eq!(ioctl(g.vm, k::KVM_CREATE_VCPU, 1), Err(EBUSY));
    t!(sys::close(gic));
    Ok(())
}

/// GRP_LEVEL_INFO names the vCPU by its affinity (bits 63:32) beside the kind of information
/// (bits 31:10) and the first INTID (bits 9:0): every vCPU's, not only vCPU 0's, answers.
fn vgic_level_info() -> TestResult {
    use svelt_abi::uapi::kvm_vgic as v;
    let kvm = kvm!();
    let (g, gic) = t!(vgic_guest(kvm));
    let vcpu1 = t!(ioctl(g.vm, k::KVM_CREATE_VCPU, 1)) as i32;
    let mut init = KvmVcpuInit::default();
    t!(ioctl(
        g.vm,
        k::KVM_ARM_PREFERRED_TARGET,
        &mut init as *mut _ as usize
    ));
    init.features[0] |= 1 << k::KVM_ARM_VCPU_PSCI_0_2;
    t!(ioctl(
        vcpu1,
        k::KVM_ARM_VCPU_INIT,
        &init as *const _ as usize
    ));
    t!(place_vgic(
        gic,
        v::KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION,
        (2u64 << 52) | 0x80a_0000
    ));
    t!(init_vgic(gic));
    let level = v::KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO;
    check_eq!(get_u32(gic, level, 32), Ok(0), "vCPU 0, INTIDs 32..63");
    check_eq!(get_u32(gic, level, (1 << 32) | 32), Ok(0), "vCPU 1");
    check_eq!(get_u32(gic, level, (1 << 32) | (1 << 10) | 32), Err(EINVAL));
    check_eq!(
        get_u32(gic, level, (2 << 32) | 32),
        Err(EINVAL),
        "no vCPU 2"
    );
    let _ = sys::close(vcpu1);
    t!(sys::close(gic));
    Ok(())
}

/// What Debian's QEMU does with its vCPUs and its vGICv3 beyond the rest: KVM_CAP_MP_STATE is
/// offered (without it QEMU leaves its secondary vCPUs running and the guest's PSCI CPU_ON
/// finds them already on); KVM_SET_MP_STATE takes RUNNABLE and STOPPED (EINVAL for a state
/// arm64 does not have) and KVM_GET_MP_STATE reads them back; the vGICv3's
/// SAVE_PENDING_TABLES control (QEMU's save when its VM stops) is there, ENXIO before the
/// initialisation and done after it.
fn qemu_mp_state_and_pending_tables() -> TestResult {
    use svelt_abi::uapi::kvm_vgic as v;
    let kvm = kvm!();
    check_eq!(
        ioctl(kvm, k::KVM_CHECK_EXTENSION, k::KVM_CAP_MP_STATE as usize),
        Ok(1)
    );
    let (g, gic) = t!(vgic_guest(kvm));
    let get = || -> SysResult<u32> {
        let mut mp = 0u32;
        ioctl(g.vcpu, k::KVM_GET_MP_STATE, &mut mp as *mut u32 as usize)?;
        Ok(mp)
    };
    let set = |mp: u32| ioctl(g.vcpu, k::KVM_SET_MP_STATE, &mp as *const u32 as usize);
    check_eq!(
        get(),
        Ok(k::KVM_MP_STATE_RUNNABLE),
        "after KVM_ARM_VCPU_INIT"
    );
    t!(set(k::KVM_MP_STATE_STOPPED));
    check_eq!(get(), Ok(k::KVM_MP_STATE_STOPPED));
    // KVM_MP_STATE_UNINITIALIZED and HALTED are x86's.
    check_eq!(set(1), Err(EINVAL));
    check_eq!(set(3), Err(EINVAL));
    check_eq!(
        get(),
        Ok(k::KVM_MP_STATE_STOPPED),
        "a refused state changes nothing"
    );
    t!(set(k::KVM_MP_STATE_RUNNABLE));
    check_eq!(get(), Ok(k::KVM_MP_STATE_RUNNABLE));
    let ctrl = v::KVM_DEV_ARM_VGIC_GRP_CTRL;
    let save = v::KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES;
    check_eq!(dev_attr(gic, k::KVM_HAS_DEVICE_ATTR, ctrl, save, 0), Ok(0));
    check_eq!(
        dev_attr(gic, k::KVM_SET_DEVICE_ATTR, ctrl, save, 0),
        Err(ENXIO),
        "before INIT"
    );
    t!(place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000));
    t!(init_vgic(gic));
    check_eq!(dev_attr(gic, k::KVM_SET_DEVICE_ATTR, ctrl, save, 0), Ok(0));
    t!(sys::close(gic));
    Ok(())
}

/// Places the vGIC `gic`'s distributor at 0x800_0000 and its redistributors as `kind`
/// (KVM_VGIC_V3_ADDR_TYPE_REDIST or _REDIST_REGION) says with `value`.
fn place_vgic(gic: i32, kind: u64, value: u64) -> SysResult {
    use svelt_abi::uapi::kvm_vgic as v;
    let addr = v::KVM_DEV_ARM_VGIC_GRP_ADDR;
    set_u64(gic, addr, v::KVM_VGIC_V3_ADDR_TYPE_DIST, 0x800_0000)?;
    set_u64(gic, addr, kind, value)
}

/// KVM_DEV_ARM_VGIC_CTRL_INIT on the vGIC `gic`.
fn init_vgic(gic: i32) -> SysResult {
    use svelt_abi::uapi::kvm_vgic as v;
    dev_attr(
        gic,
        k::KVM_SET_DEVICE_ATTR,
        v::KVM_DEV_ARM_VGIC_GRP_CTRL,
        v::KVM_DEV_ARM_VGIC_CTRL_INIT,
        0,
    )
}

/// A VM with a vGICv3 and one vCPU, and the device's descriptor.
fn vgic_guest(kvm: i32) -> Result<(Guest, i32), String> {
    let g = t!(Guest::new(kvm, code!(guest_idregs, guest_idregs_end)));
    let mut d = k::KvmCreateDevice {
        ty: svelt_abi::uapi::kvm_vgic::KVM_DEV_TYPE_ARM_VGIC_V3,
        fd: 0,
        flags: 0,
    };
    t!(ioctl(g.vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize));
    Ok((g, d.fd as i32))
}

/// The first KVM_RUN of a VM with a vGICv3: ENXIO while a vCPU has no redistributor, EBUSY
/// before the initialisation, and either kills the VM (its, its vCPUs' and its device's ioctls
/// are EIO); placed and initialised, the guest runs.
fn vgic_first_run() -> TestResult {
    use svelt_abi::uapi::kvm_vgic as v;
    let addr = v::KVM_DEV_ARM_VGIC_GRP_ADDR;
    let init = |gic| {
        dev_attr(
            gic,
            k::KVM_SET_DEVICE_ATTR,
            v::KVM_DEV_ARM_VGIC_GRP_CTRL,
            v::KVM_DEV_ARM_VGIC_CTRL_INIT,
            0,
        )
    };
    // The distributor and the legacy redistributor region at QEMU virt's addresses.
    let place = |gic| {
        set_u64(gic, addr, v::KVM_VGIC_V3_ADDR_TYPE_DIST, 0x800_0000)?;
        set_u64(gic, addr, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000)
    };
    let dead = |g: &Guest, gic| -> TestResult {
        check_eq!(ioctl(g.vm, k::KVM_CHECK_EXTENSION, 0), Err(EIO), "VM");
        check_eq!(get_reg(g.vcpu, CoreReg::Pc.id()), Err(EIO), "vCPU");
        check_eq!(
            get_u32(gic, v::KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0),
            Err(EIO),
            "device"
        );
        Ok(())
    };
    // Initialised, not placed.
    let kvm = kvm!();
    let (g, gic) = t!(vgic_guest(kvm));
    t!(init(gic));
    check_eq!(g.run(), Err(ENXIO));
    dead(&g, gic)?;
    t!(sys::close(gic));
    drop(g);
    // Placed (the legacy region), not initialised.
    let kvm = kvm!();
    let (g, gic) = t!(vgic_guest(kvm));
    t!(place(gic));
    check_eq!(
        get_u64(gic, addr, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0),
        Ok(0x80a_0000)
    );
    check_eq!(g.run(), Err(EBUSY));
    dead(&g, gic)?;
    t!(sys::close(gic));
    drop(g);
    // Both: the guest runs (256 interrupts when NR_IRQS was not set).
    let kvm = kvm!();
    let (g, gic) = t!(vgic_guest(kvm));
    t!(place(gic));
    t!(init(gic));
    check_eq!(get_u32(gic, v::KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0), Ok(256));
    let (a, _, _, write) = t!(g.run_to_mmio());
    check_eq!((a, write), (MMIO, true));
    t!(sys::close(gic));
    Ok(())
}

/// The vGICv3's CPU interface registers as QEMU saves and restores them
/// (KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS): EINVAL for a vCPU no affinity names, EBUSY before the
/// initialisation, ENXIO (has) or ENOENT (get) for a register that is not one of them; what a
/// VMM writes to ICC_PMR_EL1, ICC_IGRPEN1_EL1 and ICC_CTLR_EL1's EOImode reads back, SRE
/// reads 7 and must stay set, and ICC_CTLR_EL1 may not claim more priority bits than it
/// reports.
fn vgic_cpu_sysregs() -> TestResult {
    use svelt_abi::uapi::kvm_vgic as v;
    use svelt_abi::uapi::kvm_vgic_sysregs as r;
    let grp = v::KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS;
    let kvm = kvm!();
    let (_g, gic) = t!(vgic_guest(kvm));
    let reg = |x: u16| x as u64;
    let has = |attr| dev_attr(gic, k::KVM_HAS_DEVICE_ATTR, grp, attr, 0);
    check_eq!(has(reg(r::ICC_CTLR_EL1)), Ok(0));
    check_eq!(has(reg(r::ICC_AP1R0_EL1)), Ok(0));
    check_eq!(has(0xc000), Err(ENXIO));
    check_eq!(has((5 << 32) | reg(r::ICC_CTLR_EL1)), Err(EINVAL));
    check_eq!(get_u64(gic, grp, reg(r::ICC_PMR_EL1), 0), Err(EBUSY));
    t!(place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000));
    t!(init_vgic(gic));
    check_eq!(get_u64(gic, grp, 0xc000, 0), Err(ENOENT));
    check_eq!(
        get_u64(gic, grp, (5 << 32) | reg(r::ICC_PMR_EL1), 0),
        Err(EINVAL)
    );
    check_eq!(get_u64(gic, grp, reg(r::ICC_SRE_EL1), 0), Ok(7));
    check_eq!(set_u64(gic, grp, reg(r::ICC_SRE_EL1), 6), Err(EINVAL));
    t!(set_u64(gic, grp, reg(r::ICC_PMR_EL1), 0xf0));
    check_eq!(get_u64(gic, grp, reg(r::ICC_PMR_EL1), 0), Ok(0xf0));
    t!(set_u64(gic, grp, reg(r::ICC_IGRPEN1_EL1), 1));
    check_eq!(get_u64(gic, grp, reg(r::ICC_IGRPEN1_EL1), 0), Ok(1));
    let ctlr = t!(get_u64(gic, grp, reg(r::ICC_CTLR_EL1), 0));
    t!(set_u64(gic, grp, reg(r::ICC_CTLR_EL1), ctlr | 2));
    check_eq!(get_u64(gic, grp, reg(r::ICC_CTLR_EL1), 0), Ok(ctlr | 2));
    let pri = (ctlr >> 8) & 7;
    if pri < 7 {
        check_eq!(
            set_u64(gic, grp, reg(r::ICC_CTLR_EL1), ctlr + (1 << 8)),
            Err(EINVAL)
        );
    }
    t!(sys::close(gic));
    Ok(())
}

/// KVM_IRQ_LINE into the vGICv3: its errors (ENXIO without a vGIC, EINVAL for a vCPU or a
/// number out of range, EBUSY before the initialisation), then an SPI raised while the guest
/// waits in WFI, which the guest acknowledges through ICC_IAR1_EL1 (INTID 32, active in
/// GICD_ISACTIVER1), ends with ICC_EOIR1_EL1 (no longer active) after the VMM lowered the
/// line, and then finds nothing pending (1023). The guest sees ID_AA64PFR0_EL1.GIC = 1.
fn vgic_spi() -> TestResult {
    use svelt_abi::uapi::kvm_vgic as v;
    let line = |vm: i32, irq: u32, level: u32| {
        let l = [irq, level];
        ioctl(vm, v::KVM_IRQ_LINE, l.as_ptr() as usize)
    };
    let spi = |n: u32| (1 << 24) | n;
    let ppi = |vcpu: u32, n: u32| (2 << 24) | (vcpu << 16) | n;
    // No vGIC: ENXIO.
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_spi, guest_spi_end)));
    check_eq!(line(g.vm, spi(32), 1), Err(ENXIO), "no vGIC");
    drop(g);
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_spi, guest_spi_end)));
    let mut d = k::KvmCreateDevice {
        ty: v::KVM_DEV_TYPE_ARM_VGIC_V3,
        fd: 0,
        flags: 0,
    };
    t!(ioctl(g.vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize));
    let gic = d.fd as i32;
    t!(place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000));
    check_eq!(line(g.vm, spi(32), 1), Err(EBUSY), "before INIT");
    t!(dev_attr(
        gic,
        k::KVM_SET_DEVICE_ATTR,
        v::KVM_DEV_ARM_VGIC_GRP_CTRL,
        v::KVM_DEV_ARM_VGIC_CTRL_INIT,
        0,
    ));
    check_eq!(line(g.vm, spi(16), 1), Err(EINVAL), "SPI 16");
    check_eq!(line(g.vm, spi(256), 1), Err(EINVAL), "SPI 256 of 256");
    check_eq!(line(g.vm, ppi(1, 20), 1), Err(EINVAL), "no vCPU 1");
    check_eq!(line(g.vm, ppi(0, 15), 1), Err(EINVAL), "PPI 15");
    check_eq!(line(g.vm, 3 << 24, 1), Err(EINVAL), "type 3");
    check_eq!(line(g.vm, ppi(0, 20), 0), Ok(0), "PPI 20 low");
    let (a, pfr0, _, _) = t!(g.run_to_mmio());
    check_eq!(a, MMIO, "the guest is ready");
    check_eq!((pfr0 >> 24) & 0xf, 1, "GIC in ID_AA64PFR0_EL1 {pfr0:#x}");
    check_eq!(line(g.vm, spi(32), 1), Ok(0), "SPI 32 high");
    check_eq!(t!(g.run_to_mmio()), (MMIO + 8, 32, 8, true), "ICC_IAR1_EL1");
    check_eq!(line(g.vm, spi(32), 0), Ok(0), "SPI 32 low");
    check_eq!(
        t!(g.run_to_mmio()),
        (MMIO + 16, 1, 8, true),
        "GICD_ISACTIVER1 when acknowledged"
    );
    check_eq!(
        t!(g.run_to_mmio()),
        (MMIO + 24, 0, 8, true),
        "GICD_ISACTIVER1 after the EOI"
    );
    check_eq!(
        t!(g.run_to_mmio()),
        (MMIO + 32, 1023, 8, true),
        "nothing left"
    );
    t!(sys::close(gic));
    Ok(())
}

/// /proc/svelt/kvm (None on Linux, or without KVM).
fn svelt_kvm_text() -> Option<String> {
    let text = io::read_file("/proc/svelt/kvm").ok()?;
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// The value of `key` in /proc/svelt/kvm's text.
fn svelt_kvm_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
}

fn everything_given_back() -> TestResult {
    let Some(text) = svelt_kvm_text() else {
        return ktap::skip("no /proc/svelt/kvm (not Svelt, or no KVM)");
    };
    for key in ["vms", "vmids", "stage2_pages", "stage2_tables"] {
        let v = svelt_kvm_field(&text, key).ok_or(format!("no {key} in {text}"))?;
        check_eq!(v, "0", "{key} in {text}");
    }
    println!("    # {}", text.trim_end().replace('\n', ", "));
    Ok(())
}

core::arch::global_asm!(
    ".section .rodata.guests, \"a\"",
    ".balign 4",
    // Reads MIDR_EL1 and CTR_EL0 into MMIO stores, then spins.
    ".global guest_midr, guest_midr_end",
    "guest_midr:",
    "movz x1, #0x1000, lsl #16",
    "mrs x2, midr_el1",
    "str x2, [x1]",
    "mrs x2, ctr_el0",
    "str x2, [x1]",
    "b .",
    "guest_midr_end:",
    // ARCH_FEATURES(PV_TIME_FEATURES), PV_TIME_FEATURES(PV_TIME_ST), PV_TIME_ST, TRNG_VERSION,
    // TRNG_RND64(192), TRNG_RND64(193), PTP(virtual counter), KVM_FEATURES: x0 of each in x10..x17
    // (PTP's lower wall-clock word in x20), then an MMIO store.
    ".global guest_services, guest_services_end",
    "guest_services:",
    "movz x0, #0x8000, lsl #16",
    "add x0, x0, #1",
    "movz x1, #0xc500, lsl #16",
    "add x1, x1, #0x20",
    "hvc #0",
    "mov x10, x0",
    "movz x0, #0xc500, lsl #16",
    "add x0, x0, #0x20",
    "movz x1, #0xc500, lsl #16",
    "add x1, x1, #0x21",
    "hvc #0",
    "mov x11, x0",
    "movz x0, #0xc500, lsl #16",
    "add x0, x0, #0x21",
    "hvc #0",
    "mov x12, x0",
    "movz x0, #0x8400, lsl #16",
    "add x0, x0, #0x50",
    "hvc #0",
    "mov x13, x0",
    "movz x0, #0xc400, lsl #16",
    "add x0, x0, #0x53",
    "mov x1, #192",
    "hvc #0",
    "mov x14, x0",
    "movz x0, #0xc400, lsl #16",
    "add x0, x0, #0x53",
    "mov x1, #193",
    "hvc #0",
    "mov x15, x0",
    "movz x0, #0x8600, lsl #16",
    "add x0, x0, #1",
    "mov x1, #0",
    "hvc #0",
    "mov x16, x0",
    "mov x20, x1",
    "movz x0, #0x8600, lsl #16",
    "hvc #0",
    "mov x17, x0",
    "movz x1, #0x1000, lsl #16",
    "str x10, [x1]",
    "b .",
    "guest_services_end:",
    // Three stores into a coalesced zone (x2, x2 + 1, x2 + 2), one beyond it, then two more into
    // it.
    ".global guest_coalesced, guest_coalesced_end",
    "guest_coalesced:",
    "movz x1, #0x1000, lsl #16",
    "str x2, [x1]",
    "add x2, x2, #1",
    "str x2, [x1]",
    "add x2, x2, #1",
    "str x2, [x1]",
    "str x2, [x1, #0x100]",
    "str x2, [x1]",
    "str x2, [x1]",
    "b .",
    "guest_coalesced_end:",
    ".text",
);

unsafe extern "C" {
    static guest_midr: u8;
    static guest_midr_end: u8;
    static guest_services: u8;
    static guest_services_end: u8;
    static guest_coalesced: u8;
    static guest_coalesced_end: u8;
}

/// The index of op0=3, `op1`, CRn=0, `crm`, `op2` in KVM_ARM_GET_REG_WRITABLE_MASKS' array.
fn mask_idx(op1: usize, crm: usize, op2: usize) -> usize {
    (op1 - (op1 == 3) as usize) << 6 | crm << 3 | op2
}

fn writable_masks(vm: i32, range: u32, reserved0: u32) -> SysResult<[u64; 192]> {
    let mut masks = [0u64; 192];
    let mut r = [0u32; 16];
    r[..2].copy_from_slice(&[
        masks.as_mut_ptr() as u64 as u32,
        (masks.as_mut_ptr() as u64 >> 32) as u32,
    ]);
    r[2] = range;
    r[3] = reserved0;
    ioctl(vm, ki::KVM_ARM_GET_REG_WRITABLE_MASKS, r.as_ptr() as usize)?;
    Ok(masks)
}

fn enable_cap(vm: i32, cap: u64) -> SysResult {
    let mut c = [0u64; 13];
    c[0] = cap;
    ioctl(vm, k::KVM_ENABLE_CAP, c.as_ptr() as usize)
}

fn writable_id_registers() -> TestResult {
    let kvm = kvm!();
    check_eq!(
        ioctl(
            kvm,
            k::KVM_CHECK_EXTENSION,
            ki::KVM_CAP_ARM_SUPPORTED_REG_MASK_RANGES as usize
        ),
        Ok(1)
    );
    check_eq!(
        ioctl(
            kvm,
            k::KVM_CHECK_EXTENSION,
            ki::KVM_CAP_ARM_WRITABLE_IMP_ID_REGS as usize
        ),
        Ok(1)
    );
    let g = t!(Guest::new(kvm, code!(guest_midr, guest_midr_end)));
    check_eq!(
        writable_masks(g.vm, 0, 1).map(|_| ()),
        Err(EINVAL),
        "reserved word"
    );
    check_eq!(
        writable_masks(g.vm, 1, 0).map(|_| ()),
        Err(EINVAL),
        "range 1"
    );
    let m = t!(writable_masks(g.vm, 0, 0));
    // ID_AA64PFR0_EL1: GIC writable, SVE and FP not; MPIDR_EL1 never; ID_AA64MMFR1_EL1's
    // SpecSEI and CTR_EL0's IminLine are.
    check_eq!(
        m[mask_idx(0, 4, 0)] & (0xf << 24 | 0xf << 32 | 0xf << 16),
        0xf << 24
    );
    check_eq!(m[mask_idx(0, 0, 5)], 0);
    check_eq!(m[mask_idx(0, 7, 1)] & 0xf << 24, 0xf << 24);
    check_eq!(m[mask_idx(3, 0, 1)] & 0xf, 0xf);
    check_eq!(m[mask_idx(0, 0, 0)], 0xffff_ffff, "MIDR_EL1");
    const PFR0: u64 = k::sysreg_id(3, 0, 0, 4, 0);
    const MMFR1: u64 = k::sysreg_id(3, 0, 0, 7, 1);
    const MIDR: u64 = k::sysreg_id(3, 0, 0, 0, 0);
    const CTR: u64 = k::sysreg_id(3, 3, 0, 0, 1);
    // AArch64 at EL0 cannot be taken away.
    let pfr0 = t!(get_reg(g.vcpu, PFR0)) as u64;
    check_eq!(set_reg(g.vcpu, PFR0, (pfr0 & !0xf) as u128), Err(EINVAL));
    // SpecSEI is higher-safe: one more is taken, and then one less than that too.
    let mmfr1 = t!(get_reg(g.vcpu, MMFR1)) as u64;
    if (mmfr1 >> 24) & 0xf < 0xf {
        t!(set_reg(g.vcpu, MMFR1, (mmfr1 + (1 << 24)) as u128));
        t!(set_reg(g.vcpu, MMFR1, mmfr1 as u128));
    }
    // CTR_EL0: L1Ip 0b01 is reserved; IminLine one smaller is taken.
    let ctr = t!(get_reg(g.vcpu, CTR)) as u64;
    check_eq!(
        set_reg(g.vcpu, CTR, (ctr & !(3 << 14) | 1 << 14) as u128),
        Err(EINVAL)
    );
    let ctr2 = if ctr & 0xf != 0 { ctr - 1 } else { ctr };
    t!(set_reg(g.vcpu, CTR, ctr2 as u128));
    // MIDR_EL1 only with KVM_CAP_ARM_WRITABLE_IMP_ID_REGS, which comes before any vCPU.
    let midr = t!(get_reg(g.vcpu, MIDR)) as u64;
    check_eq!(set_reg(g.vcpu, MIDR, (midr ^ 1) as u128), Err(EINVAL));
    check_eq!(
        enable_cap(g.vm, ki::KVM_CAP_ARM_WRITABLE_IMP_ID_REGS),
        Err(EINVAL)
    );
    // The guest reads the VM's MIDR_EL1 and CTR_EL0.
    check_eq!(t!(g.run_to_mmio()).1, midr);
    check_eq!(t!(g.run_to_mmio()).1, ctr2);
    check_eq!(set_reg(g.vcpu, CTR, ctr as u128), Err(EBUSY));
    drop(g);

    let kvm = kvm!();
    let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
    t!(enable_cap(vm, ki::KVM_CAP_ARM_WRITABLE_IMP_ID_REGS));
    let vcpu = t!(ioctl(vm, k::KVM_CREATE_VCPU, 0)) as i32;
    let mut init = KvmVcpuInit::default();
    t!(ioctl(
        vm,
        k::KVM_ARM_PREFERRED_TARGET,
        &mut init as *mut _ as usize
    ));
    t!(ioctl(
        vcpu,
        k::KVM_ARM_VCPU_INIT,
        &init as *const _ as usize
    ));
    t!(set_reg(vcpu, MIDR, (midr ^ 1) as u128));
    check_eq!(get_reg(vcpu, MIDR), Ok((midr ^ 1) as u128));
    check_eq!(
        set_reg(vcpu, MIDR, (midr | 1 << 32) as u128),
        Err(EINVAL),
        "beyond the mask"
    );
    let _ = sys::close(vcpu);
    let _ = sys::close(vm);
    let _ = sys::close(kvm);
    Ok(())
}

fn pvtime_attr(vcpu: i32, cmd: u32, attr: u64, v: &mut u64) -> SysResult {
    dev_attr(
        vcpu,
        cmd,
        sv::KVM_ARM_VCPU_PVTIME_CTRL,
        attr,
        v as *mut u64 as usize,
    )
}

fn smccc_services() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_services, guest_services_end)));
    // The stolen-time structure: in RAM, 64-byte aligned, once.
    let st_ipa = RAM_IPA + 0xc000;
    let mut v = 0u64;
    check_eq!(
        pvtime_attr(g.vcpu, k::KVM_HAS_DEVICE_ATTR, 0, &mut v),
        Ok(0)
    );
    check_eq!(
        pvtime_attr(g.vcpu, k::KVM_HAS_DEVICE_ATTR, 1, &mut v),
        Err(ENXIO)
    );
    v = st_ipa + 8;
    check_eq!(
        pvtime_attr(g.vcpu, k::KVM_SET_DEVICE_ATTR, 0, &mut v),
        Err(EINVAL)
    );
    v = MMIO;
    check_eq!(
        pvtime_attr(g.vcpu, k::KVM_SET_DEVICE_ATTR, 0, &mut v),
        Err(EINVAL),
        "no slot"
    );
    v = st_ipa;
    t!(pvtime_attr(g.vcpu, k::KVM_SET_DEVICE_ATTR, 0, &mut v));
    check_eq!(
        pvtime_attr(g.vcpu, k::KVM_SET_DEVICE_ATTR, 0, &mut v),
        Err(EEXIST)
    );
    v = 0;
    t!(pvtime_attr(g.vcpu, k::KVM_GET_DEVICE_ATTR, 0, &mut v));
    check_eq!(v, st_ipa);
    // The service bitmaps a new VM has: TRNG, PV time, KVM's features and PTP.
    let bmaps: [u64; 4] = core::array::from_fn(|i| {
        get_reg(g.vcpu, k::fw_feat_bmap_reg(i as u64)).unwrap_or(9) as u64
    });
    check_eq!(bmaps, [1, 1, 3, 0]);
    check_eq!(set_reg(g.vcpu, k::fw_feat_bmap_reg(0), 2), Err(EINVAL));
    for i in 0..8 {
        g.set_data(0x4000 + 8 * i, u64::MAX);
    }
    let (_, x10, _, _) = t!(g.run_to_mmio());
    let reg = |n| get_reg(g.vcpu, x(n)).map(|v| v as u64);
    check_eq!(x10, 0, "ARCH_FEATURES(PV_TIME_FEATURES)");
    check_eq!(reg(11), Ok(0), "PV_TIME_FEATURES(PV_TIME_ST)");
    check_eq!(reg(12), Ok(st_ipa), "PV_TIME_ST");
    check_eq!(reg(13), Ok(sv::TRNG_VERSION_1_0), "TRNG_VERSION");
    check_eq!(reg(14), Ok(0), "TRNG_RND64(192)");
    check_eq!(
        reg(15),
        Ok(sv::TRNG_INVALID_PARAMETER as u64),
        "TRNG_RND64(193)"
    );
    check_eq!(reg(17), Ok(3), "KVM_FEATURES");
    // PTP: the wall clock the guest got is the VMM's, give or take.
    let ns = t!(reg(16)) << 32 | t!(reg(20));
    let now = t!(sys::clock_gettime(CLOCK_REALTIME)).ns();
    check!(
        now.abs_diff(ns) < 10_000_000_000,
        "PTP {ns} against CLOCK_REALTIME {now}"
    );
    // PV_TIME_ST cleared the structure: revision and attributes 0, stolen time small.
    check_eq!(g.data(0x4000), 0);
    check!(g.data(0x4008) < 5_000_000_000, "stolen {}", g.data(0x4008));
    for i in 2..8 {
        check_eq!(g.data(0x4000 + 8 * i), 0);
    }
    check_eq!(set_reg(g.vcpu, k::fw_feat_bmap_reg(0), 0), Err(EBUSY));
    drop(g);

    // With every service turned off, each call is NOT_SUPPORTED.
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_services, guest_services_end)));
    for i in 0..4 {
        t!(set_reg(g.vcpu, k::fw_feat_bmap_reg(i), 0));
    }
    let (_, x10, _, _) = t!(g.run_to_mmio());
    check_eq!(x10, u64::MAX);
    for n in 11..=17 {
        check_eq!(get_reg(g.vcpu, x(n)), Ok(u64::MAX as u128), "x{n}");
    }
    Ok(())
}

fn coalesced_mmio() -> TestResult {
    let kvm = kvm!();
    check_eq!(
        ioctl(
            kvm,
            k::KVM_CHECK_EXTENSION,
            k::KVM_CAP_COALESCED_MMIO as usize
        ),
        Ok(1)
    );
    let g = t!(Guest::new(kvm, code!(guest_coalesced, guest_coalesced_end)));
    check!(g.run_size >= 2 * 4096, "mapping of {} bytes", g.run_size);
    let zone = |pio: u32| k::KvmCoalescedMmioZone {
        addr: MMIO,
        size: 8,
        pio,
    };
    let reg = |cmd, z: &k::KvmCoalescedMmioZone| ioctl(g.vm, cmd, z as *const _ as usize);
    check_eq!(reg(k::KVM_REGISTER_COALESCED_MMIO, &zone(2)), Err(EINVAL));
    check_eq!(reg(k::KVM_UNREGISTER_COALESCED_MMIO, &zone(2)), Err(EINVAL));
    t!(reg(k::KVM_REGISTER_COALESCED_MMIO, &zone(0)));
    // SAFETY: page 1 of the vCPU mapping, the VM's ring.
    let ring = unsafe { g.run.add(4096) };
    let ring_u32 = |off: usize| unsafe { (ring.add(off) as *const u32).read_volatile() };
    let ring_u64 = |off: usize| unsafe { (ring.add(off) as *const u64).read_volatile() };
    let set_ring = |first: u32, last: u32| unsafe {
        (ring as *mut u32).write_volatile(first);
        (ring.add(4) as *mut u32).write_volatile(last);
    };
    set_ring(5, 5);
    t!(set_reg(g.vcpu, x(2), 100));
    // Three writes queued, the fourth (outside the zone) exits.
    check_eq!(t!(g.run_to_mmio()), (MMIO + 0x100, 102, 8, true));
    check_eq!((ring_u32(0), ring_u32(4)), (5, 8));
    for i in 0..3 {
        let e = 8 + (5 + i) * 24;
        check_eq!(
            (
                ring_u64(e),
                ring_u32(e + 8),
                ring_u32(e + 12),
                ring_u64(e + 16)
            ),
            (MMIO, 8, 0, 100 + i as u64)
        );
    }
    // A full ring (one entry always free) sends the write to the VMM.
    set_ring(1, 0);
    check_eq!(t!(g.run_to_mmio()), (MMIO, 102, 8, true));
    check_eq!(ring_u32(4), 0);
    // Unregistered (a range inside the zone names it): every write exits.
    set_ring(0, 0);
    let inner = k::KvmCoalescedMmioZone {
        addr: MMIO + 4,
        size: 4,
        pio: 0,
    };
    t!(reg(k::KVM_UNREGISTER_COALESCED_MMIO, &inner));
    check_eq!(t!(g.run_to_mmio()), (MMIO, 102, 8, true));
    check_eq!(ring_u32(4), 0);
    Ok(())
}

const EVENTFD2: usize = 19;
const EFD_NONBLOCK: usize = 0o4000;

fn eventfd() -> Result<i32, String> {
    Ok(t!(sys::syscall(EVENTFD2, &[0, EFD_NONBLOCK])) as i32)
}

/// An eventfd's counter, taken (0 if it is 0).
fn take_count(fd: i32) -> Result<u64, String> {
    let mut b = [0u8; 8];
    match sys::read(fd, &mut b) {
        Ok(8) => Ok(u64::from_ne_bytes(b)),
        Err(EAGAIN) => Ok(0),
        r => Err(format!("read of the eventfd: {r:?}")),
    }
}

/// KVM_IOEVENTFD, KVM_SET_GSI_ROUTING and KVM_IRQFD with a resample eventfd: their
/// capabilities and errors; a guest write that matches an ioeventfd's address, length and
/// value signals it without an exit, one that does not exits; a signalled irqfd makes SPI 32
/// (GSI 3 routed to pin 0) pending for a guest in WFI, the guest's EOI lowers the line and
/// signals the resample eventfd, and nothing is left pending; deassigned, the irqfd leaves
/// its eventfd's counter to its readers.
fn irqfd_and_ioeventfd() -> TestResult {
    use svelt_abi::uapi::kvm_eventfd as e;
    use svelt_abi::uapi::kvm_vgic as v;
    let kvm = kvm!();
    let cap = |c: u64| ioctl(kvm, k::KVM_CHECK_EXTENSION, c as usize);
    check_eq!(cap(e::KVM_CAP_IRQFD), Ok(1), "KVM_CAP_IRQFD");
    check_eq!(
        cap(e::KVM_CAP_IRQFD_RESAMPLE),
        Ok(1),
        "KVM_CAP_IRQFD_RESAMPLE"
    );
    check_eq!(cap(e::KVM_CAP_IOEVENTFD), Ok(1), "KVM_CAP_IOEVENTFD");
    check_eq!(cap(e::KVM_CAP_IOEVENTFD_ANY_LENGTH), Ok(1));
    check_eq!(cap(e::KVM_CAP_IRQ_ROUTING), Ok(4096), "KVM_CAP_IRQ_ROUTING");
    // QEMU's virt machine here has a GICv3, so the vGIC can be made.
    check_eq!(cap(k::KVM_CAP_IRQCHIP), Ok(1), "KVM_CAP_IRQCHIP");
    let g = t!(Guest::new(kvm, code!(guest_eventfd, guest_eventfd_end)));
    let (io, irq, resample) = (t!(eventfd()), t!(eventfd()), t!(eventfd()));
    let ioev = |addr: u64, len: u32, fd: i32, flags: u32, datamatch: u64| {
        let a = e::KvmIoeventfd {
            datamatch,
            addr,
            len,
            fd,
            flags,
            pad: [0; 36],
        };
        ioctl(g.vm, e::KVM_IOEVENTFD, &a as *const _ as usize)
    };
    let dm = e::KVM_IOEVENTFD_FLAG_DATAMATCH;
    let deassign = e::KVM_IOEVENTFD_FLAG_DEASSIGN;
    let at = MMIO + 0x40;
    check_eq!(ioev(at, 3, io, 0, 0), Err(EINVAL), "length 3");
    check_eq!(ioev(at, 0, io, dm, 7), Err(EINVAL), "match without length");
    check_eq!(ioev(at, 4, io, 1 << 5, 7), Err(EINVAL), "unknown flag");
    check_eq!(ioev(at, 4, 1000, dm, 7), Err(EBADF), "no such fd");
    check_eq!(ioev(at, 4, g.vm, dm, 7), Err(EINVAL), "not an eventfd");
    check_eq!(ioev(at, 4, io, dm, 7), Ok(0));
    check_eq!(ioev(at, 4, irq, dm, 7), Err(EEXIST), "same match");
    check_eq!(ioev(at, 4, irq, 0, 0), Err(EEXIST), "wildcard over a match");
    check_eq!(
        ioev(at, 4, io, dm | deassign, 8),
        Err(ENOENT),
        "unknown deassign"
    );
    // The irqfd needs the vGIC initialised.
    let irqfd = |gsi: u32, fd: i32, flags: u32, resamplefd: i32| {
        let a = e::KvmIrqfd {
            fd: fd as u32,
            gsi,
            flags,
            resamplefd: resamplefd as u32,
            pad: [0; 16],
        };
        ioctl(g.vm, e::KVM_IRQFD, &a as *const _ as usize)
    };
    let rs = e::KVM_IRQFD_FLAG_RESAMPLE;
    check_eq!(irqfd(3, irq, rs, resample), Err(EAGAIN), "no vGIC");
    let mut d = k::KvmCreateDevice {
        ty: v::KVM_DEV_TYPE_ARM_VGIC_V3,
        fd: 0,
        flags: 0,
    };
    t!(ioctl(g.vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize));
    let gic = d.fd as i32;
    t!(place_vgic(gic, v::KVM_VGIC_V3_ADDR_TYPE_REDIST, 0x80a_0000));
    check_eq!(irqfd(3, irq, rs, resample), Err(EAGAIN), "before INIT");
    t!(dev_attr(
        gic,
        k::KVM_SET_DEVICE_ATTR,
        v::KVM_DEV_ARM_VGIC_GRP_CTRL,
        v::KVM_DEV_ARM_VGIC_CTRL_INIT,
        0,
    ));
    // GSI 3 to pin 0 (SPI 32) alone.
    let routing = |nr: u32, flags: u32, entries: &[(u32, u32, u32)]| {
        let mut buf = [0u32; 2 + 12 * 2];
        buf[0] = nr;
        buf[1] = flags;
        for (i, &(gsi, ty, pin)) in entries.iter().enumerate() {
            let w = &mut buf[2 + 12 * i..];
            (w[0], w[1], w[5]) = (gsi, ty, pin);
        }
        ioctl(g.vm, e::KVM_SET_GSI_ROUTING, buf.as_ptr() as usize)
    };
    let chip = e::KVM_IRQ_ROUTING_IRQCHIP;
    check_eq!(routing(4097, 0, &[]), Err(EINVAL), "too many routes");
    check_eq!(routing(1, 1, &[(3, chip, 0)]), Err(EINVAL), "flags");
    check_eq!(routing(1, 0, &[(3, chip, 988)]), Err(EINVAL), "pin 988");
    check_eq!(routing(1, 0, &[(3, 9, 0)]), Err(EINVAL), "type 9");
    check_eq!(
        routing(2, 0, &[(3, chip, 0), (3, chip, 1)]),
        Err(EINVAL),
        "GSI 3 twice"
    );
    check_eq!(routing(1, 0, &[(3, chip, 0)]), Ok(0));
    check_eq!(irqfd(3, irq, 1 << 2, resample), Err(EINVAL), "unknown flag");
    check_eq!(irqfd(3, 1000, rs, resample), Err(EBADF), "no such fd");
    check_eq!(irqfd(3, irq, rs, 1000), Err(EBADF), "no such resample fd");
    check_eq!(irqfd(3, g.vm, rs, resample), Err(EINVAL), "not an eventfd");
    check_eq!(irqfd(3, irq, rs, resample), Ok(0));
    check_eq!(irqfd(4, irq, 0, 0), Err(EBUSY), "an eventfd has one irqfd");
    check_eq!(
        irqfd(9, irq, e::KVM_IRQFD_FLAG_DEASSIGN, 0),
        Ok(0),
        "never assigned"
    );
    // The guest's writes.
    check_eq!(t!(g.run_to_mmio()), (at, 5, 4, true), "no match: an exit");
    check_eq!(
        t!(g.run_to_mmio()),
        (MMIO, 7, 8, true),
        "the guest is ready"
    );
    check_eq!(t!(take_count(io)), 2, "two matching writes signalled");
    check_eq!(t!(sys::write(irq, &1u64.to_ne_bytes())), 8);
    check_eq!(t!(take_count(irq)), 0, "KVM took the irqfd's count");
    check_eq!(t!(g.run_to_mmio()), (MMIO + 8, 32, 8, true), "ICC_IAR1_EL1");
    check_eq!(t!(take_count(resample)), 0, "not resampled before the EOI");
    check_eq!(
        t!(g.run_to_mmio()),
        (MMIO + 16, 32, 8, true),
        "after the EOI"
    );
    check_eq!(t!(take_count(resample)), 1, "resampled at the EOI");
    check_eq!(
        t!(g.run_to_mmio()),
        (MMIO + 24, 1023, 8, true),
        "the line is low"
    );
    check_eq!(irqfd(3, irq, e::KVM_IRQFD_FLAG_DEASSIGN, 0), Ok(0));
    check_eq!(t!(sys::write(irq, &1u64.to_ne_bytes())), 8);
    check_eq!(t!(take_count(irq)), 1, "deassigned: the count stays");
    check_eq!(ioev(at, 4, io, dm | deassign, 7), Ok(0));
    check_eq!(
        ioev(at, 4, io, dm | deassign, 7),
        Err(ENOENT),
        "already gone"
    );
    for fd in [io, irq, resample, gic] {
        t!(sys::close(fd));
    }
    Ok(())
}

core::arch::global_asm!(
    ".section .rodata.guests, \"a\"",
    ".balign 4",
    // Writes each page of a list: x3 the slot's base, x4 the list (page numbers, ended by one
    // with bit 63 set); then a store to MMIO says it is done, and it starts over from x4.
    ".global guest_dirty, guest_dirty_end",
    "guest_dirty:",
    "1:",
    "ldr x5, [x4], #8",
    "tbnz x5, #63, 2f",
    "lsl x6, x5, #12",
    "str x5, [x3, x6]",
    "b 1b",
    "2:",
    "movz x1, #0x1000, lsl #16",
    "str xzr, [x1]",
    "b 1b",
    "guest_dirty_end:",
    ".text",
);

unsafe extern "C" {
    static guest_dirty: u8;
    static guest_dirty_end: u8;
}

/// The logging slot of `dirty_log`: 128 pages, two words of bitmap.
const LOG_IPA: u64 = 0x100_0000;
const LOG_PAGES: u64 = 128;

/// Has the guest write the pages `pages` of the slot at `base`, and waits until it has.
fn write_pages(g: &Guest, base: u64, pages: &[u64]) -> Result<(), String> {
    for (i, &p) in pages.iter().enumerate() {
        g.set_data(8 * i, p);
    }
    g.set_data(8 * pages.len(), u64::MAX);
    t!(set_reg(g.vcpu, x(3), base as u128));
    t!(set_reg(g.vcpu, x(4), (RAM_IPA + DATA_OFF as u64) as u128));
    let (addr, _, _, write) = t!(g.run_to_mmio());
    check_eq!((addr, write), (MMIO, true), "the guest's done");
    Ok(())
}

fn get_log(vm: i32, slot: u32, bits: &mut [u64; 2]) -> SysResult {
    let log = kd::KvmDirtyLog {
        slot,
        padding1: 0,
        dirty_bitmap: bits.as_mut_ptr() as u64,
    };
    ioctl(vm, kd::KVM_GET_DIRTY_LOG, &log as *const _ as usize)
}

fn clear_log(vm: i32, slot: u32, first_page: u64, num_pages: u32, bits: u64) -> SysResult {
    let log = kd::KvmClearDirtyLog {
        slot,
        num_pages,
        first_page,
        dirty_bitmap: bits,
    };
    ioctl(vm, kd::KVM_CLEAR_DIRTY_LOG, &log as *const _ as usize)
}

/// Dirty-page logging (KVM_MEM_LOG_DIRTY_PAGES): GET_DIRTY_LOG shows exactly the pages the
/// guest wrote since the last GET; with KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 a new slot starts
/// all dirty, GET leaves the bits and CLEAR_DIRTY_LOG takes them away; Linux's errors.
fn dirty_log() -> TestResult {
    let kvm = kvm!();
    check_eq!(
        ioctl(
            kvm,
            k::KVM_CHECK_EXTENSION,
            kd::KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 as usize
        ),
        Ok(3),
        "manual protect caps"
    );
    let size = (LOG_PAGES * 4096) as usize;
    let mem = t!(sys::mmap_anon(size));
    let slot1 = |flags| KvmUserspaceMemoryRegion {
        slot: 1,
        flags,
        guest_phys_addr: LOG_IPA,
        memory_size: LOG_PAGES * 4096,
        userspace_addr: mem as u64,
    };
    let g = t!(Guest::new(kvm, code!(guest_dirty, guest_dirty_end)));
    t!(set_region(g.vm, &slot1(k::KVM_MEM_LOG_DIRTY_PAGES)));
    let mut bits = [!0u64; 2];
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [0, 0], "a new logging slot");
    t!(write_pages(&g, LOG_IPA, &[0, 3, 64, 127]));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [0b1001, 1 | 1 << 63], "the pages written");
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [0, 0], "a second GET without writes");
    t!(write_pages(&g, LOG_IPA, &[5]));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [1 << 5, 0], "one more page");
    // A page written, reported and so write-protected again, written once more.
    t!(write_pages(&g, LOG_IPA, &[3]));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [1 << 3, 0], "a page written again");

    // Errors: a slot without logging or none at all, another address space, bad pointers.
    check_eq!(
        get_log(g.vm, 0, &mut bits),
        Err(ENOENT),
        "slot 0 does not log"
    );
    check_eq!(get_log(g.vm, 9, &mut bits), Err(ENOENT), "no slot 9");
    check_eq!(get_log(g.vm, 1 << 16 | 1, &mut bits), Err(EINVAL));
    check_eq!(get_log(g.vm, 32767, &mut bits), Err(EINVAL));
    let bad = kd::KvmDirtyLog {
        slot: 1,
        padding1: 0,
        dirty_bitmap: 8,
    };
    check_eq!(
        ioctl(g.vm, kd::KVM_GET_DIRTY_LOG, &bad as *const _ as usize),
        Err(EFAULT)
    );
    check_eq!(ioctl(g.vm, kd::KVM_GET_DIRTY_LOG, 8), Err(EFAULT));
    let ones = [u64::MAX; 2];
    let p = ones.as_ptr() as u64;
    check_eq!(clear_log(g.vm, 1, 1, 64, p), Err(EINVAL), "first_page");
    check_eq!(clear_log(g.vm, 1, 0, 32, p), Err(EINVAL), "num_pages");
    check_eq!(
        clear_log(g.vm, 1, 64, 63, p),
        Err(EINVAL),
        "short of the end"
    );
    check_eq!(clear_log(g.vm, 1, 192, 0, p), Err(EINVAL), "past the end");
    check_eq!(
        clear_log(g.vm, 1, 64, 128, p),
        Err(EINVAL),
        "beyond the end"
    );
    check_eq!(clear_log(g.vm, 0, 1, 64, p), Err(EINVAL), "alignment first");
    check_eq!(
        clear_log(g.vm, 0, 0, 64, p),
        Err(ENOENT),
        "slot 0 does not log"
    );
    check_eq!(clear_log(g.vm, 1, 0, 64, 8), Err(EFAULT));
    check_eq!(clear_log(g.vm, 1, 64, 64, p), Ok(0), "the second half");

    // Logging turned off and on again: a new, empty bitmap.
    t!(set_region(g.vm, &slot1(0)));
    check_eq!(get_log(g.vm, 1, &mut bits), Err(ENOENT), "logging off");
    t!(write_pages(&g, LOG_IPA, &[10]));
    t!(set_region(g.vm, &slot1(k::KVM_MEM_LOG_DIRTY_PAGES)));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [0, 0], "logging on again");
    t!(write_pages(&g, LOG_IPA, &[10]));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [1 << 10, 0], "a page mapped before logging");
    drop(g);

    // Manual protection with every page dirty at first.
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_dirty, guest_dirty_end)));
    let manual = |arg: u64| {
        let mut c = [0u64; 13];
        c[0] = kd::KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2;
        c[1] = arg;
        ioctl(g.vm, k::KVM_ENABLE_CAP, c.as_ptr() as usize)
    };
    check_eq!(manual(kd::KVM_DIRTY_LOG_INITIALLY_SET), Err(EINVAL));
    check_eq!(manual(1 | 4), Err(EINVAL));
    t!(manual(kd::KVM_DIRTY_LOG_MANUAL_CAPS));
    t!(set_region(g.vm, &slot1(k::KVM_MEM_LOG_DIRTY_PAGES)));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [u64::MAX; 2], "INITIALLY_SET");
    t!(write_pages(&g, LOG_IPA, &[9]));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [u64::MAX; 2], "GET leaves the bits");
    t!(clear_log(g.vm, 1, 0, LOG_PAGES as u32, p));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [0, 0], "all cleared");
    t!(write_pages(&g, LOG_IPA, &[9, 70]));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [1 << 9, 1 << 6], "the pages rewritten");
    let second = [1u64 << 6];
    t!(clear_log(g.vm, 1, 64, 64, second.as_ptr() as u64));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [1 << 9, 0], "a range cleared");
    t!(write_pages(&g, LOG_IPA, &[70]));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [1 << 9, 1 << 6], "the cleared page rewritten");
    // Without the manual mode again, GET clears.
    t!(manual(0));
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [1 << 9, 1 << 6]);
    t!(get_log(g.vm, 1, &mut bits));
    check_eq!(bits, [0, 0], "cleared by GET");
    drop(g);
    t!(sys::munmap(mem, size));
    Ok(())
}

/// ID_AA64ISAR0_EL1.TLB, the Outer Shareable TLBIs (FEAT_TLBIOS) and the range ones: a guest
/// whose VMM left it runs TLBI VMALLE1OS; one whose VMM cleared it takes an Undefined
/// Instruction exception there (ESR_EL1.EC 0), where the host can trap the instruction
/// (fine-grained traps, or HCR_EL2.TTLBOS with FEAT_EVT; Linux's hidden_features).
fn hidden_tlbi_os() -> TestResult {
    const ISAR0: u64 = k::sysreg_id(3, 0, 0, 6, 0);
    const MMFR0: u64 = k::sysreg_id(3, 0, 0, 7, 0);
    const MMFR2: u64 = k::sysreg_id(3, 0, 0, 7, 2);
    let code = code!(guest_tlbi, guest_tlbi_end);
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code));
    let isar0 = t!(get_reg(g.vcpu, ISAR0)) as u64;
    if (isar0 >> 56) & 0xf == 0 {
        return ktap::skip("the VM has no TLBI OS");
    }
    let fgt = (t!(get_reg(g.vcpu, MMFR0)) as u64 >> 56) & 0xf != 0;
    let evt = (t!(get_reg(g.vcpu, MMFR2)) as u64 >> 56) & 0xf >= 2;
    // Advertised: it runs.
    check_eq!(g.run_to_mmio(), Ok((MMIO + 0x10, 0, 8, true)), "advertised");
    drop(g);
    if !fgt && !evt {
        println!("    # hidden TLBI OS not checked: no FGT and no EVT to trap it");
        return Ok(());
    }
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code));
    t!(set_reg(g.vcpu, ISAR0, (isar0 & !(0xf << 56)) as u128));
    undefined_then_on(&g, "hidden TLBI OS")
}

/// The guest (guest_tlbi's shape: its vector stores ESR_EL1 at MMIO +8 and steps over the
/// instruction, then it stores at +0x10) took an Undefined Instruction exception at its
/// instruction (`what`) and carried on.
fn undefined_then_on(g: &Guest, what: &str) -> TestResult {
    let (addr, esr, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 8, "{what}: no UNDEF");
    check_eq!(
        esr >> 26,
        0,
        "{what}: ESR_EL1 {esr:#x}: not an Undefined Instruction"
    );
    check_eq!(
        g.run_to_mmio(),
        Ok((MMIO + 0x10, 0, 8, true)),
        "{what}: after the UNDEF"
    );
    Ok(())
}

/// The GCS registers follow the VM's ID_AA64PFR1_EL1.GCS: a guest whose VM shows no GCS takes
/// an Undefined Instruction exception reading GCSPR_EL1 (as on a CPU without GCS; Linux's hwcap
/// selftest counts on it at EL0), one whose VM shows it reads the register.
fn gcs_registers_follow_the_vm() -> TestResult {
    const PFR1: u64 = k::sysreg_id(3, 0, 0, 4, 1);
    let kvm = kvm!();
    // guest_tlbi with its TLBI (the fifth instruction) replaced by `mrs x3, S3_0_C2_C5_1`.
    let mut code = code!(guest_tlbi, guest_tlbi_end).to_vec();
    code[16..20].copy_from_slice(&0xd538_2523u32.to_le_bytes());
    let g = t!(Guest::new(kvm, &code));
    let gcs = (t!(get_reg(g.vcpu, PFR1)) as u64 >> 44) & 0xf != 0;
    if gcs {
        check_eq!(g.run_to_mmio(), Ok((MMIO + 0x10, 0, 8, true)), "GCS shown");
        return Ok(());
    }
    undefined_then_on(&g, "GCSPR_EL1 without GCS")
}

const FPMR: u64 = k::FPMR;
const PFR2: u64 = k::sysreg_id(3, 0, 0, 4, 2);
/// HWCAP2_FPMR: this CPU (and so the host) has FEAT_FPMR.
const HWCAP2_FPMR: u64 = 1 << 48;

fn host_has_fpmr() -> bool {
    svelt_user::sme::hwcap2() & HWCAP2_FPMR != 0
}

fn host_fpmr() -> u64 {
    let v: u64;
    // SAFETY: reads FPMR, which exists (HWCAP2_FPMR) and EL0 may access.
    unsafe { core::arch::asm!("mrs {}, S3_3_C4_C4_2", out(reg) v, options(nomem, nostack)) };
    v
}

fn set_host_fpmr(v: u64) {
    // SAFETY: FPMR only steers FP8 instructions, which nothing in this program uses.
    unsafe { core::arch::asm!("msr S3_3_C4_C4_2, {}", in(reg) v, options(nomem, nostack)) };
}

/// Values made of FPMR fields every FEAT_FPMR CPU keeps (LSCALE2, NSCALE, LSCALE, OSC, OSM).
const FPMR_VMM: u64 = 0x05_1125_4000;
const FPMR_HOST: u64 = 0x2a_3c00_8000;
const FPMR_GUEST: u64 = 0x01_007f_c000;
const FPMR_VMM2: u64 = 0x10_8000_4000;

/// The vCPU's register list.
fn reg_list(vcpu: i32) -> Result<Vec<u64>, String> {
    let mut n = [0u64; 1];
    check_eq!(
        ioctl(vcpu, k::KVM_GET_REG_LIST, n.as_mut_ptr() as usize),
        Err(E2BIG)
    );
    let mut list = vec![0u64; n[0] as usize + 1];
    list[0] = n[0];
    t!(ioctl(vcpu, k::KVM_GET_REG_LIST, list.as_mut_ptr() as usize));
    Ok(list.split_off(1))
}

/// FPMR by ONE_REG, as Linux's sys_regs.c keeps it (`fp8_visibility`): where the CPU has FPMR,
/// the VM's ID_AA64PFR2_EL1.FPMR shows it, it is listed, reads 0 after init and keeps what the
/// VMM writes; a VMM that lowers PFR2.FPMR to 0 hides it (ENOENT, not listed) and raising it
/// again brings the value back. Without FPMR on the CPU: ENOENT and not listed.
fn fpmr_one_reg() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_fpmr, guest_fpmr_end)));
    let pfr2 = t!(get_reg(g.vcpu, PFR2)) as u64;
    let shown = (pfr2 >> 32) & 0xf;
    if !host_has_fpmr() {
        check_eq!(shown, 0, "PFR2.FPMR without FPMR on the CPU");
        check_eq!(get_reg(g.vcpu, FPMR), Err(ENOENT), "FPMR without FPMR");
        check!(
            !t!(reg_list(g.vcpu)).contains(&FPMR),
            "FPMR listed without FPMR"
        );
        return ktap::skip("the CPU has no FPMR");
    }
    check_eq!(shown, 1, "the VM's ID_AA64PFR2_EL1.FPMR");
    check!(t!(reg_list(g.vcpu)).contains(&FPMR), "FPMR not listed");
    check_eq!(get_reg(g.vcpu, FPMR), Ok(0), "FPMR after init");
    t!(set_reg(g.vcpu, FPMR, FPMR_VMM as u128));
    check_eq!(
        get_reg(g.vcpu, FPMR),
        Ok(FPMR_VMM as u128),
        "FPMR round trip"
    );
    // Hidden by the VMM.
    t!(set_reg(g.vcpu, PFR2, (pfr2 & !k::ID_AA64PFR2_FPMR) as u128));
    check_eq!(get_reg(g.vcpu, FPMR), Err(ENOENT), "FPMR hidden: get");
    check_eq!(
        set_reg(g.vcpu, FPMR, 1 << 14),
        Err(ENOENT),
        "FPMR hidden: set"
    );
    check!(!t!(reg_list(g.vcpu)).contains(&FPMR), "hidden FPMR listed");
    // Shown again: the value is still there.
    t!(set_reg(g.vcpu, PFR2, pfr2 as u128));
    check_eq!(
        get_reg(g.vcpu, FPMR),
        Ok(FPMR_VMM as u128),
        "FPMR shown again"
    );
    Ok(())
}

/// One round of `guest_pauth` from the top of its loop: (PACIA, AUTIA, PACGA, the guest's
/// APIAKeyLo_EL1), after which it has written x7 to APIBKeyLo_EL1.
fn pauth_round(g: &Guest) -> Result<[u64; 4], String> {
    let mut out = [0u64; 4];
    for (i, o) in out.iter_mut().enumerate() {
        let (addr, data, _, _) = t!(g.run_to_mmio());
        check_eq!(addr, MMIO + 8 * i as u64, "guest_pauth's exit {i}");
        *o = data;
    }
    let (addr, _, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 0x20, "guest_pauth's key write");
    Ok(out)
}

/// Pointer authentication for guests (KVM_ARM_VCPU_PTRAUTH_ADDRESS and _GENERIC, asked for
/// together), where KVM offers it: the ID registers show it only to a vCPU that has it, its ten
/// key registers are listed and reachable only then (ENOENT otherwise), and a vCPU without it
/// gets its PAC instructions UNDEFINED. With it, the guest signs and authenticates with the
/// keys the VMM set, reads them, and the VMM reads back a key the guest wrote; another VM's
/// vCPU run by the same thread in between signs with its own keys, and the first one's
/// signatures are unchanged afterwards.
fn pauth_for_guests() -> TestResult {
    const ISAR1: u64 = k::sysreg_id(3, 0, 0, 6, 1);
    const ISAR2: u64 = k::sysreg_id(3, 0, 0, 6, 2);
    let [apia_lo, apia_hi, apib_lo, _, _, _, _, _, apga_lo, apga_hi] = k::PAUTH_KEYS;
    let both = 1 << k::KVM_ARM_VCPU_PTRAUTH_ADDRESS | 1 << k::KVM_ARM_VCPU_PTRAUTH_GENERIC;
    let kvm = kvm!();
    let cap = t!(ioctl(
        kvm,
        k::KVM_CHECK_EXTENSION,
        k::KVM_CAP_ARM_PTRAUTH_ADDRESS as usize
    ));
    let cap_g = t!(ioctl(
        kvm,
        k::KVM_CHECK_EXTENSION,
        k::KVM_CAP_ARM_PTRAUTH_GENERIC as usize
    ));
    check_eq!(cap, cap_g, "the two capabilities");
    // Without the features: nothing of it, and its PAC instructions are UNDEFINED.
    let g = t!(Guest::new(kvm, code!(guest_pauth, guest_pauth_end)));
    check_eq!(t!(get_reg(g.vcpu, ISAR1)) as u64 & k::ISAR1_PAUTH, 0);
    check_eq!(t!(get_reg(g.vcpu, ISAR2)) as u64 & k::ISAR2_PAUTH, 0);
    check_eq!(get_reg(g.vcpu, apia_lo), Err(ENOENT));
    check_eq!(set_reg(g.vcpu, apga_hi, 1), Err(ENOENT));
    let ids = t!(reg_list(g.vcpu));
    check!(
        k::PAUTH_KEYS.iter().all(|id| !ids.contains(id)),
        "keys listed"
    );
    check_eq!(
        g.run_to_mmio(),
        Ok((MMIO + 0x28, 0x200_0000, 8, true)),
        "PACIA without the feature: UNDEFINED (ESR_EL1)"
    );
    // One feature without the other, or either where KVM does not offer them: EINVAL.
    let vm = t!(ioctl(g.kvm, k::KVM_CREATE_VM, 0)) as i32;
    let vcpu = t!(ioctl(vm, k::KVM_CREATE_VCPU, 0)) as i32;
    let mut init = KvmVcpuInit::default();
    t!(ioctl(
        vm,
        k::KVM_ARM_PREFERRED_TARGET,
        &mut init as *mut _ as usize
    ));
    init.features[0] = 1 << k::KVM_ARM_VCPU_PTRAUTH_ADDRESS;
    let one = ioctl(vcpu, k::KVM_ARM_VCPU_INIT, &init as *const _ as usize);
    init.features[0] = both;
    let r = ioctl(vcpu, k::KVM_ARM_VCPU_INIT, &init as *const _ as usize);
    let _ = (sys::close(vcpu), sys::close(vm));
    drop(g);
    check_eq!(one, Err(EINVAL), "PTRAUTH_ADDRESS alone");
    if cap == 0 {
        check_eq!(r, Err(EINVAL), "both without the capability");
        return ktap::skip("KVM offers no pointer authentication");
    }
    t!(r);
    // With them.
    let (ptr, modifier, guest_key) = (0x0000_0000_1234_5670u64, 0x42u64, 0x5eed_f00d_u64);
    let g = t!(Guest::another(code!(guest_pauth, guest_pauth_end), both));
    check!(
        t!(get_reg(g.vcpu, ISAR1)) as u64 & k::ISAR1_PAUTH != 0
            || t!(get_reg(g.vcpu, ISAR2)) as u64 & k::ISAR2_PAUTH != 0,
        "the ID registers show no pointer authentication"
    );
    let ids = t!(reg_list(g.vcpu));
    check!(
        k::PAUTH_KEYS.iter().all(|id| ids.contains(id)),
        "keys not listed"
    );
    // The APIA and APGA keys and the guest's x2, x4, x7; each key read back.
    let set_up = |g: &Guest, keys: [u128; 4], x7: u64| -> TestResult {
        for (id, v) in [apia_lo, apia_hi, apga_lo, apga_hi].into_iter().zip(keys) {
            t!(set_reg(g.vcpu, id, v));
            check_eq!(get_reg(g.vcpu, id), Ok(v), "key {id:#x} round trip");
        }
        for (n, v) in [(2, ptr), (4, modifier), (7, x7)] {
            t!(set_reg(g.vcpu, x(n), v as u128));
        }
        Ok(())
    };
    set_up(&g, [0x1111, 0x2222, 0x3333, 0x4444], guest_key)?;
    let [signed, authed, generic, seen] = pauth_round(&g)?;
    check!(
        signed != ptr,
        "PACIA left the pointer unsigned: {signed:#x}"
    );
    check_eq!(
        signed & 0xffff_ffff_ffff,
        ptr,
        "PACIA changed the address bits"
    );
    check_eq!(authed, ptr, "AUTIA of the signed pointer");
    check!(generic != 0 && generic as u32 == 0, "PACGA: {generic:#x}");
    check_eq!(seen, 0x1111, "the guest's APIAKeyLo_EL1");
    check_eq!(
        get_reg(g.vcpu, apib_lo),
        Ok(guest_key as u128),
        "the key the guest wrote"
    );
    // Another VM's vCPU, other keys, run by this thread right after.
    let other = t!(Guest::another(code!(guest_pauth, guest_pauth_end), both));
    set_up(&other, [0x9999, 0x8888, 0x7777, 0x6666], 1)?;
    let [o_signed, o_authed, o_generic, o_seen] = pauth_round(&other)?;
    check_eq!(o_authed, ptr, "the other VM's AUTIA");
    check_eq!(o_seen, 0x9999, "the other VM's APIAKeyLo_EL1");
    check!(
        o_generic != generic,
        "PACGA the same with other keys: {generic:#x}"
    );
    drop(other);
    let again = pauth_round(&g)?;
    check_eq!(
        again,
        [signed, ptr, generic, 0x1111],
        "the first VM's keys after the other's"
    );
    check_eq!(o_signed & 0xffff_ffff_ffff, ptr, "the other VM's PACIA");
    Ok(())
}

/// A guest's FPMR is its own: it reads what the VMM set, the VMM reads what it wrote, a value
/// the VMM sets between two exits is what it reads next, and the VMM thread's own FPMR is
/// the same after every KVM_RUN; another VM's vCPU run in between reads its own.
fn fpmr_guest() -> TestResult {
    if !host_has_fpmr() {
        return ktap::skip("the CPU has no FPMR");
    }
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_fpmr, guest_fpmr_end)));
    t!(set_reg(g.vcpu, FPMR, FPMR_VMM as u128));
    t!(set_reg(g.vcpu, x(2), FPMR_GUEST as u128));
    set_host_fpmr(FPMR_HOST);
    let r = g.run_to_mmio();
    check_eq!(host_fpmr(), FPMR_HOST, "the VMM's FPMR after the first run");
    check_eq!(
        r,
        Ok((MMIO, FPMR_VMM, 8, true)),
        "the guest's first FPMR read"
    );
    let r = g.run_to_mmio();
    check_eq!(
        host_fpmr(),
        FPMR_HOST,
        "the VMM's FPMR after the guest's write"
    );
    check_eq!(
        r,
        Ok((MMIO + 0x10, FPMR_GUEST, 8, true)),
        "the guest's write"
    );
    check_eq!(
        get_reg(g.vcpu, FPMR),
        Ok(FPMR_GUEST as u128),
        "FPMR the guest wrote"
    );
    // Another VM's vCPU, run by the same thread right after: it reads its own FPMR (0 after
    // init), not the value the first guest left.
    let other = t!(Guest::another(code!(guest_fpmr, guest_fpmr_end), 0));
    check_eq!(
        other.run_to_mmio(),
        Ok((MMIO, 0, 8, true)),
        "another VM's first FPMR read"
    );
    drop(other);
    t!(set_reg(g.vcpu, FPMR, FPMR_VMM2 as u128));
    let r = g.run_to_mmio();
    check_eq!(host_fpmr(), FPMR_HOST, "the VMM's FPMR after the third run");
    check_eq!(
        r,
        Ok((MMIO + 0x18, FPMR_VMM2, 8, true)),
        "FPMR the VMM set between runs"
    );
    set_host_fpmr(0);
    Ok(())
}

/// A VM whose VMM hid FPMR (ID_AA64PFR2_EL1.FPMR 0): the guest's FPMR reads and writes are
/// Undefined Instruction exceptions (HCRX_EL2.EnFPM clear, Linux's kvm_calculate_traps), and so
/// are the FP8 instructions (`fp8_follows_fpmr`).
fn fpmr_hidden_is_undefined() -> TestResult {
    if !host_has_fpmr() {
        return ktap::skip("the CPU has no FPMR");
    }
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_fpmr, guest_fpmr_end)));
    let pfr2 = t!(get_reg(g.vcpu, PFR2)) as u64;
    t!(set_reg(g.vcpu, PFR2, (pfr2 & !k::ID_AA64PFR2_FPMR) as u128));
    t!(set_reg(g.vcpu, x(6), 0x77));
    set_host_fpmr(FPMR_HOST);
    for (what, addr, data) in [
        ("the read", MMIO + 8, None),
        ("after the read", MMIO, Some(0x77)),
        ("the write", MMIO + 8, None),
    ] {
        let (a, d, _, _) = t!(g.run_to_mmio());
        check_eq!(a, addr, "{what}: exit address");
        match data {
            None => check_eq!(
                d >> 26,
                0,
                "{what}: ESR_EL1 {d:#x}: not an Undefined Instruction"
            ),
            Some(v) => check_eq!(d, v, "{what}: x6 changed"),
        }
    }
    check_eq!(host_fpmr(), FPMR_HOST, "the VMM's FPMR");
    set_host_fpmr(0);
    drop(g);
    fp8_follows_fpmr()
}

/// An FP8 instruction (FMLALB V0.8H, V0.16B, V0.16B, FEAT_FP8FMA, as Linux's hwcap test runs it)
/// in place of guest_fpmr's first FPMR read: it executes in a VM that shows FPMR and is
/// UNDEFINED in one whose VMM hid it (HCRX_EL2.EnFPM clear). Where the CPU lacks FP8FMA, not
/// checked.
fn fp8_follows_fpmr() -> TestResult {
    const FPFR0: u64 = k::sysreg_id(3, 0, 0, 4, 7);
    const F8FMA: u64 = 1 << 30;
    let mut code = code!(guest_fpmr, guest_fpmr_end).to_vec();
    code[24..28].copy_from_slice(&0x0ec0_fc00u32.to_le_bytes());
    for hide in [false, true] {
        let kvm = kvm!();
        let g = t!(Guest::new(kvm, &code));
        if t!(get_reg(g.vcpu, FPFR0)) as u64 & F8FMA == 0 {
            println!("    # FP8 instructions not checked: no FP8FMA");
            return Ok(());
        }
        let pfr2 = t!(get_reg(g.vcpu, PFR2)) as u64;
        if hide {
            t!(set_reg(g.vcpu, PFR2, (pfr2 & !k::ID_AA64PFR2_FPMR) as u128));
        }
        t!(set_reg(g.vcpu, x(6), 0x77));
        let (a, d, _, _) = t!(g.run_to_mmio());
        if hide {
            check_eq!(a, MMIO + 8, "FP8 with FPMR hidden: no UNDEF");
            check_eq!(d >> 26, 0, "FP8 with FPMR hidden: ESR_EL1 {d:#x}");
        } else {
            check_eq!((a, d), (MMIO, 0x77), "FP8 with FPMR shown");
        }
    }
    Ok(())
}

fn irq_line(vm: i32, irq: u32, level: u32) -> SysResult {
    let l = [irq, level];
    ioctl(
        vm,
        svelt_abi::uapi::kvm_vgic::KVM_IRQ_LINE,
        l.as_ptr() as usize,
    )
}

/// KVM_IRQ_LINE's `irq` for vCPU `vcpu`'s IRQ (0) or FIQ (1) input (KVM_ARM_IRQ_TYPE_CPU).
fn cpu_line(vcpu: u32, num: u32) -> u32 {
    (vcpu << 16) | num
}

/// ISR_EL1's F and I bits.
const ISR_F: u64 = 1 << 6;
const ISR_I: u64 = 1 << 7;

/// A VM without an in-kernel GIC: the VMM drives the vCPU's IRQ and FIQ inputs with
/// KVM_IRQ_LINE (KVM_ARM_IRQ_TYPE_CPU, Linux's vcpu_interrupt_line). The guest takes the IRQ
/// once it unmasks, sees it in ISR_EL1 while the line is high, takes it again after its ERET
/// while the line stays high, and no more once it is lowered; the same for the FIQ. Linux's
/// errors: EINVAL for a vCPU that does not exist or a number past the FIQ, ENXIO once the VM
/// has a vGIC.
fn irq_line_without_vgic() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_irq, guest_irq_end)));
    check_eq!(irq_line(g.vm, cpu_line(1, 0), 1), Err(EINVAL), "no vCPU 1");
    check_eq!(irq_line(g.vm, cpu_line(0, 2), 1), Err(EINVAL), "line 2");
    check_eq!(
        irq_line(g.vm, (1 << 28) | cpu_line(0, 0), 1),
        Err(EINVAL),
        "vCPU 256"
    );
    check_eq!(g.run_to_mmio(), Ok((MMIO, 0, 8, true)), "ready");
    check_eq!(
        g.run_to_mmio(),
        Ok((MMIO + 0x30, 0, 8, true)),
        "nothing pending"
    );
    // Raised: taken; lowered inside the handler: gone from ISR_EL1, not taken again.
    t!(irq_line(g.vm, cpu_line(0, 0), 1));
    check_eq!(irq_line(g.vm, cpu_line(0, 0), 1), Ok(0), "raised twice");
    let (addr, isr, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 0x20, "IRQ not taken");
    check!(isr & ISR_I != 0, "ISR_EL1 {isr:#x} in the handler");
    t!(irq_line(g.vm, cpu_line(0, 0), 0));
    let (addr, isr, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 0x28);
    check_eq!(isr & (ISR_I | ISR_F), 0, "ISR_EL1 {isr:#x} after lowering");
    check_eq!(
        g.run_to_mmio(),
        Ok((MMIO + 0x30, 0, 8, true)),
        "taken again"
    );
    // Held high: taken again after the ERET.
    t!(irq_line(g.vm, cpu_line(0, 0), 1));
    check_eq!(g.run_to_mmio().map(|m| m.0), Ok(MMIO + 0x20));
    let (addr, isr, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 0x28);
    check!(isr & ISR_I != 0, "ISR_EL1 {isr:#x} while still high");
    check_eq!(g.run_to_mmio().map(|m| m.0), Ok(MMIO + 0x20), "level");
    t!(irq_line(g.vm, cpu_line(0, 0), 0));
    check_eq!(g.run_to_mmio().map(|m| m.0), Ok(MMIO + 0x28));
    check_eq!(g.run_to_mmio(), Ok((MMIO + 0x30, 0, 8, true)), "lowered");
    // The FIQ input.
    t!(irq_line(g.vm, cpu_line(0, 1), 1));
    let (addr, isr, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 0x40, "FIQ not taken");
    check_eq!(
        isr & (ISR_I | ISR_F),
        ISR_F,
        "ISR_EL1 {isr:#x} in the FIQ handler"
    );
    t!(irq_line(g.vm, cpu_line(0, 1), 0));
    let (addr, isr, _, _) = t!(g.run_to_mmio());
    check_eq!(addr, MMIO + 0x48);
    check_eq!(
        isr & (ISR_I | ISR_F),
        0,
        "ISR_EL1 {isr:#x} after lowering the FIQ"
    );
    check_eq!(
        g.run_to_mmio(),
        Ok((MMIO + 0x30, 0, 8, true)),
        "FIQ lowered"
    );
    drop(g);
    // With a vGIC, the CPU lines are not there.
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_irq, guest_irq_end)));
    let mut d = k::KvmCreateDevice {
        ty: svelt_abi::uapi::kvm_vgic::KVM_DEV_TYPE_ARM_VGIC_V3,
        fd: 0,
        flags: 0,
    };
    if ioctl(g.vm, k::KVM_CREATE_DEVICE, &mut d as *mut _ as usize).is_ok() {
        check_eq!(irq_line(g.vm, cpu_line(0, 0), 1), Err(ENXIO), "with a vGIC");
        t!(sys::close(d.fd as i32));
    }
    Ok(())
}

/// KVM_SET_MP_STATE(SUSPENDED), arm64's third state (a VMM's PSCI SYSTEM_SUSPEND): it reads
/// back; each KVM_RUN waits as a WFI and, with an interrupt pending (here the vCPU's IRQ line,
/// no vGIC), ends with KVM_EXIT_SYSTEM_EVENT of type KVM_SYSTEM_EVENT_WAKEUP and no data,
/// the guest not run; the state stays until the VMM makes the vCPU runnable, and then the
/// guest runs.
fn mp_state_suspended() -> TestResult {
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_irq, guest_irq_end)));
    let get = || -> SysResult<u32> {
        let mut mp = 0u32;
        ioctl(g.vcpu, k::KVM_GET_MP_STATE, &mut mp as *mut u32 as usize)?;
        Ok(mp)
    };
    let set = |mp: u32| ioctl(g.vcpu, k::KVM_SET_MP_STATE, &mp as *const u32 as usize);
    t!(set(k::KVM_MP_STATE_SUSPENDED));
    check_eq!(get(), Ok(k::KVM_MP_STATE_SUSPENDED));
    t!(irq_line(g.vm, cpu_line(0, 0), 1));
    let pc = t!(get_reg(g.vcpu, CoreReg::Pc.id()));
    for round in 0..2 {
        check_eq!(g.run(), Ok(0), "round {round}");
        check_eq!(g.exit_reason(), k::KVM_EXIT_SYSTEM_EVENT, "round {round}");
        check_eq!(
            g.run_u32(k::run::SYSTEM_EVENT_TYPE),
            k::KVM_SYSTEM_EVENT_WAKEUP
        );
        check_eq!(g.run_u32(k::run::SYSTEM_EVENT_NDATA), 0);
        check_eq!(get(), Ok(k::KVM_MP_STATE_SUSPENDED), "sticky");
    }
    check_eq!(
        get_reg(g.vcpu, CoreReg::Pc.id()),
        Ok(pc),
        "the guest did not run"
    );
    t!(irq_line(g.vm, cpu_line(0, 0), 0));
    t!(set(k::KVM_MP_STATE_RUNNABLE));
    check_eq!(g.run_to_mmio(), Ok((MMIO, 0, 8, true)), "runnable again");
    Ok(())
}

/// What the kicked vCPU's thread and the kicking thread share.
struct KickShared {
    vcpu: i32,
    vm: i32,
    run: usize,
    /// Kicks the vCPU thread has seen end KVM_RUN.
    done: AtomicU32,
    /// How many it is to see.
    total: u32,
    /// CLOCK_MONOTONIC when KVM_RUN returned for the last one.
    t1: AtomicU64,
    /// The first thing that went wrong (an errno, or an exit's address), 0 if none.
    bad: AtomicU64,
}

static KICKS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_kick(_: i32, _: *mut SigInfo, _: *mut u8) {
    KICKS.fetch_add(1, Ordering::Relaxed);
}

/// The vCPU thread: KVM_RUN over and over; a signal's EINTR (KVM_EXIT_INTR) and the guest's
/// IRQ handler (MMIO +0x20, after which it lowers the line) are the kicks it counts.
extern "C" fn kicked_vcpu(arg: usize) -> i32 {
    // SAFETY: `arg` is the KickShared the main thread keeps until it joined this thread.
    let s = unsafe { &*(arg as *const KickShared) };
    let reason = |s: &KickShared| {
        // SAFETY: the kvm_run page is mapped until the main thread joined this thread.
        unsafe { ((s.run + k::run::EXIT_REASON) as *const u32).read_volatile() }
    };
    let addr = |s: &KickShared| {
        // SAFETY: as above.
        unsafe { ((s.run + k::run::MMIO_PHYS_ADDR) as *const u64).read_volatile() }
    };
    while s.done.load(Ordering::Relaxed) < s.total {
        let r = ioctl(s.vcpu, k::KVM_RUN, 0);
        let t1 = sys::now_ns();
        let saw = match r {
            Err(EINTR) if reason(s) == k::KVM_EXIT_INTR => true,
            Ok(_) if reason(s) == k::KVM_EXIT_MMIO && addr(s) == MMIO + 0x20 => {
                let _ = irq_line(s.vm, cpu_line(0, 0), 0);
                true
            }
            Ok(_) if reason(s) == k::KVM_EXIT_MMIO && [MMIO, MMIO + 0x28].contains(&addr(s)) => {
                false
            }
            r => {
                let code = match r {
                    Err(e) => e.0 as u64,
                    Ok(_) => (reason(s) as u64) << 32 | addr(s),
                };
                let _ = s
                    .bad
                    .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
                s.done.store(s.total, Ordering::Release);
                return 1;
            }
        };
        if saw {
            s.t1.store(t1, Ordering::Relaxed);
            s.done.fetch_add(1, Ordering::Release);
        }
    }
    0
}

fn median_us(v: &mut [u64]) -> f64 {
    v.sort_unstable();
    v[v.len() / 2] as f64 / 1000.0
}

/// A vCPU thread spinning in guest code is made to leave it by another thread: a signal ends
/// KVM_RUN with EINTR and KVM_EXIT_INTR, and an IRQ raised with KVM_IRQ_LINE is taken by the
/// guest, both without waiting for a timer tick (Linux's kvm_vcpu_kick). The median time from
/// the kick to KVM_RUN's return is printed, never checked.
fn kick_running_vcpu() -> TestResult {
    const N: u32 = 20;
    let kvm = kvm!();
    let g = t!(Guest::new(kvm, code!(guest_irq, guest_irq_end)));
    t!(set_reg(g.vcpu, x(5), 1)); // spin after unmasking
    t!(set_handler(SIGUSR1, on_kick, 0, 0));
    let shared = KickShared {
        vcpu: g.vcpu,
        vm: g.vm,
        run: g.run as usize,
        done: AtomicU32::new(0),
        total: 2 * N,
        t1: AtomicU64::new(0),
        bad: AtomicU64::new(0),
    };
    let th = t!(spawn_thread(kicked_vcpu, &shared as *const _ as usize, 0));
    let pid = sys::getpid();
    let pause = |ms: u64| sys::nanosleep(&Timespec::from_ns(ms * 1_000_000), None);
    let (mut sig_lat, mut irq_lat, mut resent) = (Vec::new(), Vec::new(), 0);
    let mut failed = None;
    for i in 0..2 * N {
        // Let the vCPU thread get back into the guest (a signal that finds it outside
        // KVM_RUN is sent again below).
        let _ = pause(5);
        if shared.bad.load(Ordering::Relaxed) != 0 {
            break;
        }
        let signal = i < N;
        let mut t0 = sys::now_ns();
        if signal {
            let _ = sys::tgkill(pid, th.tid, SIGUSR1);
        } else {
            let _ = irq_line(g.vm, cpu_line(0, 0), 1);
        }
        let mut waited = 0;
        let start = t0;
        while shared.done.load(Ordering::Acquire) == i {
            let _ = sys::sched_yield();
            waited += 1;
            // A loaded host may keep the vCPU thread off its CPU for a while: the kick has
            // ten seconds (signals are sent again every 20,000 yields).
            if sys::now_ns().saturating_sub(start) > 10_000_000_000 {
                failed = Some(i);
                break;
            }
            if signal && waited % 20_000 == 0 {
                resent += 1;
                t0 = sys::now_ns();
                let _ = sys::tgkill(pid, th.tid, SIGUSR1);
            }
        }
        if failed.is_some() {
            break;
        }
        let lat = shared.t1.load(Ordering::Relaxed).saturating_sub(t0);
        if signal {
            sig_lat.push(lat);
        } else {
            irq_lat.push(lat);
        }
    }
    if failed.is_some() || shared.bad.load(Ordering::Relaxed) != 0 {
        // Free the vCPU thread: the guest's spin ends with a signal's EINTR.
        shared.done.store(shared.total, Ordering::Release);
        let _ = sys::tgkill(pid, th.tid, SIGUSR1);
    }
    th.join();
    check_eq!(
        shared.bad.load(Ordering::Relaxed),
        0,
        "the vCPU thread saw a wrong exit"
    );
    check!(failed.is_none(), "kick {failed:?} never ended KVM_RUN");
    check!(
        KICKS.load(Ordering::Relaxed) >= N,
        "handler ran {} times",
        KICKS.load(Ordering::Relaxed)
    );
    println!(
        "    # kick to KVM_RUN's return, median of {N}: signal {:.0} us, KVM_IRQ_LINE {:.0} us ({resent} signals sent again)",
        median_us(&mut sig_lat),
        median_us(&mut irq_lat)
    );
    Ok(())
}

// After the macros it uses.
#[path = "kvm/aarch32.rs"]
mod aarch32;
#[path = "kvm/dring.rs"]
mod dring;
#[path = "kvm/gmem.rs"]
mod gmem;
#[path = "kvm/its.rs"]
mod its;
// LPI pending tables.
#[path = "kvm/lpipend.rs"]
mod lpipend;
#[path = "kvm/pmu.rs"]
mod pmu;
// SCTLR2_EL1 for guests.
#[path = "kvm/sctlr2.rs"]
mod sctlr2;
#[path = "kvm/sgi.rs"]
mod sgi;
#[path = "kvm/vmids.rs"]
mod vmids;
// A guest timer that fires while KVM decides how long a WFI sleeps.
#[path = "kvm/wfi_timer.rs"]
mod wfi_timer;

// Guest debugging from the VMM.
#[path = "kvm/gdebug.rs"]
mod gdebug;

// TCR2, S1PIE and S1POE for guests; GCS hidden.
#[path = "kvm/gcs_poe.rs"]
mod gcs_poe;
use gcs_poe::{poe_guest, poe_registers_follow_the_vm};

fn main(_a: &rt::Args) -> i32 {
    mount_when_init();
    ktap::run(&[
        ("system_ioctls", system_ioctls),
        ("vcpus_and_their_errors", vcpus_and_their_errors),
        ("memory_slots", memory_slots),
        ("core_registers", core_registers),
        ("guest_ram_and_mmio", guest_ram_and_mmio),
        ("psci_and_smccc", psci_and_smccc),
        ("signals_end_run", signals_end_run),
        ("fp_registers_stay_apart", fp_registers_stay_apart),
        (
            "fp_registers_stay_apart_across_switches",
            fp_registers_stay_apart_across_switches,
        ),
        (
            "sve_guest_beside_a_streaming_task",
            sve_guest_beside_a_streaming_task,
        ),
        (
            "no_syndrome_and_readonly_slots",
            no_syndrome_and_readonly_slots,
        ),
        ("guest_sees_no_sve_or_sme", guest_sees_no_sve_or_sme),
        ("sve_guest", sve_guest),
        ("vmm_killed_in_run", vmm_killed_in_run),
        ("guest_memory_is_the_vmms", guest_memory_is_the_vmms),
        ("id_registers_and_firmware", id_registers_and_firmware),
        ("smccc_filter", smccc_filter),
        ("binary_stats", binary_stats),
        ("vcpu_events", vcpu_events),
        ("vgic_config", vgic_config),
        ("vgic_first_run", vgic_first_run),
        ("vgic_level_info", vgic_level_info),
        ("vgic_cpu_sysregs", vgic_cpu_sysregs),
        (
            "qemu_mp_state_and_pending_tables",
            qemu_mp_state_and_pending_tables,
        ),
        ("writable_id_registers", writable_id_registers),
        ("smccc_services", smccc_services),
        ("coalesced_mmio", coalesced_mmio),
        ("vgic_spi", vgic_spi),
        ("vgic_its_device", its::vgic_its_device),
        ("vgic_its_lpi", its::vgic_its_lpi),
        ("vgic_its_save_restore", its::vgic_its_save_restore),
        (
            "guest_debug_caps_and_errors",
            gdebug::guest_debug_caps_and_errors,
        ),
        ("guest_debug_single_step", gdebug::guest_debug_single_step),
        ("guest_debug_breakpoints", gdebug::guest_debug_breakpoints),
        (
            "guest_debug_own_breakpoints",
            gdebug::guest_debug_own_breakpoints,
        ),
        ("lpi_pending_tables", lpipend::lpi_pending_tables),
        ("sctlr2_guest", sctlr2::sctlr2_guest),
        ("pmu_attributes", pmu::pmu_attributes),
        ("pmu_guest_counts", pmu::pmu_guest_counts),
        ("vgic_sgi_back_to_back", sgi::vgic_sgi_back_to_back),
        (
            "wfi_timer_fires_while_deciding",
            wfi_timer::wfi_timer_fires_while_deciding,
        ),
        ("irqfd_and_ioeventfd", irqfd_and_ioeventfd),
        ("dirty_log", dirty_log),
        ("dirty_ring_caps", dring::dirty_ring_caps),
        ("dirty_ring_guest", dring::dirty_ring_guest),
        ("hidden_tlbi_os", hidden_tlbi_os),
        ("gcs_registers_follow_the_vm", gcs_registers_follow_the_vm),
        ("poe_registers_follow_the_vm", poe_registers_follow_the_vm),
        ("poe_guest", poe_guest),
        ("pauth_for_guests", pauth_for_guests),
        ("fpmr_one_reg", fpmr_one_reg),
        ("fpmr_guest", fpmr_guest),
        ("fpmr_hidden_is_undefined", fpmr_hidden_is_undefined),
        ("irq_line_without_vgic", irq_line_without_vgic),
        ("mp_state_suspended", mp_state_suspended),
        ("kick_running_vcpu", kick_running_vcpu),
        ("more_vms_than_vmids", vmids::more_vms_than_vmids),
        ("aarch32_vcpu_init", aarch32::aarch32_vcpu_init),
        ("aarch32_guest", aarch32::aarch32_guest),
        ("guest_memfd_file", gmem::guest_memfd_file),
        ("guest_memfd_guest", gmem::guest_memfd_guest),
        ("everything_given_back", everything_given_back),
    ])
}

entry!(main);
