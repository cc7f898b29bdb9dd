//! SME for guests (issue 29; docs/kvm-sme.md): the capability and vCPU feature of the series
//! "KVM: arm64: Implement support for SME", the streaming vector lengths and finalize, the
//! errors of the ZA/ZT0 registers in the series' order, round trips of every new register
//! through GET/SET_ONE_REG at each length the host offers while a guest runs streaming code and
//! reports what it sees, a guest's first SME use reading zero, and ZA/ZT0 kept apart between
//! VMs and between a guest and its VMM. On a kernel without SME for guests (Linux 7.3) only
//! what it answers is checked: no capability, the feature bit refused, no SME registers.
#![no_std]
#![no_main]

use svelt_abi::uapi::kvm::{self as k, CoreReg, KvmUserspaceMemoryRegion, KvmVcpuInit};
use svelt_abi::uapi::kvm_sme as m;
use svelt_abi::uapi::kvm_sve as ks;
use svelt_user::fuzz::{Random, Rng};
use svelt_user::guest_code as code;
use svelt_user::ktap::TestResult;
use svelt_user::kvm::{
    self, finalize, get_one as get, ioctl, open as open_kvm, reg_list, set_one as set, set_vls,
    vls_words,
};
use svelt_user::proc::*;
use svelt_user::sys::*;
use svelt_user::*;

const RAM_IPA: u64 = 0x1_0000;
/// Code at 0, the guest's dump area at DUMP (Z0 +0, P0 +0x100, ZT0 +0x200, ZA rows from
/// +0x1000), a pattern the guest loads into ZA at PATTERN.
const RAM_SIZE: usize = 0x4_0000;
const DUMP: usize = 0x1_0000;
const PATTERN: usize = 0x3_0000;
const MMIO: u64 = 0x1000_0000;
const SMCR_FA64: u64 = 1 << 31;
const SMCR_EZT0: u64 = 1 << 30;

core::arch::global_asm!(
    ".section .rodata.guests, \"a\"",
    ".balign 4",
    ".arch_extension sme",
    ".arch_extension sme2",
    // Opens FP, SVE and SME at EL1 and EL0 through CPACR_EL1 (x0).
    ".macro open_fp_sve_sme",
    "mov x0, #(3 << 20)",
    "orr x0, x0, #(3 << 16)",
    "orr x0, x0, #(3 << 24)",
    "msr cpacr_el1, x0",
    "isb",
    ".endm",
    // Stores the ZA rows (SVL x4 bytes each) at x3 + 0x1000 and, when x9 != 0, ZT0 at
    // x3 + 0x200 (x8, w12).
    ".macro store_za_zt0",
    "mov w12, #0",
    "add x8, x3, #0x1000",
    "3:",
    "str za[w12, 0], [x8]",
    "add x8, x8, x4",
    "add w12, w12, #1",
    "cmp x12, x4",
    "b.lt 3b",
    "cbz x9, 4f",
    "add x8, x3, #0x200",
    "str zt0, [x8]",
    "4:",
    ".endm",
    // Opens FP, SVE and SME at EL1; reads the SVL (x4), SVCR (x5), TPIDR2_EL0 (x6) and
    // SMCR_EL1 (x7); stores Z0 and P0 if streaming, the ZA rows and (x9 != 0) ZT0 if ZA is on,
    // at x3; exits by an MMIO store. Run again: adds 1 to Z0's bytes if streaming, zeroes ZA,
    // sets TPIDR2_EL0 to 0x1234 and exits again.
    ".global guest_dump, guest_dump_end",
    "guest_dump:",
    "open_fp_sve_sme",
    "rdsvl x4, #1",
    "mrs x5, S3_3_C4_C2_2",
    "mrs x6, S3_3_C13_C0_5",
    "mrs x7, S3_0_C1_C2_6",
    "tbz x5, #0, 2f",
    "str z0, [x3]",
    "add x8, x3, #0x100",
    "str p0, [x8]",
    "2:",
    "tbz x5, #1, 4f",
    "store_za_zt0",
    "movz x1, #0x1000, lsl #16",
    "str x4, [x1]",
    "tbz x5, #0, 5f",
    "add z0.b, z0.b, #1",
    "5:",
    "tbz x5, #1, 6f",
    "zero {{za}}",
    "6:",
    "mov x6, #0x1234",
    "msr S3_3_C13_C0_5, x6",
    "str x4, [x1]",
    "b .",
    "guest_dump_end:",
    // The first SME use: opens SME, SMSTART (streaming mode and ZA), dumps Z0, P0, ZA and
    // (x9 != 0) ZT0 at x3 as guest_dump does, exits; run again: loads every ZA row (and ZT0)
    // from x10, exits with ZA live.
    ".global guest_first, guest_first_end",
    "guest_first:",
    "open_fp_sve_sme",
    "smstart",
    "rdsvl x4, #1",
    "mrs x5, S3_3_C4_C2_2",
    "str z0, [x3]",
    "add x8, x3, #0x100",
    "str p0, [x8]",
    "store_za_zt0",
    "movz x1, #0x1000, lsl #16",
    "str x4, [x1]",
    "mov w12, #0",
    "5:",
    "ldr za[w12, 0], [x10]",
    "add w12, w12, #1",
    "cmp x12, x4",
    "b.lt 5b",
    "cbz x9, 6f",
    "ldr zt0, [x10]",
    "6:",
    "str x4, [x1]",
    "b .",
    "guest_first_end:",
    // SMSTART, then loads every ZA row from x10 over and over (each load after the vCPU was
    // put away traps and brings its state back in).
    ".global guest_za_spin, guest_za_spin_end",
    "guest_za_spin:",
    "open_fp_sve_sme",
    "smstart",
    "rdsvl x4, #1",
    "1:",
    "mov w12, #0",
    "2:",
    "ldr za[w12, 0], [x10]",
    "add w12, w12, #1",
    "cmp x12, x4",
    "b.lt 2b",
    "b 1b",
    "guest_za_spin_end:",
    // SMCR_EL1.LEN := 0 and reports RDSVL; run again: SMCR_EL1.LEN := 1 as the first access
    // of the run (the registers are not loaded) and reports RDSVL.
    ".global guest_smcr, guest_smcr_end",
    "guest_smcr:",
    "open_fp_sve_sme",
    "movz x1, #0x1000, lsl #16",
    "msr S3_0_C1_C2_6, xzr",
    "isb",
    "rdsvl x4, #1",
    "str x4, [x1]",
    "mov x6, #1",
    "msr S3_0_C1_C2_6, x6",
    "isb",
    "rdsvl x4, #1",
    "str x4, [x1]",
    "b .",
    "guest_smcr_end:",
    // SMSTART SM and exits; run again: reads SVCR as the first access of the run (the
    // registers are not loaded) into x5 and exits.
    ".global guest_svcr, guest_svcr_end",
    "guest_svcr:",
    "open_fp_sve_sme",
    "movz x1, #0x1000, lsl #16",
    "smstart sm",
    "str x1, [x1]",
    "mrs x5, S3_3_C4_C2_2",
    "str x1, [x1]",
    "b .",
    "guest_svcr_end:",
    // FPMR and streaming mode: reads FPMR (x5; the VMM set SVCR.SM), SMSTOP SM and reads it
    // again (x6), writes x2 to it, SMSTART SM and reads it (x7), writes x2 to it in streaming
    // mode, each followed by an exit; spins.
    ".global guest_fpmr_sm, guest_fpmr_sm_end",
    "guest_fpmr_sm:",
    "open_fp_sve_sme",
    "movz x1, #0x1000, lsl #16",
    "mrs x5, S3_3_C4_C4_2",
    "str x1, [x1]",
    "smstop sm",
    "mrs x6, S3_3_C4_C4_2",
    "str x1, [x1]",
    "msr S3_3_C4_C4_2, x2",
    "smstart sm",
    "mrs x7, S3_3_C4_C4_2",
    "str x1, [x1]",
    "msr S3_3_C4_C4_2, x2",
    "str x1, [x1]",
    "b .",
    "guest_fpmr_sm_end:",
    // SMSTART SM; Z0 from x10 and P2 from x11, then checks them against memory forever; on a
    // difference, an MMIO store (x12 = 1 for Z0, 2 for P2).
    ".global guest_sm_check, guest_sm_check_end",
    "guest_sm_check:",
    "open_fp_sve_sme",
    "movz x1, #0x1000, lsl #16",
    "smstart sm",
    "ptrue p0.b",
    "ldr z0, [x10]",
    "ldr p2, [x11]",
    "1:",
    "ldr z1, [x10]",
    "cmpne p1.b, p0/z, z0.b, z1.b",
    "mov x12, #1",
    "b.any 2f",
    "ldr p3, [x11]",
    "eor p4.b, p0/z, p2.b, p3.b",
    "ptest p0, p4.b",
    "mov x12, #2",
    "b.any 2f",
    "b 1b",
    "2:",
    "str x12, [x1]",
    "b .",
    "guest_sm_check_end:",
    // CPACR_EL1 with FP/SIMD and SME on but SVE off (ZEN 0: SVE instructions trap to EL1 outside
    // streaming mode), its vectors at 3: (each stores 3 by MMIO, ESR_EL1 in x13), SMSTART SM,
    // then Z0 from x10 checked against memory forever: in streaming mode SVE instructions
    // answer to SMEN alone, so no exception is ever taken (x12 = 1: Z0 changed).
    ".balign 2048",
    ".global guest_sm_zen_off, guest_sm_zen_off_end",
    "guest_sm_zen_off:",
    "mov x0, #(3 << 20)",
    "orr x0, x0, #(3 << 24)",
    "msr cpacr_el1, x0",
    "adr x0, 3f",
    "msr vbar_el1, x0",
    "isb",
    "movz x1, #0x1000, lsl #16",
    "smstart sm",
    "ptrue p0.b",
    "ldr z0, [x10]",
    "1:",
    "ldr z1, [x10]",
    "cmpne p1.b, p0/z, z0.b, z1.b",
    "mov x12, #1",
    "b.any 2f",
    "b 1b",
    "2:",
    "str x12, [x1]",
    "b .",
    ".balign 2048",
    "3:",
    ".rept 16",
    "mrs x13, esr_el1",
    "mov x12, #3",
    "str x12, [x1]",
    "b .",
    ".balign 128",
    ".endr",
    "guest_sm_zen_off_end:",
    ".text",
);

