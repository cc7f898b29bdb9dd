//! The SMCCC services KVM offers a guest besides PSCI (Documentation/virt/kvm/arm/hypercalls.rst,
//! Linux 7.3's arch/arm64/kvm/hypercalls.c, trng.c and pvtime.c): the Arm True Random Number
//! Generator, paravirtualised stolen time, and KVM's vendor calls (feature discovery, PTP),
//! each offered while its bit is set in the VM's service bitmaps (the firmware
//! pseudo-registers KVM_REG_ARM_STD_BMAP, KVM_REG_ARM_STD_HYP_BMAP,
//! KVM_REG_ARM_VENDOR_HYP_BMAP and KVM_REG_ARM_VENDOR_HYP_BMAP_2, in that order).

pub const TRNG_VERSION: u32 = 0x8400_0050;
pub const TRNG_FEATURES: u32 = 0x8400_0051;
pub const TRNG_GET_UUID: u32 = 0x8400_0052;
pub const TRNG_RND32: u32 = 0x8400_0053;
pub const TRNG_RND64: u32 = 0xc400_0053;
/// TRNG 1.0, and its errors.
pub const TRNG_VERSION_1_0: u64 = 0x1_0000;
pub const TRNG_INVALID_PARAMETER: i64 = -2;
/// The TRNG's UUID (0d21e000-4384-11eb-8070-524455 4e5a4c) in w0..w3, as trng.c hands it.
pub const TRNG_UUID: [u64; 4] = [0x00e0_210d, 0xeb11_8443, 0x4452_7080, 0x4c5a_4e55];

pub const PV_TIME_FEATURES: u32 = 0xc500_0020;
pub const PV_TIME_ST: u32 = 0xc500_0021;
/// KVM_ARM_VCPU_PVTIME_CTRL, the vCPU attribute group, and its one attribute: the IPA of the
/// vCPU's stolen-time structure (64-byte aligned, in a memory slot).
pub const KVM_ARM_VCPU_PVTIME_CTRL: u32 = 2;
pub const KVM_ARM_VCPU_PVTIME_IPA: u64 = 0;
/// `struct pvclock_vcpu_stolen_time`: revision, attributes, then the stolen nanoseconds.
pub const STOLEN_TIME_OFFSET: u64 = 8;
pub const STOLEN_TIME_SIZE: usize = 64;

pub const VENDOR_HYP_KVM_PTP: u32 = 0x8600_0001;
/// The counter a PTP call pairs with the wall clock: the virtual one, or the physical one.
pub const KVM_PTP_VIRT_COUNTER: u64 = 0;
pub const KVM_PTP_PHYS_COUNTER: u64 = 1;

/// What each service bitmap can offer (KVM_REG_ARM_*_BMAP_BIT_COUNT): TRNG 1.0; PV time; the
/// vendor service's FUNC_FEAT and PTP; the second vendor bitmap's two implementation discovery
/// calls (which only a VMM answers).
pub const FW_BMAPS_SUPPORTED: [u64; 4] = [1, 1, 3, 3];
/// A new VM's bitmaps (kvm_arm_init_hypercalls): every service KVM answers itself.
pub const FW_BMAPS_RESET: [u64; 4] = [1, 1, 3, 0];

/// Whether KVM itself may answer `func` for a VM with these bitmaps (`kvm_smccc_get_action`
/// once the VMM's filter said "handle"): a call of a service the VMM turned off is denied
/// (NOT_SUPPORTED); SMCCC_VERSION, ARCH_FEATURES, the standard service's functions 0..=0x1f
/// (PSCI) and KVM's PSCI 0.1 numbers always pass; anything else is denied.
pub fn smccc_offered(func: u32, bmaps: &[u64; 4]) -> bool {
    let bit = |reg: usize, b: u32| bmaps[reg] >> b & 1 != 0;
    match func {
        TRNG_VERSION | TRNG_FEATURES | TRNG_GET_UUID | TRNG_RND32 | TRNG_RND64 => bit(0, 0),
        PV_TIME_FEATURES | PV_TIME_ST => bit(1, 0),
        super::kvm::VENDOR_HYP_KVM_FEATURES_FUNC_ID | super::kvm::VENDOR_HYP_CALL_UID_FUNC_ID => {
            bit(2, 0)
        }
        VENDOR_HYP_KVM_PTP => bit(2, 1),
        0x8000_0000 | 0x8000_0001 => true,
        0x95c1_ba5e..=0x95c1_ba61 => true,
        // Owner 4 (standard secure service) with a function number up to 0x1f: PSCI.
        _ => (func >> 24) & 0x3f == 4 && func & 0xffff <= 0x1f,
    }
}

