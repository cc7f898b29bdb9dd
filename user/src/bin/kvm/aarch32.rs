//! AArch32 EL1 guests (KVM_ARM_VCPU_EL1_32BIT): the init rules (every vCPU of a VM has the
//! same width), the AArch32 reset state and PSTATE modes, and a small A32 guest that stores
//! and loads through MMIO, reads CP15 registers, and powers off through PSCI over HVC.

use super::*;
use svelt_abi::uapi::kvm_aarch32 as a;

const EL1_32BIT: u32 = 1 << k::KVM_ARM_VCPU_EL1_32BIT;
/// Where the guest's MMIO accesses go: no slot there.
const MMIO: u64 = 0x2000_0000;

/// KVM_ARM_VCPU_INIT of vCPU `id` of `vm` with these features: the errno, if any.
fn init_vcpu(vm: i32, vcpu: i32, features: u32) -> SysResult {
    let mut init = KvmVcpuInit::default();
    ioctl(
        vm,
        k::KVM_ARM_PREFERRED_TARGET,
        &mut init as *mut _ as usize,
    )?;
    init.features[0] = features;
    ioctl(vcpu, k::KVM_ARM_VCPU_INIT, &init as *const _ as usize)
}

/// Two vCPUs of one VM initialised with `f0` then `f1`: the second's result.
fn two_vcpus(kvm: i32, f0: u32, f1: u32) -> Result<SysResult, String> {
    let vm = t!(ioctl(kvm, k::KVM_CREATE_VM, 0)) as i32;
    let v0 = t!(ioctl(vm, k::KVM_CREATE_VCPU, 0)) as i32;
    let v1 = t!(ioctl(vm, k::KVM_CREATE_VCPU, 1)) as i32;
    t!(init_vcpu(vm, v0, f0));
    let r = init_vcpu(vm, v1, f1);
    for fd in [v1, v0, vm] {
        let _ = sys::close(fd);
    }
    Ok(r)
}

/// The A32 guest, hand-assembled.
const GUEST: [u32; 24] = [
    0xe300_1000, // movw r1, #0
    0xe342_1000, // movt r1, #0x2000        @ r1 = MMIO
    0xe30b_2eef, // movw r2, #0xbeef
    0xe34d_2ead, // movt r2, #0xdead
    0xe581_2000, // str r2, [r1]            @ 4 bytes at MMIO
    0xe1c1_20b2, // strh r2, [r1, #2]       @ 2 bytes at MMIO + 2
    0xe1d1_30d1, // ldrsb r3, [r1, #1]      @ sign-extended byte
    0xe1d1_40b0, // ldrh r4, [r1]           @ zero-extended halfword
    0xe1d1_50f0, // ldrsh r5, [r1]          @ sign-extended halfword
    0xee10_6f10, // mrc p15, 0, r6, c0, c0, 0   @ MIDR
    0xee10_7f11, // mrc p15, 0, r7, c0, c1, 0   @ ID_PFR0 (trapped: TID3)
    0xee10_8f30, // mrc p15, 0, r8, c0, c0, 1   @ CTR (trapped: TID2)
    0xe3b0_9000, // movs r9, #0             @ Z set
    0x1e10_9f11, // mrcne p15, 0, r9, c0, c1, 0 @ fails its condition: r9 stays 0
    0xe301_a234, // movw r10, #0x1234
    0xe3a0_d801, // mov sp, #0x10000        @ r13_svc
    0xe3a0_e0ab, // mov lr, #0xab           @ r14_svc
    0xe300_0008, // movw r0, #8
    0xe348_0400, // movt r0, #0x8400        @ PSCI SYSTEM_OFF
    0xe140_0070, // hvc #0
    0xeaff_fffe, // b .
    0,
    0,
    0,
];
const HVC_AT: u64 = 19 * 4;