unsafe extern "C" {
    static guest_dump: u8;
    static guest_dump_end: u8;
    static guest_first: u8;
    static guest_first_end: u8;
    static guest_za_spin: u8;
    static guest_za_spin_end: u8;
    static guest_smcr: u8;
    static guest_smcr_end: u8;
    static guest_svcr: u8;
    static guest_svcr_end: u8;
    static guest_fpmr_sm: u8;
    static guest_fpmr_sm_end: u8;
    static guest_sm_check: u8;
    static guest_sm_check_end: u8;
    static guest_sm_zen_off: u8;
    static guest_sm_zen_off_end: u8;
}

macro_rules! kvm {
    () => {
        match open_kvm() {
            Ok(Some(fd)) => fd,
            Ok(None) => return ktap::skip("no KVM in this kernel"),
            Err(e) => return Err(e),
        }
    };
}

fn has_sme_guests(kvm: i32) -> bool {
    kvm::has_cap(kvm, m::KVM_CAP_ARM_SME)
}

fn has_sve_guests(kvm: i32) -> bool {
    kvm::has_cap(kvm, ks::KVM_CAP_ARM_SVE)
}

/// /dev/kvm for the calling test; skips it where the kernel has no KVM or offers no SME for
/// guests.
macro_rules! sme_kvm {
    () => {{
        let kvm = kvm!();
        if !has_sme_guests(kvm) {
            let _ = sys::close(kvm);
            return ktap::skip("no KVM_CAP_ARM_SME (252): no SME for guests");
        }
        kvm
    }};
}

/// Skips the calling test (closing `kvm`) unless `g`'s vCPU offers streaming lengths 16 and 32.
macro_rules! svl_16_and_32_or_skip {
    ($g:expr, $kvm:expr) => {
        if t!(vls_words($g.vcpu, m::KVM_REG_ARM64_SME_VLS))[0] & 3 != 3 {
            let _ = sys::close($kvm);
            return ktap::skip("needs streaming lengths 16 and 32");
        }
    };
}

fn get64(vcpu: i32, id: u64) -> SysResult<u64> {
    let mut b = [0u8; 8];
    get(vcpu, id, &mut b).map(|_| u64::from_le_bytes(b))
}

fn set64(vcpu: i32, id: u64, v: u64) -> SysResult {
    set(vcpu, id, &v.to_le_bytes())
}

/// SME_VLS with the streaming lengths `vqs` (bit n: VQ n + 1), all of them in the first word.
fn set_sme_vls(vcpu: i32, vqs: u64) -> SysResult {
    set_vls(vcpu, m::KVM_REG_ARM64_SME_VLS, [vqs, 0, 0, 0, 0, 0, 0, 0])
}

/// KVM_ARM_PREFERRED_TARGET, then KVM_ARM_VCPU_INIT of `vcpu` with `features` (word 0).
fn vcpu_init(vm: i32, vcpu: i32, features: u32) -> SysResult {
    let mut init = KvmVcpuInit::default();
    ioctl(
        vm,
        k::KVM_ARM_PREFERRED_TARGET,
        &mut init as *mut _ as usize,
    )?;
    init.features[0] |= features;
    ioctl(vcpu, k::KVM_ARM_VCPU_INIT, &init as *const _ as usize)
}

const PFR1: u64 = k::sysreg_id(3, 0, 0, 4, 1);
const SMFR0: u64 = k::sysreg_id(3, 0, 0, 4, 5);

/// A VM with guest RAM holding `code` and one vCPU initialised with `features` (besides PSCI
/// 0.2), not finalized.
struct Guest {
    vm: i32,
    vcpu: i32,
    ram: *mut u8,
    run: *mut u8,
    run_size: usize,
}