/// TRNG_RND32 (`size` 32) or TRNG_RND64 (64) asking for `bits` bits, from three random words
/// (`kvm_trng_do_rnd`): the answer for x0..x3, the bits above those asked for cleared;
/// INVALID_PARAMETER beyond three registers' worth.
pub fn trng_rnd(bits: u64, size: u32, mut rand: [u64; 3]) -> [u64; 4] {
    if bits > 3 * size as u64 {
        return [TRNG_INVALID_PARAMETER as u64, 0, 0, 0];
    }
    // Keep only the low `bits` bits of the 192-bit number rand[2]:rand[1]:rand[0].
    for (i, w) in rand.iter_mut().enumerate() {
        let lo = 64 * i as u64;
        if bits <= lo {
            *w = 0;
        } else if bits < lo + 64 {
            *w &= (1u64 << (bits - lo)) - 1;
        }
    }
    if size == 32 {
        [
            0,
            rand[1] & 0xffff_ffff,
            rand[0] >> 32,
            rand[0] & 0xffff_ffff,
        ]
    } else {
        [0, rand[2], rand[1], rand[0]]
    }
}

/// A PTP answer (`kvm_ptp_get_time`): the wall clock's nanoseconds and the chosen counter, each
/// split into its upper and lower 32 bits.
pub fn ptp_words(realtime_ns: u64, cycles: u64) -> [u64; 4] {
    [
        realtime_ns >> 32,
        realtime_ns & 0xffff_ffff,
        cycles >> 32,
        cycles & 0xffff_ffff,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_follow_their_bits() {
        let all = FW_BMAPS_RESET;
        let none = [0; 4];
        for f in [
            TRNG_VERSION,
            TRNG_RND64,
            PV_TIME_ST,
            VENDOR_HYP_KVM_PTP,
            0x8600_ff01,
        ] {
            assert!(smccc_offered(f, &all));
            assert!(!smccc_offered(f, &none));
        }
        assert!(smccc_offered(0x8400_0000, &none)); // PSCI_VERSION
        assert!(smccc_offered(0x8000_0001, &none)); // ARCH_FEATURES
        assert!(smccc_offered(0x95c1_ba60, &none)); // KVM's PSCI 0.1 CPU_ON
        assert!(!smccc_offered(0x8400_0020, &all));
        assert!(!smccc_offered(0xc600_0000, &all));
        assert!(!smccc_offered(VENDOR_HYP_KVM_PTP, &[0, 0, 1, 0]));
    }

    #[test]
    fn trng_keeps_the_bits_asked_for() {
        let r = [u64::MAX; 3];
        assert_eq!(trng_rnd(193, 64, r)[0], TRNG_INVALID_PARAMETER as u64);
        assert_eq!(trng_rnd(97, 32, r)[0], TRNG_INVALID_PARAMETER as u64);
        assert_eq!(trng_rnd(8, 64, r), [0, 0, 0, 0xff]);
        assert_eq!(
            trng_rnd(96, 32, r),
            [0, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff]
        );
        assert_eq!(trng_rnd(0, 32, r), [0; 4]);
        assert_eq!(trng_rnd(130, 64, r), [0, 3, u64::MAX, u64::MAX]);
        assert_eq!(ptp_words(0x1_0000_0002, 5), [1, 2, 0, 5]);
    }
}