fn guest_bytes() -> Vec<u8> {
    GUEST.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// KVM_CAP_ARM_EL1_32BIT and the init rules: two vCPUs of either width, never one of each
/// (in either order); EL1_32BIT beside SVE and pointer authentication as Linux takes them;
/// the reset CPSR; the PSTATE modes each width may be given.
pub fn aarch32_vcpu_init() -> TestResult {
    let kvm = kvm!();
    if !kvm::has_cap(kvm, a::KVM_CAP_ARM_EL1_32BIT) {
        let _ = sys::close(kvm);
        return ktap::skip("no AArch32 at EL1 (KVM_CAP_ARM_EL1_32BIT is 0)");
    }
    let psci = 1 << k::KVM_ARM_VCPU_PSCI_0_2;
    check_eq!(t!(two_vcpus(kvm, psci, psci)), Ok(0));
    check_eq!(
        t!(two_vcpus(kvm, psci | EL1_32BIT, psci | EL1_32BIT)),
        Ok(0)
    );
    check_eq!(t!(two_vcpus(kvm, psci, psci | EL1_32BIT)), Err(EINVAL));
    check_eq!(t!(two_vcpus(kvm, psci | EL1_32BIT, psci)), Err(EINVAL));
    // Linux 7.3 takes EL1_32BIT with SVE and with pointer authentication alike.
    if kvm::has_cap(kvm, ks_sve::KVM_CAP_ARM_SVE) {
        let f = EL1_32BIT | 1 << ks_sve::KVM_ARM_VCPU_SVE;
        check_eq!(t!(two_vcpus(kvm, f, f)), Ok(0), "EL1_32BIT with SVE");
    }
    if kvm::has_cap(kvm, k::KVM_CAP_ARM_PTRAUTH_ADDRESS) {
        let f =
            EL1_32BIT | 1 << k::KVM_ARM_VCPU_PTRAUTH_ADDRESS | 1 << k::KVM_ARM_VCPU_PTRAUTH_GENERIC;
        check_eq!(t!(two_vcpus(kvm, f, f)), Ok(0), "EL1_32BIT with PAuth");
    }
    let g = t!(Guest::with_features(kvm, &guest_bytes(), EL1_32BIT));
    check_eq!(
        t!(get_reg(g.vcpu, CoreReg::Pstate.id())) as u64,
        a::PSTATE_RESET_SVC,
        "reset CPSR"
    );
    check_eq!(
        set_reg(g.vcpu, CoreReg::Pstate.id(), 0x3c5),
        Err(EINVAL),
        "EL1h on a 32-bit vCPU"
    );
    check_eq!(
        set_reg(g.vcpu, CoreReg::Pstate.id(), 0x1a),
        Err(EINVAL),
        "Hyp mode"
    );
    t!(set_reg(g.vcpu, CoreReg::Pstate.id(), 0x1d7)); // Abort mode
                                                      // A write in a privileged AArch32 mode narrows every register to 32 bits.
    t!(set_reg(g.vcpu, x(20), 0x1_2345_6789));
    check_eq!(t!(get_reg(g.vcpu, x(20))) as u64, 0x2345_6789);
    let g64 = t!(Guest::another(&guest_bytes(), 0));
    check_eq!(
        set_reg(g64.vcpu, CoreReg::Pstate.id(), a::PSTATE_RESET_SVC as u128),
        Err(EINVAL),
        "SVC mode on a 64-bit vCPU"
    );
    Ok(())
}

/// The A32 guest: its MMIO stores and loads (address, width, data, sign extension), its CP15
/// reads (MIDR as the vCPU's, ID_PFR0 and CTR as the VM's), a failed condition skipping a
/// trapped MRC, PSCI SYSTEM_OFF over HVC, and its registers afterwards.
pub fn aarch32_guest() -> TestResult {
    let kvm = kvm!();
    if !kvm::has_cap(kvm, a::KVM_CAP_ARM_EL1_32BIT) {
        let _ = sys::close(kvm);
        return ktap::skip("no AArch32 at EL1 (KVM_CAP_ARM_EL1_32BIT is 0)");
    }
    let g = t!(Guest::with_features(kvm, &guest_bytes(), EL1_32BIT));
    // Only `len` bytes of the data are the access's (Linux leaves the rest as it was).
    let mmio = || {
        g.run_to_mmio()
            .map(|(a, d, len, w)| (a, d & (u64::MAX >> (64 - 8 * len)), len, w))
    };
    check_eq!(t!(mmio()), (MMIO, 0xdead_beef, 4, true), "str");
    check_eq!(t!(mmio()), (MMIO + 2, 0xbeef, 2, true), "strh");
    let (addr, _, len, write) = t!(g.run_to_mmio());
    check_eq!((addr, len, write), (MMIO + 1, 1, false), "ldrsb");
    g.set_run_u64(k::run::MMIO_DATA, 0x80);
    let (addr, _, len, write) = t!(g.run_to_mmio());
    check_eq!((addr, len, write), (MMIO, 2, false), "ldrh");
    g.set_run_u64(k::run::MMIO_DATA, 0x8001);
    let (addr, _, len, write) = t!(g.run_to_mmio());
    check_eq!((addr, len, write), (MMIO, 2, false), "ldrsh");
    g.set_run_u64(k::run::MMIO_DATA, 0x8001);
    t!(g.run());
    check_eq!(g.exit_reason(), k::KVM_EXIT_SYSTEM_EVENT, "exit reason");
    check_eq!(
        g.run_u32(k::run::SYSTEM_EVENT_TYPE),
        k::KVM_SYSTEM_EVENT_SHUTDOWN
    );
    let reg = |n: usize| get_reg(g.vcpu, x(n)).map(|v| v as u64 & 0xffff_ffff);
    let midr = t!(get_reg(g.vcpu, k::sysreg_id(3, 0, 0, 0, 0))) as u64;
    let pfr0 = t!(get_reg(g.vcpu, k::sysreg_id(3, 0, 0, 1, 0))) as u64;
    let ctr = t!(get_reg(g.vcpu, k::sysreg_id(3, 3, 0, 0, 1))) as u64;
    // r0-r3 are SMCCC's results: after SYSTEM_OFF Linux preloads INTERNAL_FAILURE and zeros
    // (psci.c), Svelt leaves them: not compared.
    let want = [
        (4, 0x8001),
        (5, 0xffff_8001),
        (6, midr & 0xffff_ffff),
        (7, pfr0 & 0xffff_ffff),
        (8, ctr & 0xffff_ffff),
        (9, 0),
        (10, 0x1234),
        (19, 0x1_0000), // r13_svc
        (18, 0xab),     // r14_svc
    ];
    for (n, v) in want {
        check_eq!(t!(reg(n)), v, "x{n}");
    }
    check_eq!(
        t!(get_reg(g.vcpu, CoreReg::Pc.id())) as u64,
        RAM_IPA + HVC_AT + 4,
        "PC past the HVC"
    );
    check_eq!(
        t!(get_reg(g.vcpu, CoreReg::Pstate.id())) as u64,
        a::PSTATE_RESET_SVC | 1 << 30,
        "CPSR: SVC, masked, Z"
    );
    Ok(())
}