impl Guest {
    fn new(kvm: i32, code: &[u8], features: u32) -> Result<Guest, String> {
        let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
        let ram = t!(sys::mmap_anon(RAM_SIZE)) as *mut u8;
        // SAFETY: a fresh private mapping of RAM_SIZE bytes, code shorter than DUMP.
        unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), ram, code.len()) };
        let region = KvmUserspaceMemoryRegion {
            slot: 0,
            flags: 0,
            guest_phys_addr: RAM_IPA,
            memory_size: RAM_SIZE as u64,
            userspace_addr: ram as u64,
        };
        t!(ioctl(
            vm,
            k::KVM_SET_USER_MEMORY_REGION,
            &region as *const _ as usize
        ));
        let vcpu = t!(ioctl(vm, k::KVM_CREATE_VCPU, 0)) as i32;
        let run_size = t!(ioctl(kvm, k::KVM_GET_VCPU_MMAP_SIZE, 0));
        let run = t!(sys::mmap(
            0,
            run_size,
            PROT_READ | PROT_WRITE,
            MAP_SHARED,
            vcpu,
            0
        )) as *mut u8;
        let g = Guest {
            vm,
            vcpu,
            ram,
            run,
            run_size,
        };
        t!(g.init(features));
        t!(set64(vcpu, CoreReg::Pc.id(), RAM_IPA));
        t!(g.set_x(3, RAM_IPA + DUMP as u64));
        t!(g.set_x(10, RAM_IPA + PATTERN as u64));
        Ok(g)
    }

    fn init(&self, features: u32) -> SysResult {
        vcpu_init(self.vm, self.vcpu, 1 << k::KVM_ARM_VCPU_PSCI_0_2 | features)
    }

    /// Caps the streaming lengths at `vqs` (as [`set_sme_vls`]) if given, finalizes the vector
    /// lengths, and sets SMCR_EL1 to `smcr` if given.
    fn finalize_sme(&self, vqs: Option<u64>, smcr: Option<u64>) -> SysResult<()> {
        if let Some(vqs) = vqs {
            set_sme_vls(self.vcpu, vqs)?;
        }
        finalize(self.vcpu, m::KVM_ARM_VCPU_VEC)?;
        if let Some(smcr) = smcr {
            set64(self.vcpu, m::SMCR_EL1, smcr)?;
        }
        Ok(())
    }

    /// General register `n` (x0..x30).
    fn x(&self, n: usize) -> SysResult<u64> {
        get64(self.vcpu, CoreReg::X(n).id())
    }

    fn set_x(&self, n: usize, v: u64) -> SysResult {
        set64(self.vcpu, CoreReg::X(n).id(), v)
    }

    fn ram(&self, off: usize, len: usize) -> &[u8] {
        // SAFETY: inside the RAM mapping; the guest is not running (KVM_RUN returned).
        unsafe { core::slice::from_raw_parts(self.ram.add(off), len) }
    }

    fn write_ram(&self, off: usize, bytes: &[u8]) {
        // SAFETY: inside the RAM mapping (callers stay below RAM_SIZE); the guest is not
        // running.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ram.add(off), bytes.len()) };
    }

    /// Runs to the next exit, which must be an MMIO store to MMIO.
    fn run_to_mmio(&self) -> TestResult {
        t!(ioctl(self.vcpu, k::KVM_RUN, 0));
        // SAFETY: inside the mapped kvm_run page.
        let reason = unsafe { (self.run.add(k::run::EXIT_REASON) as *const u32).read_volatile() };
        check_eq!(reason, k::KVM_EXIT_MMIO, "exit reason");
        // SAFETY: as above.
        let addr = unsafe { (self.run.add(k::run::MMIO_PHYS_ADDR) as *const u64).read_volatile() };
        check_eq!(addr, MMIO, "MMIO address");
        Ok(())
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = sys::munmap(self.run as usize, self.run_size);
        let _ = sys::munmap(self.ram as usize, RAM_SIZE);
        let _ = sys::close(self.vcpu);
        let _ = sys::close(self.vm);
    }
}

const SME_BIT: u32 = 1 << m::KVM_ARM_VCPU_SME;
const SVE_BIT: u32 = 1 << ks::KVM_ARM_VCPU_SVE;

/// What Linux 7.3 (no SME for guests) and Svelt both answer, and Svelt's capability.
fn capability_and_feature() -> TestResult {
    let kvm = kvm!();
    let cap = t!(ioctl(
        kvm,
        k::KVM_CHECK_EXTENSION,
        m::KVM_CAP_ARM_SME as usize
    ));
    let g = t!(Guest::new(kvm, code!(guest_dump, guest_dump_end), 0));
    // A vCPU without SME has none of its registers.
    check_eq!(get64(g.vcpu, m::SVCR), Err(ENOENT));
    check_eq!(get64(g.vcpu, m::TPIDR2_EL0), Err(ENOENT));
    check_eq!(get64(g.vcpu, m::SMCR_EL1), Err(ENOENT));
    check_eq!(vls_words(g.vcpu, m::KVM_REG_ARM64_SME_VLS), Err(ENOENT));
    let ids = t!(reg_list(g.vcpu));
    check!(!ids.contains(&m::SVCR) && !ids.contains(&m::KVM_REG_ARM64_SME_VLS));
    // Its guest sees no SME.
    check_eq!(t!(get64(g.vcpu, PFR1)) & m::PFR1_SME, 0);
    check_eq!(t!(get64(g.vcpu, SMFR0)), 0);
    if cap == 1 {
        // SMIDR_EL1 too (the series' sme_visibility; Linux 7.3 decides nothing about it).
        check_eq!(get64(g.vcpu, m::SMIDR_EL1), Err(ENOENT));
        check!(!ids.contains(&m::SMIDR_EL1));
    }
    let other = t!(ioctl(g.vm, k::KVM_CREATE_VCPU, 1)) as i32;
    let r = vcpu_init(g.vm, other, SME_BIT);
    let _ = sys::close(other);
    // The feature differs from the VM's first vCPU (EINVAL); a kernel without SME for guests
    // knows no bit 10 (ENOENT, its check of the valid features comes first).
    check_eq!(r, Err(if cap == 0 { ENOENT } else { EINVAL }));
    drop(g);
    if cap == 0 {
        // Linux 7.3: bit 10 is past KVM_VCPU_VALID_FEATURES (kvm_vcpu_init_check_features).
        let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
        let vcpu = t!(ioctl(vm, k::KVM_CREATE_VCPU, 0)) as i32;
        let r = vcpu_init(vm, vcpu, SME_BIT);
        let _ = (sys::close(vcpu), sys::close(vm), sys::close(kvm));
        check_eq!(r, Err(ENOENT), "KVM_ARM_VCPU_SME without the capability");
        return Ok(());
    }
    check_eq!(cap, 1);
    check!(
        svelt_user::sme::has_sme(),
        "SME for guests on a host without SME"
    );
    let _ = sys::close(kvm);
    Ok(())
}

/// SME_VLS before and after finalize, finalize's errors, and the ZA/ZT0 errors in the series'
/// order (ENOENT, EINVAL, EBUSY, EPERM).
fn lengths_and_finalize() -> TestResult {
    let kvm = sme_kvm!();
    let g = t!(Guest::new(kvm, code!(guest_dump, guest_dump_end), SME_BIT));
    let vcpu = g.vcpu;
    // SME without SVE: no SVE_VLS, no Z registers outside streaming mode.
    check_eq!(vls_words(vcpu, ks::KVM_REG_ARM64_SVE_VLS), Err(ENOENT));
    let host = t!(vls_words(vcpu, m::KVM_REG_ARM64_SME_VLS))[0];
    check!(host != 0, "no SME length offered");
    let expected: u64 = svelt_user::sme::sme_vls()
        .iter()
        .map(|vl| 1u64 << (vl / 16 - 1))
        .sum();
    check_eq!(
        host,
        expected,
        "SME_VLS of a fresh vCPU (the host's lengths)"
    );
    let max_vq = 64 - host.leading_zeros() as u64;
    check_eq!(set_vls(vcpu, m::KVM_REG_ARM64_SME_VLS, [0; 8]), Err(EINVAL));
    check_eq!(set_sme_vls(vcpu, host | 1 << max_vq), Err(EINVAL));
    check_eq!(
        set_vls(
            vcpu,
            m::KVM_REG_ARM64_SME_VLS,
            [host, 0, 0, 0, 0, 0, 0, 1 << 63]
        ),
        Err(EINVAL)
    );
    let low = host & host.wrapping_neg();
    if host != low {
        // A set with a hole (the largest without the smallest) cannot be had.
        check_eq!(set_sme_vls(vcpu, host & !low), Err(EINVAL));
    }
    t!(set_sme_vls(vcpu, low));
    check_eq!(t!(vls_words(vcpu, m::KVM_REG_ARM64_SME_VLS))[0], low);
    // Before finalize: no run, no list; ZA EBUSY while SVCR.ZA is 0, then EPERM.
    let mut b = [0u8; 256];
    check_eq!(ioctl(vcpu, k::KVM_RUN, 0), Err(EPERM));
    check_eq!(reg_list(vcpu), Err(EPERM));
    check_eq!(get(vcpu, m::za_row(0, 0), &mut b), Err(EBUSY));
    check_eq!(get(vcpu, m::za_row(0, 1), &mut b), Err(ENOENT));
    check_eq!(set64(vcpu, m::SVCR, 4), Err(EINVAL));
    t!(set64(vcpu, m::SVCR, m::SVCR_ZA));
    check_eq!(get(vcpu, m::za_row(0, 0), &mut b), Err(EPERM));
    let svl = 16 * (64 - low.leading_zeros() as u64);
    check_eq!(get(vcpu, m::za_row(svl, 0), &mut b), Err(EINVAL));
    check_eq!(finalize(vcpu, 0), Err(EINVAL));
    t!(finalize(vcpu, m::KVM_ARM_VCPU_VEC));
    check_eq!(finalize(vcpu, m::KVM_ARM_VCPU_VEC), Err(EPERM));
    check_eq!(set_sme_vls(vcpu, low), Err(EPERM));
    t!(get(vcpu, m::za_row(svl - 1, 0), &mut b));
    check!(b.iter().all(|&x| x == 0), "ZA after SVCR.ZA 0->1 is zero");
    // SMPRI_EL1: no priorities (0 only).
    check_eq!(t!(get64(vcpu, m::SMPRI_EL1)), 0);
    check_eq!(set64(vcpu, m::SMPRI_EL1, 1), Err(EINVAL));
    t!(set64(vcpu, m::SMPRI_EL1, 0));
    let _ = sys::close(kvm);
    Ok(())
}

/// The VM's ID registers say SME (as the host) once its vCPUs have it; FA64 and SME2 can be
/// taken away (then FFR in streaming mode, and ZT0, are gone), not added.
fn id_registers() -> TestResult {
    let kvm = sme_kvm!();
    let g = t!(Guest::new(kvm, code!(guest_dump, guest_dump_end), SME_BIT));
    let vcpu = g.vcpu;
    let pfr1 = t!(get64(vcpu, PFR1));
    let smfr0 = t!(get64(vcpu, SMFR0));
    let host_sme = (svelt_user::sme::id_aa64pfr1() & m::PFR1_SME) >> m::PFR1_SME_SHIFT;
    check_eq!(
        (pfr1 & m::PFR1_SME) >> m::PFR1_SME_SHIFT,
        host_sme,
        "PFR1.SME"
    );
    check_eq!(
        smfr0 & m::SMFR0_FA64 != 0,
        svelt_user::sme::has_fa64(),
        "FA64"
    );
    check_eq!(set64(vcpu, PFR1, pfr1 & !m::PFR1_SME), Err(EINVAL));
    check_eq!(
        set64(vcpu, PFR1, pfr1 + (1 << m::PFR1_SME_SHIFT)),
        Err(EINVAL)
    );
    if smfr0 & m::SMFR0_FA64 == 0 {
        check_eq!(set64(vcpu, SMFR0, smfr0 | m::SMFR0_FA64), Err(EINVAL));
    }
    t!(set64(vcpu, SMFR0, smfr0 & !m::SMFR0_FA64));
    if host_sme >= 2 {
        t!(set64(
            vcpu,
            PFR1,
            pfr1 & !m::PFR1_SME | 1 << m::PFR1_SME_SHIFT
        ));
    }
    // SMIDR_EL1: the CPU's without priority support (SMPS), and only its own value back.
    let smidr = t!(get64(vcpu, m::SMIDR_EL1));
    check_eq!(smidr & m::SMIDR_SMPS, 0, "SMIDR_EL1.SMPS");
    check_eq!(set64(vcpu, m::SMIDR_EL1, smidr ^ 1), Err(EINVAL));
    t!(set64(vcpu, m::SMIDR_EL1, smidr));
    t!(finalize(vcpu, m::KVM_ARM_VCPU_VEC));
    t!(set64(vcpu, m::SVCR, m::SVCR_SM | m::SVCR_ZA));
    let mut b = [0u8; 256];
    check_eq!(
        get(vcpu, ks::ffr(0), &mut b),
        Err(ENOENT),
        "FFR without FA64"
    );
    check_eq!(get(vcpu, m::ZT0, &mut b), Err(ENOENT), "ZT0 without SME2");
    t!(get(vcpu, ks::zreg(0, 0), &mut b));
    let ids = t!(reg_list(vcpu));
    check!(!ids.contains(&ks::ffr(0)) && !ids.contains(&m::ZT0));
    check!(ids.contains(&ks::zreg(31, 0)) && ids.contains(&m::za_row(0, 0)));
    check!(!ids.contains(&ks::KVM_REG_ARM64_SVE_VLS));
    // Streaming mode hides the V registers of a vCPU without SVE.
    check_eq!(get(vcpu, CoreReg::V(0).id(), &mut b), Err(EINVAL));
    t!(set64(vcpu, m::SVCR, 0));
    t!(get(vcpu, CoreReg::V(0).id(), &mut b));
    check_eq!(get(vcpu, ks::zreg(0, 0), &mut b), Err(ENOENT));
    let _ = sys::close(kvm);
    Ok(())
}

/// Every new register round-trips through SET/GET_ONE_REG at each SME length the host offers,
/// with random values, and the guest, running streaming code, sees them; what the guest
/// changes comes back.
fn round_trips_with_a_streaming_guest() -> TestResult {
    let kvm = sme_kvm!();
    let sve = if has_sve_guests(kvm) { SVE_BIT } else { 0 };
    let mut seed = [0u8; 8];
    t!(sys::getrandom(&mut seed, 0));
    let mut rng = Rng(u64::from_le_bytes(seed) | 1);
    let fa64 = svelt_user::sme::has_fa64();
    let sme2 = svelt_user::sme::has_sme2();
    let lens = svelt_user::sme::sme_vls();
    for &svl in &lens {
        let g = t!(Guest::new(
            kvm,
            code!(guest_dump, guest_dump_end),
            SME_BIT | sve
        ));
        let vcpu = g.vcpu;
        let host = t!(vls_words(vcpu, m::KVM_REG_ARM64_SME_VLS))[0];
        let prefix = host & ((1u64 << (svl / 16)) - 1);
        let smcr = 0x1ff | if fa64 { SMCR_FA64 } else { 0 } | if sme2 { SMCR_EZT0 } else { 0 };
        t!(g.finalize_sme(Some(prefix), Some(smcr)));
        t!(g.set_x(9, sme2 as u64));
        t!(set64(vcpu, m::SVCR, m::SVCR_SM | m::SVCR_ZA));
        let tpidr2 = rng.next();
        t!(set64(vcpu, m::TPIDR2_EL0, tpidr2));
        let mut fill = |n: usize| -> Vec<u8> { (0..n).map(|_| rng.next() as u8).collect() };
        let za: Vec<Vec<u8>> = (0..svl).map(|_| fill(svl)).collect();
        let z: Vec<Vec<u8>> = (0..32).map(|_| fill(svl)).collect();
        let p: Vec<Vec<u8>> = (0..17).map(|_| fill(svl / 8)).collect();
        let zt0 = fill(64);
        let mut b = [0u8; 256];
        for (n, row) in za.iter().enumerate() {
            b[..svl].copy_from_slice(row);
            t!(set(vcpu, m::za_row(n as u64, 0), &b));
        }
        for (n, v) in z.iter().enumerate() {
            b[..svl].copy_from_slice(v);
            t!(set(vcpu, ks::zreg(n as u64, 0), &b));
        }
        for (n, v) in p.iter().enumerate() {
            b[..32].fill(0);
            b[..svl / 8].copy_from_slice(v);
            let id = if n == 16 {
                ks::ffr(0)
            } else {
                ks::preg(n as u64, 0)
            };
            if n == 16 && !fa64 {
                check_eq!(set(vcpu, id, &b[..32]), Err(ENOENT));
                continue;
            }
            t!(set(vcpu, id, &b[..32]));
        }
        if sme2 {
            t!(set(vcpu, m::ZT0, &zt0));
        } else {
            check_eq!(set(vcpu, m::ZT0, &zt0), Err(ENOENT));
        }
        // Read back before the guest runs.
        for (n, row) in za.iter().enumerate() {
            t!(get(vcpu, m::za_row(n as u64, 0), &mut b));
            check!(b[..svl] == row[..], "ZA row {n} at SVL {svl}");
            check!(b[svl..].iter().all(|&x| x == 0));
        }
        for (n, v) in z.iter().enumerate() {
            t!(get(vcpu, ks::zreg(n as u64, 0), &mut b));
            check!(b[..svl] == v[..], "Z{n} at SVL {svl}");
        }
        for (n, v) in p.iter().enumerate().take(if fa64 { 17 } else { 16 }) {
            let id = if n == 16 {
                ks::ffr(0)
            } else {
                ks::preg(n as u64, 0)
            };
            t!(get(vcpu, id, &mut b[..32]));
            check!(b[..svl / 8] == v[..], "P{n} at SVL {svl}");
        }
        if sme2 {
            let mut zb = [0u8; 64];
            t!(get(vcpu, m::ZT0, &mut zb));
            check!(zb[..] == zt0[..], "ZT0");
        }
        check_eq!(t!(get64(vcpu, m::TPIDR2_EL0)), tpidr2);
        check_eq!(t!(get64(vcpu, m::SMCR_EL1)), smcr);
        let ids = t!(reg_list(vcpu));
        let rows = ids
            .iter()
            .filter(|&&id| id & !0x1fe0 == m::za_row(0, 0))
            .count();
        check_eq!(rows, svl, "ZA rows listed");
        check_eq!(ids.contains(&m::ZT0), sme2);
        check_eq!(ids.contains(&ks::ffr(0)), fa64);
        for id in m::SYSREGS {
            check!(ids.contains(&id), "{id:#x} listed");
        }
        // The guest sees them.
        t!(g.run_to_mmio());
        check_eq!(t!(g.x(4)), svl as u64, "guest's SVL");
        check_eq!(t!(g.x(5)), 3, "guest's SVCR");
        check_eq!(t!(g.x(6)), tpidr2, "guest's TPIDR2");
        // SMCR_EL1 as the VMM set it (LEN keeps its 4 bits; SMCR_EL2 caps the SVL).
        check_eq!(t!(g.x(7)), smcr & m::SMCR_LOADED, "guest's SMCR");
        check!(g.ram(DUMP, svl) == &z[0][..], "guest's Z0 at SVL {svl}");
        check!(g.ram(DUMP + 0x100, svl / 8) == &p[0][..], "guest's P0");
        for (n, row) in za.iter().enumerate() {
            check!(
                g.ram(DUMP + 0x1000 + n * svl, svl) == &row[..],
                "guest's ZA row {n}"
            );
        }
        if sme2 {
            check!(g.ram(DUMP + 0x200, 64) == &zt0[..], "guest's ZT0");
        }
        // What the guest changes comes back.
        t!(g.run_to_mmio());
        check_eq!(t!(get64(vcpu, m::SVCR)), 3);
        check_eq!(t!(get64(vcpu, m::TPIDR2_EL0)), 0x1234);
        t!(get(vcpu, ks::zreg(0, 0), &mut b));
        let want: Vec<u8> = z[0].iter().map(|x| x.wrapping_add(1)).collect();
        check!(b[..svl] == want[..], "Z0 + 1 from the guest");
        for n in 0..svl {
            t!(get(vcpu, m::za_row(n as u64, 0), &mut b));
            check!(
                b[..svl].iter().all(|&x| x == 0),
                "ZA row {n} zeroed by the guest"
            );
        }
        // SVCR writes: leaving streaming mode zeroes the vectors; ZA off hides ZA.
        t!(set64(vcpu, m::SVCR, m::SVCR_ZA));
        check_eq!(get(vcpu, m::ZT0, &mut b[..64]).is_ok(), sme2);
        t!(set64(vcpu, m::SVCR, 0));
        check_eq!(get(vcpu, m::za_row(0, 0), &mut b), Err(EBUSY));
    }
    println!("# round trips at SVL {lens:?} (FA64 {fa64}, SME2 {sme2})");
    let _ = sys::close(kvm);
    Ok(())
}

/// The host's ZA (the VMM thread's own) with `pattern` in every row, ZA on.
fn host_za_set(pattern: &[u8]) {
    let svl = svelt_user::sme::rdsvl();
    // SAFETY: SMSTART ZA and LDR ZA touch only ZA; `pattern` holds svl bytes.
    unsafe {
        core::arch::asm!(
            ".arch_extension sme",
            "smstart za",
            "mov w12, #0",
            "2:",
            "ldr za[w12, 0], [{p}]",
            "add w12, w12, #1",
            "cmp x12, {n}",
            "b.lt 2b",
            p = in(reg) pattern.as_ptr(),
            n = in(reg) svl,
            out("x12") _,
            options(nostack),
        )
    };
}

/// The host's ZA rows, then ZA off.
fn host_za_take() -> Vec<u8> {
    let svl = svelt_user::sme::rdsvl();
    let mut v = vec![0u8; svl * svl];
    // SAFETY: STR ZA writes svl rows of svl bytes into v; PSTATE.ZA is on (host_za_set).
    unsafe {
        core::arch::asm!(
            ".arch_extension sme",
            "mov w12, #0",
            "2:",
            "str za[w12, 0], [{p}]",
            "add {p}, {p}, {n}",
            "add w12, w12, #1",
            "cmp x12, {n}",
            "b.lt 2b",
            "smstop za",
            p = inout(reg) v.as_mut_ptr() => _,
            n = in(reg) svl,
            out("x12") _,
            options(nostack),
        )
    };
    v
}

/// `run` with the VMM's own ZA on and full of `pattern`: its result, and whether every row of
/// the VMM's ZA still held `pattern` after it (ZA is off again then).
fn with_host_za<R>(pattern: &[u8], run: impl FnOnce() -> R) -> (R, bool) {
    host_za_set(pattern);
    let r = run();
    let host = host_za_take();
    let svl = svelt_user::sme::rdsvl();
    (r, host.chunks(svl).all(|row| row == &pattern[..svl]))
}

/// A fresh VM running `guest_first` with SME finalized (ZT0 on where the host has SME2) and
/// `pattern` for it to load after its first-use dump.
fn first_use_guest(kvm: i32, pattern: &[u8]) -> Result<Guest, String> {
    let sme2 = svelt_user::sme::has_sme2();
    let g = t!(Guest::new(
        kvm,
        code!(guest_first, guest_first_end),
        SME_BIT
    ));
    let smcr = 0x1ff | if sme2 { SMCR_EZT0 } else { 0 };
    t!(g.finalize_sme(None, Some(smcr)));
    t!(g.set_x(9, sme2 as u64));
    g.write_ram(PATTERN, pattern);
    Ok(g)
}

/// After `guest_first`'s first exit: its dump of streaming Z0, P0, ZA and ZT0 at its first SME
/// use is all zero. Returns its SVL.
fn zero_at_first_use(g: &Guest) -> Result<usize, String> {
    let svl = t!(g.x(4)) as usize;
    check!(
        g.ram(DUMP, svl).iter().all(|&x| x == 0),
        "streaming Z0 at first use"
    );
    check!(
        g.ram(DUMP + 0x100, svl / 8).iter().all(|&x| x == 0),
        "P0 at first use"
    );
    check!(
        g.ram(DUMP + 0x1000, svl * svl).iter().all(|&x| x == 0),
        "ZA at first use"
    );
    if svelt_user::sme::has_sme2() {
        check!(
            g.ram(DUMP + 0x200, 64).iter().all(|&x| x == 0),
            "ZT0 at first use"
        );
    }
    Ok(svl)
}

/// A guest's first SME use reads zero, with the VMM's own ZA full and another guest's ZA and
/// ZT0 left full before it; the VMM gets its own ZA back, never a guest's.
fn first_use_and_no_leaks() -> TestResult {
    let kvm = sme_kvm!();
    let guest_pattern: Vec<u8> = (0..256).map(|i| 0xa0 ^ i as u8).collect();
    let host_pattern: Vec<u8> = (0..256).map(|i| 0x3c ^ (i as u8).wrapping_mul(7)).collect();
    for round in 0..2 {
        let g = first_use_guest(kvm, &guest_pattern)?;
        // The VMM's own ZA is live across KVM_RUN (syscalls keep ZA).
        let (r, vmm_za_kept) = with_host_za(&host_pattern, || g.run_to_mmio());
        r?;
        check!(
            vmm_za_kept,
            "round {round}: the VMM's ZA changed across KVM_RUN"
        );
        check_eq!(t!(g.x(5)), 3, "SVCR after SMSTART");
        let svl = zero_at_first_use(&g).map_err(|e| format!("round {round}: {e}"))?;
        // The guest fills ZA (and ZT0) and exits with them live; the VMM's ZA is its own.
        let (r, vmm_za_kept) = with_host_za(&host_pattern, || g.run_to_mmio());
        r?;
        check!(vmm_za_kept, "the VMM saw the guest's ZA");
        let mut b = [0u8; 256];
        t!(get(g.vcpu, m::za_row(svl as u64 - 1, 0), &mut b));
        check!(b[..svl] == guest_pattern[..svl], "the guest's ZA saved");
        // The next round's new VM must not see this one's ZA.
    }
    let _ = sys::close(kvm);
    Ok(())
}

/// The guest's SMCR_EL1 is its own between runs: a write made while its registers are not
/// loaded holds, and RDSVL follows it.
fn smcr_written_between_runs() -> TestResult {
    let kvm = sme_kvm!();
    let g = t!(Guest::new(kvm, code!(guest_smcr, guest_smcr_end), SME_BIT));
    t!(g.finalize_sme(None, None));
    svl_16_and_32_or_skip!(g, kvm);
    t!(g.run_to_mmio());
    check_eq!(t!(g.x(4)), 16, "SVL with LEN 0");
    t!(g.run_to_mmio());
    check_eq!(
        t!(g.x(4)),
        32,
        "SVL after LEN 1 was written first thing in a run"
    );
    check_eq!(t!(get64(g.vcpu, m::SMCR_EL1)) & 0xf, 1);
    let _ = sys::close(kvm);
    Ok(())
}

/// The guest's SVCR is its own between runs: read first thing in a run (its registers not
/// loaded), it still says streaming mode.
fn svcr_read_between_runs() -> TestResult {
    let kvm = sme_kvm!();
    let g = t!(Guest::new(kvm, code!(guest_svcr, guest_svcr_end), SME_BIT));
    t!(g.finalize_sme(None, None));
    t!(g.run_to_mmio());
    check_eq!(t!(get64(g.vcpu, m::SVCR)), m::SVCR_SM);
    t!(g.run_to_mmio());
    check_eq!(t!(g.x(5)), m::SVCR_SM, "SVCR read first thing in a run");
    let _ = sys::close(kvm);
    Ok(())
}

/// FPMR with streaming mode, for a VM that shows FPMR: a VMM's SVCR.SM change zeroes it (as the
/// CPU does, v12 20/29); the guest reads what the VMM set after SVCR, in streaming mode; the
/// guest's own SMSTOP and SMSTART zero it; what the guest wrote in streaming mode reaches the
/// VMM (saved before streaming mode is left).
fn fpmr_with_streaming_mode() -> TestResult {
    const FPMR: u64 = k::FPMR;
    const V: u64 = 0x05_1125_4000;
    const G: u64 = 0x01_007f_c000;
    let kvm = sme_kvm!();
    let g = t!(Guest::new(
        kvm,
        code!(guest_fpmr_sm, guest_fpmr_sm_end),
        SME_BIT
    ));
    t!(g.finalize_sme(None, None));
    if get64(g.vcpu, k::sysreg_id(3, 0, 0, 4, 2)).map_or(0, |v| v & k::ID_AA64PFR2_FPMR) == 0 {
        let _ = sys::close(kvm);
        return ktap::skip("the VM has no FPMR");
    }
    t!(set64(g.vcpu, FPMR, V));
    t!(set64(g.vcpu, m::SVCR, m::SVCR_SM));
    check_eq!(
        t!(get64(g.vcpu, FPMR)),
        0,
        "FPMR after the VMM's SVCR.SM 0->1"
    );
    t!(set64(g.vcpu, FPMR, V));
    t!(g.set_x(2, G));
    t!(g.run_to_mmio());
    check_eq!(t!(g.x(5)), V, "the guest's FPMR in streaming mode");
    t!(g.run_to_mmio());
    check_eq!(t!(g.x(6)), 0, "the guest's FPMR after SMSTOP");
    t!(g.run_to_mmio());
    check_eq!(t!(g.x(7)), 0, "the guest's FPMR after SMSTART");
    t!(g.run_to_mmio());
    check_eq!(t!(get64(g.vcpu, m::SVCR)), m::SVCR_SM);
    check_eq!(
        t!(get64(g.vcpu, FPMR)),
        G,
        "FPMR the guest wrote in streaming mode"
    );
    let _ = sys::close(kvm);
    Ok(())
}

/// A guest in streaming mode with SVE itself turned off in its CPACR_EL1 (only SMEN governs
/// streaming SVE instructions) shares one CPU with a host task in streaming mode: across the
/// switches of ten KVM_RUNs, the guest's streaming SVE instructions never trap to its own EL1
/// (they would if the vCPU ran, while its registers are put away, outside streaming mode: the
/// guest kernel would take an SVE access trap and, as Linux's do_sve_acc does, clear the high
/// bits of Z and the P registers of a task it believes is not streaming).
fn streaming_guest_never_sees_an_sve_trap() -> TestResult {
    let kvm = sme_kvm!();
    let g = t!(Guest::new(
        kvm,
        code!(guest_sm_zen_off, guest_sm_zen_off_end),
        SME_BIT | SVE_BIT
    ));
    t!(finalize(g.vcpu, m::KVM_ARM_VCPU_VEC));
    let pattern: Vec<u8> = (0..256).map(|i| 0x3c ^ (i as u8).wrapping_mul(7)).collect();
    g.write_ram(PATTERN, &pattern);
    let task = |stop: &Shared<u32>| svelt_user::sme::spin_streaming_until(stop, 43, 100_000);
    let results = t!(kvm::beside_a_task(task, 10, 40_000_000, || {
        ioctl(g.vcpu, k::KVM_RUN, 0)
    }));
    for r in results {
        if r.is_ok() {
            let (what, esr) = (t!(g.x(12)), t!(g.x(13)));
            return Err(match what {
                3 => format!("the streaming guest took an exception at EL1, ESR_EL1 {esr:#x}"),
                _ => "the guest found its streaming Z0 changed".into(),
            });
        }
        check_eq!(r, Err(EINTR));
    }
    let _ = sys::close(kvm);
    Ok(())
}

/// A guest checking its streaming Z0 and P2 in a loop (SVL 32 under a cap of 16,32, SVE up to
/// the host's) shares one CPU with a host task spinning in streaming mode at its own SVL: the
/// guest never finds its registers changed across the switches of ten KVM_RUNs.
fn streaming_state_kept_across_switches() -> TestResult {
    let kvm = sme_kvm!();
    let g = t!(Guest::new(
        kvm,
        code!(guest_sm_check, guest_sm_check_end),
        SME_BIT | SVE_BIT
    ));
    svl_16_and_32_or_skip!(g, kvm);
    t!(g.finalize_sme(Some(3), Some(1)));
    let pattern: Vec<u8> = (0..64).map(|i| 0x91 ^ (i as u8).wrapping_mul(29)).collect();
    g.write_ram(PATTERN, &pattern);
    t!(g.set_x(11, RAM_IPA + PATTERN as u64 + 32));
    let task = |stop: &Shared<u32>| svelt_user::sme::spin_streaming_until(stop, 41, 100_000);
    let results = t!(kvm::beside_a_task(task, 10, 40_000_000, || {
        ioctl(g.vcpu, k::KVM_RUN, 0)
    }));
    for r in results {
        if r.is_ok() {
            let which = t!(g.x(12));
            return Err(format!(
                "the guest found its streaming {} changed",
                if which == 1 { "Z0" } else { "P2" }
            ));
        }
        check_eq!(r, Err(EINTR));
    }
    let _ = sys::close(kvm);
    Ok(())
}

/// A host task holding ZA (a pattern kept across sched_yield, checked after each) and a vCPU
/// thread whose guest loads its own ZA in streaming mode over and over take turns on one CPU
/// within each KVM_RUN: the task never finds the guest's ZA, the guest's ZA is its own at the
/// end, and the VMM's own ZA survives every KVM_RUN.
fn za_stays_apart_across_switches() -> TestResult {
    let kvm = sme_kvm!();
    let g = t!(Guest::new(
        kvm,
        code!(guest_za_spin, guest_za_spin_end),
        SME_BIT
    ));
    t!(g.finalize_sme(None, Some(0x1ff)));
    let guest_pattern: Vec<u8> = (0..256).map(|i| 0x5a ^ i as u8).collect();
    g.write_ram(PATTERN, &guest_pattern);
    let task = |stop: &Shared<u32>| {
        let svl = svelt_user::sme::rdsvl();
        let pattern: Vec<u8> = (0..svl * svl).map(|i| (i * 13 + 7) as u8).collect();
        let mut got = vec![0u8; svl * svl];
        let mut n = 0u32;
        while stop.get() == 0 {
            let mut op = svelt_user::sme::Op {
                flags: svelt_user::sme::F_ZA | svelt_user::sme::F_KEEP_ZA,
                za_in: pattern.as_ptr() as usize,
                action: svelt_user::sme::A_SVC,
                x8: sys::nr::SCHED_YIELD as u64,
                za_out: got.as_mut_ptr() as usize,
                ..svelt_user::sme::Op::default()
            };
            svelt_user::sme::run(&mut op);
            if got != pattern {
                println!("    # the host task's ZA changed across yield {n}");
                return 1;
            }
            n += 1;
        }
        0
    };
    let host_pattern: Vec<u8> = (0..256).map(|i| 0xc3 ^ (i as u8).wrapping_mul(5)).collect();
    let results = t!(kvm::beside_a_task(task, 10, 40_000_000, || {
        with_host_za(&host_pattern, || ioctl(g.vcpu, k::KVM_RUN, 0))
    }));
    for (r, vmm_za_kept) in results {
        check_eq!(r, Err(EINTR));
        check!(vmm_za_kept, "the VMM's ZA changed across KVM_RUN");
    }
    let svl = t!(g.x(4)) as usize;
    let mut b = [0u8; 256];
    for row in [0, svl as u64 - 1] {
        t!(get(g.vcpu, m::za_row(row, 0), &mut b));
        check!(b[..svl] == guest_pattern[..svl], "the guest's ZA row {row}");
    }
    let _ = sys::close(kvm);
    Ok(())
}

/// A fresh VM for [`two_vms_on_one_cpu`] running `guest_first`: its first SME use must read
/// zero; it then loads its ZA (and ZT0) from `pattern` and spins with them live. Returns the
/// guest and its SVL.
fn za_guest_start(kvm: i32, pattern: &[u8]) -> Result<(Guest, usize), String> {
    let g = first_use_guest(kvm, pattern)?;
    g.run_to_mmio()?;
    let svl = zero_at_first_use(&g)?;
    g.run_to_mmio()?;
    Ok((g, svl))
}

/// Runs `g` (spinning) until an alarm cuts its KVM_RUN, `slice_ns` away or a slice later: the
/// timer repeats, as the first alarm may come while this task still waits for the CPU, before
/// KVM_RUN has begun (one CPU, another VMM's vCPU running).
fn za_guest_slice(g: &Guest, slice_ns: u64) -> TestResult {
    t!(sys::setitimer_real(slice_ns, slice_ns));
    let r = ioctl(g.vcpu, k::KVM_RUN, 0);
    t!(sys::setitimer_real(0, 0));
    check_eq!(r, Err(EINTR));
    Ok(())
}

/// Every ZA row (and ZT0) of `g` still holds `pattern`.
fn za_guest_check(g: &Guest, svl: usize, pattern: &[u8]) -> TestResult {
    let mut b = [0u8; 256];
    for row in 0..svl as u64 {
        t!(get(g.vcpu, m::za_row(row, 0), &mut b));
        check!(
            b[..svl] == pattern[..svl],
            "ZA row {row} is not the guest's own"
        );
    }
    if svelt_user::sme::has_sme2() {
        let mut zt = [0u8; m::ZT0_BYTES];
        t!(get(g.vcpu, m::ZT0, &mut zt));
        check!(
            zt[..] == pattern[..m::ZT0_BYTES],
            "ZT0 is not the guest's own"
        );
    }
    Ok(())
}

/// A counter of Svelt's /proc/svelt/fpstat (None elsewhere).
fn fpstat(name: &str) -> Option<u64> {
    let text = io::read_file("/proc/svelt/fpstat").ok()?;
    let text = String::from_utf8_lossy(&text).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
}

extern "C" fn alarm_only(_: i32, _: *mut svelt_user::sig::SigInfo, _: *mut u8) {}

/// Two VMs (one VMM process each) whose vCPUs hold different ZA and ZT0 live in streaming mode
/// take turns on one CPU, each KVM_RUN cut by an alarm: the second VM's first SME use reads
/// zero although the first VM's ZA was live on that CPU just before, and at the end each
/// guest's ZA and ZT0 are its own (the guest-to-guest leak probe; the host-to-guest and
/// guest-to-host ones are above).
fn two_vms_on_one_cpu() -> TestResult {
    let kvm = sme_kvm!();
    let pa: Vec<u8> = (0..256).map(|i| (i as u8).wrapping_mul(3) ^ 0x11).collect();
    let pb: Vec<u8> = (0..256).map(|i| (i as u8).wrapping_mul(5) ^ 0xe7).collect();
    let mask = t!(sys::sched_getaffinity(0));
    t!(sys::sched_setaffinity(0, 1u64 << mask.trailing_zeros()));
    t!(svelt_user::sig::set_handler(
        svelt_user::sig::SIGALRM,
        alarm_only,
        0,
        0
    ));
    let stop = Shared::new(0u32);
    let r = (|| -> TestResult {
        let (a, svl) = za_guest_start(kvm, &pa)?;
        let saves = fpstat("guest_sme_saves ");
        // The second VMM inherits the CPU and the alarm handler.
        let pid = t!(spawn(|| {
            let r = (|| -> TestResult {
                let (b, svl) = za_guest_start(kvm, &pb)?;
                while stop.get() == 0 {
                    za_guest_slice(&b, 10_000_000)?;
                }
                za_guest_check(&b, svl, &pb)
            })();
            match r {
                Ok(()) => 0,
                Err(e) => {
                    println!("    # the second VM: {e}");
                    1
                }
            }
        }));
        let mine = (|| -> TestResult {
            for _ in 0..8 {
                za_guest_slice(&a, 30_000_000)?;
            }
            za_guest_check(&a, svl, &pa)
        })();
        stop.set(1);
        let (_, st) = t!(sys::waitpid(pid, 0));
        mine.map_err(|e| format!("the first VM: {e}"))?;
        check!(
            wifexited(st) && wexitstatus(st) == 0,
            "the second VMM: {}",
            describe(st)
        );
        // On Svelt: the two vCPUs' streaming state was put away and brought back, once per
        // slice at least (the first VM's eight, the second's as many).
        if let (Some(s0), Some(s1)) = (saves, fpstat("guest_sme_saves ")) {
            check!(
                s1 >= s0 + 16,
                "guest SME saves {s0} -> {s1}: the vCPUs did not take turns"
            );
        }
        Ok(())
    })();
    stop.set(1);
    let _ = sys::sched_setaffinity(0, mask);
    let _ = sys::close(kvm);
    r
}

/// /proc/svelt/fpstat counts guest SME saves and restores apart (Svelt only).
fn fpstat_counts() -> TestResult {
    let kvm = sme_kvm!();
    let _ = sys::close(kvm);
    let count = fpstat;
    let (Some(s0), Some(r0)) = (count("guest_sme_saves "), count("guest_sme_restores ")) else {
        return Err("no guest_sme_ lines in /proc/svelt/fpstat".into());
    };
    first_use_and_no_leaks()?;
    let (s1, r1) = (
        count("guest_sme_saves ").unwrap_or(0),
        count("guest_sme_restores ").unwrap_or(0),
    );
    // Each round: a save at each exit with ZA live (two), a restore at the second entry's
    // first SME use.
    check!(s1 >= s0 + 4, "guest SME saves {s0} -> {s1}");
    check!(r1 >= r0 + 2, "guest SME restores {r0} -> {r1}");
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    mount_when_init();
    ktap::run(&[
        ("capability_and_feature", capability_and_feature),
        ("lengths_and_finalize", lengths_and_finalize),
        ("id_registers", id_registers),
        (
            "round_trips_with_a_streaming_guest",
            round_trips_with_a_streaming_guest,
        ),
        ("first_use_and_no_leaks", first_use_and_no_leaks),
        (
            "za_stays_apart_across_switches",
            za_stays_apart_across_switches,
        ),
        ("smcr_written_between_runs", smcr_written_between_runs),
        ("svcr_read_between_runs", svcr_read_between_runs),
        ("fpmr_with_streaming_mode", fpmr_with_streaming_mode),
        (
            "streaming_state_kept_across_switches",
            streaming_state_kept_across_switches,
        ),
        (
            "streaming_guest_never_sees_an_sve_trap",
            streaming_guest_never_sees_an_sve_trap,
        ),
        ("two_vms_on_one_cpu", two_vms_on_one_cpu),
        ("fpstat_counts", fpstat_counts),
    ])
}

entry!(main);
